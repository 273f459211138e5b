//! Workspaces, users, members and credentials.

use chrono::{DateTime, Utc};

use super::{
    InvitationId, RunId, SessionId, TokenId, UserId, ValidationError, WorkspaceId, bounded_text,
    string_enum,
};

/// A lowercase identifier: `[a-z0-9-]`, 1–64 characters, not starting or ending with `-`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(transparent)]
pub struct Slug(String);

impl Slug {
    /// Longest accepted slug.
    pub const MAX_LEN: usize = 64;

    /// Validates `raw` as a slug for `field`.
    pub fn parse_field(field: &'static str, raw: &str) -> Result<Self, ValidationError> {
        let s = raw.trim();
        if s.is_empty() {
            return Err(ValidationError::new(field, "must not be empty"));
        }
        if s.len() > Self::MAX_LEN {
            return Err(ValidationError::new(
                field,
                format!("must be at most {} characters", Self::MAX_LEN),
            ));
        }
        if let Some(bad) = s
            .chars()
            .find(|c| !(c.is_ascii_lowercase() || c.is_ascii_digit() || *c == '-'))
        {
            return Err(ValidationError::new(
                field,
                format!("may contain only a-z, 0-9 and '-' (found {bad:?})"),
            ));
        }
        if s.starts_with('-') || s.ends_with('-') {
            return Err(ValidationError::new(
                field,
                "must not start or end with '-'",
            ));
        }
        Ok(Self(s.to_owned()))
    }

    /// Validates `raw` as the `slug` field.
    pub fn parse(raw: &str) -> Result<Self, ValidationError> {
        Self::parse_field("slug", raw)
    }

    /// The slug text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Display for Slug {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// The letters before an issue number: `MUS` in `MUS-42`. 2–10 ASCII uppercase letters.
#[derive(Debug, Clone, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(transparent)]
pub struct IssuePrefix(String);

impl IssuePrefix {
    /// Validates an issue prefix; lowercase input is upper-cased.
    pub fn parse(raw: &str) -> Result<Self, ValidationError> {
        let s = raw.trim().to_ascii_uppercase();
        if !(2..=10).contains(&s.len()) || !s.chars().all(|c| c.is_ascii_uppercase()) {
            return Err(ValidationError::new(
                "issue_prefix",
                "must be 2 to 10 letters A-Z (e.g. MUS)",
            ));
        }
        Ok(Self(s))
    }

    /// The prefix text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// An email address, trimmed and lower-cased; checked for one `@` with text on both sides.
#[derive(Debug, Clone, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(transparent)]
pub struct Email(String);

impl Email {
    /// Validates an email address.
    pub fn parse(raw: &str) -> Result<Self, ValidationError> {
        let s = bounded_text("email", raw, 1, 254)?.to_lowercase();
        match s.split_once('@') {
            Some((local, domain))
                if !local.is_empty()
                    && !domain.is_empty()
                    && !domain.contains('@')
                    && !s.chars().any(char::is_whitespace) =>
            {
                Ok(Self(s))
            }
            _ => Err(ValidationError::new(
                "email",
                "must look like name@example.com",
            )),
        }
    }

