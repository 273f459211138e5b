use super::*;
use crate::samples::{self, err};
use crate::views::{CommentEditView, IssueDeleteView};

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
    assert!(html.contains(r#"<article class="comment comment-user" id="comment-c1">"#));
    assert!(html.contains(r#"<article class="comment comment-agent" id="comment-c2">"#));
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
fn properties_save_on_change_and_without_javascript() {
    let html = issue(&samples::issue()).into_string();
    assert!(html.contains(r##"<form class="panel issue-props" id="issue-props" method="post" action="/w/acme/issues/MUS-24" hx-post="/w/acme/issues/MUS-24" hx-trigger="change, submit" hx-select="#issue-page" hx-target="#issue-page""##), "{html}");
    for name in ["status", "priority", "assignee"] {
        assert!(
            html.contains(&format!(r#"<select id="prop-{name}" name="{name}""#)),
            "{name}"
        );
    }
    assert!(
        html.contains(r#"<input id="prop-labels" name="labels" type="text" value="live, backend""#)
    );
    assert!(html.contains(r#"<noscript><div class="form-actions"><button class="btn btn-primary" type="submit">Save</button>"#));
    // Only a failed run's raw diagnostic may sit behind a toggle; the issue's fields never do.
    let side = &html[html.find(r#"id="issue-props""#).unwrap()..];
    assert!(!side.contains("<details"), "nothing hides behind a toggle");
    assert!(
        !html.contains(r#"id="edit-title""#),
        "the text form opens on demand"
    );
}

#[test]
fn title_and_description_edit_in_place() {
    let html = issue(&samples::issue()).into_string();
    assert!(html.contains(r##"<a class="btn issue-edit" href="/w/acme/issues/MUS-24?edit=text" hx-get="/w/acme/issues/MUS-24?edit=text" hx-select="#issue-page" hx-target="#issue-page""##), "{html}");
    let mut v = samples::issue();
    v.edit_text = true;
    v.form.errors = err("title", "must not be empty");
    v.form.title = String::new();
    let html = issue(&v).into_string();
    assert!(html.contains(r#"<form class="issue-head issue-text-edit stack" method="post" action="/w/acme/issues/MUS-24" hx-post="/w/acme/issues/MUS-24""#), "{html}");
    assert!(html.contains(r#"id="edit-title" name="title" type="text" value="" required autofocus aria-invalid="true""#), "{html}");
    assert!(html.contains(r#"id="edit-body" name="body""#));
    assert!(html.contains(r#"id="edit-title-error"><p>must not be empty</p>"#));
    assert!(
        !html.contains(r#"<h1 class="issue-title">"#),
        "the form replaces the title"
    );
    assert!(
        !html.contains(r#"id="prop-title-error""#) && !html.contains("prop-status-error"),
        "the panel shows no text errors"
    );
}

#[test]
fn comments_show_edited_and_offer_what_the_viewer_may_do() {
    let html = issue(&samples::issue()).into_string();
    let first =
        &html[html.find(r#"id="comment-c1""#).unwrap()..html.find(r#"id="comment-c2""#).unwrap()];
    assert!(
        first.contains(
            r#"<span class="comment-edited" title="Edited 2025-03-03 09:25 UTC">edited</span>"#
        ),
        "{first}"
    );
    assert!(
        first.contains(r##"href="/w/acme/issues/MUS-24?edit_comment=c1#comment-c1""##),
        "{first}"
    );
    assert!(
        first.contains(r#"action="/w/acme/issues/MUS-24/comments/c1/delete" data-confirm="#),
        "{first}"
    );
    let second = &html[html.find(r#"id="comment-c2""#).unwrap()..];
    assert!(
        !second[..second.find("</article>").unwrap()].contains("edited"),
        "never edited"
    );
    assert!(
        !second.contains("edit_comment=c2"),
        "not the viewer's: no Edit"
    );
    assert!(
        second.contains("/comments/c2/delete"),
        "an admin may delete it"
    );

    let mut v = samples::issue();
    v.edit_comment = Some(CommentEditView {
        id: "c1".into(),
        body: "half <em>".into(),
        errors: err("body", "must not be empty"),
    });
    let html = issue(&v).into_string();
    assert!(html.contains(r#"id="comment-c1" method="post" action="/w/acme/issues/MUS-24/comments/c1" hx-post="/w/acme/issues/MUS-24/comments/c1""#), "{html}");
    assert!(html.contains(">half &lt;em&gt;</textarea>"));
    assert!(html.contains(r#"id="comment-edit-body-error"><p>must not be empty</p>"#));
}

#[test]
fn delete_is_offered_only_when_allowed_and_confirmed_on_its_own_page() {
    let html = issue(&samples::issue()).into_string();
    assert!(html.contains(r#"href="/w/acme/issues/MUS-24/delete">Delete issue…</a>"#));
    let mut v = samples::issue();
    v.can_delete = false;
    assert!(!issue(&v).into_string().contains("/delete\">Delete issue"));
    let page = issue_delete(&IssueDeleteView {
        nav: samples::issue().nav,
        key: "MUS-24".into(),
        title: "<b>Stream</b>".into(),
        url: "/w/acme/issues/MUS-24".into(),
        comments: 1,
        runs: 3,
        live_runs: 1,
    })
    .into_string();
    assert!(page.contains("with its 1 comment, its activity and its 3 agent runs"));
    assert!(page.contains("1 run is still queued or running: it is cancelled first."));
    assert!(page.contains("&lt;b&gt;Stream&lt;/b&gt;"));
    assert!(page.contains(r#"<form class="form-actions" method="post" action="/w/acme/issues/MUS-24/delete"><input type="hidden" name="_csrf" value="csrf-123">"#), "{page}");
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
