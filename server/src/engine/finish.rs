//! How a run ends: the outcome recorded with `finish_run`, then what follows for the issue — in review with
//! the agent's summary as a comment on success; a retry with backoff for a retryable failure with attempts
//! left; otherwise back to `todo` with an inbox item. Every text recorded here (summary, diff stat, failure
//! message, inbox item, comment) has passed the run's redactor.

use crate::domain::failure::{self, FailureFacts};
use crate::domain::{
    Agent, CommentAuthor, FailureReason, InboxKind, Issue, IssueStatus, NewComment, NewInboxItem,
    Run, RunOutcome, RunPurpose, RunStatus, RunTrigger,
};
use crate::engine::Engine;
use crate::hub::{LiveEvent, Topic};
use crate::redact::Redactor;
use crate::runner::protocol::Finished;
use crate::store;

/// Records how the run ended, as its runner reports it under the claim's `epoch`, and moves the issue
/// on; `redactor` hides the run's secrets in what Muster writes about it (the runner already redacted
/// what it reported). `Err(Conflict run_lease)` when the run is no longer live at that epoch.
#[tracing::instrument(skip_all, fields(run.id = %run.id))]
pub(crate) async fn conclude(
    state: &Engine,
    run: &Run,
    report: &Finished,
    redactor: &Redactor,
) -> store::Result<()> {
    let sent = &report.outcome;
    let outcome = RunOutcome {
        failure_detail: redactor.opt(sent.failure_detail.as_deref()),
        summary: redactor.opt(sent.summary.as_deref()),
        diff_stat: redactor.opt(sent.diff_stat.as_deref()),
        session_id: redactor.opt(sent.session_id.as_deref()),
        ..sent.clone()
    };
    if !outcome.status.is_terminal() {
        return Err(store::Error::Conflict {
            constraint: "run_status".to_owned(),
        });
    }
    let finished = state
        .store
        .finish_leased_run(run.id, report.epoch, &outcome)
        .await?;
    tracing::info!(status = %finished.status, reason = ?finished.failure_reason, "run finished");
    let kind = state
        .store
        .get_agent(run.workspace_id, run.agent_id)
        .await
        .ok()
        .map(|a| a.profile.kind);
    state.metrics.run_finished(finished.status, kind);
    if finished.usage.tokens() > 0 || finished.usage.cost_usd > 0.0 {
        let now = chrono::Utc::now();
        if let Err(e) =
            crate::engine::caps::warn_caps(state, run.workspace_id, run.agent_id, now).await
        {
            tracing::warn!(error = %e, "cannot check the monthly caps");
        }
    }
    state.revoke_run_tokens(run.id).await;
    let loaded = async {
        let issue = state.store.get_issue_by_id(run.issue_id).await?;
        let agent = state.store.get_agent(run.workspace_id, run.agent_id).await;
        Ok::<_, store::Error>((issue, agent.ok()))
    };
    let (issue, agent) = match loaded.await {
        Ok(found) => found,
        Err(e) => {
            tracing::warn!(error = %e, "cannot read the finished run's issue");
            state.runs.wake();
            return Ok(());
        }
    };
    if finished.ensemble_run_id.is_some() {
        // A candidate's (or the reviewer's) end moves its ensemble on, not the issue: the issue goes
        // to review when the ensemble is decided. Only an interruption is handled as for any run (a
        // run that changed nothing is queued again, in the same ensemble).
        if finished.status == RunStatus::Interrupted
            && let Err(e) =
                after_interruption(state, &finished, &issue, agent.as_ref(), report.changed).await
        {
            tracing::warn!(error = %e, "cannot handle the interrupted ensemble run");
        }
        super::ensemble::run_ended(state, &finished).await;
        Box::pin(super::plan::run_ended(state, &issue)).await;
        announce(state, &issue);
        state.runs.wake();
        return Ok(());
    }
    let followed = match (finished.status, agent.as_ref()) {
        (RunStatus::Succeeded, Some(agent)) => succeeded(state, &finished, &issue, agent).await,
        (RunStatus::Cancelled, Some(agent)) => {
            return_to_todo(state, &finished, &issue, agent).await
        }
        (RunStatus::Interrupted, agent) => {
            // One rule with a vanished runner's runs (the sweep): a changed worktree or a log that shows
            // the agent acting.
            let changed = report.changed || super::sweep::acted(state, &finished).await;
            after_interruption(state, &finished, &issue, agent, changed).await
        }
        (_, Some(agent)) => failed(state, &finished, &issue, agent, redactor).await,
        // The agent was deleted meanwhile: nothing to retry, nothing to say in its name.
        (_, None) => Ok(()),
    };
    if let Err(e) = followed {
        tracing::warn!(error = %e, "cannot update the issue after the run");
    }
    if finished.status == RunStatus::Succeeded && finished.purpose == RunPurpose::Work {
        // The forge is asked over the network: never in the way of the runner's session.
        let (engine, run) = (state.clone(), finished.clone());
        tokio::spawn(async move { super::forge::run_delivered(&engine, &run).await });
    }
    // Comments that arrived while the run was live are answered by a follow-up continuing it.
    super::triggers::run_ended(state, &finished).await;
    Box::pin(super::plan::run_ended(state, &issue)).await;
    announce(state, &issue);
    state.runs.wake();
    Ok(())
}

