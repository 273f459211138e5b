//! Runs, their durable event log, runners and the inbox.
//!
//! Run state machine: `queued → claimed → running → succeeded | failed | cancelled | timed_out`, and
//! `claimed | running → interrupted` when the runner holding the lease is gone (server crash, lost
//! heartbeat). Terminal states never change again.

use chrono::{DateTime, Utc};

use super::{
    AgentId, CommentId, EnsembleRunId, InboxItemId, IssueId, RunId, RunnerId, RunnerTokenId,
    UserId, WorkspaceId, string_enum,
};

string_enum!(
    /// Where a run is in its life.
    RunStatus, "status" {
        Queued => "queued",
        Claimed => "claimed",
        Running => "running",
        Succeeded => "succeeded",
        Failed => "failed",
        Cancelled => "cancelled",
        TimedOut => "timed_out",
        Interrupted => "interrupted",
    }
);

impl RunStatus {
    /// Claimed or running: holds a lease and counts against the agent's concurrency.
    pub fn is_active(self) -> bool {
        matches!(self, RunStatus::Claimed | RunStatus::Running)
    }

    /// A final state: the run will never change again.
    pub fn is_terminal(self) -> bool {
        !matches!(
            self,
            RunStatus::Queued | RunStatus::Claimed | RunStatus::Running
        )
    }
}

string_enum!(
    /// Why a run did not succeed, classified so the run engine can decide on a retry.
    FailureReason, "failure_reason" {
        Auth => "auth",
        RateLimit => "rate_limit",
        Server => "server",
        Network => "network",
        Config => "config",
        MissingCli => "missing_cli",
        RunnerLost => "runner_lost",
        OverBudget => "over_budget",
        Stalled => "stalled",
        Timeout => "timeout",
        Exit => "exit",
        EventCap => "event_cap",
        Sandbox => "sandbox",
        OverCap => "over_cap",
        Git => "git",
        EgressRefused => "egress_refused",
        Unreachable => "unreachable",
        NeedsPermission => "needs_permission",
    }
);

impl FailureReason {
    /// Transient failures worth another attempt; auth and configuration problems never are.
    pub fn retryable(self) -> bool {
        matches!(
            self,
            FailureReason::RateLimit
                | FailureReason::Server
                | FailureReason::Network
                | FailureReason::RunnerLost
        )
    }
}

string_enum!(
    /// What queued a run: its issue was assigned to the agent (or became due with it assigned), a
    /// person commented on the agent's issue, someone mentioned the agent, or a run was tried again.
    RunTrigger, "trigger" {
        Assignment => "assignment",
        Comment => "comment",
        Mention => "mention",
        Retry => "retry",
    }
);

string_enum!(
    /// What a run is for: work on its issue, or a plan of it — it proposes sub-issues through its token
    /// (see [`crate::domain::proposal`]), its issue's status is left alone, and its issue's blockers do
    /// not hold it.
    RunPurpose, "purpose" {
        Work => "work",
        Plan => "plan",
    }
);

/// Position in a run's event log; the replay cursor. The first event has seq 1; 0 means "before all".
pub type Seq = i64;

/// Token and cost totals.
#[derive(Debug, Clone, Copy, PartialEq, Default, serde::Serialize, serde::Deserialize)]
pub struct Usage {
    pub input_tokens: i64,
    pub output_tokens: i64,
    pub cache_read_tokens: i64,
    pub cache_write_tokens: i64,
    pub cost_usd: f64,
    /// Some tokens were used that nothing priced (no cost from the CLI, no rate for the model): then
    /// `cost_usd` counts only the priced part and the cost is shown as unknown, never as $0.
    #[serde(default)]
    pub cost_unknown: bool,
    /// Part of `cost_usd` was priced by Muster from a rate table (the CLI reported tokens but no
    /// cost): the cost reads "estimated".
    #[serde(default)]
    pub cost_estimated: bool,
}

impl std::ops::AddAssign<&Usage> for Usage {
    /// Adds what another report or run spent; the sum's cost is unknown when either's is.
    fn add_assign(&mut self, u: &Usage) {
        self.input_tokens += u.input_tokens;
        self.output_tokens += u.output_tokens;
        self.cache_read_tokens += u.cache_read_tokens;
        self.cache_write_tokens += u.cache_write_tokens;
        self.cost_usd += u.cost_usd;
        self.cost_unknown |= u.cost_unknown;
        self.cost_estimated |= u.cost_estimated;
    }
}

