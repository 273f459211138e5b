//! The paged board over real HTTP, on both backends: each column shows its first page and its count,
//! "show more" pages by cursor (htmx fragment or a page of its own), bad cursors are refused by name,
//! filters apply to pages and counts, and the live socket sends only what changed for what is shown.

use futures_util::StreamExt as _;
use muster::domain::{IssueStatus, IssueTitle, Label, NewIssue};
use muster_tests::{Backend, Session, TestApp};
use reqwest::StatusCode;

use crate::http_board::board_with_issues;

/// Cards per column page (the server's `COLUMN_PAGE`).
const PAGE: usize = 40;

/// The part of `html` from the element with `id` to the end of its `</section>` (or the end).
fn section<'a>(html: &'a str, id: &str) -> &'a str {
    let start = html
        .find(&format!(r#"id="{id}""#))
        .unwrap_or_else(|| panic!("no #{id} in {html}"));
    let rest = &html[start..];
    rest.find("</section>").map_or(rest, |end| &rest[..end])
}

fn keys(html: &str) -> Vec<String> {
    html.split(r#"data-key=""#)
        .skip(1)
        .map(|r| r.split('"').next().unwrap().to_owned())
        .collect()
}

/// The "show more" link's URL in `html`, if any.
fn more_url(html: &str) -> Option<String> {
    let at = html.find(r#"class="btn btn-ghost show-more" href=""#)?;
    let href = html[at..].split(r#"href=""#).nth(1)?.split('"').next()?;
    Some(href.replace("&amp;", "&"))
}

async fn text(session: &Session, app: &TestApp, path: &str, hx: bool) -> String {
    let res = if hx {
        session.hx_get(app, path).await
    } else {
        session.get(app, path).await
    };
    assert_eq!(res.status(), StatusCode::OK, "{path}");
    res.text().await.unwrap()
}

/// 100 issues in todo (ACM-1..12 "Task n", ACM-13..100 "Bulk n", every tenth labelled `ten`) and two
/// in done.
async fn big_board(backend: Backend) -> Option<(muster_tests::TestDb, TestApp)> {
    let (db, app, ws) = board_with_issues(backend).await?;
    for n in 13..=102 {
        let mut new = NewIssue::new(IssueTitle::parse(&format!("Bulk {n}")).unwrap());
        new.status = if n > 100 {
            IssueStatus::Done
        } else {
            IssueStatus::Todo
        };
        if n % 10 == 0 {
            new.labels = vec![Label::parse("ten").unwrap()];
        }
        app.store.create_issue(ws.id, &new).await.unwrap();
    }
    Some((db, app))
}

async fn board_pages_each_column(backend: Backend) {
    let Some((_db, app)) = big_board(backend).await else {
        return;
    };
    let ada = app.sign_in("ada@acme.test", "correct-horse", "acme").await;
    let board = text(&ada, &app, "/w/acme", false).await;
    let todo = section(&board, "column-todo");
    assert!(
        todo.contains(
            r#"<span class="count" id="count-todo" title="Issues in this column">100</span>"#
        ),
        "{todo}"
    );
    assert_eq!(keys(todo).len(), PAGE);
    assert!(todo.contains("+ 60 more"), "{todo}");
    let done = section(&board, "column-done");
    assert_eq!(keys(done), ["ACM-101", "ACM-102"]);
    assert!(more_url(done).is_none(), "a short column has no show more");
    assert!(
        board.len() < 200_000,
        "{} bytes for a page of each column",
        board.len()
    );
    // The label filter's choices come from the database, once each.
    assert_eq!(board.matches(r#"<option value="ten""#).count(), 1);

    // Show more, as htmx asks for it: the next cards and the next link, until the column ends.
    let mut shown = keys(todo);
    let mut next = more_url(todo);
    let mut rests = Vec::new();
    while let Some(url) = next {
        assert!(
            url.starts_with("/w/acme/columns/todo?after=todo%3A"),
            "{url}"
        );
        let fragment = text(&ada, &app, &url, true).await;
        assert!(!fragment.contains("<html"), "a fragment: {fragment}");
        assert!(
            fragment
                .contains(r#"<div class="column-more" id="more-todo" hx-swap-oob="outerHTML">"#)
        );
        shown.extend(keys(&fragment));
        rests.extend(
            fragment
                .split(r#"<span class="more-rest">+ "#)
                .nth(1)
                .map(|r| r.split(' ').next().unwrap().to_owned()),
        );
        next = more_url(&fragment);
    }
    let expected: Vec<String> = (1..=100).map(|n| format!("ACM-{n}")).collect();
    assert_eq!(shown, expected, "each card once, in board order");
    assert_eq!(rests, ["20"]);

    // Without JavaScript the same link is a page of its own, with the way back and the next link.
    let second = more_url(todo).unwrap();
    let page = text(&ada, &app, &second, false).await;
    assert!(
        page.contains("<html") && page.contains(r#"<a href="/w/acme?"#),
        "{page}"
    );
    assert_eq!(
        keys(section(&page, "column-todo")),
        expected[PAGE..2 * PAGE]
    );
    assert!(page.contains("+ 20 more"));

    // Bad cursors and columns are refused by name.
    for (url, status, message) in [
        (
            "/w/acme/columns/todo?after=garbage",
            StatusCode::BAD_REQUEST,
            "garbage&quot; is not a cursor of this list",
        ),
        (
            "/w/acme/columns/todo?after=done%3A1%3A101",
            StatusCode::BAD_REQUEST,
            "is a cursor of the done column, not of todo",
        ),
        (
            "/w/acme/columns/nope",
            StatusCode::NOT_FOUND,
            "the board has no column &quot;nope&quot;",
        ),
    ] {
        let res = ada.hx_get(&app, url).await;
        assert_eq!(res.status(), status, "{url}");
        let body = res.text().await.unwrap();
        assert!(body.contains(message), "{url}: {body}");
    }

    // Filters page and count in the database: text, then label.
    let bulk = text(&ada, &app, "/w/acme?q=bulk", false).await;
    let todo = section(&bulk, "column-todo");
    assert!(todo.contains(r#"title="Issues in this column">88</span>"#));
    assert!(todo.contains("+ 48 more"));
    let url = more_url(todo).unwrap();
    assert!(url.contains("q=bulk"), "{url}");
    let fragment = text(&ada, &app, &url, true).await;
    assert_eq!(keys(&fragment), expected[12 + PAGE..12 + 2 * PAGE]);
    let ten = text(&ada, &app, "/w/acme?label=ten", false).await;
    let todo = section(&ten, "column-todo");
    assert!(todo.contains(r#"title="Issues in this column">9</span>"#));
    assert_eq!(keys(todo).len(), 9);
    assert!(more_url(todo).is_none());
    app.shutdown.cancel();
}

both_backends!(
    runtime ();
    board_pages_each_column,
    live_board_sends_what_changed_for_the_shown_pages,
);

type Socket =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

async fn next_frame(socket: &mut Socket) -> String {
    loop {
        let msg = tokio::time::timeout(std::time::Duration::from_secs(10), socket.next())
            .await
            .expect("a frame within 10 s")
            .unwrap()
            .unwrap();
        if msg.is_text() {
            return msg.into_text().unwrap().to_string();
        }
    }
}

async fn live_board_sends_what_changed_for_the_shown_pages(backend: Backend) {
    let Some((_db, app)) = big_board(backend).await else {
        return;
    };
    let bob = app.sign_in("bob@acme.test", "correct-horse", "acme").await;
    let cookie = [("cookie", bob.cookie.as_str())];
    let mut socket = app.socket("/w/acme/live", &cookie).await.unwrap();
    let ada = app.sign_in("ada@acme.test", "correct-horse", "acme").await;
    let move_to = |key: &'static str, status: &'static str, index: &'static str| {
        let ada = &ada;
        let app = &app;
        async move {
            let res = ada
                .hx_post(
                    app,
                    &format!("/w/acme/issues/{key}/move"),
                    &[("_csrf", &ada.csrf), ("status", status), ("index", index)],
                )
                .await;
            assert_eq!(res.status(), StatusCode::NO_CONTENT, "{key}");
        }
    };

    // A shown card changes column: both columns are sent whole, nothing else.
    move_to("ACM-5", "done", "0").await;
    let frame = next_frame(&mut socket).await;
    for status in ["backlog", "in_progress", "in_review"] {
        assert!(
            !frame.contains(&format!(r#"id="column-{status}""#)),
            "{status}: {frame}"
        );
    }
    let todo = keys(section(&frame, "column-todo"));
    assert_eq!(todo.len(), PAGE);
    assert!(!todo.contains(&"ACM-5".to_owned()) && todo.contains(&"ACM-41".to_owned()));
    assert_eq!(keys(section(&frame, "column-done"))[0], "ACM-5");

    // A card from beyond todo's first page moves into done: done's page is sent, todo only its count.
    move_to("ACM-95", "done", "").await;
    let frame = next_frame(&mut socket).await;
    assert!(!frame.contains(r#"id="column-todo""#), "{frame}");
    assert!(
        frame.contains(r#"<span class="count" id="count-todo" hx-swap-oob="outerHTML" title="Issues in this column">98</span>"#),
        "{frame}"
    );
    assert_eq!(
        keys(section(&frame, "column-done")),
        ["ACM-5", "ACM-101", "ACM-102", "ACM-95"]
    );
    assert!(!frame.contains("hx-swap-oob=\"delete\""), "{frame}");

    // A move that stays beyond the first pages changes nothing shown: only a reader who paged that
    // far loses the card where it was.
    move_to("ACM-90", "todo", "60").await;
    let frame = next_frame(&mut socket).await;
    assert_eq!(frame, r#"<li id="item-ACM-90" hx-swap-oob="delete"></li>"#);

    // Into the first page: the column is sent whole, the card first.
    move_to("ACM-80", "todo", "0").await;
    let frame = next_frame(&mut socket).await;
    let todo = section(&frame, "column-todo");
    assert_eq!(keys(todo)[0], "ACM-80");
    assert_eq!(keys(todo).len(), PAGE);
    assert!(!frame.contains(r#"id="column-done""#) && !frame.contains("delete"));
    app.shutdown.cancel();
}
