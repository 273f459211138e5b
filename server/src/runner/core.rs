//! The runner: the executor's long-lived state (the runs it executes, its outbox) and one connection
//! loop shared by both transports. A connection says `hello`, waits for `welcome`, finishes the runs
//! the server says a previous life left behind, resends the outbox, says how many runs it can take,
//! then forwards: orders to new run tasks, cancels to their signals, acknowledgements to the outbox, and
//! the outbox, heartbeats and claims to the server. When a connection ends the runs go on; the next
//! connection (to the same or another server URL) resends what was not acknowledged.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use tokio::sync::mpsc;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use super::outbox::Outbox;
use super::protocol::{
    Held, Hello, LocalModelInfo, Orphan, PROTOCOL_VERSION, RuntimeInfo, ToRunner, ToServer,
};
use crate::domain::RunId;
use crate::runner::executor::{Host, RunSignal};

/// After the runs' grace periods, how long a stopping runner still waits for their reports to be
/// acknowledged.
const DRAIN_EXTRA: std::time::Duration = std::time::Duration::from_secs(5);
/// How often a stopping runner looks whether everything was reported.
const DRAIN_POLL: std::time::Duration = std::time::Duration::from_millis(50);

/// Why a connection ended.
#[derive(Debug)]
pub enum Ended {
    /// The runner is stopping.
    Stopped,
    /// The transport broke or the server closed it: reconnect.
    Lost(String),
    /// The server refused the runner for good (a bad token, another protocol version): a person must act.
    Refused(String),
}

/// One transport's connection: JSON frames over a WebSocket, or channels in process.
pub trait Wire: Send {
    /// Sends one message; `Err` when the connection is gone.
    fn send(
        &mut self,
        message: ToServer,
    ) -> impl std::future::Future<Output = Result<(), Ended>> + Send;
    /// The next message; `Err` when the connection is gone or closed (with why). Cancel-safe.
    fn recv(&mut self) -> impl std::future::Future<Output = Result<ToRunner, Ended>> + Send;
}

/// The runner's state, shared by its connections and its run tasks. Cheap to clone.
#[derive(Clone)]
pub struct Runner {
    inner: Arc<Inner>,
}

struct Inner {
    host: Host,
    name: String,
    token: String,
    max_runs: u32,
    outbox: Outbox,
    /// The runs being executed, by id: their claim's epoch and their stop signal.
    live: Mutex<HashMap<RunId, (i64, Arc<RunSignal>)>>,
    /// Messages that need no acknowledgement (claims, stall flags), for the current connection.
    notes: mpsc::UnboundedSender<ToServer>,
    notes_rx: tokio::sync::Mutex<mpsc::UnboundedReceiver<ToServer>>,
    tasks: Mutex<JoinSet<()>>,
    stop: CancellationToken,
}

impl Runner {
    /// A runner called `name`, presenting `token` (empty for the embedded runner).
    pub fn new(
        host: Host,
        name: String,
        token: String,
        max_runs: u32,
        outbox: Outbox,
        stop: CancellationToken,
    ) -> Self {
        let (notes, notes_rx) = mpsc::unbounded_channel();
        Self {
            inner: Arc::new(Inner {
                host,
                name,
                token,
                max_runs: max_runs.max(1),
                outbox,
                live: Mutex::default(),
                notes,
                notes_rx: tokio::sync::Mutex::new(notes_rx),
                tasks: Mutex::new(JoinSet::new()),
                stop,
            }),
        }
    }

    fn live(&self) -> std::sync::MutexGuard<'_, HashMap<RunId, (i64, Arc<RunSignal>)>> {
        self.inner
            .live
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The runs this runner holds: those it executes, and those whose finish the server has not
    /// acknowledged yet.
    fn held(&self) -> Vec<Held> {
        let mut held: Vec<Held> = self
            .live()
            .iter()
            .map(|(run_id, (epoch, _))| Held {
                run_id: *run_id,
                epoch: *epoch,
            })
            .collect();
        for (h, finished, _) in self.inner.outbox.runs() {
            if finished && !held.iter().any(|x| x.run_id == h.run_id) {
                held.push(h);
            }
        }
        held
    }

    fn free_slots(&self) -> u32 {
        let busy = u32::try_from(self.live().len()).unwrap_or(u32::MAX);
        self.inner.max_runs.saturating_sub(busy)
    }

