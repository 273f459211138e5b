//! Storage: one [`Store`] trait, made of one sub-trait of use-case methods per area, implemented for
//! PostgreSQL and SQLite.
//!
//! Only this module names sqlx query APIs. Each area has its own file with its trait, its rows and SQL,
//! and a small macro that writes its impl: `people.rs` ([`PeopleStore`]: workspaces, users, members,
//! invitations), `sessions.rs` ([`SessionStore`]: sessions, API tokens), `issues.rs` ([`IssueStore`]:
//! issues, comments, activity), `agents.rs` ([`AgentStore`]: agents, skills), `runners.rs`
//! ([`RunnerStore`]: runner tokens, runners), `runs.rs` ([`RunStore`]: runs, claims, leases, indicators),
//! `run_log.rs` ([`RunLogStore`]: run events), `inbox.rs` ([`InboxStore`]), `ensembles.rs`
//! ([`EnsembleStore`]), `forges.rs` ([`ForgeStore`]: forge connections, pull requests, deliveries), `plans.rs` ([`PlanStore`]: relations,
//! sub-issues, fan-in), `projects.rs` ([`ProjectStore`]), `proposals.rs` ([`ProposalStore`]: the planner's proposals and their approval), `search.rs` ([`SearchStore`]: full-text issue search), `lists.rs` ([`ListStore`]: the issue list's pages and saved views) and `usage.rs` ([`UsageStore`]: usage, caps, prices, metrics). `common.rs` holds
//! what they share and `impl_store!`, which a backend invokes once to get the infrastructure part of
//! [`Store`] and every area's impl, each expanded for that backend so it is fully typed. What differs —
//! how a write transaction starts, how a run is claimed, how run events are inserted in bulk, a few
//! dialect fragments — lives in `postgres.rs` and `sqlite.rs`.
//!
//! Invariant: a method that writes more than one row does it in one transaction, so a failure leaves
//! nothing half-written.
//!
//! On a `dyn Store` every area's methods resolve as before (a trait object has its supertraits' methods);
//! naming one by path, or calling it on a concrete store, needs its area trait in scope:
//! `use crate::store::prelude::*;`. The conformance suite in `tests/it/store_conformance/` runs every
//! method on both backends.

mod agents;
mod codec;
mod common;
mod ensembles;
pub mod foreign;
mod forges;
mod inbox;
mod issues;
mod lists;
mod people;
mod plans;
mod postgres;
mod projects;
mod proposals;
mod rows;
mod run_log;
mod runners;
mod runs;
mod search;
mod sessions;
mod sqlite;
pub mod testing;
mod usage;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;

pub use agents::AgentStore;
pub use ensembles::EnsembleStore;
pub use forges::{ForgeSettings, ForgeStore};
pub use inbox::{InboxEntry, InboxStore};
pub use issues::IssueStore;
pub use lists::ListStore;
pub use people::PeopleStore;
pub use plans::PlanStore;
pub use projects::ProjectStore;
pub use proposals::ProposalStore;
pub use run_log::{LeasedEvents, RunLogStore};
pub use runners::RunnerStore;
pub use runs::{ClaimScope, RunFilter, RunStore};
pub use search::SearchStore;
pub use sessions::SessionStore;
pub use usage::UsageStore;

/// The store's traits, for calling its methods: `use crate::store::prelude::*;` (`muster::store::prelude`
/// outside the crate).
pub mod prelude {
    pub use super::{
        AgentStore, EnsembleStore, ForgeStore, InboxStore, IssueStore, ListStore, PeopleStore,
        PlanStore, ProjectStore, ProposalStore, RunLogStore, RunStore, RunnerStore, SearchStore,
        SessionStore, Store, UsageStore,
    };
}

/// What a store method can fail with; callers branch on the variant.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The row asked for does not exist (or is not in the caller's workspace).
    #[error("not found")]
    NotFound,
    /// A uniqueness or reference rule refused the write; `constraint` names it as in the migrations
    /// (`agent_workspace_name_key`, `run_one_active_key`, `foreign_key`, `last_owner`, `run_lease`, …).
    #[error("conflicts with existing data ({constraint})")]
    Conflict { constraint: String },
    /// Anything else: connection loss, a corrupt row, a bug.
    #[error(transparent)]
    Other(#[from] anyhow::Error),
}

