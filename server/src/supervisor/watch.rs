//! The watch loop of a running child: one `select!` over output lines, child exit, cancel, the heartbeat
//! (lease renewal), the stall watchdog and the batch flush timer.
//!
//! Guards: an auth-classified error stops the run at once (CLIs otherwise retry a 401 for minutes); usage
//! past the agent's budget stops it gracefully after the turn that crossed it (each model request's usage
//! counts as it is reported, `TurnUsage`, not only the CLI's final report), with an `error` event saying
//! what was spent; reaching the event cap stops it; no output for the stall timeout flags the run `stalled`
//! (store, inbox, board) and a second timeout stops it; any output clears the flag.

use std::time::Duration;

use chrono::Utc;
use muster_agents::{Adapter, AgentEvent, ErrorClass, RateTable};
use serde_json::json;
use tokio::process::Child;
use tokio::sync::mpsc;
use tokio::time::{Instant, MissedTickBehavior};
use tokio_util::sync::CancellationToken;

use super::events::{EventLog, Tally};
use super::finish::{self, Ending, Stop};
use crate::domain::{Agent, Budget, InboxKind, Issue, NewInboxItem, Run, RunnerId};
use crate::engine::Engine;
use crate::store;

/// After the child exits (or is stopped), how long to wait for the rest of its output.
const DRAIN_WAIT: Duration = Duration::from_secs(2);
/// The watchdog's finest and coarsest tick.
const WATCHDOG_TICK: (Duration, Duration) = (Duration::from_millis(50), Duration::from_secs(1));

/// One output line of the child.
pub(super) enum Line {
    Out(String),
    Err(String),
    /// A line of the CLI's own usage log ([`muster_agents::Adapter::usage_log_dir`]).
    UsageLog(String),
}

/// What the watch loop needs to know about its run.
pub(super) struct Watch<'a> {
    pub state: &'a Engine,
    pub run: &'a Run,
    pub runner: RunnerId,
    pub agent: &'a Agent,
    pub issue: &'a Issue,
    pub adapter: &'a dyn Adapter,
    pub token: &'a CancellationToken,
    pub stop: &'a CancellationToken,
}

/// Runs until the child exits or a guard, cancel or shutdown says stop. Does not stop the child.
pub(super) async fn watch(
    ctx: &Watch<'_>,
    child: &mut Child,
    lines: &mut mpsc::Receiver<Line>,
    log: &mut EventLog,
    tally: &mut Tally,
) -> Ending {
    let t = ctx.state.runs.timing();
    let stall = t.stall_override.unwrap_or_else(|| {
        Duration::from_secs(u64::try_from(ctx.agent.profile.stall_timeout_secs.max(1)).unwrap_or(1))
    });
    let mut heartbeat = tokio::time::interval_at(Instant::now() + t.heartbeat, t.heartbeat);
    let tick = (stall / 4).clamp(WATCHDOG_TICK.0, WATCHDOG_TICK.1);
    let mut watchdog = tokio::time::interval(tick);
    watchdog.set_missed_tick_behavior(MissedTickBehavior::Delay);
    let rates = RateTable::default();
    let mut last_output = Instant::now();
    let mut stalled = false;
    let mut open = true;
    log.set_cap(ctx.state.config.max_events_per_run);
    loop {
        let due = log.due();
        tokio::select! {
            () = ctx.token.cancelled() => {
                let stop = if ctx.stop.is_cancelled() { Stop::Shutdown } else { Stop::Cancelled };
                return Ending::Stopped(stop, None);
            }
            status = child.wait() => {
                return Ending::Exited(status.ok().and_then(|s| s.code()));
            }
            line = lines.recv(), if open => {
                let Some(line) = line else { open = false; continue };
                last_output = Instant::now();
                if stalled {
                    stalled = false;
                    set_stalled(ctx, log, false).await;
                }
                if let Some(end) = take_line(ctx, line, log, tally, &rates, true) {
                    return end;
                }
                if log.capped() {
                    return Ending::Stopped(Stop::EventCap(ctx.state.config.max_events_per_run), None);
                }
                if log.must_flush() {
                    flush(ctx, log).await;
                }
            }
            () = sleep_until(due), if due.is_some() => flush(ctx, log).await,
            _ = heartbeat.tick() => {
                if renew(ctx).await.is_err() {
                    return Ending::LeaseLost;
                }
            }
            _ = watchdog.tick() => {
                let quiet = last_output.elapsed();
                if stalled && quiet >= stall * 2 {
                    return Ending::Stopped(Stop::Stalled, None);
                }
                if !stalled && quiet >= stall {
                    stalled = true;
                    set_stalled(ctx, log, true).await;
                }
            }
        }
    }
}