impl<'a> std::iter::Sum<&'a Usage> for Usage {
    fn sum<I: Iterator<Item = &'a Usage>>(all: I) -> Self {
        all.fold(Usage::default(), |mut sum, u| {
            sum += u;
            sum
        })
    }
}

impl Usage {
    /// Every token, cache included.
    pub fn tokens(&self) -> i64 {
        self.input_tokens + self.output_tokens + self.cache_read_tokens + self.cache_write_tokens
    }

    /// Adds one `Usage` event's increment; an increment without a cost is priced by `model` from `rates`
    /// (Codex reports none, OpenCode 0 for unpriced models). The run engine and the run page both count
    /// this way, so the page's live counters match what the run records.
    pub fn add_priced(
        &mut self,
        u: muster_agents::TokenUsage,
        model: Option<&str>,
        rates: &muster_agents::RateTable,
    ) {
        let u = match (model, u.cost_usd) {
            (Some(model), None) => {
                let priced = rates.with_cost(model, u);
                self.cost_estimated |= priced.cost_usd.is_some() && priced.total_tokens() > 0;
                priced
            }
            _ => u,
        };
        let count = |n: u64| i64::try_from(n).unwrap_or(i64::MAX);
        self.input_tokens += count(u.input);
        self.output_tokens += count(u.output);
        self.cache_read_tokens += count(u.cache_read);
        self.cache_write_tokens += count(u.cache_write);
        self.cost_usd += u.cost_usd.unwrap_or(0.0);
        self.cost_unknown |= u.cost_usd.is_none() && u.total_tokens() > 0;
    }
}

/// Why a cost reads "unpriced" (the title of the label).
pub const UNPRICED_TITLE: &str = "Unknown cost: Muster has no price for this model and the CLI reported no \
    cost, so the tokens are counted but not priced (not $0)";
/// Why a cost reads "estimated".
pub const ESTIMATED_TITLE: &str = "Estimated: the CLI reports tokens but no cost, so Muster priced them \
    from the rate table (Usage → Rates)";
/// Why a local model's cost reads "$0 · local".
pub const LOCAL_TITLE: &str = "A local model: no provider charges for its tokens";

impl Usage {
    /// How the cost reads for a run of an agent of `kind`, with a title explaining it when it is not
    /// a plain amount: "$0.0421"; "$0.0421 · estimated" when Muster priced the tokens from its rate table
    /// (Codex reports none); "unpriced" when some tokens had no price; "$0 · local" for a local model
    /// that cost nothing.
    pub fn cost_label(&self, kind: Option<super::RuntimeKind>) -> (String, Option<&'static str>) {
        if kind.is_some_and(super::RuntimeKind::is_local_model) && self.cost_usd == 0.0 {
            ("$0 · local".to_owned(), Some(LOCAL_TITLE))
        } else if self.cost_estimated && !self.cost_unknown && self.cost_usd > 0.0 {
            (
                format!("${:.4} · estimated", self.cost_usd),
                Some(ESTIMATED_TITLE),
            )
        } else if self.cost_unknown && self.cost_usd == 0.0 {
            ("unpriced".to_owned(), Some(UNPRICED_TITLE))
        } else if self.cost_unknown {
            (
                format!("${:.4} + unpriced", self.cost_usd),
                Some(UNPRICED_TITLE),
            )
        } else {
            (format!("${:.4}", self.cost_usd), None)
        }
    }
}

/// Input for queueing a run.
#[derive(Debug, Clone)]
pub struct NewRun {
    pub workspace_id: WorkspaceId,
    pub issue_id: IssueId,
    pub agent_id: AgentId,
    /// 1 for the first try, then one more per retry.
    pub attempt: i32,
    /// Not claimable before this instant (retry backoff).
    pub not_before: Option<DateTime<Utc>>,
    /// How many agent hand-offs led here (loop guard).
    pub chain_depth: i32,
    /// What queued it.
    pub trigger: RunTrigger,
    /// The comment that queued it (a reply or a mention), when one did.
    pub trigger_comment_id: Option<CommentId>,
    /// The agent's last run on the issue, whose session and branch a follow-up continues.
    pub previous_run_id: Option<RunId>,
    /// The ensemble run it belongs to (a candidate or the reviewer).
    pub ensemble_run_id: Option<EnsembleRunId>,
    /// Work, or a plan.
    pub purpose: RunPurpose,
}

