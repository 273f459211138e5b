//! Runners and their credentials: runner names, and the workspace-scoped tokens remote runners present.
//!
//! A remote runner (`MUSTER_RUNNER_TOKEN=T muster runner --name N`) is identified by its token and its name, so a
//! restarted or reconnected runner keeps its id and the runs it holds; the server's embedded runners have
//! no token and a globally unique name. Tokens are stored hashed, like API tokens: the secret is shown
//! once and never kept.

use chrono::{DateTime, Utc};

use super::{RunnerTokenId, UserId, ValidationError, WorkspaceId};

/// A runner's name: 1–64 of `A-Z a-z 0-9 - _ .`, as typed on `muster runner --name` and listed in an
/// agent's runner binding.
#[derive(Debug, Clone, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(transparent)]
pub struct RunnerName(String);

impl RunnerName {
    /// Validates a runner name (not trimmed: a name with spaces is refused, never silently changed).
    pub fn parse(raw: &str) -> Result<Self, ValidationError> {
        Self::parse_field("name", raw)
    }

    /// Like [`RunnerName::parse`], with errors about `field` (an agent's `runners` list, say).
    pub fn parse_field(field: &'static str, raw: &str) -> Result<Self, ValidationError> {
        let len = raw.chars().count();
        if len == 0 {
            return Err(ValidationError::new(
                field,
                "a runner name must not be empty",
            ));
        }
        if len > 64 {
            return Err(ValidationError::new(
                field,
                format!("runner name {raw:?} is longer than 64 characters ({len})"),
            ));
        }
        if let Some(bad) = raw
            .chars()
            .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.')))
        {
            return Err(ValidationError::new(
                field,
                format!(
                    "runner name {raw:?} may contain only letters, digits, '-', '_' and '.' (found {bad:?})"
                ),
            ));
        }
        Ok(Self(raw.to_owned()))
    }

    /// The name.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Display for RunnerName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// A new runner token; only its hash and a display prefix are stored.
#[derive(Debug, Clone)]
pub struct NewRunnerToken {
    pub workspace_id: WorkspaceId,
    /// What the token is for ("gpu box"), shown in the list.
    pub name: String,
    /// The first characters of the token, shown in lists so a person can tell tokens apart.
    pub prefix: String,
    pub token_hash: String,
    /// The owner or admin who created it.
    pub created_by: UserId,
}

/// A stored runner token (never the secret).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct RunnerToken {
    pub id: RunnerTokenId,
    pub workspace_id: WorkspaceId,
    pub name: String,
    pub prefix: String,
    /// Who created it; `None` once that account is deleted (the token keeps working).
    pub created_by: Option<UserId>,
    pub created_at: DateTime<Utc>,
    pub last_used_at: Option<DateTime<Utc>>,
    /// Set once revoked: from then on the token authenticates nothing, and its runners show as revoked.
    pub revoked_at: Option<DateTime<Utc>>,
}

impl RunnerToken {
    /// Whether the token was revoked.
    pub fn is_revoked(&self) -> bool {
        self.revoked_at.is_some()
    }
}
