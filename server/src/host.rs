//! What a Muster process needs from its machine, for `serve` and `muster runner` alike: a private data
//! directory, the signals that stop it, and the flags of how it runs agents ([`AgentHostArgs`]).

use std::path::{Path, PathBuf};

use anyhow::Context as _;

use crate::runtimes::RuntimePaths;

/// Creates the data directory if needed (mode 0700: it holds the key and, on SQLite, the database),
/// tightens an existing one that others may read, and checks that it is writable.
pub fn prepare_data_dir(dir: &Path) -> anyhow::Result<()> {
    use std::os::unix::fs::{DirBuilderExt as _, PermissionsExt as _};
    let fix = "choose a writable one with --data-dir or MUSTER_DATA_DIR";
    let cannot_create = |e: std::io::Error| {
        anyhow::anyhow!("cannot create data directory {}: {e}; {fix}", dir.display())
    };
    if let Some(parent) = dir.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent).map_err(cannot_create)?;
    }
    match std::fs::DirBuilder::new().mode(0o700).create(dir) {
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        other => other.map_err(cannot_create)?,
    }
    let mode = std::fs::metadata(dir)
        .map_err(cannot_create)?
        .permissions()
        .mode()
        & 0o777;
    if mode & 0o077 != 0 {
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700)).map_err(|e| {
            anyhow::anyhow!(
                "cannot make data directory {} private (0700): {e}",
                dir.display()
            )
        })?;
        tracing::warn!(dir = %dir.display(), was = format!("{mode:o}"), "data directory was open to other users; now 0700");
    }
    let probe = dir.join(".muster-write-check");
    std::fs::write(&probe, b"ok").map_err(|e| {
        anyhow::anyhow!(
            "data directory {} is not writable: {e}; {fix}",
            dir.display()
        )
    })?;
    let _ = std::fs::remove_file(probe);
    Ok(())
}

/// Waits for SIGINT or SIGTERM and names the one that came.
pub(crate) async fn shutdown_signal() -> &'static str {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => "SIGINT",
        () = terminate => "SIGTERM",
    }
}

/// How this machine runs agents: shared by `serve` (its embedded runner) and `muster runner`.
#[derive(Debug, clap::Args)]
pub struct AgentHostArgs {
    /// Folder of the runs' work folders (worktree, HOME, TMPDIR), kept out of the data folder
    /// [default: $XDG_CACHE_HOME/muster/runs, e.g. ~/.cache/muster/runs].
    #[arg(long, env = "MUSTER_RUNS_DIR")]
    pub runs_dir: Option<PathBuf>,
    /// Run agents without a sandbox when the kernel has no (or too old a) Landlock; without this flag such
    /// runs fail with the reason instead of starting.
    #[arg(long, env = "MUSTER_ALLOW_UNSANDBOXED_AGENTS")]
    pub allow_unsandboxed_agents: bool,
    /// TCP ports a sandboxed agent may connect to directly, besides its egress proxy, Muster's own API
    /// port and a loopback model endpoint's port (comma-separated; none by default: every other host is
    /// reached through the egress proxy and the agent's allow-list).
    #[arg(long, env = "MUSTER_AGENT_PORTS", value_delimiter = ',')]
    pub agent_ports: Vec<u16>,
    /// Folders every sandboxed agent may also read and write, besides its own run's (comma-separated;
    /// e.g. a shared build cache). None may contain the data or runs directory.
    #[arg(
        long = "agent-rw-path",
        env = "MUSTER_AGENT_RW_PATHS",
        value_delimiter = ','
    )]
    pub agent_rw_paths: Vec<PathBuf>,
    /// Do not push runs' branches back to workspace repositories given as git URLs (the diff still
    /// reaches the server).
    #[arg(long, env = "MUSTER_NO_PUSH")]
    pub no_push: bool,
    #[command(flatten)]
    pub runtime_paths: RuntimePaths,
}

impl AgentHostArgs {
    /// The runs folder: the flag, else the user's cache folder.
    pub fn runs_dir(&self) -> anyhow::Result<PathBuf> {
        match &self.runs_dir {
            Some(dir) => Ok(dir.clone()),
            None => dirs::cache_dir()
                .map(|d| d.join("muster").join("runs"))
                .context("cannot find a cache directory for this user; pass --runs-dir or set MUSTER_RUNS_DIR"),
        }
    }
}
