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

use super::events::{EventLog, Tally};
use super::{finish, git, prepare, run};
use crate::domain::{Run, Runner};
use crate::engine::Engine;
use crate::redact::Redactor;
use crate::store::ClaimScope;

/// The embedded runner's name in the runner table.
pub const EMBEDDED_RUNNER: &str = "embedded";
/// How long to wait before trying again when the store refuses to register the runner.
const REGISTER_RETRY: Duration = Duration::from_secs(2);

/// Runs the embedded runner until `stop` is cancelled, then waits for its runs to wind down.
pub async fn run(state: Engine, stop: CancellationToken) {
    let Some(runner) = register(&state, &stop).await else {
        return;
    };
    tracing::info!(runner.id = %runner.id, runner.name = %runner.name, "embedded runner started");
    recover(&state, &runner).await;
    sweep(&state).await;
    let mut last_sweep = Instant::now();
    let mut tasks = JoinSet::new();
    let timing = state.runs.timing().clone();
    let scope = ClaimScope::anything(&runner.name);
    while !stop.is_cancelled() {
        let now = Utc::now();
        match state
            .store
            .claim_next_run(runner.id, &scope, now, now + timing.lease)
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

/// This server's runner name: [`EMBEDDED_RUNNER`] and an id kept in the data directory, so a restart
/// finds the runs its previous life left behind while replicas with their own data directories do not
/// mistake each other's runs for theirs.
async fn runner_name(state: &Engine) -> String {
    let file = state.config.data_dir.join("runner-id");
    let id = match tokio::fs::read_to_string(&file).await {
        Ok(id) if !id.trim().is_empty() => id.trim().to_owned(),
        _ => {
            let id = uuid::Uuid::new_v4().simple().to_string()[..12].to_owned();
            if let Err(e) = tokio::fs::write(&file, &id).await {
                tracing::warn!(error = %e, "cannot keep the runner id in the data directory");
            }
            id
        }
    };
    format!("{EMBEDDED_RUNNER}-{id}")
}

async fn register(state: &Engine, stop: &CancellationToken) -> Option<Runner> {
    let detected = serde_json::json!([]);
    let name = runner_name(state).await;
    loop {
        match state
            .store
            .register_runner(&name, env!("CARGO_PKG_VERSION"), &detected)
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
    state: &Engine,
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

/// Finishes the runs this runner held when its server died: stops what is left of each one's process
/// group (only if a member still carries the run's id in its environment, so a reused pid is never hit),
/// commits the work in its worktree and logs the diff, then records it `interrupted` — re-queued if it
/// had changed nothing, else left to a person. The events it stored stay.
async fn recover(state: &Engine, runner: &Runner) {
    let left = match state.store.list_live_runs_of_runner(runner.id).await {
        Ok(left) => left,
        Err(e) => {
            tracing::warn!(error = %e, "cannot list the runs a previous start left behind");
            return;
        }
    };
    for run in left {
        tracing::warn!(run.id = %run.id, "run interrupted: the server stopped while it ran");
        if let Some(pgid) = run.pid.and_then(|p| u32::try_from(p).ok())
            && muster_agents::process::group_has_env(pgid, "MUSTER_RUN_ID", &run.id.to_string())
        {
            tracing::warn!(run.id = %run.id, pgid, "stopping the orphaned agent");
            muster_agents::process::kill_leftovers(pgid).await;
        }
        if let Err(e) = state.store.revoke_run_tokens(run.id).await {
            tracing::warn!(error = %e, "cannot revoke the run's token");
        }
        let loaded = async {
            let issue = state.store.get_issue_by_id(run.issue_id).await?;
            let agent = state
                .store
                .get_agent(run.workspace_id, run.agent_id)
                .await?;
            Ok::<_, crate::store::Error>((issue, agent))
        };
        let (issue, agent) = match loaded.await {
            Ok(found) => found,
            Err(e) => {
                tracing::warn!(error = %e, "cannot read an interrupted run's issue or agent");
                finish::conclude_unloaded(state, &run, finish::Ending::Orphaned).await;
                continue;
            }
        };
        let mut tally = Tally::default();
        // The run's token is gone with the server that made it; the agent's secrets are still known.
        let redactor = Redactor::for_agent(&state.secrets, &agent, None);
        if let Some(tree) = git::recorded(&prepare::run_dir(state, &run)).await {
            let mut log = match EventLog::resume(state, run.id, redactor.clone()).await {
                Ok(log) => log,
                Err(e) => {
                    tracing::warn!(error = %e, "cannot read the interrupted run's log");
                    continue;
                }
            };
            let (stat, changed) =
                super::run::wrap_up_worktree(&tree, &issue, &agent, &run, &mut log).await;
            if let Err(e) = log.flush(state).await {
                tracing::warn!(error = %e, "cannot store the interrupted run's diff");
            }
            tally.diff_stat = stat;
            tally.changed = changed;
        }
        let ending = finish::Ending::Orphaned;
        finish::conclude(state, &run, &issue, &agent, ending, tally, &redactor).await;
    }
}

/// Marks runs whose lease lapsed (a crashed server or a lost runner) as interrupted; each is re-queued if
/// it had no worktree, else left to a person with an inbox item. The events they stored stay.
async fn sweep(state: &Engine) {
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
        let agent = state
            .store
            .get_agent(run.workspace_id, run.agent_id)
            .await
            .ok();
        // Its worktree (if any) is on another runner's machine: assume it changed something.
        let changed = run.branch.is_some();
        if let Err(e) =
            finish::after_interruption(state, &run, &issue, agent.as_ref(), changed).await
        {
            tracing::warn!(error = %e, "cannot report an interrupted run");
        }
        finish::announce(state, &issue);
    }
}
