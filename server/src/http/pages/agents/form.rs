//! The agent form as sent: read once into [`AgentForm`], turned into the [`AgentInput`] the JSON API
//! deserializes, and kept to re-render what was typed when the service refuses it.

use serde::Deserialize;

use super::Keeper;
use crate::http::form::{Amount, Lenient};
use crate::service::Problems;
use crate::service::agents::{AgentInput, EnvInput};

/// The agent form's fields. A member's form has the owners' fields (runtime, name, model, stall
/// timeout) disabled, and browsers do not send disabled fields: those are `Option`s, and absent means
/// "unchanged", never "cleared".
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub(super) struct AgentForm {
    pub name: Option<String>,
    pub color: String,
    pub kind: String,
    pub model: Option<String>,
    pub instructions: String,
    /// The environment's rows: keys, values, which rows are secret (by index) and the secrets kept
    /// sealed from the last try (see [`Keeper`]).
    pub env_key: Option<Vec<String>>,
    pub env_value: Vec<String>,
    pub env_kept: Vec<String>,
    pub env_secret: Vec<String>,
    pub extra_args: Option<String>,
    pub runners: Option<String>,
    pub egress_hosts: Option<String>,
    /// `none` for no network, anything else for the allow-list.
    pub network: Option<String>,
    pub permission_mode: String,
    pub max_concurrent_runs: Lenient<i64>,
    pub stall_timeout_secs: Lenient<i64>,
    pub max_retries: Lenient<i64>,
    pub budget_usd: Lenient<Amount>,
    pub budget_tokens: Lenient<i64>,
    pub command: Option<String>,
    pub base_url: Option<String>,
}

/// A whole number as a per-run limit (`i32`), clamped rather than wrapped.
fn limit(v: i64) -> i32 {
    v.clamp(i64::from(i32::MIN), i64::from(i32::MAX)) as i32
}

/// A field that must have a value to mean anything (a select or colour): empty leaves it as it is.
fn filled(value: &str) -> Option<String> {
    Some(value.trim().to_owned()).filter(|v| !v.is_empty())
}

impl AgentForm {
    /// The environment rows sent; a secret row left empty takes the value kept from the last try, if any.
    pub fn env_rows(&self, keeper: &Keeper<'_>) -> Vec<EnvInput> {
        let keys = self.env_key.as_deref().unwrap_or_default();
        keys.iter()
            .enumerate()
            .filter(|(_, k)| !k.trim().is_empty())
            .map(|(i, k)| {
                let secret = self.env_secret.contains(&i.to_string());
                let typed = self.env_value.get(i).cloned();
                let value = match (&typed, self.env_kept.get(i)) {
                    (Some(v), Some(sealed)) if secret && v.is_empty() && !sealed.is_empty() => {
                        keeper.open(sealed).or(typed)
                    }
                    _ => typed,
                };
                EnvInput {
                    key: k.trim().to_owned(),
                    value,
                    secret,
                }
            })
            .collect()
    }

    /// The agent input the service takes; numbers that did not parse are field problems returned beside
    /// it (their fields left unset), so the service reports them with every other problem in one 422.
    pub fn input(&self, keeper: &Keeper<'_>) -> (AgentInput, Problems) {
        let mut problems = Problems::default();
        let whole = "must be a whole number";
        let max_concurrent_runs = self
            .max_concurrent_runs
            .read("max_concurrent_runs", whole, &mut problems)
            .map(limit);
        let stall_timeout_secs = self
            .stall_timeout_secs
            .read("stall_timeout_secs", whole, &mut problems)
            .map(limit);
        let max_retries = self
            .max_retries
            .read("max_retries", whole, &mut problems)
            .map(limit);
        let budget_tokens = self
            .budget_tokens
            .read("budget_tokens", whole, &mut problems)
            .or(Some(0));
        let budget_usd = if self
            .budget_usd
            .text()
            .trim()
            .trim_start_matches('$')
            .is_empty()
        {
            Some(0.0)
        } else {
            self.budget_usd
                .read("budget_usd", "must be an amount like 2.50", &mut problems)
                .map(|a| a.0)
        };
        let input = AgentInput {
            name: self.name.clone(),
            color: filled(&self.color),
            kind: filled(&self.kind),
            model: self.model.clone(),
            instructions: Some(self.instructions.clone()),
            env: self.env_key.as_ref().map(|_| self.env_rows(keeper)),
            extra_args: self
                .extra_args
                .as_ref()
                .map(|a| a.lines().map(str::to_owned).collect()),
            permission_mode: filled(&self.permission_mode),
            max_concurrent_runs,
            stall_timeout_secs,
            max_retries,
            budget_usd,
            budget_tokens,
            command: self.command.clone(),
            base_url: self.base_url.clone(),
            runners: self
                .runners
                .as_ref()
                .map(|r| r.split(',').map(str::to_owned).collect()),
            egress_hosts: self
                .egress_hosts
                .as_ref()
                .map(|h| h.split(['\n', ',']).map(|l| l.trim().to_owned()).collect()),
            no_network: self.network.as_ref().map(|n| n == "none"),
        };
        (input, problems)
    }
}
