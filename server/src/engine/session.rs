//! A runner session: the server's side of one runner connection, the same code whether the runner is the
//! embedded one (an in-process channel) or `muster runner` on another machine (a WebSocket).
//!
//! Invariants:
//! - the first message is `hello`; another protocol version, or (remote) an unknown or revoked token,
//!   closes the session with a [`CloseReason`] before anything is written;
//! - a run is claimed for the runner only while it has free slots, within its scope (its token's
//!   workspace, the runtimes it has, agents bound to it by name), and each claim bumps the run's lease
//!   epoch;
//! - every message about a run must name a run this runner holds, under the epoch of its claim: anything
//!   else is refused (`refused`) and writes nothing; the store re-checks the epoch in the same statement
//!   as the write, so a run is never written by two claims;
//! - messages are handled one at a time, in the order received: a run's events are stored in order,
//!   before its finish; events are stored before they are published (then acknowledged);
//! - when the session ends its runs stay claimed: their leases lapse unless the runner comes back (to
//!   this or another replica) and renews them; the sweep handles those that lapse.

use std::collections::HashMap;
use std::time::Duration;

use chrono::Utc;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::{Engine, finish, order};
use crate::domain::{
    CommentAuthor, InboxKind, IssueStatus, NewInboxItem, Run, RunId, RunOutcome, RunStatus, Runner,
    RuntimeKind, Usage,
};
use crate::redact::Redactor;
use crate::runner::protocol::{
    CloseReason, Finished, Held, Hello, Orphan, PROTOCOL_VERSION, Started, ToRunner, ToServer,
    Welcome,
};
use crate::store::{self, ClaimScope};

/// How the transport authenticated the peer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Peer {
    /// This server's own runner, in process: trusted, unscoped.
    Embedded,
    /// A runner on another machine: must present a runner token in its `hello`.
    Remote,
}

/// Why a session ended, for the transport to tell the runner.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Closed {
    pub reason: CloseReason,
    pub message: String,
}

impl Closed {
    fn new(reason: CloseReason, message: impl Into<String>) -> Self {
        Self {
            reason,
            message: message.into(),
        }
    }
}

/// How often a store write that failed for a transient reason is tried before the session gives up (the
/// runner then reconnects and resends from its outbox).
const STORE_TRIES: u32 = 5;

/// The most events one group commit takes from the messages waiting (several runs' batches).
const GROUP_EVENTS: usize = 4096;

/// Serves one runner connection until it closes, the runner misbehaves, its token is revoked, or `stop`
/// fires. `incoming` yields the runner's messages; `outgoing` reaches it.
pub async fn serve(
    engine: Engine,
    peer: Peer,
    mut incoming: mpsc::Receiver<ToServer>,
    outgoing: mpsc::UnboundedSender<ToRunner>,
    stop: CancellationToken,
) -> Result<(), Closed> {
    let hello = match incoming.recv().await {
        Some(ToServer::Hello(hello)) => hello,
        Some(_) => {
            return Err(Closed::new(
                CloseReason::Protocol,
                "the first message must be hello",
            ));
        }
        None => return Ok(()),
    };
    let mut session = Session::open(engine, peer, &hello, outgoing).await?;
    session.announce_waiting().await;
    let result = session.run(&mut incoming, &stop).await;
    session.close();
    session.gone().await;
    result
}

struct Session {
    engine: Engine,
    runner: Runner,
    /// The hash of a remote runner's token, checked again at every heartbeat (revocation).
    token_hash: Option<String>,
    /// A remote runner's token, its session number and kick (fired when the token is revoked).
    kick: Option<(crate::domain::RunnerTokenId, u64, CancellationToken)>,
    scope: ClaimScope,
    outgoing: mpsc::UnboundedSender<ToRunner>,
    /// The runs this runner holds, with their claims' epochs.
    held: HashMap<RunId, i64>,
    /// Runs the runner may still take now.
    free: u32,
}