/// The Postgres `LISTEN`/`NOTIFY` channel replicas wake each other on.
pub const NOTIFY_CHANNEL: &str = "muster";

/// `Result` with the store's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    pub(crate) fn conflict(constraint: &str) -> Self {
        Error::Conflict {
            constraint: constraint.to_owned(),
        }
    }
}

impl From<sqlx::Error> for Error {
    fn from(e: sqlx::Error) -> Self {
        match e {
            sqlx::Error::RowNotFound => Error::NotFound,
            sqlx::Error::Database(db) => match db.kind() {
                sqlx::error::ErrorKind::UniqueViolation => Error::Conflict {
                    constraint: db
                        .constraint()
                        .map(str::to_owned)
                        .unwrap_or_else(|| sqlite_unique_constraint(db.message())),
                },
                sqlx::error::ErrorKind::ForeignKeyViolation => Error::conflict("foreign_key"),
                // SQLite reports `on delete restrict` as SQLITE_CONSTRAINT_TRIGGER, not as a foreign key.
                _ if db.message().contains("FOREIGN KEY constraint failed") => {
                    Error::conflict("foreign_key")
                }
                _ => Error::Other(anyhow::Error::new(sqlx::Error::Database(db))),
            },
            other => Error::Other(anyhow::Error::new(other)),
        }
    }
}

/// SQLite names the columns of a unique violation, not the constraint; map them to the names that the
/// Postgres migration gives, so callers see the same error on both backends.
fn sqlite_unique_constraint(message: &str) -> String {
    let columns = message
        .rsplit("constraint failed: ")
        .next()
        .unwrap_or(message);
    let name = match columns {
        "workspace.slug" => "workspace_slug_key",
        "app_user.email" => "app_user_email_key",
        "member.workspace_id, member.user_id" => "member_pkey",
        "session.token_hash" => "session_token_hash_key",
        "agent.workspace_id, agent.name" => "agent_workspace_name_key",
        "issue.workspace_id, issue.number" => "issue_workspace_number_key",
        "runner.name" => "runner_name_key",
        "runner.token_id, runner.name" => "runner_token_name_key",
        "runner_token.token_hash" => "runner_token_token_hash_key",
        "run.issue_id, run.agent_id" => "run_one_active_key",
        "run_event.run_id, run_event.seq" => "run_event_pkey",
        "api_token.token_hash" => "api_token_token_hash_key",
        "skill.workspace_id, skill.slug" => "skill_workspace_slug_key",
        "skill_file.skill_id, skill_file.path" => "skill_file_pkey",
        "agent_skill.agent_id, agent_skill.skill_id" => "agent_skill_pkey",
        "invitation.workspace_id, invitation.user_id" => "invitation_workspace_user_key",
        "ensemble.workspace_id, ensemble.name" => "ensemble_workspace_name_key",
        "ensemble_run.issue_id, ensemble_run.number" => "ensemble_run_issue_number_key",
        "forge_connection.workspace_id" => "forge_connection_workspace_key",
        "issue_relation.from_issue_id, issue_relation.to_issue_id, issue_relation.kind" => {
            "issue_relation_pkey"
        }
        "project.workspace_id, project.key" => "project_key_key",
        "project.workspace_id, project.name" => "project_name_key",
        "saved_view.workspace_id, saved_view.name" => "saved_view_pkey",
        "plan_proposal.issue_id" => "plan_proposal_pending_key",
        "pull_request.forge_connection_id, pull_request.number" => {
            "pull_request_connection_number_key"
        }
        other => return other.to_owned(),
    };
    name.to_owned()
}

/// Which database a store runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    Postgres,
    Sqlite,
}

/// A parsed `--database-url`: the scheme picks the backend.
#[derive(Clone, PartialEq, Eq)]
pub enum DatabaseUrl {
    /// `sqlite://PATH`: an embedded database file, created if missing.
    Sqlite(PathBuf),
    /// `postgres://…` or `postgresql://…`.
    Postgres(String),
}

