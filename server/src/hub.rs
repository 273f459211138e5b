//! The live hub: one broadcast channel per topic, created on first subscribe and dropped with the last
//! subscriber. Publishing never blocks: a slow subscriber lags and resyncs from the store.
//!
//! Invariant: subscribe first, then read the store, then forward live events — so nothing that happens
//! between the read and the subscription is missed.
//!
//! A run's topic also keeps the run's latest stored events (its feed, [`FEED_EVENTS`] at most), handed
//! over by the runner session right after it committed them: every viewer of the run on this replica
//! takes them from there, and each event's encoding is made once ([`SharedEvent`]), so the cost of a
//! new line does not grow with the viewers. Only a viewer behind the feed (it fell behind, or the events
//! were stored by another replica) reads the store.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, OnceLock};

use tokio::sync::broadcast;

use crate::domain::{IssueKey, NewRunEvent, RunEvent, RunId, Seq, WorkspaceId};

/// How many events a subscriber may fall behind before it gets `Lagged` and resyncs from the store.
/// Board events are tiny "something changed" notes, so a small buffer is plenty; a lagging browser
/// just re-renders its board.
pub const LIVE_CHANNEL_CAPACITY: usize = 64;

/// How many of a watched run's latest events its topic keeps for its viewers.
pub const FEED_EVENTS: usize = 1024;

/// A stored run event as its viewers share it: the event, and its JSON made by the first viewer that
/// needs it (event streams send the same bytes to every viewer).
#[derive(Debug)]
pub struct SharedEvent {
    event: RunEvent,
    json: OnceLock<Box<str>>,
}

impl SharedEvent {
    pub fn new(event: RunEvent) -> Arc<Self> {
        Arc::new(Self {
            event,
            json: OnceLock::new(),
        })
    }

    /// The event's JSON, made with `encode` the first time it is asked for.
    pub fn json(&self, encode: impl FnOnce(&RunEvent) -> String) -> &str {
        self.json
            .get_or_init(|| encode(&self.event).into_boxed_str())
    }
}

impl std::ops::Deref for SharedEvent {
    type Target = RunEvent;

    fn deref(&self) -> &RunEvent {
        &self.event
    }
}

impl PartialEq for SharedEvent {
    fn eq(&self, other: &Self) -> bool {
        self.event == other.event
    }
}

/// What a subscriber listens to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Topic {
    /// Every change to a workspace's board.
    Board(WorkspaceId),
    /// One run's event log.
    Run(RunId),
}

/// A change, sent to the topic's subscribers. Carries ids only; subscribers read the rows themselves.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LiveEvent {
    /// An issue was created, edited, moved or assigned.
    IssueChanged(IssueKey),
    /// A run's log now holds events up to `last_seq` (already committed to the store).
    RunEvents { run_id: RunId, last_seq: Seq },
}

/// What other replicas must hear about (see `engine::relay`): ids only, never payloads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Relayed {
    /// A live event published here.
    Live(Topic, LiveEvent),
    /// A run was queued: runners anywhere may claim it.
    RunQueued(RunId),
    /// A run must be cancelled by whichever replica holds it.
    CancelRun(RunId),
    /// A run must be stopped, for this reason, by whichever replica holds it (an ensemble's policy or
    /// budget).
    StopRun(RunId, crate::domain::StopWhy),
    /// A runner token was revoked: every replica disconnects the runners using it.
    RunnerTokenRevoked(crate::domain::RunnerTokenId),
    /// A session or API token ended (its SHA-256, as stored; the secret never travels): every replica
    /// ends the live connections opened with it.
    CredentialEnded(String),
}

/// A topic's channel and, for a run, its feed of latest events (contiguous seqs).
struct Channel {
    tx: broadcast::Sender<Arc<LiveEvent>>,
    feed: VecDeque<Arc<SharedEvent>>,
}

/// Topic → channel map, plus the optional relay to other replicas (Postgres only).
#[derive(Clone, Default)]
pub struct Hub {
    topics: Arc<Mutex<HashMap<Topic, Channel>>>,
    relay: Arc<Mutex<Option<tokio::sync::mpsc::UnboundedSender<Relayed>>>>,
}

impl Hub {
    /// Subscribes to `topic`, creating its channel if needed.
    pub fn subscribe(&self, topic: Topic) -> Subscription {
        let mut topics = self
            .topics
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let rx = topics
            .entry(topic)
            .or_insert_with(|| Channel {
                tx: broadcast::channel(LIVE_CHANNEL_CAPACITY).0,
                feed: VecDeque::new(),
            })
            .tx
            .subscribe();
        Subscription {
            rx,
            topic,
            hub: self.clone(),
        }
    }

    /// Sends `event` to the topic's subscribers, if any, and to other replicas when relayed. Never blocks.
    pub fn publish(&self, topic: Topic, event: LiveEvent) {
        self.relay(Relayed::Live(topic, event.clone()));
        self.publish_local(topic, event);
    }

    /// Sends a note to the other replicas, when a relay is set (a no-op on one process).
    pub fn relay(&self, note: Relayed) {
        let relay = self
            .relay
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(tx) = relay.as_ref() {
            let _ = tx.send(note);
        }
    }

    /// Routes notes for other replicas to `tx` from now on.
    pub fn set_relay(&self, tx: tokio::sync::mpsc::UnboundedSender<Relayed>) {
        *self
            .relay
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(tx);
    }