impl NewRun {
    /// A first attempt of `agent` on `issue`, queued by an assignment, at chain depth 0.
    pub fn assignment(workspace_id: WorkspaceId, issue_id: IssueId, agent_id: AgentId) -> Self {
        Self {
            workspace_id,
            issue_id,
            agent_id,
            attempt: 1,
            not_before: None,
            chain_depth: 0,
            trigger: RunTrigger::Assignment,
            trigger_comment_id: None,
            previous_run_id: None,
            ensemble_run_id: None,
            purpose: RunPurpose::Work,
        }
    }
}

/// How a run ended (also as a runner reports it, in the runner protocol's `finished`).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct RunOutcome {
    /// A terminal status.
    pub status: RunStatus,
    pub exit_code: Option<i32>,
    pub failure_reason: Option<FailureReason>,
    /// The decisive error message the CLI reported, for the failure text and its details.
    pub failure_detail: Option<String>,
    pub usage: Usage,
    pub summary: Option<String>,
    pub diff_stat: Option<String>,
    pub session_id: Option<String>,
    /// The commit the run started from, when it had a worktree.
    #[serde(default)]
    pub base_commit: Option<String>,
    /// The commit the run's work became on its line's branch (the start itself when it changed
    /// nothing): what is compared, pushed and merged, never a branch tip read later.
    #[serde(default)]
    pub head_commit: Option<String>,
}

impl RunOutcome {
    /// An end with `status` and nothing more to say: no exit code, usage, summary, session or commits
    /// (a run cancelled before it started). Say more with `RunOutcome { exit_code: Some(0),
    /// ..RunOutcome::bare(status) }`.
    pub fn bare(status: RunStatus) -> RunOutcome {
        RunOutcome {
            status,
            exit_code: None,
            failure_reason: None,
            failure_detail: None,
            usage: Usage::default(),
            summary: None,
            diff_stat: None,
            session_id: None,
            base_commit: None,
            head_commit: None,
        }
    }
}

/// One attempt of one agent on one issue.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Run {
    pub id: RunId,
    pub workspace_id: WorkspaceId,
    pub issue_id: IssueId,
    pub agent_id: AgentId,
    pub status: RunStatus,
    pub attempt: i32,
    pub chain_depth: i32,
    pub runner_id: Option<RunnerId>,
    pub lease_expires_at: Option<DateTime<Utc>>,
    pub not_before: Option<DateTime<Utc>>,
    pub pid: Option<i32>,
    pub worktree: Option<String>,
    pub branch: Option<String>,
    /// The commit the run started from (see [`RunOutcome::base_commit`]).
    pub base_commit: Option<String>,
    /// The commit its work became (see [`RunOutcome::head_commit`]).
    pub head_commit: Option<String>,
    pub session_id: Option<String>,
    pub exit_code: Option<i32>,
    pub failure_reason: Option<FailureReason>,
    /// The decisive error message the CLI reported (redacted), when it failed with one.
    pub failure_detail: Option<String>,
    pub usage: Usage,
    pub summary: Option<String>,
    pub diff_stat: Option<String>,
    /// Set while the run is flagged as stalled (no output for the agent's stall timeout).
    pub stalled_at: Option<DateTime<Utc>>,
    pub created_at: DateTime<Utc>,
    pub started_at: Option<DateTime<Utc>>,
    pub finished_at: Option<DateTime<Utc>>,
    /// How many times the run was claimed: each claim increments it, and a runner's renewals, events and
    /// finish count only at the epoch of its own claim, so a runner that lost the run writes nothing.
    pub lease_epoch: i64,
    /// What queued it.
    pub trigger: RunTrigger,
    /// The comment that queued it (a reply or a mention), when one did and it still exists.
    pub trigger_comment_id: Option<CommentId>,
    /// The agent's last run on the issue when this follow-up was queued.
    pub previous_run_id: Option<RunId>,
    /// The ensemble run this run is a candidate (or the reviewer) of.
    pub ensemble_run_id: Option<EnsembleRunId>,
    /// Work on its issue, or a plan of it.
    pub purpose: RunPurpose,
}

impl Run {
    /// Whether this run moves its issue's status (to in progress as it starts, to review or back to todo
    /// as it ends): the assigned agent's work runs do; a helper's, an ensemble candidate's and a plan
    /// never do.
    pub fn owns_status(&self, issue: &super::Issue) -> bool {
        self.purpose == RunPurpose::Work
            && issue.status_owned_by(self.agent_id, self.ensemble_run_id.is_some())
    }
}

/// A line of work on an issue: one agent's branch there, which each of its runs advances.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkLine {
    pub agent_id: AgentId,
    pub branch: String,
    /// The commit the line's last committed run left it at (`None` while no run has committed yet).
    pub commit: Option<String>,
    /// The line's latest run.
    pub run_id: RunId,
}

