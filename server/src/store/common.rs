//! The SQL both backends share, as one macro expanded per backend.
//!
//! `impl_store!(Store, Db)` writes the whole `impl Store` for one backend type. Every query here is
//! portable SQL (lowercase, `$N` parameters, `returning`, `on conflict`); each backend supplies what differs:
//! `begin_write` (SQLite takes the write lock up front with `BEGIN IMMEDIATE`), `claim` (Postgres uses
//! `for update skip locked`), `LABEL_FILTER_*` fragments, `migrate_impl`, `ping_impl` and `close_impl`.
//!
//! Invariant: a method that writes more than one row does it in one transaction, so a failure leaves
//! nothing half-written.

macro_rules! ws_cols {
    () => {
        "w.workspace_id, w.name, w.slug, w.issue_prefix, w.issue_counter, w.repo_path, w.created_at, \
         w.mention_depth_limit, w.agent_runs_per_issue_per_hour, w.check_command, w.check_timeout_secs, \
         w.egress_hosts"
    };
    (bare) => {
        "workspace_id, name, slug, issue_prefix, issue_counter, repo_path, created_at, mention_depth_limit, \
         agent_runs_per_issue_per_hour, check_command, check_timeout_secs, egress_hosts"
    };
}
macro_rules! user_cols {
    () => {
        "u.user_id, u.email, u.display_name, u.password_hash, u.created_at"
    };
    (bare) => {
        "user_id, email, display_name, password_hash, created_at"
    };
}
macro_rules! run_cols { () => {
    "run_id, workspace_id, issue_id, agent_id, status, attempt, chain_depth, runner_id, lease_expires_at, \
     not_before, pid, worktree, branch, session_id, exit_code, failure_reason, input_tokens, output_tokens, \
     cache_read_tokens, cache_write_tokens, cost_usd, summary, diff_stat, stalled_at, created_at, \
     started_at, finished_at, failure_detail, cost_unknown, lease_epoch, trigger, trigger_comment_id, \
     previous_run_id, ensemble_run_id, cost_estimated, base_commit, head_commit"
} }
pub(super) use {run_cols, user_cols, ws_cols};

/// Writes `impl Store for $store` on database `$db`.
macro_rules! impl_store {
    ($store:ty, $db:ty) => {
        #[async_trait::async_trait]
        impl $crate::store::Store for $store {
            fn backend(&self) -> $crate::store::Backend { Self::BACKEND }
            async fn ping(&self) -> Result<()> { self.ping_impl().await }
            async fn migrate(&self) -> anyhow::Result<()> { self.migrate_impl().await }
            async fn close(&self) { self.close_impl().await }
            async fn notify(&self, message: &str) -> Result<()> { self.notify_impl(message).await }
            async fn listen(&self) -> anyhow::Result<Option<tokio::sync::mpsc::Receiver<String>>> {
                self.listen_impl().await
            }

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

            async fn run_counts(&self) -> Result<Vec<(RunStatus, AgentKind, i64)>> {
                let rows = sqlx::query_as::<$db, (RunStatus, AgentKind, i64)>(
                    "select r.status, a.kind, count(*) from run r join agent a on a.agent_id = r.agent_id \
                     group by r.status, a.kind order by r.status, a.kind")
                    .fetch_all(&self.pool).await?;
                Ok(rows)
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

        $crate::store::people::impl_people_store!($store, $db);
        $crate::store::sessions::impl_sessions_store!($store, $db);
        $crate::store::issues::impl_issues_store!($store, $db);
        $crate::store::agents::impl_agents_store!($store, $db);
        $crate::store::runners::impl_runners_store!($store, $db);
        $crate::store::runs::impl_runs_store!($store, $db);
        $crate::store::run_log::impl_run_log_store!($store, $db);
        $crate::store::inbox::impl_inbox_store!($store, $db);
        $crate::store::ensembles::impl_ensembles_store!($store, $db);
    };
}
pub(super) use impl_store;

/// Takes the workspace row's write lock (a no-op update) so that concurrent changes to its members or
/// board positions are serialised on Postgres; on SQLite `BEGIN IMMEDIATE` already serialises writers.
macro_rules! lock_workspace {
    ($db:ty, $tx:ident, $ws:expr) => {{
        let done = sqlx::query::<$db>(
            "update workspace set issue_counter = issue_counter where workspace_id = $1",
        )
        .bind($ws)
        .execute(&mut *$tx)
        .await?;
        if done.rows_affected() == 0 {
            return Err(Error::NotFound);
        }
    }};
}
pub(super) use lock_workspace;


/// Events per insert statement (5 binds each, far below both databases' parameter limits).
pub(super) const APPEND_CHUNK: usize = 200;
