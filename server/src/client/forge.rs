//! `muster forge …` (the workspace's forge connection; owners and admins) and `muster pr …` (pull
//! requests of agents' work). A forge token never travels on the command line: it is read from an
//! environment variable named by `--token-env`, or from `--token-file`.

use std::path::PathBuf;

use anyhow::Context as _;
use clap::Subcommand;
use serde_json::{Value, json};

use super::output::{clean, print_json, table};
use super::{Client, Remote, not_found_as};

/// What to do with the workspace's forge connection.
#[derive(Debug, Subcommand)]
pub enum ForgeCommand {
    /// Connect the workspace's repository to its project on GitHub, GitLab or Gitea/Forgejo; prints the
    /// webhook URL and secret to give the forge (shown this once).
    Connect {
        /// `github`, `gitlab` or `gitea` (Gitea and Forgejo).
        #[arg(long)]
        kind: String,
        /// The project: owner/name (GitLab: group/subgroup/name).
        #[arg(long)]
        repo: String,
        /// The API root; the default is the public service's (required for Gitea/Forgejo).
        #[arg(long)]
        api_url: Option<String>,
        /// The environment variable holding the token (never the token itself on the command line).
        #[arg(long, value_name = "VAR")]
        token_env: Option<String>,
        /// A file holding the token.
        #[arg(long, value_name = "PATH", conflicts_with = "token_env")]
        token_file: Option<PathBuf>,
        /// The environment variable holding the webhook secret; without it Muster makes one.
        #[arg(long, value_name = "VAR")]
        webhook_secret_env: Option<String>,
        /// Open a draft pull request when an agent delivers.
        #[arg(long)]
        auto_open: bool,
        /// Automatic rounds (CI fixes, review answers) per pull request, 1 to 20 (default 3).
        #[arg(long, value_name = "N")]
        max_rounds: Option<i64>,
        /// Where the issue goes when its pull request is closed unmerged: `todo` or `cancelled`.
        #[arg(long, value_name = "todo|cancelled")]
        on_close: Option<String>,
    },
    /// The workspace's connections.
    List,
    /// What the connection's token can do now.
    Test {
        /// The connection's id (from `muster forge list`).
        id: String,
    },
    /// Remove a connection; its pull requests stay on the forge.
    Remove {
        /// The connection's id (from `muster forge list`).
        id: String,
    },
}

/// What to do with pull requests.
#[derive(Debug, Subcommand)]
pub enum PrCommand {
    /// Open the pull request of an issue's latest delivered work, or of one run's.
    Open {
        /// The issue's key (ACM-7).
        #[arg(required_unless_present = "run", conflicts_with = "run")]
        key: Option<String>,
        /// A run's id instead of an issue.
        #[arg(long, value_name = "RUN_ID")]
        run: Option<String>,
        /// Open it ready for review (default: a draft).
        #[arg(long)]
        ready: bool,
    },
    /// The workspace's pull requests, newest first.
    List {
        /// Only this issue's.
        #[arg(long, value_name = "KEY")]
        issue: Option<String>,
    },
    /// One pull request: state, checks, reviews.
    Show {
        /// The pull request's id (from `muster pr list`).
        id: String,
    },
}

fn text(v: &Value, key: &str) -> String {
    clean(v[key].as_str().unwrap_or(""))
}

/// The token (and webhook secret) of `connect`, read where the flags say. `env` reads one variable.
fn secrets(
    token_env: Option<&str>,
    token_file: Option<&std::path::Path>,
    secret_env: Option<&str>,
    env: &dyn Fn(&str) -> Option<String>,
) -> anyhow::Result<(String, Option<String>)> {
    let read = |var: &str, what: &str| {
        env(var)
            .map(|v| v.trim().to_owned())
            .filter(|v| !v.is_empty())
            .with_context(|| format!("{var} is not set (or is empty); it must hold {what}"))
    };
    let token = match (token_env, token_file) {
        (Some(var), _) => read(var, "the forge token")?,
        (None, Some(path)) => crate::cli::secret_file(Some(path), "the forge token")?
            .context("the token file is empty")?,
        (None, None) => anyhow::bail!(
            "no forge token: pass --token-env VAR (an environment variable holding it) or --token-file PATH; a token is never given on the command line"
        ),
    };
    let secret = secret_env
        .map(|var| read(var, "the webhook secret"))
        .transpose()?;
    Ok((token, secret))
}

