//! The issue's conversation: one timeline of comments, agent runs (each a compact entry with its summary)
//! and thin lines for status and other changes, a reply box under the latest finished run's summary, and
//! the comment box at the bottom.
//!
//! While a run is live the timeline (`#issue-thread`) re-reads itself every 2 s with htmx (`hx-get` the
//! issue page, `hx-select` the timeline), and stops once the answer has no live run. No form is ever in a
//! region that refreshes: the reply box shows only while no run is live, and a comment open for editing
//! stops the refresh (the page is then rendered without it).

use maud::{Markup, PreEscaped, html};

use super::SWAP;
use crate::partials::form::{Form, csrf};
use crate::partials::mentions::mentions_json;
use crate::partials::widgets::{PersonChip, RunPill, Timestamp};
use crate::views::{
    ActivityView, CommentEditView, CommentView, IssuePageView, PersonKind, ReplyView,
    ThreadEntryView, ThreadRunView,
};

/// How often a live timeline refreshes itself.
const POLL: &str = "every 2s";

/// The conversation section: the timeline, then the comment box.
pub(super) fn conversation(v: &IssuePageView) -> Markup {
    let f = Form::new("comment", &v.comment_errors);
    html! {
        section.comments.thread #comments aria-labelledby="comments-h" {
            h2 #comments-h { "Conversation" }
            (timeline(v))
            form.comment-form.stack method="post" action={ (v.url) "/comments" } {
                (csrf(&v.nav.csrf))
                (f.form_errors())
                (comment_box(v, &f, "Add a comment", &v.comment_body,
                    "Markdown. A comment on an issue assigned to an agent continues its work; @name brings in another agent."))
                div.form-actions { button.btn.btn-primary type="submit" { "Comment" } }
            }
        }
    }
}

/// Every comment textarea of the page (new comment, reply under a run, edit): one place to render it,
/// with the names `@` completes (see `partials::mentions`).
pub(super) fn comment_box(
    v: &IssuePageView,
    f: &Form,
    label: &str,
    body: &str,
    placeholder: &str,
) -> Markup {
    let mentions = mentions_json(&v.form.mentions);
    // Whom sending wakes: said in general here, and for the text as typed by `mentions.js`.
    let wakes = match &v.replies_wake {
        Some(agent) => format!(
            "A comment that mentions nobody continues {agent}'s work; one that mentions only people wakes no agent; @agent brings that agent in."
        ),
        None => "A comment wakes no agent unless it mentions one (@name).".to_owned(),
    };
    html! {
        div.field.has-error[f.invalid("body")] {
            label for=(f.id("body")) { (label) }
            textarea.comment-box id=(f.id("body")) name="body" rows="4" placeholder=(placeholder)
                data-mentions=(mentions)
                aria-invalid=[f.invalid("body").then_some("true")]
                aria-describedby=[f.invalid("body").then(|| format!("{}-error", f.id("body")))] { (body) }
            @if label != EDIT_LABEL {
                p.hint.comment-wakes data-assignee=(v.replies_wake.as_deref().unwrap_or_default()) aria-live="polite" { (wakes) }
            }
            (f.field_errors("body"))
        }
    }
}

/// The label of the box that edits a comment: an edit wakes no one, so it says nothing about whom.
const EDIT_LABEL: &str = "Edit your comment";

/// The entries, oldest first; refreshing itself while a run is live and nothing is being edited.
fn timeline(v: &IssuePageView) -> Markup {
    let poll = v.live && v.edit_comment.is_none();
    html! {
        div #issue-thread .issue-thread
            hx-get=[poll.then_some(&v.url)] hx-trigger=[poll.then_some(POLL)]
            hx-select=[poll.then_some("#issue-thread")] hx-target=[poll.then_some("this")]
            hx-swap=[poll.then_some("outerHTML")] aria-live=[poll.then_some("polite")] {
            @if v.thread.is_empty() { p.muted { "Nothing yet." } }
            ol.thread-list {
                @for e in &v.thread {
                    @match e {
                        ThreadEntryView::Comment(c) => li.thread-item.thread-comment {
                            @match v.edit_comment.as_ref().filter(|e| e.id == c.id && c.can_edit) {
                                Some(edit) => (comment_form(v, c, edit)),
                                None => (comment(v, c)),
                            }
                        },
                        ThreadEntryView::Run(r) => li.thread-item.thread-run-item { (run(v, r)) },
                        ThreadEntryView::Change(a) => li.thread-item.thread-change { (change(a)) },
                    }
                }
            }
        }
    }
}

/// A status change or another change, as one thin line.
fn change(a: &ActivityView) -> Markup {
    html! {
        (PersonChip(&a.actor)) " " span.activity-text { (a.text) } " " (Timestamp(a.at))
    }
}

