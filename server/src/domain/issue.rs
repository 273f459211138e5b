//! Issues and comments.

use chrono::{DateTime, Utc};

use super::{
    ActivityId, AgentId, CommentId, IssueId, IssuePrefix, RunId, UserId, ValidationError,
    WorkspaceId, bounded_text, string_enum,
};

/// An issue title: trimmed, 1–500 characters.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(transparent)]
pub struct IssueTitle(String);

impl IssueTitle {
    /// Longest accepted title, in characters.
    pub const MAX_LEN: usize = 500;

    /// Validates a title.
    pub fn parse(raw: &str) -> Result<Self, ValidationError> {
        bounded_text("title", raw, 1, Self::MAX_LEN).map(Self)
    }

    /// The title text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// Longest accepted issue or comment body, in bytes (1 MiB).
pub const MAX_BODY_BYTES: usize = 1024 * 1024;

/// Checks an issue body's size.
pub fn issue_body_ok(body: &str) -> Result<(), ValidationError> {
    check_body("body", body)
}

pub(crate) fn check_body(field: &'static str, body: &str) -> Result<(), ValidationError> {
    if body.len() > MAX_BODY_BYTES {
        return Err(ValidationError::new(
            field,
            format!(
                "must be at most {MAX_BODY_BYTES} bytes (got {})",
                body.len()
            ),
        ));
    }
    Ok(())
}

string_enum!(
    /// Where an issue is on the board.
    IssueStatus, "status" {
        Backlog => "backlog",
        Todo => "todo",
        InProgress => "in_progress",
        InReview => "in_review",
        Done => "done",
        Blocked => "blocked",
        Cancelled => "cancelled",
    }
);

impl IssueStatus {
    /// Whether a person's reply on an issue assigned to an agent sets it to work: not when the issue is
    /// parked (backlog) or closed (done, cancelled).
    pub fn takes_replies(self) -> bool {
        !matches!(self, Self::Backlog | Self::Done | Self::Cancelled)
    }

    /// The status of a new issue when none is given, the same for the board's form, the API and
    /// `muster issue create`: todo, so that an issue created with an agent assigned starts a run at once
    /// (a backlog issue waits until it leaves the backlog).
    pub const NEW_ISSUE_DEFAULT: IssueStatus = IssueStatus::Todo;

    /// The board's default columns; blocked and cancelled are reached by filter.
    pub const BOARD: &'static [IssueStatus] = &[
        IssueStatus::Backlog,
        IssueStatus::Todo,
        IssueStatus::InProgress,
        IssueStatus::InReview,
        IssueStatus::Done,
    ];

    /// Whether assigning an agent to an issue in this status starts a run.
    pub fn starts_runs(self) -> bool {
        matches!(self, IssueStatus::Todo | IssueStatus::InProgress)
    }
}

string_enum!(
    /// How urgent an issue is.
    Priority, "priority" {
        None => "none",
        Urgent => "urgent",
        High => "high",
        Medium => "medium",
        Low => "low",
    }
);

/// An issue's key, `MUS-42`: the workspace prefix and the per-workspace number.
#[derive(Debug, Clone, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(into = "String")]
pub struct IssueKey {
    pub prefix: IssuePrefix,
    pub number: i64,
}

impl IssueKey {
    /// Parses `MUS-42` (case-insensitive prefix).
    pub fn parse(raw: &str) -> Result<Self, ValidationError> {
        let bad =
            || ValidationError::new("key", format!("{raw:?} is not an issue key like MUS-42"));
        let (prefix, number) = raw.trim().rsplit_once('-').ok_or_else(bad)?;
        let prefix = IssuePrefix::parse(prefix).map_err(|_| bad())?;
        let number: i64 = number.parse().map_err(|_| bad())?;
        if number < 1 {
            return Err(bad());
        }
        Ok(Self { prefix, number })
    }
}

impl std::fmt::Display for IssueKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}-{}", self.prefix.as_str(), self.number)
    }
}

impl From<IssueKey> for String {
    fn from(k: IssueKey) -> String {
        k.to_string()
    }
}

/// A label: 1–50 characters, no commas (labels are entered comma-separated).
#[derive(
    Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
#[serde(transparent)]
pub struct Label(String);

