//! `muster runner`: the runner on any machine, connected to a Muster server over a WebSocket
//! (`/api/v1/runners/connect`, JSON text frames). With several `--server` URLs it connects to the first
//! that answers and, when that connection breaks, to the next; runs go on meanwhile, and what the server
//! has not acknowledged is kept in the outbox file and resent on the new connection.
//!
//! A refusal for good (a wrong or revoked token, another protocol version) stops the runner with the
//! server's reason; anything else is retried with a backoff of up to [`MAX_BACKOFF`].

use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context as _;
use futures_util::{SinkExt as _, StreamExt as _};
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream};
use tokio_util::sync::CancellationToken;

use super::core::{Ended, Runner, Wire};
use super::outbox::Outbox;
use super::protocol::{CloseReason, ToRunner, ToServer};
use crate::client::Secret;
use crate::config::Config;
use crate::host::AgentHostArgs;
use crate::runner::executor::{Host, RunTiming};
use crate::runtimes::RuntimeCache;

/// The longest wait between connection attempts.
const MAX_BACKOFF: Duration = Duration::from_secs(10);
/// The first wait after every URL failed.
const FIRST_BACKOFF: Duration = Duration::from_millis(250);
/// How long a server may stay silent before the connection is taken for dead (it acknowledges every
/// heartbeat's work; a quiet server with live runs still answers pings).
const SILENCE: Duration = Duration::from_secs(30);

/// What `muster runner` was told, checked.
#[derive(Debug, Clone)]
pub struct Settings {
    /// The servers' WebSocket URLs, in order of preference.
    pub sockets: Vec<String>,
    /// The servers' HTTP URLs (the first is what agents reach when the server names no public URL).
    pub servers: Vec<String>,
    pub token: String,
    pub name: String,
    pub max_runs: u32,
    pub state_dir: PathBuf,
    pub config: Config,
}

impl Settings {
    /// Checks the command line.
    pub fn from_args(args: &RunnerArgs) -> anyhow::Result<Self> {
        let mut sockets = Vec::new();
        let mut servers = Vec::new();
        for raw in &args.servers {
            let (http, ws) = socket_url(raw)?;
            servers.push(http);
            sockets.push(ws);
        }
        anyhow::ensure!(!sockets.is_empty(), "name at least one --server URL");
        let from_file = crate::cli::secret_file(args.token_file.as_deref(), "the runner token")?;
        let token = match (&args.token, from_file) {
            (Some(_), Some(_)) => anyhow::bail!(
                "the runner token is given twice: set MUSTER_RUNNER_TOKEN or --token-file, not both"
            ),
            (Some(token), None) => token.expose().trim().to_owned(),
            (None, Some(token)) => token,
            (None, None) => String::new(),
        };
        anyhow::ensure!(
            !token.is_empty(),
            "no runner token: set MUSTER_RUNNER_TOKEN or pass --token-file FILE; create one on the Runners page or with `muster runner-token create NAME`"
        );
        let name = match &args.name {
            Some(name) => name.trim().to_owned(),
            None => host_name(),
        };
        anyhow::ensure!(
            !name.is_empty() && name.len() <= 64,
            "--name must have 1 to 64 characters"
        );
        let state_dir = match &args.state_dir {
            Some(dir) => dir.clone(),
            None => dirs::data_dir()
                .map(|d| d.join("muster-runner"))
                .context("cannot find a data directory for this user; pass --state-dir or set MUSTER_RUNNER_DIR")?,
        };
        let runs_dir = args.agents.runs_dir()?;
        anyhow::ensure!(
            !runs_dir.starts_with(&state_dir) && !state_dir.starts_with(&runs_dir),
            "--runs-dir {} must be outside the runner's folder {} (agents may use the runs folder)",
            runs_dir.display(),
            state_dir.display()
        );
        let mut config = Config::for_data_dir(state_dir.clone());
        config.runs_dir = runs_dir;
        config.allow_unsandboxed_agents = args.agents.allow_unsandboxed_agents;
        config.agent_ports.clone_from(&args.agents.agent_ports);
        config
            .agent_rw_paths
            .clone_from(&args.agents.agent_rw_paths);
        config.runtime_paths = args.agents.runtime_paths.overrides();
        config.llama_urls = args.agents.runtime_paths.llama_urls();
        config.embedded_runner = false;
        config.push_branches = !args.agents.no_push;
        Ok(Self {
            sockets,
            servers,
            token,
            name,
            max_runs: args.max_runs,
            state_dir,
            config,
        })
    }
}

