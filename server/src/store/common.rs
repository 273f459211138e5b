//! What the store's areas share, and the macro that puts a backend together.
//!
//! `impl_store!(Store, Db)` writes, for one backend type, the infrastructure part of `impl Store` and
//! expands each area's own `impl_<area>_store!` (in `people.rs`, `sessions.rs`, `issues.rs`, `agents.rs`,
//! `runners.rs`, `runs.rs`, `run_log.rs`, `inbox.rs`, `ensembles.rs`, `usage.rs`, `forges.rs`, `plans.rs`, `search.rs`), so each backend gets
//! its own fully typed impls. Every query is portable SQL (lowercase, `$N` parameters, `returning`,
//! `on conflict`); each backend supplies what differs: `begin_write` (SQLite takes the write lock up
//! front with `BEGIN IMMEDIATE`), `claim` (Postgres uses `for no key update skip locked`), `insert_event_rows`
//! and `append_leased_rows` (the run log's bulk writes), the `LABEL_FILTER_*`, `DISTINCT_LABELS` and
//! `BOUND_*` fragments, and `ping_impl`, `migrate_impl`, `close_impl`, `notify_impl` and `listen_impl`.
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
     previous_run_id, ensemble_run_id, cost_estimated, base_commit, head_commit, purpose"
} }

pub(super) use {run_cols, user_cols, ws_cols};

/// Writes `impl Store for $store` on database `$db`, and every area's trait through its own macro.
macro_rules! impl_store {
    ($store:ty, $db:ty) => {
        #[async_trait::async_trait]
        impl $crate::store::Store for $store {
            fn backend(&self) -> $crate::store::Backend {
                Self::BACKEND
            }
            async fn ping(&self) -> Result<()> {
                self.ping_impl().await
            }
            async fn migrate(&self) -> anyhow::Result<()> {
                self.migrate_impl().await
            }
            async fn close(&self) {
                self.close_impl().await
            }
            async fn notify(&self, message: &str) -> Result<()> {
                self.notify_impl(message).await
            }
            async fn listen(&self) -> anyhow::Result<Option<tokio::sync::mpsc::Receiver<String>>> {
                self.listen_impl().await
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
        $crate::store::usage::impl_usage_store!($store, $db);
        $crate::store::forges::impl_forges_store!($store, $db);
        $crate::store::plans::impl_plans_store!($store, $db);
        $crate::store::projects::impl_projects_store!($store, $db);
        $crate::store::proposals::impl_proposals_store!($store, $db);
        $crate::store::search::impl_search_store!($store, $db);
        $crate::store::lists::impl_lists_store!($store, $db);
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
