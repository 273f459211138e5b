//! Runs: queueing, the comments a run answers, claims and leases, starting, finishing and interrupting,
//! and the board's run indicators. The run log (events) is in `run_log.rs`.

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use super::{Error, Result};
use crate::domain::{
    AgentId, CommentId, IssueId, NewRun, Run, RunId, RunOutcome, RunnerId, WorkspaceId,
};

/// Which runs [`RunStore::list_runs`] returns; unset fields do not filter.
#[derive(Debug, Clone, PartialEq)]
pub struct RunFilter {
    /// Only runs on this issue.
    pub issue: Option<IssueId>,
    /// Only runs in one of these statuses (any when empty).
    pub statuses: Vec<crate::domain::RunStatus>,
    /// Only runs of this agent.
    pub agent: Option<AgentId>,
    /// Only runs whose id, in its hyphenated lowercase text form, starts with this (hex digits and
    /// hyphens only: the caller checks, see `service::runs`).
    pub id_prefix: Option<String>,
    /// At most this many runs.
    pub limit: i64,
}

impl Default for RunFilter {
    fn default() -> Self {
        Self {
            issue: None,
            statuses: Vec::new(),
            agent: None,
            id_prefix: None,
            limit: 50,
        }
    }
}

/// Which queued runs a runner may claim ([`RunStore::claim_next_run`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClaimScope {
    /// Only runs of this workspace (a remote runner serves its token's workspace); any when `None`.
    pub workspace: Option<WorkspaceId>,
    /// Only runs of agents of these kinds (the CLIs the runner has); any when `None`, none when empty.
    pub kinds: Option<Vec<crate::domain::RuntimeKind>>,
    /// The claiming runner's name: an agent bound to named runners (`NewAgent::runners`) goes only to
    /// one of them; an unbound agent goes to any runner.
    pub runner_name: String,
}

impl ClaimScope {
    /// Any workspace, any kind: a server's embedded runner named `runner_name`.
    pub fn anything(runner_name: &str) -> Self {
        Self {
            workspace: None,
            kinds: None,
            runner_name: runner_name.to_owned(),
        }
    }
}

