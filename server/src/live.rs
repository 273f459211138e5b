//! Who holds each live connection (board and run page WebSockets, run event streams), so that signing
//! out or leaving a workspace ends them at once, and so that one person holds at most a configured number.
//!
//! Invariant: every live handler opens a [`LiveGuard`] before it upgrades or starts streaming, keeps it
//! for the connection's whole life, and stops when [`LiveGuard::stopped`] fires. Dropping the guard
//! frees the slot. The registry is per process; an ended credential (a session signed out, an API token
//! revoked) reaches the other replicas through `Engine::credential_ended` and the relay, and each ends
//! the connections it holds.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use futures_util::{Stream, StreamExt as _};
use tokio_util::sync::{CancellationToken, WaitForCancellationFuture};

use crate::domain::{UserId, WorkspaceId};

/// The open live connections of this process, with the per-person cap.
#[derive(Clone)]
pub struct LiveConnections {
    open: Arc<Mutex<Registry>>,
    per_user: usize,
}

#[derive(Default)]
struct Registry {
    next_id: u64,
    entries: HashMap<u64, Entry>,
}

struct Entry {
    user: UserId,
    workspace: WorkspaceId,
    /// SHA-256 of the session cookie or bearer token the connection was opened with.
    credential: Option<String>,
    stop: CancellationToken,
}

/// The cap was reached: the connection is refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CapReached(pub usize);

impl From<CapReached> for crate::http::Error {
    fn from(CapReached(cap): CapReached) -> Self {
        crate::http::Error::TooManyRequests(
            "connections",
            format!(
                "you already have {cap} live connections open (boards, run pages, event streams); close some and try again"
            ),
            None,
        )
    }
}

impl LiveConnections {
    /// An empty registry allowing `per_user` connections per person.
    pub fn new(per_user: usize) -> Self {
        Self {
            open: Arc::default(),
            per_user,
        }
    }

    /// Registers a connection of `user` to `workspace`, made with the credential whose hash is
    /// `credential`; refused once the person holds the cap.
    pub fn open(
        &self,
        user: UserId,
        workspace: WorkspaceId,
        credential: Option<String>,
    ) -> Result<LiveGuard, CapReached> {
        let mut reg = self.lock();
        if reg.entries.values().filter(|e| e.user == user).count() >= self.per_user {
            return Err(CapReached(self.per_user));
        }
        reg.next_id += 1;
        let id = reg.next_id;
        let stop = CancellationToken::new();
        reg.entries.insert(
            id,
            Entry {
                user,
                workspace,
                credential,
                stop: stop.clone(),
            },
        );
        Ok(LiveGuard {
            id,
            stop,
            open: self.open.clone(),
        })
    }

    /// Ends every connection opened with this credential (a session signed out). Returns how many.
    pub fn end_credential(&self, credential_hash: &str) -> usize {
        self.end(|e| e.credential.as_deref() == Some(credential_hash))
    }

    /// Ends every connection of `user` to `workspace` (removed from it). Returns how many.
    pub fn end_member(&self, workspace: WorkspaceId, user: UserId) -> usize {
        self.end(|e| e.user == user && e.workspace == workspace)
    }

    /// How many connections `user` holds open.
    pub fn count(&self, user: UserId) -> usize {
        self.lock()
            .entries
            .values()
            .filter(|e| e.user == user)
            .count()
    }

    fn end(&self, which: impl Fn(&Entry) -> bool) -> usize {
        let reg = self.lock();
        let ended: Vec<_> = reg.entries.values().filter(|e| which(e)).collect();
        ended.iter().for_each(|e| e.stop.cancel());
        ended.len()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Registry> {
        self.open
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// One registered connection: its slot is freed when this is dropped.
pub struct LiveGuard {
    id: u64,
    stop: CancellationToken,
    open: Arc<Mutex<Registry>>,
}

impl LiveGuard {
    /// Resolves when the connection must end (its session signed out, its person removed).
    pub fn stopped(&self) -> WaitForCancellationFuture<'_> {
        self.stop.cancelled()
    }

    /// `stream`, ended as soon as the connection must end; the guard lives as long as the stream.
    pub fn guard<S>(self, stream: S) -> impl Stream<Item = S::Item> + Send + use<S>
    where
        S: Stream + Send,
    {
        let stop = self.stop.clone().cancelled_owned();
        stream.take_until(stop).map(move |item| {
            let _held = &self;
            item
        })
    }
}

impl Drop for LiveGuard {
    fn drop(&mut self) {
        self.open
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .entries
            .remove(&self.id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cap_counts_open_connections_per_person() {
        let live = LiveConnections::new(2);
        let (alice, bob, ws) = (UserId::new(), UserId::new(), WorkspaceId::new());
        let a1 = live.open(alice, ws, None).unwrap();
        let _a2 = live.open(alice, ws, None).unwrap();
        assert_eq!(live.open(alice, ws, None).err(), Some(CapReached(2)));
        assert!(live.open(bob, ws, None).is_ok(), "others are not affected");
        drop(a1);
        assert!(
            live.open(alice, ws, None).is_ok(),
            "a closed one frees its slot"
        );
    }

    #[tokio::test]
    async fn ending_a_session_or_a_membership_stops_only_its_connections() {
        let live = LiveConnections::new(10);
        let (alice, ws, other) = (UserId::new(), WorkspaceId::new(), WorkspaceId::new());
        let by_session = live.open(alice, ws, Some("s1".into())).unwrap();
        let other_session = live.open(alice, other, Some("s2".into())).unwrap();
        assert_eq!(live.end_credential("s1"), 1);
        by_session.stopped().await;
        assert!(!other_session.stop.is_cancelled());
        assert_eq!(live.end_member(other, alice), 1);
        other_session.stopped().await;
        assert_eq!(
            live.count(alice),
            2,
            "slots stay taken until the handlers drop them"
        );
    }
}
