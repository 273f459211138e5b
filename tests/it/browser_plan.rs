//! Planning on the pages in real headless Chromium: a parent gets three sub-issues and a blocked-by
//! relation through its Plan panel; the waiting banner shows; a sub-issue finishing moves the parent's
//! progress without a reload; a cycle is refused in the panel; the board card shows "1/3" and
//! "blocked by ACM-2". Screenshot: `issue-plan` in `target/screenshots/` (copied to
//! `docs/screenshots/issue-plan.png` for the README).

use std::time::Duration;

use muster::domain::{IssueTitle, NewIssue};
use muster_tests::browser::Browser;
use muster_tests::seed::{self, PASSWORD};
use muster_tests::{Backend, TestDb, spawn_app};
use serde_json::json;

/// Generous: a cold Chromium on a loaded 2-core machine.
const LIVE: Duration = Duration::from_secs(20);

/// Types into a form field of the Plan panel and sends that form.
async fn send(browser: &Browser, field: &str, value: &str, action: &str) {
    browser.fill(field, value).await.unwrap();
    browser
        .click(&format!(
            "#issue-plan form[action$='/plan/{action}'] button[type=submit]"
        ))
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs Chromium and chromedriver; run with --include-ignored"]
async fn a_plan_is_built_on_the_issue_page_and_shows_on_the_board() {
    let Some(db) = TestDb::new(Backend::Sqlite).await else {
        return;
    };
    let app = spawn_app(db.config()).await;
    let (_, ws) = seed::acme(&app.store).await;
    for (title, body) in [
        (
            "Launch the public beta",
            "Everything the beta needs, as sub-issues. It starts once billing is migrated.",
        ),
        ("Migrate the billing schema", ""),
    ] {
        let mut new = NewIssue::new(IssueTitle::parse(title).unwrap());
        new.body = body.to_owned();
        app.store.create_issue(ws.id, &new).await.unwrap();
    }
    let Some(browser) = Browser::signed_in(&app.url(""), "ada@acme.test", LIVE).await else {
        return;
    };
    browser.set_viewport_width(1280, 1480).await.unwrap();
    browser
        .goto(&app.url("/w/acme/issues/ACM-1"))
        .await
        .unwrap();
    browser
        .find_within("#plan-child-title", LIVE)
        .await
        .unwrap();

    // Three sub-issues, each from the "+ Sub-issue" form.
    for (n, title) in [
        "Write the launch docs",
        "Record the demo video",
        "Announce on the blog",
    ]
    .iter()
    .enumerate()
    {
        send(&browser, "#plan-child-title", title, "children").await;
        browser
            .wait_for_text(
                "#issue-plan .plan-progress-text",
                &format!("0/{} done", n + 1),
                LIVE,
            )
            .await
            .unwrap();
    }
    browser
        .wait_for_text("#plan-child-ACM-3", "Write the launch docs", LIVE)
        .await
        .unwrap();

    // Blocked by ACM-2: the relation holds and the banner says what the agent waits on.
    browser
        .select("#plan-rel-kind", "blocked_by")
        .await
        .unwrap();
    send(&browser, "#plan-rel-issue", "ACM-2", "relations").await;
    browser
        .wait_for_text(
            "#issue-plan .plan-waiting",
            "Waiting on ACM-2: its agent starts when it is done",
            LIVE,
        )
        .await
        .unwrap();
    browser
        .wait_for_text("#plan-blocked_by-ACM-2", "holds", LIVE)
        .await
        .unwrap();

    // A sub-issue finishes elsewhere: the parent's progress follows without a reload.
    browser
        .execute("window.__notReloaded = true; return true", vec![])
        .await
        .unwrap();
    let owner = app.sign_in("ada@acme.test", PASSWORD, "acme").await;
    let res = owner
        .post(
            &app,
            "/w/acme/issues/ACM-3",
            &[("_csrf", owner.csrf.as_str()), ("status", "done")],
        )
        .await;
    assert_eq!(res.status(), reqwest::StatusCode::SEE_OTHER);
    browser
        .wait_for_text("#issue-plan .plan-progress-text", "1/3 done", LIVE)
        .await
        .unwrap();
    assert_eq!(
        browser
            .execute("return window.__notReloaded === true", vec![])
            .await
            .unwrap(),
        json!(true),
        "the panel changed in place"
    );
    browser
        .execute("window.scrollTo(0, 0); return true", vec![])
        .await
        .unwrap();
    browser.screenshot("issue-plan").await.unwrap();

    // A cycle is refused in the panel, with the cycle named beside the key.
    browser
        .goto(&app.url("/w/acme/issues/ACM-2"))
        .await
        .unwrap();
    browser
        .select("#plan-rel-kind", "blocked_by")
        .await
        .unwrap();
    send(&browser, "#plan-rel-issue", "ACM-1", "relations").await;
    browser
        .wait_for_text("#plan-rel-issue-error", "that would make a cycle", LIVE)
        .await
        .unwrap();

    // The board: the parent's "1/3" and its blocker.
    browser.goto(&app.url("/w/acme")).await.unwrap();
    browser
        .wait_for_text("#card-ACM-1 .card-children", "1/3", LIVE)
        .await
        .unwrap();
    browser
        .wait_for_text("#card-ACM-1 .card-blocked", "blocked by ACM-2", LIVE)
        .await
        .unwrap();
    browser.screenshot("board-plan").await.unwrap();
    browser.close().await.unwrap();
}