impl Session {
    /// Checks the `hello`, registers the runner and answers `welcome`.
    async fn open(
        engine: Engine,
        peer: Peer,
        hello: &Hello,
        outgoing: mpsc::UnboundedSender<ToRunner>,
    ) -> Result<Self, Closed> {
        if hello.protocol != PROTOCOL_VERSION {
            return Err(Closed::new(
                CloseReason::Version,
                format!(
                    "this server speaks runner protocol {PROTOCOL_VERSION}, the runner speaks {}; \
                     install the same muster version on both",
                    hello.protocol
                ),
            ));
        }
        let name = hello.name.as_str();
        let runner_name = crate::domain::RunnerName::parse(name)
            .map_err(|e| Closed::new(CloseReason::Protocol, format!("bad runner name: {e}")))?;
        let detected = serde_json::json!({
            "runtimes": hello.runtimes,
            "local_models": hello.local_models,
            "max_runs": hello.max_runs,
        });
        let now = Utc::now();
        let (runner, remote, scope) = match peer {
            Peer::Embedded => {
                let runner = engine
                    .store
                    .register_runner(name, &hello.version, &detected)
                    .await
                    .map_err(|e| internal(&e))?;
                let scope = ClaimScope {
                    workspace: None,
                    kinds: None,
                    runner_name: name.to_owned(),
                };
                (runner, None, scope)
            }
            Peer::Remote => {
                let hash = crate::auth::hash_secret(hello.token.trim());
                let token = match engine.store.use_runner_token(&hash, now).await {
                    Ok(token) => token,
                    Err(store::Error::NotFound) => {
                        return Err(Closed::new(
                            CloseReason::Token,
                            "unknown or revoked runner token; create one on the Runners page",
                        ));
                    }
                    Err(e) => return Err(internal(&e)),
                };
                let runner = engine
                    .store
                    .register_remote_runner(&token, &runner_name, &hello.version, &detected, now)
                    .await
                    .map_err(|e| internal(&e))?;
                let kinds = RuntimeKind::offered_by_runner(
                    hello.runtimes.iter().map(|r| r.kind),
                    !hello.local_models.is_empty(),
                );
                let scope = ClaimScope {
                    workspace: Some(token.workspace_id),
                    kinds: Some(kinds),
                    runner_name: name.to_owned(),
                };
                let (n, kick) = engine.runs.session_started(token.id);
                (runner, Some((hash, (token.id, n, kick))), scope)
            }
        };
        let mut session = Session {
            engine,
            runner,
            token_hash: remote.as_ref().map(|(hash, _)| hash.clone()),
            kick: remote.map(|(_, kick)| kick),
            scope,
            outgoing,
            held: HashMap::new(),
            free: 0,
        };
        let orphans = session.adopt(&hello.live).await?;
        tracing::info!(runner.id = %session.runner.id, runner.name = %session.runner.name,
            version = %hello.version, live = hello.live.len(), orphans = orphans.len(), "runner connected");
        session.send(ToRunner::Welcome(Welcome {
            protocol: PROTOCOL_VERSION,
            runner_id: session.runner.id,
            heartbeat_secs: session.engine.runs.timing().heartbeat.as_secs().max(1),
            orphans,
        }));
        Ok(session)
    }

    /// Takes back the runs the runner says it still executes (after a reconnect) when the store agrees
    /// they are its, at those epochs; returns the runs the store says it holds that it did not name.
    async fn adopt(&mut self, live: &[Held]) -> Result<Vec<Orphan>, Closed> {
        let mine = self
            .engine
            .store
            .list_live_runs_of_runner(self.runner.id)
            .await
            .map_err(|e| internal(&e))?;
        let mut orphans = Vec::new();
        for run in mine {
            let named = live
                .iter()
                .any(|h| h.run_id == run.id && h.epoch == run.lease_epoch);
            if named {
                self.hold(run.id, run.lease_epoch);
                continue;
            }
            match order::orphan(&self.engine, &run).await {
                Ok(orphan) => {
                    self.held.insert(run.id, run.lease_epoch);
                    orphans.push(orphan);
                }
                Err(e) => {
                    tracing::warn!(run.id = %run.id, error = %e, "cannot describe a run left behind")
                }
            }
        }
        for h in live {
            if !self.held.contains_key(&h.run_id) {
                // Not this runner's any more (swept, or claimed again): it must stop it.
                self.send(ToRunner::Cancel {
                    run_id: h.run_id,
                    lost: true,
                    why: None,
                });
            }
        }
        Ok(orphans)
    }

