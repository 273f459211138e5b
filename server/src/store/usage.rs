//! Usage, caps, prices and metrics (issue 15): per-run usage for reports, a live run's spend so far,
//! spend sums for caps, the caps themselves, their monthly warnings, the workspace's rate table, and the
//! counts `/metrics` reports. The SQL is portable (sums are cast so both backends return `bigint`).

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use sqlx::types::Json;

use super::Result;
use crate::domain::{
    AgentId, Cap, Caps, FailureReason, IssueId, RunId, RunStatus, RunUsage, Runner, RuntimeKind,
    Usage, UsageFilter, WorkspaceId,
};

/// The usage, cap, price and metrics use-cases.
#[async_trait]
pub trait UsageStore: Send + Sync {
    /// Records what a live run (claimed or running at `epoch`) has spent so far, as its runner reports
    /// it; ignored once the run is no longer that claim. The finish records the final figures.
    async fn set_live_usage(&self, run: RunId, epoch: i64, usage: &Usage) -> Result<()>;
    /// The runs of `ws` queued in `[filter.from, filter.to)` (of one agent or issue when set), with their
    /// usage so far (a live run's included), oldest first.
    async fn usage_runs(&self, ws: WorkspaceId, filter: &UsageFilter) -> Result<Vec<RunUsage>>;
    /// What the runs of `ws` (of `agent` only, when set) queued at or after `since` used so far, summed
    /// in the database; `cost_unknown` when one of them had unpriced tokens.
    async fn spend_since(
        &self,
        ws: WorkspaceId,
        agent: Option<AgentId>,
        since: DateTime<Utc>,
    ) -> Result<Usage>;
    /// The monthly caps of `ws` and of its agents.
    async fn caps(&self, ws: WorkspaceId) -> Result<Caps>;
    /// Sets (or, with both bounds `None`, clears) the workspace's monthly cap.
    async fn set_workspace_cap(&self, ws: WorkspaceId, cap: Cap) -> Result<()>;
    /// Sets or clears an agent's monthly cap (`NotFound` for an agent not of `ws`).
    async fn set_agent_cap(&self, ws: WorkspaceId, agent: AgentId, cap: Cap) -> Result<()>;
    /// Records that the cap `scope` (`workspace` or `agent:<id>`) was warned about in `month`
    /// (`2026-12`); `true` only for the first caller, so each cap warns once a month.
    async fn record_cap_warning(
        &self,
        ws: WorkspaceId,
        scope: &str,
        month: &str,
        now: DateTime<Utc>,
    ) -> Result<bool>;
    /// The workspace's own rate table; `None` when it uses the built-in one.
    async fn rate_table(&self, ws: WorkspaceId) -> Result<Option<muster_agents::RateTable>>;
    /// Sets the workspace's rate table, or (`None`) goes back to the built-in one.
    async fn set_rate_table(
        &self,
        ws: WorkspaceId,
        rates: Option<&muster_agents::RateTable>,
    ) -> Result<()>;
    /// How many runs there are, by status and by their agent's runtime, across workspaces.
    async fn run_counts(
        &self,
    ) -> Result<Vec<(crate::domain::RunStatus, crate::domain::RuntimeKind, i64)>>;
    /// How many queued runs a runner may claim at `now` (their backoff is over), and since when the oldest
    /// of them has been claimable.
    async fn queue_state(&self, now: DateTime<Utc>) -> Result<(i64, Option<DateTime<Utc>>)>;
    /// Every runner, embedded and remote, of every workspace, by name.
    async fn all_runners(&self) -> Result<Vec<Runner>>;
    /// This process's pool: open connections, and how many of them are idle.
    fn pool_stats(&self) -> (u32, u32);
}

