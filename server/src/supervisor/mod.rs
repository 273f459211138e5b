//! The run engine: queueing runs, the embedded runner that claims them, and one supervisor task per run.
//!
//! Run state machine (see `domain::run`): `queued → claimed → running → succeeded | failed | cancelled |
//! timed_out`, and `claimed | running → interrupted` when the lease lapses. Invariants kept here:
//! - a run is claimed with a lease ([`RunTiming::lease`]) that its supervisor renews every
//!   [`RunTiming::heartbeat`]; a supervisor that loses its lease stops its process and writes nothing more;
//! - every event is numbered from 1 by its supervisor, redacted, committed with `append_run_events` and only
//!   then announced on the hub (`Topic::Run`), so what a subscriber sees the store already has;
//! - a run's process is always stopped through `process::stop_group` and reaped before the run is finished;
//! - each live run owns a `CancellationToken`, a child of the runner's; [`cancel`] fires it, runner shutdown
//!   fires the parent (the run then ends `interrupted`);
//! - the issue follows the run: `todo → in_progress` on start, `in_review` on success, back to `todo` on a
//!   final failure (with an inbox item); a retryable failure queues attempt + 1 with backoff instead.

mod brief;
mod events;
mod finish;
pub mod git;
mod prepare;
pub mod relay;
mod run;
pub mod runner;
mod watch;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use crate::domain::{AgentId, Issue, NewRun, Run, RunId, RunStatus};
use crate::engine::Engine;
use crate::store;

/// The clocks of the run engine. Production uses [`RunTiming::default`]; tests shorten them through
/// `Application::set_run_timing` instead of sleeping.
#[derive(Debug, Clone)]
pub struct RunTiming {
    /// How long a claim holds a run without a heartbeat.
    pub lease: Duration,
    /// How often a supervisor renews its lease.
    pub heartbeat: Duration,
    /// How long the runner waits for a wake-up before looking at the queue again (retries with
    /// `not_before`, runs queued by another replica).
    pub idle_tick: Duration,
    /// How often expired leases are swept into `interrupted`.
    pub sweep_every: Duration,
    /// Grace after SIGINT, then after SIGTERM, when stopping a run.
    pub int_grace: Duration,
    /// Grace after SIGTERM before SIGKILL.
    pub term_grace: Duration,
    /// Backoff of the first retry; doubled for each further attempt.
    pub retry_base: Duration,
    /// When set, replaces every agent's stall timeout (tests; profiles allow no less than 10 s).
    pub stall_override: Option<Duration>,
}

impl Default for RunTiming {
    fn default() -> Self {
        Self {
            lease: Duration::from_secs(20),
            heartbeat: Duration::from_secs(5),
            idle_tick: Duration::from_secs(2),
            sweep_every: Duration::from_secs(10),
            int_grace: muster_agents::process::INT_GRACE,
            term_grace: muster_agents::process::TERM_GRACE,
            retry_base: Duration::from_secs(10),
            stall_override: None,
        }
    }
}

/// The run engine's shared handles: the runner's wake-up, the live runs' cancel tokens, the clocks.
#[derive(Clone, Default)]
pub struct Runs {
    inner: Arc<RunsInner>,
}

#[derive(Default)]
struct RunsInner {
    wake: Notify,
    live: Mutex<HashMap<RunId, CancellationToken>>,
    timing: RunTiming,
}

impl Runs {
    /// Handles with the given clocks.
    pub fn with_timing(timing: RunTiming) -> Self {
        Self {
            inner: Arc::new(RunsInner {
                timing,
                ..RunsInner::default()
            }),
        }
    }

    /// The clocks.
    pub fn timing(&self) -> &RunTiming {
        &self.inner.timing
    }

    /// Wakes the runner so that it claims at once (a permit is kept if it is busy).
    pub fn wake(&self) {
        self.inner.wake.notify_one();
    }

    pub(crate) async fn woken(&self) {
        self.inner.wake.notified().await;
    }

    fn live(&self) -> std::sync::MutexGuard<'_, HashMap<RunId, CancellationToken>> {
        self.inner
            .live
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    pub(crate) fn register(&self, run: RunId, token: CancellationToken) {
        self.live().insert(run, token);
    }

    pub(crate) fn unregister(&self, run: RunId) {
        self.live().remove(&run);
    }

    pub(crate) fn token(&self, run: RunId) -> Option<CancellationToken> {
        self.live().get(&run).cloned()
    }
}

impl Engine {
    /// Queues a first attempt of `agent` on `issue` and wakes the runners. `Ok(None)` when that agent
    /// already has a live run on the issue (`run_one_active_key`).
    pub async fn queue(&self, issue: &Issue, agent: AgentId) -> store::Result<Option<Run>> {
        let new = NewRun {
            workspace_id: issue.workspace_id,
            issue_id: issue.id,
            agent_id: agent,
            attempt: 1,
            not_before: None,
            chain_depth: 0,
        };
        self.enqueue(&new).await
    }

    /// Queues the next attempt of `run` (same agent, same issue, same chain depth), claimable after
    /// `delay` (a retry's backoff) or at once. `Ok(None)` when the agent already has a live run on the
    /// issue. The one way a run is queued again: a person's retry, a retryable failure, an interruption.
    pub async fn requeue(&self, run: &Run, delay: Option<Duration>) -> store::Result<Option<Run>> {
        let new = NewRun {
            workspace_id: run.workspace_id,
            issue_id: run.issue_id,
            agent_id: run.agent_id,
            attempt: run.attempt + 1,
            not_before: delay.map(|d| chrono::Utc::now() + d),
            chain_depth: run.chain_depth,
        };
        self.enqueue(&new).await
    }

    /// Creates the run, then wakes this replica's runners and tells the other replicas.
    async fn enqueue(&self, new: &NewRun) -> store::Result<Option<Run>> {
        match self.store.create_run(new).await {
            Ok(run) => {
                tracing::info!(run.id = %run.id, attempt = run.attempt, "run queued");
                self.runs.wake();
                self.hub.relay(crate::hub::Relayed::RunQueued(run.id));
                Ok(Some(run))
            }
            Err(store::Error::Conflict { constraint }) if constraint == "run_one_active_key" => {
                Ok(None)
            }
            Err(e) => Err(e),
        }
    }

    /// Cancels a run: a live one is signalled (its supervisor stops the process group and finishes it
    /// as `cancelled`); a queued one is finished as `cancelled` at once. Returns the run as it now stands.
    pub async fn cancel(&self, run_id: RunId) -> store::Result<Run> {
        if let Some(token) = self.runs.token(run_id) {
            token.cancel();
            return self.store.get_run(run_id).await;
        }
        let run = self.store.get_run(run_id).await?;
        if matches!(run.status, RunStatus::Claimed | RunStatus::Running) {
            // Held by another replica's runner: it cancels when told.
            self.hub.relay(crate::hub::Relayed::CancelRun(run_id));
            return Ok(run);
        }
        if run.status != RunStatus::Queued {
            return Ok(run);
        }
        let outcome = finish::cancelled_outcome();
        match self.store.finish_run(run_id, &outcome).await {
            Ok(run) => Ok(run),
            // Claimed meanwhile: the runner now holds its token.
            Err(store::Error::Conflict { .. }) => {
                if let Some(token) = self.runs.token(run_id) {
                    token.cancel();
                }
                self.store.get_run(run_id).await
            }
            Err(e) => Err(e),
        }
    }
}
