//! `muster project …`: a workspace's projects (their own repositories, leads, target dates) and how far
//! each is. Issues join one with `muster issue create|edit --project KEY`.

use clap::{Args, Subcommand};
use serde::Serialize;
use serde_json::Value;

use super::output::{cell, clean, print_json, table};
use super::{Client, Remote, not_found_as, segment, text_arg};

/// What to do with projects.
#[derive(Debug, Subcommand)]
pub enum ProjectCommand {
    /// List projects (KEY, NAME, STATUS, PROGRESS, LEAD, TARGET, RUNS, COST), active ones first.
    List,
    /// Show one project: its fields, progress by status, runs and spend.
    Show {
        /// The project's key, e.g. WEB.
        key: String,
    },
    /// Create a project; prints its key alone on stdout.
    Create(ProjectFlags),
    /// Change a project; only the flags given change.
    Edit(ProjectFlags),
    /// Delete a project (owners and admins); its issues stay, in no project.
    Delete {
        /// The project's key.
        key: String,
        /// Confirm.
        #[arg(long)]
        yes: bool,
    },
}

/// `muster project create|edit` flags.
#[derive(Debug, Args)]
pub struct ProjectFlags {
    /// The project's key: 2–10 letters or digits starting with a letter (for edit: the one to change).
    pub key: String,
    /// A new key (edit only).
    #[arg(long)]
    pub rekey: Option<String>,
    /// Its name (required to create).
    #[arg(long)]
    pub name: Option<String>,
    /// Markdown description, or - to read it from standard input.
    #[arg(long)]
    pub description: Option<String>,
    /// The lead: a member's email or name; `none` for nobody.
    #[arg(long)]
    pub lead: Option<String>,
    /// planned (default), active, paused, completed or cancelled.
    #[arg(long)]
    pub status: Option<String>,
    /// Target date, YYYY-MM-DD; `none` clears it.
    #[arg(long)]
    pub target: Option<String>,
    /// Owners and admins: its own repository (a path on the server or a git URL); `none` for the
    /// workspace's.
    #[arg(long)]
    pub repo: Option<String>,
    /// Owners and admins: its check command; `none` for the workspace's.
    #[arg(long)]
    pub check: Option<String>,
    /// Seconds before the check is stopped (default 600).
    #[arg(long)]
    pub check_timeout: Option<u64>,
}

#[derive(Serialize)]
struct Body {
    #[serde(skip_serializing_if = "Option::is_none")]
    key: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    description: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    lead: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    status: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    target_date: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    repo_path: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    check_command: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    check_timeout_secs: Option<u64>,
}

impl Body {
    fn of(f: ProjectFlags, create: bool) -> anyhow::Result<Self> {
        let none_clears =
            |v: Option<String>| v.map(|v| if v.trim() == "none" { String::new() } else { v });
        Ok(Body {
            key: if create { Some(f.key) } else { f.rekey },
            name: f.name,
            description: f.description.map(text_arg).transpose()?,
            lead: none_clears(f.lead),
            status: f.status,
            target_date: none_clears(f.target),
            repo_path: none_clears(f.repo),
            check_command: none_clears(f.check),
            check_timeout_secs: f.check_timeout,
        })
    }
}

