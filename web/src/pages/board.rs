//! `GET /w/{slug}`: the kanban board, its filter bar and the new-issue form.

use maud::{Markup, html};

use crate::layout::{page, workspace_url};
use crate::partials::board_column;
use crate::partials::form::{Form, csrf, options};
use crate::views::{BoardFilterView, BoardView, IssueFormView};

/// The board. Columns live inside the `ws` extension's connection (`ws-connect` = `live_url`), so the
/// server can replace any `#column-{status}` with an out-of-band swap when the board changes.
pub fn board(v: &BoardView) -> Markup {
    let base = workspace_url(&v.nav);
    let body = html! {
        div.page-head {
            div { h1 { "Board" } }
            div.page-actions {
                (new_issue(&v.new_issue, &format!("{base}/issues"), &v.nav.csrf))
            }
        }
        (filter_bar(&v.filter, &base))
        div.board-live hx-ext="ws" ws-connect=(v.live_url) {
            div.board #board {
                @for col in &v.columns { (board_column(col, &v.nav.csrf)) }
            }
        }
    };
    page("Board", Some(&v.nav), body)
}

/// GET form on the board URL: `q`, `assignee`, `label`, `priority`, `hidden=1`.
fn filter_bar(f: &BoardFilterView, action: &str) -> Markup {
    html! {
        form.filters method="get" action=(action) role="search" {
            label.visually-hidden for="filter-q" { "Search issues" }
            input #filter-q type="search" name="q" value=(f.q) placeholder="Search issues…";
            label.visually-hidden for="filter-assignee" { "Assignee" }
            select #filter-assignee name="assignee" { (options(&f.assignee)) }
            label.visually-hidden for="filter-label" { "Label" }
            select #filter-label name="label" { (options(&f.label)) }
            label.visually-hidden for="filter-priority" { "Priority" }
            select #filter-priority name="priority" { (options(&f.priority)) }
            label.check {
                input type="checkbox" name="hidden" value="1" checked[f.show_hidden];
                " Blocked & cancelled"
            }
            button.btn type="submit" { "Filter" }
            @if f.active {
                a.btn.btn-ghost href=(action) { "Clear" }
            }
        }
    }
}

/// POST `/w/{slug}/issues`: `title`, `body`, `status`, `priority`, `assignee`, `labels`. Open when it
/// has errors, so a failed submission shows its messages and the typed input.
fn new_issue(v: &IssueFormView, action: &str, token: &str) -> Markup {
    let f = Form::new("new-issue", &v.errors);
    html! {
        details.new-issue.popover open[!v.errors.is_empty()] {
            summary.btn.btn-primary { "New issue" }
            form.stack.popover-body method="post" action=(action) {
                (csrf(token))
                h2 { "New issue" }
                (f.form_errors())
                (issue_fields(v, &f))
                div.form-actions {
                    button.btn.btn-primary type="submit" { "Create issue" }
                }
            }
        }
    }
}

/// The shared fields of the new-issue and edit-issue forms.
pub(crate) fn issue_fields(v: &IssueFormView, f: &Form<'_>) -> Markup {
    html! {
        (f.field("Title", "title", None, f.required("title", "text", &v.title)))
        (f.field("Description", "body", Some("Markdown."), f.textarea("body", &v.body, 6)))
        div.field-row {
            (f.field("Status", "status", None, f.select("status", &v.status)))
            (f.field("Priority", "priority", None, f.select("priority", &v.priority)))
            (f.field("Assignee", "assignee", None, f.select("assignee", &v.assignee)))
        }
        (f.field("Labels", "labels", Some("Comma-separated."), f.input("labels", "text", &v.labels)))
    }
}

#[cfg(test)]
mod tests;