/// The lines of work among an issue's runs (oldest first, as the store lists them), in the order they
/// began; each with its latest run and the last commit a run recorded on it.
pub fn work_lines(runs: &[Run]) -> Vec<WorkLine> {
    let mut lines: Vec<WorkLine> = Vec::new();
    for run in runs {
        let Some(branch) = &run.branch else { continue };
        let at = lines
            .iter()
            .position(|l| l.agent_id == run.agent_id && &l.branch == branch);
        let line = match at {
            Some(i) => &mut lines[i],
            None => {
                lines.push(WorkLine {
                    agent_id: run.agent_id,
                    branch: branch.clone(),
                    commit: None,
                    run_id: run.id,
                });
                let last = lines.len() - 1;
                &mut lines[last]
            }
        };
        line.run_id = run.id;
        if run.head_commit.is_some() {
            line.commit.clone_from(&run.head_commit);
        }
    }
    lines
}

/// An event to append; the producer numbers events so a resend after a reconnect is idempotent.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct NewRunEvent {
    pub seq: Seq,
    pub at: DateTime<Utc>,
    /// The `AgentEvent` kind (`text`, `tool_call`, …) or a run-engine kind (`stderr`, `status`); with
    /// `payload`, a [`RunEventBody`](super::RunEventBody) as stored.
    pub kind: String,
    pub payload: serde_json::Value,
}

/// A stored run event.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct RunEvent {
    pub run_id: RunId,
    pub seq: Seq,
    pub at: DateTime<Utc>,
    pub kind: String,
    pub payload: serde_json::Value,
}

/// A place where runs execute: a server's embedded runner (no workspace, no token, a globally unique
/// name) or a remote `muster runner` (one workspace's, identified by its token and name).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Runner {
    pub id: RunnerId,
    pub name: String,
    pub version: String,
    /// The agent CLIs it detected, as reported.
    pub detected: serde_json::Value,
    pub last_heartbeat_at: DateTime<Utc>,
    pub created_at: DateTime<Utc>,
    /// The workspace a remote runner serves; `None` for an embedded runner (it serves every workspace).
    pub workspace_id: Option<WorkspaceId>,
    /// The token a remote runner registered with; `None` for an embedded runner.
    pub token_id: Option<RunnerTokenId>,
    /// Its token was revoked: it can no longer connect.
    pub revoked: bool,
}

/// How old a runner's last heartbeat may be for it to count as online: six missed 5-second beats.
pub const ONLINE_WITHIN: chrono::TimeDelta = chrono::TimeDelta::seconds(30);

impl Runner {
    /// Whether its last heartbeat means online at `now` (at most [`ONLINE_WITHIN`] old).
    pub fn online_at(&self, now: DateTime<Utc>) -> bool {
        now - self.last_heartbeat_at <= ONLINE_WITHIN
    }
}

string_enum!(
    /// What an inbox item is about.
    InboxKind, "kind" {
        RunFailed => "run_failed",
        RunStalled => "run_stalled",
        OverBudget => "over_budget",
        RunInterrupted => "run_interrupted",
        AwaitingReview => "awaiting_review",
        Mentioned => "mentioned",
        LoopGuard => "loop_guard",
        CapWarning => "cap_warning",
        PullRequest => "pull_request",
    }
);

impl InboxKind {
    /// An item of this kind about an issue replaces the earlier open ones of its kind about that issue
    /// for the same people: only the latest delivery awaits review, however many hops of follow-ups
    /// (agents answering each other) it took to make.
    pub fn supersedes_earlier(self) -> bool {
        matches!(self, Self::AwaitingReview)
    }
}

/// Input for an inbox item; `user_id: None` addresses every admin of the workspace.
#[derive(Debug, Clone)]
pub struct NewInboxItem {
    pub workspace_id: WorkspaceId,
    pub user_id: Option<UserId>,
    pub kind: InboxKind,
    pub issue_id: Option<IssueId>,
    pub run_id: Option<RunId>,
    /// The comment the item is about (a mention), linked from the inbox.
    pub comment_id: Option<CommentId>,
    pub message: String,
}

/// Something that needs a person.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct InboxItem {
    pub id: InboxItemId,
    pub workspace_id: WorkspaceId,
    pub user_id: Option<UserId>,
    pub kind: InboxKind,
    pub issue_id: Option<IssueId>,
    pub run_id: Option<RunId>,
    pub comment_id: Option<CommentId>,
    pub message: String,
    pub created_at: DateTime<Utc>,
    pub resolved_at: Option<DateTime<Utc>>,
}