/// Runs a `muster forge` command; `env` reads an environment variable (the CLI's one reader).
pub async fn forge(
    remote: &Remote,
    command: ForgeCommand,
    env: &dyn Fn(&str) -> Option<String>,
) -> anyhow::Result<()> {
    match command {
        ForgeCommand::Connect {
            kind,
            repo,
            api_url,
            token_env,
            token_file,
            webhook_secret_env,
            auto_open,
            max_rounds,
            on_close,
        } => {
            let (token, secret) = secrets(
                token_env.as_deref(),
                token_file.as_deref(),
                webhook_secret_env.as_deref(),
                env,
            )?;
            let client = remote.connect()?;
            let body = json!({
                "kind": kind, "repo": repo, "api_url": api_url, "token": token,
                "webhook_secret": secret, "auto_open": auto_open, "max_rounds": max_rounds,
                "on_close": on_close,
            });
            let made = client.post("/api/v1/forges", &body).await?;
            if remote.json {
                return print_json(&made);
            }
            connected(&client, &made);
        }
        ForgeCommand::List => list(&remote.connect()?, remote.json).await?,
        ForgeCommand::Test { id } => {
            let client = remote.connect()?;
            let access = client
                .post(&format!("/api/v1/forges/{id}/test"), &json!({}))
                .await
                .map_err(|e| not_found_as(e, &format!("forge connection {id}")))?;
            if remote.json {
                return print_json(&access);
            }
            print!("{}", abilities(&access));
        }
        ForgeCommand::Remove { id } => {
            let client = remote.connect()?;
            client
                .delete(&format!("/api/v1/forges/{id}"))
                .await
                .map_err(|e| not_found_as(e, &format!("forge connection {id}")))?;
            if remote.json {
                return print_json(&json!({ "removed": id }));
            }
            println!("forge connection {id} removed");
        }
    }
    Ok(())
}

fn connected(client: &Client, made: &Value) {
    let c = &made["connection"];
    println!(
        "connected {} {} ({})",
        text(c, "kind"),
        text(c, "repo"),
        text(c, "id")
    );
    println!(
        "webhook URL:    {}{}",
        client.base(),
        text(c, "webhook_path")
    );
    println!("webhook secret: {}", text(made, "webhook_secret"));
    println!(
        "Add a webhook with this URL and secret in the project's settings (JSON; pull request, check and review events). The secret is not shown again."
    );
    print!("{}", abilities(&made["access"]));
}

/// What a token can do, one line each, then the forge's notes.
fn abilities(access: &Value) -> String {
    let mut out = String::new();
    for (key, what) in [
        ("can_push", "push branches"),
        ("can_open_prs", "open pull requests"),
        ("can_read_checks", "read checks"),
        ("can_comment", "comment"),
    ] {
        let can = if access[key].as_bool() == Some(true) {
            "yes"
        } else {
            "no"
        };
        out.push_str(&format!("{what:<20} {can}\n"));
    }
    for note in access["notes"].as_array().into_iter().flatten() {
        out.push_str(&format!("note: {}\n", clean(note.as_str().unwrap_or(""))));
    }
    out
}

async fn list(client: &Client, json: bool) -> anyhow::Result<()> {
    let all = client.get("/api/v1/forges").await?;
    if json {
        return print_json(&all);
    }
    let rows: Vec<Vec<String>> = all
        .as_array()
        .into_iter()
        .flatten()
        .map(|c| {
            vec![
                text(c, "kind"),
                text(c, "repo"),
                text(c, "api_url"),
                if c["auto_open"].as_bool() == Some(true) {
                    "yes"
                } else {
                    "no"
                }
                .to_owned(),
                c["max_rounds"].to_string(),
                text(c, "on_close"),
                text(c, "webhook_path"),
                text(c, "id"),
            ]
        })
        .collect();
    print!(
        "{}",
        table(
            &[
                "KIND",
                "PROJECT",
                "API URL",
                "AUTO-OPEN",
                "ROUNDS",
                "ON CLOSE",
                "WEBHOOK",
                "ID"
            ],
            &rows
        )
    );
    Ok(())
}

