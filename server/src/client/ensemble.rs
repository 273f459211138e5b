//! `muster ensemble …` (define teams of agents) and the issue commands that use them: `issue assign KEY
//! --ensemble NAME`, `issue compare KEY`, `issue choose KEY CANDIDATE [--merge]`.

use clap::{Args, Subcommand};
use serde::Serialize;
use serde_json::Value;

use super::output::{cell, clean, print_json, table};
use super::{Client, Remote, not_found_as, segment};

/// What to do with ensembles.
#[derive(Debug, Subcommand)]
pub enum EnsembleCommand {
    /// List ensembles (NAME, MEMBERS, CHECK, EARLY STOP, REVIEWER, BUDGET).
    List,
    /// Show one ensemble.
    Show {
        /// The ensemble's name.
        name: String,
    },
    /// Create an ensemble (owners and admins).
    Create(EnsembleFlags),
    /// Change an ensemble (owners and admins); only the flags given change.
    Edit(EnsembleFlags),
    /// Delete an ensemble (owners and admins); its past runs stay.
    Delete {
        /// The ensemble's name.
        name: String,
    },
}

/// `muster ensemble create|edit` flags.
#[derive(Debug, Args)]
pub struct EnsembleFlags {
    /// The ensemble's name (for edit: the one to change).
    pub name: String,
    /// A new name (edit only).
    #[arg(long)]
    pub rename: Option<String>,
    /// A member agent; repeat for each (2 to 8).
    #[arg(long = "member", value_name = "AGENT")]
    pub members: Vec<String>,
    /// The check command run in each candidate's worktree (e.g. "cargo test"); "" for the workspace's.
    #[arg(long)]
    pub check: Option<String>,
    /// Seconds before the check is stopped (default 600).
    #[arg(long)]
    pub check_timeout: Option<u64>,
    /// all, first_green or "quorum K".
    #[arg(long)]
    pub early_stop: Option<String>,
    /// The agent that reviews blind when the checks do not decide; "" for none.
    #[arg(long)]
    pub reviewer: Option<String>,
    /// The whole ensemble's budget in USD (candidates and reviewer); 0 for none.
    #[arg(long)]
    pub budget_usd: Option<f64>,
    /// The whole ensemble's token budget; 0 for none.
    #[arg(long)]
    pub budget_tokens: Option<i64>,
    /// The most one candidate may spend, as a fraction of the budget (e.g. 0.5); 0 for an equal share.
    #[arg(long)]
    pub share: Option<f64>,
}

#[derive(Serialize)]
struct Body {
    #[serde(skip_serializing_if = "Option::is_none")]
    name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    members: Option<Vec<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    check: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    check_timeout_secs: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    early_stop: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    reviewer: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    budget_usd: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    budget_tokens: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    share: Option<f64>,
}

impl Body {
    fn of(f: EnsembleFlags, create: bool) -> Self {
        Body {
            name: if create { Some(f.name) } else { f.rename },
            members: (!f.members.is_empty()).then_some(f.members),
            check: f.check,
            check_timeout_secs: f.check_timeout,
            early_stop: f.early_stop,
            reviewer: f.reviewer,
            budget_usd: f.budget_usd,
            budget_tokens: f.budget_tokens,
            share: f.share,
        }
    }
}

