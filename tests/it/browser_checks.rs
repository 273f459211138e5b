//! An ensemble candidate's check on the run page, in real headless Chromium: the run of a stand-in agent
//! ends, its check result is stored as the runner stores it (a `check` event), and the page shows it as a
//! gate — a red badge, the command, the exit code, the duration, "3/4 passed", and the output's last
//! lines collapsed until opened. Screenshot `run-check.png` in `target/screenshots/`.

use muster::domain::*;
use muster_tests::Backend;
use muster_tests::browser::Browser;

use crate::browser_runs::{DONE, INIT, LIVE, Server, TEXT_2, js, replay, sign_in};

async fn a_check_shows_as_a_gate(backend: Backend, screenshot: bool) {
    let Some(server) = Server::start(backend).await else {
        return;
    };
    let Some(browser) = Browser::start().await else {
        return;
    };
    let coder = server
        .agent(
            "claude-coder",
            &server.script(
                "coder.sh",
                &format!("cat >/dev/null\n{}", replay(&[INIT, TEXT_2, DONE])),
            ),
        )
        .await;
    let issue = server.issue("Parser crashes on empty input").await;
    let run = server
        .store
        .create_run(&NewRun::assignment(server.ws.id, issue.id, coder.id))
        .await
        .unwrap();
    let deadline = tokio::time::Instant::now() + LIVE;
    let run = loop {
        let run = server.store.get_run(run.id).await.unwrap();
        if run.status.is_terminal() {
            break run;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the run did not finish"
        );
        tokio::time::sleep(muster_tests::browser::POLL).await;
    };
    assert_eq!(run.status, RunStatus::Succeeded);
    let last = server
        .store
        .run_events_since(run.id, 0, 10_000)
        .await
        .unwrap()
        .last()
        .map_or(0, |e| e.seq);
    let result = CheckResult {
        command: "cargo test --workspace".to_owned(),
        exit_code: Some(101),
        timed_out: false,
        duration_ms: 8_420,
        passed: Some(3),
        failed: Some(1),
        total: Some(4),
        tail: "test parse_empty ... ok\ntest parse_nested ... ok\ntest parse_unicode ... FAILED\n\nfailures:\n    parse_unicode\n\ntest result: FAILED. 3 passed; 1 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.02s".to_owned(),
        error: None,
    };
    server
        .store
        .append_run_events(
            run.id,
            &[NewRunEvent {
                seq: last + 1,
                at: chrono::Utc::now(),
                kind: CHECK_EVENT.to_owned(),
                payload: serde_json::to_value(&result).unwrap(),
            }],
        )
        .await
        .unwrap();

    sign_in(&browser, &server).await;
    browser
        .goto(&server.url(&format!("/w/acme/runs/{}", run.id)))
        .await
        .unwrap();
    let gate = ".run-log .ev-check.ev-bad";
    browser.find_within(gate, LIVE).await.unwrap();
    assert_eq!(
        browser.text(&format!("{gate} .check-badge")).await.unwrap(),
        "FAILED",
        "the badge (shown upper-case)"
    );
    assert_eq!(
        browser.text(&format!("{gate} .cmd")).await.unwrap(),
        "cargo test --workspace"
    );
    assert_eq!(
        browser
            .text(&format!("{gate} .check-ending"))
            .await
            .unwrap(),
        "exit 101"
    );
    assert_eq!(
        browser
            .text(&format!("{gate} .check-counts"))
            .await
            .unwrap(),
        "3/4 passed"
    );
    let head = browser.text(&format!("{gate} .ev-head")).await.unwrap();
    assert!(head.contains("8.4 s"), "{head}");
    // The tail is collapsed until opened.
    let shown = |sel: &str| {
        format!(
            "return document.querySelector('{sel}').checkVisibility({{contentVisibilityAuto: true}})"
        )
    };
    let tail = format!("{gate} .check-tail pre");
    assert_eq!(
        js(&browser, &shown(&tail)).await,
        serde_json::Value::Bool(false)
    );
    browser
        .click(&format!("{gate} .check-tail summary"))
        .await
        .unwrap();
    assert_eq!(
        js(&browser, &shown(&tail)).await,
        serde_json::Value::Bool(true)
    );
    assert!(
        browser
            .text(&tail)
            .await
            .unwrap()
            .contains("test parse_unicode ... FAILED")
    );
    // The gate comes after the agent's own finish, in seq order.
    let order = js(
        &browser,
        "return [...document.querySelectorAll('.run-log > li')].map(li => li.className)",
    )
    .await;
    let classes: Vec<String> = serde_json::from_value(order).unwrap();
    assert!(classes.last().unwrap().contains("ev-check"), "{classes:?}");
    if screenshot {
        js(
            &browser,
            &format!(
                "document.querySelector('{gate}').scrollIntoView({{block: 'center'}}); return true"
            ),
        )
        .await;
        browser.screenshot("run-check").await.unwrap();
    }
    browser.close().await.unwrap();
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs Chromium and chromedriver; run with --include-ignored"]
async fn a_check_shows_as_a_gate_sqlite() {
    a_check_shows_as_a_gate(Backend::Sqlite, true).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs Chromium and chromedriver, and PostgreSQL (MUSTER_TEST_PG_URL); run with --include-ignored"]
async fn a_check_shows_as_a_gate_postgres() {
    a_check_shows_as_a_gate(Backend::Postgres, false).await;
}