/// The run use-cases, up to the run's log.
#[async_trait]
pub trait RunStore: Send + Sync {
    /// Queues a run (`run_one_active_key` if this agent already has a live run on this issue); its
    /// trigger comment, if any, starts the run's comment set in the same transaction.
    async fn create_run(&self, new: &NewRun) -> Result<Run>;
    /// How many runs queued by an agent's comment (chain depth ≥ 1) the issue got since `since` (the
    /// loop guard's per-hour cap).
    async fn count_agent_triggered_runs(&self, issue: IssueId, since: DateTime<Utc>)
    -> Result<i64>;
    /// The latest run (by creation) of `agent` on `issue`, if any.
    async fn last_run_of_agent(&self, issue: IssueId, agent: AgentId) -> Result<Option<Run>>;
    /// Adds `comment` to the set of comments a run answers, only while the run is still queued (its
    /// order is built when it is claimed). `false` when it is no longer queued (or already has it).
    async fn add_run_comment(&self, run: RunId, comment: CommentId) -> Result<bool>;
    /// The comments a run answers, oldest first.
    async fn list_run_comments(&self, run: RunId) -> Result<Vec<CommentId>>;
    /// Keeps `comment` for `agent`'s next follow-up on `issue` (it had a live run when it arrived), with
    /// the chain depth a run it queued would have had.
    async fn add_pending_comment(
        &self,
        issue: IssueId,
        agent: AgentId,
        comment: CommentId,
        chain_depth: i32,
    ) -> Result<()>;
    /// Removes and returns the comments kept for `agent` on `issue` with their chain depths, oldest
    /// first; two callers never both get the same comment.
    async fn take_pending_comments(
        &self,
        issue: IssueId,
        agent: AgentId,
    ) -> Result<Vec<(CommentId, i32)>>;
    /// A run by id.
    async fn get_run(&self, id: RunId) -> Result<Run>;
    /// An issue's runs, oldest first.
    async fn list_runs_for_issue(&self, issue: IssueId) -> Result<Vec<Run>>;
    /// A workspace's runs matching `filter`, newest first, at most `filter.limit`.
    async fn list_runs(&self, ws: WorkspaceId, filter: &RunFilter) -> Result<Vec<Run>>;
    /// A workspace's queued runs, oldest first (what waits for a runner, and for which agent).
    async fn list_queued_runs(&self, ws: WorkspaceId) -> Result<Vec<Run>>;
    /// Claims the oldest claimable queued run within `scope` for `runner` with a lease until
    /// `lease_until`, respecting each agent's max concurrent runs, and increments its lease epoch. Never
    /// hands one run to two callers.
    async fn claim_next_run(
        &self,
        runner: RunnerId,
        scope: &ClaimScope,
        now: DateTime<Utc>,
        lease_until: DateTime<Utc>,
    ) -> Result<Option<Run>>;
    /// Extends the lease of a run this runner holds at `epoch` (`run_lease` if it no longer does).
    async fn renew_lease(
        &self,
        run: RunId,
        runner: RunnerId,
        epoch: i64,
        lease_until: DateTime<Utc>,
    ) -> Result<()> {
        let lost = self
            .renew_leases(runner, &[(run, epoch)], lease_until)
            .await?;
        if lost.is_empty() {
            Ok(())
        } else {
            Err(Error::conflict("run_lease"))
        }
    }
    /// Extends, in one statement, the leases of the runs `held` (each with the epoch it is held at)
    /// that this runner still holds; returns the others, whose leases are lost, in the order given.
    async fn renew_leases(
        &self,
        runner: RunnerId,
        held: &[(RunId, i64)],
        lease_until: DateTime<Utc>,
    ) -> Result<Vec<RunId>>;
    /// Marks a run claimed by `runner` at `epoch` as running, with its process and workspace
    /// (`run_lease` if it is no longer that claim).
    async fn start_run(
        &self,
        run: RunId,
        runner: RunnerId,
        epoch: i64,
        pid: Option<i32>,
        worktree: Option<&str>,
        branch: Option<&str>,
    ) -> Result<Run>;
    /// Gives back a run `runner` claimed at `epoch` but never started: it is queued again (its epoch
    /// stays, so the next claim's is higher). `run_lease` unless it is still that unstarted claim.
    async fn release_run(&self, run: RunId, runner: RunnerId, epoch: i64) -> Result<Run>;
    /// Flags or clears a run's stall.
    async fn set_run_stalled(&self, run: RunId, at: Option<DateTime<Utc>>) -> Result<()>;
    /// Records how a live run ended (`run_lease` if the run is no longer live). For the server's own
    /// decisions (cancelling a queued run); a runner finishes with [`RunStore::finish_leased_run`].
    async fn finish_run(&self, run: RunId, outcome: &RunOutcome) -> Result<Run>;
    /// Records how a claimed or running run ended, only at `epoch` (`run_lease` otherwise: the runner
    /// lost the run, and its outcome is not recorded). `NotFound` for an unknown run.
    async fn finish_leased_run(&self, run: RunId, epoch: i64, outcome: &RunOutcome) -> Result<Run>;
    /// Marks every live run whose lease expired before `now` as interrupted; returns them.
    async fn interrupt_expired_runs(&self, now: DateTime<Utc>) -> Result<Vec<Run>>;
    /// The runs `runner` holds (claimed or running), oldest first: at a runner's start these were left
    /// behind by its previous life.
    async fn list_live_runs_of_runner(&self, runner: RunnerId) -> Result<Vec<Run>>;
    /// The latest run (by creation) of every issue of `ws` that has runs, for the board's indicators.
    async fn latest_runs(&self, ws: WorkspaceId) -> Result<Vec<Run>>;
}

