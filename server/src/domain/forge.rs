//! Forges (GitHub, GitLab, Gitea/Forgejo): a workspace's connection to the forge project its repository
//! lives in, and the pull requests (merge requests on GitLab) Muster opened there for agents' work.
//!
//! A connection's token and webhook secret are sealed at rest (like agent secrets) and only ever opened
//! by the engine, outside every agent's sandbox.

use chrono::{DateTime, Utc};

use super::{
    AgentId, ForgeConnectionId, IssueId, PullRequestId, RunId, UserId, WorkspaceId, string_enum,
};

string_enum!(
    /// Which forge API a connection speaks.
    ForgeKind, "kind" {
        Github => "github",
        Gitlab => "gitlab",
        Gitea => "gitea",
    }
);

impl ForgeKind {
    /// The name people know it by.
    pub fn label(self) -> &'static str {
        match self {
            ForgeKind::Github => "GitHub",
            ForgeKind::Gitlab => "GitLab",
            ForgeKind::Gitea => "Gitea/Forgejo",
        }
    }

    /// The API root of the public service, used when a connection names none.
    pub fn default_api_url(self) -> Option<&'static str> {
        match self {
            ForgeKind::Github => Some("https://api.github.com"),
            ForgeKind::Gitlab => Some("https://gitlab.com/api/v4"),
            ForgeKind::Gitea => None,
        }
    }

    /// What the forge calls a pull request.
    pub fn pull_noun(self) -> &'static str {
        match self {
            ForgeKind::Gitlab => "merge request",
            ForgeKind::Github | ForgeKind::Gitea => "pull request",
        }
    }
}

string_enum!(
    /// Where an issue goes when its pull request is closed without being merged.
    OnClose, "on_close" {
        Todo => "todo",
        Cancelled => "cancelled",
    }
);

/// The default for how many automatic rounds (CI fixes, review answers) one pull request gets.
pub const DEFAULT_MAX_ROUNDS: i32 = 3;
/// The most automatic rounds a workspace may allow per pull request.
pub const MAX_ROUNDS_LIMIT: i32 = 20;

/// A workspace's connection to a forge project.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct ForgeConnection {
    pub id: ForgeConnectionId,
    pub workspace_id: WorkspaceId,
    pub kind: ForgeKind,
    /// The API root (`https://api.github.com`, `https://gitlab.example/api/v4`, `https://gitea.example/api/v1`).
    pub api_url: String,
    /// The project as the forge names it: `owner/name` (GitLab: `group/sub/name`).
    pub repo: String,
    /// The sealed token (never serialized).
    #[serde(skip)]
    pub token_sealed: String,
    /// The sealed webhook secret (never serialized).
    #[serde(skip)]
    pub webhook_secret_sealed: String,
    /// Open a draft pull request when an agent delivers.
    pub auto_open: bool,
    /// Automatic rounds per pull request.
    pub max_rounds: i32,
    /// Where the issue goes when its pull request is closed unmerged.
    pub on_close: OnClose,
    pub created_by: UserId,
    pub created_at: DateTime<Utc>,
}

/// Input for a connection (token and secret already sealed).
#[derive(Debug, Clone)]
pub struct NewForgeConnection {
    pub workspace_id: WorkspaceId,
    pub kind: ForgeKind,
    pub api_url: String,
    pub repo: String,
    pub token_sealed: String,
    pub webhook_secret_sealed: String,
    pub auto_open: bool,
    pub max_rounds: i32,
    pub on_close: OnClose,
    pub created_by: UserId,
}

string_enum!(
    /// A pull request's state on its forge.
    PrState, "state" {
        Open => "open",
        Merged => "merged",
        Closed => "closed",
    }
);

impl PrState {
    /// Merged or closed: Muster never pushes to its branch again.
    pub fn is_final(self) -> bool {
        !matches!(self, PrState::Open)
    }
}

string_enum!(
    /// A check's (CI job's, status's) state.
    CheckState, "state" {
        Pending => "pending",
        Success => "success",
        Failure => "failure",
    }
);

string_enum!(
    /// A review's verdict.
    ReviewVerdict, "verdict" {
        Approved => "approved",
        ChangesRequested => "changes_requested",
        Commented => "commented",
    }
);

/// One check on a pull request's head, as last reported.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct PrCheck {
    pub name: String,
    pub state: CheckState,
    /// Where a person reads it on the forge.
    #[serde(default)]
    pub url: Option<String>,
}

/// One reviewer's latest verdict on a pull request.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct PrReview {
    pub author: String,
    pub verdict: ReviewVerdict,
}

/// A pull request Muster opened for one line of work (an agent on an issue).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct PullRequest {
    pub id: PullRequestId,
    pub workspace_id: WorkspaceId,
    pub connection_id: ForgeConnectionId,
    pub issue_id: IssueId,
    pub agent_id: AgentId,
    /// The run whose work it was opened with.
    pub run_id: RunId,
    /// Its number on the forge (GitLab: the merge request's iid).
    pub number: i64,
    pub url: String,
    /// Its head branch.
    pub branch: String,
    /// The branch it merges into.
    pub base: String,
    pub state: PrState,
    pub draft: bool,
    /// The head commit last seen.
    pub head_sha: String,
    /// Whether the forge says it can merge (unknown until it says).
    pub mergeable: Option<bool>,
    pub checks: Vec<PrCheck>,
    pub reviews: Vec<PrReview>,
    /// Automatic rounds it has had.
    pub rounds: i32,
    /// The pull request opened for work that arrived after this one was merged or closed.
    pub superseded_by: Option<PullRequestId>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

/// Input for a pull request just opened on its forge.
#[derive(Debug, Clone)]
pub struct NewPullRequest {
    pub workspace_id: WorkspaceId,
    pub connection_id: ForgeConnectionId,
    pub issue_id: IssueId,
    pub agent_id: AgentId,
    pub run_id: RunId,
    pub number: i64,
    pub url: String,
    pub branch: String,
    pub base: String,
    pub draft: bool,
    pub head_sha: String,
}

/// What the forge said about a pull request, recorded as it arrives.
#[derive(Debug, Clone, Default)]
pub struct PrUpdate {
    pub state: Option<PrState>,
    pub draft: Option<bool>,
    pub head_sha: Option<String>,
    pub mergeable: Option<Option<bool>>,
    /// A check's latest state (replacing the one of the same name).
    pub check: Option<PrCheck>,
    /// A reviewer's latest verdict (replacing theirs).
    pub review: Option<PrReview>,
}