    /// The address.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

string_enum!(
    /// What a member may do in a workspace.
    Role, "role" { Owner => "owner", Admin => "admin", Member => "member" }
);

impl Role {
    /// Owners and admins manage members, agents and tokens.
    pub fn can_manage(self) -> bool {
        matches!(self, Role::Owner | Role::Admin)
    }
}

/// Input for a new workspace.
#[derive(Debug, Clone)]
pub struct NewWorkspace {
    /// Display name.
    pub name: String,
    /// URL slug, unique.
    pub slug: Slug,
    /// Issue key prefix.
    pub issue_prefix: IssuePrefix,
}

impl NewWorkspace {
    /// Validates a workspace name, slug and prefix.
    pub fn parse(name: &str, slug: &str, prefix: &str) -> Result<Self, ValidationError> {
        Ok(Self {
            name: bounded_text("name", name, 1, 100)?,
            slug: Slug::parse(slug)?,
            issue_prefix: IssuePrefix::parse(prefix)?,
        })
    }
}

/// A team's board.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Workspace {
    pub id: WorkspaceId,
    pub name: String,
    pub slug: Slug,
    pub issue_prefix: IssuePrefix,
    /// The last issue number handed out.
    pub issue_counter: i64,
    /// Local git repository that runs get worktrees of, if any.
    pub repo_path: Option<String>,
    pub created_at: DateTime<Utc>,
    /// Loop guard: how deep a chain of agents mentioning agents may go (a person's mention is depth 0).
    pub mention_depth_limit: i32,
    /// Loop guard: how many agent-triggered runs (replies, mentions) an issue may get in one hour.
    pub agent_runs_per_issue_per_hour: i32,
    /// The check command ensembles run in each candidate's worktree unless they name their own.
    pub check: Option<super::CheckSpec>,
    /// The hosts every agent's runs may reach through the egress proxy (besides each agent's own list),
    /// unless the agent has no network.
    pub egress_hosts: Vec<super::HostPattern>,
}

/// Input for a new user; the password arrives already hashed.
#[derive(Clone)]
pub struct NewUser {
    pub email: Email,
    pub display_name: String,
    /// An argon2 PHC string, never the password itself.
    pub password_hash: String,
}

impl std::fmt::Debug for NewUser {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NewUser")
            .field("email", &self.email)
            .field("display_name", &self.display_name)
            .field("password_hash", &"[redacted]")
            .finish()
    }
}

/// A person who can sign in.
#[derive(Clone, PartialEq, serde::Serialize)]
pub struct User {
    pub id: UserId,
    pub email: Email,
    pub display_name: String,
    #[serde(skip)]
    pub password_hash: String,
    pub created_at: DateTime<Utc>,
}

impl std::fmt::Debug for User {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("User")
            .field("id", &self.id)
            .field("email", &self.email)
            .field("display_name", &self.display_name)
            .finish_non_exhaustive()
    }
}

/// A user's membership of a workspace.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Member {
    pub workspace_id: WorkspaceId,
    pub user: User,
    pub role: Role,
    pub joined_at: DateTime<Utc>,
}

/// An existing account asked to join a workspace. The membership exists only once the account accepts;
/// until then (and after `expires_at`) it grants nothing.
#[derive(Debug, Clone, PartialEq)]
pub struct Invitation {
    pub id: InvitationId,
    pub workspace_id: WorkspaceId,
    pub workspace_name: String,
    pub workspace_slug: Slug,
    /// The invited account.
    pub user: User,
    /// The role the account gets on accepting.
    pub role: Role,
    /// Who invited (gone when that account was deleted).
    pub invited_by: Option<UserId>,
    pub invited_by_name: Option<String>,
    pub created_at: DateTime<Utc>,
    pub expires_at: DateTime<Utc>,
}

/// Input for inviting an existing account; inviting it again refreshes the pending invitation.
#[derive(Debug, Clone, PartialEq)]
pub struct NewInvitation {
    pub workspace_id: WorkspaceId,
    pub user_id: UserId,
    pub role: Role,
    pub invited_by: UserId,
    pub expires_at: DateTime<Utc>,
}

/// A new browser session; only the hash of its secret is stored.
#[derive(Debug, Clone)]
pub struct NewSession {
    pub user_id: UserId,
    pub token_hash: String,
    pub expires_at: DateTime<Utc>,
}

/// A stored browser session.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Session {
    pub id: SessionId,
    pub user_id: UserId,
    pub created_at: DateTime<Utc>,
    pub expires_at: DateTime<Utc>,
}

/// A new API token; only its hash and a display prefix are stored.
#[derive(Debug, Clone)]
pub struct NewApiToken {
    pub workspace_id: WorkspaceId,
    pub user_id: UserId,
    pub name: String,
    /// The first characters of the token, shown in lists so a person can tell tokens apart.
    pub prefix: String,
    pub token_hash: String,
    /// Set for a token that is valid only for one run (handed to the agent of that run).
    pub run_id: Option<RunId>,
}

/// A stored API token (never the secret).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct ApiToken {
    pub id: TokenId,
    pub workspace_id: WorkspaceId,
    pub user_id: UserId,
    pub name: String,
    pub prefix: String,
    pub run_id: Option<RunId>,
    pub created_at: DateTime<Utc>,
    pub last_used_at: Option<DateTime<Utc>>,
    pub revoked_at: Option<DateTime<Utc>>,
}
