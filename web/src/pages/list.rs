//! `GET /w/{slug}/list`: the issue list, a dense table for triage and batch changes. Everything works
//! without JavaScript: sorting and paging are links, the filter is a GET form, the batch bar a POST form
//! around the table's checkboxes (with a confirm step for delete). `app.js` adds "select all on this
//! page" and the selected count.

use maud::{Markup, html};

use crate::layout::{page, workspace_url};
use crate::partials::form::{csrf, options};
use crate::partials::widgets::{Avatar, LabelChip, PriorityIcon, status_class};
use crate::views::{ListColumnView, ListFilterView, ListGroupView, ListRowView, ListView};

/// The list page.
pub fn list(v: &ListView) -> Markup {
    let base = workspace_url(&v.nav);
    let body = html! {
        div.page-head {
            div {
                h1 { "Issues" }
                p.subtitle { (v.total) " matching" }
            }
            div.page-actions {
                (view_toggle(&v.board_url, &v.self_url, false))
                (saved_views(v))
            }
        }
        (filter_bar(&v.filter, &format!("{base}/list")))
        @if let Some(messages) = v.errors.get("form") {
            div.alert.alert-error role="alert" { @for m in messages { p { (m) } } }
        }
        @for (field, messages) in v.errors.iter().filter(|(f, _)| *f != "form" && *f != "name") {
            div.alert.alert-error role="alert" { @for m in messages { p { (field) ": " (m) } } }
        }
        @if !v.batch.confirm_delete.is_empty() {
            form.alert.alert-error.list-confirm method="post" action=(v.batch.action) role="alert" {
                (csrf(&v.nav.csrf))
                input type="hidden" name="back" value=(v.query);
                @for key in &v.batch.confirm_delete { input type="hidden" name="key" value=(key); }
                input type="hidden" name="confirm" value="1";
                p { "Delete " (v.batch.confirm_delete.len()) " issues for good: "
                    (v.batch.confirm_delete.join(", ")) "? Their comments and runs go with them." }
                button.btn.btn-danger #batch-confirm type="submit" name="delete" value="1" { "Delete them" }
                " "
                a.btn.btn-ghost href=(v.self_url) { "Keep them" }
            }
        }
        form.list-batch #list-batch method="post" action=(v.batch.action) {
            (csrf(&v.nav.csrf))
            input type="hidden" name="back" value=(v.query);
            (batch_bar(v))
            div.panel.table-panel {
                table.list.issue-list {
                    thead {
                        tr {
                            th.list-check {
                                input #list-select-all type="checkbox" title="Select all on this page"
                                    aria-label="Select all on this page";
                            }
                            @for c in &v.columns { (header(c)) }
                            th { "Labels" }
                            th { "Parent" }
                        }
                    }
                    @for g in &v.groups { (group(g)) }
                }
                @if v.groups.iter().all(|g| g.rows.is_empty()) {
                    p.empty-state { "No issues match." }
                }
            }
        }
        div.list-paging {
            @if let Some(first) = &v.first_url { a.btn.btn-ghost href=(first) { "Back to the top" } }
            @if let Some(more) = &v.more_url { a.btn #list-more href=(more) { "Load more" } }
        }
    };
    page("Issues", Some(&v.nav), body)
}

/// Board | List, the current one pressed.
pub fn view_toggle(board_url: &str, list_url: &str, on_board: bool) -> Markup {
    html! {
        nav.view-toggle aria-label="View" {
            a.btn.btn-ghost.active[on_board] href=(board_url) aria-current=[on_board.then_some("page")] { "Board" }
            a.btn.btn-ghost.active[!on_board] href=(list_url) aria-current=[(!on_board).then_some("page")] { "List" }
        }
    }
}

fn saved_views(v: &ListView) -> Markup {
    let name_errors = v.errors.get("name");
    html! {
        details.popover.list-views {
            summary.btn.btn-ghost { "Views" @if !v.views.is_empty() { " (" (v.views.len()) ")" } }
            div.popover-body.stack {
                @if v.views.is_empty() { p.muted { "No saved views yet." } }
                ul.list-view-links {
                    @for view in &v.views {
                        li {
                            a href=(view.url) aria-current=[view.current.then_some("page")] { (view.name) }
                            form method="post" action=(view.delete_url) {
                                (csrf(&v.nav.csrf))
                                button.btn.btn-danger-ghost type="submit" title={ "Delete the view " (view.name) } { "×" }
                            }
                        }
                    }
                }
            }
        }
        details.popover.list-save open[name_errors.is_some()] {
            summary.btn { "Save view" }
            form.stack.popover-body method="post" action=(v.save_url) {
                (csrf(&v.nav.csrf))
                input type="hidden" name="query" value=(v.query);
                label for="view-name" { "Name" }
                input #view-name type="text" name="name" value=(v.save_name) maxlength="80" required;
                @if let Some(messages) = name_errors {
                    @for m in messages { p.field-error { (m) } }
                }
                button.btn.btn-primary type="submit" { "Save" }
            }
        }
    }
}