/// Runs one `muster ensemble` command.
pub async fn run(remote: &Remote, command: EnsembleCommand) -> anyhow::Result<()> {
    let client = remote.connect()?;
    let json = remote.json;
    match command {
        EnsembleCommand::List => {
            let all = client.get("/api/v1/ensembles").await?;
            if json {
                return print_json(&all);
            }
            let rows: Vec<Vec<String>> = all
                .as_array()
                .map(Vec::as_slice)
                .unwrap_or_default()
                .iter()
                .map(|e| {
                    vec![
                        cell(&e["name"]),
                        names(&e["members"]),
                        cell(&e["check"]),
                        cell(&e["early_stop"]),
                        cell(&e["reviewer"]),
                        budget(e),
                    ]
                })
                .collect();
            if rows.is_empty() {
                println!(
                    "no ensembles yet: muster ensemble create NAME --member A --member B --check \"cargo test\""
                );
            } else {
                print!(
                    "{}",
                    table(
                        &[
                            "NAME",
                            "MEMBERS",
                            "CHECK",
                            "EARLY STOP",
                            "REVIEWER",
                            "BUDGET"
                        ],
                        &rows
                    )
                );
            }
            Ok(())
        }
        EnsembleCommand::Show { name } => {
            let e = fetch(&client, &name).await?;
            if json { print_json(&e) } else { show(&e) }
        }
        EnsembleCommand::Create(flags) => {
            let e = client
                .post("/api/v1/ensembles", &Body::of(flags, true))
                .await?;
            if json { print_json(&e) } else { show(&e) }
        }
        EnsembleCommand::Edit(flags) => {
            let path = format!("/api/v1/ensembles/{}", segment(&flags.name));
            let name = flags.name.clone();
            let e = client
                .patch(&path, &Body::of(flags, false))
                .await
                .map_err(|e| not_found_as(e, &format!("ensemble {name}")))?;
            if json { print_json(&e) } else { show(&e) }
        }
        EnsembleCommand::Delete { name } => {
            client
                .delete(&format!("/api/v1/ensembles/{}", segment(&name)))
                .await
                .map_err(|e| not_found_as(e, &format!("ensemble {name}")))?;
            if !json {
                println!("ensemble {} deleted", clean(&name));
            }
            Ok(())
        }
    }
}

async fn fetch(client: &Client, name: &str) -> anyhow::Result<Value> {
    client
        .get(&format!("/api/v1/ensembles/{}", segment(name)))
        .await
        .map_err(|e| not_found_as(e, &format!("ensemble {name}")))
}

fn names(v: &Value) -> String {
    v.as_array()
        .map(|a| a.iter().map(cell).collect::<Vec<_>>().join(", "))
        .unwrap_or_default()
}

fn budget(e: &Value) -> String {
    match (e["budget_usd"].as_f64(), e["budget_tokens"].as_i64()) {
        (Some(usd), Some(t)) => format!("${usd:.2} / {t} tokens"),
        (Some(usd), None) => format!("${usd:.2}"),
        (None, Some(t)) => format!("{t} tokens"),
        (None, None) => "none".to_owned(),
    }
}

fn show(e: &Value) -> anyhow::Result<()> {
    println!("{}", cell(&e["name"]));
    println!("  members:    {}", names(&e["members"]));
    println!(
        "  check:      {}{}",
        cell(&e["check"]),
        e["check_timeout_secs"]
            .as_u64()
            .map(|s| format!(" (timeout {s} s)"))
            .unwrap_or_else(|| " (the workspace's)".to_owned())
    );
    println!("  early stop: {}", cell(&e["early_stop"]));
    println!("  reviewer:   {}", cell(&e["reviewer"]));
    println!("  budget:     {}", budget(e));
    if let Some(usd) = e["candidate_budget_usd"].as_f64() {
        println!("  per candidate: ${usd:.4}");
    }
    Ok(())
}