    /// Sends `event` to this process's subscribers only (an event relayed from another replica).
    pub fn publish_local(&self, topic: Topic, event: LiveEvent) {
        let topics = self
            .topics
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(channel) = topics.get(&topic) {
            let _ = channel.tx.send(Arc::new(event));
        }
    }

    /// Announces a run's events just committed (up to `last_seq`): to other replicas as ids, and here
    /// with the events themselves, kept in the run's feed when someone watches the run.
    pub fn publish_events(&self, run: RunId, last_seq: Seq, events: Vec<NewRunEvent>) {
        let topic = Topic::Run(run);
        let note = LiveEvent::RunEvents {
            run_id: run,
            last_seq,
        };
        self.relay(Relayed::Live(topic, note.clone()));
        let mut topics = self
            .topics
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let Some(channel) = topics.get_mut(&topic) else {
            return;
        };
        for e in events {
            let next = channel.feed.back().map(|last| last.seq + 1);
            if next.is_some_and(|next| e.seq < next) {
                continue; // sent again after a reconnect: already kept
            }
            if next.is_some_and(|next| e.seq > next) {
                channel.feed.clear(); // a gap: the feed starts again here
            }
            channel.feed.push_back(SharedEvent::new(RunEvent {
                run_id: run,
                seq: e.seq,
                at: e.at,
                kind: e.kind,
                payload: e.payload,
            }));
            if channel.feed.len() > FEED_EVENTS {
                channel.feed.pop_front();
            }
        }
        let _ = channel.tx.send(Arc::new(note));
    }

    /// Up to `limit` of the run's events after `after` from its feed; `None` when the feed does not
    /// reach back to `after + 1` (the caller reads the store).
    pub fn feed_after(
        &self,
        run: RunId,
        after: Seq,
        limit: usize,
    ) -> Option<Vec<Arc<SharedEvent>>> {
        let topics = self
            .topics
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let feed = &topics.get(&Topic::Run(run))?.feed;
        let first = feed.front()?.seq;
        if first > after + 1 {
            return None;
        }
        let skip = usize::try_from(after + 1 - first).ok()?;
        Some(
            feed.range(skip.min(feed.len())..)
                .take(limit)
                .cloned()
                .collect(),
        )
    }

    /// Live subscriptions on this replica: all of them, and those of run logs (metrics).
    pub fn subscriber_counts(&self) -> (usize, usize) {
        let topics = self
            .topics
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        topics.iter().fold((0, 0), |(all, runs), (topic, channel)| {
            let n = channel.tx.receiver_count();
            let run = if matches!(topic, Topic::Run(_)) { n } else { 0 };
            (all + n, runs + run)
        })
    }

    /// How many topics have live subscribers (for tests and metrics).
    pub fn topic_count(&self) -> usize {
        self.topics
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .len()
    }

    fn release(&self, topic: Topic) {
        let mut topics = self
            .topics
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if topics
            .get(&topic)
            .is_some_and(|channel| channel.tx.receiver_count() == 0)
        {
            topics.remove(&topic);
        }
    }
}

/// A subscriber's end; dropping the last one of a topic removes the topic.
pub struct Subscription {
    rx: broadcast::Receiver<Arc<LiveEvent>>,
    topic: Topic,
    hub: Hub,
}

impl Subscription {
    /// The next event; `Err(Lagged)` means events were missed and the caller must resync.
    pub async fn recv(&mut self) -> Result<Arc<LiveEvent>, broadcast::error::RecvError> {
        self.rx.recv().await
    }
}

impl Drop for Subscription {
    fn drop(&mut self) {
        // Our receiver is still counted until this struct is gone; release after dropping it.
        let (topic, hub) = (self.topic, self.hub.clone());
        let rx = std::mem::replace(&mut self.rx, broadcast::channel(1).1);
        drop(rx);
        hub.release(topic);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::IssueKey;

    #[tokio::test]
    async fn topics_live_as_long_as_their_subscribers() {
        let hub = Hub::default();
        let ws = WorkspaceId::new();
        hub.publish(
            Topic::Board(ws),
            LiveEvent::IssueChanged(IssueKey::parse("MUS-1").unwrap()),
        );
        assert_eq!(hub.topic_count(), 0, "publishing to nobody creates nothing");
        let mut a = hub.subscribe(Topic::Board(ws));
        let b = hub.subscribe(Topic::Board(ws));
        let key = IssueKey::parse("MUS-2").unwrap();
        hub.publish(Topic::Board(ws), LiveEvent::IssueChanged(key.clone()));
        assert_eq!(*a.recv().await.unwrap(), LiveEvent::IssueChanged(key));
        drop(b);
        assert_eq!(hub.topic_count(), 1);
        drop(a);
        assert_eq!(hub.topic_count(), 0);
    }

    #[tokio::test]
    async fn a_slow_subscriber_lags_instead_of_blocking() {
        let hub = Hub::default();
        let ws = WorkspaceId::new();
        let mut slow = hub.subscribe(Topic::Board(ws));
        for n in 1..=(LIVE_CHANNEL_CAPACITY as i64 + 10) {
            hub.publish(
                Topic::Board(ws),
                LiveEvent::IssueChanged(IssueKey::parse(&format!("MUS-{n}")).unwrap()),
            );
        }
        assert!(matches!(
            slow.recv().await,
            Err(broadcast::error::RecvError::Lagged(10))
        ));
    }
}
