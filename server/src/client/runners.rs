//! `muster runner-token …` and `muster runners`: the Runners page from the command line. (`muster
//! runner` itself is the runner, not a client of this page.)

use clap::Subcommand;
use serde_json::Value;

use super::output::{clean, print_json, table};
use super::{Client, Remote};

/// What to do with runner tokens (owners and admins).
#[derive(Debug, Subcommand)]
pub enum RunnerTokenCommand {
    /// List the workspace's runner tokens (never their secrets).
    List,
    /// Create a runner token and print it alone on stdout, once: give it to `muster runner` as MUSTER_RUNNER_TOKEN (or --token-file).
    Create {
        /// What it is for ("gpu box"), 1 to 64 characters.
        name: String,
    },
    /// Revoke a runner token by id: its runners are disconnected and can no longer connect.
    Revoke {
        /// The token's id (from `muster runner-token list`).
        id: String,
    },
}

fn text(v: &Value, key: &str) -> String {
    clean(v[key].as_str().unwrap_or(""))
}

/// The runner tokens' collection in the API.
const TOKENS: &str = "/api/v1/runner-tokens";

/// Runs a `muster runner-token` command.
pub async fn tokens(remote: &Remote, command: RunnerTokenCommand) -> anyhow::Result<()> {
    let client = remote.connect()?;
    match command {
        RunnerTokenCommand::List => list_tokens(&client, remote.json).await?,
        RunnerTokenCommand::Create { name } => {
            super::team::create_token(&client, TOKENS, &name, remote.json).await?;
        }
        RunnerTokenCommand::Revoke { id } => {
            super::team::revoke_token(&client, TOKENS, &id, remote.json).await?;
        }
    }
    Ok(())
}

async fn list_tokens(client: &Client, json: bool) -> anyhow::Result<()> {
    let list = client.get("/api/v1/runner-tokens").await?;
    if json {
        return print_json(&list);
    }
    let rows: Vec<Vec<String>> = list
        .as_array()
        .into_iter()
        .flatten()
        .map(|t| {
            let state = if t["revoked_at"].is_null() {
                "active"
            } else {
                "revoked"
            };
            vec![
                text(t, "name"),
                text(t, "prefix"),
                state.to_owned(),
                clean(t["last_used_at"].as_str().unwrap_or("never")),
                text(t, "id"),
            ]
        })
        .collect();
    print!(
        "{}",
        table(&["NAME", "PREFIX", "STATE", "LAST USED", "ID"], &rows)
    );
    Ok(())
}

/// `muster runners`: the runners the workspace can use, one per row.
pub async fn list(remote: &Remote) -> anyhow::Result<()> {
    let client = remote.connect()?;
    let list = client.get("/api/v1/runners").await?;
    if remote.json {
        return print_json(&list);
    }
    let rows: Vec<Vec<String>> = list
        .as_array()
        .into_iter()
        .flatten()
        .map(|r| {
            let state = match (r["revoked"].as_bool(), r["online"].as_bool()) {
                (Some(true), _) => "revoked",
                (_, Some(true)) => "online",
                _ => "offline",
            };
            let clis: Vec<String> = r["runtimes"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|c| match c["version"].as_str() {
                    Some(v) => format!("{} {}", text(c, "kind"), clean(v)),
                    None => text(c, "kind"),
                })
                .collect();
            let live = r["live_runs"].as_array().map_or(0, Vec::len);
            vec![
                text(r, "name"),
                state.to_owned(),
                text(r, "version"),
                if r["embedded"].as_bool() == Some(true) {
                    "any (embedded)".to_owned()
                } else if clis.is_empty() {
                    "-".to_owned()
                } else {
                    clis.join(", ")
                },
                live.to_string(),
                text(r, "last_heartbeat_at"),
            ]
        })
        .collect();
    print!(
        "{}",
        table(
            &[
                "NAME",
                "STATE",
                "VERSION",
                "CLIS",
                "LIVE RUNS",
                "LAST HEARTBEAT"
            ],
            &rows
        )
    );
    Ok(())
}
