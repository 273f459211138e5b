//! Views of projects: the Projects page (every project with its progress) and one project's page (its
//! progress by status, issues, runs and spend, and the form that edits it).

use super::{FormErrors, Nav, OptionView, PersonView};

/// A project's fields as a form shows them (typed input kept after a refusal).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProjectFormView {
    pub key: String,
    pub name: String,
    pub description: String,
    /// The lead choices (members), the current one selected.
    pub lead: Vec<OptionView>,
    pub status: Vec<OptionView>,
    /// `YYYY-MM-DD` or empty.
    pub target_date: String,
    pub repo_path: String,
    pub check_command: String,
    /// Owners and admins see (and may change) the repository and check fields.
    pub can_manage: bool,
    pub errors: FormErrors,
}

/// A project as a row of the Projects page.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProjectRowView {
    pub key: String,
    pub name: String,
    /// The stored status name (`active`).
    pub status: String,
    pub lead: Option<PersonView>,
    /// `2027-03-31`, or empty.
    pub target_date: String,
    /// "3/8 done".
    pub progress: String,
    /// 0–100.
    pub percent: i64,
    pub runs: i64,
    /// "$1.2340", "unpriced", …
    pub cost: String,
    /// Its own repository, if it has one.
    pub repo: Option<String>,
    /// Its page.
    pub url: String,
}

/// The Projects page.
#[derive(Debug, Clone, Default)]
pub struct ProjectsView {
    pub nav: Nav,
    pub projects: Vec<ProjectRowView>,
    /// The new-project form.
    pub form: ProjectFormView,
}

/// Issues of one status on a project's page, linked to the board filtered to them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProjectStatusView {
    pub status: String,
    pub count: i64,
    pub url: String,
}

/// An issue of a project.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProjectIssueView {
    pub key: String,
    pub title: String,
    pub status: String,
    pub assignee: Option<PersonView>,
    pub url: String,
}

/// A run on a project's issue.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProjectRunView {
    pub issue_key: String,
    pub agent: String,
    /// The run's status name (`succeeded`).
    pub status: String,
    pub cost: String,
    /// When it was created, as the page shows it.
    pub when: String,
    pub url: String,
}

/// One project's page.
#[derive(Debug, Clone, Default)]
pub struct ProjectView {
    pub nav: Nav,
    pub row: ProjectRowView,
    /// Rendered Markdown.
    pub description_html: String,
    /// The check command its ensembles run, if it has its own.
    pub check: Option<String>,
    pub by_status: Vec<ProjectStatusView>,
    pub issues: Vec<ProjectIssueView>,
    /// More issues than listed: the board filtered to the project.
    pub more_issues: Option<String>,
    pub runs: Vec<ProjectRunView>,
    /// "12,345 tokens".
    pub tokens: String,
    /// The board filtered to it.
    pub board_url: String,
    pub form: ProjectFormView,
    /// Saved after an edit (`?saved=1`).
    pub saved: bool,
    /// Owners and admins may delete it.
    pub can_delete: bool,
}