/// One run of [`UsageStore::usage_runs`].
pub(super) const USAGE_RUNS: &str = "select r.run_id, r.agent_id, a.name as agent_name, a.kind, \
     coalesce(r.model, a.model) as model, r.issue_id, w.issue_prefix, i.number as issue_number, r.status, \
     r.failure_reason, r.created_at, r.started_at, r.finished_at, r.input_tokens, r.output_tokens, \
     r.cache_read_tokens, r.cache_write_tokens, r.cost_usd, r.cost_unknown \
     from run r join agent a on a.agent_id = r.agent_id join issue i on i.issue_id = r.issue_id \
     join workspace w on w.workspace_id = r.workspace_id \
     where r.workspace_id = ";

/// The sums of [`UsageStore::spend_since`].
pub(super) const SPEND_SINCE: &str = "select \
     cast(coalesce(sum(input_tokens), 0) as bigint) as input_tokens, \
     cast(coalesce(sum(output_tokens), 0) as bigint) as output_tokens, \
     cast(coalesce(sum(cache_read_tokens), 0) as bigint) as cache_read_tokens, \
     cast(coalesce(sum(cache_write_tokens), 0) as bigint) as cache_write_tokens, \
     coalesce(sum(cost_usd), 0.0) as cost_usd, \
     cast(coalesce(sum(case when cost_unknown then 1 else 0 end), 0) as bigint) as unknown_runs \
     from run where workspace_id = ";

#[derive(sqlx::FromRow)]
pub(super) struct UsageRow {
    run_id: RunId,
    agent_id: AgentId,
    agent_name: String,
    kind: super::codec::Named<RuntimeKind>,
    model: Option<String>,
    issue_id: IssueId,
    issue_prefix: String,
    issue_number: i64,
    status: RunStatus,
    failure_reason: Option<FailureReason>,
    created_at: DateTime<Utc>,
    started_at: Option<DateTime<Utc>>,
    finished_at: Option<DateTime<Utc>>,
    input_tokens: i64,
    output_tokens: i64,
    cache_read_tokens: i64,
    cache_write_tokens: i64,
    cost_usd: f64,
    cost_unknown: bool,
}

impl From<UsageRow> for RunUsage {
    fn from(r: UsageRow) -> Self {
        RunUsage {
            run_id: r.run_id,
            agent_id: r.agent_id,
            agent_name: r.agent_name,
            kind: r.kind.0,
            model: r.model.filter(|m| !m.trim().is_empty()),
            issue_id: r.issue_id,
            issue_key: format!("{}-{}", r.issue_prefix, r.issue_number),
            status: r.status,
            failure_reason: r.failure_reason,
            created_at: r.created_at,
            started_at: r.started_at,
            finished_at: r.finished_at,
            usage: Usage {
                input_tokens: r.input_tokens,
                output_tokens: r.output_tokens,
                cache_read_tokens: r.cache_read_tokens,
                cache_write_tokens: r.cache_write_tokens,
                cost_usd: r.cost_usd,
                cost_unknown: r.cost_unknown,
                cost_estimated: false,
            },
        }
    }
}

#[derive(sqlx::FromRow)]
pub(super) struct SpendRow {
    input_tokens: i64,
    output_tokens: i64,
    cache_read_tokens: i64,
    cache_write_tokens: i64,
    cost_usd: f64,
    unknown_runs: i64,
}

impl From<SpendRow> for Usage {
    fn from(r: SpendRow) -> Self {
        Usage {
            input_tokens: r.input_tokens,
            output_tokens: r.output_tokens,
            cache_read_tokens: r.cache_read_tokens,
            cache_write_tokens: r.cache_write_tokens,
            cost_usd: r.cost_usd,
            cost_unknown: r.unknown_runs > 0,
            cost_estimated: false,
        }
    }
}

/// A cap's two columns, on `workspace` or `agent`.
#[derive(sqlx::FromRow)]
pub(super) struct CapRow {
    pub(super) agent_id: Option<AgentId>,
    cap_usd: Option<f64>,
    cap_tokens: Option<i64>,
}

