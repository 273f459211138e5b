//! `muster runner`: the executor on another machine, over WebSocket.

use crate::cli::RunnerArgs;

/// Runs `muster runner` until SIGINT or SIGTERM.
pub async fn run(args: RunnerArgs) -> anyhow::Result<()> {
    anyhow::bail!(
        "muster runner is not available in this build yet (servers: {})",
        args.servers.join(", ")
    )
}