impl Label {
    /// Validates one label.
    pub fn parse(raw: &str) -> Result<Self, ValidationError> {
        let s = bounded_text("labels", raw, 1, 50)?;
        if s.contains(',') {
            return Err(ValidationError::new(
                "labels",
                "a label must not contain ','",
            ));
        }
        Ok(Self(s))
    }

    /// Parses a comma-separated list, dropping empty entries and duplicates, sorted.
    pub fn parse_list(raw: &str) -> Result<Vec<Label>, ValidationError> {
        let mut out = raw
            .split(',')
            .filter(|s| !s.trim().is_empty())
            .map(Label::parse)
            .collect::<Result<Vec<_>, _>>()?;
        out.sort();
        out.dedup();
        if out.len() > 20 {
            return Err(ValidationError::new(
                "labels",
                "at most 20 labels per issue",
            ));
        }
        Ok(out)
    }

    /// The label text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// Who an issue is assigned to: a member or an agent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(tag = "type", content = "id", rename_all = "snake_case")]
pub enum Assignee {
    User(UserId),
    Agent(AgentId),
}

/// Input for a new issue.
#[derive(Debug, Clone)]
pub struct NewIssue {
    pub title: IssueTitle,
    pub body: String,
    pub status: IssueStatus,
    pub priority: Priority,
    pub assignee: Option<Assignee>,
    pub labels: Vec<Label>,
    pub parent: Option<IssueId>,
    pub project: Option<super::ProjectId>,
    pub created_by: Option<UserId>,
}

impl NewIssue {
    /// A backlog issue with no priority, assignee or labels.
    pub fn new(title: IssueTitle) -> Self {
        Self {
            title,
            body: String::new(),
            status: IssueStatus::Backlog,
            priority: Priority::None,
            assignee: None,
            labels: Vec::new(),
            parent: None,
            project: None,
            created_by: None,
        }
    }

    /// Sets the body, checking its size.
    pub fn with_body(mut self, body: impl Into<String>) -> Result<Self, ValidationError> {
        let body = body.into();
        check_body("body", &body)?;
        self.body = body;
        Ok(self)
    }
}

/// A change to some fields of an issue; `None` leaves a field as it is.
#[derive(Debug, Clone, Default)]
pub struct IssuePatch {
    pub title: Option<IssueTitle>,
    pub body: Option<String>,
    pub priority: Option<Priority>,
    /// `Some(None)` clears the assignee.
    pub assignee: Option<Option<Assignee>>,
    pub labels: Option<Vec<Label>>,
    /// `Some(None)` takes it out of its project.
    pub project: Option<Option<super::ProjectId>>,
}

/// Which issues a list returns; empty fields match everything.
#[derive(Debug, Clone, Default)]
pub struct IssueFilter {
    pub statuses: Vec<IssueStatus>,
    pub assignee: Option<Assignee>,
    pub label: Option<Label>,
    pub priority: Option<Priority>,
    /// Only issues of this project.
    pub project: Option<super::ProjectId>,
    /// Case-insensitive: the start of the key (`acm-1` finds ACM-1 and ACM-12), or every word of it in
    /// the title or in the body, each as a word prefix (full-text, as `store::search`).
    pub text: Option<String>,
    /// Only issues after this one in list order: where the previous page ended.
    pub after: Option<IssueCursor>,
    /// At most this many issues; all when `None`.
    pub limit: Option<i64>,
}

/// A place in the issue list's order (column, then position, then number), taken from the last issue
/// of a page. Clients get it as an opaque string, `<status>:<position>:<number>`; an issue moved while a
/// client pages is listed where it is when its page is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IssueCursor {
    pub status: IssueStatus,
    pub position: i64,
    pub number: i64,
}

impl IssueCursor {
    /// The cursor just past `issue`.
    pub fn after(issue: &Issue) -> Self {
        Self {
            status: issue.status,
            position: issue.position,
            number: issue.key.number,
        }
    }

    /// The column's place in list order (the board's column order, as the store sorts).
    pub fn column_rank(self) -> i64 {
        let rank = IssueStatus::ALL.iter().position(|s| *s == self.status);
        i64::try_from(rank.unwrap_or(IssueStatus::ALL.len())).unwrap_or(i64::MAX)
    }
}