impl CapRow {
    pub(super) fn cap(&self) -> crate::domain::Cap {
        crate::domain::Cap {
            usd: self.cap_usd,
            tokens: self.cap_tokens,
        }
    }
}

/// The workspace's rate table column.
pub(super) type RatesColumn = Option<Json<muster_agents::RateTable>>;

/// Writes `impl UsageStore for $store` on database `$db`; `impl_store!` expands it once per backend.
macro_rules! impl_usage_store {
    ($store:ty, $db:ty) => {
        const _: () = {
            use $crate::domain::*;
            use $crate::store::Result;
            use $crate::store::runners::*;
            use $crate::store::usage::*;

            #[async_trait::async_trait]
            impl UsageStore for $store {
                async fn set_live_usage(&self, run: RunId, epoch: i64, usage: &Usage) -> Result<()> {
                    sqlx::query::<$db>(
                        "update run set input_tokens = $3, output_tokens = $4, cache_read_tokens = $5, cache_write_tokens = $6, \
                         cost_usd = $7, cost_unknown = $8, cost_estimated = $9 \
                         where run_id = $1 and lease_epoch = $2 and status in ('claimed', 'running')")
                        .bind(run).bind(epoch).bind(usage.input_tokens).bind(usage.output_tokens)
                        .bind(usage.cache_read_tokens).bind(usage.cache_write_tokens).bind(usage.cost_usd).bind(usage.cost_unknown)
                        .bind(usage.cost_estimated)
                        .execute(&self.pool).await?;
                    Ok(())
                }

                async fn usage_runs(&self, ws: WorkspaceId, filter: &UsageFilter) -> Result<Vec<RunUsage>> {
                    let mut qb = sqlx::QueryBuilder::<$db>::new(USAGE_RUNS);
                    qb.push_bind(ws).push(" and r.created_at >= ").push_bind(filter.from)
                        .push(" and r.created_at < ").push_bind(filter.to);
                    if let Some(agent) = filter.agent { qb.push(" and r.agent_id = ").push_bind(agent); }
                    if let Some(issue) = filter.issue { qb.push(" and r.issue_id = ").push_bind(issue); }
                    if let Some(project) = filter.project { qb.push(" and i.project_id = ").push_bind(project); }
                    if let Some(parent) = filter.parent { qb.push(" and i.parent_issue_id = ").push_bind(parent); }
                    qb.push(" order by r.created_at, r.run_id");
                    let rows = qb.build_query_as::<UsageRow>().fetch_all(&self.pool).await?;
                    Ok(rows.into_iter().map(Into::into).collect())
                }

                async fn spend_since(&self, ws: WorkspaceId, agent: Option<AgentId>, since: DateTime<Utc>) -> Result<Usage> {
                    let mut qb = sqlx::QueryBuilder::<$db>::new(SPEND_SINCE);
                    qb.push_bind(ws).push(" and created_at >= ").push_bind(since);
                    if let Some(agent) = agent { qb.push(" and agent_id = ").push_bind(agent); }
                    let row = qb.build_query_as::<SpendRow>().fetch_one(&self.pool).await?;
                    Ok(row.into())
                }

                async fn caps(&self, ws: WorkspaceId) -> Result<Caps> {
                    let rows = sqlx::query_as::<$db, CapRow>(
                        "select null as agent_id, cap_usd, cap_tokens from workspace where workspace_id = $1 \
                         union all select agent_id, cap_usd, cap_tokens from agent where workspace_id = $1 \
                         and (cap_usd is not null or cap_tokens is not null)")
                        .bind(ws).fetch_all(&self.pool).await?;
                    let mut caps = Caps::default();
                    let mut found = false;
                    for row in rows {
                        match row.agent_id {
                            Some(agent) => { caps.agents.insert(agent, row.cap()); }
                            None => { found = true; caps.workspace = row.cap(); }
                        }
                    }
                    if !found { return Err(Error::NotFound); }
                    Ok(caps)
                }

                async fn set_workspace_cap(&self, ws: WorkspaceId, cap: Cap) -> Result<()> {
                    let done = sqlx::query::<$db>("update workspace set cap_usd = $2, cap_tokens = $3 where workspace_id = $1")
                        .bind(ws).bind(cap.usd).bind(cap.tokens).execute(&self.pool).await?;
                    if done.rows_affected() == 0 { return Err(Error::NotFound); }
                    Ok(())
                }

                async fn set_agent_cap(&self, ws: WorkspaceId, agent: AgentId, cap: Cap) -> Result<()> {
                    let done = sqlx::query::<$db>(
                        "update agent set cap_usd = $3, cap_tokens = $4 where workspace_id = $1 and agent_id = $2")
                        .bind(ws).bind(agent).bind(cap.usd).bind(cap.tokens).execute(&self.pool).await?;
                    if done.rows_affected() == 0 { return Err(Error::NotFound); }
                    Ok(())
                }

                async fn record_cap_warning(&self, ws: WorkspaceId, scope: &str, month: &str, now: DateTime<Utc>) -> Result<bool> {
                    let done = sqlx::query::<$db>(
                        "insert into cap_warning (workspace_id, scope, month, created_at) values ($1, $2, $3, $4) \
                         on conflict do nothing")
                        .bind(ws).bind(scope).bind(month).bind(now).execute(&self.pool).await?;
                    Ok(done.rows_affected() > 0)
                }

                async fn rate_table(&self, ws: WorkspaceId) -> Result<Option<muster_agents::RateTable>> {
                    let rates = sqlx::query_scalar::<$db, RatesColumn>("select rate_table from workspace where workspace_id = $1")
                        .bind(ws).fetch_one(&self.pool).await?;
                    Ok(rates.map(|r| r.0))
                }

                async fn set_rate_table(&self, ws: WorkspaceId, rates: Option<&muster_agents::RateTable>) -> Result<()> {
                    let done = sqlx::query::<$db>("update workspace set rate_table = $2 where workspace_id = $1")
                        .bind(ws).bind(rates.map(sqlx::types::Json)).execute(&self.pool).await?;
                    if done.rows_affected() == 0 { return Err(Error::NotFound); }
                    Ok(())
                }

                async fn run_counts(&self) -> Result<Vec<(RunStatus, RuntimeKind, i64)>> {
                    let rows = sqlx::query_as::<$db, (RunStatus, $crate::store::codec::Named<RuntimeKind>, i64)>(
                        "select r.status, a.kind, count(*) from run r join agent a on a.agent_id = r.agent_id \
                         group by r.status, a.kind order by r.status, a.kind")
                        .fetch_all(&self.pool).await?;
                    Ok(rows.into_iter().map(|(status, kind, n)| (status, kind.0, n)).collect())
                }

                async fn queue_state(&self, now: DateTime<Utc>) -> Result<(i64, Option<DateTime<Utc>>)> {
                    let state = sqlx::query_as::<$db, (i64, Option<DateTime<Utc>>)>(
                        "select count(*), min(coalesce(not_before, created_at)) from run \
                         where status = 'queued' and (not_before is null or not_before <= $1)")
                        .bind(now).fetch_one(&self.pool).await?;
                    Ok(state)
                }

                async fn all_runners(&self) -> Result<Vec<Runner>> {
                    let rows = sqlx::query_as::<$db, RunnerRow>(concat!(runner_select!(), " order by r.name, r.runner_id"))
                        .fetch_all(&self.pool).await?;
                    Ok(rows.into_iter().map(Into::into).collect())
                }

                fn pool_stats(&self) -> (u32, u32) {
                    (self.pool.size(), u32::try_from(self.pool.num_idle()).unwrap_or(u32::MAX))
                }
            }
        };
    };
}
pub(super) use impl_usage_store;
