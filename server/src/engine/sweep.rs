//! The sweep: every replica, every [`RunTiming::sweep_every`](crate::runner::executor::RunTiming), marks runs
//! whose lease lapsed (their runner vanished, or the server that ran them died) as interrupted. Each is
//! re-queued when it had not changed anything yet, else left to a person with an inbox item; the events
//! it stored stay. The store's `interrupt_expired_runs` is one statement, so two replicas sweeping at
//! once never handle a run twice.

use chrono::Utc;
use tokio_util::sync::CancellationToken;

use super::{Engine, finish};

/// Sweeps until `stop` fires.
pub(crate) async fn run(engine: Engine, stop: CancellationToken) {
    let every = engine.runs.timing().sweep_every;
    loop {
        once(&engine).await;
        tokio::select! {
            () = stop.cancelled() => return,
            () = tokio::time::sleep(every) => {}
        }
    }
}

/// One sweep.
pub(crate) async fn once(engine: &Engine) {
    super::plan::sweep(engine).await;
    let lost = match engine.store.interrupt_expired_runs(Utc::now()).await {
        Ok(lost) => lost,
        Err(e) => {
            tracing::warn!(error = %e, "cannot sweep expired runs");
            return;
        }
    };
    for run in lost {
        tracing::warn!(run.id = %run.id, "run interrupted: its runner is gone");
        engine.runs.release(run.id);
        engine.revoke_run_tokens(run.id).await;
        let issue = match engine.store.get_issue_by_id(run.issue_id).await {
            Ok(issue) => issue,
            Err(e) => {
                tracing::warn!(error = %e, "cannot read an interrupted run's issue");
                continue;
            }
        };
        let agent = engine
            .store
            .get_agent(run.workspace_id, run.agent_id)
            .await
            .ok();
        // Its worktree is on the vanished runner's machine: judge by its log, as a stopping runner judges
        // by its worktree, so SIGTERM and SIGKILL of a runner follow one re-queue rule.
        let changed = acted(engine, &run).await;
        if let Err(e) =
            finish::after_interruption(engine, &run, &issue, agent.as_ref(), changed).await
        {
            tracing::warn!(error = %e, "cannot report an interrupted run");
        }
        super::ensemble::run_ended(engine, &run).await;
        super::plan::run_ended(engine, &issue).await;
        finish::announce(engine, &issue);
    }
}

/// Whether a run's stored log shows that its agent may have changed its worktree: a file change, a tool
/// call or a shell command, or the diff of a wrap-up. A log that cannot be read counts as changed (a person
/// decides, nothing is run twice).
pub(crate) async fn acted(engine: &Engine, run: &crate::domain::Run) -> bool {
    const ACTING: [&str; 4] = ["file_change", "tool_call", "command", "diff"];
    let mut after = 0;
    loop {
        match engine.store.run_events_since(run.id, after, 1_000).await {
            Ok(events) if events.is_empty() => return false,
            Ok(events) => {
                if events.iter().any(|e| ACTING.contains(&e.kind.as_str())) {
                    return true;
                }
                after = events.last().map_or(after, |e| e.seq);
            }
            Err(e) => {
                tracing::warn!(error = %e, "cannot read an interrupted run's log");
                return true;
            }
        }
    }
}