/// Reads what is left of the output after the child ended, for at most [`DRAIN_WAIT`].
pub(super) async fn drain(
    ctx: &Watch<'_>,
    lines: &mut mpsc::Receiver<Line>,
    log: &mut EventLog,
    tally: &mut Tally,
) {
    let rates = RateTable::default();
    let deadline = Instant::now() + DRAIN_WAIT;
    while let Ok(Some(line)) = tokio::time::timeout_at(deadline, lines.recv()).await {
        // Guards no longer matter: the child is gone, only the events and the tally do.
        let _ = take_line(ctx, line, log, tally, &rates, false);
        if log.must_flush() {
            flush(ctx, log).await;
        }
    }
}

async fn sleep_until(due: Option<Instant>) {
    match due {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

async fn flush(ctx: &Watch<'_>, log: &mut EventLog) {
    if let Err(e) = log.flush(ctx.state).await {
        tracing::warn!(error = %e, "cannot store run events; will retry");
    }
}

/// Renews the lease; `Err` only when the lease is gone (transient store errors are logged and ignored:
/// the lease still has most of its time).
async fn renew(ctx: &Watch<'_>) -> Result<(), ()> {
    let until = Utc::now() + ctx.state.runs.timing().lease;
    match ctx
        .state
        .store
        .renew_lease(ctx.run.id, ctx.runner, ctx.run.lease_epoch, until)
        .await
    {
        Ok(()) => Ok(()),
        Err(store::Error::Conflict { .. } | store::Error::NotFound) => Err(()),
        Err(e) => {
            tracing::warn!(error = %e, "cannot renew the lease; will retry");
            Ok(())
        }
    }
}

/// Turns one line into events; `Some` when a guard (checked when `guard`) says the run must stop.
fn take_line(
    ctx: &Watch<'_>,
    line: Line,
    log: &mut EventLog,
    tally: &mut Tally,
    rates: &RateTable,
    guard: bool,
) -> Option<Ending> {
    let (out, events) = match line {
        Line::Err(text) => {
            log.push("stderr", json!({ "line": text }));
            return None;
        }
        Line::Out(text) => {
            let events = ctx.adapter.parse_line(&text);
            (text, events)
        }
        Line::UsageLog(text) => {
            let events = ctx.adapter.parse_usage_log_line(&text);
            (text, events)
        }
    };
    let mut end = None;
    for event in events {
        tally.add(&event, rates);
        let payload = serde_json::to_value(&event).unwrap_or_else(|_| json!({ "line": out }));
        log.push(event.kind(), payload);
        if let AgentEvent::Error {
            class: Some(ErrorClass::Auth),
            ..
        } = event
        {
            end = end.or(Some(Ending::Stopped(Stop::Auth, None)));
        }
    }
    if guard
        && end.is_none()
        && tally.stop_note.is_none()
        && let Some(note) = over_budget(ctx.agent.profile.budget, tally)
    {
        // Checked after every line, so after every turn's usage: the run stops after the turn that
        // crossed its budget.
        log.push("error", json!({ "message": note }));
        tally.stop_note = Some(note);
        end = Some(Ending::Stopped(Stop::OverBudget, None));
    }
    end
}

/// Why the run is over its budget (what it spent against what it may), if it is.
fn over_budget(budget: Budget, tally: &Tally) -> Option<String> {
    let spent = tally.cost_usd();
    if let Some(usd) = budget.usd.filter(|usd| spent > *usd) {
        return Some(format!(
            "stopped over budget: this run has spent ${spent:.4}, more than the agent's budget of \
             ${usd:.4} per run; raise the budget on the agent's page to let it go further"
        ));
    }
    let used = tally.total_tokens();
    budget.tokens.filter(|tokens| used > *tokens).map(|tokens| {
        format!(
            "stopped over budget: this run has used {used} tokens, more than the agent's budget of \
             {tokens} tokens per run; raise the budget on the agent's page to let it go further"
        )
    })
}

/// Flags (or clears) the stall in the store, the log, the inbox and on the board.
async fn set_stalled(ctx: &Watch<'_>, log: &mut EventLog, stalled: bool) {
    let at = stalled.then(Utc::now);
    if let Err(e) = ctx.state.store.set_run_stalled(ctx.run.id, at).await {
        tracing::warn!(error = %e, "cannot flag the run's stall");
    }
    let status = if stalled { "stalled" } else { "running" };
    log.push("status", json!({ "status": status }));
    flush(ctx, log).await;
    if stalled {
        tracing::warn!("run stalled: no output for the stall timeout");
        let item = NewInboxItem {
            workspace_id: ctx.run.workspace_id,
            user_id: None,
            kind: InboxKind::RunStalled,
            issue_id: Some(ctx.issue.id),
            run_id: Some(ctx.run.id),
            message: format!(
                "{} has been silent on {} for its stall timeout; it is stopped after a second one",
                ctx.agent.profile.name.as_str(),
                ctx.issue.key
            ),
        };
        if let Err(e) = ctx.state.store.create_inbox_item(&item).await {
            tracing::warn!(error = %e, "cannot create the stall inbox item");
        }
    }
    finish::announce(ctx.state, ctx.issue);
}
