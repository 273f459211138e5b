//! The run engine's context: what queueing, cancelling, claiming, supervising and finishing runs need —
//! the store, the hub, the configuration, the secret box, the detected runtimes and the live runs — and
//! nothing of HTTP. `AppState` owns one (and derefs to it); the engine never reaches back.
//!
//! The server's side of runs lives here: queueing, cancelling and re-queueing ([`Engine::queue`],
//! [`Engine::cancel`], [`Engine::requeue`]), the runner sessions that claim runs for runners and record
//! what they report ([`session`]), the orders they are sent ([`order`]), how a run's end moves its issue
//! ([`finish`]), the sweep of runs whose runner vanished ([`sweep`]) and the wake-ups between replicas
//! ([`relay`]). Executing a run is the runner's (`crate::runner::executor`, `crate::runner`).

pub mod caps;
pub(crate) mod ensemble;
pub(crate) mod finish;
pub mod forge;
pub mod order;
pub(crate) mod plan;
pub(crate) mod planner;
pub mod relay;
pub mod session;
pub(crate) mod sweep;
pub mod triggers;

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::{mpsc, watch};
use tokio_util::sync::CancellationToken;

use crate::config::Config;
use crate::domain::{AgentId, Issue, NewRun, Run, RunId, RunStatus, RunnerTokenId};
use crate::hub::Hub;
pub use crate::runner::executor::RunTiming;
use crate::runner::protocol::ToRunner;
use crate::runtimes::RuntimeCache;
use crate::secrets::SecretBox;
use crate::store::{self, Store};

/// The run engine's handles. Cheap to clone.
#[derive(Clone)]
pub struct Engine {
    /// The database, behind the one storage trait.
    pub store: Arc<dyn Store>,
    /// The configuration the server started with.
    pub config: Arc<Config>,
    /// Live updates to browsers (and, through the relay, to other replicas).
    pub hub: Hub,
    /// Seals agent secrets at rest.
    pub secrets: Arc<SecretBox>,
    /// Detected agent runtimes, cached.
    pub runtimes: RuntimeCache,
    /// The runner's wake-up, live runs' cancel tokens, the engine's clocks.
    pub runs: Runs,
    /// The address the HTTP listener is bound to (set once bound); runs reach the API here when no
    /// public URL is configured.
    pub bound_addr: Option<SocketAddr>,
    /// This replica's counters and histograms (`GET /metrics`).
    pub metrics: crate::metrics::Metrics,
    /// Open live connections (boards, run pages, event streams) by credential: ended when it is.
    pub live: crate::live::LiveConnections,
}

impl Engine {
    /// The engine around `store`, with the secret box kept in the configured data directory.
    pub fn new(store: Arc<dyn Store>, config: Config) -> anyhow::Result<Self> {
        let secrets = SecretBox::load_or_create(&config.data_dir)?;
        let runtimes = RuntimeCache::new(config.runtime_paths.clone());
        Ok(Self {
            store,
            live: crate::live::LiveConnections::new(config.live_connections_per_user),
            config: Arc::new(config),
            hub: Hub::default(),
            secrets: Arc::new(secrets),
            runtimes,
            runs: Runs::default(),
            bound_addr: None,
            metrics: crate::metrics::Metrics::default(),
        })
    }

    /// The URL agents and other programs reach this server at: the public URL when configured, else the
    /// bound address (a wildcard address becomes loopback).
    pub fn api_url(&self) -> Option<String> {
        if let Some(url) = &self.config.public_url {
            return Some(url.trim_end_matches('/').to_owned());
        }
        let mut addr = self.bound_addr?;
        if addr.ip().is_unspecified() {
            addr.set_ip(match addr {
                SocketAddr::V4(_) => std::net::Ipv4Addr::LOCALHOST.into(),
                SocketAddr::V6(_) => std::net::Ipv6Addr::LOCALHOST.into(),
            });
        }
        Some(format!("http://{addr}"))
    }
}

/// The engine's live handles: the runners' wake-up, the runs this replica's runner sessions hold (to
/// reach each with a cancel), the clocks.
#[derive(Clone, Default)]
pub struct Runs {
    inner: Arc<RunsInner>,
}

struct RunsInner {
    /// Bumped on every wake-up; each runner session watches it (all of them wake, not one).
    wake: watch::Sender<u64>,
    /// Held runs and the session that holds each.
    held: Mutex<HashMap<RunId, mpsc::UnboundedSender<ToRunner>>>,
    /// Remote runner sessions by token, each with its own kick (a revoked token ends them at once).
    sessions: Mutex<HashMap<RunnerTokenId, HashMap<u64, CancellationToken>>>,
    next_session: std::sync::atomic::AtomicU64,
    timing: RunTiming,
}