/// `http://host:port[/prefix]` → (`http://host:port[/prefix]`, `ws://host:port[/prefix]/api/v1/runners/connect`).
pub fn socket_url(raw: &str) -> anyhow::Result<(String, String)> {
    let base = raw.trim().trim_end_matches('/');
    let ws = if let Some(rest) = base.strip_prefix("http://") {
        format!("ws://{rest}")
    } else if let Some(rest) = base.strip_prefix("https://") {
        format!("wss://{rest}")
    } else {
        anyhow::bail!(
            "--server {raw:?} must be an http:// or https:// URL, like http://muster.internal:7777"
        );
    };
    anyhow::ensure!(
        base.split("://").nth(1).is_some_and(|h| !h.is_empty()),
        "--server {raw:?} has no host"
    );
    Ok((base.to_owned(), format!("{ws}/api/v1/runners/connect")))
}

/// This machine's host name, or `runner` when it cannot be read.
fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_owned())
        .ok()
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "runner".to_owned())
}

/// Runs `muster runner` until SIGINT or SIGTERM.
pub async fn run(args: RunnerArgs) -> anyhow::Result<()> {
    let settings = Settings::from_args(&args)?;
    let stop = CancellationToken::new();
    let signalled = stop.clone();
    tokio::spawn(async move {
        let signal = crate::host::shutdown_signal().await;
        tracing::info!(signal, "stopping the runner; its runs end interrupted");
        signalled.cancel();
    });
    serve(settings, RunTiming::default(), stop).await
}

/// Runs the runner with `settings` until `stop` fires or a server refuses it for good.
pub async fn serve(
    settings: Settings,
    timing: RunTiming,
    stop: CancellationToken,
) -> anyhow::Result<()> {
    crate::host::prepare_data_dir(&settings.state_dir)?;
    let outbox = Outbox::durable(&settings.state_dir.join("outbox"))?;
    let runtimes = RuntimeCache::new(settings.config.runtime_paths.clone());
    runtimes.detect().await;
    let host = Host {
        repo_cache: settings.state_dir.join("repos"),
        config: std::sync::Arc::new(settings.config.clone()),
        runtimes,
        timing,
        api_url: settings.servers.first().cloned(),
    };
    let runner = Runner::new(
        host,
        settings.name.clone(),
        settings.token.clone(),
        settings.max_runs,
        outbox,
        stop.clone(),
    );
    tracing::info!(name = %settings.name, servers = ?settings.servers, max_runs = settings.max_runs, "runner started");
    let result = connect_loop(&settings, &runner, &stop).await;
    stop.cancel();
    runner.wind_down().await;
    tracing::info!("runner stopped");
    result
}

async fn connect_loop(
    settings: &Settings,
    runner: &Runner,
    stop: &CancellationToken,
) -> anyhow::Result<()> {
    let mut backoff = FIRST_BACKOFF;
    let mut next = 0;
    loop {
        // One pass over the URLs, starting with the one after the last that failed.
        let mut connected_once = false;
        for i in 0..settings.sockets.len() {
            let url = &settings.sockets[(next + i) % settings.sockets.len()];
            let attempt = tokio::select! {
                () = stop.cancelled() => return Ok(()),
                attempt = open(url) => attempt,
            };
            let mut wire = match attempt {
                Ok(wire) => wire,
                Err(e) => {
                    tracing::warn!(url, error = %e, "cannot connect to the server");
                    continue;
                }
            };
            tracing::info!(url, "connected");
            connected_once = true;
            match runner.connect(&mut wire).await {
                Ended::Stopped => {
                    let _ = wire.socket.close(None).await;
                    return Ok(());
                }
                Ended::Refused(why) => {
                    anyhow::bail!("the server at {url} refused this runner: {why}");
                }
                Ended::Lost(why) => {
                    tracing::warn!(url, why, "connection lost; trying the next server");
                    next = (next + i + 1) % settings.sockets.len();
                    break;
                }
            }
        }
        if connected_once {
            backoff = FIRST_BACKOFF;
            continue;
        }
        tokio::select! {
            () = stop.cancelled() => return Ok(()),
            () = tokio::time::sleep(backoff) => {}
        }
        backoff = (backoff * 2).min(MAX_BACKOFF);
    }
}

