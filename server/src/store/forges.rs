//! Forges: a workspace's forge connection, the pull requests opened through it, and the webhook
//! deliveries already taken.

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use sqlx::types::Json;

use super::Result;
use crate::domain::{
    AgentId, ForgeConnection, ForgeConnectionId, ForgeKind, IssueId, NewForgeConnection,
    NewPullRequest, OnClose, PrCheck, PrReview, PrState, PrUpdate, PullRequest, PullRequestId,
    RunId, UserId, WorkspaceId,
};

/// A connection's settings people change after connecting.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ForgeSettings {
    pub auto_open: bool,
    pub max_rounds: i32,
    pub on_close: OnClose,
}

/// The forge use-cases.
#[async_trait]
pub trait ForgeStore: Send + Sync {
    /// Records a workspace's connection; `Conflict(forge_connection_workspace_key)` when it has one.
    async fn create_forge_connection(&self, new: &NewForgeConnection) -> Result<ForgeConnection>;
    /// A workspace's connections, oldest first.
    async fn list_forge_connections(&self, ws: WorkspaceId) -> Result<Vec<ForgeConnection>>;
    /// A connection by id alone (a webhook names only its connection).
    async fn get_forge_connection(&self, id: ForgeConnectionId) -> Result<ForgeConnection>;
    /// Changes a connection's settings.
    async fn update_forge_settings(
        &self,
        ws: WorkspaceId,
        id: ForgeConnectionId,
        settings: ForgeSettings,
    ) -> Result<ForgeConnection>;
    /// Removes a connection with its pull requests' records and deliveries.
    async fn delete_forge_connection(&self, ws: WorkspaceId, id: ForgeConnectionId) -> Result<()>;
    /// Takes a webhook delivery by its id: `false` when that id was taken before (a replay).
    async fn take_forge_delivery(
        &self,
        connection: ForgeConnectionId,
        delivery: &str,
        at: DateTime<Utc>,
    ) -> Result<bool>;
    /// Forgets a delivery that could not be acted on, so the forge's redelivery is taken.
    async fn release_forge_delivery(
        &self,
        connection: ForgeConnectionId,
        delivery: &str,
    ) -> Result<()>;
    /// Records a pull request just opened; `Conflict(pull_request_connection_number_key)` when its
    /// number is recorded already.
    async fn create_pull_request(&self, new: &NewPullRequest) -> Result<PullRequest>;
    async fn get_pull_request(&self, id: PullRequestId) -> Result<PullRequest>;
    /// The pull request numbered `number` on a connection.
    async fn find_pull_request(
        &self,
        connection: ForgeConnectionId,
        number: i64,
    ) -> Result<Option<PullRequest>>;
    /// The pull requests whose head is `branch` on a connection, newest first.
    async fn pull_requests_for_branch(
        &self,
        connection: ForgeConnectionId,
        branch: &str,
    ) -> Result<Vec<PullRequest>>;
    /// A workspace's pull requests (one issue's when `issue` is given), newest first.
    async fn list_pull_requests(
        &self,
        ws: WorkspaceId,
        issue: Option<IssueId>,
    ) -> Result<Vec<PullRequest>>;
    /// Applies what the forge said, in one transaction: a check replaces the one of its name, a review
    /// the same reviewer's; a new head commit clears the checks (they were about the old one).
    async fn update_pull_request(
        &self,
        id: PullRequestId,
        update: &PrUpdate,
    ) -> Result<PullRequest>;
    /// Counts one automatic round if the pull request has had fewer than `max`: the new count, or
    /// `None` when it is at the limit (nothing written).
    async fn take_pr_round(&self, id: PullRequestId, max: i32) -> Result<Option<i32>>;
    /// Marks that the pull request's round limit was said: `true` the first time only.
    async fn notice_pr_limit(&self, id: PullRequestId) -> Result<bool>;
    /// Links a merged or closed pull request to the one opened for work that came after it.
    async fn supersede_pull_request(&self, old: PullRequestId, new: PullRequestId) -> Result<()>;
}

#[derive(sqlx::FromRow)]
pub(super) struct ConnectionRow {
    forge_connection_id: ForgeConnectionId,
    workspace_id: WorkspaceId,
    kind: ForgeKind,
    api_url: String,
    repo: String,
    token_sealed: String,
    webhook_secret_sealed: String,
    auto_open: bool,
    max_rounds: i32,
    on_close: OnClose,
    created_by: UserId,
    created_at: DateTime<Utc>,
}