/// The insert of one queued run (`create_run` and an ensemble's candidates and reviewer).
macro_rules! insert_run { ($db:ty, $exec:expr, $id:expr, $new:expr) => {
    sqlx::query_as::<$db, RunRow>(concat!(
        "insert into run (run_id, workspace_id, issue_id, agent_id, status, attempt, chain_depth, not_before, ",
        "created_at, trigger, trigger_comment_id, previous_run_id, ensemble_run_id, purpose, model) ",
        "values ($1, $2, $3, $4, 'queued', $5, $6, $7, $8, $9, $10, $11, $12, $13, ",
        "(select model from agent where agent_id = $4)) returning ", run_cols!()))
        .bind($id).bind($new.workspace_id).bind($new.issue_id).bind($new.agent_id)
        .bind($new.attempt).bind($new.chain_depth).bind($new.not_before).bind(now())
        .bind($new.trigger).bind($new.trigger_comment_id).bind($new.previous_run_id)
        .bind($new.ensemble_run_id).bind($new.purpose)
        .fetch_one($exec).await
} }
pub(super) use insert_run;

/// Narrows a claim's candidate query (over `run r join agent a`) to `scope`: its workspace, its agent
/// kinds, and agents unbound or bound to the claiming runner's name. `$bound_open`/`$bound_close`
/// surround the runner name with the dialect's "the agent's `runner_names` is empty or contains it".
macro_rules! push_claim_scope {
    ($qb:ident, $scope:expr, $bound_open:expr, $bound_close:expr) => {{
        let scope: &$crate::store::ClaimScope = $scope;
        if let Some(ws) = scope.workspace {
            $qb.push(" and r.workspace_id = ").push_bind(ws);
        }
        match scope.kinds.as_deref() {
            None => {}
            Some([]) => {
                $qb.push(" and 1 = 0");
            }
            Some(kinds) => {
                $qb.push(" and a.kind in (");
                let mut list = $qb.separated(", ");
                for kind in kinds {
                    list.push_bind($crate::store::codec::Named(*kind));
                }
                list.push_unseparated(")");
            }
        }
        $qb.push($bound_open)
            .push_bind(scope.runner_name.clone())
            .push($bound_close);
        // A run whose issue has an unmet blocker waits, whatever else holds.
        $qb.push($crate::store::plans::UNBLOCKED);
    }};
}
pub(super) use push_claim_scope;

/// Marks a queued run as claimed by `runner` inside the claim transaction, under a new lease epoch.
macro_rules! take_run {
    ($db:ty, $tx:ident, $run:expr, $runner:expr, $now:expr, $lease_until:expr) => {
        sqlx::query_as::<$db, RunRow>(concat!(
            "update run set status = 'claimed', runner_id = $2, lease_expires_at = $3, started_at = $4, ",
            "lease_epoch = lease_epoch + 1 ",
            "where run_id = $1 and status = 'queued' returning ", run_cols!()))
            .bind($run).bind($runner).bind($lease_until).bind($now)
            .fetch_one(&mut *$tx).await?
    };
}
pub(super) use take_run;

