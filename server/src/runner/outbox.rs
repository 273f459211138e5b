//! The runner's outbox: every `started`, `events` and `finished` message stays here until the server
//! acknowledges it, and is resent, in order, on every new connection (to the same or another replica).
//! A remote runner also appends each message to a file per run (`<state dir>/outbox/<run id>.jsonl`),
//! removed once the run's finish is acknowledged, so a restarted runner resends what its previous life
//! could not deliver. The server's writes are idempotent, so a message sent twice is harmless.

use std::collections::{HashMap, VecDeque};
use std::io::Write as _;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use tokio::sync::watch;

use super::protocol::{Held, ToServer};
use crate::domain::{RunId, Seq};

/// One kept message, numbered in the order it was pushed.
#[derive(Debug, Clone)]
pub struct Entry {
    pub no: u64,
    pub message: ToServer,
}

/// The outbox. Cheap to clone.
#[derive(Clone)]
pub struct Outbox {
    inner: Arc<Mutex<State>>,
    pushed: watch::Sender<u64>,
    dir: Option<PathBuf>,
}

#[derive(Default)]
struct State {
    entries: VecDeque<Entry>,
    next_no: u64,
    /// Per run with a watcher: the highest event seq the server acknowledged (see [`Outbox::acks`]).
    acked: HashMap<RunId, watch::Sender<Seq>>,
}

impl Outbox {
    /// An outbox in memory only (the embedded runner: it lives and dies with the server).
    pub fn in_memory() -> Self {
        Self {
            inner: Arc::default(),
            pushed: watch::Sender::new(0),
            dir: None,
        }
    }

