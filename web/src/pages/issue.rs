//! `GET /w/{slug}/issues/{key}`: the issue and its conversation (comments, agent runs, changes as one
//! timeline, see `thread`), all editable in place.
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
use crate::partials::widgets::{PersonChip, Timestamp};
use crate::views::{FormErrors, IssueDeleteView, IssuePageView};

mod thread;

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
                    (thread::conversation(v))
                }
                aside.issue-side {
                    (properties(v))
                    (crate::partials::plan::issue_live(&v.pulls, &v.plan))
                    (ensembles(v))
                    @if v.can_delete {
                        a.btn.btn-danger-ghost.issue-delete href={ (v.url) "/delete" } { "Delete issue…" }
                    }
                }
            }
        }
    };
    page(&title, Some(&v.nav), body)
}

/// The issue's ensemble runs, and a form to put an ensemble on it (each member takes it blind).
fn ensembles(v: &IssuePageView) -> Markup {
    html! {
        @if !v.ensemble_runs.is_empty() || !v.ensembles.is_empty() {
            section.issue-ensembles aria-labelledby="issue-ensembles-h" {
                h2 #issue-ensembles-h { "Ensembles" }
                @if !v.ensemble_runs.is_empty() {
                    ul { @for (label, url) in v.ensemble_runs.iter().rev() { li { a href=(url) { "Compare " (label) } } } }
                }
                @if !v.ensembles.is_empty() {
                    form method="post" action={ (v.url) "/ensemble" } {
                        (crate::partials::form::csrf(&v.nav.csrf))
                        label for="ensemble-pick" { "Run an ensemble" }
                        select #ensemble-pick name="ensemble" {
                            @for (name, about) in &v.ensembles { option value=(name) { (name) " — " (about) } }
                        }
                        button.btn type="submit" { "Start" }
                    }
                }
            }
        }
    }
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
        div.prose.issue-body data-tasks-url={ (v.url) "/tasks" } data-digest=(v.body_digest) {
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
/// Why an assigned agent is not at work: on a backlog issue it waits until the issue moves to Todo.
fn assignee_hint(v: &IssuePageView) -> Option<String> {
    let agent = v
        .assignee
        .as_ref()
        .filter(|a| a.kind == crate::views::PersonKind::Agent)?;
    (v.status == "backlog").then(|| {
        format!(
            "{} starts when this issue moves to Todo (the backlog is parked work).",
            agent.name
        )
    })
}

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
                (f.field("Assignee", "assignee", assignee_hint(v).as_deref(), f.select("assignee", &v.form.assignee)))
                (f.field("Labels", "labels", Some("Comma-separated."), f.input("labels", "text", &v.form.labels)))
                @if !v.form.project.is_empty() {
                    (f.field("Project", "project", Some("Its runs work in the project's repository."), f.select("project", &v.form.project)))
                }
            }
            noscript { div.form-actions { button.btn.btn-primary type="submit" { "Save" } } }
            dl.props.props-meta {
                @if let Some(p) = &v.created_by { dt { "Created by" } dd { (PersonChip(p)) } }
                @if let Some(t) = v.created_at { dt { "Created" } dd { (Timestamp(t)) } }
                @if let Some(t) = v.updated_at { dt { "Updated" } dd { (Timestamp(t)) } }
                @if let Some((totals, title)) = &v.run_totals { dt { "Agent runs" } dd.run-totals title=[title.as_deref()] { (totals) } }
                @for line in &v.lines {
                    dt { "Branch of " (line.agent) }
                    dd.work-line {
                        code { (line.branch) }
                        " "
                        @match &line.commit {
                            Some((short, whole)) => a href=(line.run_url) title=(whole) { code { "@" (short) } },
                            None => a.muted href=(line.run_url) { "no commit yet" },
                        }
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
