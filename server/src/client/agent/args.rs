//! The flags of `muster agent …` (clap derive; none reads the environment).

use clap::builder::{PossibleValue, PossibleValuesParser, TypedValueParser as _};
use clap::{Args, Subcommand};
use muster_agents::RuntimeKind;

/// What to do with agents.
#[derive(Debug, Subcommand)]
pub enum AgentCommand {
    /// List agents: NAME, KIND, MODEL, PERMISSION, RUNNING and QUEUED (its runs now), MAX RUNS (how many
    /// may run at once).
    List,
    /// Show an agent's profile (secret values are never shown).
    Show {
        /// Agent name.
        name: String,
    },
    /// Create an agent.
    Create(CreateArgs),
    /// Change an agent; only the flags given change, and env variables are merged into the existing ones.
    Edit(EditArgs),
    /// Delete an agent (owners and admins; refused while it has runs, whose history is kept).
    Delete {
        /// Agent name.
        name: String,
    },
}

/// `--kind`: one of the agents crate's runtime kinds, each listed in `--help` with its label.
fn kind_parser() -> impl clap::builder::TypedValueParser<Value = RuntimeKind> {
    let values = RuntimeKind::ALL.map(|k| PossibleValue::new(k.as_str()).help(k.label()));
    PossibleValuesParser::new(values).try_map(|name| name.parse::<RuntimeKind>())
}

/// A `KEY=VALUE` pair from `--env` or `--secret`.
#[derive(Clone, PartialEq, Eq)]
pub struct EnvPair {
    /// The variable name.
    pub key: String,
    /// Its value.
    pub value: String,
}

impl std::fmt::Debug for EnvPair {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}=[redacted]", self.key)
    }
}

/// Parses `KEY=VALUE` where KEY is a shell variable name (letters, digits, `_`, not starting with a digit).
pub fn parse_env_pair(raw: &str) -> Result<EnvPair, String> {
    let Some((key, value)) = raw.split_once('=') else {
        return Err("expected KEY=VALUE (e.g. RUST_LOG=debug): there is no '='".to_owned());
    };
    let key = key.trim();
    let valid = key
        .chars()
        .enumerate()
        .all(|(i, c)| c == '_' || c.is_ascii_alphabetic() || (i > 0 && c.is_ascii_digit()));
    if key.is_empty() || !valid {
        return Err(format!(
            "expected KEY=VALUE with KEY made of letters, digits and '_', not starting with a digit (got key {key:?})"
        ));
    }
    Ok(EnvPair {
        key: key.to_owned(),
        value: value.to_owned(),
    })
}

/// Profile flags shared by `create` and `edit`; all optional.
#[derive(Debug, Args)]
pub struct ProfileArgs {
    /// Model name passed to the CLI (e.g. sonnet, gpt-5); owners and admins only.
    #[arg(long)]
    pub model: Option<String>,
    /// An environment variable for runs, KEY=VALUE; repeat for several.
    #[arg(long, value_name = "KEY=VALUE", value_parser = parse_env_pair)]
    pub env: Vec<EnvPair>,
    /// A secret environment variable, KEY=VALUE: stored sealed, never shown again; repeat for several.
    #[arg(long, value_name = "KEY=VALUE", value_parser = parse_env_pair)]
    pub secret: Vec<EnvPair>,
    /// A model server URL (a local Llama, or a provider proxy for a CLI).
    #[arg(long)]
    pub base_url: Option<String>,
    /// Standing instructions added to every prompt, or - to read them from standard input.
    #[arg(long)]
    pub instructions: Option<String>,
    /// The command line of a `custom` agent.
    #[arg(long)]
    pub command: Option<String>,
    /// read_only, workspace_write or bypass.
    #[arg(long)]
    pub permission_mode: Option<String>,
    /// How many runs of this agent may go at once.
    #[arg(long)]
    pub max_concurrent_runs: Option<i32>,
    /// Seconds without output before a run is marked stalled; owners and admins only.
    #[arg(long, value_name = "SECS")]
    pub stall_timeout: Option<i32>,
    /// Per-run budget in USD; 0 for none. Members may only lower it.
    #[arg(long, value_name = "USD")]
    pub budget_usd: Option<f64>,
    /// Per-run token budget; 0 for none. Members may only lower it.
    #[arg(long, value_name = "N")]
    pub budget_tokens: Option<i64>,
    /// An extra argument for the CLI; repeat for several (replaces the existing ones on edit).
    #[arg(long = "arg", value_name = "ARG", allow_hyphen_values = true)]
    pub args: Vec<String>,
    /// Colour on the board, #rrggbb.
    #[arg(long)]
    pub color: Option<String>,
    /// A runner this agent's runs may go to, by name; repeat for several (replaces the existing ones on
    /// edit). Without any, runs go to any runner that has the agent's CLI.
    #[arg(long = "runner", value_name = "NAME")]
    pub runners: Vec<String>,
    /// A host its runs may reach through the egress proxy (github.com, *.npmjs.org, host:port); repeat
    /// for several (replaces the existing ones on edit). Its model endpoint is always allowed.
    #[arg(long = "egress-host", value_name = "PATTERN")]
    pub egress_hosts: Vec<String>,
    /// Clears the agent's egress allow-list (the workspace's default list still applies).
    #[arg(long, conflicts_with = "egress_hosts")]
    pub clear_egress_hosts: bool,
    /// No network: its runs reach only their model endpoint and Muster.
    #[arg(long, conflicts_with = "network")]
    pub no_network: bool,
    /// Turns the "no network" switch off again.
    #[arg(long)]
    pub network: bool,
}

/// `muster agent create` flags.
#[derive(Debug, Args)]
pub struct CreateArgs {
    /// Name, unique in the workspace: letters, digits, '-', '_' and '.'.
    #[arg(long)]
    pub name: String,
    /// Which runtime the agent runs on.
    #[arg(long, value_parser = kind_parser())]
    pub kind: RuntimeKind,
    #[command(flatten)]
    pub profile: ProfileArgs,
}

/// `muster agent edit` flags.
#[derive(Debug, Args)]
pub struct EditArgs {
    /// The agent to change.
    pub name: String,
    /// A new name; owners and admins only.
    #[arg(long, value_name = "NAME")]
    pub rename: Option<String>,
    /// A new runtime.
    #[arg(long, value_parser = kind_parser())]
    pub kind: Option<RuntimeKind>,
    /// Removes an environment variable (plain or secret); repeat for several.
    #[arg(long, value_name = "KEY")]
    pub unset_env: Vec<String>,
    /// Drops the runner binding: runs go to any runner that has the agent's CLI.
    #[arg(long, conflicts_with = "runners")]
    pub any_runner: bool,
    #[command(flatten)]
    pub profile: ProfileArgs,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn env_pairs_need_a_key_and_an_equals_sign() {
        assert_eq!(parse_env_pair("A_1=x=y").unwrap().value, "x=y");
        assert_eq!(parse_env_pair("EMPTY=").unwrap().value, "");
        assert!(parse_env_pair("NOVALUE").unwrap_err().contains("no '='"));
        assert!(parse_env_pair("=x").unwrap_err().contains("got key \"\""));
        assert!(parse_env_pair("1A=x").is_err());
        assert!(!format!("{:?}", parse_env_pair("K=hunter2").unwrap()).contains("hunter2"));
    }
}