impl From<ConnectionRow> for ForgeConnection {
    fn from(r: ConnectionRow) -> Self {
        ForgeConnection {
            id: r.forge_connection_id,
            workspace_id: r.workspace_id,
            kind: r.kind,
            api_url: r.api_url,
            repo: r.repo,
            token_sealed: r.token_sealed,
            webhook_secret_sealed: r.webhook_secret_sealed,
            auto_open: r.auto_open,
            max_rounds: r.max_rounds,
            on_close: r.on_close,
            created_by: r.created_by,
            created_at: r.created_at,
        }
    }
}

#[derive(sqlx::FromRow)]
pub(super) struct PullRow {
    pull_request_id: PullRequestId,
    workspace_id: WorkspaceId,
    forge_connection_id: ForgeConnectionId,
    issue_id: IssueId,
    agent_id: AgentId,
    run_id: RunId,
    number: i64,
    url: String,
    branch: String,
    base: String,
    state: PrState,
    draft: bool,
    head_sha: String,
    mergeable: Option<bool>,
    checks: Json<Vec<PrCheck>>,
    reviews: Json<Vec<PrReview>>,
    rounds: i32,
    superseded_by: Option<PullRequestId>,
    created_at: DateTime<Utc>,
    updated_at: DateTime<Utc>,
}

impl From<PullRow> for PullRequest {
    fn from(r: PullRow) -> Self {
        PullRequest {
            id: r.pull_request_id,
            workspace_id: r.workspace_id,
            connection_id: r.forge_connection_id,
            issue_id: r.issue_id,
            agent_id: r.agent_id,
            run_id: r.run_id,
            number: r.number,
            url: r.url,
            branch: r.branch,
            base: r.base,
            state: r.state,
            draft: r.draft,
            head_sha: r.head_sha,
            mergeable: r.mergeable,
            checks: r.checks.0,
            reviews: r.reviews.0,
            rounds: r.rounds,
            superseded_by: r.superseded_by,
            created_at: r.created_at,
            updated_at: r.updated_at,
        }
    }
}

/// What `update` makes of a pull request: the merged lists and fields (pure, so both backends agree).
pub(super) fn applied(mut pr: PullRequest, update: &PrUpdate) -> PullRequest {
    if let Some(state) = update.state {
        pr.state = state;
    }
    if let Some(draft) = update.draft {
        pr.draft = draft;
    }
    if let Some(sha) = &update.head_sha
        && *sha != pr.head_sha
    {
        pr.head_sha = sha.clone();
        pr.checks.clear();
        pr.mergeable = None;
    }
    if let Some(mergeable) = update.mergeable {
        pr.mergeable = mergeable;
    }
    if let Some(check) = &update.check {
        match pr.checks.iter_mut().find(|c| c.name == check.name) {
            Some(c) => *c = check.clone(),
            None => pr.checks.push(check.clone()),
        }
    }
    if let Some(review) = &update.review {
        match pr.reviews.iter_mut().find(|r| r.author == review.author) {
            Some(r) => *r = review.clone(),
            None => pr.reviews.push(review.clone()),
        }
    }
    pr
}

macro_rules! connection_cols { () => {
    "forge_connection_id, workspace_id, kind, api_url, repo, token_sealed, webhook_secret_sealed, \
     auto_open, max_rounds, on_close, created_by, created_at"
} }
pub(super) use connection_cols;

macro_rules! pull_cols { () => {
    "pull_request_id, workspace_id, forge_connection_id, issue_id, agent_id, run_id, number, url, branch, \
     base, state, draft, head_sha, mergeable, checks, reviews, rounds, superseded_by, created_at, updated_at"
} }
pub(super) use pull_cols;

