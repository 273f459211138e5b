//! `GET /w/{slug}/issues/{key}`: the issue, its comments and activity, all editable in place.
//!
//! Every change is a plain form that POSTs and is answered `303 See Other` (or the page again with its
//! messages, 422), so it all works without JavaScript. With htmx, the same requests swap the server's
//! re-rendered `#issue-page` into place (`hx-select`), so nothing reloads: the side panel's fields save
//! on change, and "Edit" turns the title and description (or a comment) into a form where they stand.
//! htmx puts the focus back on an element whose id survives the swap.

use maud::{Markup, PreEscaped, html};

use crate::layout::page;
use crate::partials::form::{Form, csrf};
use crate::partials::mentions::mention_textarea;
use crate::partials::widgets::{PersonChip, RunPill, Timestamp};
use crate::views::{
    ActivityView, CommentEditView, CommentView, FormErrors, IssueDeleteView, IssuePageView,
    PersonKind, RunRowView,
};

/// How an in-place action swaps the re-rendered page region: whole, without scrolling.
const SWAP: &str = "outerHTML show:none";

/// The issue page.
pub fn issue(v: &IssuePageView) -> Markup {
    let title = format!("{} {}", v.key, v.title);
    let body = html! {
        div #issue-page {
            nav.breadcrumbs aria-label="Breadcrumb" {
                a href={ "/w/" (v.nav.workspace_slug) } { "Board" }
                span aria-hidden="true" { "/" }
                span { (v.key) }
            }
            @if v.edit_text { (text_form(v)) } @else { (head(v)) }
            div.issue-layout {
                article.issue-main {
                    @if !v.edit_text { (body(v)) }
                    (runs(&v.runs))
                    (comments(v))
                }
                aside.issue-side {
                    (properties(v))
                    (activity(&v.activity))
                    @if v.can_delete {
                        a.btn.btn-danger-ghost.issue-delete href={ (v.url) "/delete" } { "Delete issue…" }
                    }
                }
            }
        }
    };
    page(&title, Some(&v.nav), body)
}

/// The key, the title and the button that opens them for editing.
fn head(v: &IssuePageView) -> Markup {
    let edit = format!("{}?edit=text", v.url);
    html! {
        header.issue-head {
            div.issue-head-text {
                span.issue-key { (v.key) }
                h1.issue-title { (v.title) }
            }
            a.btn.issue-edit href=(edit) hx-get=(edit) hx-select="#issue-page" hx-target="#issue-page"
                hx-swap=(SWAP) aria-label="Edit the title and description" { "Edit" }
        }
    }
}

fn body(v: &IssuePageView) -> Markup {
    html! {
        div.prose.issue-body {
            @if v.body_html.is_empty() {
                p.muted { "No description." }
            } @else {
                // Sanitised by the server (ammonia) before it reached the view.
                (PreEscaped(&v.body_html))
            }
        }
    }
}

/// The title and description as a form, where they stood (POST to the issue URL).
fn text_form(v: &IssuePageView) -> Markup {
    let f = Form::new("edit", &v.form.errors);
    html! {
        form.issue-head.issue-text-edit.stack method="post" action=(v.url)
            hx-post=(v.url) hx-select="#issue-page" hx-target="#issue-page" hx-swap=(SWAP) data-swap-invalid {
            (csrf(&v.nav.csrf))
            span.issue-key { (v.key) }
            (f.form_errors())
            (f.field("Title", "title", None, html! {
                input.issue-title-input id=(f.id("title")) name="title" type="text" value=(v.form.title)
                    required autofocus aria-invalid=[f.invalid("title").then_some("true")]
                    aria-describedby=[f.invalid("title").then(|| format!("{}-error", f.id("title")))];
            }))
            (f.field("Description", "body", Some("Markdown; \u{201c}- [ ]\u{201d} starts a task list."),
                mention_textarea(&f, "body", &v.form.body, 10, &v.form.mentions)))
            div.form-actions {
                button.btn.btn-primary type="submit" { "Save" }
                a.btn href=(v.url) hx-get=(v.url) hx-select="#issue-page" hx-target="#issue-page"
                    hx-swap=(SWAP) { "Cancel" }
            }
        }
    }
}

/// Status, priority, assignee and labels: each saves when changed (a Save button without JavaScript).
fn properties(v: &IssuePageView) -> Markup {
    let none = FormErrors::new();
    let f = Form::new("prop", if v.edit_text { &none } else { &v.form.errors });
    html! {
        form #issue-props.panel.issue-props method="post" action=(v.url)
            hx-post=(v.url) hx-trigger="change, submit" hx-select="#issue-page" hx-target="#issue-page"
            hx-swap=(SWAP) data-swap-invalid {
            (csrf(&v.nav.csrf))
            (f.form_errors())
            div.props {
                (f.field("Status", "status", None, f.select("status", &v.form.status)))
                (f.field("Priority", "priority", None, f.select("priority", &v.form.priority)))
                (f.field("Assignee", "assignee", None, f.select("assignee", &v.form.assignee)))
                (f.field("Labels", "labels", Some("Comma-separated."), f.input("labels", "text", &v.form.labels)))
            }
            noscript { div.form-actions { button.btn.btn-primary type="submit" { "Save" } } }
            dl.props.props-meta {
                @if let Some(p) = &v.created_by { dt { "Created by" } dd { (PersonChip(p)) } }
                @if let Some(t) = v.created_at { dt { "Created" } dd { (Timestamp(t)) } }
                @if let Some(t) = v.updated_at { dt { "Updated" } dd { (Timestamp(t)) } }
            }
        }
    }
}

