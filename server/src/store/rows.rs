//! Row structs more than one area reads (the derives are generic over the database) and their mapping to
//! domain records, and the clock the store stamps rows with. Column names are the struct's field names;
//! a row only one area reads is in that area's file.

use chrono::{DateTime, Utc};

use crate::domain::{
    AgentId, CommentId, Email, EnsembleRunId, FailureReason, IssueId, Run, RunId, RunPurpose,
    RunStatus, RunTrigger, RunnerId, Usage, User, UserId, WorkspaceId,
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
    purpose: RunPurpose,
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
            purpose: r.purpose,
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