    async fn hello(&self) -> Hello {
        let host = &self.inner.host;
        let (_, found) = host.runtimes.get().await;
        let local = crate::runtimes::scan_local(&host.config.llama_urls).await;
        Hello {
            protocol: PROTOCOL_VERSION,
            token: self.inner.token.clone(),
            name: self.inner.name.clone(),
            version: env!("CARGO_PKG_VERSION").to_owned(),
            runtimes: found
                .iter()
                .filter(|d| d.status == muster_agents::DetectionStatus::Found)
                .filter_map(|d| {
                    Some(RuntimeInfo {
                        kind: d.kind.as_str().parse().ok()?,
                        version: d.version.clone(),
                        path: d.path.as_ref().map(|p| p.display().to_string()),
                    })
                })
                .collect(),
            local_models: local
                .servers
                .iter()
                .filter(|s| s.status == muster_llama::probe::ServerStatus::Ready)
                .map(|s| LocalModelInfo {
                    url: s.url.clone(),
                    models: s.models.clone(),
                })
                .collect(),
            max_runs: self.inner.max_runs,
            live: self.held(),
        }
    }

    /// Serves one connection until it ends.
    pub async fn connect<W: Wire>(&self, wire: &mut W) -> Ended {
        let stop = self.inner.stop.clone();
        if let Err(e) = wire.send(ToServer::Hello(self.hello().await)).await {
            return e;
        }
        let welcome = tokio::select! {
            () = stop.cancelled() => return Ended::Stopped,
            message = wire.recv() => match message {
                Ok(ToRunner::Welcome(welcome)) => welcome,
                Ok(other) => return Ended::Lost(format!("expected welcome, got {other:?}")),
                Err(e) => return e,
            },
        };
        for orphan in welcome.orphans {
            self.adopt_orphan(orphan);
        }
        let heartbeat = std::time::Duration::from_secs(welcome.heartbeat_secs.max(1))
            .min(self.inner.host.timing.heartbeat);
        let mut beat = tokio::time::interval(heartbeat);
        beat.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut pushed = self.inner.outbox.watch();
        let mut sent = 0;
        let mut notes = self.inner.notes_rx.lock().await;
        // Claims said before this connection are stale: say the current number again below.
        while notes.try_recv().is_ok() {}
        if let Err(e) = self.resend(wire, &mut sent).await {
            return e;
        }
        let claim = ToServer::Claim {
            slots: self.free_slots(),
        };
        if let Err(e) = wire.send(claim).await {
            return e;
        }
        // At stop the runs are signalled (they end `interrupted`); the connection stays until they have
        // reported and the server has acknowledged it, or until the deadline.
        let mut draining: Option<tokio::time::Instant> = None;
        loop {
            if let Some(deadline) = draining {
                let drained = self.running() == 0 && self.inner.outbox.after(0).is_empty();
                if drained || tokio::time::Instant::now() >= deadline {
                    return Ended::Stopped;
                }
            }
            let result = tokio::select! {
                () = stop.cancelled(), if draining.is_none() => {
                    let t = &self.inner.host.timing;
                    draining = Some(tokio::time::Instant::now() + t.int_grace + t.term_grace + DRAIN_EXTRA);
                    // No new runs from now on.
                    wire.send(ToServer::Claim { slots: 0 }).await
                }
                () = tokio::time::sleep(DRAIN_POLL), if draining.is_some() => Ok(()),
                changed = pushed.changed() => match changed {
                    Ok(()) => self.resend(wire, &mut sent).await,
                    Err(_) => return Ended::Stopped,
                },
                note = notes.recv() => match note {
                    Some(note) => wire.send(note).await,
                    None => return Ended::Stopped,
                },
                _ = beat.tick() => wire.send(ToServer::Heartbeat { runs: self.held() }).await,
                message = wire.recv() => match message {
                    Ok(message) => {
                        self.handle(message);
                        Ok(())
                    }
                    Err(e) => Err(e),
                },
            };
            if let Err(e) = result {
                return e;
            }
        }
    }

    /// Sends the outbox's messages after `sent`.
    async fn resend<W: Wire>(&self, wire: &mut W, sent: &mut u64) -> Result<(), Ended> {
        for entry in self.inner.outbox.after(*sent) {
            wire.send(entry.message).await?;
            *sent = entry.no;
        }
        Ok(())
    }

