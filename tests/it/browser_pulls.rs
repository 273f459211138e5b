//! Pull requests on the pages in real headless Chromium: a seeded connection and a draft pull request
//! with a failing check and a review show on the board card's badge and in the issue's side panel;
//! then the pull request changes in the store and is announced as the engine announces it, and the
//! badge and the panel follow without a reload. Screenshots: `issue-pull-request`,
//! `issue-pull-request-merged`, `board-pull-request`, `settings-forge` in `target/screenshots/`.

use std::time::Duration;

use muster::domain::{
    CheckState, IssueStatus, IssueTitle, NewIssue, NewRun, PrCheck, PrReview, PrState, PrUpdate,
    PullRequest, ReviewVerdict, RuntimeKind, WorkspaceId,
};
use muster::hub::{LiveEvent, Topic};
use muster_tests::browser::Browser;
use muster_tests::{Backend, TestApp, TestDb, seed, spawn_app};
use serde_json::json;

/// Generous: a cold Chromium on a loaded 2-core machine.
const LIVE: Duration = Duration::from_secs(20);

/// Records what the forge said about `pr`, then announces its issue as the engine does.
async fn forge_says(app: &TestApp, ws: WorkspaceId, pr: &PullRequest, update: PrUpdate) {
    app.store.update_pull_request(pr.id, &update).await.unwrap();
    let issue = app.store.get_issue_by_id(pr.issue_id).await.unwrap();
    app.state
        .hub
        .publish(Topic::Board(ws), LiveEvent::IssueChanged(issue.key));
}

/// Marks the page, so that a reload (which would drop the mark) is noticed.
async fn mark(browser: &Browser) {
    browser
        .execute("window.__notReloaded = true; return true", vec![])
        .await
        .unwrap();
}