/// Writes `impl ForgeStore for $store` on database `$db`; `impl_store!` expands it once per backend.
macro_rules! impl_forges_store {
    ($store:ty, $db:ty) => {
        const _: () = {
            use $crate::domain::*;
            use $crate::store::Error;
            use $crate::store::Result;
            use $crate::store::forges::*;
            use $crate::store::rows::*;

            #[async_trait::async_trait]
            impl ForgeStore for $store {
                async fn create_forge_connection(&self, new: &NewForgeConnection) -> Result<ForgeConnection> {
                    let row = sqlx::query_as::<$db, ConnectionRow>(concat!(
                        "insert into forge_connection (forge_connection_id, workspace_id, kind, api_url, repo, token_sealed, \
                         webhook_secret_sealed, auto_open, max_rounds, on_close, created_by, created_at) \
                         values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12) returning ", connection_cols!()))
                        .bind(ForgeConnectionId::new()).bind(new.workspace_id).bind(new.kind).bind(&new.api_url)
                        .bind(&new.repo).bind(&new.token_sealed).bind(&new.webhook_secret_sealed).bind(new.auto_open)
                        .bind(new.max_rounds).bind(new.on_close).bind(new.created_by).bind(now())
                        .fetch_one(&self.pool).await?;
                    Ok(row.into())
                }

                async fn list_forge_connections(&self, ws: WorkspaceId) -> Result<Vec<ForgeConnection>> {
                    let rows = sqlx::query_as::<$db, ConnectionRow>(concat!(
                        "select ", connection_cols!(), " from forge_connection where workspace_id = $1 \
                         order by created_at, forge_connection_id"))
                        .bind(ws).fetch_all(&self.pool).await?;
                    Ok(rows.into_iter().map(Into::into).collect())
                }

                async fn get_forge_connection(&self, id: ForgeConnectionId) -> Result<ForgeConnection> {
                    let row = sqlx::query_as::<$db, ConnectionRow>(concat!(
                        "select ", connection_cols!(), " from forge_connection where forge_connection_id = $1"))
                        .bind(id).fetch_one(&self.pool).await?;
                    Ok(row.into())
                }

                async fn update_forge_settings(
                    &self,
                    ws: WorkspaceId,
                    id: ForgeConnectionId,
                    settings: ForgeSettings,
                ) -> Result<ForgeConnection> {
                    let row = sqlx::query_as::<$db, ConnectionRow>(concat!(
                        "update forge_connection set auto_open = $3, max_rounds = $4, on_close = $5 \
                         where workspace_id = $1 and forge_connection_id = $2 returning ", connection_cols!()))
                        .bind(ws).bind(id).bind(settings.auto_open).bind(settings.max_rounds).bind(settings.on_close)
                        .fetch_one(&self.pool).await?;
                    Ok(row.into())
                }

                async fn delete_forge_connection(&self, ws: WorkspaceId, id: ForgeConnectionId) -> Result<()> {
                    let done = sqlx::query::<$db>(
                        "delete from forge_connection where workspace_id = $1 and forge_connection_id = $2")
                        .bind(ws).bind(id).execute(&self.pool).await?;
                    if done.rows_affected() == 0 {
                        return Err(Error::NotFound);
                    }
                    Ok(())
                }

                async fn take_forge_delivery(
                    &self,
                    connection: ForgeConnectionId,
                    delivery: &str,
                    at: chrono::DateTime<chrono::Utc>,
                ) -> Result<bool> {
                    let done = sqlx::query::<$db>(
                        "insert into forge_delivery (forge_connection_id, delivery_id, received_at) values ($1, $2, $3) \
                         on conflict do nothing")
                        .bind(connection).bind(delivery).bind(at).execute(&self.pool).await?;
                    Ok(done.rows_affected() == 1)
                }

                async fn release_forge_delivery(&self, connection: ForgeConnectionId, delivery: &str) -> Result<()> {
                    sqlx::query::<$db>("delete from forge_delivery where forge_connection_id = $1 and delivery_id = $2")
                        .bind(connection).bind(delivery).execute(&self.pool).await?;
                    Ok(())
                }

                async fn create_pull_request(&self, new: &NewPullRequest) -> Result<PullRequest> {
                    let at = now();
                    let row = sqlx::query_as::<$db, PullRow>(concat!(
                        "insert into pull_request (pull_request_id, workspace_id, forge_connection_id, issue_id, agent_id, \
                         run_id, number, url, branch, base, draft, head_sha, created_at, updated_at) \
                         values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $13) returning ", pull_cols!()))
                        .bind(PullRequestId::new()).bind(new.workspace_id).bind(new.connection_id).bind(new.issue_id)
                        .bind(new.agent_id).bind(new.run_id).bind(new.number).bind(&new.url).bind(&new.branch)
                        .bind(&new.base).bind(new.draft).bind(&new.head_sha).bind(at)
                        .fetch_one(&self.pool).await?;
                    Ok(row.into())
                }

                async fn get_pull_request(&self, id: PullRequestId) -> Result<PullRequest> {
                    let row = sqlx::query_as::<$db, PullRow>(concat!(
                        "select ", pull_cols!(), " from pull_request where pull_request_id = $1"))
                        .bind(id).fetch_one(&self.pool).await?;
                    Ok(row.into())
                }

                async fn find_pull_request(
                    &self,
                    connection: ForgeConnectionId,
                    number: i64,
                ) -> Result<Option<PullRequest>> {
                    let row = sqlx::query_as::<$db, PullRow>(concat!(
                        "select ", pull_cols!(), " from pull_request where forge_connection_id = $1 and number = $2"))
                        .bind(connection).bind(number).fetch_optional(&self.pool).await?;
                    Ok(row.map(Into::into))
                }

                async fn pull_requests_for_branch(
                    &self,
                    connection: ForgeConnectionId,
                    branch: &str,
                ) -> Result<Vec<PullRequest>> {
                    let rows = sqlx::query_as::<$db, PullRow>(concat!(
                        "select ", pull_cols!(), " from pull_request where forge_connection_id = $1 and branch = $2 \
                         order by created_at desc, pull_request_id desc"))
                        .bind(connection).bind(branch).fetch_all(&self.pool).await?;
                    Ok(rows.into_iter().map(Into::into).collect())
                }

                async fn list_pull_requests(
                    &self,
                    ws: WorkspaceId,
                    issue: Option<IssueId>,
                ) -> Result<Vec<PullRequest>> {
                    let rows = sqlx::query_as::<$db, PullRow>(concat!(
                        "select ", pull_cols!(), " from pull_request where workspace_id = $1 \
                         and ($2 is null or issue_id = $2) order by created_at desc, pull_request_id desc"))
                        .bind(ws).bind(issue).fetch_all(&self.pool).await?;
                    Ok(rows.into_iter().map(Into::into).collect())
                }

                async fn update_pull_request(
                    &self,
                    id: PullRequestId,
                    update: &PrUpdate,
                ) -> Result<PullRequest> {
                    let mut tx = self.begin_write().await?;
                    // A no-op write takes the row's lock first (Postgres), so two deliveries never merge
                    // their lists over each other; SQLite's write transaction already serialises them.
                    let locked = sqlx::query::<$db>("update pull_request set rounds = rounds where pull_request_id = $1")
                        .bind(id).execute(&mut *tx).await?;
                    if locked.rows_affected() == 0 {
                        return Err(Error::NotFound);
                    }
                    let row = sqlx::query_as::<$db, PullRow>(concat!(
                        "select ", pull_cols!(), " from pull_request where pull_request_id = $1"))
                        .bind(id).fetch_one(&mut *tx).await?;
                    let pr = applied(row.into(), update);
                    let row = sqlx::query_as::<$db, PullRow>(concat!(
                        "update pull_request set state = $2, draft = $3, head_sha = $4, mergeable = $5, checks = $6, \
                         reviews = $7, updated_at = $8 where pull_request_id = $1 returning ", pull_cols!()))
                        .bind(id).bind(pr.state).bind(pr.draft).bind(&pr.head_sha).bind(pr.mergeable)
                        .bind(sqlx::types::Json(&pr.checks)).bind(sqlx::types::Json(&pr.reviews)).bind(now())
                        .fetch_one(&mut *tx).await?;
                    tx.commit().await?;
                    Ok(row.into())
                }

                async fn take_pr_round(&self, id: PullRequestId, max: i32) -> Result<Option<i32>> {
                    let rounds: Option<i32> = sqlx::query_scalar::<$db, i32>(
                        "update pull_request set rounds = rounds + 1, updated_at = $3 \
                         where pull_request_id = $1 and rounds < $2 returning rounds")
                        .bind(id).bind(max).bind(now()).fetch_optional(&self.pool).await?;
                    Ok(rounds)
                }

                async fn notice_pr_limit(&self, id: PullRequestId) -> Result<bool> {
                    let done = sqlx::query::<$db>(
                        "update pull_request set limit_noticed = $2 where pull_request_id = $1 and limit_noticed = $3")
                        .bind(id).bind(true).bind(false).execute(&self.pool).await?;
                    Ok(done.rows_affected() == 1)
                }

                async fn supersede_pull_request(&self, old: PullRequestId, new: PullRequestId) -> Result<()> {
                    let done = sqlx::query::<$db>(
                        "update pull_request set superseded_by = $2, updated_at = $3 where pull_request_id = $1")
                        .bind(old).bind(new).bind(now()).execute(&self.pool).await?;
                    if done.rows_affected() == 0 {
                        return Err(Error::NotFound);
                    }
                    Ok(())
                }
            }
        };
    };
}
pub(super) use impl_forges_store;