impl Default for RunsInner {
    fn default() -> Self {
        Self {
            wake: watch::Sender::new(0),
            held: Mutex::default(),
            sessions: Mutex::default(),
            next_session: std::sync::atomic::AtomicU64::new(0),
            timing: RunTiming::default(),
        }
    }
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

    /// Wakes every runner session of this replica, so that they claim at once.
    pub fn wake(&self) {
        self.inner.wake.send_modify(|n| *n = n.wrapping_add(1));
    }

    /// A receiver that changes at every [`Runs::wake`].
    pub(crate) fn wake_ups(&self) -> watch::Receiver<u64> {
        self.inner.wake.subscribe()
    }

    fn held(&self) -> std::sync::MutexGuard<'_, HashMap<RunId, mpsc::UnboundedSender<ToRunner>>> {
        self.inner
            .held
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Records that a session of this replica holds `run`; `to_runner` reaches its runner.
    pub(crate) fn hold(&self, run: RunId, to_runner: mpsc::UnboundedSender<ToRunner>) {
        self.held().insert(run, to_runner);
    }

    /// Forgets a run (finished, lost, or its session ended).
    pub(crate) fn release(&self, run: RunId) {
        self.held().remove(&run);
    }

    /// Whether a runner session of this replica holds `run`.
    pub fn holds(&self, run: RunId) -> bool {
        self.held().contains_key(&run)
    }

    fn sessions(
        &self,
    ) -> std::sync::MutexGuard<'_, HashMap<RunnerTokenId, HashMap<u64, CancellationToken>>> {
        self.inner
            .sessions
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Registers a remote runner's session under its token; its kick fires when the token is revoked.
    /// Returns the session's number (for [`Runs::session_ended`]) and its kick.
    pub(crate) fn session_started(&self, token: RunnerTokenId) -> (u64, CancellationToken) {
        let n = self
            .inner
            .next_session
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let kick = CancellationToken::new();
        self.sessions()
            .entry(token)
            .or_default()
            .insert(n, kick.clone());
        (n, kick)
    }

    /// Forgets an ended session.
    pub(crate) fn session_ended(&self, token: RunnerTokenId, n: u64) {
        let mut sessions = self.sessions();
        if let Some(of_token) = sessions.get_mut(&token) {
            of_token.remove(&n);
            if of_token.is_empty() {
                sessions.remove(&token);
            }
        }
    }

    /// Disconnects every runner session of this replica using `token`.
    pub(crate) fn disconnect(&self, token: RunnerTokenId) {
        if let Some(of_token) = self.sessions().remove(&token) {
            for kick in of_token.values() {
                kick.cancel();
            }
        }
    }

    /// Tells the runner holding `run` (through this replica) to stop it for `why`; `false` when none
    /// here does.
    pub(crate) fn tell_why(&self, run: RunId, why: crate::domain::StopNote) -> bool {
        let sender = self.held().get(&run).cloned();
        sender.is_some_and(|tx| {
            tx.send(ToRunner::Cancel {
                run_id: run,
                lost: false,
                why: Some(why),
            })
            .is_ok()
        })
    }

    /// Tells the runner holding `run` (through this replica) to stop it; `false` when none here does.
    pub(crate) fn tell(&self, run: RunId, lost: bool) -> bool {
        let sender = self.held().get(&run).cloned();
        sender.is_some_and(|tx| {
            tx.send(ToRunner::Cancel {
                run_id: run,
                lost,
                why: None,
            })
            .is_ok()
        })
    }
}

impl Engine {
    /// Muster's own comment on an issue (about `run` when given): what happened to a run, said where
    /// people look. A text no comment may hold (empty, too long) is left out, not an error.
    pub(crate) async fn note_on_issue(
        &self,
        issue: crate::domain::IssueId,
        run: Option<RunId>,
        text: &str,
    ) -> crate::store::Result<()> {
        self.post_note(issue, run, text).await.map(drop)
    }

    /// [`Engine::note_on_issue`], returning the comment (`None` when the text is not a comment's).
    pub(crate) async fn post_note(
        &self,
        issue: crate::domain::IssueId,
        run: Option<RunId>,
        text: &str,
    ) -> crate::store::Result<Option<crate::domain::Comment>> {
        let Ok(mut note) =
            crate::domain::NewComment::parse(crate::domain::CommentAuthor::System, text)
        else {
            return Ok(None);
        };
        note.run_id = run;
        self.store.add_comment(issue, &note).await.map(Some)
    }

