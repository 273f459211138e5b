//! Agent profiles: create, edit, delete, with secret env values sealed before they reach the store and
//! never sent back out.
//!
//! Roles: the runtime fields (kind, command, extra args, env and secrets, base URL, permission mode,
//! egress allow-list and network switch) decide what runs on the server and what it may reach, and the
//! name, model, stall timeout and budgets what it costs and how it is known, so only owners and admins
//! create agents or change those fields (a member may lower a budget); members may edit the rest.
//! Checked here once ([`OWNER_FIELDS`]), for the pages, the API and the CLI alike.

use serde::{Deserialize, Serialize};

use super::{Caller, Error, Problems, Result};
use crate::domain::{Agent, AgentName, Budget, EnvVar, NewAgent, ValidationError};
use crate::engine::Engine;

/// One environment variable as sent in. A secret with no value keeps the stored one.
#[derive(Debug, Clone, Default, Deserialize, Serialize, utoipa::ToSchema)]
pub struct EnvInput {
    /// A variable name (A-Z, a-z, 0-9, `_`, not starting with a digit); an entry with a blank key is
    /// skipped.
    #[schema(pattern = r"^\s*([A-Za-z_][A-Za-z0-9_]*)?\s*$")]
    pub key: String,
    /// For secrets: write-only; omit to keep the stored value.
    pub value: Option<String>,
    #[serde(default)]
    pub secret: bool,
}

/// Raw agent fields. On create, missing fields take defaults; on edit, they stay as they are.
#[derive(Debug, Clone, Default, Deserialize, utoipa::ToSchema)]
pub struct AgentInput {
    /// 1 to 64 letters, digits, `-`, `_` and `.` (owners and admins).
    #[schema(pattern = r"^\s*[A-Za-z0-9._-]{1,64}\s*$")]
    pub name: Option<String>,
    /// `#rrggbb`.
    #[schema(pattern = r"^\s*#[0-9A-Fa-f]{6}\s*$")]
    pub color: Option<String>,
    /// claude, codex, opencode, llama, custom (owners and admins).
    #[schema(value_type = Option<crate::domain::RuntimeKindSchema>)]
    pub kind: Option<String>,
    /// The model the CLI is asked for (owners and admins).
    pub model: Option<String>,
    pub instructions: Option<String>,
    /// The agent's environment (owners and admins).
    pub env: Option<Vec<EnvInput>>,
    /// Extra CLI arguments (owners and admins).
    pub extra_args: Option<Vec<String>>,
    /// read_only, workspace_write, bypass (owners and admins).
    #[schema(value_type = Option<crate::domain::PermissionModeSchema>)]
    pub permission_mode: Option<String>,
    /// Runs of this agent at once.
    #[serde(default, deserialize_with = "crate::domain::serde_util::whole_number")]
    #[schema(minimum = 1, maximum = 32)]
    pub max_concurrent_runs: Option<i32>,
    /// Seconds without output before a run is flagged stalled (owners and admins).
    #[serde(default, deserialize_with = "crate::domain::serde_util::whole_number")]
    #[schema(minimum = 10, maximum = 86400)]
    pub stall_timeout_secs: Option<i32>,
    /// Automatic retries of a run that failed for a retryable reason.
    #[serde(default, deserialize_with = "crate::domain::serde_util::whole_number")]
    #[schema(minimum = 0, maximum = 10)]
    pub max_retries: Option<i32>,
    /// Per-run budget in USD; 0 or absent for none (members may only lower it).
    #[schema(minimum = 0)]
    pub budget_usd: Option<f64>,
    /// Per-run token budget; 0 or absent for none (members may only lower it).
    #[serde(default, deserialize_with = "crate::domain::serde_util::whole_number")]
    #[schema(minimum = 0)]
    pub budget_tokens: Option<i64>,
    /// The command line of a `custom` agent (owners and admins).
    pub command: Option<String>,
    /// A model server URL (local Llama, or a provider proxy for a CLI; owners and admins).
    pub base_url: Option<String>,
    /// The runners this agent's runs may go to, by name; empty for any runner that has its runtime
    /// (owners and admins).
    #[schema(value_type = Option<Vec<String>>)]
    pub runners: Option<Vec<String>>,
    /// Hosts its runs may reach through the egress proxy: `github.com`, `*.npmjs.org` (subdomains),
    /// an IP address, each optionally with `:port` (without one: 443 and 80). Its model endpoint and the
    /// workspace's default list are allowed besides (owners and admins).
    pub egress_hosts: Option<Vec<String>>,
    /// No network: its runs reach only their model endpoint and Muster, not even the workspace's default
    /// list (owners and admins).
    pub no_network: Option<bool>,
}

