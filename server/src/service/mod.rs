//! Use-cases shared by the HTML pages, the JSON API and (through the API) the CLI: raw input is validated
//! here into domain types, permissions are checked, the store is called, and the hub is told.

pub mod agents;
pub mod comments;
pub mod ensembles;
mod error;
pub mod forges;
pub mod invitations;
pub mod issues;
pub mod lists;
pub mod members;
pub mod plans;
pub mod projects;
pub mod proposals;
pub mod runners;
pub mod runs;
pub mod runtimes;
pub mod skills;
pub mod thread;
pub mod tokens;
pub mod usage;
pub mod workspace;

use crate::domain::{Role, User, Workspace};
use crate::engine::Engine;
pub use error::{Error, FieldMessages, Result};

/// Who is asking, in which workspace, with which role.
#[derive(Debug, Clone)]
pub struct Caller {
    pub ws: Workspace,
    pub user: User,
    pub role: Role,
    /// Set when the caller is an agent using its run's token: it acts as that agent, on that issue only.
    pub run: Option<RunScope>,
}

/// What a run-scoped token may touch, and who it acts as.
#[derive(Debug, Clone)]
pub struct RunScope {
    pub run_id: crate::domain::RunId,
    pub agent_id: crate::domain::AgentId,
    pub issue_id: crate::domain::IssueId,
    pub issue_key: crate::domain::IssueKey,
    /// The run is a candidate or the reviewer of an ensemble run: it works blind, so it may read its
    /// issue but write nothing there (a comment or a move would reach the other candidates).
    pub in_ensemble: bool,
    /// The run's token as the agent sent it: redacted from what the agent writes.
    pub token: RunSecret,
}

/// A run token's plain value; never shown by `Debug`.
#[derive(Clone, Default)]
pub struct RunSecret(pub String);

impl std::fmt::Debug for RunSecret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("RunSecret([redacted])")
    }
}

impl RunScope {
    /// The refusal a run token gets for anything outside its issue (or, in an ensemble, for any write).
    pub fn refusal(&self) -> Error {
        self.refusal_saying("")
    }

    /// [`RunScope::refusal`] followed by `more` (what it may do instead), when not empty.
    pub fn refusal_saying(&self, more: &str) -> Error {
        let message = if self.in_ensemble {
            format!(
                "this token belongs to run {}, part of an ensemble on issue {}: it may read that issue \
                 but not write to it (the candidates work blind)",
                self.run_id, self.issue_key
            )
        } else {
            format!(
                "this token belongs to run {} and may only act on issue {}",
                self.run_id, self.issue_key
            )
        };
        let message = if more.is_empty() {
            message
        } else {
            format!("{message}: {more}")
        };
        Error::refused("token", message)
    }
}

impl Caller {
    /// The caller as the writer of a comment or an issue, for what it triggers.
    pub fn writer(&self) -> crate::engine::triggers::Writer {
        crate::engine::triggers::Writer {
            user: self.user.id,
            run: self.run.as_ref().map(|r| (r.run_id, r.agent_id)),
        }
    }

    /// Who the caller's writes are recorded as: the run's agent for a run token, else the person.
    pub fn actor(&self) -> crate::domain::Actor {
        match &self.run {
            Some(scope) => crate::domain::CommentAuthor::Agent(scope.agent_id),
            None => crate::domain::CommentAuthor::User(self.user.id),
        }
    }

    /// Refuses callers who are not owners or admins.
    pub fn require_manager(&self) -> Result<()> {
        if let Some(scope) = &self.run {
            return Err(scope.refusal());
        }
        if self.role.can_manage() {
            Ok(())
        } else {
            Err(Error::Forbidden)
        }
    }
}

/// Collects per-field validation messages and turns them into one [`Error::Invalid`].
#[derive(Debug, Default)]
pub struct Problems(Vec<(&'static str, String)>);

impl Problems {
    /// Keeps the value, or records the error's field and message.
    pub fn take<T>(
        &mut self,
        result: std::result::Result<T, crate::domain::ValidationError>,
    ) -> Option<T> {
        match result {
            Ok(v) => Some(v),
            Err(e) => {
                self.0.push((e.field, e.message));
                None
            }
        }
    }

    /// Records a message for a field.
    pub fn add(&mut self, field: &'static str, message: impl Into<String>) {
        self.0.push((field, message.into()));
    }

    /// `Ok` when nothing was recorded, else one [`Error::Invalid`] with every message.
    pub fn finish(self) -> Result<()> {
        if self.0.is_empty() {
            Ok(())
        } else {
            Err(Error::invalid(self.0.iter().map(|(f, m)| (*f, m.clone()))))
        }
    }
}

/// Tells live subscribers that an issue changed.
pub fn announce(state: &Engine, caller: &Caller, key: &crate::domain::IssueKey) {
    state.hub.publish(
        crate::hub::Topic::Board(caller.ws.id),
        crate::hub::LiveEvent::IssueChanged(key.clone()),
    );
}
