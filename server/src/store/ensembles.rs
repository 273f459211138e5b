//! SQL fragments of the ensemble methods (in `common.rs`'s `impl_store!`, beside the rest); the run insert
//! they share with `create_run` is `runs.rs`'s `insert_run!`.

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
pub(super) use {ensemble_cols, ensemble_run_cols};