fn text(v: &Option<String>) -> Option<Option<String>> {
    v.as_ref()
        .map(|s| Some(s.trim().to_owned()).filter(|s| !s.is_empty()))
}

/// Applies `input` over `base` (defaults for a new agent), validating every field: the 422 lists every
/// problem at once, together with those the caller found before (`earlier`, e.g. a form's number that
/// did not parse), so a person fixes them all in one round trip.
pub fn build_profile(
    state: &Engine,
    base: Option<&NewAgent>,
    input: &AgentInput,
    earlier: Problems,
) -> Result<NewAgent> {
    let mut p = earlier;
    let name = match (&input.name, base) {
        (Some(n), _) => p.take(AgentName::parse(n)),
        (None, Some(b)) => Some(b.name.clone()),
        (None, None) => p.take(Err(ValidationError::new("name", "must not be empty"))),
    };
    let kind = match (&input.kind, base) {
        (Some(k), _) => p.take(k.parse().map_err(ValidationError::from)),
        (None, Some(b)) => Some(b.kind),
        (None, None) => p.take(Err(ValidationError::new(
            "kind",
            "choose claude, codex, opencode, llama or custom",
        ))),
    };
    // A bad name or kind does not stop the other checks: they run on a stand-in and the 422 lists all.
    let kind_known = kind.is_some();
    let mut out = base.cloned().unwrap_or_default();
    if let Some(name) = name {
        out.name = name;
    }
    if let Some(kind) = kind {
        out.kind = kind;
    }
    if let Some(c) = &input.color {
        out.color = c.trim().to_lowercase();
    }
    if let Some(m) = text(&input.model) {
        out.model = m;
    }
    if let Some(i) = &input.instructions {
        out.instructions = i.clone();
    }
    if let Some(mode) = &input.permission_mode {
        out.permission_mode = p
            .take(mode.parse().map_err(ValidationError::from))
            .unwrap_or(out.permission_mode);
    }
    out.max_concurrent_runs = input.max_concurrent_runs.unwrap_or(out.max_concurrent_runs);
    out.stall_timeout_secs = input.stall_timeout_secs.unwrap_or(out.stall_timeout_secs);
    out.max_retries = input.max_retries.unwrap_or(out.max_retries);
    if let Some(usd) = input.budget_usd {
        out.budget.usd = (usd != 0.0).then_some(usd);
    }
    if let Some(tokens) = input.budget_tokens {
        out.budget.tokens = (tokens != 0).then_some(tokens);
    }
    if let Some(args) = &input.extra_args {
        out.extra_args = args
            .iter()
            .map(|a| a.trim().to_owned())
            .filter(|a| !a.is_empty())
            .collect();
    }
    if let Some(c) = text(&input.command) {
        out.command = c;
    }
    if let Some(url) = text(&input.base_url) {
        if url
            .as_deref()
            .is_some_and(|u| !(u.starts_with("http://") || u.starts_with("https://")))
        {
            p.add("base_url", "must start with http:// or https://");
        }
        out.base_url = url;
    }
    if let Some(runners) = &input.runners {
        // Names are not trimmed by the domain (a name with spaces is refused); the list is, so a form's
        // "gpu, mac" means two names. Each is checked by `NewAgent::validate` below.
        out.runners = runners
            .iter()
            .map(|r| r.trim().to_owned())
            .filter(|r| !r.is_empty())
            .collect();
    }
    if let Some(hosts) = &input.egress_hosts {
        match crate::domain::parse_host_list("egress_hosts", hosts) {
            Ok(hosts) => out.egress_hosts = hosts,
            Err(errors) => {
                for e in errors {
                    p.add(e.field, e.message);
                }
            }
        }
    }
    if let Some(off) = input.no_network {
        out.no_network = off;
    }
    if let Some(env) = &input.env {
        out.env = env_vars(
            state,
            base.map(|b| b.env.as_slice()).unwrap_or_default(),
            env,
            &mut p,
        );
    }
    if base.is_some_and(|b| repointed(b, &out)) {
        // A secret was given for one destination; it does not follow the agent to another one.
        out.env
            .retain(|v| !v.secret || re_entered(input.env.as_deref(), &v.key));
    }
    if let Err(errors) = out.validate() {
        for e in errors {
            // The stand-in kind's own rules (a custom agent's command) say nothing about the input.
            if kind_known || e.field != "command" {
                p.add(e.field, e.message);
            }
        }
    }
    if let Some(problem) = out.model_problem() {
        p.add("model", problem);
    }
    p.finish()?;
    Ok(out)
}

