//! `muster agent …`: list, show, create and edit agent profiles through the API.
//!
//! The API's PATCH replaces `env` as a whole, so `agent edit` first fetches the agent and merges: the
//! variables it has stay, `--env`/`--secret` add or replace, `--unset-env` removes, and stored secrets are
//! sent back without a value, which tells the server to keep the sealed one. Secret values are never
//! printed (the server never sends them back anyway).

mod args;

use muster_agents::RuntimeKind;
use serde::{Deserialize, Serialize};
use serde_json::Value;

pub use args::{AgentCommand, CreateArgs, EditArgs, EnvPair, ProfileArgs, parse_env_pair};

use super::output::{clean, indent, print_json, table};
use super::{Client, Remote, not_found_as, segment, shape, text_arg};

/// One env entry as the API takes and gives it; a secret without value keeps the stored one.
#[derive(Clone, Serialize, Deserialize)]
struct EnvEntry {
    key: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    value: Option<String>,
    #[serde(default)]
    secret: bool,
}

/// The JSON body of a create or an edit (`AgentInput` on the server). No `Debug`: it may hold secrets.
#[derive(Default, Serialize)]
struct AgentBody {
    #[serde(skip_serializing_if = "Option::is_none")]
    name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    kind: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    color: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    model: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    instructions: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    env: Option<Vec<EnvEntry>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    extra_args: Option<Vec<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    permission_mode: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_concurrent_runs: Option<i32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    stall_timeout_secs: Option<i32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    budget_usd: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    budget_tokens: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    command: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    base_url: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    runners: Option<Vec<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    egress_hosts: Option<Vec<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    no_network: Option<bool>,
}

impl AgentBody {
    /// Every profile flag except env, which create and edit treat differently.
    fn from_profile(p: &ProfileArgs) -> anyhow::Result<Self> {
        Ok(AgentBody {
            color: p.color.clone(),
            model: p.model.clone(),
            instructions: p.instructions.clone().map(text_arg).transpose()?,
            extra_args: (!p.args.is_empty()).then(|| p.args.clone()),
            permission_mode: p.permission_mode.clone(),
            max_concurrent_runs: p.max_concurrent_runs,
            stall_timeout_secs: p.stall_timeout,
            budget_usd: p.budget_usd,
            budget_tokens: p.budget_tokens,
            command: p.command.clone(),
            base_url: p.base_url.clone(),
            runners: (!p.runners.is_empty()).then(|| p.runners.clone()),
            egress_hosts: if p.clear_egress_hosts {
                Some(Vec::new())
            } else {
                (!p.egress_hosts.is_empty()).then(|| p.egress_hosts.clone())
            },
            no_network: (p.no_network || p.network).then_some(p.no_network),
            ..AgentBody::default()
        })
    }
}

/// The fields `agent show` and `agent list` print.
#[derive(Deserialize)]
struct Agent {
    name: String,
    kind: String,
    model: Option<String>,
    instructions: String,
    env: Vec<EnvEntry>,
    extra_args: Vec<String>,
    permission_mode: String,
    max_concurrent_runs: i32,
    stall_timeout_secs: i32,
    budget_usd: Option<f64>,
    budget_tokens: Option<i64>,
    command: Option<String>,
    base_url: Option<String>,
    /// Absent from servers older than runner binding.
    #[serde(default)]
    runners: Vec<String>,
    /// Absent from servers older than the egress proxy.
    #[serde(default)]
    egress_hosts: Vec<String>,
    #[serde(default)]
    no_network: bool,
}

