//! Row structs shared by both backends (the derives are generic over the database) and their mapping to
//! domain records. Column names are the struct's field names.

use chrono::{DateTime, Utc};
use sqlx::types::Json;

use crate::domain::{
    AgentId, CommentId, Email, Ensemble, EnsembleId, EnsembleName, EnsembleRun, EnsembleRunId,
    EnsembleSettings, EnsembleStatus, FailureReason, IssueId, ReviewOutcome, Run, RunId, RunStatus,
    RunTrigger, RunnerId, Usage, User, UserId, WorkspaceId,
};

#[derive(sqlx::FromRow)]
pub(super) struct UserRow {
    user_id: UserId,
    email: Email,
    display_name: String,
    password_hash: String,
    created_at: DateTime<Utc>,
}

impl From<UserRow> for User {
    fn from(r: UserRow) -> Self {
        User {
            id: r.user_id,
            email: r.email,
            display_name: r.display_name,
            password_hash: r.password_hash,
            created_at: r.created_at,
        }
    }
}

#[derive(sqlx::FromRow)]
pub(super) struct RunRow {
    run_id: RunId,
    workspace_id: WorkspaceId,
    issue_id: IssueId,
    pub(super) agent_id: AgentId,
    status: RunStatus,
    attempt: i32,
    chain_depth: i32,
    runner_id: Option<RunnerId>,
    lease_expires_at: Option<DateTime<Utc>>,
    not_before: Option<DateTime<Utc>>,
    pid: Option<i32>,
    worktree: Option<String>,
    branch: Option<String>,
    base_commit: Option<String>,
    head_commit: Option<String>,
    session_id: Option<String>,
    exit_code: Option<i32>,
    failure_reason: Option<FailureReason>,
    failure_detail: Option<String>,
    input_tokens: i64,
    output_tokens: i64,
    cache_read_tokens: i64,
    cache_write_tokens: i64,
    cost_usd: f64,
    cost_unknown: bool,
    cost_estimated: bool,
    summary: Option<String>,
    diff_stat: Option<String>,
    stalled_at: Option<DateTime<Utc>>,
    created_at: DateTime<Utc>,
    started_at: Option<DateTime<Utc>>,
    finished_at: Option<DateTime<Utc>>,
    lease_epoch: i64,
    trigger: RunTrigger,
    trigger_comment_id: Option<CommentId>,
    previous_run_id: Option<RunId>,
    ensemble_run_id: Option<EnsembleRunId>,
}

impl From<RunRow> for Run {
    fn from(r: RunRow) -> Self {
        Run {
            id: r.run_id,
            workspace_id: r.workspace_id,
            issue_id: r.issue_id,
            agent_id: r.agent_id,
            status: r.status,
            attempt: r.attempt,
            chain_depth: r.chain_depth,
            runner_id: r.runner_id,
            lease_expires_at: r.lease_expires_at,
            not_before: r.not_before,
            pid: r.pid,
            worktree: r.worktree,
            branch: r.branch,
            base_commit: r.base_commit,
            head_commit: r.head_commit,
            session_id: r.session_id,
            exit_code: r.exit_code,
            failure_reason: r.failure_reason,
            failure_detail: r.failure_detail,
            usage: Usage {
                input_tokens: r.input_tokens,
                output_tokens: r.output_tokens,
                cache_read_tokens: r.cache_read_tokens,
                cache_write_tokens: r.cache_write_tokens,
                cost_usd: r.cost_usd,
                cost_unknown: r.cost_unknown,
                cost_estimated: r.cost_estimated,
            },
            summary: r.summary,
            diff_stat: r.diff_stat,
            stalled_at: r.stalled_at,
            created_at: r.created_at,
            started_at: r.started_at,
            finished_at: r.finished_at,
            lease_epoch: r.lease_epoch,
            trigger: r.trigger,
            trigger_comment_id: r.trigger_comment_id,
            previous_run_id: r.previous_run_id,
            ensemble_run_id: r.ensemble_run_id,
        }
    }
}

/// `t` truncated to microseconds: what both databases can store exactly.
pub(super) fn micros(t: DateTime<Utc>) -> DateTime<Utc> {
    use chrono::{DurationRound, TimeDelta};
    t.duration_trunc(TimeDelta::microseconds(1)).unwrap_or(t)
}

/// The current time, truncated to microseconds: what both databases can store exactly.
pub(super) fn now() -> DateTime<Utc> {
    use chrono::{DurationRound, TimeDelta};
    let t = Utc::now();
    t.duration_trunc(TimeDelta::microseconds(1)).unwrap_or(t)
}

#[derive(sqlx::FromRow)]
pub(super) struct EnsembleRow {
    ensemble_id: EnsembleId,
    workspace_id: WorkspaceId,
    name: EnsembleName,
    settings: Json<EnsembleSettings>,
    created_at: DateTime<Utc>,
    updated_at: DateTime<Utc>,
}

impl From<EnsembleRow> for Ensemble {
    fn from(r: EnsembleRow) -> Self {
        Ensemble {
            id: r.ensemble_id,
            workspace_id: r.workspace_id,
            name: r.name,
            settings: r.settings.0,
            created_at: r.created_at,
            updated_at: r.updated_at,
        }
    }
}

#[derive(sqlx::FromRow)]
pub(super) struct EnsembleRunRow {
    ensemble_run_id: EnsembleRunId,
    workspace_id: WorkspaceId,
    issue_id: IssueId,
    ensemble_id: Option<EnsembleId>,
    name: String,
    number: i32,
    settings: Json<EnsembleSettings>,
    base_commit: Option<String>,
    base_branch: Option<String>,
    status: EnsembleStatus,
    stop_reason: Option<String>,
    review_run_id: Option<RunId>,
    review_labels: Option<Json<Vec<(char, RunId)>>>,
    review: Option<Json<ReviewOutcome>>,
    chosen_run_id: Option<RunId>,
    chosen_by: Option<UserId>,
    merged_commit: Option<String>,
    created_at: DateTime<Utc>,
    decided_at: Option<DateTime<Utc>>,
}

impl From<EnsembleRunRow> for EnsembleRun {
    fn from(r: EnsembleRunRow) -> Self {
        EnsembleRun {
            id: r.ensemble_run_id,
            workspace_id: r.workspace_id,
            issue_id: r.issue_id,
            ensemble_id: r.ensemble_id,
            name: r.name,
            number: r.number,
            settings: r.settings.0,
            base_commit: r.base_commit,
            base_branch: r.base_branch,
            status: r.status,
            stop_reason: r.stop_reason,
            review_run_id: r.review_run_id,
            review_labels: r.review_labels.map(|l| l.0).unwrap_or_default(),
            review: r.review.map(|r| r.0),
            chosen_run_id: r.chosen_run_id,
            chosen_by: r.chosen_by,
            merged_commit: r.merged_commit,
            created_at: r.created_at,
            decided_at: r.decided_at,
        }
    }
}
