//! The configuration `muster serve` runs with, parsed once by clap in `cli.rs` and passed down.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use crate::store::{DatabaseUrl, PoolOptions};

/// Everything the server needs to start. Tests build it as a literal.
#[derive(Debug, Clone)]
pub struct Config {
    /// Where the HTTP server listens.
    pub addr: SocketAddr,
    /// Where Muster keeps its files (the SQLite database, keys).
    pub data_dir: PathBuf,
    /// Where runs keep their folders (worktree, HOME, TMPDIR), outside the data folder so that a sandboxed
    /// agent, which may use its own run's folders, is nowhere near the data.
    pub runs_dir: PathBuf,
    /// Which database to use.
    pub database_url: DatabaseUrl,
    /// Database pool limits.
    pub pool: PoolOptions,
    /// How long in-flight requests get to finish after SIGINT/SIGTERM.
    pub shutdown_timeout: Duration,
    /// The URL people use to reach Muster (behind a proxy); `https://` makes cookies `Secure`.
    pub public_url: Option<String>,
    /// The bearer token `GET /metrics` requires (from the environment, never argv). `None`: on a loopback
    /// `addr` the metrics are open with process-wide aggregates only; on any other address they are 401.
    pub metrics_token: Option<String>,
    /// Agent CLI binaries to use instead of looking them up on `PATH`.
    pub runtime_paths: Vec<(muster_agents::RuntimeKind, PathBuf)>,
    /// Whether this server also runs agents (the embedded runner); off for a board-only replica.
    pub embedded_runner: bool,
    /// The `muster` executable that `llama` agents' runs start as `muster llama-loop` (tests point it at
    /// the built binary, since they run inside a test executable).
    pub self_exe: PathBuf,
    /// Explicitly configured local model servers, as `(source, url)`: probed before the default ports.
    pub llama_urls: Vec<(String, String)>,
    /// The most events one run may store; a run that reaches it is stopped and fails (`event_cap`).
    pub max_events_per_run: i64,
    /// Run agents without a sandbox when the kernel cannot sandbox them (otherwise such runs fail).
    pub allow_unsandboxed_agents: bool,
    /// TCP ports a sandboxed agent may connect to directly, besides its egress proxy, Muster's API port
    /// and a loopback model endpoint's port (none by default: other hosts go through the proxy).
    pub agent_ports: Vec<u16>,
    /// Names the egress proxy resolves to fixed addresses instead of asking DNS (tests map
    /// `allowed.test` to a loopback listener; the address's port replaces the requested one).
    pub egress_resolve: Vec<(String, SocketAddr)>,
    /// Folders every sandboxed agent may also read and write (e.g. a shared build cache).
    pub agent_rw_paths: Vec<PathBuf>,
    /// How often people may try to sign in.
    pub login_limits: LoginLimits,
    /// Most live connections (board and run page WebSockets, run event streams) one person may hold open.
    pub live_connections_per_user: usize,
    /// Whether this runner pushes a run's branch back to the workspace's repository when that is a git
    /// URL (the diff reaches the server either way).
    pub push_branches: bool,
}

/// Sign-in rate limits: past them `POST /login` answers 429 with `Retry-After`, before any password is
/// checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LoginLimits {
    /// Attempts per minute from one client address (the TCP peer).
    pub per_ip_per_minute: u32,
    /// Attempts per 15 minutes on one account (by the email typed, known or not).
    pub per_account_per_15_minutes: u32,
}

impl Default for LoginLimits {
    fn default() -> Self {
        Self {
            per_ip_per_minute: 10,
            per_account_per_15_minutes: 5,
        }
    }
}

/// Default for [`Config::live_connections_per_user`].
pub const LIVE_CONNECTIONS_PER_USER: usize = 32;

impl Config {
    /// Whether cookies must be `Secure` (served over https).
    pub fn secure_cookies(&self) -> bool {
        self.public_url
            .as_deref()
            .is_some_and(|u| u.starts_with("https://"))
    }
}

impl Config {
    /// A configuration on SQLite in `data_dir`, listening on an ephemeral loopback port, with runs in
    /// `<data_dir>.runs` (beside the data folder, not in it).
    pub fn for_data_dir(data_dir: PathBuf) -> Self {
        let mut runs = data_dir.clone().into_os_string();
        runs.push(".runs");
        Self {
            runs_dir: PathBuf::from(runs),
            addr: SocketAddr::from(([127, 0, 0, 1], 0)),
            database_url: DatabaseUrl::Sqlite(data_dir.join("muster.db")),
            data_dir,
            pool: PoolOptions::default(),
            shutdown_timeout: Duration::from_secs(10),
            public_url: None,
            metrics_token: None,
            runtime_paths: Vec::new(),
            embedded_runner: true,
            self_exe: default_self_exe(),
            llama_urls: Vec::new(),
            max_events_per_run: DEFAULT_MAX_EVENTS_PER_RUN,
            allow_unsandboxed_agents: false,
            agent_ports: Vec::new(),
            egress_resolve: Vec::new(),
            agent_rw_paths: Vec::new(),
            login_limits: LoginLimits::default(),
            live_connections_per_user: LIVE_CONNECTIONS_PER_USER,
            push_branches: true,
        }
    }
}

/// The default of [`Config::max_events_per_run`]: far more than a long real run writes (a few thousand),
/// small enough that one runaway agent cannot fill the database.
pub const DEFAULT_MAX_EVENTS_PER_RUN: i64 = 100_000;

/// This process's executable, or `muster` on `PATH` when the platform cannot say.
pub fn default_self_exe() -> PathBuf {
    std::env::current_exe().unwrap_or_else(|_| PathBuf::from("muster"))
}
