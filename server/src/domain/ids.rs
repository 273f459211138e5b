//! Typed ids: a `RunId` cannot be passed where an `IssueId` is expected.

use uuid::Uuid;

macro_rules! id_type {
    ($($(#[$meta:meta])* $name:ident),+ $(,)?) => {$(
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
        #[serde(transparent)]
        pub struct $name(pub Uuid);

        impl $name {
            /// A fresh, time-ordered id (UUIDv7), so ids sort roughly by creation.
            pub fn new() -> Self { Self(Uuid::now_v7()) }
        }

        impl Default for $name {
            fn default() -> Self { Self::new() }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result { self.0.fmt(f) }
        }

        impl std::str::FromStr for $name {
            type Err = uuid::Error;
            fn from_str(s: &str) -> Result<Self, Self::Err> { Uuid::parse_str(s).map(Self) }
        }
    )+};
}

id_type!(
    /// A workspace (a team's board).
    WorkspaceId,
    /// A person who can sign in.
    UserId,
    /// A browser session.
    SessionId,
    /// An API token.
    TokenId,
    /// An issue.
    IssueId,
    /// A comment on an issue.
    CommentId,
    /// An agent profile.
    AgentId,
    /// A skill.
    SkillId,
    /// A runner (embedded or remote).
    RunnerId,
    /// A workspace's runner token (the credential `muster runner` presents, from MUSTER_RUNNER_TOKEN).
    RunnerTokenId,
    /// One attempt of one agent on one issue.
    RunId,
    /// Something that needs a person's attention.
    InboxItemId,
    /// A line of an issue's activity trail.
    ActivityId,
    /// A pending invitation of an existing account to a workspace.
    InvitationId,
    /// A workspace's connection to a forge project.
    ForgeConnectionId,
    /// A pull request Muster opened on a forge.
    PullRequestId,
    /// A named team of agents.
    EnsembleId,
    /// One issue taken by an ensemble (its candidates are runs).
    EnsembleRunId,
    /// A project: issues grouped under a name, with their own repository.
    ProjectId,
    /// A planner's proposed tree of sub-issues, waiting for a person's review.
    ProposalId,
);