/// GET form: the board's filters plus status and grouping; the sort is kept hidden.
fn filter_bar(f: &ListFilterView, action: &str) -> Markup {
    html! {
        form.filters method="get" action=(action) role="search" {
            label.visually-hidden for="filter-q" { "Search issues" }
            input #filter-q type="search" name="q" value=(f.q) placeholder="Search issues…";
            label.visually-hidden for="filter-status" { "Status" }
            select #filter-status name="status" { (options(&f.status)) }
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
            label for="filter-group" { "Group" }
            select #filter-group name="group" { (options(&f.group)) }
            input type="hidden" name="sort" value=(f.sort);
            input type="hidden" name="dir" value=(f.dir);
            button.btn type="submit" { "Apply" }
            @if f.active {
                a.btn.btn-ghost href={ (action) "?sort=" (f.sort) "&dir=" (f.dir) } { "Clear" }
            }
        }
    }
}

fn batch_bar(v: &ListView) -> Markup {
    let b = &v.batch;
    html! {
        div.batch-bar role="group" aria-label="Change the selected issues" {
            span.batch-count #batch-count { "Selected issues:" }
            label.visually-hidden for="batch-status" { "Set status" }
            select #batch-status name="status" { (options(&b.status)) }
            label.visually-hidden for="batch-assignee" { "Set assignee" }
            select #batch-assignee name="assignee" { (options(&b.assignee)) }
            label.visually-hidden for="batch-priority" { "Set priority" }
            select #batch-priority name="priority" { (options(&b.priority)) }
            label.visually-hidden for="batch-parent" { "Set parent" }
            input #batch-parent type="text" name="parent" placeholder="Parent key" size="10";
            label.visually-hidden for="batch-add-label" { "Add label" }
            input #batch-add-label type="text" name="add_label" placeholder="+ label" size="9";
            label.visually-hidden for="batch-remove-label" { "Remove label" }
            input #batch-remove-label type="text" name="remove_label" placeholder="− label" size="9";
            button.btn.btn-primary #batch-apply type="submit" { "Apply" }
            button.btn.btn-danger-ghost #batch-delete type="submit" name="delete" value="1" { "Delete…" }
        }
    }
}

fn header(c: &ListColumnView) -> Markup {
    let arrow = match c.sorted.as_deref() {
        Some("asc") => " ↑",
        Some("desc") => " ↓",
        _ => "",
    };
    let sort = match c.sorted.as_deref() {
        Some("asc") => "ascending",
        Some("desc") => "descending",
        _ => "none",
    };
    html! {
        th class={ "list-col-" (c.name) } aria-sort=[c.sorted.is_some().then_some(sort)] {
            @if c.url.is_empty() { (c.label) }
            @else { a.list-sort href=(c.url) data-sort=(c.name) { (c.label) (arrow) } }
        }
    }
}

fn group(g: &ListGroupView) -> Markup {
    html! {
        tbody.list-group {
            @if !g.label.is_empty() {
                tr.list-group-head {
                    th colspan="9" scope="rowgroup" {
                        span.list-group-label { (g.label) }
                        " "
                        span.count title="Issues in this group" { (g.count) }
                        @if g.continued { " " span.muted { "(continued)" } }
                    }
                }
            }
            @for r in &g.rows { (row(r)) }
        }
    }
}

fn row(r: &ListRowView) -> Markup {
    html! {
        tr.list-row id={ "row-" (r.key) } data-key=(r.key) data-status=(r.status) {
            td.list-check {
                input type="checkbox" name="key" value=(r.key) checked[r.selected]
                    aria-label={ "Select " (r.key) };
            }
            td.list-key { (r.key) }
            td.list-title { a href=(r.url) { (r.title) } }
            td.list-status {
                span class={ "status-dot dot-" (status_class(&r.status)) } aria-hidden="true" {}
                " " (r.status_label)
            }
            td.list-priority { (PriorityIcon(&r.priority)) " " span.list-priority-name { (r.priority) } }
            td.list-assignee {
                @match &r.assignee {
                    Some(a) => { (Avatar(a)) " " (a.name) }
                    None => span.muted { "—" },
                }
            }
            td.list-updated { (r.updated) }
            td.list-labels { @for l in &r.labels { (LabelChip(l)) " " } }
            td.list-parent {
                @if let Some((key, url)) = &r.parent { a href=(url) { (key) } }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::views::{ListRowView, ListView};

    #[test]
    fn rows_carry_checkboxes_and_groups_their_counts() {
        let v = ListView {
            groups: vec![ListGroupView {
                label: "Todo".into(),
                count: 12,
                continued: true,
                rows: vec![ListRowView {
                    key: "ACM-3".into(),
                    title: "Fix <it>".into(),
                    url: "/w/acme/issues/ACM-3".into(),
                    status: "todo".into(),
                    status_label: "Todo".into(),
                    priority: "high".into(),
                    selected: true,
                    parent: Some(("ACM-1".into(), "/w/acme/issues/ACM-1".into())),
                    ..ListRowView::default()
                }],
            }],
            more_url: Some("/w/acme/list?after=x".into()),
            ..ListView::default()
        };
        let html = list(&v).into_string();
        assert!(html.contains(r#"name="key" value="ACM-3" checked"#));
        assert!(html.contains("Fix &lt;it&gt;"));
        assert!(html.contains(">12</span>"));
        assert!(html.contains("(continued)"));
        assert!(html.contains(r#"href="/w/acme/issues/ACM-1""#));
        assert!(html.contains("Load more"));
    }
}
