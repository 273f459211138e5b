//! The executor: what a runner does with a run it was given (an [`Order`](crate::runner::protocol::Order)):
//! prepare the work folder (a git worktree of the repository where the runner is), write the brief and
//! the skills, start the sandboxed CLI, parse its output, redact, number and batch the events, watch the
//! guards (cancel, stall, budget, event cap), stop and reap the process, commit the work, report the end.
//! It talks to the server only through the runner protocol (`crate::runner`), never to the store.
//!
//! Invariants kept here:
//! - every event is numbered by its run (from the order's `next_seq`), redacted, then handed to the
//!   runner's outbox, which keeps it until the server acknowledges it (stored before it is published);
//! - a run's process is always stopped through `process::stop_group` and reaped before the run is
//!   reported finished;
//! - a run whose claim is lost (the server says `cancel{lost}` or refuses its epoch) is stopped and
//!   writes nothing more: another claim owns it now;
//! - runner shutdown stops every run, which then ends `interrupted`;
//! - an ensemble candidate's check (`Order::check`) runs after its work is committed and before its
//!   worktree is removed, inside the agent's sandbox policy without the agent's variables, and is
//!   reported as exactly one `check` event before the finish; a cancelled run is not checked.

mod brief;
mod check;
mod egress;
pub(crate) mod ending;
mod error;
mod events;
pub mod git;
mod prepare;
pub(crate) mod run;
mod usage_log;
mod watch;

pub(crate) use brief::{prompt as brief_prompt, render as render_brief};
pub(crate) use error::Error;
pub(crate) use run::{Host, RunSignal};

use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::config::Config;
use crate::runner::protocol::{Order, ToServer};

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
    /// How long a remote runner's socket may stay open without sending `hello`.
    pub runner_hello: Duration,
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
            runner_hello: Duration::from_secs(10),
        }
    }
}

/// Executes `order` on this machine outside any runner connection and returns every message it reported
/// (`started`, `events`, `finished`), in order; `cancel` stands for a person's cancel. The executor's
/// seam for the run engine's tests, which give it orders the server does not build yet (an ensemble
/// candidate's check) with real processes and the real sandbox; runners go through `crate::runner`.
pub async fn execute_alone(
    config: Arc<Config>,
    timing: RunTiming,
    order: Order,
    cancel: CancellationToken,
) -> Vec<ToServer> {
    let host = Host {
        runtimes: crate::runtimes::RuntimeCache::new(config.runtime_paths.clone()),
        repo_cache: config.runs_dir.join("repos"),
        config,
        timing,
        api_url: None,
    };
    let outbox = crate::runner::outbox::Outbox::in_memory();
    let link = crate::runner::core::Link::detached(outbox.clone());
    let shutdown = CancellationToken::new();
    let signal = RunSignal::new(&shutdown);
    let run = run::execute(&host, order, &link, &signal);
    tokio::pin!(run);
    tokio::select! {
        () = &mut run => {}
        () = cancel.cancelled() => {
            signal.stop(false);
            run.await;
        }
    }
    outbox.after(0).into_iter().map(|e| e.message).collect()
}
