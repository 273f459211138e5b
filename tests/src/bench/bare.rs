//! The fan-out baseline: a minimal axum WebSocket server in the bench process that broadcasts the same
//! `MBL <seq> <micros>` lines at the same rate to every client through one tokio broadcast channel. No
//! storage, no rendering: what the machine does for plain fan-out.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

use axum::extract::State;
use axum::extract::ws::{Message, WebSocket, WebSocketUpgrade};
use axum::response::Response;
use axum::routing::get;
use tokio::sync::broadcast;

use super::writer::now_micros;

/// Room for a whole full-mode run: the baseline never drops a line for lag.
const CAPACITY: usize = 1 << 16;

#[derive(Clone)]
struct Shared {
    tx: broadcast::Sender<Arc<str>>,
    connected: Arc<AtomicUsize>,
    lagged: Arc<AtomicU64>,
}

/// A running bare broadcast server.
pub struct Bare {
    /// `ws://addr/ws`.
    pub url: String,
    shared: Shared,
    task: tokio::task::JoinHandle<()>,
}

impl Bare {
    /// Binds `127.0.0.1:0` and serves `/ws`.
    pub async fn start() -> anyhow::Result<Bare> {
        let (tx, _) = broadcast::channel(CAPACITY);
        let shared = Shared {
            tx,
            connected: Arc::default(),
            lagged: Arc::default(),
        };
        let app = axum::Router::new()
            .route("/ws", get(upgrade))
            .with_state(shared.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let url = format!("ws://{}/ws", listener.local_addr()?);
        let task = tokio::spawn(async move {
            if let Err(e) = axum::serve(listener, app).await {
                eprintln!("the bare broadcast server failed: {e}");
            }
        });
        Ok(Bare { url, shared, task })
    }

    /// Waits until `n` clients are subscribed.
    pub async fn wait_connected(&self, n: usize, deadline: Duration) -> anyhow::Result<()> {
        let until = tokio::time::Instant::now() + deadline;
        while self.shared.connected.load(Ordering::SeqCst) < n {
            anyhow::ensure!(
                tokio::time::Instant::now() < until,
                "only {} of {n} baseline clients connected",
                self.shared.connected.load(Ordering::SeqCst)
            );
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        Ok(())
    }

    /// Broadcasts `count` lines at `rate` per second.
    pub async fn publish(&self, rate: u64, count: u64) {
        let begin = tokio::time::Instant::now();
        for seq in 1..=count {
            tokio::time::sleep_until(begin + Duration::from_micros((seq - 1) * 1_000_000 / rate))
                .await;
            let line: Arc<str> = format!("MBL {seq} {}", now_micros()).into();
            // Ignored: no receiver means no client, which the clients' counts report.
            let _ = self.shared.tx.send(line);
        }
    }

    /// Lines some client's channel dropped for lag (the baseline must show 0).
    pub fn lagged(&self) -> u64 {
        self.shared.lagged.load(Ordering::SeqCst)
    }
}

impl Drop for Bare {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn upgrade(State(shared): State<Shared>, ws: WebSocketUpgrade) -> Response {
    let rx = shared.tx.subscribe();
    ws.on_upgrade(move |socket| forward(socket, rx, shared))
}

async fn forward(mut socket: WebSocket, mut rx: broadcast::Receiver<Arc<str>>, shared: Shared) {
    shared.connected.fetch_add(1, Ordering::SeqCst);
    loop {
        match rx.recv().await {
            Ok(line) => {
                if socket.send(Message::text(line.as_ref())).await.is_err() {
                    break;
                }
            }
            Err(broadcast::error::RecvError::Lagged(n)) => {
                shared.lagged.fetch_add(n, Ordering::SeqCst);
            }
            Err(broadcast::error::RecvError::Closed) => break,
        }
    }
    shared.connected.fetch_sub(1, Ordering::SeqCst);
}