/// `muster issue assign KEY --ensemble NAME`: queues the candidates and prints the estimate.
pub async fn assign(client: &Client, json: bool, key: &str, ensemble: &str) -> anyhow::Result<()> {
    let path = format!("/api/v1/issues/{}/ensemble", segment(key));
    let done = client
        .post(&path, &serde_json::json!({ "ensemble": ensemble }))
        .await
        .map_err(|e| not_found_as(e, &format!("issue {key}")))?;
    if json {
        return print_json(&done);
    }
    println!(
        "{} is assigned to ensemble {} (r{}): {} candidates queued{}",
        clean(key),
        cell(&done["ensemble"]),
        done["number"],
        done["runs"].as_array().map_or(0, Vec::len),
        done["base_commit"]
            .as_str()
            .map(|c| format!(" from {}", &c[..c.len().min(12)]))
            .unwrap_or_default()
    );
    for e in done["estimates"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default()
    {
        println!(
            "  {:<20} {}",
            cell(&e["agent"]),
            match e["median_cost_usd"].as_f64() {
                Some(usd) => format!("~${usd:.4} per run (median of {} runs)", e["runs"]),
                None => "no history to estimate from".to_owned(),
            }
        );
    }
    if let Some(total) = done["estimated_total_usd"].as_f64() {
        println!("  estimated total: ~${total:.4}");
    }
    Ok(())
}

/// `muster issue compare KEY`: the candidates side by side.
pub async fn compare(
    client: &Client,
    json: bool,
    key: &str,
    number: Option<i32>,
) -> anyhow::Result<()> {
    let mut path = format!("/api/v1/issues/{}/ensemble", segment(key));
    if let Some(n) = number {
        path.push_str(&format!("?number={n}"));
    }
    let c = client
        .get(&path)
        .await
        .map_err(|e| not_found_as(e, &format!("issue {key}")))?;
    if json {
        return print_json(&c);
    }
    print_comparison(&c);
    Ok(())
}

fn print_comparison(c: &Value) {
    println!(
        "{} — ensemble {} r{} ({}), policy {}, check: {}",
        cell(&c["issue"]),
        cell(&c["ensemble"]),
        c["number"],
        cell(&c["status"]),
        cell(&c["early_stop"]),
        cell(&c["check"])
    );
    let budget = match c["budget_usd"].as_f64() {
        Some(b) => format!(" of ${b:.2}"),
        None => String::new(),
    };
    println!(
        "spent ${:.4}{budget} ({} tokens; review ${:.4}){}",
        c["spent_usd"].as_f64().unwrap_or(0.0),
        c["spent_tokens"],
        c["review_cost_usd"].as_f64().unwrap_or(0.0),
        c["single_agent_estimate_usd"]
            .as_f64()
            .map(|s| format!("; one agent alone: ~${s:.4}"))
            .unwrap_or_default()
    );
    if let Some(why) = c["stop_reason"].as_str() {
        println!("{}", clean(why));
    }
    let rows: Vec<Vec<String>> = c["candidates"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default()
        .iter()
        .map(|v| {
            let check = match &v["check"] {
                Value::Null => "-".to_owned(),
                ch => {
                    let counts = match (ch["passed"].as_u64(), ch["total"].as_u64()) {
                        (Some(p), Some(t)) => format!(" {p}/{t}"),
                        _ => String::new(),
                    };
                    if v["green"].as_bool() == Some(true) {
                        format!("pass{counts}")
                    } else if ch["timed_out"].as_bool() == Some(true) {
                        "timed out".to_owned()
                    } else {
                        format!("FAIL{counts}")
                    }
                }
            };
            vec![
                cell(&v["agent"]),
                cell(&v["status"]),
                check,
                cell(&v["diff_stat"])
                    .lines()
                    .last()
                    .unwrap_or("-")
                    .trim()
                    .to_owned(),
                v["tokens"].to_string(),
                cell(&v["cost_label"]),
                v["review_score"]
                    .as_i64()
                    .map(|s| format!("{s}/10"))
                    .unwrap_or_else(|| "-".to_owned()),
                if v["chosen"].as_bool() == Some(true) {
                    "chosen".to_owned()
                } else {
                    String::new()
                },
            ]
        })
        .collect();
    print!(
        "{}",
        table(
            &[
                "AGENT", "STATUS", "CHECK", "DIFF", "TOKENS", "COST", "REVIEW", ""
            ],
            &rows
        )
    );
    match c["review"].as_str() {
        Some("invalid") => println!("review: INVALID verdict — {}", cell(&c["review_error"])),
        Some("no_answer") => println!("review: no answer — {}", cell(&c["review_error"])),
        _ => {}
    }
    if let Some(r) = c["recommendation"].as_object() {
        println!(
            "recommended: {} — {}{}",
            cell(&r["agent"]),
            cell(&r["why"]),
            match r["decided_by"].as_str() {
                Some("review") => " (by opinion only)",
                Some("cost") => " (by cost and size only)",
                _ => "",
            }
        );
    }
}

/// `muster issue choose KEY CANDIDATE [--merge]`.
pub async fn choose(
    client: &Client,
    json: bool,
    key: &str,
    candidate: &str,
    merge: bool,
) -> anyhow::Result<()> {
    let path = format!("/api/v1/issues/{}/ensemble/choose", segment(key));
    let c = client
        .post(
            &path,
            &serde_json::json!({ "candidate": candidate, "merge": merge }),
        )
        .await
        .map_err(|e| not_found_as(e, &format!("issue {key}")))?;
    if json {
        return print_json(&c);
    }
    println!(
        "{}: chose {}{}",
        clean(key),
        cell(&c["chosen"]),
        c["merged_commit"]
            .as_str()
            .map(|m| format!(", merged as {}", &m[..m.len().min(12)]))
            .unwrap_or_default()
    );
    Ok(())
}
