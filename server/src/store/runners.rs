//! Runner tokens and runners: the credentials remote runners register with, and the runners themselves
//! (embedded and remote) with their heartbeats.

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use sqlx::types::Json;

use super::Result;
use crate::domain::{
    NewRunnerToken, Runner, RunnerId, RunnerName, RunnerToken, RunnerTokenId, UserId, WorkspaceId,
};

/// The runner use-cases: runner tokens, registration and heartbeats.
#[async_trait]
pub trait RunnerStore: Send + Sync {
    /// Stores a runner token (only its hash and display prefix).
    async fn create_runner_token(&self, new: &NewRunnerToken) -> Result<RunnerToken>;
    /// A workspace's runner tokens, newest first, revoked ones included (with `revoked_at` set).
    async fn list_runner_tokens(&self, ws: WorkspaceId) -> Result<Vec<RunnerToken>>;
    /// Revokes a runner token of `ws` at `now` (`NotFound` for another workspace's); revoking again keeps
    /// the first `revoked_at`.
    async fn revoke_runner_token(
        &self,
        ws: WorkspaceId,
        id: RunnerTokenId,
        now: DateTime<Utc>,
    ) -> Result<RunnerToken>;
    /// The unrevoked runner token with this hash, with `last_used_at` set to `now` (`NotFound` when the
    /// hash is unknown or the token revoked).
    async fn use_runner_token(&self, token_hash: &str, now: DateTime<Utc>) -> Result<RunnerToken>;
    /// Registers an embedded runner by its globally unique name, or refreshes its version, detected CLIs
    /// and heartbeat.
    async fn register_runner(
        &self,
        name: &str,
        version: &str,
        detected: &serde_json::Value,
    ) -> Result<Runner>;
    /// Registers a remote runner of `token`'s workspace by (token, name), or refreshes its version,
    /// detected CLIs and heartbeat: re-registering with the same token and name returns the same runner,
    /// so a reconnected runner keeps its identity and runs. `NotFound` when the token is revoked.
    async fn register_remote_runner(
        &self,
        token: &RunnerToken,
        name: &RunnerName,
        version: &str,
        detected: &serde_json::Value,
        now: DateTime<Utc>,
    ) -> Result<Runner>;
    /// Records a runner's heartbeat (`NotFound` for an unknown runner).
    async fn runner_heartbeat(&self, runner: RunnerId, now: DateTime<Utc>) -> Result<()>;
    /// A workspace's remote runners and every embedded runner, most recent heartbeat first.
    async fn list_runners(&self, ws: WorkspaceId) -> Result<Vec<Runner>>;
    /// A runner by id.
    async fn get_runner(&self, id: RunnerId) -> Result<Runner>;
}

#[derive(sqlx::FromRow)]
pub(super) struct RunnerRow {
    runner_id: RunnerId,
    name: String,
    version: String,
    detected: Json<serde_json::Value>,
    last_heartbeat_at: DateTime<Utc>,
    created_at: DateTime<Utc>,
    workspace_id: Option<WorkspaceId>,
    token_id: Option<RunnerTokenId>,
    revoked: bool,
}

impl From<RunnerRow> for Runner {
    fn from(r: RunnerRow) -> Self {
        Runner {
            id: r.runner_id,
            name: r.name,
            version: r.version,
            detected: r.detected.0,
            last_heartbeat_at: r.last_heartbeat_at,
            created_at: r.created_at,
            workspace_id: r.workspace_id,
            token_id: r.token_id,
            revoked: r.revoked,
        }
    }
}

#[derive(sqlx::FromRow)]
pub(super) struct RunnerTokenRow {
    runner_token_id: RunnerTokenId,
    workspace_id: WorkspaceId,
    name: String,
    prefix: String,
    created_by: Option<UserId>,
    created_at: DateTime<Utc>,
    last_used_at: Option<DateTime<Utc>>,
    revoked_at: Option<DateTime<Utc>>,
}

impl From<RunnerTokenRow> for RunnerToken {
    fn from(r: RunnerTokenRow) -> Self {
        RunnerToken {
            id: r.runner_token_id,
            workspace_id: r.workspace_id,
            name: r.name,
            prefix: r.prefix,
            created_by: r.created_by,
            created_at: r.created_at,
            last_used_at: r.last_used_at,
            revoked_at: r.revoked_at,
        }
    }
}

macro_rules! runner_token_cols { () => {
    "runner_token_id, workspace_id, name, prefix, created_by, created_at, last_used_at, revoked_at"
} }
pub(super) use runner_token_cols;

/// A runner with `revoked` from its token (an embedded runner has none, so is never revoked).
macro_rules! runner_select { () => {
    "select r.runner_id, r.name, r.version, r.detected, r.last_heartbeat_at, r.created_at, r.workspace_id, \
     r.token_id, (t.revoked_at is not null) as revoked \
     from runner r left join runner_token t on t.runner_token_id = r.token_id"
} }
pub(super) use runner_select;