async fn succeeded(state: &Engine, run: &Run, issue: &Issue, agent: &Agent) -> store::Result<()> {
    if let Some(summary) = &run.summary
        && let Ok(mut comment) = NewComment::parse(CommentAuthor::Agent(agent.id), summary)
    {
        comment.run_id = Some(run.id);
        state.store.add_comment(issue.id, &comment).await?;
    }
    if run.purpose == RunPurpose::Plan {
        // A plan delivers a proposal, not work: the issue stays where it is.
        return super::planner::plan_ended(state, run, issue, agent).await;
    }
    // A helper brought in by a mention answers in the thread (its summary above); the issue's status
    // and its review belong to the assigned agent.
    if !issue.status_owned_by(agent.id, false) {
        return Ok(());
    }
    let from = [IssueStatus::Todo, IssueStatus::InProgress];
    let moved = move_if_in(
        state,
        issue,
        &from,
        IssueStatus::InReview,
        CommentAuthor::Agent(agent.id),
    )
    .await?;
    // A follow-up (a reply's or a mention's run) on an issue already in review delivers new work to
    // review just the same, though the issue does not move.
    let follow_up = matches!(run.trigger, RunTrigger::Comment | RunTrigger::Mention)
        && issue.status == IssueStatus::InReview;
    if !moved && !follow_up {
        return Ok(());
    }
    // Someone must look at the work now: the issue's creator (or, for an issue no person created,
    // everyone in the workspace).
    let item = NewInboxItem {
        workspace_id: run.workspace_id,
        user_id: issue.created_by,
        kind: InboxKind::AwaitingReview,
        issue_id: Some(issue.id),
        run_id: Some(run.id),
        comment_id: None,
        message: review_message(run, issue, agent),
    };
    state.store.create_inbox_item(&item).await.map(drop)
}

/// "coder finished ACM-1 (Fix the parser); it awaits review: <its summary line> (2 files changed, …)".
/// The summary and diff stat were redacted when the run was recorded.
fn review_message(run: &Run, issue: &Issue, agent: &Agent) -> String {
    let line = |text: Option<&str>, last: bool| {
        let mut lines = text
            .unwrap_or_default()
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty());
        let line = if last {
            lines.next_back()
        } else {
            lines.next()
        };
        line.map(|l| {
            let cut: String = l.chars().take(200).collect();
            if cut.len() < l.len() {
                format!("{cut}…")
            } else {
                cut
            }
        })
    };
    let mut message = format!(
        "{} finished {} ({}); it awaits review",
        agent.profile.name.as_str(),
        issue.key,
        issue.title.as_str()
    );
    if let Some(summary) = line(run.summary.as_deref(), false) {
        message.push_str(": ");
        message.push_str(&summary);
    }
    match line(run.diff_stat.as_deref(), true) {
        Some(stat) => message.push_str(&format!(" ({stat})")),
        None => message.push_str(" (no change to the repository)"),
    }
    message
}

async fn failed(
    state: &Engine,
    run: &Run,
    issue: &Issue,
    agent: &Agent,
    redactor: &Redactor,
) -> store::Result<()> {
    let reason = run.failure_reason.unwrap_or(FailureReason::Exit);
    if reason.retryable() && run.attempt <= agent.profile.max_retries {
        let exponent = u32::try_from(run.attempt - 1).unwrap_or(0).min(16);
        let backoff = state.runs.timing().retry_base * 2u32.pow(exponent);
        if let Some(queued) = state.requeue(run, Some(backoff)).await? {
            tracing::info!(retry.id = %queued.id, backoff_ms = backoff.as_millis(), "retry queued");
        }
        return Ok(());
    }
    tell_failure(state, run, issue, agent, redactor).await
}

/// A failure that is not retried: the issue back to `todo`, and the explained failure in the inbox.
async fn tell_failure(
    state: &Engine,
    run: &Run,
    issue: &Issue,
    agent: &Agent,
    redactor: &Redactor,
) -> store::Result<()> {
    let reason = run.failure_reason.unwrap_or(FailureReason::Exit);
    return_to_todo(state, run, issue, agent).await?;
    let kind = if matches!(reason, FailureReason::OverBudget | FailureReason::OverCap) {
        InboxKind::OverBudget
    } else {
        InboxKind::RunFailed
    };
    let kind_of = agent.profile.kind;
    let text = FailureFacts::of(run, kind_of, agent.profile.model.as_deref())
        .map(|facts| failure::explain(&facts).sentence())
        .unwrap_or_else(|| format!("{reason}"));
    let message = format!(
        "{} failed on {}. {text}.",
        agent.profile.name.as_str(),
        issue.key,
    );
    inbox(state, run, issue, kind, redactor.text(&message)).await
}