/// One run: agent, state, what queued it, numbers, its summary or failure, the reply box.
fn run(v: &IssuePageView, r: &ThreadRunView) -> Markup {
    let state = if r.stalled { "stalled" } else { &r.status };
    html! {
        article.thread-run.thread-run-live[r.live] id={ "run-" (r.id) } {
            header.thread-run-head {
                @if let Some(a) = &r.agent { (PersonChip(a)) }
                (RunPill(state))
                span.thread-trigger {
                    @match &r.trigger_href {
                        Some(href) => a href=(href) { (r.trigger) },
                        None => (r.trigger),
                    }
                }
                span.thread-run-meta {
                    @if !r.duration.is_empty() && !r.live { span { (r.duration) } }
                    @if r.tokens != "0" { span { (r.tokens) " tokens" } }
                    @if !r.live || r.cost != "$0.0000" { span.run-cost title=[r.cost_title.as_deref()] { (r.cost) } }
                    a.run-link href=(r.url) { "Run " (r.number) @if r.attempt > 1 { " · attempt " (r.attempt) } }
                }
            }
            @if r.live { (working(r)) }
            @if let Some(html) = &r.summary_html {
                // Sanitised by the server (ammonia) before it reached the view.
                div.prose.thread-summary { (PreEscaped(html)) }
            }
            @if let Some(f) = &r.failure { div.run-failure.run-failure-row { (super::super::run::failure_text(f)) } }
            @if let Some(s) = &r.diff_stat { code.diff-stat-short { (s) } }
            @if let Some(reply) = &r.reply { (reply_form(v, r, reply)) }
        }
    }
}

/// "working… 1m 12s" while it runs; "queued — <why>" while it waits.
fn working(r: &ThreadRunView) -> Markup {
    html! {
        p.thread-working role="status" {
            span.spinner aria-hidden="true" {}
            @match (r.status.as_str(), &r.waiting) {
                ("queued", Some(why)) => { "queued — " (why) },
                ("queued" | "claimed", None) => "queued — starting soon",
                _ => { "working…" @if !r.duration.is_empty() { " " span.thread-elapsed { (r.duration) } } },
            }
        }
    }
}

/// The reply box under a run's summary: a comment like any other.
fn reply_form(v: &IssuePageView, r: &ThreadRunView, reply: &ReplyView) -> Markup {
    let prefix = format!("reply-{}", r.id);
    let f = Form::new(&prefix, &reply.errors);
    html! {
        form.thread-reply.stack method="post" action={ (v.url) "/comments" } {
            (csrf(&v.nav.csrf))
            input type="hidden" name="reply_to" value=(r.id);
            (f.form_errors())
            (comment_box(v, &f, "Reply", &reply.body, &reply.placeholder))
            div.form-actions { button.btn.btn-primary.btn-small type="submit" { "Reply" } }
        }
    }
}

fn comment_class(c: &CommentView) -> &'static str {
    match c.author.kind {
        PersonKind::User => "comment comment-user",
        PersonKind::Agent => "comment comment-agent",
        PersonKind::System => "comment comment-system",
    }
}

fn comment(v: &IssuePageView, c: &CommentView) -> Markup {
    let edit = format!("{}?edit_comment={}#comment-{}", v.url, c.id, c.id);
    html! {
        article class=(comment_class(c)) id={ "comment-" (c.id) } {
            header.comment-head {
                (PersonChip(&c.author))
                span.comment-meta {
                    (Timestamp(c.at))
                    @if let Some(t) = c.edited_at {
                        span.comment-edited title={ "Edited " (t.format("%Y-%m-%d %H:%M UTC")) } { "edited" }
                    }
                    @if c.can_edit {
                        a.btn.btn-small.btn-ghost.comment-edit href=(edit) hx-get=(edit)
                            hx-select="#issue-page" hx-target="#issue-page" hx-swap=(SWAP) { "Edit" }
                    }
                    @if v.plan.editable {
                        form.comment-sub-issue method="post" action={ (v.url) "/comments/" (c.id) "/sub-issue" } {
                            (csrf(&v.nav.csrf))
                            button.btn.btn-small.btn-ghost type="submit"
                                title="A sub-issue of this one, titled from the comment's first line" { "Make sub-issue" }
                        }
                    }
                    @if c.can_delete {
                        form.comment-delete method="post" action={ (v.url) "/comments/" (c.id) "/delete" }
                            data-confirm="Delete this comment? This cannot be undone." {
                            (csrf(&v.nav.csrf))
                            button.btn.btn-small.btn-danger-ghost type="submit" { "Delete" }
                        }
                    }
                }
            }
            // Sanitised by the server (ammonia) before it reached the view.
            div.prose { (PreEscaped(&c.body_html)) }
        }
    }
}

/// A comment open for editing, where it stood (POST to the comment's URL).
fn comment_form(v: &IssuePageView, c: &CommentView, edit: &CommentEditView) -> Markup {
    let f = Form::new("comment-edit", &edit.errors);
    let url = format!("{}/comments/{}", v.url, c.id);
    html! {
        form class={ (comment_class(c)) " comment-edit-form stack" } id={ "comment-" (c.id) }
            method="post" action=(url) hx-post=(url) hx-select="#issue-page" hx-target="#issue-page"
            hx-swap=(SWAP) data-swap-invalid {
            (csrf(&v.nav.csrf))
            header.comment-head { (PersonChip(&c.author)) (Timestamp(c.at)) }
            (f.form_errors())
            (comment_box(v, &f, EDIT_LABEL, &edit.body, "Markdown."))
            div.form-actions {
                button.btn.btn-primary type="submit" { "Save" }
                a.btn href={ (v.url) "#comment-" (c.id) } hx-get=(v.url) hx-select="#issue-page"
                    hx-target="#issue-page" hx-swap=(SWAP) { "Cancel" }
            }
        }
    }
}
