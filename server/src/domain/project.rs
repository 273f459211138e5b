//! Projects: a workspace's work grouped under a name, with a lead, a status, a target date, and its own
//! repository and check command. An issue belongs to at most one project, and its runs work in the
//! project's repository ([`work_place`]).
//!
//! Issues keep the workspace's keys: a key that changed with the project would break every branch,
//! pull request and link already made from it.

use chrono::{DateTime, NaiveDate, Utc};

use super::{
    CheckSpec, IssueStatus, ProjectId, Usage, UserId, ValidationError, Workspace, bounded_text,
    string_enum,
};

/// A project's short name in URLs, the CLI and filters: `WEB`, `API2` (2–10 letters or digits starting
/// with a letter; lowercase input is upper-cased).
#[derive(Debug, Clone, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(transparent)]
pub struct ProjectKey(String);

impl ProjectKey {
    /// Validates a project key.
    pub fn parse(raw: &str) -> Result<Self, ValidationError> {
        let s = raw.trim().to_ascii_uppercase();
        let ok = (2..=10).contains(&s.len())
            && s.starts_with(|c: char| c.is_ascii_uppercase())
            && s.chars()
                .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit());
        if !ok {
            return Err(ValidationError::new(
                "key",
                format!(
                    "must be 2 to 10 letters A-Z or digits, starting with a letter (e.g. WEB), not {:?}",
                    raw.trim()
                ),
            ));
        }
        Ok(Self(s))
    }

    /// The key text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Display for ProjectKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// A project's name: 1–100 characters, not blank.
#[derive(Debug, Clone, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(transparent)]
pub struct ProjectName(String);

impl ProjectName {
    /// Validates a project name.
    pub fn parse(raw: &str) -> Result<Self, ValidationError> {
        bounded_text("name", raw, 1, 100).map(Self)
    }

    /// The name text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// The most characters of a project's description.
pub const PROJECT_DESCRIPTION_MAX: usize = 10_000;

/// Checks a project's description (Markdown, at most [`PROJECT_DESCRIPTION_MAX`] characters).
pub fn project_description_ok(raw: &str) -> Result<(), ValidationError> {
    if raw.chars().count() > PROJECT_DESCRIPTION_MAX {
        return Err(ValidationError::new(
            "description",
            format!("must be at most {PROJECT_DESCRIPTION_MAX} characters"),
        ));
    }
    Ok(())
}

string_enum!(
    /// Where a project stands.
    ProjectStatus, "status" {
        Planned => "planned",
        Active => "active",
        Paused => "paused",
        Completed => "completed",
        Cancelled => "cancelled",
    }
);

/// A project of a workspace.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Project {
    pub id: ProjectId,
    pub workspace_id: super::WorkspaceId,
    pub key: ProjectKey,
    pub name: ProjectName,
    pub description: String,
    pub lead: Option<UserId>,
    pub status: ProjectStatus,
    pub target_date: Option<NaiveDate>,
    /// Its own repository (a path on the server or a git URL, as the workspace's); the workspace's when
    /// `None`.
    pub repo_path: Option<String>,
    /// Its default check command (ensembles of its issues run it); the workspace's when `None`.
    pub check: Option<CheckSpec>,
    pub created_by: Option<UserId>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

/// A new project, validated.
#[derive(Debug, Clone)]
pub struct NewProject {
    pub key: ProjectKey,
    pub name: ProjectName,
    pub description: String,
    pub lead: Option<UserId>,
    pub status: ProjectStatus,
    pub target_date: Option<NaiveDate>,
    pub repo_path: Option<String>,
    pub check: Option<CheckSpec>,
    pub created_by: Option<UserId>,
}

/// Changes to a project; `None` leaves a field as it is, `Some(None)` clears an optional one.
#[derive(Debug, Clone, Default)]
pub struct ProjectPatch {
    pub key: Option<ProjectKey>,
    pub name: Option<ProjectName>,
    pub description: Option<String>,
    pub lead: Option<Option<UserId>>,
    pub status: Option<ProjectStatus>,
    pub target_date: Option<Option<NaiveDate>>,
    pub repo_path: Option<Option<String>>,
    pub check: Option<Option<CheckSpec>>,
}

impl ProjectPatch {
    /// Whether it changes nothing.
    pub fn is_empty(&self) -> bool {
        self.key.is_none()
            && self.name.is_none()
            && self.description.is_none()
            && self.lead.is_none()
            && self.status.is_none()
            && self.target_date.is_none()
            && self.repo_path.is_none()
            && self.check.is_none()
    }
}

/// How far a project is: its issues by status, and what its runs did and cost.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct ProjectStats {
    /// Issues per status, in board order; statuses without issues left out.
    pub by_status: Vec<(IssueStatus, i64)>,
    pub runs: i64,
    pub usage: Usage,
}

impl ProjectStats {
    /// Every issue of the project.
    pub fn total(&self) -> i64 {
        self.by_status.iter().map(|(_, n)| n).sum()
    }

    /// Issues in `status`.
    pub fn count(&self, status: IssueStatus) -> i64 {
        self.by_status
            .iter()
            .find(|(s, _)| *s == status)
            .map_or(0, |(_, n)| *n)
    }

    /// Done issues out of those not cancelled: "7/12".
    pub fn progress(&self) -> (i64, i64) {
        (
            self.count(IssueStatus::Done),
            self.total() - self.count(IssueStatus::Cancelled),
        )
    }
}

/// Where an issue's runs work: the repository their worktrees are made from, and the check command
/// ensembles run there.
#[derive(Debug, Clone, PartialEq)]
pub struct WorkPlace {
    pub repo: Option<String>,
    pub check: Option<CheckSpec>,
    /// The repository is the project's own, not the workspace's (the workspace's forge connection is for
    /// the workspace's repository, so it does not push or open pull requests from this one).
    pub own_repo: bool,
}

/// Where the runs of an issue in `project` (or in none) work: the project's repository and check when it
/// has them, else the workspace's.
pub fn work_place(ws: &Workspace, project: Option<&Project>) -> WorkPlace {
    let non_empty = |r: &Option<String>| r.clone().filter(|r| !r.trim().is_empty());
    let own = project.and_then(|p| non_empty(&p.repo_path));
    WorkPlace {
        own_repo: own.is_some(),
        repo: own.or_else(|| non_empty(&ws.repo_path)),
        check: project
            .and_then(|p| p.check.clone())
            .or_else(|| ws.check.clone()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_short_upper_case_and_start_with_a_letter() {
        assert_eq!(ProjectKey::parse(" web ").unwrap().as_str(), "WEB");
        assert_eq!(ProjectKey::parse("api2").unwrap().as_str(), "API2");
        for bad in ["W", "2FA", "WEB-1", "ABCDEFGHIJK", "wé", ""] {
            let e = ProjectKey::parse(bad).unwrap_err();
            assert_eq!(e.field, "key", "{bad}");
            assert!(e.message.contains("2 to 10"), "{bad}: {}", e.message);
        }
    }

    #[test]
    fn progress_leaves_cancelled_issues_out() {
        let stats = ProjectStats {
            by_status: vec![
                (IssueStatus::Todo, 3),
                (IssueStatus::Done, 2),
                (IssueStatus::Cancelled, 1),
            ],
            ..ProjectStats::default()
        };
        assert_eq!(stats.total(), 6);
        assert_eq!(stats.progress(), (2, 5));
    }
}
