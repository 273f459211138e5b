use super::*;
use crate::samples::{self, err};
use crate::views::{CommentEditView, IssueDeleteView, ReplyView, ThreadEntryView};

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
    assert!(html.contains(r#"<time datetime="2025-03-04T16:28:00Z""#));
    assert!(html.contains("moved this from todo to in progress"));
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
fn the_timeline_reads_in_order_with_runs_as_compact_entries() {
    let html = issue(&samples::issue()).into_string();
    let pos = |needle: &str| {
        html.find(needle)
            .unwrap_or_else(|| panic!("{needle} in {html}"))
    };
    let order = [
        "created this issue",
        r#"id="comment-c1""#,
        "assigned this to claude-reviewer",
        r#"id="run-r1""#,
        "moved this from in progress to todo",
        r#"id="comment-c2""#,
        r#"id="run-r2""#,
        "moved this from todo to in progress",
    ];
    assert!(
        order.windows(2).all(|w| pos(w[0]) < pos(w[1])),
        "oldest first"
    );
    // A failed run: its pill, numbers, failure and diff stat, and a link to its page.
    let failed = &html[pos(r#"id="run-r1""#)..pos(r#"id="comment-c2""#)];
    assert!(
        failed.contains(r#"<span class="run run-failed""#),
        "{failed}"
    );
    assert!(
        failed.contains("assigned") && failed.contains("12s") && failed.contains("1,024 tokens")
    );
    assert!(failed.contains(r#"<a class="run-link" href="/w/acme/runs/r1">Run 1</a>"#));
    assert!(
        failed.contains("OPENAI_API_KEY") && failed.contains("1 file changed, 3 insertions(+)")
    );
    // The live run says what queued it and that it is working; the timeline refreshes itself.
    let live = &html[pos(r#"id="run-r2""#)..];
    assert!(
        live.contains(r##"<a href="#comment-c1">after Ada Lovelace's comment</a>"##),
        "{live}"
    );
    assert!(
        live.contains("working… <span class=\"thread-elapsed\">1m 12s</span>"),
        "{live}"
    );
    assert!(html.contains(r##"<div class="issue-thread" id="issue-thread" hx-get="/w/acme/issues/MUS-24" hx-trigger="every 2s" hx-select="#issue-thread" hx-target="this" hx-swap="outerHTML""##), "{html}");
    assert!(
        !html.contains("thread-reply"),
        "no reply box while a run is live"
    );
}

#[test]
fn a_finished_run_shows_its_summary_and_a_reply_box() {
    let mut v = samples::issue();
    v.live = false;
    let Some(ThreadEntryView::Run(run)) = v
        .thread
        .iter_mut()
        .rev()
        .find(|e| matches!(e, ThreadEntryView::Run(_)))
    else {
        panic!("a run");
    };
    run.live = false;
    run.status = "succeeded".into();
    run.summary_html = Some("<p>Fixed the <code>replay</code> gap.</p>".into());
    run.reply = Some(ReplyView {
        body: String::new(),
        placeholder:
            "Reply to claude-reviewer: it continues its work from here, on its branch. Markdown."
                .into(),
        errors: err("body", "must not be empty"),
    });
    let html = issue(&v).into_string();
    assert!(
        !html.contains("hx-trigger=\"every 2s\""),
        "nothing live: no refresh"
    );
    let run = &html[html.find(r#"id="run-r2""#).unwrap()..];
    assert!(
        run.contains(
            r#"<div class="prose thread-summary"><p>Fixed the <code>replay</code> gap.</p></div>"#
        ),
        "{run}"
    );
    assert!(run.contains(r#"<form class="thread-reply stack" method="post" action="/w/acme/issues/MUS-24/comments"><input type="hidden" name="_csrf" value="csrf-123"><input type="hidden" name="reply_to" value="r2">"#), "{run}");
    assert!(run.contains(r#"<textarea class="comment-box" id="reply-r2-body" name="body" rows="4" placeholder="Reply to claude-reviewer: it continues its work from here, on its branch. Markdown." data-mentions="[{&quot;name&quot;:&quot;coder&quot;"#), "{run}");
    assert!(run.contains(r#"&quot;kind&quot;:&quot;person&quot;}]" aria-invalid="true" aria-describedby="reply-r2-body-error">"#), "{run}");
    assert!(run.contains(r#"id="reply-r2-body-error"><p>must not be empty</p>"#));
    assert_eq!(
        html.matches(r#"<textarea class="comment-box""#).count(),
        2,
        "reply and comment box, one function"
    );
}

#[test]
fn comments_offer_make_sub_issue_and_the_side_panel_has_the_plan() {
    let mut v = samples::issue();
    let action = r#"action="/w/acme/issues/MUS-24/comments/c1/sub-issue""#;
    assert!(!issue(&v).into_string().contains(action), "read-only plan");
    v.plan.editable = true;
    v.plan.url = v.url.clone();
    let html = issue(&v).into_string();
    assert!(html.contains(action), "{html}");
    let side = &html[html.find("issue-side").unwrap()..];
    assert!(side.contains(r#"id="issue-plan""#), "in the side panel");
}
