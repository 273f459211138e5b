//! `muster view …`: the issue list's saved views (a name for a list's filter, sort and grouping).

use clap::Subcommand;
use serde::Deserialize;
use serde_json::{Value, json};

use super::output::{self, clean, print_json};
use super::{Remote, segment, shape};

/// What to do with saved views.
#[derive(Debug, Subcommand)]
pub enum ViewCommand {
    /// List the workspace's saved views: NAME, QUERY and the list page's URL.
    List,
    /// Save a view: a name and the list's query string (`priority=urgent&group=assignee`; keys
    /// status, assignee, label, priority, q, sort, dir, group).
    Save {
        /// 1–80 characters, unique in the workspace.
        name: String,
        /// The list's query string, as in the list page's URL.
        query: String,
    },
    /// Delete a saved view (its creator, owners and admins).
    Delete {
        /// The view's name.
        name: String,
    },
}

#[derive(Debug, Deserialize)]
struct View {
    name: String,
    query: String,
    url: String,
}

/// Runs a `muster view` command.
pub async fn run(remote: &Remote, command: ViewCommand) -> anyhow::Result<()> {
    let client = remote.connect()?;
    match command {
        ViewCommand::List => {
            let answer = client.get("/api/v1/views").await?;
            if remote.json {
                return print_json(&answer);
            }
            let views: Vec<View> = shape(&answer["views"])?;
            if views.is_empty() {
                eprintln!("no saved views");
                return Ok(());
            }
            let rows: Vec<Vec<String>> = views
                .into_iter()
                .map(|v| vec![clean(&v.name), clean(&v.query), clean(&v.url)])
                .collect();
            print!("{}", output::table(&["NAME", "QUERY", "URL"], &rows));
        }
        ViewCommand::Save { name, query } => {
            let answer: Value = client
                .post("/api/v1/views", &json!({ "name": name, "query": query }))
                .await?;
            if remote.json {
                return print_json(&answer);
            }
            let view: View = shape(&answer)?;
            println!("saved {}: {}", clean(&view.name), clean(&view.url));
        }
        ViewCommand::Delete { name } => {
            client
                .delete(&format!("/api/v1/views/{}", segment(&name)))
                .await?;
            if !remote.json {
                println!("deleted {}", clean(&name));
            }
        }
    }
    Ok(())
}