/// Runs an agent command.
pub async fn run(remote: &Remote, command: AgentCommand) -> anyhow::Result<()> {
    let client = remote.connect()?;
    let json = remote.json;
    match command {
        AgentCommand::List => list(&client, json).await,
        AgentCommand::Show { name } => {
            let agent = fetch(&client, &name).await?;
            if json {
                print_json(&agent)
            } else {
                show(&shape(&agent)?)
            }
        }
        AgentCommand::Create(args) => {
            let mut body = AgentBody::from_profile(&args.profile)?;
            body.name = Some(args.name);
            body.kind = Some(args.kind.as_str());
            let env = merge_env(&[], &args.profile.env, &args.profile.secret, &[]);
            body.env = (!env.is_empty()).then_some(env);
            let agent = client.post("/api/v1/agents", &body).await?;
            let created: Agent = shape(&agent)?;
            if json {
                print_json(&agent)
            } else {
                println!("created agent {}", clean(&created.name));
                Ok(())
            }
        }
        AgentCommand::Edit(args) => edit(&client, json, args).await,
        AgentCommand::Delete { name } => {
            let path = format!("/api/v1/agents/{}", segment(&name));
            client
                .delete(&path)
                .await
                .map_err(|e| not_found_as(e, &format!("agent {name}")))?;
            if json {
                print_json(&serde_json::json!({ "deleted": name }))
            } else {
                println!("deleted agent {}", clean(&name));
                Ok(())
            }
        }
    }
}

async fn fetch(client: &Client, name: &str) -> anyhow::Result<Value> {
    let agent = client
        .get(&format!("/api/v1/agents/{}", segment(name)))
        .await;
    agent.map_err(|e| not_found_as(e, &format!("agent {name:?}")))
}

async fn list(client: &Client, json: bool) -> anyhow::Result<()> {
    let agents = client.get("/api/v1/agents").await?;
    if json {
        return print_json(&agents);
    }
    let agents: Vec<Agent> = shape(&agents)?;
    let live = live_runs(client).await?;
    let rows: Vec<Vec<String>> = agents
        .into_iter()
        .map(|a| {
            let model = a.model.unwrap_or_else(|| "-".to_owned());
            let (running, queued) = live.get(&a.name).copied().unwrap_or((0, 0));
            vec![
                a.name,
                a.kind,
                model,
                a.permission_mode,
                running.to_string(),
                queued.to_string(),
                a.max_concurrent_runs.to_string(),
            ]
        })
        .collect();
    let headers = [
        "NAME",
        "KIND",
        "MODEL",
        "PERMISSION",
        "RUNNING",
        "QUEUED",
        "MAX RUNS",
    ];
    print!("{}", table(&headers, &rows));
    Ok(())
}

/// Runs of each agent (by name) now running (claimed or running) and waiting (queued).
async fn live_runs(
    client: &Client,
) -> anyhow::Result<std::collections::HashMap<String, (usize, usize)>> {
    #[derive(Deserialize)]
    struct Run {
        agent: String,
        status: String,
    }
    let runs = client
        .get("/api/v1/runs?status=queued,claimed,running&limit=500")
        .await?;
    let runs: Vec<Run> = shape(&runs)?;
    let mut counts = std::collections::HashMap::new();
    for run in runs {
        let entry: &mut (usize, usize) = counts.entry(run.agent).or_default();
        if run.status == "queued" {
            entry.1 += 1;
        } else {
            entry.0 += 1;
        }
    }
    Ok(counts)
}

fn show(a: &Agent) -> anyhow::Result<()> {
    let or_dash = |v: &Option<String>| v.as_deref().map_or_else(|| "-".to_owned(), clean);
    let budget = match (a.budget_usd, a.budget_tokens) {
        (None, None) => "none".to_owned(),
        (usd, tokens) => [
            usd.map(|u| format!("${u:.2}")),
            tokens.map(|t| format!("{t} tokens")),
        ]
        .into_iter()
        .flatten()
        .collect::<Vec<_>>()
        .join(", "),
    };
    println!("name:                {}", clean(&a.name));
    println!("kind:                {}", a.kind);
    println!("model:               {}", or_dash(&a.model));
    println!("permission mode:     {}", a.permission_mode);
    println!("max concurrent runs: {}", a.max_concurrent_runs);
    println!("stall timeout:       {}s", a.stall_timeout_secs);
    println!("budget per run:      {budget}");
    println!("base url:            {}", or_dash(&a.base_url));
    println!("command:             {}", or_dash(&a.command));
    println!(
        "runs on:             {}",
        if a.runners.is_empty() {
            "any runner".to_owned()
        } else {
            clean(&a.runners.join(", "))
        }
    );
    println!(
        "egress:              {}",
        if a.no_network {
            "no network (its model endpoint only)".to_owned()
        } else if a.egress_hosts.is_empty() {
            "its model endpoint and the workspace's default list".to_owned()
        } else {
            format!(
                "{} (besides its model endpoint and the workspace's default list)",
                clean(&a.egress_hosts.join(", "))
            )
        }
    );
    println!(
        "extra args:          {}",
        if a.extra_args.is_empty() {
            "-".to_owned()
        } else {
            clean(&a.extra_args.join(" "))
        }
    );
    println!("env:");
    for e in &a.env {
        match (&e.value, e.secret) {
            (_, true) => println!("  {}=<secret>", clean(&e.key)),
            (v, false) => println!("  {}={}", clean(&e.key), clean(v.as_deref().unwrap_or(""))),
        }
    }
    if !a.instructions.trim().is_empty() {
        println!("instructions:\n{}", indent(&a.instructions, "  "));
    }
    Ok(())
}