    fn handle(&self, message: ToRunner) {
        match message {
            ToRunner::Welcome(_) => tracing::warn!("a second welcome; ignored"),
            ToRunner::Alive => {}
            ToRunner::Run(order) => self.start(*order),
            ToRunner::Ack { run_id, seq } => self.inner.outbox.ack(run_id, seq),
            ToRunner::Done { run_id } => self.inner.outbox.forget(run_id),
            ToRunner::Cancel { run_id, lost, why } => {
                if let Some((_, signal)) = self.live().get(&run_id) {
                    tracing::info!(run.id = %run_id, lost, ?why, "the server stops the run");
                    match why {
                        Some(why) if !lost => signal.stop_because(why),
                        _ => signal.stop(lost),
                    }
                }
                if lost {
                    self.inner.outbox.forget(run_id);
                }
            }
            ToRunner::Refused { run_id, reason } => {
                tracing::warn!(run.id = %run_id, reason, "the server refused a message about the run");
                if let Some((_, signal)) = self.live().get(&run_id) {
                    signal.stop(true);
                }
                self.inner.outbox.forget(run_id);
            }
        }
    }

    /// Starts executing an order in its own task (or gives it back when the runner is stopping).
    fn start(&self, order: crate::runner::protocol::Order) {
        let run_id = order.run_id;
        if self.inner.stop.is_cancelled() {
            tracing::info!(run.id = %run_id, "stopping: giving the run back");
            self.note(ToServer::Release {
                run_id,
                epoch: order.epoch,
            });
            return;
        }
        if self.live().contains_key(&run_id) {
            tracing::warn!(run.id = %run_id, "the server sent a run this runner already executes");
            return;
        }
        let signal = Arc::new(RunSignal::new(&self.inner.stop));
        self.live().insert(run_id, (order.epoch, signal.clone()));
        tracing::info!(run.id = %run_id, attempt = order.attempt, "run received");
        let runner = self.clone();
        self.spawn(async move {
            let link = runner.link();
            crate::runner::executor::run::execute(&runner.inner.host, order, &link, &signal).await;
            runner.live().remove(&run_id);
            if !runner.inner.stop.is_cancelled() {
                runner.note(ToServer::Claim {
                    slots: runner.free_slots(),
                });
            }
        });
    }

    /// Finishes a run a previous life of this runner left behind.
    fn adopt_orphan(&self, orphan: Orphan) {
        if self.live().contains_key(&orphan.run_id) {
            return;
        }
        tracing::warn!(run.id = %orphan.run_id, "run interrupted: this runner stopped while it ran");
        let runner = self.clone();
        self.spawn(async move {
            let link = runner.link();
            crate::runner::executor::run::recover(&runner.inner.host, orphan, &link).await;
        });
    }

    fn spawn(&self, task: impl std::future::Future<Output = ()> + Send + 'static) {
        let mut tasks = self
            .inner
            .tasks
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        while tasks.try_join_next().is_some() {}
        tasks.spawn(task);
    }

    fn note(&self, message: ToServer) {
        let _ = self.inner.notes.send(message);
    }

    fn link(&self) -> Link {
        Link {
            outbox: self.inner.outbox.clone(),
            notes: self.inner.notes.clone(),
        }
    }

    /// Waits for every run task to end (after `stop` fired, they end `interrupted`).
    pub async fn wind_down(&self) {
        let mut tasks = std::mem::take(
            &mut *self
                .inner
                .tasks
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner),
        );
        while tasks.join_next().await.is_some() {}
    }

    /// How many runs it executes now.
    pub fn running(&self) -> usize {
        self.live().len()
    }

    /// The outbox (tests look at what is kept).
    pub fn outbox(&self) -> &Outbox {
        &self.inner.outbox
    }
}

/// What a run task uses to report: the outbox for what must arrive, notes for the rest.
#[derive(Clone)]
pub struct Link {
    outbox: Outbox,
    notes: mpsc::UnboundedSender<ToServer>,
}

impl Link {
    /// A link to `outbox` alone, outside any runner (notes go nowhere): see
    /// [`crate::runner::executor::execute_alone`].
    pub(crate) fn detached(outbox: Outbox) -> Self {
        let (notes, _) = mpsc::unbounded_channel();
        Self { outbox, notes }
    }

    /// Sends a `started`, `events` or `finished`, kept until acknowledged.
    pub fn keep(&self, message: ToServer) {
        self.outbox.push(message);
    }

    /// Sends a message that needs no acknowledgement (a stall flag).
    pub fn note(&self, message: ToServer) {
        let _ = self.notes.send(message);
    }

    /// Follows the highest event seq of `run` the server has acknowledged.
    pub fn acks(&self, run: RunId) -> tokio::sync::watch::Receiver<crate::domain::Seq> {
        self.outbox.acks(run)
    }

    /// The highest event seq the outbox keeps for `run` (after a restart, numbering goes on after it).
    pub fn kept_seq(&self, run: RunId) -> crate::domain::Seq {
        self.outbox
            .runs()
            .into_iter()
            .find(|(h, ..)| h.run_id == run)
            .map_or(0, |(_, _, seq)| seq)
    }
}
