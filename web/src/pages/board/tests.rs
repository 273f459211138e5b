use super::*;
use crate::samples::{self, err};

#[test]
fn board_wraps_columns_in_ws_connection() {
    let html = board(&samples::board()).into_string();
    assert!(html.contains(r#"<div class="board-live" id="board-live" hx-ext="ws" ws-connect="/w/acme/live" hx-history="false">"#));
    for status in ["backlog", "todo", "in_progress", "in_review", "done"] {
        assert!(
            html.contains(&format!(r#"id="column-{status}""#)),
            "{status}"
        );
    }
    assert!(
        !html.contains("hx-swap-oob"),
        "the page itself swaps nothing"
    );
    assert_eq!(html.matches(r#"draggable="true""#).count(), 8);
}

#[test]
fn filter_bar_is_a_get_form_with_documented_fields() {
    let mut v = samples::board();
    v.filter.q = "sso \"login\"".into();
    v.filter.show_hidden = true;
    v.filter.active = true;
    let html = board(&v).into_string();
    assert!(html.contains(r##"<form class="filters" method="get" action="/w/acme" role="search" hx-get="/w/acme" hx-trigger="input changed delay:300ms from:#filter-q, change, submit" hx-target="#board-live" hx-select="#board-live" hx-swap="outerHTML" hx-select-oob="#filter-clear" hx-push-url="true""##));
    assert!(
        html.contains(r#"<button class="btn" type="submit">Filter</button>"#),
        "works without JS"
    );
    assert!(html.contains(r#"name="q" value="sso &quot;login&quot;""#));
    for name in ["assignee", "label", "priority"] {
        assert!(html.contains(&format!(r#"name="{name}""#)), "{name}");
    }
    assert!(html.contains(r#"name="hidden" value="1" checked"#));
    assert!(html.contains(
        r#"<span id="filter-clear"><a class="btn btn-ghost" href="/w/acme">Clear</a></span>"#
    ));
}

#[test]
fn new_issue_form_posts_fields_and_opens_with_errors() {
    let closed = board(&samples::board()).into_string();
    assert!(closed.contains(r#"<details class="new-issue popover">"#));

    let mut v = samples::board();
    v.new_issue = samples::issue_form(
        "<script>alert(1)</script>",
        "typed body",
        err("title", "is too long"),
    );
    let html = board(&v).into_string();
    assert!(html.contains(r#"<details class="new-issue popover" open>"#));
    assert!(html.contains(r#"<form class="stack popover-body" method="post" action="/w/acme/issues"><input type="hidden" name="_csrf" value="csrf-123">"#));
    assert!(
        html.contains(r#"name="title" type="text" value="&lt;script&gt;alert(1)&lt;/script&gt;""#)
    );
    assert!(!html.contains("<script>alert"));
    assert!(html.contains(">typed body</textarea>"));
    assert!(html.contains("is too long"));
    for name in ["body", "status", "priority", "assignee", "labels"] {
        assert!(
            html.contains(&format!(r#"id="new-issue-{name}" name="{name}""#)),
            "{name}"
        );
    }
    assert!(
        html.contains(r#"<option value="agent:0195" selected>claude-reviewer (agent)</option>"#)
    );
}