/// A WebSocket connection to a server.
struct WsWire {
    socket: WebSocketStream<MaybeTlsStream<TcpStream>>,
}

async fn open(url: &str) -> anyhow::Result<WsWire> {
    let config = WebSocketConfig::default().max_message_size(Some(64 * 1024 * 1024));
    let (socket, _) = tokio::time::timeout(
        Duration::from_secs(10),
        tokio_tungstenite::connect_async_with_config(url, Some(config), false),
    )
    .await
    .context("no answer within 10 s")??;
    Ok(WsWire { socket })
}

impl Wire for WsWire {
    async fn send(&mut self, message: ToServer) -> Result<(), Ended> {
        let text = serde_json::to_string(&message)
            .map_err(|e| Ended::Lost(format!("cannot encode a message: {e}")))?;
        self.socket
            .send(Message::Text(text.into()))
            .await
            .map_err(|e| Ended::Lost(format!("cannot send: {e}")))
    }

    async fn recv(&mut self) -> Result<ToRunner, Ended> {
        loop {
            let frame = tokio::time::timeout(SILENCE, self.socket.next())
                .await
                .map_err(|_| {
                    Ended::Lost(format!(
                        "the server said nothing for {} s",
                        SILENCE.as_secs()
                    ))
                })?;
            match frame {
                Some(Ok(Message::Text(text))) => {
                    return serde_json::from_str(text.as_str()).map_err(|e| {
                        Ended::Lost(format!("the server sent a malformed message: {e}"))
                    });
                }
                Some(Ok(Message::Close(frame))) => {
                    let (code, reason) = frame
                        .map(|f| (u16::from(f.code), f.reason.to_string()))
                        .unwrap_or((1005, String::new()));
                    let why = format!("closed by the server ({code}): {reason}");
                    return Err(if CloseReason::is_final(code) {
                        Ended::Refused(reason)
                    } else {
                        Ended::Lost(why)
                    });
                }
                Some(Ok(_)) => {}
                Some(Err(e)) => return Err(Ended::Lost(format!("connection broken: {e}"))),
                None => return Err(Ended::Lost("connection closed".to_owned())),
            }
        }
    }
}

/// `muster runner` options.
#[derive(Debug, clap::Args)]
pub struct RunnerArgs {
    /// A Muster server's URL (e.g. http://muster.internal:7777). Repeat it (or separate with commas) for
    /// several replicas: the runner connects to the first that answers and fails over to the others.
    #[arg(
        long = "server",
        env = "MUSTER_RUNNER_SERVERS",
        value_delimiter = ',',
        required = true
    )]
    pub servers: Vec<String>,
    /// The runner token (from the Runners page or `muster runner-token create`), from the environment only:
    /// on the command line it is refused (every process on the machine can read a command line).
    #[arg(long, env = "MUSTER_RUNNER_TOKEN", hide_env_values = true)]
    pub token: Option<Secret>,
    /// A file holding the runner token (e.g. a Docker or systemd secret), instead of MUSTER_RUNNER_TOKEN.
    #[arg(long, env = "MUSTER_RUNNER_TOKEN_FILE")]
    pub token_file: Option<PathBuf>,
    /// This runner's name on the Runners page, and for agents bound to named runners [default: the host name].
    #[arg(long, env = "MUSTER_RUNNER_NAME")]
    pub name: Option<String>,
    /// The most runs this runner executes at once.
    #[arg(long, env = "MUSTER_RUNNER_MAX_RUNS", default_value_t = 4,
        value_parser = clap::value_parser!(u32).range(1..=64))]
    pub max_runs: u32,
    /// The runner's own folder: its outbox of events the server has not acknowledged yet and its clones
    /// of the workspaces' repositories [default: $XDG_DATA_HOME/muster-runner, e.g. ~/.local/share/muster-runner].
    #[arg(long, env = "MUSTER_RUNNER_DIR")]
    pub state_dir: Option<PathBuf>,
    #[command(flatten)]
    pub agents: AgentHostArgs,
}