/// After an interruption (a stopped or lost runner): a run that had not changed its worktree yet is
/// re-queued at once (up to the agent's retry limit, at least once); otherwise a person decides, through
/// an inbox item offering a retry. `agent` is `None` when it cannot be read (then: the inbox).
pub(crate) async fn after_interruption(
    state: &Engine,
    run: &Run,
    issue: &Issue,
    agent: Option<&Agent>,
    changed: bool,
) -> store::Result<()> {
    let limit = agent.map_or(0, |a| a.profile.max_retries.max(1));
    if changed || run.attempt > limit {
        return interrupted(state, run, issue).await;
    }
    let Some(queued) = state.requeue(run, None).await? else {
        // Someone queued a run of this agent on this issue meanwhile: nothing to add.
        return Ok(());
    };
    tracing::info!(retry.id = %queued.id, attempt = queued.attempt, "interrupted run re-queued");
    let note = format!(
        "A run on {} was interrupted (its runner stopped) before it changed anything; Muster queued it again \
         (attempt {}).",
        issue.key, queued.attempt
    );
    state.note_on_issue(issue.id, Some(run.id), &note).await
}

/// After a lost runner: an inbox item offering a retry, and the issue back to `todo`.
pub(crate) async fn interrupted(state: &Engine, run: &Run, issue: &Issue) -> store::Result<()> {
    if run.owns_status(issue) {
        move_if_in(
            state,
            issue,
            &[IssueStatus::InProgress],
            IssueStatus::Todo,
            CommentAuthor::System,
        )
        .await?;
    }
    let message = format!(
        "A run on {} was interrupted (its runner stopped); the events it stored are kept. Retry it from the issue.",
        issue.key
    );
    inbox(state, run, issue, InboxKind::RunInterrupted, message).await
}

async fn return_to_todo(
    state: &Engine,
    run: &Run,
    issue: &Issue,
    agent: &Agent,
) -> store::Result<()> {
    if run.purpose == RunPurpose::Plan || !issue.status_owned_by(agent.id, false) {
        return Ok(());
    }
    move_if_in(
        state,
        issue,
        &[IssueStatus::InProgress],
        IssueStatus::Todo,
        CommentAuthor::Agent(agent.id),
    )
    .await
    .map(drop)
}

/// Moves the issue to `to` (end of the column) only if it is still in one of `from` — a person may have
/// moved it meanwhile, and their move wins. Says whether it moved.
pub(super) async fn move_if_in(
    state: &Engine,
    issue: &Issue,
    from: &[IssueStatus],
    to: IssueStatus,
    actor: CommentAuthor,
) -> store::Result<bool> {
    // Checked and moved in one transaction: a move made meanwhile is never overwritten.
    let Some(moved) = state
        .store
        .move_issue_when(issue.workspace_id, &issue.key, Some(from), to, None, actor)
        .await?
    else {
        return Ok(false);
    };
    // Boxed: waking a parent's agent can queue a run, which can move an issue again.
    Box::pin(super::plan::issue_moved(state, &moved)).await;
    Ok(true)
}

async fn inbox(
    state: &Engine,
    run: &Run,
    issue: &Issue,
    kind: InboxKind,
    message: String,
) -> store::Result<()> {
    // Also on the issue itself, as Muster's comment: a person sees what went wrong where they look.
    state
        .note_on_issue(issue.id, Some(run.id), &message)
        .await?;
    let item = NewInboxItem {
        workspace_id: run.workspace_id,
        user_id: None,
        kind,
        issue_id: Some(issue.id),
        run_id: Some(run.id),
        comment_id: None,
        message,
    };
    state.store.create_inbox_item(&item).await.map(drop)
}

/// Tells the board that the issue (or its run) changed.
pub(crate) fn announce(state: &Engine, issue: &Issue) {
    state.hub.publish(
        Topic::Board(issue.workspace_id),
        LiveEvent::IssueChanged(issue.key.clone()),
    );
}

/// Refuses a run that was just queued, before any runner holds it (a monthly cap is reached): it is
/// recorded as failed with `reason` and `message`, and owners and admins are told as for any failure.
pub(crate) async fn refuse_queued(
    state: &Engine,
    run: &Run,
    reason: FailureReason,
    message: String,
) -> store::Result<Run> {
    let outcome = RunOutcome {
        status: RunStatus::Failed,
        failure_reason: Some(reason),
        summary: Some(message),
        ..cancelled_outcome()
    };
    let finished = state.store.finish_run(run.id, &outcome).await?;
    tracing::info!(run.id = %run.id, reason = %reason, "run refused");
    state.metrics.run_finished(finished.status, None);
    let issue = state.store.get_issue_by_id(run.issue_id).await?;
    if let Ok(agent) = state.store.get_agent(run.workspace_id, run.agent_id).await {
        tell_failure(state, &finished, &issue, &agent, &Redactor::default()).await?;
    }
    announce(state, &issue);
    Ok(finished)
}

/// A cancelled-before-start outcome (used for queued runs).
pub(crate) fn cancelled_outcome() -> RunOutcome {
    RunOutcome::bare(RunStatus::Cancelled)
}