fn env_vars(state: &Engine, old: &[EnvVar], input: &[EnvInput], p: &mut Problems) -> Vec<EnvVar> {
    let mut out: Vec<EnvVar> = Vec::new();
    for var in input.iter().filter(|v| !v.key.trim().is_empty()) {
        let key = var.key.trim().to_owned();
        if out.iter().any(|v| v.key == key) {
            p.add("env", format!("{key} is set twice"));
            continue;
        }
        let value = var.value.clone().filter(|v| !(var.secret && v.is_empty()));
        let value = match (var.secret, value) {
            (false, value) => value.unwrap_or_default(),
            (true, Some(plain)) => match state.secrets.seal(&plain) {
                Ok(sealed) => sealed,
                Err(e) => {
                    tracing::error!(error = %e, "cannot seal a secret");
                    p.add("env", "cannot store the secret");
                    continue;
                }
            },
            (true, None) => match old.iter().find(|o| o.key == key && o.secret) {
                Some(o) => o.value.clone(),
                None => {
                    p.add("env", format!("{key} is secret and needs a value"));
                    continue;
                }
            },
        };
        out.push(EnvVar {
            key,
            value,
            secret: var.secret,
        });
    }
    out
}

/// Whether the agent now runs something else or talks to another server: a new kind, command or base URL.
fn repointed(old: &NewAgent, new: &NewAgent) -> bool {
    old.kind != new.kind || old.command != new.command || old.base_url != new.base_url
}

/// Whether this request gives `key` a new secret value.
fn re_entered(input: Option<&[EnvInput]>, key: &str) -> bool {
    input.unwrap_or_default().iter().any(|v| {
        v.secret && v.key.trim() == key && v.value.as_deref().is_some_and(|v| !v.is_empty())
    })
}

/// The fields only owners and admins set, and what the 403 says about each: those that decide what runs
/// on the server (kind, command, arguments, environment, base URL, permission mode, runners) and those
/// that decide what it may cost or how it is known (name, model, stall timeout). Members may change
/// everything else (colour, instructions, limits, skills) and may lower a budget, never raise or remove
/// one.
const OWNER_FIELDS: &[(&str, &str)] = &[
    ("kind", "only owners and admins may change the runtime kind"),
    ("command", "only owners and admins may change the command"),
    (
        "extra_args",
        "only owners and admins may change the extra arguments",
    ),
    (
        "env",
        "only owners and admins may change the environment and its secrets",
    ),
    ("base_url", "only owners and admins may change the base URL"),
    (
        "permission_mode",
        "only owners and admins may change the permission mode",
    ),
    (
        "runners",
        "only owners and admins may change the runners it runs on",
    ),
    ("name", "only owners and admins may change the name"),
    ("model", "only owners and admins may change the model"),
    (
        "stall_timeout_secs",
        "only owners and admins may change the stall timeout",
    ),
    (
        "egress_hosts",
        "only owners and admins may change the hosts it may reach",
    ),
    (
        "no_network",
        "only owners and admins may change its network switch",
    ),
    (
        "budget_usd",
        "only owners and admins may raise or remove the budget; a member may only lower it",
    ),
    (
        "budget_tokens",
        "only owners and admins may raise or remove the token budget; a member may only lower it",
    ),
];

/// Whether a per-run limit went up or went away: `None` is no limit, above any number.
fn raised<T: PartialOrd>(old: Option<T>, new: Option<T>) -> bool {
    match (old, new) {
        (Some(_), None) => true,
        (Some(o), Some(n)) => n > o,
        (None, _) => false,
    }
}

