//! `muster runtime detect`: which agent CLIs this machine has, as the runner would find them.

use clap::Subcommand;

use super::output::{clean, print_json, table};
use crate::service::runtimes::{RuntimeCache, install_hint, label};

/// What to do with runtimes.
#[derive(Debug, Subcommand)]
pub enum RuntimeCommand {
    /// Detect Claude Code, Codex, OpenCode and llama.cpp on this machine: path, version, status, reason.
    Detect {
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
}

/// Runs a runtime command (locally: no server needed).
pub async fn run(
    command: RuntimeCommand,
    overrides: Vec<(muster_agents::RuntimeKind, std::path::PathBuf)>,
) -> anyhow::Result<()> {
    let RuntimeCommand::Detect { json } = command;
    let (_, found) = RuntimeCache::new(overrides).detect().await;
    if json {
        return print_json(&serde_json::to_value(&found)?);
    }
    let rows: Vec<Vec<String>> = found
        .iter()
        .map(|d| {
            let status = d.status.as_str().to_owned();
            let what = match (&d.reason, install_hint(d.kind)) {
                (Some(reason), Some(hint)) if d.version.is_none() || status == "too_old" => {
                    format!("{reason}; {hint}")
                }
                (Some(reason), _) => reason.clone(),
                (None, _) => String::new(),
            };
            vec![
                label(d.kind).to_owned(),
                status,
                d.version.clone().unwrap_or_else(|| "-".into()),
                d.path
                    .as_ref()
                    .map_or_else(|| "-".into(), |p| p.display().to_string()),
                clean(&what),
            ]
        })
        .collect();
    print!(
        "{}",
        table(&["RUNTIME", "STATUS", "VERSION", "PATH", "NOTE"], &rows)
    );
    Ok(())
}
