//! The issue list page (`/w/{slug}/list`): a dense table, sortable and grouped, with a batch bar and
//! saved views.

use super::{FormErrors, Nav, OptionView, PersonView};

/// The list page.
#[derive(Debug, Clone, Default)]
pub struct ListView {
    pub nav: Nav,
    /// The list URL with the current filter, sort and grouping (no `after`): where forms come back to.
    pub self_url: String,
    /// The board with the same filter.
    pub board_url: String,
    pub filter: ListFilterView,
    /// The table's sortable column headers.
    pub columns: Vec<ListColumnView>,
    /// The page's rows, cut into groups (a group split by the page break shows again on the next page).
    pub groups: Vec<ListGroupView>,
    /// Issues matching the filter.
    pub total: i64,
    /// The next page (`?after=…`), when more follow.
    pub more_url: Option<String>,
    /// The first page, when this is a later one.
    pub first_url: Option<String>,
    pub batch: BatchBarView,
    pub views: Vec<SavedViewLinkView>,
    /// POST target of "Save view" (`name`, `query`).
    pub save_url: String,
    /// The current query string, saved as the view.
    pub query: String,
    /// The name typed into "Save view" (kept on errors).
    pub save_name: String,
    /// Problems of the last batch or save, by field.
    pub errors: FormErrors,
}

/// The filter bar: the board's filters plus status, and the grouping; the sort rides along hidden.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ListFilterView {
    pub q: String,
    pub status: Vec<OptionView>,
    pub assignee: Vec<OptionView>,
    pub label: Vec<OptionView>,
    pub priority: Vec<OptionView>,
    /// "Any project" and the workspace's projects; empty when it has none.
    pub project: Vec<OptionView>,
    pub group: Vec<OptionView>,
    pub sort: String,
    pub dir: String,
    /// Whether any filter is set (to offer "clear").
    pub active: bool,
}

/// A column header: a link that sorts by it (or flips the direction when it is the sort).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ListColumnView {
    /// `key`, `title`, … (the sort's name).
    pub name: String,
    pub label: String,
    pub url: String,
    /// `asc` or `desc` when the list is sorted by it.
    pub sorted: Option<String>,
}

/// A group's rows with its header.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ListGroupView {
    /// "In progress", "Ada Lovelace", "ACM-3 Parser", … (empty when the list is not grouped: no header).
    pub label: String,
    /// Issues in the whole group (not only this page).
    pub count: i64,
    /// The group began on an earlier page.
    pub continued: bool,
    pub rows: Vec<ListRowView>,
}

/// One issue's row.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ListRowView {
    pub key: String,
    pub title: String,
    pub url: String,
    pub status: String,
    pub status_label: String,
    pub priority: String,
    pub assignee: Option<PersonView>,
    pub labels: Vec<String>,
    /// The parent's key and page.
    pub parent: Option<(String, String)>,
    /// `2026-12-05 14:03`.
    pub updated: String,
    /// Ticked (kept after a refused batch).
    pub selected: bool,
}

/// The batch bar: a form over the ticked rows (checkboxes named `key`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BatchBarView {
    /// POST target (`key`…, `status`, `assignee`, `priority`, `parent`, `add_label`, `remove_label`,
    /// `delete`, `confirm`, `back`).
    pub action: String,
    /// Each list starts with "" = leave as it is.
    pub status: Vec<OptionView>,
    pub assignee: Vec<OptionView>,
    pub priority: Vec<OptionView>,
    /// Delete asked and not yet confirmed: the keys to confirm.
    pub confirm_delete: Vec<String>,
}

/// A saved view in the list page's menu.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SavedViewLinkView {
    pub name: String,
    pub url: String,
    /// Whether it is the view showing.
    pub current: bool,
    /// POST target that deletes it.
    pub delete_url: String,
}