impl std::fmt::Display for IssueCursor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}:{}", self.status, self.position, self.number)
    }
}

impl std::str::FromStr for IssueCursor {
    type Err = ValidationError;

    fn from_str(raw: &str) -> Result<Self, Self::Err> {
        let bad = || {
            ValidationError::new(
                "after",
                format!(
                    "{raw:?} is not a cursor of this list; pass the `next_after` of the previous page"
                ),
            )
        };
        let mut parts = raw.trim().split(':');
        let (Some(status), Some(position), Some(number), None) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return Err(bad());
        };
        Ok(Self {
            status: status.parse().map_err(|_| bad())?,
            position: position.parse().map_err(|_| bad())?,
            number: number.parse().map_err(|_| bad())?,
        })
    }
}

/// An issue as stored.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Issue {
    pub id: IssueId,
    pub workspace_id: WorkspaceId,
    pub key: IssueKey,
    pub title: IssueTitle,
    pub body: String,
    pub status: IssueStatus,
    pub priority: Priority,
    pub assignee: Option<Assignee>,
    pub labels: Vec<Label>,
    pub parent: Option<IssueId>,
    pub project: Option<super::ProjectId>,
    /// Order within its status column, ascending.
    pub position: i64,
    pub created_by: Option<UserId>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

impl Issue {
    /// Whether a run of `agent` may move this issue across the board: only the issue's assigned agent
    /// (or an ensemble's run, `in_ensemble`) owns its status; a helper brought in by a mention leaves it
    /// alone.
    pub fn status_owned_by(&self, agent: AgentId, in_ensemble: bool) -> bool {
        in_ensemble || self.assignee == Some(Assignee::Agent(agent))
    }
}

/// Who wrote a comment.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(tag = "type", content = "id", rename_all = "snake_case")]
pub enum CommentAuthor {
    User(UserId),
    Agent(AgentId),
    /// Muster itself (status changes, run summaries).
    System,
}

/// Input for a new comment.
#[derive(Debug, Clone)]
pub struct NewComment {
    pub author: CommentAuthor,
    pub body: String,
    /// The run that wrote it, when an agent did.
    pub run_id: Option<RunId>,
}

impl NewComment {
    /// Validates a comment body: not blank, at most [`MAX_BODY_BYTES`].
    pub fn parse(author: CommentAuthor, body: &str) -> Result<Self, ValidationError> {
        if body.trim().is_empty() {
            return Err(ValidationError::new("body", "must not be empty"));
        }
        check_body("body", body)?;
        Ok(Self {
            author,
            body: body.to_owned(),
            run_id: None,
        })
    }
}

/// A stored comment.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Comment {
    pub id: CommentId,
    pub issue_id: IssueId,
    pub author: CommentAuthor,
    pub body: String,
    pub run_id: Option<RunId>,
    pub created_at: DateTime<Utc>,
    /// When its author last edited it (`None`: never).
    pub edited_at: Option<DateTime<Utc>>,
}

/// Who did something: a member, an agent or Muster itself.
pub type Actor = CommentAuthor;

string_enum!(
    /// What an activity line records.
    ActivityKind, "kind" {
        Created => "created",
        Status => "status",
        Assignee => "assignee",
        Title => "title",
        Priority => "priority",
        Labels => "labels",
        Body => "body",
        Project => "project",
    }
);

/// One line of an issue's activity trail. `detail` holds `{"from": …, "to": …}` for changes.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Activity {
    pub id: ActivityId,
    pub issue_id: IssueId,
    pub actor: Actor,
    pub kind: ActivityKind,
    pub detail: serde_json::Value,
    pub at: DateTime<Utc>,
}

impl Activity {
    /// For an assignee change, whom the issue went to (`None` when it was unassigned, or for another
    /// kind of change): read from the detail's `to` (`{"type": "agent", "id": …}`).
    pub fn new_assignee(&self) -> Option<Actor> {
        if self.kind != ActivityKind::Assignee {
            return None;
        }
        let to = &self.detail["to"];
        let id = uuid::Uuid::parse_str(to["id"].as_str()?).ok()?;
        match to["type"].as_str()? {
            "user" => Some(Actor::User(UserId(id))),
            "agent" => Some(Actor::Agent(AgentId(id))),
            _ => None,
        }
    }
}