/// The owners' and admins' fields that `new` changes from `old` (a budget only when raised or removed).
fn owner_changes(old: &NewAgent, new: &NewAgent) -> Vec<&'static str> {
    let changed = |field: &str| match field {
        "kind" => old.kind != new.kind,
        "command" => old.command != new.command,
        "extra_args" => old.extra_args != new.extra_args,
        "env" => old.env != new.env,
        "base_url" => old.base_url != new.base_url,
        "runners" => old.runners != new.runners,
        "permission_mode" => old.permission_mode != new.permission_mode,
        "name" => old.name != new.name,
        "model" => old.model != new.model,
        "stall_timeout_secs" => old.stall_timeout_secs != new.stall_timeout_secs,
        "egress_hosts" => old.egress_hosts != new.egress_hosts,
        "no_network" => old.no_network != new.no_network,
        "budget_usd" => raised(old.budget.usd, new.budget.usd),
        _ => raised(old.budget.tokens, new.budget.tokens),
    };
    OWNER_FIELDS
        .iter()
        .map(|(field, _)| *field)
        .filter(|f| changed(f))
        .collect()
}

/// Refuses a change of owners' fields by anyone but an owner or admin, naming each field.
fn check_owner_changes(
    caller: &Caller,
    input: &AgentInput,
    old: &NewAgent,
    new: &NewAgent,
) -> Result<()> {
    if may_manage_runtime(caller) {
        return Ok(());
    }
    let mut changed = owner_changes(old, new);
    if input.env.is_none() {
        // Secrets dropped by a new kind, command or base URL are a consequence, not the request.
        changed.retain(|f| *f != "env");
    }
    if changed.is_empty() {
        return Ok(());
    }
    Err(Error::not_allowed(changed.into_iter().map(|field| {
        let message = OWNER_FIELDS
            .iter()
            .find_map(|(f, message)| (*f == field).then_some(*message))
            .unwrap_or("only owners and admins may change this");
        (field, message.to_owned())
    })))
}

/// Whether `caller` may change an agent's owners' fields ([`OWNER_FIELDS`]; the form shows them
/// read-only otherwise).
pub fn may_manage_runtime(caller: &Caller) -> bool {
    caller.run.is_none() && caller.role.can_manage()
}

/// Creates an agent: owners and admins only, since every new agent decides what runs on the server.
pub async fn create(state: &Engine, caller: &Caller, input: &AgentInput) -> Result<Agent> {
    create_checked(state, caller, input, Problems::default()).await
}

/// [`create`], with problems the caller already found in its raw input reported in the same 422.
pub async fn create_checked(
    state: &Engine,
    caller: &Caller,
    input: &AgentInput,
    earlier: Problems,
) -> Result<Agent> {
    if let Some(scope) = &caller.run {
        return Err(scope.refusal());
    }
    if !caller.role.can_manage() {
        return Err(Error::not_allowed([(
            "role",
            "only owners and admins may create agents".to_owned(),
        )]));
    }
    let profile = build_profile(state, None, input, earlier)?;
    let defaults: Vec<crate::domain::Slug> = DEFAULT_SKILLS
        .iter()
        .filter_map(|raw| crate::domain::Slug::parse(raw).ok())
        .collect();
    Ok(state
        .store
        .create_agent_with_skills(caller.ws.id, &profile, &defaults)
        .await?)
}

/// Finds an agent by name in the caller's workspace.
pub async fn by_name(state: &Engine, caller: &Caller, name: &str) -> Result<Agent> {
    let name = AgentName::parse(name).map_err(|_| Error::NotFound)?;
    Ok(state.store.get_agent_by_name(caller.ws.id, &name).await?)
}

/// Edits an agent; absent fields stay, absent secret values stay, except that a new kind, command or base
/// URL drops the secrets not entered again. Members may not change the owners' fields (403 per field).
pub async fn update(
    state: &Engine,
    caller: &Caller,
    name: &str,
    input: &AgentInput,
) -> Result<Agent> {
    update_checked(state, caller, name, input, Problems::default()).await
}