    async fn run(
        &mut self,
        incoming: &mut mpsc::Receiver<ToServer>,
        stop: &CancellationToken,
    ) -> Result<(), Closed> {
        let timing = self.engine.runs.timing().clone();
        let mut wake = self.engine.runs.wake_ups();
        let mut tick = tokio::time::interval(timing.idle_tick);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let kick = self
            .kick
            .as_ref()
            .map_or_else(CancellationToken::new, |(_, _, kick)| kick.clone());
        loop {
            tokio::select! {
                () = kick.cancelled() => {
                    return Err(Closed::new(CloseReason::Revoked, "this runner's token was revoked"));
                }
                () = stop.cancelled() => {
                    return Err(Closed::new(CloseReason::Shutdown, "the server is shutting down"));
                }
                message = incoming.recv() => {
                    let Some(message) = message else { return Ok(()) };
                    self.take(message, incoming).await?;
                }
                changed = wake.changed() => {
                    if changed.is_err() {
                        return Ok(());
                    }
                    self.claim().await?;
                }
                _ = tick.tick() => self.claim().await?,
            }
        }
    }

    async fn handle(&mut self, message: ToServer) -> Result<(), Closed> {
        match message {
            ToServer::Hello(_) => Err(Closed::new(CloseReason::Protocol, "hello was already said")),
            ToServer::Claim { slots } => {
                self.free = slots;
                self.claim().await
            }
            ToServer::Started(started) => self.started(started).await,
            message @ ToServer::Events { .. } => self.events(vec![message]).await,
            ToServer::Heartbeat { runs } => self.heartbeat(&runs).await,
            ToServer::Stalled {
                run_id,
                epoch,
                stalled,
            } => {
                if self.check(run_id, epoch) {
                    self.stalled(run_id, stalled).await;
                }
                Ok(())
            }
            ToServer::Finished(finished) => self.finished(finished).await,
            ToServer::Release { run_id, epoch } => {
                if self.check(run_id, epoch) {
                    self.release(run_id);
                    match self
                        .engine
                        .store
                        .release_run(run_id, self.runner.id, epoch)
                        .await
                    {
                        Ok(_) => {
                            tracing::info!(run.id = %run_id, "run given back by its runner; queued again");
                            self.engine.runs.wake();
                            self.engine
                                .hub
                                .relay(crate::hub::Relayed::RunQueued(run_id));
                        }
                        Err(e) => {
                            tracing::warn!(run.id = %run_id, error = %e, "cannot queue a given-back run again")
                        }
                    }
                }
                Ok(())
            }
        }
    }

    /// Whether the runner holds `run` at `epoch`; if not, tells it so (and it writes nothing more).
    fn check(&mut self, run: RunId, epoch: i64) -> bool {
        match self.held.get(&run) {
            Some(held) if *held == epoch => true,
            Some(held) => {
                let reason = format!(
                    "run {run} is held under epoch {held}, not {epoch}: a later claim owns it"
                );
                self.refuse(run, reason);
                false
            }
            None => {
                self.refuse(run, format!("this runner does not hold run {run}"));
                false
            }
        }
    }

    fn refuse(&mut self, run: RunId, reason: String) {
        tracing::warn!(run.id = %run, runner.name = %self.runner.name, reason, "runner message refused");
        self.send(ToRunner::Refused {
            run_id: run,
            reason,
        });
    }

    fn send(&self, message: ToRunner) {
        // A closed channel means the transport ended; the session ends at its next receive.
        let _ = self.outgoing.send(message);
    }

