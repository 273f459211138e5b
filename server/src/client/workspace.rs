//! `muster workspace …`: the workspace's settings from the command line (the Settings page).

use clap::Subcommand;
use serde_json::{Value, json};

use super::output::{clean, print_json};
use super::{Remote, shape};

/// What to do with the workspace.
#[derive(Debug, Subcommand)]
pub enum WorkspaceCommand {
    /// Show the workspace and its settings.
    Show,
    /// Set the git repository runs work in (each run gets a worktree and a branch `muster/<KEY>-r<N>`),
    /// or clear it with --clear (runs then get a plain folder). Owners and admins.
    Repo {
        /// Absolute path, on the server's machine, of a git repository with at least one commit.
        #[arg(required_unless_present = "clear", conflicts_with = "clear")]
        path: Option<String>,
        /// Clear the repository.
        #[arg(long)]
        clear: bool,
    },
    /// Set the default egress allow-list: hosts every agent's runs may reach through the egress proxy
    /// (github.com, '*.npmjs.org', host:port), unless the agent has no network; --clear empties it.
    /// Owners and admins.
    Egress {
        /// Host patterns; replaces the list.
        #[arg(required_unless_present = "clear", conflicts_with = "clear")]
        hosts: Vec<String>,
        /// Empty the list.
        #[arg(long)]
        clear: bool,
    },
}

#[derive(serde::Deserialize)]
struct Shown {
    name: String,
    slug: String,
    issue_prefix: String,
    repo_path: Option<String>,
    /// Absent from servers older than the egress proxy.
    #[serde(default)]
    egress_hosts: Vec<String>,
}

/// Runs a `muster workspace` command.
pub async fn run(remote: &Remote, command: WorkspaceCommand) -> anyhow::Result<()> {
    let client = remote.connect()?;
    let (answer, said): (Value, &str) = match command {
        WorkspaceCommand::Show => (client.get("/api/v1/workspace").await?, ""),
        WorkspaceCommand::Repo { path, clear } => {
            let body = if clear {
                json!({ "repo_path": null })
            } else {
                json!({ "repo_path": path })
            };
            (client.patch("/api/v1/workspace", &body).await?, "saved\n")
        }
        WorkspaceCommand::Egress { hosts, clear } => {
            let hosts = if clear { Vec::new() } else { hosts };
            let body = json!({ "egress_hosts": hosts });
            (client.patch("/api/v1/workspace", &body).await?, "saved\n")
        }
    };
    if remote.json {
        return print_json(&answer);
    }
    let ws: Shown = shape(&answer)?;
    print!("{said}");
    println!("workspace: {} ({})", clean(&ws.name), clean(&ws.slug));
    println!("prefix:    {}", clean(&ws.issue_prefix));
    match ws.repo_path {
        Some(repo) => println!("repo:      {}", clean(&repo)),
        None => println!("repo:      none (runs work in a plain folder)"),
    }
    if ws.egress_hosts.is_empty() {
        println!("egress:    no default hosts (each agent's model endpoint and its own list)");
    } else {
        println!("egress:    {}", clean(&ws.egress_hosts.join(", ")));
    }
    Ok(())
}