/// [`update`], with problems the caller already found in its raw input reported in the same 422.
pub async fn update_checked(
    state: &Engine,
    caller: &Caller,
    name: &str,
    input: &AgentInput,
    earlier: Problems,
) -> Result<Agent> {
    let agent = by_name(state, caller, name).await?;
    let profile = build_profile(state, Some(&agent.profile), input, earlier)?;
    check_owner_changes(caller, input, &agent.profile, &profile)?;
    Ok(state
        .store
        .update_agent(caller.ws.id, agent.id, &profile)
        .await?)
}

/// The built-in skills every new agent starts with, those the workspace has (a person may detach them):
/// `report-to-the-board` says how to comment and move the issue, which every run should do.
pub const DEFAULT_SKILLS: &[&str] = &["report-to-the-board"];

/// Deletes an agent: owners and admins only; refused while it has runs.
pub async fn delete(state: &Engine, caller: &Caller, name: &str) -> Result<()> {
    caller.require_manager()?;
    let agent = by_name(state, caller, name).await?;
    match state.store.delete_agent(caller.ws.id, agent.id).await {
        Err(crate::store::Error::Conflict { constraint }) if constraint == "foreign_key" => {
            Err(Error::conflict(
                "name",
                "this agent has runs; its history is kept, so it cannot be deleted",
            ))
        }
        other => Ok(other?),
    }
}

/// An agent as a run's token sees it: enough to name, mention or assign it, nothing of how it runs (no
/// instructions, model, command, arguments, environment, base URL or limits).
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct AgentNameView {
    pub id: uuid::Uuid,
    pub name: String,
    pub color: String,
}

impl From<&Agent> for AgentNameView {
    fn from(a: &Agent) -> Self {
        AgentNameView {
            id: a.id.0,
            name: a.profile.name.as_str().to_owned(),
            color: a.profile.color.clone(),
        }
    }
}

/// An agent as the API shows it: secret values are never included.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct AgentView {
    pub id: uuid::Uuid,
    pub name: String,
    pub color: String,
    pub kind: String,
    pub model: Option<String>,
    pub instructions: String,
    pub env: Vec<EnvInput>,
    pub extra_args: Vec<String>,
    pub permission_mode: String,
    pub max_concurrent_runs: i32,
    pub stall_timeout_secs: i32,
    pub max_retries: i32,
    pub budget_usd: Option<f64>,
    pub budget_tokens: Option<i64>,
    pub command: Option<String>,
    pub base_url: Option<String>,
    /// The runners its runs may go to; empty for any.
    pub runners: Vec<String>,
    /// Hosts its runs may reach through the egress proxy (besides its model endpoint and the
    /// workspace's default list).
    pub egress_hosts: Vec<String>,
    /// Its runs reach only their model endpoint and Muster.
    pub no_network: bool,
    pub created_at: chrono::DateTime<chrono::Utc>,
    pub updated_at: chrono::DateTime<chrono::Utc>,
}

impl From<&Agent> for AgentView {
    fn from(a: &Agent) -> Self {
        let p = &a.profile;
        let Budget { usd, tokens } = p.budget;
        AgentView {
            id: a.id.0,
            name: p.name.as_str().to_owned(),
            color: p.color.clone(),
            kind: p.kind.to_string(),
            model: p.model.clone(),
            instructions: p.instructions.clone(),
            env: p
                .env
                .iter()
                .map(|v| EnvInput {
                    key: v.key.clone(),
                    value: (!v.secret).then(|| v.value.clone()),
                    secret: v.secret,
                })
                .collect(),
            extra_args: p.extra_args.clone(),
            permission_mode: p.permission_mode.to_string(),
            max_concurrent_runs: p.max_concurrent_runs,
            stall_timeout_secs: p.stall_timeout_secs,
            max_retries: p.max_retries,
            budget_usd: usd,
            budget_tokens: tokens,
            command: p.command.clone(),
            // Never with credentials: the owners' and admins' edit form is the only place they show.
            base_url: p
                .base_url
                .as_deref()
                .map(crate::redact::without_credentials),
            runners: p.runners.clone(),
            egress_hosts: p
                .egress_hosts
                .iter()
                .map(|h| h.as_str().to_owned())
                .collect(),
            no_network: p.no_network,
            created_at: a.created_at,
            updated_at: a.updated_at,
        }
    }
}
