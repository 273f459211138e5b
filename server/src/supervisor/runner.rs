//! The embedded runner: registers itself, sweeps runs a crashed server left behind, then claims queued runs
//! and hands each to its own supervisor task.
//!
//! Invariants: a claim happens as soon as the runner is woken (queueing calls [`super::Runs::wake`]), with
//! a fallback tick for retries whose backoff elapsed and for runs queued elsewhere; a run's cancel token is
//! registered before its task starts, so [`super::cancel`] never misses a claimed run; on shutdown every run
//! task is signalled and awaited (their runs end `interrupted`).

use std::time::Duration;

use chrono::Utc;
use tokio::task::JoinSet;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::{finish, run};
use crate::app::AppState;
use crate::domain::{Run, Runner};

/// The embedded runner's name in the runner table.
pub const EMBEDDED_RUNNER: &str = "embedded";
/// How long to wait before trying again when the store refuses to register the runner.
const REGISTER_RETRY: Duration = Duration::from_secs(2);

/// Runs the embedded runner until `stop` is cancelled, then waits for its runs to wind down.
pub async fn run(state: AppState, stop: CancellationToken) {
    let Some(runner) = register(&state, &stop).await else {
        return;
    };
    tracing::info!(runner.id = %runner.id, "embedded runner started");
    sweep(&state).await;
    let mut last_sweep = Instant::now();
    let mut tasks = JoinSet::new();
    let timing = state.runs.timing().clone();
    while !stop.is_cancelled() {
        let now = Utc::now();
        match state
            .store
            .claim_next_run(runner.id, now, now + timing.lease)
            .await
        {
            Ok(Some(claimed)) => {
                start(&state, &runner, claimed, &stop, &mut tasks);
                continue;
            }
            Ok(None) => {}
            Err(e) => tracing::warn!(error = %e, "cannot claim a run"),
        }
        while tasks.try_join_next().is_some() {}
        if last_sweep.elapsed() >= timing.sweep_every {
            sweep(&state).await;
            last_sweep = Instant::now();
        }
        tokio::select! {
            () = stop.cancelled() => break,
            () = state.runs.woken() => {}
            () = tokio::time::sleep(timing.idle_tick) => {}
        }
    }
    while tasks.join_next().await.is_some() {}
    tracing::info!("embedded runner stopped");
}

async fn register(state: &AppState, stop: &CancellationToken) -> Option<Runner> {
    let detected = serde_json::json!([]);
    loop {
        match state
            .store
            .register_runner(EMBEDDED_RUNNER, env!("CARGO_PKG_VERSION"), &detected)
            .await
        {
            Ok(runner) => return Some(runner),
            Err(e) => tracing::warn!(error = %e, "cannot register the embedded runner; retrying"),
        }
        tokio::select! {
            () = stop.cancelled() => return None,
            () = tokio::time::sleep(REGISTER_RETRY) => {}
        }
    }
}

fn start(
    state: &AppState,
    runner: &Runner,
    claimed: Run,
    stop: &CancellationToken,
    tasks: &mut JoinSet<()>,
) {
    let token = stop.child_token();
    let run_id = claimed.id;
    state.runs.register(run_id, token.clone());
    tracing::info!(run.id = %run_id, attempt = claimed.attempt, "run claimed");
    let (state, stop, runner_id) = (state.clone(), stop.clone(), runner.id);
    tasks.spawn(async move {
        run::supervise(state.clone(), runner_id, claimed, token, stop).await;
        state.runs.unregister(run_id);
    });
}

/// Marks runs whose lease lapsed (a crashed server or a lost runner) as interrupted, each with an inbox
/// item; the events they stored stay.
async fn sweep(state: &AppState) {
    let lost = match state.store.interrupt_expired_runs(Utc::now()).await {
        Ok(lost) => lost,
        Err(e) => {
            tracing::warn!(error = %e, "cannot sweep expired runs");
            return;
        }
    };
    for run in lost {
        tracing::warn!(run.id = %run.id, "run interrupted: its runner is gone");
        let issue = match state.store.get_issue_by_id(run.issue_id).await {
            Ok(issue) => issue,
            Err(e) => {
                tracing::warn!(error = %e, "cannot read an interrupted run's issue");
                continue;
            }
        };
        if let Err(e) = finish::interrupted(state, &run, &issue).await {
            tracing::warn!(error = %e, "cannot report an interrupted run");
        }
        finish::announce(state, &issue);
    }
}
