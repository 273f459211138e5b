//! SQL fragments of the ensemble methods (in `common.rs`'s `impl_store!`, beside the rest) and the run
//! insert they share with `create_run`.

macro_rules! ensemble_cols {
    () => {
        "ensemble_id, workspace_id, name, settings, created_at, updated_at"
    };
}
macro_rules! ensemble_run_cols { () => {
    "ensemble_run_id, workspace_id, issue_id, ensemble_id, name, number, settings, base_commit, base_branch, \
     status, stop_reason, review_run_id, review_labels, review, chosen_run_id, chosen_by, merged_commit, \
     created_at, decided_at"
} }
/// The insert of one queued run (`create_run` and an ensemble's candidates and reviewer).
macro_rules! insert_run { ($db:ty, $exec:expr, $id:expr, $new:expr) => {
    sqlx::query_as::<$db, RunRow>(concat!(
        "insert into run (run_id, workspace_id, issue_id, agent_id, status, attempt, chain_depth, not_before, ",
        "created_at, trigger, trigger_comment_id, previous_run_id, ensemble_run_id, model) ",
        "values ($1, $2, $3, $4, 'queued', $5, $6, $7, $8, $9, $10, $11, $12, ",
        "(select model from agent where agent_id = $4)) returning ", run_cols!()))
        .bind($id).bind($new.workspace_id).bind($new.issue_id).bind($new.agent_id)
        .bind($new.attempt).bind($new.chain_depth).bind($new.not_before).bind(now())
        .bind($new.trigger).bind($new.trigger_comment_id).bind($new.previous_run_id)
        .bind($new.ensemble_run_id)
        .fetch_one($exec).await
} }
pub(super) use {ensemble_cols, ensemble_run_cols, insert_run};
