//! The embedded runner: the same runner as `muster runner`, connected to this server's own runner session
//! over in-process channels instead of a WebSocket. Its only code of its own is this transport.

use std::time::Duration;

use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::core::{Ended, Runner, Wire};
use super::outbox::Outbox;
use super::protocol::{ToRunner, ToServer};
use crate::engine::Engine;
use crate::engine::session::{self, Peer};
use crate::runner::executor::Host;

/// The embedded runner's name prefix in the runner table.
pub const EMBEDDED_RUNNER: &str = "embedded";
/// The most runs the embedded runner executes at once (each agent's own limit applies first).
const EMBEDDED_MAX_RUNS: u32 = 64;
/// How long to wait before connecting again after the session ended (a store error).
const RECONNECT: Duration = Duration::from_secs(1);

/// The in-process transport: the runner's messages go straight to the session's channel.
struct LocalWire {
    to_server: mpsc::Sender<ToServer>,
    from_server: mpsc::UnboundedReceiver<ToRunner>,
}

impl Wire for LocalWire {
    async fn send(&mut self, message: ToServer) -> Result<(), Ended> {
        self.to_server
            .send(message)
            .await
            .map_err(|_| Ended::Lost("the runner session ended".to_owned()))
    }

    async fn recv(&mut self) -> Result<ToRunner, Ended> {
        self.from_server
            .recv()
            .await
            .ok_or_else(|| Ended::Lost("the runner session ended".to_owned()))
    }
}

/// Runs the embedded runner until `stop` fires, then lets its runs wind down (they end `interrupted`)
/// and report, and returns.
pub async fn run(engine: Engine, stop: CancellationToken) {
    let host = Host {
        config: engine.config.clone(),
        runtimes: engine.runtimes.clone(),
        timing: engine.runs.timing().clone(),
        api_url: engine.api_url(),
        repo_cache: engine.config.runs_dir.join("repos"),
    };
    let name = runner_name(&engine.config.data_dir).await;
    let runner = Runner::new(
        host,
        name,
        String::new(),
        EMBEDDED_MAX_RUNS,
        Outbox::in_memory(),
        stop.clone(),
    );
    tracing::info!("embedded runner started");
    loop {
        let (to_server, incoming) = mpsc::channel(256);
        let (outgoing, from_server) = mpsc::unbounded_channel();
        // The session outlives the runner's stop so the runs' last reports still arrive.
        let session_stop = CancellationToken::new();
        let session = tokio::spawn(session::serve(
            engine.clone(),
            Peer::Embedded,
            incoming,
            outgoing,
            session_stop.clone(),
        ));
        let mut wire = LocalWire {
            to_server,
            from_server,
        };
        let ended = runner.connect(&mut wire).await;
        drop(wire);
        session_stop.cancel();
        match session.await {
            Ok(Err(closed)) if !matches!(ended, Ended::Stopped) => {
                tracing::warn!(reason = ?closed.reason, message = %closed.message, "embedded runner session closed");
            }
            Err(e) => tracing::error!(error = %e, "the embedded runner session panicked"),
            _ => {}
        }
        match ended {
            Ended::Stopped => break,
            Ended::Lost(why) | Ended::Refused(why) => {
                tracing::warn!(why, "embedded runner disconnected; connecting again");
            }
        }
        tokio::select! {
            () = stop.cancelled() => break,
            () = tokio::time::sleep(RECONNECT) => {}
        }
    }
    runner.wind_down().await;
    tracing::info!("embedded runner stopped");
}

/// This server's runner name: [`EMBEDDED_RUNNER`] and an id kept in the data directory, so a restart
/// finds the runs its previous life left behind while replicas with their own data directories do not
/// mistake each other's runs for theirs.
async fn runner_name(data_dir: &std::path::Path) -> String {
    let file = data_dir.join("runner-id");
    let id = match tokio::fs::read_to_string(&file).await {
        Ok(id) if !id.trim().is_empty() => id.trim().to_owned(),
        _ => {
            let id = uuid::Uuid::new_v4().simple().to_string()[..12].to_owned();
            if let Err(e) = tokio::fs::write(&file, &id).await {
                tracing::warn!(error = %e, "cannot keep the runner id in the data directory");
            }
            id
        }
    };
    format!("{EMBEDDED_RUNNER}-{id}")
}