/// Runs one `muster project` command.
pub async fn run(remote: &Remote, command: ProjectCommand) -> anyhow::Result<()> {
    let client = remote.connect()?;
    let json = remote.json;
    match command {
        ProjectCommand::List => {
            let all = client.get("/api/v1/projects").await?;
            if json {
                return print_json(&all);
            }
            let rows: Vec<Vec<String>> = all
                .as_array()
                .map(Vec::as_slice)
                .unwrap_or_default()
                .iter()
                .map(|p| {
                    vec![
                        cell(&p["key"]),
                        cell(&p["name"]),
                        cell(&p["status"]),
                        progress(p),
                        cell(&p["lead"]),
                        cell(&p["target_date"]),
                        cell(&p["runs"]),
                        cost(p),
                    ]
                })
                .collect();
            if rows.is_empty() {
                println!("no projects yet: muster project create WEB --name \"Website\"");
            } else {
                print!(
                    "{}",
                    table(
                        &[
                            "KEY", "NAME", "STATUS", "PROGRESS", "LEAD", "TARGET", "RUNS", "COST"
                        ],
                        &rows
                    )
                );
            }
            Ok(())
        }
        ProjectCommand::Show { key } => {
            let p = fetch(&client, &key).await?;
            if json { print_json(&p) } else { show(&p) }
        }
        ProjectCommand::Create(flags) => {
            let p = client
                .post("/api/v1/projects", &Body::of(flags, true)?)
                .await?;
            if json {
                print_json(&p)
            } else {
                println!("{}", cell(&p["key"]));
                Ok(())
            }
        }
        ProjectCommand::Edit(flags) => {
            let path = format!("/api/v1/projects/{}", segment(&flags.key));
            let key = flags.key.clone();
            let body = Body::of(flags, false)?;
            anyhow::ensure!(
                !serde_json::to_value(&body)?
                    .as_object()
                    .is_some_and(serde_json::Map::is_empty),
                "nothing to change: give at least one of --rekey, --name, --description, --lead, --status, \
                 --target, --repo, --check, --check-timeout"
            );
            let p = client
                .patch(&path, &body)
                .await
                .map_err(|e| not_found_as(e, &format!("project {key}")))?;
            if json { print_json(&p) } else { show(&p) }
        }
        ProjectCommand::Delete { key, yes } => {
            anyhow::ensure!(
                yes,
                "deleting project {key} takes its issues out of it (they stay); add --yes to confirm"
            );
            client
                .delete(&format!("/api/v1/projects/{}", segment(&key)))
                .await
                .map_err(|e| not_found_as(e, &format!("project {key}")))?;
            if !json {
                println!("project {} deleted", clean(&key));
            }
            Ok(())
        }
    }
}

async fn fetch(client: &Client, key: &str) -> anyhow::Result<Value> {
    client
        .get(&format!("/api/v1/projects/{}", segment(key)))
        .await
        .map_err(|e| not_found_as(e, &format!("project {key}")))
}

/// "3/8 done".
fn progress(p: &Value) -> String {
    format!("{}/{} done", cell(&p["done"]), cell(&p["total"]))
}

/// "$1.2340", or "unpriced" / "$0.1200 + unpriced" when some of it was not priced.
fn cost(p: &Value) -> String {
    let usd = p["cost_usd"].as_f64().unwrap_or_default();
    match (p["cost_unknown"].as_bool().unwrap_or(false), usd > 0.0) {
        (true, false) => "unpriced".to_owned(),
        (true, true) => format!("${usd:.4} + unpriced"),
        (false, _) => format!("${usd:.4}"),
    }
}

fn show(p: &Value) -> anyhow::Result<()> {
    println!("{}  {}", cell(&p["key"]), cell(&p["name"]));
    println!("status:   {}", cell(&p["status"]));
    println!("lead:     {}", cell(&p["lead"]));
    println!("target:   {}", cell(&p["target_date"]));
    let own = |field: &str, default: &str| match &p[field] {
        Value::String(s) => clean(s),
        _ => default.to_owned(),
    };
    println!("repo:     {}", own("repo_path", "the workspace's"));
    println!("check:    {}", own("check_command", "the workspace's"));
    println!("progress: {}", progress(p));
    let by_status: Vec<String> = p["by_status"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default()
        .iter()
        .map(|s| format!("{} {}", cell(&s["status"]), cell(&s["issues"])))
        .collect();
    if !by_status.is_empty() {
        println!("issues:   {}", by_status.join(", "));
    }
    println!(
        "runs:     {} ({} tokens, {})",
        cell(&p["runs"]),
        cell(&p["tokens"]),
        cost(p)
    );
    if let Some(d) = p["description"].as_str().filter(|d| !d.trim().is_empty()) {
        println!("\n{}", super::output::indent(d, "    "));
    }
    println!(
        "\nits issues: muster issue list --project {}",
        cell(&p["key"])
    );
    Ok(())
}
