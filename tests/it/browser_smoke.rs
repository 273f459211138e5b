//! The browser harness end to end: real headless Chromium against a real server.

use std::time::Duration;

use muster_tests::browser::Browser;
use muster_tests::{Backend, TestDb, spawn_app};

const PNG_SIGNATURE: &[u8] = b"\x89PNG\r\n\x1a\n";

#[tokio::test]
#[ignore = "needs Chromium and chromedriver; run with --include-ignored"]
async fn chromium_renders_healthz_and_takes_a_screenshot() {
    let Some(browser) = Browser::start().await else {
        return;
    };
    let db = TestDb::new(Backend::Sqlite)
        .await
        .expect("SQLite is always available");
    let app = spawn_app(db.config()).await;

    let url = app.url("/healthz");
    browser.goto(&url).await.unwrap();
    assert_eq!(browser.current_url().await.unwrap(), url);
    browser
        .wait_for_text("body", r#""status":"ok""#, Duration::from_secs(10))
        .await
        .unwrap();
    let body = browser.text("body").await.unwrap();
    assert!(body.contains(r#""status":"ok""#), "page text: {body:?}");

    let path = browser.screenshot("smoke-healthz").await.unwrap();
    let png = std::fs::read(&path).unwrap();
    assert!(
        png.starts_with(PNG_SIGNATURE),
        "{} is not a PNG",
        path.display()
    );

    browser.close().await.unwrap();
    app.shutdown.cancel();
    app.handle.await.unwrap().unwrap();
}
