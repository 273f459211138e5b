//! The Runners page in real headless Chromium: a registered remote runner shows online with what it
//! reported, a new runner token is shown once (and not after a reload), and revoking it marks the token
//! and its runner revoked. The screenshot lands in `target/screenshots/runners.png`.

use std::time::Duration;

use chrono::Utc;
use muster::domain::RunnerName;
use muster_tests::browser::Browser;
use muster_tests::seed;
use muster_tests::{Backend, TestDb, spawn_app};
use serde_json::{Value, json};

/// Generous: a cold Chromium on a loaded 2-core machine.
const LIVE: Duration = Duration::from_secs(20);

async fn js(browser: &Browser, script: &str) -> Value {
    browser.execute(script, vec![]).await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs Chromium and chromedriver; run with --include-ignored"]
async fn runners_page_shows_runners_and_manages_tokens_in_chromium() {
    let Some(db) = TestDb::new(Backend::Sqlite).await else {
        return;
    };
    let app = spawn_app(db.config()).await;
    let (_, ws) = seed::acme(&app.store).await;
    let Some(ada) = Browser::signed_in(&app.url(""), "ada@acme.test", LIVE).await else {
        return;
    };

    // A token made on the page; its secret is on this response only.
    ada.goto(&app.url("/w/acme/runners")).await.unwrap();
    ada.fill("#runner-token-name", "gpu box").await.unwrap();
    ada.click("form[action='/w/acme/runners/tokens'] button[type=submit]")
        .await
        .unwrap();
    let secret = ada.find_within("#new-token", LIVE).await.unwrap();
    let secret = secret.prop("value").await.unwrap().unwrap_or_default();
    assert!(secret.starts_with("mrt_"), "{secret}");

    // A runner registers with it and beats.
    let token = app.store.list_runner_tokens(ws.id).await.unwrap()[0].clone();
    let detected = json!({
        "runtimes": [{"kind": "claude", "version": "2.1.0", "path": "/usr/bin/claude"},
                     {"kind": "codex", "version": "0.98.0", "path": "/usr/bin/codex"}],
        "local_models": [{"url": "http://127.0.0.1:8080", "models": ["qwen3-coder"]}],
        "max_runs": 4
    });
    let runner = app
        .store
        .register_remote_runner(
            &token,
            &RunnerName::parse("gpu-box").unwrap(),
            "0.9.0",
            &detected,
            Utc::now(),
        )
        .await
        .unwrap();
    app.store
        .runner_heartbeat(runner.id, Utc::now())
        .await
        .unwrap();

    ada.goto(&app.url("/w/acme/runners")).await.unwrap();
    let row = ada
        .wait_for_text("tr[data-runner='gpu-box']", "online", LIVE)
        .await
        .unwrap();
    let text = row.text().await.unwrap();
    for expected in [
        "claude 2.1.0",
        "codex 0.98.0",
        "qwen3-coder",
        "0.9.0",
        "s ago",
    ] {
        assert!(text.contains(expected), "{expected:?} in {text:?}");
    }
    let body = ada.text("body").await.unwrap();
    assert!(!body.contains(&secret), "the secret is gone after a reload");
    assert!(ada.find("#new-token").await.is_err());
    ada.screenshot("runners").await.unwrap();

    // Revoking marks the token and its runner.
    js(&ada, "window.confirm = () => true; return true").await;
    ada.click("tr[data-token='gpu box'] form button[type=submit]")
        .await
        .unwrap();
    ada.wait_for_text("tr[data-token='gpu box']", "Revoked", LIVE)
        .await
        .unwrap();
    let row = ada.text("tr[data-runner='gpu-box']").await.unwrap();
    assert!(row.contains("revoked"), "{row}");
    assert!(
        ada.find("tr[data-token='gpu box'] form").await.is_err(),
        "no revoke button once revoked"
    );
    ada.screenshot("runners-revoked").await.unwrap();
    ada.close().await.unwrap();
    app.shutdown.cancel();
}