    /// An outbox kept in `dir` too; loads what a previous life left there.
    pub fn durable(dir: &std::path::Path) -> anyhow::Result<Self> {
        std::fs::create_dir_all(dir)
            .map_err(|e| anyhow::anyhow!("cannot create the outbox {}: {e}", dir.display()))?;
        let outbox = Self {
            dir: Some(dir.to_path_buf()),
            ..Self::in_memory()
        };
        let mut files: Vec<PathBuf> = std::fs::read_dir(dir)?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
            .collect();
        files.sort();
        let mut state = outbox.state();
        for file in files {
            let text = std::fs::read_to_string(&file)?;
            for line in text.lines() {
                // A line cut short by a crash is the last one: nothing after it was acknowledged.
                let Ok(message) = serde_json::from_str::<ToServer>(line) else {
                    tracing::warn!(file = %file.display(), "skipping a torn outbox line");
                    continue;
                };
                let no = state.next_no + 1;
                state.next_no = no;
                state.entries.push_back(Entry { no, message });
            }
        }
        let loaded = state.entries.len();
        drop(state);
        if loaded > 0 {
            tracing::info!(
                messages = loaded,
                "outbox loaded; resending after connecting"
            );
        }
        Ok(outbox)
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.inner
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Keeps `message` (a `started`, `events` or `finished`) until it is acknowledged.
    pub fn push(&self, message: ToServer) {
        let Some(run) = run_of(&message) else {
            return;
        };
        if let Some(dir) = &self.dir {
            let path = dir.join(format!("{run}.jsonl"));
            let written = serde_json::to_string(&message)
                .map_err(std::io::Error::other)
                .and_then(|line| {
                    let mut file = std::fs::OpenOptions::new()
                        .create(true)
                        .append(true)
                        .open(&path)?;
                    writeln!(file, "{line}")
                });
            if let Err(e) = written {
                tracing::warn!(error = %e, file = %path.display(), "cannot keep a message in the outbox file");
            }
        }
        let no = {
            let mut state = self.state();
            let no = state.next_no + 1;
            state.next_no = no;
            state.entries.push_back(Entry { no, message });
            no
        };
        self.pushed.send_replace(no);
    }

    /// The kept messages numbered after `after`, in order.
    pub fn after(&self, after: u64) -> Vec<Entry> {
        self.state()
            .entries
            .iter()
            .filter(|e| e.no > after)
            .cloned()
            .collect()
    }

    /// Changes whenever a message is pushed.
    pub fn watch(&self) -> watch::Receiver<u64> {
        self.pushed.subscribe()
    }

    /// Follows the highest event seq of `run` the server has acknowledged: the run's event log sends its
    /// next batch as soon as the one in flight is stored (group commit).
    pub fn acks(&self, run: RunId) -> watch::Receiver<Seq> {
        self.state()
            .acked
            .entry(run)
            .or_insert_with(|| watch::Sender::new(0))
            .subscribe()
    }

    /// The server stored `run`'s events up to `seq` (0: its start).
    pub fn ack(&self, run: RunId, seq: Seq) {
        let mut state = self.state();
        if let Some(acked) = state.acked.get(&run) {
            acked.send_if_modified(|at| {
                let newer = seq > *at;
                *at = (*at).max(seq);
                newer
            });
        }
        state.entries.retain(|e| match &e.message {
            ToServer::Started(s) if s.run_id == run => seq < 0,
            ToServer::Events { run_id, events, .. } if *run_id == run => {
                events.last().is_some_and(|last| last.seq > seq)
            }
            _ => true,
        });
    }

    /// The server recorded `run`'s finish, or refused the run: forget everything of it.
    pub fn forget(&self, run: RunId) {
        let mut state = self.state();
        state.entries.retain(|e| run_of(&e.message) != Some(run));
        state.acked.remove(&run);
        drop(state);
        if let Some(dir) = &self.dir {
            let _ = std::fs::remove_file(dir.join(format!("{run}.jsonl")));
        }
    }

    /// The runs with something kept, each with its epoch, whether its finish is among what is kept, and
    /// the highest event seq kept.
    pub fn runs(&self) -> Vec<(Held, bool, Seq)> {
        let mut out: Vec<(Held, bool, Seq)> = Vec::new();
        for e in &self.state().entries {
            let (held, finish, seq) = match &e.message {
                ToServer::Started(s) => (
                    Held {
                        run_id: s.run_id,
                        epoch: s.epoch,
                    },
                    false,
                    0,
                ),
                ToServer::Events {
                    run_id,
                    epoch,
                    events,
                    ..
                } => (
                    Held {
                        run_id: *run_id,
                        epoch: *epoch,
                    },
                    false,
                    events.last().map_or(0, |l| l.seq),
                ),
                ToServer::Finished(f) => (
                    Held {
                        run_id: f.run_id,
                        epoch: f.epoch,
                    },
                    true,
                    f.last_seq,
                ),
                _ => continue,
            };
            match out.iter_mut().find(|(h, ..)| h.run_id == held.run_id) {
                Some(found) => {
                    found.1 |= finish;
                    found.2 = found.2.max(seq);
                }
                None => out.push((held, finish, seq)),
            }
        }
        out
    }
}

fn run_of(message: &ToServer) -> Option<RunId> {
    match message {
        ToServer::Started(s) => Some(s.run_id),
        ToServer::Events { run_id, .. } => Some(*run_id),
        ToServer::Finished(f) => Some(f.run_id),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::NewRunEvent;

    fn events(run: RunId, seqs: std::ops::RangeInclusive<Seq>) -> ToServer {
        ToServer::Events {
            run_id: run,
            epoch: 1,
            from_seq: *seqs.start(),
            events: seqs
                .map(|seq| NewRunEvent {
                    seq,
                    at: chrono::Utc::now(),
                    kind: "text".to_owned(),
                    payload: serde_json::json!({ "text": seq }),
                })
                .collect(),
            spent: None,
        }
    }

    #[test]
    fn acknowledged_events_leave_and_the_rest_survive_a_restart() {
        let dir = tempfile::tempdir().unwrap();
        let run = RunId::new();
        let outbox = Outbox::durable(dir.path()).unwrap();
        outbox.push(events(run, 1..=3));
        outbox.push(events(run, 4..=5));
        outbox.ack(run, 3);
        let left = outbox.after(0);
        assert_eq!(left.len(), 1, "only the unacknowledged batch is kept");
        // A new life reads the file: everything not forgotten is resent (the server ignores repeats).
        let again = Outbox::durable(dir.path()).unwrap();
        let runs = again.runs();
        assert_eq!(runs.len(), 1);
        assert_eq!(runs[0].2, 5, "the highest kept seq");
        assert!(!runs[0].1, "no finish kept");
        again.forget(run);
        assert!(again.after(0).is_empty());
        assert!(Outbox::durable(dir.path()).unwrap().after(0).is_empty());
    }
}