    fn hold(&mut self, run: RunId, epoch: i64) {
        self.held.insert(run, epoch);
        self.engine.runs.hold(run, self.outgoing.clone());
    }

    fn release(&mut self, run: RunId) {
        self.held.remove(&run);
        self.engine.runs.release(run);
    }

    /// Forgets this session's runs in the engine (their leases lapse unless the runner comes back).
    fn close(&mut self) {
        for run in self.held.keys() {
            self.engine.runs.release(*run);
        }
        if let Some((token, n, _)) = &self.kick {
            self.engine.runs.session_ended(*token, *n);
        }
        tracing::info!(runner.name = %self.runner.name, held = self.held.len(), "runner disconnected");
    }

    /// A remote runner went away: it is offline now, not once its last heartbeat grows stale, and the
    /// board's queued cards say at once why they wait. (Another replica it reconnects to records its
    /// next heartbeat as usual.)
    async fn gone(&self) {
        let Some(ws) = self.runner.workspace_id else {
            return;
        };
        let stale = Utc::now() - crate::domain::ONLINE_WITHIN - chrono::TimeDelta::seconds(1);
        if let Err(e) = self
            .engine
            .store
            .runner_heartbeat(self.runner.id, stale)
            .await
        {
            tracing::warn!(error = %e, "cannot mark the runner offline");
        }
        self.announce_queued(ws).await;
    }

    /// A remote runner came: the queued cards of its workspace stop saying that no runner is online.
    async fn announce_waiting(&self) {
        if let Some(ws) = self.runner.workspace_id {
            self.announce_queued(ws).await;
        }
    }

    /// Tells the board of `ws` that each issue with a queued run changed (its waiting reason may have).
    async fn announce_queued(&self, ws: crate::domain::WorkspaceId) {
        let queued = match self.engine.store.list_queued_runs(ws).await {
            Ok(runs) => runs,
            Err(e) => {
                tracing::warn!(error = %e, "cannot list the queued runs");
                return;
            }
        };
        let mut seen = std::collections::HashSet::new();
        for run in queued.into_iter().filter(|r| seen.insert(r.issue_id)) {
            if let Ok(issue) = self.engine.store.get_issue_by_id(run.issue_id).await {
                finish::announce(&self.engine, &issue);
            }
        }
    }

    /// Claims queued runs while the runner has free slots, and sends each as an order.
    async fn claim(&mut self) -> Result<(), Closed> {
        let lease = self.engine.runs.timing().lease;
        while self.free > 0 {
            let now = Utc::now();
            let claimed = self
                .engine
                .store
                .claim_next_run(self.runner.id, &self.scope, now, now + lease)
                .await;
            let run = match claimed {
                Ok(Some(run)) => run,
                Ok(None) => return Ok(()),
                Err(e) => {
                    tracing::warn!(error = %e, "cannot claim a run");
                    return Ok(());
                }
            };
            tracing::info!(run.id = %run.id, runner.name = %self.runner.name, epoch = run.lease_epoch, "run claimed");
            let claimable = run
                .not_before
                .map_or(run.created_at, |t| t.max(run.created_at));
            self.engine.metrics.claimed(claimable, now);
            match order::build(&self.engine, &run).await {
                Ok(order) => {
                    self.hold(run.id, run.lease_epoch);
                    self.free -= 1;
                    self.send(ToRunner::Run(Box::new(order)));
                }
                Err(refusal) => self.not_started(&run, refusal).await,
            }
        }
        Ok(())
    }

    /// Finishes a claimed run that cannot be ordered (its agent or issue is gone, a secret cannot be
    /// opened, the profile cannot run): failed, with the reason, without bothering the runner.
    async fn not_started(&mut self, run: &Run, refusal: order::Refusal) {
        tracing::warn!(run.id = %run.id, reason = %refusal.reason, message = %refusal.message, "run cannot start");
        let report = Finished {
            run_id: run.id,
            epoch: run.lease_epoch,
            last_seq: 0,
            outcome: RunOutcome {
                status: RunStatus::Failed,
                exit_code: None,
                failure_reason: Some(refusal.reason),
                failure_detail: None,
                usage: Usage::default(),
                summary: Some(refusal.message),
                diff_stat: None,
                session_id: None,
                base_commit: None,
                head_commit: None,
            },
            changed: false,
        };
        if let Err(e) = finish::conclude(&self.engine, run, &report, &Redactor::default()).await {
            tracing::warn!(error = %e, "cannot record the run's end");
        }
    }