/// "draft", "open", "merged", "closed".
fn state(pr: &Value) -> String {
    match (pr["state"].as_str(), pr["draft"].as_bool()) {
        (Some("open"), Some(true)) => "draft".to_owned(),
        (Some(s), _) => clean(s),
        (None, _) => String::new(),
    }
}

/// "1 failing, 1 pending, 2 passing", or "-".
fn checks(pr: &Value) -> String {
    let all = pr["checks"].as_array().cloned().unwrap_or_default();
    let count = |s: &str| all.iter().filter(|c| c["state"] == s).count();
    let parts: Vec<String> = [
        ("failure", "failing"),
        ("pending", "pending"),
        ("success", "passing"),
    ]
    .iter()
    .filter(|(s, _)| count(s) > 0)
    .map(|(s, word)| format!("{} {word}", count(s)))
    .collect();
    if parts.is_empty() {
        "-".to_owned()
    } else {
        parts.join(", ")
    }
}

/// Runs a `muster pr` command.
pub async fn pr(remote: &Remote, command: PrCommand) -> anyhow::Result<()> {
    let client = remote.connect()?;
    match command {
        PrCommand::Open { key, run, ready } => {
            let path = match (&key, &run) {
                (_, Some(run)) => format!("/api/v1/runs/{run}/pull-request"),
                (Some(key), None) => format!("/api/v1/issues/{key}/pull-request"),
                (None, None) => anyhow::bail!("give an issue key or --run RUN_ID"),
            };
            let what = run.map_or_else(
                || format!("issue {}", key.unwrap_or_default()),
                |r| format!("run {r}"),
            );
            let pr = client
                .post(&path, &json!({ "draft": !ready }))
                .await
                .map_err(|e| not_found_as(e, &what))?;
            if remote.json {
                return print_json(&pr);
            }
            println!("#{} {} {}", pr["number"], state(&pr), text(&pr, "url"));
        }
        PrCommand::List { issue } => {
            let path = match &issue {
                Some(key) => format!("/api/v1/pull-requests?issue={key}"),
                None => "/api/v1/pull-requests".to_owned(),
            };
            let all = client.get(&path).await.map_err(|e| match &issue {
                Some(key) => not_found_as(e, &format!("issue {key}")),
                None => e,
            })?;
            if remote.json {
                return print_json(&all);
            }
            let rows: Vec<Vec<String>> = all
                .as_array()
                .into_iter()
                .flatten()
                .map(|p| {
                    vec![
                        format!("#{}", p["number"]),
                        state(p),
                        checks(p),
                        text(p, "branch"),
                        text(p, "url"),
                        text(p, "id"),
                    ]
                })
                .collect();
            print!(
                "{}",
                table(&["PR", "STATE", "CHECKS", "BRANCH", "URL", "ID"], &rows)
            );
        }
        PrCommand::Show { id } => {
            let p = client
                .get(&format!("/api/v1/pull-requests/{id}"))
                .await
                .map_err(|e| not_found_as(e, &format!("pull request {id}")))?;
            if remote.json {
                return print_json(&p);
            }
            show(&p);
        }
    }
    Ok(())
}

fn show(p: &Value) {
    println!("pull request #{}: {}", p["number"], text(p, "url"));
    println!("state:     {}", state(p));
    println!("branch:    {} into {}", text(p, "branch"), text(p, "base"));
    println!(
        "mergeable: {}",
        match p["mergeable"].as_bool() {
            Some(true) => "yes",
            Some(false) => "no",
            None => "unknown",
        }
    );
    println!("rounds:    {}", p["rounds"]);
    println!("run:       {}", text(p, "run_id"));
    for c in p["checks"].as_array().into_iter().flatten() {
        println!(
            "check:     {} {} {}",
            text(c, "name"),
            text(c, "state"),
            text(c, "url")
        );
    }
    for r in p["reviews"].as_array().into_iter().flatten() {
        println!(
            "review:    {} {}",
            text(r, "author"),
            text(r, "verdict").replace('_', " ")
        );
    }
}