async fn still_marked(browser: &Browser) -> bool {
    browser
        .execute("return window.__notReloaded === true", vec![])
        .await
        .unwrap()
        == json!(true)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs Chromium and chromedriver; run with --include-ignored"]
async fn the_pull_request_shows_on_the_card_and_the_issue_and_follows_the_forge_live() {
    let Some(db) = TestDb::new(Backend::Sqlite).await else {
        return;
    };
    let app = spawn_app(db.config()).await;
    let (ada, ws) = seed::acme(&app.store).await;
    let agent = seed::agent(&app.store, ws.id, "claude-coder", RuntimeKind::Custom).await;
    let mut new = NewIssue::new(IssueTitle::parse("Rate-limit the public API").unwrap());
    new.status = IssueStatus::InReview;
    let issue = app.store.create_issue(ws.id, &new).await.unwrap();
    let run = app
        .store
        .create_run(&NewRun::assignment(ws.id, issue.id, agent.id))
        .await
        .unwrap();
    let conn = seed::forge_connection(&app.store, ws.id, ada.id).await;
    let pr = seed::pull_request(&app.store, &conn, &run, 7).await;
    for update in [
        PrUpdate {
            mergeable: Some(Some(false)),
            check: Some(PrCheck {
                name: "ci/test".into(),
                state: CheckState::Failure,
                url: Some("https://ci.example/runs/1".into()),
            }),
            ..PrUpdate::default()
        },
        PrUpdate {
            review: Some(PrReview {
                author: "grace".into(),
                verdict: ReviewVerdict::ChangesRequested,
            }),
            ..PrUpdate::default()
        },
    ] {
        app.store.update_pull_request(pr.id, &update).await.unwrap();
    }

    let Some(browser) = Browser::signed_in(&app.url(""), "ada@acme.test", LIVE).await else {
        return;
    };

    // The board: the card's badge, in the draft's colour; it turns "open" live when the forge says so.
    browser.goto(&app.url("/w/acme")).await.unwrap();
    let badge = "#card-ACM-1 .card-pull";
    browser.wait_for_text(badge, "PR #7", LIVE).await.unwrap();
    let class = async || {
        browser
            .execute(
                &format!("return document.querySelector({badge:?}).className"),
                vec![],
            )
            .await
            .unwrap()
    };
    assert_eq!(class().await, json!("card-pull pull-draft"));
    mark(&browser).await;
    let update = PrUpdate {
        draft: Some(false),
        ..PrUpdate::default()
    };
    forge_says(&app, ws.id, &pr, update).await;
    browser
        .until_js(
            &format!("return document.querySelector({badge:?})?.className"),
            &json!("card-pull pull-open"),
            LIVE,
        )
        .await
        .unwrap();
    assert!(still_marked(&browser).await, "the board changed in place");
    browser.screenshot("board-pull-request").await.unwrap();

    // The issue: number, state, mergeable, the failing check, the review and the rounds.
    browser
        .goto(&app.url(&format!("/w/acme/issues/{}", issue.key)))
        .await
        .unwrap();
    let panel = browser
        .wait_for_text("#issue-pulls", "#7", LIVE)
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    for part in [
        "Open",
        "round 0 of 3",
        "Mergeable",
        "no",
        "ci/test",
        "failure",
        "grace",
        "changes requested",
    ] {
        assert!(panel.contains(part), "{part:?} not in the panel: {panel}");
    }
    let link = browser
        .execute(
            "var a = document.querySelector('#issue-pulls a.pull-number'); \
             return [a.href, a.target, a.rel]",
            vec![],
        )
        .await
        .unwrap();
    assert_eq!(
        link,
        json!(["https://github.com/acme/app/pull/7", "_blank", "noopener"])
    );
    assert!(
        browser
            .find_within(
                "#issue-pulls .check-failure a[href='https://ci.example/runs/1']",
                LIVE
            )
            .await
            .is_ok()
    );
    assert!(
        !panel.contains("Open pull request"),
        "no button while a pull request is open: {panel}"
    );
    browser
        .execute(
            "document.querySelector('#issue-pulls').scrollIntoView({block: 'end'}); return true",
            vec![],
        )
        .await
        .unwrap();
    browser.screenshot("issue-pull-request").await.unwrap();

    // The forge: CI passes, the pull request is merged; the panel follows without a reload.
    mark(&browser).await;
    let update = PrUpdate {
        state: Some(PrState::Merged),
        check: Some(PrCheck {
            name: "ci/test".into(),
            state: CheckState::Success,
            url: None,
        }),
        ..PrUpdate::default()
    };
    forge_says(&app, ws.id, &pr, update).await;
    browser
        .wait_for_text("#issue-pulls .pull-state", "Merged", LIVE)
        .await
        .unwrap();
    browser
        .wait_for_text("#issue-pulls .pull-check", "success", LIVE)
        .await
        .unwrap();
    assert!(still_marked(&browser).await, "the panel changed in place");
    // Nothing is open any more: the panel offers to open one.
    browser
        .wait_for_text("#issue-pulls", "Open pull request", LIVE)
        .await
        .unwrap();
    browser
        .screenshot("issue-pull-request-merged")
        .await
        .unwrap();

    // The owner's Settings show the connection.
    browser.goto(&app.url("/w/acme/settings")).await.unwrap();
    browser
        .wait_for_text("#forge-kind", "GitHub", LIVE)
        .await
        .unwrap();
    browser
        .execute(
            "document.querySelector('#forge').scrollIntoView({block: 'start'}); return true",
            vec![],
        )
        .await
        .unwrap();
    browser.screenshot("settings-forge").await.unwrap();

    // Without a connection, the connect form's API URL example follows the chosen kind.
    app.store
        .delete_forge_connection(ws.id, conn.id)
        .await
        .unwrap();
    browser.goto(&app.url("/w/acme/settings")).await.unwrap();
    browser.find_within("#forge-kind", LIVE).await.unwrap();
    browser.select("#forge-kind", "gitlab").await.unwrap();
    browser
        .until_js(
            "return document.querySelector('#forge-api_url').placeholder",
            &json!("https://gitlab.com/api/v4"),
            LIVE,
        )
        .await
        .unwrap();
    browser.close().await.unwrap();
}
