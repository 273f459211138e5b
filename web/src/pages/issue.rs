//! `GET /w/{slug}/issues/{key}`: the issue, its comments and activity, the comment form and the edit
//! form (POST to the issue URL).

use maud::{Markup, PreEscaped, html};

use super::board::issue_fields;
use crate::layout::page;
use crate::partials::form::{Form, csrf};
use crate::partials::widgets::{
    LabelChip, PersonChip, PriorityIcon, RunPill, StatusBadge, Timestamp,
};
use crate::views::{ActivityView, CommentView, IssuePageView, RunRowView};

/// The issue page.
pub fn issue(v: &IssuePageView) -> Markup {
    let title = format!("{} {}", v.key, v.title);
    let body = html! {
        nav.breadcrumbs aria-label="Breadcrumb" {
            a href={ "/w/" (v.nav.workspace_slug) } { "Board" }
            span aria-hidden="true" { "/" }
            span { (v.key) }
        }
        div.issue-layout {
            article.issue-main {
                header.issue-head {
                    span.issue-key { (v.key) }
                    h1.issue-title { (v.title) }
                }
                div.prose.issue-body {
                    @if v.body_html.is_empty() {
                        p.muted { "No description." }
                    } @else {
                        // Sanitised by the server (ammonia) before it reached the view.
                        (PreEscaped(&v.body_html))
                    }
                }
                (runs(&v.runs))
                (comments(v))
            }
            aside.issue-side {
                (details_panel(v))
                (edit_form(v))
                (activity(&v.activity))
            }
        }
    };
    page(&title, Some(&v.nav), body)
}

fn details_panel(v: &IssuePageView) -> Markup {
    html! {
        section.panel {
            dl.props {
                dt { "Status" } dd { (StatusBadge(&v.status)) }
                dt { "Priority" } dd.prio-row { (PriorityIcon(&v.priority)) span { (priority_label(&v.priority)) } }
                dt { "Assignee" }
                dd {
                    @match &v.assignee {
                        Some(a) => (PersonChip(a)),
                        None => span.muted { "Unassigned" },
                    }
                }
                dt { "Labels" }
                dd.card-labels {
                    @for l in &v.labels { (LabelChip(l)) }
                    @if v.labels.is_empty() { span.muted { "None" } }
                }
                @if let Some(p) = &v.created_by { dt { "Created by" } dd { (PersonChip(p)) } }
                @if let Some(t) = v.created_at { dt { "Created" } dd { (Timestamp(t)) } }
                @if let Some(t) = v.updated_at { dt { "Updated" } dd { (Timestamp(t)) } }
            }
        }
    }
}

fn priority_label(p: &str) -> &str {
    match p {
        "urgent" => "Urgent",
        "high" => "High",
        "medium" => "Medium",
        "low" => "Low",
        _ => "No priority",
    }
}

/// POST to the issue URL with the issue fields; open when it has errors.
fn edit_form(v: &IssuePageView) -> Markup {
    let f = Form::new("edit", &v.form.errors);
    html! {
        details.panel.edit-issue open[!v.form.errors.is_empty()] {
            summary { "Edit issue" }
            form.stack method="post" action=(v.url) {
                (csrf(&v.nav.csrf))
                (f.form_errors())
                (issue_fields(&v.form, &f))
                div.form-actions { button.btn.btn-primary type="submit" { "Save changes" } }
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
        section.comments aria-labelledby="comments-h" {
            h2 #comments-h { "Comments " span.count { (v.comments.len()) } }
            @for c in &v.comments { (comment(c)) }
            form.comment-form.stack method="post" action={ (v.url) "/comments" } {
                (csrf(&v.nav.csrf))
                (f.form_errors())
                (f.field("Add a comment", "body", Some("Markdown."),
                    f.textarea("body", &v.comment_body, 4)))
                div.form-actions { button.btn.btn-primary type="submit" { "Comment" } }
            }
        }
    }
}

fn comment(c: &CommentView) -> Markup {
    let kind = match c.author.kind {
        crate::views::PersonKind::User => "comment-user",
        crate::views::PersonKind::Agent => "comment-agent",
        crate::views::PersonKind::System => "comment-system",
    };
    html! {
        article class={ "comment " (kind) } {
            header.comment-head {
                (PersonChip(&c.author))
                (Timestamp(c.at))
            }
            // Sanitised by the server (ammonia) before it reached the view.
            div.prose { (PreEscaped(&c.body_html)) }
        }
    }
}

fn activity(items: &[ActivityView]) -> Markup {
    html! {
        section.panel.activity aria-labelledby="activity-h" {
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

#[cfg(test)]
mod tests;
