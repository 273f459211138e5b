//! The paged board in real headless Chromium: a long column shows its first page, its count and
//! "+ N more"; "show more" appends the next page; and with paging in effect a teammate's moves show up
//! live: a move from beyond the shown cards changes only counts (and the column it lands in), a move
//! of a shown card takes it from one column to the other. Screenshots: `board-paged` (the top) and
//! `board-paged-more` (the foot of the long column).

use std::time::Duration;

use muster::domain::{IssueStatus, IssueTitle, NewIssue};
use muster_tests::Backend;
use muster_tests::browser::{Browser, drag_card};
use serde_json::{Value, json};

use crate::http_board::board_with_issues;

/// Generous: a cold Chromium on a loaded 2-core machine.
const LIVE: Duration = Duration::from_secs(20);

/// Polls `script` (a function body returning a value) until it returns `want`.
async fn until(browser: &Browser, script: &str, want: Value) {
    browser.until_js(script, &want, LIVE).await.unwrap();
}

const CARDS: &str = "return document.querySelectorAll('#cards-todo > li').length";
const TODO_COUNT: &str = "return document.querySelector('#count-todo').textContent";
const REST: &str = "return document.querySelector('#more-todo .more-rest').textContent";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs Chromium and chromedriver; run with --include-ignored"]
async fn show_more_and_live_moves_with_paging() {
    // ACM-1..12 from the fixture, then ACM-13..95: 95 cards in todo, and two in done.
    let Some((_db, app, ws)) = board_with_issues(Backend::Sqlite).await else {
        return;
    };
    for n in 13..=97 {
        let mut new = NewIssue::new(IssueTitle::parse(&format!("Bulk task {n}")).unwrap());
        new.status = if n > 95 {
            IssueStatus::Done
        } else {
            IssueStatus::Todo
        };
        app.store.create_issue(ws.id, &new).await.unwrap();
    }
    let base = app.url("");
    let Some(ada) = Browser::signed_in(&base, "ada@acme.test", LIVE).await else {
        return;
    };
    ada.find("#board-live").await.unwrap();
    until(&ada, CARDS, json!(40)).await;
    assert_eq!(ada.text("#count-todo").await.unwrap(), "95");
    assert_eq!(
        ada.text("#more-todo .more-rest").await.unwrap(),
        "+ 55 more"
    );

    // Show more appends the next page in place, without leaving the board.
    ada.click("#more-todo a.show-more").await.unwrap();
    until(&ada, CARDS, json!(80)).await;
    until(&ada, REST, json!("+ 15 more")).await;
    assert!(ada.current_url().await.unwrap().ends_with("/w/acme"));
    let order = ada
        .execute(
            "return [...document.querySelectorAll('#cards-todo .card')].map(c => c.dataset.key).join(' ')",
            vec![],
        )
        .await
        .unwrap();
    let expected: Vec<String> = (1..=80).map(|n| format!("ACM-{n}")).collect();
    assert_eq!(order, json!(expected.join(" ")), "each card once, in order");

    // Bob, on his own board, moves ACM-90 (beyond every shown page) to done: Ada's todo keeps its 80
    // cards and counts one fewer, and the card lands in done.
    let Some(bob) = Browser::signed_in(&base, "bob@acme.test", LIVE).await else {
        return;
    };
    bob.find("#board-live").await.unwrap();
    let posted = bob
        .execute(
            r#"return fetch('/w/acme/issues/ACM-90/move', { method: 'POST', credentials: 'same-origin',
                 headers: { 'HX-Request': 'true', 'x-csrf-token': window.Muster.csrfToken() },
                 body: new URLSearchParams({ status: 'done' }) }).then(r => r.status);"#,
            vec![],
        )
        .await
        .unwrap();
    assert_eq!(posted, json!(204));
    ada.wait_for_text("#column-done", "ACM-90", LIVE)
        .await
        .unwrap();
    until(&ada, TODO_COUNT, json!("94")).await;
    until(&ada, REST, json!("+ 14 more")).await;
    assert_eq!(ada.execute(CARDS, vec![]).await.unwrap(), json!(80));

    // Bob drags ACM-3 (shown) into "In progress": his counts follow at once, and Ada's board moves it.
    let dragged = bob
        .execute(
            &drag_card(
                "ACM-3",
                "in_progress",
                "[card.closest('.column').id, document.querySelector('#count-todo').textContent,
                  document.querySelector('#count-in_progress').textContent]",
            ),
            vec![],
        )
        .await
        .unwrap();
    assert_eq!(dragged, json!(["column-in_progress", "93", "1"]));
    ada.wait_for_text("#column-in_progress", "ACM-3", LIVE)
        .await
        .unwrap();
    until(&ada, TODO_COUNT, json!("93")).await;
    until(
        &ada,
        "return !!document.querySelector('#column-todo #card-ACM-3')",
        json!(false),
    )
    .await;
    ada.screenshot("board-paged-more").await.unwrap();
    ada.execute("window.scrollTo(0, 0)", vec![]).await.unwrap();
    ada.screenshot("board-paged").await.unwrap();
    ada.close().await.unwrap();
    bob.close().await.unwrap();
    app.shutdown.cancel();
}