    async fn started(&mut self, started: Started) -> Result<(), Closed> {
        if !self.check(started.run_id, started.epoch) {
            return Ok(());
        }
        let recorded = self
            .engine
            .store
            .start_run(
                started.run_id,
                self.runner.id,
                started.epoch,
                started.pid,
                started.workdir.as_deref(),
                started.branch.as_deref(),
            )
            .await;
        match recorded {
            Ok(run) => {
                self.mark_in_progress(&run).await;
                self.send(ToRunner::Ack {
                    run_id: run.id,
                    seq: 0,
                });
            }
            Err(store::Error::Conflict { .. } | store::Error::NotFound) => {
                let run = self.engine.store.get_run(started.run_id).await.ok();
                let resent = run.as_ref().is_some_and(|r| {
                    r.status == RunStatus::Running
                        && r.lease_epoch == started.epoch
                        && r.runner_id == Some(self.runner.id)
                });
                if resent {
                    self.send(ToRunner::Ack {
                        run_id: started.run_id,
                        seq: 0,
                    });
                } else {
                    // Cancelled or taken away between the claim and now.
                    tracing::info!(run.id = %started.run_id, "run no longer the runner's at start; stopping it");
                    self.release(started.run_id);
                    self.send(ToRunner::Cancel {
                        run_id: started.run_id,
                        lost: true,
                        why: None,
                    });
                }
            }
            Err(e) => return Err(internal(&e)),
        }
        Ok(())
    }

    /// A `todo` issue goes to `in_progress` when its assigned agent's run starts (a helper's run leaves
    /// the status alone); either way the board hears that the run is now running.
    async fn mark_in_progress(&self, run: &Run) {
        let issue = match self.engine.store.get_issue_by_id(run.issue_id).await {
            Ok(issue) => issue,
            Err(e) => {
                tracing::warn!(error = %e, "cannot read the started run's issue");
                return;
            }
        };
        if issue.status == IssueStatus::Todo && run.owns_status(&issue) {
            let actor = CommentAuthor::Agent(run.agent_id);
            if let Err(e) = self
                .engine
                .store
                .move_issue_when(
                    issue.workspace_id,
                    &issue.key,
                    // Only from todo, checked in the move: its agent may have marked it done already.
                    Some(&[IssueStatus::Todo]),
                    IssueStatus::InProgress,
                    None,
                    actor,
                )
                .await
            {
                tracing::warn!(error = %e, "cannot move the issue to in progress");
            }
        }
        finish::announce(&self.engine, &issue);
    }

    /// Handles `first`; when it is a run's events, every events message already waiting behind it (of any
    /// run) is stored with it in one transaction: a group commit, whose size follows the store's speed.
    /// A message of another kind ends the group and is handled after it, so each run's order holds.
    async fn take(
        &mut self,
        first: ToServer,
        incoming: &mut mpsc::Receiver<ToServer>,
    ) -> Result<(), Closed> {
        if !matches!(first, ToServer::Events { .. }) {
            return self.handle(first).await;
        }
        let mut group = vec![first];
        let mut count = 0;
        let mut after = None;
        while count < GROUP_EVENTS {
            match incoming.try_recv() {
                Ok(message @ ToServer::Events { .. }) => {
                    if let ToServer::Events { events, .. } = &message {
                        count += events.len();
                    }
                    group.push(message);
                }
                Ok(other) => {
                    after = Some(other);
                    break;
                }
                Err(_) => break,
            }
        }
        self.events(group).await?;
        match after {
            Some(message) => self.handle(message).await,
            None => Ok(()),
        }
    }

