//! Agent profiles: which CLI, which model, which instructions, and the guards around each run.

use chrono::{DateTime, Utc};

use super::{AgentId, ValidationError, WorkspaceId, bounded_text};

/// An agent's name, unique in its workspace: 1–64 of `A-Z a-z 0-9 - _ .`, so it can be typed on a
/// command line (`muster issue assign MUS-1 reviewer`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(transparent)]
pub struct AgentName(String);

impl AgentName {
    /// Validates an agent name.
    pub fn parse(raw: &str) -> Result<Self, ValidationError> {
        let s = bounded_text("name", raw, 1, 64)?;
        if let Some(bad) = s
            .chars()
            .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.')))
        {
            return Err(ValidationError::new(
                "name",
                format!("may contain only letters, digits, '-', '_' and '.' (found {bad:?})"),
            ));
        }
        Ok(Self(s))
    }

    /// The name.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

// The runtime kinds and permission modes are the agents crate's: it is the one place that knows a CLI.
pub use muster_agents::{PermissionMode, RuntimeKind};

/// The OpenAPI schema of a type from the agents crate (which knows no OpenAPI): a string that is one of
/// its stored names, under the name the API has always given it.
macro_rules! names_schema_of {
    ($(#[$meta:meta])* $schema:ident, $of:ident, $name:literal) => {
        $(#[$meta])*
        pub struct $schema;

        impl utoipa::PartialSchema for $schema {
            fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
                super::names_schema($of::ALL.map($of::as_str))
            }
        }

        impl utoipa::ToSchema for $schema {
            fn name() -> std::borrow::Cow<'static, str> {
                $name.into()
            }
        }
    };
}

names_schema_of!(
    /// The OpenAPI schema of [`RuntimeKind`].
    RuntimeKindSchema,
    RuntimeKind,
    "AgentKind"
);
names_schema_of!(
    /// The OpenAPI schema of [`PermissionMode`].
    PermissionModeSchema,
    PermissionMode,
    "PermissionMode"
);

/// One environment variable handed to the agent's process.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct EnvVar {
    pub key: String,
    /// For secrets this is the sealed (encrypted) value; the store never sees the plaintext.
    pub value: String,
    pub secret: bool,
}

/// Why `key` may not be set in an agent's env, if it is one Muster sets itself for each run: they decide
/// where the server and the agent write (the run's HOME, its TMPDIR, Codex's home with the skills) and
/// how the agent reaches Muster (`MUSTER_*`).
pub fn reserved_env(key: &str) -> Option<&'static str> {
    match key {
        "HOME" | "CODEX_HOME" | "TMPDIR" => {
            Some("is set by Muster for each run (the run's own folder) and cannot be changed")
        }
        _ if super::egress::PROXY_VARS.contains(&key) => Some(
            "is set by Muster for each run (its egress proxy); allow hosts in the agent's egress \
             allow-list instead",
        ),
        _ if key.starts_with("MUSTER_") => {
            Some("MUSTER_* variables are set by Muster for each run and cannot be changed")
        }
        _ => None,
    }
}

/// Spending limits for one run; `None` means no limit of that kind.
#[derive(Debug, Clone, Copy, PartialEq, Default, serde::Serialize, serde::Deserialize)]
pub struct Budget {
    pub usd: Option<f64>,
    pub tokens: Option<i64>,
}

/// The colour a new agent gets. It means "pick for me": the web UI shows such an agent in a colour derived
/// from its name, so agents that were never given a colour still look different from each other.
pub const AUTO_AGENT_COLOR: &str = "#6d5dfc";

/// Input for creating or replacing an agent profile.
#[derive(Debug, Clone, PartialEq)]
pub struct NewAgent {
    pub name: AgentName,
    /// `#rrggbb`.
    pub color: String,
    pub kind: RuntimeKind,
    pub model: Option<String>,
    pub instructions: String,
    pub env: Vec<EnvVar>,
    pub extra_args: Vec<String>,
    pub permission_mode: PermissionMode,
    pub max_concurrent_runs: i32,
    pub stall_timeout_secs: i32,
    pub max_retries: i32,
    pub budget: Budget,
    /// The command line for `custom` agents.
    pub command: Option<String>,
    /// A model server URL (local Llama, or a proxy for a CLI's provider).
    pub base_url: Option<String>,
    /// The names of the runners this agent's runs may go to (each a valid [`super::RunnerName`]); any
    /// runner when empty.
    pub runners: Vec<String>,
    /// Hosts its runs may reach through the egress proxy, besides its model endpoint and the workspace's
    /// default list.
    pub egress_hosts: Vec<super::HostPattern>,
    /// No network: its runs reach only their model endpoint (and Muster).
    pub no_network: bool,
}

