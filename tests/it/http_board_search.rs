//! Full-text search in the board's text filter and the command palette, over real HTTP on both
//! backends: words match titles and bodies as word prefixes in any order (keys still match by prefix),
//! and the palette offers search hits — comments too — with where they matched and a snippet.

use muster::domain::{CommentAuthor, IssueTitle, NewComment, NewIssue};
use muster_tests::{Backend, Session, TestApp};
use reqwest::StatusCode;

use crate::http_board::board_with_issues;

both_backends!(
    runtime ();
    board_filter_and_palette_search_full_text,
);

async fn board_filter_and_palette_search_full_text(backend: Backend) {
    let Some((_db, app, ws)) = board_with_issues(backend).await else {
        return;
    };
    let storm = NewIssue::new(IssueTitle::parse("Websocket reconnect storm").unwrap())
        .with_body("Happens after the parser restarts.")
        .unwrap();
    app.store.create_issue(ws.id, &storm).await.unwrap(); // ACM-13
    let quiet = NewIssue::new(IssueTitle::parse("Quiet week").unwrap());
    let quiet = app.store.create_issue(ws.id, &quiet).await.unwrap(); // ACM-14
    let note = NewComment::parse(CommentAuthor::System, "Another websocket storm seen").unwrap();
    app.store.add_comment(quiet.id, &note).await.unwrap();
    let ada = app.sign_in("ada@acme.test", "correct-horse", "acme").await;
    for q in [
        "websock",
        "STORM%20websocket",
        "parser%20restart",
        "reconnect",
    ] {
        let html = board(&ada, &app, q).await;
        assert!(html.contains("card-ACM-13\""), "{q} finds ACM-13");
        assert!(
            !html.contains("card-ACM-14\""),
            "{q}: comments are not the board's"
        );
        assert!(!html.contains("card-ACM-1\""), "{q}: nor other cards");
    }
    let html = board(&ada, &app, "ocket").await;
    assert!(
        !html.contains("card-ACM-13\""),
        "a word's middle is no match"
    );
    let html = board(&ada, &app, "acm-1").await;
    assert!(html.contains("card-ACM-1\"") && html.contains("card-ACM-13\""));

    let palette: serde_json::Value = ada
        .get(&app, "/w/acme/palette?q=websocket%20storm")
        .await
        .json()
        .await
        .unwrap();
    let issues = palette["issues"].as_array().unwrap();
    let found: Vec<(&str, &str)> = issues
        .iter()
        .map(|i| {
            (
                i["key"].as_str().unwrap(),
                i["matched_in"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(found, [("ACM-13", "title"), ("ACM-14", "comment")]);
    assert_eq!(issues[1]["snippet"], "Another websocket storm seen");
    // Without a query the palette lists the board's first issues, with no search fields.
    let all: serde_json::Value = ada.get(&app, "/w/acme/palette").await.json().await.unwrap();
    assert_eq!(all["issues"].as_array().unwrap().len(), 14);
    assert!(all["issues"][0].get("matched_in").is_none());
    app.shutdown.cancel();
}

/// The board page filtered by `q` (already URL-encoded), as Ada sees it.
async fn board(ada: &Session, app: &TestApp, q: &str) -> String {
    let page = ada.get(app, &format!("/w/acme?q={q}")).await;
    assert_eq!(page.status(), StatusCode::OK);
    page.text().await.unwrap()
}