impl DatabaseUrl {
    /// Parses a URL; any scheme but `sqlite` and `postgres` is an error naming both.
    pub fn parse(raw: &str) -> anyhow::Result<Self> {
        let raw = raw.trim();
        if let Some(path) = raw
            .strip_prefix("sqlite://")
            .or_else(|| raw.strip_prefix("sqlite:"))
        {
            let path = path.split('?').next().unwrap_or(path);
            anyhow::ensure!(
                !path.is_empty(),
                "database URL {raw:?} names no file; use sqlite:///path/to/muster.db"
            );
            return Ok(DatabaseUrl::Sqlite(PathBuf::from(path)));
        }
        if raw.starts_with("postgres://") || raw.starts_with("postgresql://") {
            return Ok(DatabaseUrl::Postgres(raw.to_owned()));
        }
        let scheme = raw.split_once("://").map_or(raw, |(s, _)| s);
        anyhow::bail!(
            "unsupported database URL scheme {scheme:?}: use sqlite://PATH (embedded, the default) or postgres://USER@HOST/DB"
        )
    }

    /// The URL with any password replaced by `***`, for logs and error messages.
    pub fn redacted(&self) -> String {
        match self {
            DatabaseUrl::Sqlite(p) => format!("sqlite://{}", p.display()),
            DatabaseUrl::Postgres(url) => redact_password(url),
        }
    }
}

impl std::fmt::Debug for DatabaseUrl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.redacted())
    }
}

fn redact_password(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_owned();
    };
    let Some((userinfo, host)) = rest.split_once('@') else {
        return url.to_owned();
    };
    match userinfo.split_once(':') {
        Some((user, _)) => format!("{scheme}://{user}:***@{host}"),
        None => url.to_owned(),
    }
}

/// Pool settings, set explicitly rather than left to driver defaults.
#[derive(Debug, Clone, Copy)]
pub struct PoolOptions {
    pub max_connections: u32,
    pub acquire_timeout: Duration,
}

impl Default for PoolOptions {
    fn default() -> Self {
        Self {
            max_connections: 10,
            acquire_timeout: Duration::from_secs(5),
        }
    }
}

/// Connects to the database named by `url`, creating a SQLite file if needed, and applies the embedded
/// migrations. Errors say what failed and how to fix it.
pub async fn connect(url: &DatabaseUrl, options: PoolOptions) -> anyhow::Result<Arc<dyn Store>> {
    Ok(match url {
        DatabaseUrl::Sqlite(path) => {
            let store = sqlite::SqliteStore::connect(path, options).await?;
            store.migrate().await?;
            Arc::new(store)
        }
        // Migrated on the connection that checked the server, before the pool opens its own.
        DatabaseUrl::Postgres(raw) => Arc::new(postgres::PgStore::connect(raw, options).await?),
    })
}

/// Every storage use-case Muster has: the infrastructure here, the use-cases in one sub-trait per area
/// (see the module docs). Transactions begin and commit inside each method.
#[async_trait]
pub trait Store:
    Send
    + Sync
    + 'static
    + PeopleStore
    + SessionStore
    + IssueStore
    + AgentStore
    + RunnerStore
    + RunStore
    + RunLogStore
    + InboxStore
    + EnsembleStore
    + UsageStore
    + ForgeStore
    + PlanStore
    + ProposalStore
    + ProjectStore
    + SearchStore
    + ListStore
{
    /// Which database this is.
    fn backend(&self) -> Backend;
    /// Checks that the database answers (readiness).
    async fn ping(&self) -> Result<()>;
    /// Applies pending embedded migrations; refuses a database migrated by a newer binary.
    async fn migrate(&self) -> anyhow::Result<()>;
    /// Closes the pool, waiting for connections to be returned.
    async fn close(&self);
    /// Sends `message` (ids only, never payloads) to every replica listening on this database: Postgres
    /// `NOTIFY` on [`NOTIFY_CHANNEL`]; a no-op on SQLite, where one process is the only replica.
    async fn notify(&self, message: &str) -> Result<()>;
    /// The messages sent with [`Store::notify`] by any replica (this one included), in order; `None` on
    /// SQLite. A lost connection is re-established (messages sent meanwhile are missed).
    async fn listen(&self) -> anyhow::Result<Option<tokio::sync::mpsc::Receiver<String>>>;
}
