//! Muster's domain: validated value types and the records the store returns.
//!
//! Raw input becomes these types once, at the edge (`IssueTitle::parse`, `Slug::parse`, …); deeper
//! layers take only validated values, so the store never sees an empty title or an unknown status.

mod agent;
pub mod egress;
mod ensemble;
pub mod failure;
mod forge;
mod ids;
mod issue;
pub mod list;
mod mention;
mod plan;
mod project;
pub mod proposal;
pub mod review;
mod run;
mod run_event;
mod runner;
mod search;
pub mod serde_util;
mod skill;
pub mod usage;
mod workspace;

pub use agent::{
    AUTO_AGENT_COLOR, Agent, AgentName, Budget, EnvVar, NewAgent, PermissionMode,
    PermissionModeSchema, RuntimeKind, RuntimeKindSchema, reserved_env,
};
pub use egress::{HostPattern, parse_host_list};
pub use ensemble::{
    CHECK_EVENT, CHECK_TIMEOUT_DEFAULT_SECS, CHECK_TIMEOUT_MAX_SECS, CheckResult, CheckSpec,
    ENSEMBLE_MEMBERS, EarlyStop, Ensemble, EnsembleName, EnsembleRun, EnsembleSettings,
    EnsembleStatus, NewEnsembleRun, ReviewOutcome, StopNote, StopWhy,
};
pub use forge::{
    CheckState, DEFAULT_MAX_ROUNDS, ForgeConnection, ForgeKind, MAX_ROUNDS_LIMIT,
    NewForgeConnection, NewPullRequest, OnClose, PrCheck, PrReview, PrState, PrUpdate, PullRequest,
    ReviewVerdict,
};
pub use ids::{
    ActivityId, AgentId, CommentId, EnsembleId, EnsembleRunId, ForgeConnectionId, InboxItemId,
    InvitationId, IssueId, ProjectId, ProposalId, PullRequestId, RunId, RunnerId, RunnerTokenId,
    SessionId, SkillId, TokenId, UserId, WorkspaceId,
};
pub use issue::{
    Activity, ActivityKind, Actor, Assignee, Comment, CommentAuthor, Issue, IssueCursor,
    IssueFilter, IssueKey, IssuePatch, IssueStatus, IssueTitle, Label, NewComment, NewIssue,
    Priority, issue_body_ok,
};
pub use mention::{Mentionable, Mentioned, handle, mention_spans, woken_by_comment};
pub use plan::{
    BlockUntil, Blocker, ChildProgress, Cycle, IssueBrief, IssueLink, LinkKind, MAX_TREE_DEPTH,
    NewRelation, RelationKind,
};
pub use project::{
    NewProject, PROJECT_DESCRIPTION_MAX, Project, ProjectKey, ProjectName, ProjectPatch,
    ProjectStats, ProjectStatus, WorkPlace, project_description_ok, work_place,
};
pub use proposal::{
    CheckedTree, NewProposal, PlannedIssue, Proposal, ProposalStatus, ProposedIssue, check_tree,
};
pub use run::{
    FailureReason, InboxItem, InboxKind, NewInboxItem, NewRun, NewRunEvent, ONLINE_WITHIN, Run,
    RunEvent, RunOutcome, RunPurpose, RunStatus, RunTrigger, Runner, Seq, Usage, WorkLine,
    work_lines,
};
pub use run_event::{
    DiffNote, EGRESS_EVENT, EgressNote, RunEventBody, SandboxEgress, SandboxNote, SandboxPath,
    SessionNote,
};
pub use runner::{NewRunnerToken, RunnerName, RunnerToken};
pub use search::{
    DEFAULT_SEARCH_LIMIT, MAX_QUERY_CHARS, MAX_SEARCH_LIMIT, MatchedIn, SearchHit, SearchQuery,
    snippet, terms,
};
pub use skill::{AgentSkill, NewSkill, Skill, SkillFile, SkillSource};
pub use usage::{Cap, Caps, GroupBy, RunUsage, UsageFilter, UsageReport};
pub use workspace::{
    ApiToken, Email, Invitation, IssuePrefix, Member, NewApiToken, NewInvitation, NewSession,
    NewUser, NewWorkspace, Role, Session, Slug, User, Workspace,
};

/// A value that failed validation at the edge: which field, and a message a person can act on.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {message}")]
pub struct ValidationError {
    /// The input field the message is about (`title`, `status`, …).
    pub field: &'static str,
    /// What is wrong and, where it helps, what is accepted.
    pub message: String,
}

/// A runtime kind or permission mode that is none of the agents crate's names.
impl From<muster_agents::UnknownChoice> for ValidationError {
    fn from(e: muster_agents::UnknownChoice) -> Self {
        Self::new(e.field, e.to_string())
    }
}

impl ValidationError {
    /// Builds an error for `field`.
    pub fn new(field: &'static str, message: impl Into<String>) -> Self {
        Self {
            field,
            message: message.into(),
        }
    }
}

/// Declares a string-backed enum with `as_str`, `Display`, `FromStr` (precise error listing the accepted
/// values), serde as the same snake_case strings, and `ALL`.
macro_rules! string_enum {
    ($(#[$meta:meta])* $name:ident, $field:literal { $($variant:ident => $text:literal),+ $(,)? }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
        #[serde(try_from = "String", into = "&'static str")]
        pub enum $name { $($variant),+ }

        impl $name {
            /// Every value, in display order.
            pub const ALL: &'static [$name] = &[$($name::$variant),+];

            /// The stored and displayed name.
            pub fn as_str(self) -> &'static str {
                match self { $($name::$variant => $text),+ }
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl std::str::FromStr for $name {
            type Err = $crate::domain::ValidationError;
            fn from_str(s: &str) -> Result<Self, Self::Err> {
                match s.trim() {
                    $($text => Ok($name::$variant),)+
                    other => Err($crate::domain::ValidationError::new(
                        $field,
                        format!(
                            "unknown {} {:?}; expected one of: {}",
                            $field,
                            other,
                            [$($text),+].join(", ")
                        ),
                    )),
                }
            }
        }

        impl TryFrom<String> for $name {
            type Error = $crate::domain::ValidationError;
            fn try_from(s: String) -> Result<Self, Self::Error> { s.parse() }
        }

        impl From<$name> for &'static str {
            fn from(v: $name) -> &'static str { v.as_str() }
        }

        // The OpenAPI schema: a string that is one of these names.
        impl utoipa::PartialSchema for $name {
            fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
                $crate::domain::names_schema([$($text),+])
            }
        }

        impl utoipa::ToSchema for $name {}
    };
}
pub(crate) use string_enum;

/// The OpenAPI schema of a string that is one of `names`.
pub(crate) fn names_schema<const N: usize>(
    names: [&'static str; N],
) -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
    utoipa::openapi::schema::ObjectBuilder::new()
        .schema_type(utoipa::openapi::schema::Type::String)
        .enum_values(Some(names))
        .into()
}

/// Checks a string's length in characters, trimmed, for `field`.
pub(crate) fn bounded_text(
    field: &'static str,
    raw: &str,
    min: usize,
    max: usize,
) -> Result<String, ValidationError> {
    let trimmed = raw.trim();
    let len = trimmed.chars().count();
    if len < min {
        return Err(ValidationError::new(field, "must not be empty"));
    }
    if len > max {
        return Err(ValidationError::new(
            field,
            format!("must be at most {max} characters (got {len})"),
        ));
    }
    Ok(trimmed.to_owned())
}

#[cfg(test)]
mod tests;
