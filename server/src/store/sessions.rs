//! Browser sessions and API tokens: signing in and out, password changes, and the tokens people and runs
//! call the API with (only their hashes are stored).

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use super::Result;
use super::rows::UserRow;
use crate::domain::{
    ApiToken, NewApiToken, NewSession, RunId, Session, SessionId, TokenId, User, UserId,
    WorkspaceId,
};

/// The sign-in use-cases: sessions and API tokens.
#[async_trait]
pub trait SessionStore: Send + Sync {
    /// Stores a browser session (only the hash of its secret).
    async fn create_session(&self, new: &NewSession) -> Result<Session>;
    /// The session with this secret hash and its user, if it has not expired by `now`.
    async fn session_user(&self, token_hash: &str, now: DateTime<Utc>) -> Result<(Session, User)>;
    /// Ends a session (logout). Ending an unknown session is not an error.
    async fn delete_session(&self, token_hash: &str) -> Result<()>;
    /// Sets a user's password hash and ends every session of theirs except `keep` (the one that made the
    /// change), in one transaction; returns the ended sessions' hashes (their live connections end too).
    /// `NotFound` for an unknown user.
    async fn change_password(
        &self,
        user: UserId,
        password_hash: &str,
        keep: Option<&str>,
    ) -> Result<Vec<String>>;
    /// Stores an API token (only its hash and display prefix).
    async fn create_api_token(&self, new: &NewApiToken) -> Result<ApiToken>;
    /// The unrevoked token with this hash, noting its use (at most once a minute).
    async fn use_api_token(&self, token_hash: &str, now: DateTime<Utc>) -> Result<ApiToken>;
    /// A user's own (non-run) tokens in a workspace, newest first, revoked ones included.
    async fn list_api_tokens(&self, ws: WorkspaceId, user: UserId) -> Result<Vec<ApiToken>>;
    /// Revokes one of a user's tokens (`NotFound` if it is not theirs or already revoked); returns its
    /// hash, which names the live connections opened with it.
    async fn revoke_api_token(&self, ws: WorkspaceId, user: UserId, id: TokenId) -> Result<String>;
    /// Revokes every token bound to `run` (when the run ends); returns the hashes of those that were live.
    async fn revoke_run_tokens(&self, run: RunId) -> Result<Vec<String>>;
}

#[derive(sqlx::FromRow)]
pub(super) struct SessionRow {
    session_id: SessionId,
    user_id: UserId,
    session_created_at: DateTime<Utc>,
    expires_at: DateTime<Utc>,
}

impl From<SessionRow> for Session {
    fn from(r: SessionRow) -> Self {
        Session {
            id: r.session_id,
            user_id: r.user_id,
            created_at: r.session_created_at,
            expires_at: r.expires_at,
        }
    }
}

#[derive(sqlx::FromRow)]
pub(super) struct SessionUserRow {
    #[sqlx(flatten)]
    pub(super) session: SessionRow,
    #[sqlx(flatten)]
    pub(super) user: UserRow,
}

#[derive(sqlx::FromRow)]
pub(super) struct ApiTokenRow {
    api_token_id: TokenId,
    workspace_id: WorkspaceId,
    user_id: UserId,
    name: String,
    prefix: String,
    run_id: Option<RunId>,
    created_at: DateTime<Utc>,
    last_used_at: Option<DateTime<Utc>>,
    revoked_at: Option<DateTime<Utc>>,
}

impl From<ApiTokenRow> for ApiToken {
    fn from(r: ApiTokenRow) -> Self {
        ApiToken {
            id: r.api_token_id,
            workspace_id: r.workspace_id,
            user_id: r.user_id,
            name: r.name,
            prefix: r.prefix,
            run_id: r.run_id,
            created_at: r.created_at,
            last_used_at: r.last_used_at,
            revoked_at: r.revoked_at,
        }
    }
}

macro_rules! token_cols { () => {
    "api_token_id, workspace_id, user_id, name, prefix, run_id, created_at, last_used_at, revoked_at"
} }
pub(super) use token_cols;