/// `current` (secrets without value, so the server keeps them), minus `unset`, plus the given pairs.
fn merge_env(
    current: &[EnvEntry],
    env: &[EnvPair],
    secrets: &[EnvPair],
    unset: &[String],
) -> Vec<EnvEntry> {
    let mut out: Vec<EnvEntry> = current
        .iter()
        .filter(|e| !unset.contains(&e.key))
        .map(|e| EnvEntry {
            key: e.key.clone(),
            value: if e.secret { None } else { e.value.clone() },
            secret: e.secret,
        })
        .collect();
    let given = env
        .iter()
        .map(|p| (p, false))
        .chain(secrets.iter().map(|p| (p, true)));
    for (pair, secret) in given {
        let entry = EnvEntry {
            key: pair.key.clone(),
            value: Some(pair.value.clone()),
            secret,
        };
        match out.iter_mut().find(|e| e.key == pair.key) {
            Some(existing) => *existing = entry,
            None => out.push(entry),
        }
    }
    out
}

async fn edit(client: &Client, json: bool, args: EditArgs) -> anyhow::Result<()> {
    let mut body = AgentBody::from_profile(&args.profile)?;
    body.name = args.rename;
    if args.any_runner {
        body.runners = Some(Vec::new());
    }
    body.kind = args.kind.map(RuntimeKind::as_str);
    let p = &args.profile;
    if !(p.env.is_empty() && p.secret.is_empty() && args.unset_env.is_empty()) {
        let current: Agent = shape(&fetch(client, &args.name).await?)?;
        if let Some(missing) = args
            .unset_env
            .iter()
            .find(|k| !current.env.iter().any(|e| &e.key == *k))
        {
            anyhow::bail!(
                "--unset-env {missing}: agent {} has no such variable",
                args.name
            );
        }
        body.env = Some(merge_env(&current.env, &p.env, &p.secret, &args.unset_env));
    }
    let nothing = serde_json::to_value(&body)?
        .as_object()
        .is_some_and(serde_json::Map::is_empty);
    anyhow::ensure!(
        !nothing,
        "nothing to change: give at least one flag (see `muster agent edit --help`)"
    );
    let path = format!("/api/v1/agents/{}", segment(&args.name));
    let agent = client.patch(&path, &body).await;
    let agent = agent.map_err(|e| not_found_as(e, &format!("agent {:?}", args.name)))?;
    let edited: Agent = shape(&agent)?;
    if json {
        print_json(&agent)
    } else {
        println!("updated agent {}", clean(&edited.name));
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn edits_merge_env_and_keep_secrets_valueless() {
        let current = vec![
            EnvEntry {
                key: "A".into(),
                value: Some("1".into()),
                secret: false,
            },
            EnvEntry {
                key: "S".into(),
                value: None,
                secret: true,
            },
            EnvEntry {
                key: "GONE".into(),
                value: Some("x".into()),
                secret: false,
            },
        ];
        let env = [
            parse_env_pair("A=2").unwrap(),
            parse_env_pair("B=3").unwrap(),
        ];
        let out = merge_env(&current, &env, &[], &["GONE".to_owned()]);
        let text = serde_json::to_string(&out).unwrap();
        assert_eq!(
            text,
            r#"[{"key":"A","value":"2","secret":false},{"key":"S","secret":true},{"key":"B","value":"3","secret":false}]"#
        );
    }
}
