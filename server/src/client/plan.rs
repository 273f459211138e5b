//! `muster issue plan|proposal|approve|discard`: ask an agent to plan an issue, read its proposed tree
//! of sub-issues, and approve it (as proposed, with items dropped or re-assigned, or as edited in a
//! JSON file) or discard it.

use clap::Args;
use serde_json::{Value, json};

use super::output::{clean, indent, print_json};
use super::{Client, not_found_as, segment};

/// `muster issue approve` flags.
#[derive(Debug, Args)]
pub struct ApproveArgs {
    /// Issue key, e.g. MUS-7: its pending proposal is approved.
    pub key: String,
    /// Leave this item out (its ref); repeat for more. What named it as a blocker no longer waits on it.
    #[arg(long = "drop", value_name = "REF")]
    pub drop: Vec<String>,
    /// Give an item another agent: REF=AGENT (`REF=none` leaves it unassigned); repeat for more.
    #[arg(long = "agent", value_name = "REF=AGENT")]
    pub agent: Vec<String>,
    /// The tree as edited: a JSON file holding the items (as `muster issue proposal KEY --json` prints
    /// them), or - for standard input. --drop and --agent apply after it.
    #[arg(long, value_name = "FILE")]
    pub file: Option<String>,
    /// Create the sub-issues unassigned: no agent starts.
    #[arg(long)]
    pub no_assign: bool,
}

/// Asks `agent` to plan `key`.
pub async fn request(client: &Client, json: bool, key: &str, agent: &str) -> anyhow::Result<()> {
    let path = format!("/api/v1/issues/{}/plan", segment(key));
    let run = client.post(&path, &json!({ "agent": agent })).await;
    let run = run.map_err(|e| not_found_as(e, &format!("issue {key}")))?;
    if json {
        return print_json(&run);
    }
    println!(
        "{} is planning {} (run {}); read its proposal with `muster issue proposal {}`",
        clean(agent),
        clean(key),
        run["id"].as_str().unwrap_or_default(),
        clean(key)
    );
    Ok(())
}

/// The latest proposal (`None` when it has none).
async fn latest(client: &Client, key: &str) -> anyhow::Result<Option<Value>> {
    let path = format!("/api/v1/issues/{}/proposals", segment(key));
    let list = client.get(&path).await;
    let list = list.map_err(|e| not_found_as(e, &format!("issue {key}")))?;
    Ok(list.as_array().and_then(|a| a.first()).cloned())
}

/// Prints the latest proposal as a tree: each item under the items it waits on.
pub async fn show(client: &Client, json: bool, key: &str) -> anyhow::Result<()> {
    let Some(proposal) = latest(client, key).await? else {
        anyhow::bail!(
            "{} has no plan proposal; ask for one with `muster issue plan {} --agent NAME`",
            clean(key),
            clean(key)
        );
    };
    if json {
        return print_json(&proposal);
    }
    let items = proposal["items"].as_array().cloned().unwrap_or_default();
    println!(
        "Plan for {} by {} — {} ({} sub-issue{}), proposal {}",
        clean(key),
        clean(proposal["agent"].as_str().unwrap_or("a person")),
        proposal["status"].as_str().unwrap_or_default(),
        items.len(),
        if items.len() == 1 { "" } else { "s" },
        proposal["id"].as_str().unwrap_or_default()
    );
    let summary = proposal["summary"].as_str().unwrap_or_default();
    if !summary.is_empty() {
        println!("{}", indent(summary, "  "));
    }
    for item in &items {
        let text = |k: &str| clean(item[k].as_str().unwrap_or_default());
        let after: Vec<String> = item["blocked_by"]
            .as_array()
            .map(|a| a.iter().filter_map(Value::as_str).map(clean).collect())
            .unwrap_or_default();
        let created = item["created"]
            .as_str()
            .map(|k| format!(" → {}", clean(k)))
            .unwrap_or_default();
        println!(
            "- [{}] {}{}  agent: {}{}",
            text("ref"),
            text("title"),
            created,
            item["agent"]
                .as_str()
                .map_or_else(|| "none".to_owned(), clean),
            if after.is_empty() {
                String::new()
            } else {
                format!("  after: {}", after.join(", "))
            }
        );
        let acceptance = text("acceptance");
        if !acceptance.is_empty() {
            println!("    done when: {acceptance}");
        }
    }
    if proposal["status"] == "pending" {
        println!(
            "Approve it with `muster issue approve {}` (--drop REF, --agent REF=NAME, --file edited.json).",
            clean(key)
        );
    }
    Ok(())
}