/// Writes `impl SessionStore for $store` on database `$db`; `impl_store!` expands it once per backend.
macro_rules! impl_sessions_store {
    ($store:ty, $db:ty) => {
        const _: () = {
            use $crate::domain::*;
            use $crate::store::Result;
            use $crate::store::rows::*;
            use $crate::store::sessions::*;

            #[async_trait::async_trait]
            impl SessionStore for $store {
                async fn create_session(&self, new: &NewSession) -> Result<Session> {
                    let row = sqlx::query_as::<$db, SessionRow>(
                        "insert into session (session_id, user_id, token_hash, created_at, expires_at) values ($1, $2, $3, $4, $5) \
                         returning session_id, user_id, created_at as session_created_at, expires_at")
                        .bind(SessionId::new()).bind(new.user_id).bind(&new.token_hash).bind(now()).bind(new.expires_at)
                        .fetch_one(&self.pool).await?;
                    Ok(row.into())
                }

                async fn session_user(&self, token_hash: &str, now: DateTime<Utc>) -> Result<(Session, User)> {
                    let row = sqlx::query_as::<$db, SessionUserRow>(concat!(
                        "select s.session_id, s.user_id, s.created_at as session_created_at, s.expires_at, ", user_cols!(),
                        " from session s join app_user u on u.user_id = s.user_id where s.token_hash = $1 and s.expires_at > $2"))
                        .bind(token_hash).bind(now).fetch_one(&self.pool).await?;
                    Ok((row.session.into(), row.user.into()))
                }

                async fn delete_session(&self, token_hash: &str) -> Result<()> {
                    sqlx::query::<$db>("delete from session where token_hash = $1").bind(token_hash).execute(&self.pool).await?;
                    Ok(())
                }

                async fn change_password(&self, user: UserId, password_hash: &str, keep: Option<&str>) -> Result<Vec<String>> {
                    let mut tx = self.begin_write().await?;
                    let changed = sqlx::query::<$db>("update app_user set password_hash = $2 where user_id = $1")
                        .bind(user).bind(password_hash).execute(&mut *tx).await?;
                    if changed.rows_affected() == 0 {
                        return Err(Error::NotFound);
                    }
                    let ended = sqlx::query_scalar::<$db, String>(
                        "delete from session where user_id = $1 and token_hash <> $2 returning token_hash")
                        .bind(user).bind(keep.unwrap_or_default()).fetch_all(&mut *tx).await?;
                    tx.commit().await?;
                    Ok(ended)
                }

                async fn create_api_token(&self, new: &NewApiToken) -> Result<ApiToken> {
                    let row = sqlx::query_as::<$db, ApiTokenRow>(concat!(
                        "insert into api_token (api_token_id, workspace_id, user_id, name, prefix, token_hash, run_id, created_at) ",
                        "values ($1, $2, $3, $4, $5, $6, $7, $8) returning ", token_cols!()))
                        .bind(TokenId::new()).bind(new.workspace_id).bind(new.user_id).bind(&new.name).bind(&new.prefix)
                        .bind(&new.token_hash).bind(new.run_id).bind(now())
                        .fetch_one(&self.pool).await?;
                    Ok(row.into())
                }

                async fn use_api_token(&self, token_hash: &str, now: DateTime<Utc>) -> Result<ApiToken> {
                    let token: ApiToken = sqlx::query_as::<$db, ApiTokenRow>(concat!(
                        "select ", token_cols!(), " from api_token where token_hash = $1 and revoked_at is null ",
                        // A run's token dies with its run, even if the run ended without revoking it (a crash).
                        "and (run_id is null or run_id in (select run_id from run where status in ('claimed', 'running')))"))
                        .bind(token_hash).fetch_one(&self.pool).await?.into();
                    if token.last_used_at.is_none_or(|t| now - t > chrono::TimeDelta::minutes(1)) {
                        sqlx::query::<$db>("update api_token set last_used_at = $2 where api_token_id = $1")
                            .bind(token.id).bind(now).execute(&self.pool).await?;
                    }
                    Ok(token)
                }

                async fn list_api_tokens(&self, ws: WorkspaceId, user: UserId) -> Result<Vec<ApiToken>> {
                    let rows = sqlx::query_as::<$db, ApiTokenRow>(concat!(
                        "select ", token_cols!(), " from api_token where workspace_id = $1 and user_id = $2 and run_id is null ",
                        "order by created_at desc, api_token_id desc"))
                        .bind(ws).bind(user).fetch_all(&self.pool).await?;
                    Ok(rows.into_iter().map(Into::into).collect())
                }

                async fn revoke_api_token(&self, ws: WorkspaceId, user: UserId, id: TokenId) -> Result<String> {
                    sqlx::query_scalar::<$db, String>(
                        "update api_token set revoked_at = $4 where api_token_id = $1 and workspace_id = $2 and user_id = $3 \
                         and revoked_at is null returning token_hash")
                        .bind(id).bind(ws).bind(user).bind(now()).fetch_optional(&self.pool).await?
                        .ok_or(Error::NotFound)
                }

                async fn revoke_run_tokens(&self, run: RunId) -> Result<Vec<String>> {
                    Ok(sqlx::query_scalar::<$db, String>(
                        "update api_token set revoked_at = $2 where run_id = $1 and revoked_at is null returning token_hash")
                        .bind(run).bind(now()).fetch_all(&self.pool).await?)
                }
            }
        };
    };
}
pub(super) use impl_sessions_store;