/// Writes `impl RunStore for $store` on database `$db`; `impl_store!` expands it once per backend.
macro_rules! impl_runs_store {
    ($store:ty, $db:ty) => {
        const _: () = {
            use $crate::domain::*;
            use $crate::store::common::*;
            use $crate::store::rows::*;
            use $crate::store::runs::*;
            use $crate::store::{Error, Result};
            use chrono::{DateTime, Utc};

            impl $store {
                /// Records how a run ended: any live run (`epoch` `None`: the server's own decision, e.g.
                /// cancelling a queued run), or only a claimed or running one at `epoch` (a runner's report).
                /// `run_lease` when the run is not (or no longer) in that state.
                async fn finish_run_at(&self, run: RunId, epoch: Option<i64>, outcome: &RunOutcome) -> Result<Run> {
                    if !outcome.status.is_terminal() {
                        return Err(anyhow::anyhow!("a run's finish needs a final status, not {}", outcome.status).into());
                    }
                    let u = &outcome.usage;
                    let row = sqlx::query_as::<$db, RunRow>(concat!(
                        "update run set status = $2, exit_code = $3, failure_reason = $4, input_tokens = $5, ",
                        "output_tokens = $6, cache_read_tokens = $7, cache_write_tokens = $8, cost_usd = $9, summary = $10, ",
                        "diff_stat = $11, session_id = coalesce($12, session_id), finished_at = $13, lease_expires_at = null, ",
                        "stalled_at = null, failure_detail = $14, cost_unknown = $15, cost_estimated = $17, ",
                        "base_commit = coalesce($18, base_commit), head_commit = coalesce($19, head_commit) ",
                        "where run_id = $1 and (($16 is null and status in ('queued', 'claimed', 'running')) ",
                        "or (lease_epoch = $16 and status in ('claimed', 'running'))) returning ", run_cols!()))
                        .bind(run).bind(outcome.status).bind(outcome.exit_code).bind(outcome.failure_reason)
                        .bind(u.input_tokens).bind(u.output_tokens).bind(u.cache_read_tokens).bind(u.cache_write_tokens)
                        .bind(u.cost_usd).bind(outcome.summary.as_deref()).bind(outcome.diff_stat.as_deref())
                        .bind(outcome.session_id.as_deref()).bind(now())
                        .bind(outcome.failure_detail.as_deref()).bind(u.cost_unknown).bind(epoch)
                        .bind(u.cost_estimated)
                        .bind(outcome.base_commit.as_deref()).bind(outcome.head_commit.as_deref())
                        .fetch_optional(&self.pool).await?;
                    match row {
                        Some(row) => Ok(row.into()),
                        None => { RunStore::get_run(self, run).await?; Err(Error::conflict("run_lease")) }
                    }
                }
            }

            #[async_trait::async_trait]
            impl RunStore for $store {
                async fn create_run(&self, new: &NewRun) -> Result<Run> {
                    let (id, mut tx) = (RunId::new(), self.begin_write().await?);
                    let row = insert_run!($db, &mut *tx, id, new)?;
                    if let Some(comment) = new.trigger_comment_id {
                        sqlx::query::<$db>("insert into run_comment (run_id, comment_id) values ($1, $2)")
                            .bind(id).bind(comment).execute(&mut *tx).await?;
                    }
                    tx.commit().await?;
                    Ok(row.into())
                }

                async fn count_agent_triggered_runs(&self, issue: IssueId, since: DateTime<Utc>) -> Result<i64> {
                    let n = sqlx::query_scalar::<$db, i64>(
                        "select count(*) from run where issue_id = $1 and chain_depth > 0 and created_at >= $2")
                        .bind(issue).bind(since).fetch_one(&self.pool).await?;
                    Ok(n)
                }

                async fn last_run_of_agent(&self, issue: IssueId, agent: AgentId) -> Result<Option<Run>> {
                    let row = sqlx::query_as::<$db, RunRow>(concat!("select ", run_cols!(), " from run ",
                        "where issue_id = $1 and agent_id = $2 order by created_at desc, run_id desc limit 1"))
                        .bind(issue).bind(agent).fetch_optional(&self.pool).await?;
                    Ok(row.map(Into::into))
                }

                async fn add_run_comment(&self, run: RunId, comment: CommentId) -> Result<bool> {
                    let done = sqlx::query::<$db>(
                        "insert into run_comment (run_id, comment_id) select $1, $2 \
                         where exists (select 1 from run where run_id = $1 and status = 'queued') \
                         on conflict do nothing")
                        .bind(run).bind(comment).execute(&self.pool).await?;
                    Ok(done.rows_affected() > 0)
                }

                async fn list_run_comments(&self, run: RunId) -> Result<Vec<CommentId>> {
                    let ids = sqlx::query_scalar::<$db, CommentId>(
                        "select rc.comment_id from run_comment rc join comment c on c.comment_id = rc.comment_id \
                         where rc.run_id = $1 order by c.created_at, c.comment_id")
                        .bind(run).fetch_all(&self.pool).await?;
                    Ok(ids)
                }

                async fn add_pending_comment(&self, issue: IssueId, agent: AgentId, comment: CommentId, chain_depth: i32) -> Result<()> {
                    sqlx::query::<$db>(concat!(
                        "insert into pending_comment (issue_id, agent_id, comment_id, chain_depth) values ($1, $2, $3, $4) ",
                        "on conflict do nothing"))
                        .bind(issue).bind(agent).bind(comment).bind(chain_depth).execute(&self.pool).await?;
                    Ok(())
                }

                async fn take_pending_comments(&self, issue: IssueId, agent: AgentId) -> Result<Vec<(CommentId, i32)>> {
                    // One `delete … returning`: of two concurrent takers, only one gets each row.
                    let mut taken = sqlx::query_as::<$db, (CommentId, i32, DateTime<Utc>)>(
                        "delete from pending_comment where issue_id = $1 and agent_id = $2 returning comment_id, chain_depth, \
                         (select c.created_at from comment c where c.comment_id = pending_comment.comment_id) as at")
                        .bind(issue).bind(agent).fetch_all(&self.pool).await?;
                    taken.sort_by(|a, b| (a.2, a.0.to_string()).cmp(&(b.2, b.0.to_string())));
                    Ok(taken.into_iter().map(|(id, depth, _)| (id, depth)).collect())
                }

                async fn get_run(&self, id: RunId) -> Result<Run> {
                    let row = sqlx::query_as::<$db, RunRow>(concat!("select ", run_cols!(), " from run where run_id = $1"))
                        .bind(id).fetch_one(&self.pool).await?;
                    Ok(row.into())
                }

                async fn list_runs_for_issue(&self, issue: IssueId) -> Result<Vec<Run>> {
                    let rows = sqlx::query_as::<$db, RunRow>(concat!("select ", run_cols!(), " from run where issue_id = $1 order by created_at, run_id"))
                        .bind(issue).fetch_all(&self.pool).await?;
                    Ok(rows.into_iter().map(Into::into).collect())
                }

                async fn list_runs(&self, ws: WorkspaceId, filter: &$crate::store::RunFilter) -> Result<Vec<Run>> {
                    let mut qb = sqlx::QueryBuilder::<$db>::new(concat!("select ", run_cols!(), " from run where workspace_id = "));
                    qb.push_bind(ws);
                    if let Some(issue) = filter.issue { qb.push(" and issue_id = ").push_bind(issue); }
                    if let Some(agent) = filter.agent { qb.push(" and agent_id = ").push_bind(agent); }
                    if let Some(prefix) = &filter.id_prefix {
                        // uuid on Postgres, text on SQLite: both cast to the hyphenated lowercase form.
                        qb.push(" and cast(run_id as text) like ").push_bind(format!("{prefix}%"));
                    }
                    if !filter.statuses.is_empty() {
                        qb.push(" and status in (");
                        let mut list = qb.separated(", ");
                        for status in &filter.statuses { list.push_bind(*status); }
                        list.push_unseparated(")");
                    }
                    qb.push(" order by created_at desc, run_id desc limit ").push_bind(filter.limit);
                    let rows = qb.build_query_as::<RunRow>().fetch_all(&self.pool).await?;
                    Ok(rows.into_iter().map(Into::into).collect())
                }

                async fn list_queued_runs(&self, ws: WorkspaceId) -> Result<Vec<Run>> {
                    let rows = sqlx::query_as::<$db, RunRow>(concat!("select ", run_cols!(), " from run ",
                        "where workspace_id = $1 and status = 'queued' order by created_at, run_id"))
                        .bind(ws).fetch_all(&self.pool).await?;
                    Ok(rows.into_iter().map(Into::into).collect())
                }

                async fn claim_next_run(
                    &self, runner: RunnerId, scope: &$crate::store::ClaimScope, now: DateTime<Utc>, lease_until: DateTime<Utc>,
                ) -> Result<Option<Run>> {
                    self.claim(runner, scope, now, lease_until).await
                }

                async fn renew_leases(&self, runner: RunnerId, held: &[(RunId, i64)], lease_until: DateTime<Utc>) -> Result<Vec<RunId>> {
                    // One statement (one commit) for all: a runner's heartbeat renewed its runs one by one,
                    // and with 64 runs on PostgreSQL the session stored no event for ~0.1 s meanwhile.
                    let mut renewed = Vec::with_capacity(held.len());
                    for chunk in held.chunks(APPEND_CHUNK) {
                        let mut qb = sqlx::QueryBuilder::<$db>::new("update run set lease_expires_at = ");
                        qb.push_bind(lease_until).push(" where runner_id = ").push_bind(runner)
                            .push(" and status in ('claimed', 'running') and (run_id, lease_epoch) in (");
                        let mut pairs = qb.separated(", ");
                        for (run, epoch) in chunk {
                            pairs.push("(").push_bind_unseparated(*run).push_unseparated(", ")
                                .push_bind_unseparated(*epoch).push_unseparated(")");
                        }
                        qb.push(") returning run_id");
                        renewed.extend(qb.build_query_scalar::<RunId>().fetch_all(&self.pool).await?);
                    }
                    Ok(held.iter().map(|(run, _)| *run).filter(|run| !renewed.contains(run)).collect())
                }

                async fn start_run(
                    &self, run: RunId, runner: RunnerId, epoch: i64, pid: Option<i32>, worktree: Option<&str>,
                    branch: Option<&str>,
                ) -> Result<Run> {
                    let row = sqlx::query_as::<$db, RunRow>(concat!(
                        "update run set status = 'running', pid = $3, worktree = $4, branch = $5 ",
                        "where run_id = $1 and runner_id = $2 and lease_epoch = $6 and status = 'claimed' returning ",
                        run_cols!()))
                        .bind(run).bind(runner).bind(pid).bind(worktree).bind(branch).bind(epoch)
                        .fetch_optional(&self.pool).await?;
                    row.map(Into::into).ok_or_else(|| Error::conflict("run_lease"))
                }

                async fn release_run(&self, run: RunId, runner: RunnerId, epoch: i64) -> Result<Run> {
                    let row = sqlx::query_as::<$db, RunRow>(concat!(
                        "update run set status = 'queued', runner_id = null, lease_expires_at = null, started_at = null ",
                        "where run_id = $1 and runner_id = $2 and lease_epoch = $3 and status = 'claimed' returning ",
                        run_cols!()))
                        .bind(run).bind(runner).bind(epoch).fetch_optional(&self.pool).await?;
                    row.map(Into::into).ok_or_else(|| Error::conflict("run_lease"))
                }

                async fn set_run_stalled(&self, run: RunId, at: Option<DateTime<Utc>>) -> Result<()> {
                    let done = sqlx::query::<$db>("update run set stalled_at = $2 where run_id = $1")
                        .bind(run).bind(at).execute(&self.pool).await?;
                    if done.rows_affected() == 0 { return Err(Error::NotFound); }
                    Ok(())
                }

                async fn finish_run(&self, run: RunId, outcome: &RunOutcome) -> Result<Run> {
                    self.finish_run_at(run, None, outcome).await
                }

                async fn finish_leased_run(&self, run: RunId, epoch: i64, outcome: &RunOutcome) -> Result<Run> {
                    self.finish_run_at(run, Some(epoch), outcome).await
                }

                async fn interrupt_expired_runs(&self, now: DateTime<Utc>) -> Result<Vec<Run>> {
                    let rows = sqlx::query_as::<$db, RunRow>(concat!(
                        "update run set status = 'interrupted', failure_reason = 'runner_lost', finished_at = $1, ",
                        "lease_expires_at = null where status in ('claimed', 'running') and lease_expires_at < $1 ",
                        "returning ", run_cols!()))
                        .bind(now).fetch_all(&self.pool).await?;
                    Ok(rows.into_iter().map(Into::into).collect())
                }

                async fn list_live_runs_of_runner(&self, runner: RunnerId) -> Result<Vec<Run>> {
                    let rows = sqlx::query_as::<$db, RunRow>(concat!("select ", run_cols!(), " from run ",
                        "where runner_id = $1 and status in ('claimed', 'running') order by created_at, run_id"))
                        .bind(runner).fetch_all(&self.pool).await?;
                    Ok(rows.into_iter().map(Into::into).collect())
                }

                async fn latest_runs(&self, ws: WorkspaceId) -> Result<Vec<Run>> {
                    let rows = sqlx::query_as::<$db, RunRow>(concat!(
                        "select ", run_cols!(), " from run r where r.workspace_id = $1 and not exists (",
                        "select 1 from run n where n.issue_id = r.issue_id and (n.created_at > r.created_at ",
                        "or (n.created_at = r.created_at and n.run_id > r.run_id))) order by r.created_at"))
                        .bind(ws).fetch_all(&self.pool).await?;
                    Ok(rows.into_iter().map(Into::into).collect())
                }
            }
        };
    };
}
pub(super) use impl_runs_store;