/// The pending proposal of `key`, or a clear error.
async fn pending(client: &Client, key: &str) -> anyhow::Result<Value> {
    match latest(client, key).await? {
        Some(p) if p["status"] == "pending" => Ok(p),
        Some(p) => anyhow::bail!(
            "{}'s latest plan proposal is {}: ask for a new one with `muster issue plan {} --agent NAME`",
            clean(key),
            p["status"].as_str().unwrap_or_default(),
            clean(key)
        ),
        None => anyhow::bail!("{} has no plan proposal", clean(key)),
    }
}

/// Approves the pending proposal of `args.key`, as edited by the flags.
pub async fn approve(client: &Client, json: bool, args: &ApproveArgs) -> anyhow::Result<()> {
    let proposal = pending(client, &args.key).await?;
    let mut items: Vec<Value> = match &args.file {
        Some(file) => {
            let text = if file == "-" {
                super::text_arg(file.clone())?
            } else {
                std::fs::read_to_string(file)
                    .map_err(|e| anyhow::anyhow!("cannot read {file}: {e}"))?
            };
            let value: Value = serde_json::from_str(&text)
                .map_err(|e| anyhow::anyhow!("{file} is not JSON: {e}"))?;
            let list = value.get("items").cloned().unwrap_or(value);
            list.as_array().cloned().ok_or_else(|| {
                anyhow::anyhow!(
                    "{file} must hold a JSON list of items (or an object with \"items\")"
                )
            })?
        }
        None => proposal["items"].as_array().cloned().unwrap_or_default(),
    };
    for reference in &args.drop {
        let before = items.len();
        items.retain(|i| i["ref"].as_str() != Some(reference.as_str()));
        anyhow::ensure!(items.len() < before, "no item has the ref {:?}", reference);
        for item in &mut items {
            if let Some(after) = item["blocked_by"].as_array_mut() {
                after.retain(|b| b.as_str() != Some(reference.as_str()));
            }
        }
    }
    for pair in &args.agent {
        let Some((reference, agent)) = pair.split_once('=') else {
            anyhow::bail!("--agent takes REF=AGENT, not {pair:?}");
        };
        let item = items
            .iter_mut()
            .find(|i| i["ref"].as_str() == Some(reference))
            .ok_or_else(|| anyhow::anyhow!("no item has the ref {reference:?}"))?;
        item["agent"] = json!(agent);
    }
    for item in &mut items {
        if let Some(fields) = item.as_object_mut() {
            fields.remove("created");
        }
    }
    let id = proposal["id"].as_str().unwrap_or_default();
    let path = format!("/api/v1/proposals/{}/approve", segment(id));
    let body = json!({ "items": items, "assign": !args.no_assign });
    let approved = client.post(&path, &body).await?;
    if json {
        return print_json(&approved);
    }
    let keys: Vec<String> = approved["issues"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|i| i["key"].as_str())
                .map(clean)
                .collect()
        })
        .unwrap_or_default();
    println!(
        "approved the plan for {}: created {}",
        clean(&args.key),
        keys.join(", ")
    );
    Ok(())
}

/// Discards the pending proposal of `key`.
pub async fn discard(client: &Client, json: bool, key: &str) -> anyhow::Result<()> {
    let proposal = pending(client, key).await?;
    let id = proposal["id"].as_str().unwrap_or_default();
    let path = format!("/api/v1/proposals/{}/discard", segment(id));
    let discarded = client.post(&path, &json!({})).await?;
    if json {
        return print_json(&discarded);
    }
    println!("discarded the plan proposal for {}", clean(key));
    Ok(())
}
