//! `GET /w/{slug}`: the kanban board, its filter bar and the new-issue form.

use maud::{Markup, html};

use crate::layout::{page, workspace_url};
use crate::partials::board_column;
use crate::partials::board_menu::card_menu;
use crate::partials::form::{Form, csrf, options};
use crate::partials::mentions::mention_textarea;
use crate::views::{BoardFilterView, BoardView, CardMenuView, ColumnPageView, IssueFormView};

/// The board. Columns live inside the `ws` extension's connection (`ws-connect` = `live_url`), so the
/// server can replace any `#column-{status}` with an out-of-band swap when the board changes.
pub fn board(v: &BoardView) -> Markup {
    let base = workspace_url(&v.nav);
    let body = html! {
        div.page-head {
            div { h1 { "Board" } }
            div.page-actions {
                (super::list::view_toggle(&base, &format!("{base}/list"), true))
                // Shown by app.js, which is what makes it work.
                button.btn.btn-ghost.palette-open type="button" hidden title="Command palette (Ctrl+K)" {
                    "Commands " kbd { "Ctrl K" }
                }
                (new_issue(&v.new_issue, &format!("{base}/issues"), &v.nav.csrf))
            }
        }
        (filter_bar(&v.filter, &base))
        // Replaced as a whole when the filters change, so the live socket reconnects with the new filter.
        // Not kept in htmx's history cache: going back re-reads the board instead of showing a stale one.
        div.board-live #board-live hx-ext="ws" ws-connect=(v.live_url) hx-history="false" {
            div.board #board {
                @for col in &v.columns { (board_column(col)) }
            }
        }
    };
    page("Board", Some(&v.nav), body)
}

/// GET form on the board URL: `q`, `assignee`, `label`, `priority`, `project`, `hidden=1`. With htmx it applies as
/// you type or choose (the board is re-read and swapped, the URL updated so the view can be shared); the
/// Filter button submits it the plain way.
fn filter_bar(f: &BoardFilterView, action: &str) -> Markup {
    html! {
        form.filters method="get" action=(action) role="search" hx-get=(action)
            hx-trigger="input changed delay:300ms from:#filter-q, change, submit"
            hx-target="#board-live" hx-select="#board-live" hx-swap="outerHTML"
            hx-select-oob="#filter-clear" hx-push-url="true" hx-sync="this:replace" {
            label.visually-hidden for="filter-q" { "Search issues" }
            input #filter-q type="search" name="q" value=(f.q) placeholder="Search issues…";
            label.visually-hidden for="filter-assignee" { "Assignee" }
            select #filter-assignee name="assignee" { (options(&f.assignee)) }
            label.visually-hidden for="filter-label" { "Label" }
            select #filter-label name="label" { (options(&f.label)) }
            label.visually-hidden for="filter-priority" { "Priority" }
            select #filter-priority name="priority" { (options(&f.priority)) }
            @if !f.project.is_empty() {
                label.visually-hidden for="filter-project" { "Project" }
                select #filter-project name="project" { (options(&f.project)) }
            }
            label.check {
                input type="checkbox" name="hidden" value="1" checked[f.show_hidden];
                " Blocked & cancelled"
            }
            button.btn type="submit" { "Filter" }
            span #filter-clear {
                @if f.active {
                    a.btn.btn-ghost href=(action) { "Clear" }
                }
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

/// A card's menu as a page of its own, for the card's menu link without JavaScript (with it, the board
/// shows [`card_menu`] in a popover).
pub fn card_menu_page(v: &CardMenuView) -> Markup {
    let body = html! {
        nav.breadcrumbs aria-label="Breadcrumbs" {
            a href=(workspace_url(&v.nav)) { "Board" }
            span aria-hidden="true" { "/" }
            span { (v.key) }
        }
        div.panel.card-menu-page { (card_menu(v)) }
    };
    page(&v.key, Some(&v.nav), body)
}

/// One page of one column, for its "show more" without JavaScript: the cards after the board's first
/// page (or the previous page), a link to the next page, and the way back to the board.
pub fn column_page(v: &ColumnPageView) -> Markup {
    let body = html! {
        nav.breadcrumbs aria-label="Breadcrumbs" {
            a href=(v.board_url) { "Board" }
            span aria-hidden="true" { "/" }
            span { (v.column.label) }
        }
        div.board.board-column-page { (board_column(&v.column)) }
    };
    page(&v.column.label, Some(&v.nav), body)
}

/// The shared fields of the new-issue and edit-issue forms.
pub(crate) fn issue_fields(v: &IssueFormView, f: &Form<'_>) -> Markup {
    html! {
        (f.field("Title", "title", None, f.required("title", "text", &v.title)))
        (f.field("Description", "body", Some("Markdown."), mention_textarea(f, "body", &v.body, 6, &v.mentions)))
        div.field-row {
            (f.field("Status", "status", None, f.select("status", &v.status)))
            (f.field("Priority", "priority", None, f.select("priority", &v.priority)))
            @if !v.project.is_empty() {
                (f.field("Project", "project", None, f.select("project", &v.project)))
            }
            (f.field("Assignee", "assignee", None, f.select("assignee", &v.assignee)))
        }
        (f.field("Labels", "labels", Some("Comma-separated."), f.input("labels", "text", &v.labels)))
    }
}

#[cfg(test)]
mod tests;
