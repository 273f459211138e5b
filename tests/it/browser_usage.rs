//! Issue 15 in Chromium: the Usage page over real runs on several days and agents — a stacked bar per
//! day with a labelled segment per agent, the table view of the same numbers, the per-agent table —
//! in light and dark (screenshots `usage-light.png`, `usage-dark.png`).

use serde_json::Value;

use crate::usage::{ALPHA, BETA, Spend, World};
use muster::domain::IssueStatus;
use muster_tests::Backend;
use muster_tests::browser::Browser;

const GAMMA: Spend = Spend {
    input: 20_000,
    output: 4_000,
    cache_read: 9_000,
    cache_write: 1_000,
    cost: 0.125,
};

async fn js(browser: &Browser, script: &str) -> Value {
    browser.execute(script, Vec::new()).await.unwrap()
}

async fn the_usage_page_charts_a_week_in_light_and_dark(backend: Backend) {
    let Some(w) = World::start(backend).await else {
        return;
    };
    w.agent("alpha", ALPHA).await;
    w.agent("beta", BETA).await;
    w.agent("gamma", GAMMA).await;
    let plan: &[(&str, i64)] = &[
        ("alpha", 0),
        ("alpha", 1),
        ("beta", 1),
        ("gamma", 2),
        ("alpha", 3),
        ("beta", 4),
        ("gamma", 4),
        ("alpha", 6),
    ];
    for (i, (agent, days_ago)) in plan.iter().enumerate() {
        let run = w
            .run(&format!("Task {i}"), agent, IssueStatus::InReview)
            .await;
        if *days_ago > 0 {
            w.move_to(&run, *days_ago).await;
        }
    }
    let Some(browser) = Browser::start().await else {
        w.stop().await;
        return;
    };
    browser
        .sign_in(
            &w.url(""),
            "ada@acme.test",
            crate::usage::PASSWORD,
            muster_tests::browser::DEFAULT_WAIT,
        )
        .await
        .unwrap();
    browser
        .goto(&w.url("/w/acme/usage?since=7d"))
        .await
        .unwrap();
    browser.find("#usage-cost").await.unwrap();
    // One bar group per day, one segment per agent-day with runs (4 alpha days, 2 beta, 2 gamma).
    let bars = js(
        &browser,
        "return document.querySelectorAll('#usage-cost > g').length;",
    )
    .await;
    assert_eq!(bars, 7);
    let segments = js(
        &browser,
        "return document.querySelectorAll('#usage-cost rect').length;",
    )
    .await;
    assert_eq!(segments, 8);
    let labelled = js(
        &browser,
        "return document.querySelector('#usage-cost').getAttribute('aria-labelledby');",
    )
    .await;
    assert_eq!(labelled, "usage-cost-title");
    let first_row = browser.text("#usage-table tbody tr").await.unwrap();
    assert!(first_row.starts_with("alpha"), "{first_row}");
    assert!(first_row.contains("$1.0000"), "{first_row}");
    browser.screenshot("usage-light").await.unwrap();
    js(
        &browser,
        "document.documentElement.dataset.theme = 'dark'; return null;",
    )
    .await;
    browser.screenshot("usage-dark").await.unwrap();
    browser.close().await.unwrap();
    w.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs Chromium and chromedriver; run with --include-ignored"]
async fn the_usage_page_charts_a_week_in_light_and_dark_sqlite() {
    the_usage_page_charts_a_week_in_light_and_dark(Backend::Sqlite).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs Chromium and chromedriver, and PostgreSQL (MUSTER_TEST_PG_URL); run with --include-ignored"]
async fn the_usage_page_charts_a_week_in_light_and_dark_postgres() {
    the_usage_page_charts_a_week_in_light_and_dark(Backend::Postgres).await;
}