/// Writes `impl RunnerStore for $store` on database `$db`; `impl_store!` expands it once per backend.
macro_rules! impl_runners_store {
    ($store:ty, $db:ty) => {
        const _: () = {
            use $crate::domain::*;
            use $crate::store::Result;
            use $crate::store::rows::*;
            use $crate::store::runners::*;
            use chrono::{DateTime, Utc};

            #[async_trait::async_trait]
            impl RunnerStore for $store {
                async fn create_runner_token(&self, new: &NewRunnerToken) -> Result<RunnerToken> {
                    let row = sqlx::query_as::<$db, RunnerTokenRow>(concat!(
                        "insert into runner_token (runner_token_id, workspace_id, name, prefix, token_hash, created_by, ",
                        "created_at) values ($1, $2, $3, $4, $5, $6, $7) returning ", runner_token_cols!()))
                        .bind(RunnerTokenId::new()).bind(new.workspace_id).bind(&new.name).bind(&new.prefix)
                        .bind(&new.token_hash).bind(new.created_by).bind(now())
                        .fetch_one(&self.pool).await?;
                    Ok(row.into())
                }

                async fn list_runner_tokens(&self, ws: WorkspaceId) -> Result<Vec<RunnerToken>> {
                    let rows = sqlx::query_as::<$db, RunnerTokenRow>(concat!(
                        "select ", runner_token_cols!(), " from runner_token where workspace_id = $1 ",
                        "order by created_at desc, runner_token_id desc"))
                        .bind(ws).fetch_all(&self.pool).await?;
                    Ok(rows.into_iter().map(Into::into).collect())
                }

                async fn revoke_runner_token(&self, ws: WorkspaceId, id: RunnerTokenId, now: DateTime<Utc>) -> Result<RunnerToken> {
                    let row = sqlx::query_as::<$db, RunnerTokenRow>(concat!(
                        "update runner_token set revoked_at = coalesce(revoked_at, $3) ",
                        "where runner_token_id = $1 and workspace_id = $2 returning ", runner_token_cols!()))
                        .bind(id).bind(ws).bind(micros(now)).fetch_one(&self.pool).await?;
                    Ok(row.into())
                }

                async fn use_runner_token(&self, token_hash: &str, now: DateTime<Utc>) -> Result<RunnerToken> {
                    let row = sqlx::query_as::<$db, RunnerTokenRow>(concat!(
                        "update runner_token set last_used_at = $2 where token_hash = $1 and revoked_at is null ",
                        "returning ", runner_token_cols!()))
                        .bind(token_hash).bind(micros(now)).fetch_one(&self.pool).await?;
                    Ok(row.into())
                }

                async fn register_runner(&self, name: &str, version: &str, detected: &serde_json::Value) -> Result<Runner> {
                    let now = now();
                    let id = sqlx::query_scalar::<$db, RunnerId>(
                        "insert into runner (runner_id, name, version, detected, last_heartbeat_at, created_at) \
                         values ($1, $2, $3, $4, $5, $5) on conflict (name) where token_id is null do update set \
                         version = excluded.version, detected = excluded.detected, \
                         last_heartbeat_at = excluded.last_heartbeat_at returning runner_id")
                        .bind(RunnerId::new()).bind(name).bind(version).bind(sqlx::types::Json(detected)).bind(now)
                        .fetch_one(&self.pool).await?;
                    self.get_runner(id).await
                }

                async fn register_remote_runner(
                    &self, token: &RunnerToken, name: &RunnerName, version: &str, detected: &serde_json::Value,
                    now: DateTime<Utc>,
                ) -> Result<Runner> {
                    let now = micros(now);
                    let mut tx = self.begin_write().await?;
                    // The workspace is the stored token's, and a token revoked since it was used registers nothing.
                    let ws = sqlx::query_scalar::<$db, WorkspaceId>(
                        "select workspace_id from runner_token where runner_token_id = $1 and revoked_at is null")
                        .bind(token.id).fetch_one(&mut *tx).await?;
                    let id = sqlx::query_scalar::<$db, RunnerId>(
                        "insert into runner (runner_id, name, version, detected, last_heartbeat_at, created_at, \
                         workspace_id, token_id) values ($1, $2, $3, $4, $5, $5, $6, $7) \
                         on conflict (token_id, name) do update set version = excluded.version, \
                         detected = excluded.detected, last_heartbeat_at = excluded.last_heartbeat_at returning runner_id")
                        .bind(RunnerId::new()).bind(name.as_str()).bind(version).bind(sqlx::types::Json(detected))
                        .bind(now).bind(ws).bind(token.id)
                        .fetch_one(&mut *tx).await?;
                    tx.commit().await?;
                    self.get_runner(id).await
                }

                async fn runner_heartbeat(&self, runner: RunnerId, now: DateTime<Utc>) -> Result<()> {
                    let done = sqlx::query::<$db>("update runner set last_heartbeat_at = $2 where runner_id = $1")
                        .bind(runner).bind(micros(now)).execute(&self.pool).await?;
                    if done.rows_affected() == 0 { return Err(Error::NotFound); }
                    Ok(())
                }

                async fn list_runners(&self, ws: WorkspaceId) -> Result<Vec<Runner>> {
                    let rows = sqlx::query_as::<$db, RunnerRow>(concat!(runner_select!(),
                        " where r.workspace_id = $1 or r.workspace_id is null ",
                        "order by r.last_heartbeat_at desc, r.runner_id"))
                        .bind(ws).fetch_all(&self.pool).await?;
                    Ok(rows.into_iter().map(Into::into).collect())
                }

                async fn get_runner(&self, id: RunnerId) -> Result<Runner> {
                    let row = sqlx::query_as::<$db, RunnerRow>(concat!(runner_select!(), " where r.runner_id = $1"))
                        .bind(id).fetch_one(&self.pool).await?;
                    Ok(row.into())
                }
            }
        };
    };
}
pub(super) use impl_runners_store;