    /// Queues a first attempt of `agent` on `issue` and wakes the runners. `Ok(None)` when that agent
    /// already has a live run on the issue (`run_one_active_key`).
    /// It continues the agent's last run on the issue, if any (an issue moved back to it).
    pub async fn queue(&self, issue: &Issue, agent: AgentId) -> store::Result<Option<Run>> {
        let previous = self.store.last_run_of_agent(issue.id, agent).await?;
        let new = NewRun {
            previous_run_id: previous.map(|r| r.id),
            ensemble_run_id: None,
            ..NewRun::assignment(issue.workspace_id, issue.id, agent)
        };
        self.enqueue_with(&new, &[]).await
    }

    /// Queues `new` (a follow-up or a mention, built by `engine::triggers`) answering `comments`
    /// besides its trigger comment, and wakes the runners. `Ok(None)` when that agent already has a live
    /// run on the issue.
    pub async fn queue_run(
        &self,
        new: &NewRun,
        comments: &[crate::domain::CommentId],
    ) -> store::Result<Option<Run>> {
        self.enqueue_with(new, comments).await
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
            trigger: crate::domain::RunTrigger::Retry,
            trigger_comment_id: run.trigger_comment_id,
            previous_run_id: Some(run.id),
            // A retried candidate (or reviewer) stays in its ensemble run.
            ensemble_run_id: run.ensemble_run_id,
            // A retried plan plans again.
            purpose: run.purpose,
        };
        // The retry answers the same comments as the attempt it repeats.
        let comments = self.store.list_run_comments(run.id).await?;
        self.enqueue_with(&new, &comments).await
    }

    /// Creates the run and adds `comments` to its set (before any runner can claim it), then wakes this
    /// replica's runners and tells the other replicas.
    async fn enqueue_with(
        &self,
        new: &NewRun,
        comments: &[crate::domain::CommentId],
    ) -> store::Result<Option<Run>> {
        match self.store.create_run(new).await {
            Ok(run) => {
                for comment in comments {
                    self.store.add_run_comment(run.id, *comment).await?;
                }
                // Over a monthly cap: refused at once, with the reason, rather than left to wait.
                let breach = crate::engine::caps::cap_breach(
                    self.store.as_ref(),
                    run.workspace_id,
                    run.agent_id,
                    chrono::Utc::now(),
                )
                .await?;
                if let Some(why) = breach {
                    let reason = crate::domain::FailureReason::OverCap;
                    return finish::refuse_queued(self, &run, reason, why)
                        .await
                        .map(Some);
                }
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

    /// A runner token was revoked: the runners using it are disconnected at once, on this replica and
    /// (through the relay) every other; their runs' leases then lapse and the sweep handles them.
    pub fn runner_token_revoked(&self, token: RunnerTokenId) {
        self.runs.disconnect(token);
        self.hub
            .relay(crate::hub::Relayed::RunnerTokenRevoked(token));
    }

    /// A session or API token ended (signed out, revoked, its password changed): its open live
    /// connections end at once, on this replica and (through the relay) every other. `hash` is the
    /// credential's SHA-256 as the store keeps it.
    pub fn credential_ended(&self, hash: &str) {
        let ended = self.live.end_credential(hash);
        tracing::debug!(ended, "ended the live connections of a credential");
        self.hub
            .relay(crate::hub::Relayed::CredentialEnded(hash.to_owned()));
    }

    /// Revokes a run's token (the run ended): it is refused from now on, and what it has open ends.
    pub async fn revoke_run_tokens(&self, run: RunId) {
        match self.store.revoke_run_tokens(run).await {
            Ok(hashes) => hashes.iter().for_each(|h| self.credential_ended(h)),
            Err(e) => tracing::warn!(error = %e, "cannot revoke the run's token"),
        }
    }

    /// Cancels a run: a live one is signalled (its supervisor stops the process group and finishes it
    /// as `cancelled`); a queued one is finished as `cancelled` at once. Returns the run as it now stands.
    pub async fn cancel(&self, run_id: RunId) -> store::Result<Run> {
        if self.runs.tell(run_id, false) {
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
            Ok(run) => {
                ensemble::run_ended(self, &run).await;
                Ok(run)
            }
            // Claimed meanwhile: the runner now holds its token.
            Err(store::Error::Conflict { .. }) => {
                if !self.runs.tell(run_id, false) {
                    self.hub.relay(crate::hub::Relayed::CancelRun(run_id));
                }
                self.store.get_run(run_id).await
            }
            Err(e) => Err(e),
        }
    }
}
