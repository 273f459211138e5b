//! What an unauthenticated runner connection may cost: a few KiB of reading, and one of a few slots.
//!
//! Invariants: until the session says `welcome`, [`Gated`] lets at most [`BEFORE_WELCOME_BYTES`] bytes of
//! the socket through (then every read fails with [`TooMuchBeforeHello`]), so the WebSocket layer can never
//! buffer more than that for a caller nobody knows; a [`Slot`] is held from the upgrade until `welcome` or
//! the end of the connection, and at most [`PER_ADDRESS`] slots per peer address and [`TOTAL`] in all
//! exist at once.

use std::collections::HashMap;
use std::io;
use std::net::IpAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, ready};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// Bytes a connection may send before its `hello` is accepted (a `hello` is a few KiB).
pub(super) const BEFORE_WELCOME_BYTES: u64 = 64 * 1024;
/// Unauthenticated connections one peer address may hold at once.
pub(super) const PER_ADDRESS: usize = 8;
/// Unauthenticated connections the server holds at once.
pub(super) const TOTAL: usize = 128;

/// The read error once a connection sent [`BEFORE_WELCOME_BYTES`] without being welcomed.
#[derive(Debug, thiserror::Error)]
#[error("the runner sent more than {BEFORE_WELCOME_BYTES} bytes before its hello was accepted")]
pub(super) struct TooMuchBeforeHello;

/// A socket whose reads are capped until [`Gated::opener`]'s flag is set.
pub(super) struct Gated<S> {
    inner: S,
    read: u64,
    open: Arc<AtomicBool>,
}

impl<S> Gated<S> {
    pub(super) fn new(inner: S) -> Self {
        Self {
            inner,
            read: 0,
            open: Arc::default(),
        }
    }

    /// The flag that lifts the cap (set it once the runner is authenticated).
    pub(super) fn opener(&self) -> Arc<AtomicBool> {
        self.open.clone()
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for Gated<S> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if this.open.load(Ordering::Acquire) {
            return Pin::new(&mut this.inner).poll_read(cx, buf);
        }
        let left = BEFORE_WELCOME_BYTES.saturating_sub(this.read);
        if left == 0 {
            return Poll::Ready(Err(io::Error::new(
                io::ErrorKind::InvalidData,
                TooMuchBeforeHello,
            )));
        }
        // Through a small buffer of our own: never more than `left` leaves the socket.
        let mut chunk = [0u8; 4096];
        let room = buf
            .remaining()
            .min(chunk.len())
            .min(usize::try_from(left).unwrap_or(usize::MAX));
        let mut limited = ReadBuf::new(&mut chunk[..room]);
        ready!(Pin::new(&mut this.inner).poll_read(cx, &mut limited))?;
        let got = limited.filled();
        this.read += got.len() as u64;
        buf.put_slice(got);
        Poll::Ready(Ok(()))
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Gated<S> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().inner).poll_write(cx, buf)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_shutdown(cx)
    }
}

/// The unauthenticated connections held now, by peer address.
#[derive(Clone, Default)]
pub(super) struct Pending {
    held: Arc<Mutex<HashMap<Option<IpAddr>, usize>>>,
}

impl Pending {
    /// A slot for a connection from `peer`, or `None` when that address or the server holds its cap.
    pub(super) fn take(&self, peer: Option<IpAddr>) -> Option<Slot> {
        let mut held = self.lock();
        let total: usize = held.values().sum();
        let mine = held.entry(peer).or_default();
        if *mine >= PER_ADDRESS || total >= TOTAL {
            return None;
        }
        *mine += 1;
        Some(Slot {
            pending: self.clone(),
            peer,
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<Option<IpAddr>, usize>> {
        self.held
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// One unauthenticated connection's place; dropping it frees the place.
pub(super) struct Slot {
    pending: Pending,
    peer: Option<IpAddr>,
}

impl Drop for Slot {
    fn drop(&mut self) {
        let mut held = self.pending.lock();
        if let Some(n) = held.get_mut(&self.peer) {
            *n -= 1;
            if *n == 0 {
                held.remove(&self.peer);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncReadExt as _;

    #[tokio::test]
    async fn reads_stop_at_the_cap_until_opened() {
        let data = vec![7u8; 3 * BEFORE_WELCOME_BYTES as usize];
        let mut gated = Gated::new(&data[..]);
        let mut buf = vec![0u8; 1 << 20];
        let mut got = 0;
        let err = loop {
            match gated.read(&mut buf).await {
                Ok(n) => got += n,
                Err(e) => break e,
            }
        };
        assert_eq!(got as u64, BEFORE_WELCOME_BYTES);
        assert!(err.get_ref().is_some_and(|e| e.is::<TooMuchBeforeHello>()));
        gated.opener().store(true, Ordering::Release);
        assert!(gated.read(&mut buf).await.unwrap() > 0);
    }

    #[test]
    fn slots_are_capped_per_address_and_freed_on_drop() {
        let pending = Pending::default();
        let a = Some(IpAddr::from([10, 0, 0, 1]));
        let held: Vec<Slot> = (0..PER_ADDRESS).map(|_| pending.take(a).unwrap()).collect();
        assert!(pending.take(a).is_none(), "the address holds its cap");
        assert!(pending.take(Some(IpAddr::from([10, 0, 0, 2]))).is_some());
        drop(held);
        assert!(pending.take(a).is_some());
    }
}
