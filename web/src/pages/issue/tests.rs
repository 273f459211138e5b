use super::*;
use crate::samples::{self, err};

#[test]
fn renders_sanitised_markdown_and_escapes_title() {
    let mut v = samples::issue();
    v.title = "<script>alert(1)</script>".into();
    let html = issue(&v).into_string();
    assert!(html.contains("<h1 class=\"issue-title\">&lt;script&gt;alert(1)&lt;/script&gt;</h1>"));
    assert!(html.contains(
        "<title>MUS-24 &lt;script&gt;alert(1)&lt;/script&gt; · Acme Robotics · Muster</title>"
    ));
    assert!(!html.contains("<script>alert"));
    assert!(
        html.contains("<strong>live</strong>"),
        "body_html is emitted as HTML"
    );
}

#[test]
fn comments_distinguish_people_and_agents() {
    let html = issue(&samples::issue()).into_string();
    assert!(html.contains(r#"<article class="comment comment-user">"#));
    assert!(html.contains(r#"<article class="comment comment-agent">"#));
    assert!(html.contains(r#"<span class="tag-agent">agent</span>"#));
    assert!(html.contains("<code>mus-24-live-logs</code>"));
    assert!(html.contains(r#"<time datetime="2025-03-04T16:38:00Z""#));
    assert!(html.contains("moved this from Todo to In progress"));
    assert!(html.contains("avatar avatar-system"));
}

#[test]
fn comment_form_posts_body_and_keeps_it_on_error() {
    let mut v = samples::issue();
    v.comment_body = "half-typed <em>".into();
    v.comment_errors = err("body", "must not be empty");
    let html = issue(&v).into_string();
    assert!(html.contains(r#"method="post" action="/w/acme/issues/MUS-24/comments"><input type="hidden" name="_csrf" value="csrf-123">"#));
    assert!(html.contains(r#"id="comment-body" name="body""#));
    assert!(html.contains(">half-typed &lt;em&gt;</textarea>"));
    assert!(html.contains(r#"id="comment-body-error"><p>must not be empty</p>"#));
}

#[test]
fn edit_form_posts_to_issue_url_and_opens_on_error() {
    let closed = issue(&samples::issue()).into_string();
    assert!(closed.contains(r#"<details class="panel edit-issue">"#));
    let mut v = samples::issue();
    v.form.errors = err("form", "Someone else changed this issue; reload.");
    let html = issue(&v).into_string();
    assert!(html.contains(r#"<details class="panel edit-issue" open>"#));
    assert!(html.contains(r#"<form class="stack" method="post" action="/w/acme/issues/MUS-24"><input type="hidden" name="_csrf""#));
    assert!(html.contains("Someone else changed this issue; reload."));
    for name in ["title", "body", "status", "priority", "assignee", "labels"] {
        assert!(
            html.contains(&format!(r#"id="edit-{name}" name="{name}""#)),
            "{name}"
        );
    }
}

#[test]
fn runs_are_listed_newest_first_with_their_numbers() {
    let html = issue(&samples::issue()).into_string();
    assert!(html.contains(r#"<h2 id="runs-h">Runs <span class="count">2</span></h2>"#));
    let newest = html
        .find(r#"href="/w/acme/runs/r2">Attempt 2</a>"#)
        .unwrap();
    let oldest = html
        .find(r#"href="/w/acme/runs/r1">Attempt 1</a>"#)
        .unwrap();
    assert!(newest < oldest);
    assert!(
        html.contains(r#"<span class="run run-running""#)
            && html.contains(r#"<span class="run run-failed""#)
    );
    assert!(html.contains("62,955") && html.contains("$0.0912") && html.contains("1m 12s"));
    assert!(html.contains("1 file changed, 3 insertions(+)"));
    let mut v = samples::issue();
    v.runs.clear();
    assert!(
        !issue(&v).into_string().contains("runs-h"),
        "no section without runs"
    );
}