    /// Stores the events of `messages` (all `ToServer::Events`) in one transaction, then publishes and
    /// acknowledges each run's; a run no longer held under its epoch is refused and nothing of it written.
    async fn events(&mut self, messages: Vec<ToServer>) -> Result<(), Closed> {
        let mut group: Vec<(RunId, i64, Vec<crate::domain::NewRunEvent>)> = Vec::new();
        let mut spents: Vec<(RunId, i64, crate::domain::Usage)> = Vec::new();
        for message in messages {
            let ToServer::Events {
                run_id: run,
                epoch,
                from_seq,
                events,
                spent,
            } = message
            else {
                continue;
            };
            if !self.check(run, epoch) {
                continue;
            }
            let contiguous = events
                .iter()
                .enumerate()
                .all(|(i, e)| i64::try_from(i).is_ok_and(|i| e.seq == from_seq + i));
            if !contiguous || from_seq < 1 {
                return Err(Closed::new(
                    CloseReason::Protocol,
                    format!(
                        "events of run {run} must be numbered from from_seq ({from_seq}) on, without gaps"
                    ),
                ));
            }
            if let Some(spent) = spent {
                spents.retain(|(r, ..)| *r != run);
                spents.push((run, epoch, spent));
            }
            match group.last_mut() {
                Some((r, e, kept)) if *r == run && *e == epoch => kept.extend(events),
                _ => group.push((run, epoch, events)),
            }
        }
        if group.is_empty() {
            return Ok(());
        }
        let batches: Vec<store::LeasedEvents<'_>> = group
            .iter()
            .map(|(run, epoch, events)| store::LeasedEvents {
                run: *run,
                epoch: *epoch,
                events,
            })
            .collect();
        let mut tries = 0;
        let started = std::time::Instant::now();
        let outcomes = loop {
            match self.engine.store.append_leased_events(&batches).await {
                Ok(outcomes) => {
                    let stored = batches.iter().map(|b| b.events.len()).sum();
                    self.engine.metrics.flushed(stored, started.elapsed());
                    break outcomes;
                }
                Err(e) if tries + 1 < STORE_TRIES => {
                    tries += 1;
                    tracing::warn!(error = %e, tries, "cannot store run events; trying again");
                    tokio::time::sleep(Duration::from_millis(100) * 2u32.pow(tries)).await;
                }
                Err(e) => return Err(internal(&e)),
            }
        };
        drop(batches);
        for ((run, epoch, events), outcome) in group.into_iter().zip(outcomes) {
            match outcome {
                Ok(last_seq) => {
                    self.engine.hub.publish_events(run, last_seq, events);
                    self.send(ToRunner::Ack {
                        run_id: run,
                        seq: last_seq,
                    });
                }
                Err(_) => {
                    self.release(run);
                    self.refuse(
                        run,
                        format!("run {run} is no longer live under epoch {epoch}"),
                    );
                }
            }
        }
        for (run, epoch, spent) in spents {
            if self.held.get(&run) == Some(&epoch) {
                // Off the session's path: a budget check reads and may cancel other runs.
                tokio::spawn(super::ensemble::spent(
                    self.engine.clone(),
                    run,
                    epoch,
                    spent,
                ));
            }
        }
        Ok(())
    }

