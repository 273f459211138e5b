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

            async fn create_ensemble(&self, ws: WorkspaceId, name: &EnsembleName, settings: &EnsembleSettings) -> Result<Ensemble> {
                let at = now();
                let row = sqlx::query_as::<$db, EnsembleRow>(concat!(
                    "insert into ensemble (ensemble_id, workspace_id, name, settings, created_at, updated_at) ",
                    "values ($1, $2, $3, $4, $5, $5) returning ", ensemble_cols!()))
                    .bind(EnsembleId::new()).bind(ws).bind(name.as_str()).bind(sqlx::types::Json(settings)).bind(at)
                    .fetch_one(&self.pool).await?;
                Ok(row.into())
            }

            async fn get_ensemble_by_name(&self, ws: WorkspaceId, name: &EnsembleName) -> Result<Ensemble> {
                let row = sqlx::query_as::<$db, EnsembleRow>(concat!(
                    "select ", ensemble_cols!(), " from ensemble where workspace_id = $1 and name = $2"))
                    .bind(ws).bind(name.as_str()).fetch_one(&self.pool).await?;
                Ok(row.into())
            }

            async fn list_ensembles(&self, ws: WorkspaceId) -> Result<Vec<Ensemble>> {
                let rows = sqlx::query_as::<$db, EnsembleRow>(concat!(
                    "select ", ensemble_cols!(), " from ensemble where workspace_id = $1 order by name"))
                    .bind(ws).fetch_all(&self.pool).await?;
                Ok(rows.into_iter().map(Into::into).collect())
            }

            async fn update_ensemble(&self, ws: WorkspaceId, id: EnsembleId, name: &EnsembleName, settings: &EnsembleSettings) -> Result<Ensemble> {
                let row = sqlx::query_as::<$db, EnsembleRow>(concat!(
                    "update ensemble set name = $3, settings = $4, updated_at = $5 ",
                    "where ensemble_id = $1 and workspace_id = $2 returning ", ensemble_cols!()))
                    .bind(id).bind(ws).bind(name.as_str()).bind(sqlx::types::Json(settings)).bind(now())
                    .fetch_one(&self.pool).await?;
                Ok(row.into())
            }

            async fn delete_ensemble(&self, ws: WorkspaceId, id: EnsembleId) -> Result<()> {
                let done = sqlx::query::<$db>("delete from ensemble where ensemble_id = $1 and workspace_id = $2")
                    .bind(id).bind(ws).execute(&self.pool).await?;
                if done.rows_affected() == 0 { return Err(Error::NotFound); }
                Ok(())
            }

            async fn create_ensemble_run(&self, new: &NewEnsembleRun, candidates: &[NewRun]) -> Result<(EnsembleRun, Vec<Run>)> {
                let (id, mut tx) = (EnsembleRunId::new(), self.begin_write().await?);
                let number = sqlx::query_scalar::<$db, i32>(
                    "select cast(coalesce(max(number), 0) + 1 as integer) from ensemble_run where issue_id = $1")
                    .bind(new.issue_id).fetch_one(&mut *tx).await?;
                let row = sqlx::query_as::<$db, EnsembleRunRow>(concat!(
                    "insert into ensemble_run (ensemble_run_id, workspace_id, issue_id, ensemble_id, name, number, settings, ",
                    "base_commit, base_branch, status, created_at) values ($1, $2, $3, $4, $5, $6, $7, $8, $9, 'running', $10) ",
                    "returning ", ensemble_run_cols!()))
                    .bind(id).bind(new.workspace_id).bind(new.issue_id).bind(new.ensemble_id).bind(&new.name).bind(number)
                    .bind(sqlx::types::Json(&new.settings)).bind(new.base_commit.as_deref()).bind(new.base_branch.as_deref())
                    .bind(now())
                    .fetch_one(&mut *tx).await?;
                let mut runs = Vec::with_capacity(candidates.len());
                for candidate in candidates {
                    let candidate = NewRun { ensemble_run_id: Some(id), ..candidate.clone() };
                    let run = insert_run!($db, &mut *tx, RunId::new(), candidate)?;
                    runs.push(run.into());
                }
                tx.commit().await?;
                Ok((row.into(), runs))
            }

            async fn get_ensemble_run(&self, id: EnsembleRunId) -> Result<EnsembleRun> {
                let row = sqlx::query_as::<$db, EnsembleRunRow>(concat!(
                    "select ", ensemble_run_cols!(), " from ensemble_run where ensemble_run_id = $1"))
                    .bind(id).fetch_one(&self.pool).await?;
                Ok(row.into())
            }

            async fn list_ensemble_runs(&self, issue: IssueId) -> Result<Vec<EnsembleRun>> {
                let rows = sqlx::query_as::<$db, EnsembleRunRow>(concat!(
                    "select ", ensemble_run_cols!(), " from ensemble_run where issue_id = $1 order by number"))
                    .bind(issue).fetch_all(&self.pool).await?;
                Ok(rows.into_iter().map(Into::into).collect())
            }

            async fn latest_ensemble_runs(&self, ws: WorkspaceId) -> Result<Vec<EnsembleRun>> {
                let rows = sqlx::query_as::<$db, EnsembleRunRow>(concat!(
                    "select ", ensemble_run_cols!(), " from ensemble_run e where e.workspace_id = $1 and not exists (",
                    "select 1 from ensemble_run n where n.issue_id = e.issue_id and n.number > e.number) ",
                    "order by e.created_at"))
                    .bind(ws).fetch_all(&self.pool).await?;
                Ok(rows.into_iter().map(Into::into).collect())
            }

            async fn list_ensemble_members_runs(&self, id: EnsembleRunId) -> Result<Vec<Run>> {
                let rows = sqlx::query_as::<$db, RunRow>(concat!("select ", run_cols!(), " from run ",
                    "where ensemble_run_id = $1 order by created_at, run_id"))
                    .bind(id).fetch_all(&self.pool).await?;
                Ok(rows.into_iter().map(Into::into).collect())
            }

            async fn note_ensemble_stop(&self, id: EnsembleRunId, reason: &str) -> Result<bool> {
                let done = sqlx::query::<$db>(
                    "update ensemble_run set stop_reason = $2 where ensemble_run_id = $1 and stop_reason is null")
                    .bind(id).bind(reason).execute(&self.pool).await?;
                Ok(done.rows_affected() > 0)
            }

            async fn start_ensemble_review(&self, id: EnsembleRunId, review: &NewRun, labels: &[(char, RunId)]) -> Result<Run> {
                let mut tx = self.begin_write().await?;
                let status = sqlx::query_scalar::<$db, EnsembleStatus>(
                    "select status from ensemble_run where ensemble_run_id = $1")
                    .bind(id).fetch_one(&mut *tx).await?;
                if status != EnsembleStatus::Running {
                    return Err(Error::conflict("ensemble_run_status"));
                }
                let run_id = RunId::new();
                let review = NewRun { ensemble_run_id: Some(id), ..review.clone() };
                let run: Run = insert_run!($db, &mut *tx, run_id, review)?.into();
                let done = sqlx::query::<$db>(
                    "update ensemble_run set status = 'reviewing', review_run_id = $2, review_labels = $3 \
                     where ensemble_run_id = $1 and status = 'running'")
                    .bind(id).bind(run_id).bind(sqlx::types::Json(labels)).execute(&mut *tx).await?;
                if done.rows_affected() == 0 {
                    return Err(Error::conflict("ensemble_run_status"));
                }
                tx.commit().await?;
                Ok(run)
            }

            async fn decide_ensemble_run(&self, id: EnsembleRunId, review: Option<&ReviewOutcome>) -> Result<Option<EnsembleRun>> {
                let row = sqlx::query_as::<$db, EnsembleRunRow>(concat!(
                    "update ensemble_run set status = 'decided', review = coalesce($2, review), decided_at = $3 ",
                    "where ensemble_run_id = $1 and status in ('running', 'reviewing') returning ", ensemble_run_cols!()))
                    .bind(id).bind(review.map(sqlx::types::Json)).bind(now())
                    .fetch_optional(&self.pool).await?;
                Ok(row.map(Into::into))
            }

            async fn choose_ensemble_candidate(&self, id: EnsembleRunId, run: RunId, by: UserId, merged_commit: Option<&str>) -> Result<EnsembleRun> {
                let row = sqlx::query_as::<$db, EnsembleRunRow>(concat!(
                    "update ensemble_run set status = 'chosen', chosen_run_id = $2, chosen_by = $3, merged_commit = $4, ",
                    "decided_at = coalesce(decided_at, $5) where ensemble_run_id = $1 and status <> 'chosen' ",
                    "and exists (select 1 from run where run_id = $2 and ensemble_run_id = $1) returning ", ensemble_run_cols!()))
                    .bind(id).bind(run).bind(by).bind(merged_commit).bind(now())
                    .fetch_optional(&self.pool).await?;
                match row {
                    Some(row) => Ok(row.into()),
                    None => {
                        $crate::store::Store::get_ensemble_run(self, id).await?;
                        Err(Error::conflict("ensemble_run_chosen"))
                    }
                }
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