/// The issue's agent runs, newest first, each linking to its run page.
fn runs(runs: &[RunRowView]) -> Markup {
    html! {
        @if !runs.is_empty() {
            section.issue-runs aria-labelledby="runs-h" {
                h2 #runs-h { "Runs " span.count { (runs.len()) } }
                table.list.runs-table {
                    thead { tr {
                        th scope="col" { "Run" } th scope="col" { "Agent" } th scope="col" { "Status" }
                        th scope="col" { "Tokens" } th scope="col" { "Cost" } th scope="col" { "Time" }
                        th scope="col" { "Changes" }
                    } }
                    tbody {
                        @for r in runs {
                            tr {
                                td { a.run-link href=(r.url) { "Attempt " (r.attempt) } br; (Timestamp(r.created_at)) }
                                td { @if let Some(a) = &r.agent { (PersonChip(a)) } }
                                td { (RunPill(if r.stalled { "stalled" } else { &r.status })) }
                                td.num { (r.tokens) }
                                td.num.run-cost title=[r.cost_title.as_deref()] { (r.cost) }
                                td.num { (r.duration) }
                                td { @if let Some(s) = &r.diff_stat { code.diff-stat-short { (s) } } }
                            }
                            @if let Some(f) = &r.failure {
                                tr.run-failure-row {
                                    td colspan="7" { div.run-failure { (super::run::failure_text(f)) } }
                                }
                            }
                        }
                    }
                }
            }
        }
    }
}

fn comments(v: &IssuePageView) -> Markup {
    let f = Form::new("comment", &v.comment_errors);
    html! {
        section.comments #comments aria-labelledby="comments-h" {
            h2 #comments-h { "Comments " span.count { (v.comments.len()) } }
            @for c in &v.comments {
                @match v.edit_comment.as_ref().filter(|e| e.id == c.id && c.can_edit) {
                    Some(edit) => (comment_form(v, c, edit)),
                    None => (comment(v, c)),
                }
            }
            form.comment-form.stack method="post" action={ (v.url) "/comments" } {
                (csrf(&v.nav.csrf))
                (f.form_errors())
                (f.field("Add a comment", "body", Some("Markdown."),
                    mention_textarea(&f, "body", &v.comment_body, 4, &v.form.mentions)))
                div.form-actions { button.btn.btn-primary type="submit" { "Comment" } }
            }
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
            (f.field("Edit your comment", "body", Some("Markdown."), mention_textarea(&f, "body", &edit.body, 4, &v.form.mentions)))
            div.form-actions {
                button.btn.btn-primary type="submit" { "Save" }
                a.btn href={ (v.url) "#comment-" (c.id) } hx-get=(v.url) hx-select="#issue-page"
                    hx-target="#issue-page" hx-swap=(SWAP) { "Cancel" }
            }
        }
    }
}

fn activity(items: &[ActivityView]) -> Markup {
    html! {
        section.panel.activity #issue-activity aria-labelledby="activity-h" {
            h2 #activity-h { "Activity" }
            @if items.is_empty() { p.muted { "Nothing yet." } }
            ol.timeline {
                @for a in items {
                    li {
                        (PersonChip(&a.actor))
                        " "
                        span.activity-text { (a.text) }
                        " "
                        (Timestamp(a.at))
                    }
                }
            }
        }
    }
}

fn plural(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// `GET /w/{slug}/issues/{key}/delete`: the confirmation step, saying what goes with the issue.
pub fn issue_delete(v: &IssueDeleteView) -> Markup {
    let body = html! {
        nav.breadcrumbs aria-label="Breadcrumb" {
            a href={ "/w/" (v.nav.workspace_slug) } { "Board" }
            span aria-hidden="true" { "/" }
            a href=(v.url) { (v.key) }
        }
        section.panel.confirm-delete {
            h1 { "Delete " (v.key) "?" }
            p.issue-title-quote { "\u{201c}" (v.title) "\u{201d}" }
            p {
                "This deletes the issue with its " (plural(v.comments, "comment", "comments"))
                ", its activity and its " (plural(v.runs, "agent run", "agent runs"))
                " (their logs included). Branches that agents made stay in the repository. "
                strong { "This cannot be undone." }
            }
            @if v.live_runs > 0 {
                p.alert.alert-error role="alert" {
                    (plural(v.live_runs, "run is", "runs are")) " still queued or running: "
                    (if v.live_runs == 1 { "it is" } else { "they are" }) " cancelled first."
                }
            }
            form.form-actions method="post" action={ (v.url) "/delete" } {
                (csrf(&v.nav.csrf))
                button.btn.btn-danger type="submit" { "Delete " (v.key) }
                a.btn href=(v.url) { "Cancel" }
            }
        }
    };
    page(&format!("Delete {}", v.key), Some(&v.nav), body)
}

#[cfg(test)]
mod tests;