    async fn heartbeat(&mut self, runs: &[Held]) -> Result<(), Closed> {
        let now = Utc::now();
        if let Some(hash) = &self.token_hash {
            // A revoked token ends the session at the next heartbeat at the latest.
            match self.engine.store.use_runner_token(hash, now).await {
                Ok(_) => {}
                Err(store::Error::NotFound) => {
                    return Err(Closed::new(
                        CloseReason::Revoked,
                        "this runner's token was revoked",
                    ));
                }
                Err(e) => tracing::warn!(error = %e, "cannot check the runner's token"),
            }
        }
        if let Err(e) = self
            .engine
            .store
            .runner_heartbeat(self.runner.id, now)
            .await
        {
            tracing::warn!(error = %e, "cannot record the runner's heartbeat");
        }
        let until = now + self.engine.runs.timing().lease;
        let held: Vec<(RunId, i64)> = runs
            .iter()
            .filter(|held| self.check(held.run_id, held.epoch))
            .map(|held| (held.run_id, held.epoch))
            .collect();
        if !held.is_empty() {
            match self
                .engine
                .store
                .renew_leases(self.runner.id, &held, until)
                .await
            {
                Ok(lost) => {
                    for run_id in lost {
                        tracing::warn!(run.id = %run_id, "lease lost; telling the runner to stop the run");
                        self.release(run_id);
                        self.send(ToRunner::Cancel {
                            run_id,
                            lost: true,
                            why: None,
                        });
                    }
                }
                Err(e) => tracing::warn!(error = %e, "cannot renew the leases; will retry"),
            }
        }
        self.send(ToRunner::Alive);
        Ok(())
    }

    /// Flags (or clears) the run's stall: the board shows it; a new stall also makes an inbox item.
    async fn stalled(&self, run_id: RunId, stalled: bool) {
        let at = stalled.then(Utc::now);
        if let Err(e) = self.engine.store.set_run_stalled(run_id, at).await {
            tracing::warn!(error = %e, "cannot flag the run's stall");
            return;
        }
        let loaded = async {
            let run = self.engine.store.get_run(run_id).await?;
            let issue = self.engine.store.get_issue_by_id(run.issue_id).await?;
            let agent = self
                .engine
                .store
                .get_agent(run.workspace_id, run.agent_id)
                .await?;
            Ok::<_, store::Error>((run, issue, agent))
        };
        let Ok((run, issue, agent)) = loaded.await else {
            return;
        };
        if stalled {
            let item = NewInboxItem {
                workspace_id: run.workspace_id,
                user_id: None,
                kind: InboxKind::RunStalled,
                issue_id: Some(issue.id),
                run_id: Some(run.id),
                comment_id: None,
                message: format!(
                    "{} has been silent on {} for its stall timeout; it is stopped after a second one",
                    agent.profile.name.as_str(),
                    issue.key
                ),
            };
            if let Err(e) = self.engine.store.create_inbox_item(&item).await {
                tracing::warn!(error = %e, "cannot create the stall's inbox item");
            }
        }
        finish::announce(&self.engine, &issue);
    }

    async fn finished(&mut self, report: Finished) -> Result<(), Closed> {
        let run_id = report.run_id;
        if !self.check(run_id, report.epoch) {
            return Ok(());
        }
        let run = match self.engine.store.get_run(run_id).await {
            Ok(run) => run,
            Err(store::Error::NotFound) => {
                self.release(run_id);
                self.send(ToRunner::Done { run_id });
                return Ok(());
            }
            Err(e) => return Err(internal(&e)),
        };
        let redactor = match self
            .engine
            .store
            .get_agent(run.workspace_id, run.agent_id)
            .await
        {
            Ok(agent) => Redactor::for_agent(&self.engine.secrets, &agent, None),
            Err(_) => Redactor::default(),
        };
        match finish::conclude(&self.engine, &run, &report, &redactor).await {
            Ok(()) => {}
            Err(store::Error::Conflict { .. }) if run.status.is_terminal() => {
                // Already recorded (a resend after a reconnect), or ended meanwhile by the sweep.
            }
            Err(store::Error::Conflict { .. }) => {
                self.release(run_id);
                self.refuse(
                    run_id,
                    format!(
                        "run {run_id} is no longer live under epoch {}",
                        report.epoch
                    ),
                );
                return Ok(());
            }
            Err(e) => return Err(internal(&e)),
        }
        self.release(run_id);
        self.send(ToRunner::Done { run_id });
        Ok(())
    }
}

/// A store failure that ends the session; the runner reconnects and resends what was not acknowledged.
fn internal(e: &store::Error) -> Closed {
    tracing::warn!(error = %e, "runner session ended by a store error");
    Closed::new(
        CloseReason::ServerError,
        "the server cannot reach its database; reconnecting",
    )
}