impl NewAgent {
    /// Why the profile's model will not do, if it will not: a CLI that needs a model named when it is
    /// pointed at another server (Codex) has a base URL, in the field or its env, and no model. Muster
    /// cannot guess the names the server at the URL serves, so it asks. Checked when the agent is saved
    /// and again when a run starts (for agents saved before this rule).
    pub fn model_problem(&self) -> Option<String> {
        let why = self.kind.model_needed_with_base_url()?;
        // A base URL set through the CLI's variable in the env (`OPENAI_BASE_URL`) is a base URL too.
        let in_env = self.env.iter().any(|v| {
            self.kind.base_url_vars().contains(&v.key.as_str()) && !v.value.trim().is_empty()
        });
        let no_model = self.model.as_deref().is_none_or(|m| m.trim().is_empty());
        ((self.base_url.is_some() || in_env) && no_model).then(|| {
            format!(
                "a {} agent with a base URL needs a model: {why}",
                self.kind.label()
            )
        })
    }

    /// A profile with defaults: one run at a time, 10 minutes of silence before a stall, no budget.
    pub fn new(name: AgentName, kind: RuntimeKind) -> Self {
        Self {
            name,
            color: AUTO_AGENT_COLOR.to_owned(),
            kind,
            model: None,
            instructions: String::new(),
            env: Vec::new(),
            extra_args: Vec::new(),
            permission_mode: PermissionMode::WorkspaceWrite,
            max_concurrent_runs: 1,
            stall_timeout_secs: 600,
            max_retries: 2,
            budget: Budget::default(),
            command: None,
            base_url: None,
            runners: Vec::new(),
            egress_hosts: Vec::new(),
            no_network: false,
        }
    }

    /// Checks the fields that have ranges; returns every problem, one per field.
    pub fn validate(&self) -> Result<(), Vec<ValidationError>> {
        let mut errors = Vec::new();
        let c = self.color.as_bytes();
        if !(c.len() == 7 && c[0] == b'#' && c[1..].iter().all(u8::is_ascii_hexdigit)) {
            errors.push(ValidationError::new(
                "color",
                "must be a colour like #6d5dfc",
            ));
        }
        if !(1..=32).contains(&self.max_concurrent_runs) {
            errors.push(ValidationError::new(
                "max_concurrent_runs",
                "must be between 1 and 32",
            ));
        }
        if !(10..=86_400).contains(&self.stall_timeout_secs) {
            errors.push(ValidationError::new(
                "stall_timeout_secs",
                "must be between 10 and 86400 seconds",
            ));
        }
        if !(0..=10).contains(&self.max_retries) {
            errors.push(ValidationError::new(
                "max_retries",
                "must be between 0 and 10",
            ));
        }
        if self.budget.usd.is_some_and(|u| !(u.is_finite() && u > 0.0)) {
            errors.push(ValidationError::new(
                "budget_usd",
                "must be a positive amount",
            ));
        }
        if self.budget.tokens.is_some_and(|t| t <= 0) {
            errors.push(ValidationError::new(
                "budget_tokens",
                "must be a positive number",
            ));
        }
        if self.kind.is_custom() && self.command.as_deref().is_none_or(|c| c.trim().is_empty()) {
            errors.push(ValidationError::new(
                "command",
                "a custom agent needs a command",
            ));
        }
        for var in &self.env {
            let ok = !var.key.is_empty()
                && var
                    .key
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_')
                && !var.key.starts_with(|c: char| c.is_ascii_digit());
            if !ok {
                errors.push(ValidationError::new(
                    "env",
                    format!("{:?} is not a valid variable name (A-Z, 0-9, _)", var.key),
                ));
            } else if let Some(why) = reserved_env(&var.key) {
                errors.push(ValidationError::new("env", format!("{}: {why}", var.key)));
            }
        }
        for (i, name) in self.runners.iter().enumerate() {
            if let Err(e) = super::RunnerName::parse_field("runners", name) {
                errors.push(e);
            } else if self.runners[..i].contains(name) {
                errors.push(ValidationError::new(
                    "runners",
                    format!("runner {name:?} is listed twice"),
                ));
            }
        }
        if errors.is_empty() {
            Ok(())
        } else {
            Err(errors)
        }
    }
}

impl Default for NewAgent {
    /// The defaults a new-agent form starts from (a Claude Code agent called `new-agent`).
    fn default() -> Self {
        Self::new(AgentName("new-agent".to_owned()), RuntimeKind::Claude)
    }
}

/// A stored agent profile. Not `Serialize`: the API maps it to a view that leaves secrets out.
#[derive(Debug, Clone, PartialEq)]
pub struct Agent {
    pub id: AgentId,
    pub workspace_id: WorkspaceId,
    pub profile: NewAgent,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}
