//! The runtime kinds Muster drives and every fact about one that is not a launch detail: its stored
//! name, how people call it, which secret it reads, what a runner must have for it, which context file it
//! reads. The server, the CLI and the web pages ask these methods; none keeps its own list of kinds.
//!
//! Adding a kind: a variant here with its facts, an adapter module, [`crate::adapter_for`], its binaries in
//! [`crate::detect::binary_names`] and (for an npm CLI) a line in `.ci/agent-clis.txt`. The database stores
//! the name ([`RuntimeKind::as_str`]); a migration widens the `agent.kind` check.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::{claude, codex, llama, opencode};

/// The runtime kinds Muster can drive. Stored, sent and parsed as [`RuntimeKind::as_str`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "&'static str")]
pub enum RuntimeKind {
    /// Claude Code (`claude`).
    Claude,
    /// OpenAI Codex CLI (`codex`).
    Codex,
    /// OpenCode (`opencode`).
    Opencode,
    /// A local OpenAI-compatible server; Muster runs the agent loop itself.
    Llama,
    /// Any command, its output read as stream-json, JSON lines or plain text.
    Custom,
}

impl RuntimeKind {
    /// Every kind, in display order.
    pub const ALL: [Self; 5] = [
        Self::Claude,
        Self::Codex,
        Self::Opencode,
        Self::Llama,
        Self::Custom,
    ];

    /// The snake_case name used in config, URLs and the database.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Claude => "claude",
            Self::Codex => "codex",
            Self::Opencode => "opencode",
            Self::Llama => "llama",
            Self::Custom => "custom",
        }
    }

    /// How people name the runtime, in lists and badges ("Claude Code", "Local Llama").
    pub fn label(self) -> &'static str {
        match self {
            Self::Claude => "Claude Code",
            Self::Codex => "Codex",
            Self::Opencode => "OpenCode",
            Self::Llama => "Local Llama",
            Self::Custom => "Custom command",
        }
    }

    /// What does the work, as the subject of a sentence about a run ("Codex could not reach …", "The
    /// local model agent stopped …").
    pub fn subject(self) -> &'static str {
        match self {
            Self::Llama => "The local model agent",
            Self::Custom => "The agent's command",
            _ => self.label(),
        }
    }

    /// What a runner must have to take this kind's runs, as the waiting sentence names it ("waiting for a
    /// runner with a local model server").
    pub fn runner_needs(self) -> &'static str {
        match self {
            Self::Llama => "a local model server",
            Self::Custom => "the agent's command",
            _ => self.label(),
        }
    }

    /// The provider key variable the CLI reads when no key is given, if it has one of its own.
    pub fn key_var(self) -> Option<&'static str> {
        match self {
            Self::Claude => Some(claude::KEY_VAR),
            Self::Codex => Some(codex::KEY_VARS[0]),
            Self::Opencode => Some(opencode::KEY_VARS[0]),
            Self::Llama | Self::Custom => None,
        }
    }

    /// What to check when the provider refused the agent's key.
    pub fn key_hint(self) -> String {
        match (self, self.key_var()) {
            (_, Some(var)) => format!("check the agent's {var} secret"),
            (Self::Llama, None) => {
                "check the agent's base URL and the key its model server expects".to_owned()
            }
            (_, None) => "check the key in the agent's environment".to_owned(),
        }
    }

    /// The context file the CLI reads from its working directory, where Muster writes the brief.
    pub fn brief_file(self) -> &'static str {
        match self {
            Self::Claude => "CLAUDE.md",
            _ => "AGENTS.md",
        }
    }

    /// Whether Muster runs the agent loop itself against a local model server (no CLI to install, the
    /// model costs nothing per token, the server must be up).
    pub fn is_local_model(self) -> bool {
        self == Self::Llama
    }

    /// Whether the agent is a command of the team's own (no detection, no pinned build, no skills folder).
    pub fn is_custom(self) -> bool {
        self == Self::Custom
    }

    /// Whether Muster looks for this runtime on a machine (every kind but a team's own command, which
    /// each agent names).
    pub fn is_detected(self) -> bool {
        !self.is_custom()
    }

    /// The kinds a runner offers, from the kinds it detected: a custom command (it runs through `sh`,
    /// which every runner has) always, the local model loop when it reported a model server. Sorted by
    /// name, each once.
    pub fn offered_by_runner(
        detected: impl IntoIterator<Item = Self>,
        has_model_server: bool,
    ) -> Vec<Self> {
        let mut kinds: Vec<Self> = detected.into_iter().collect();
        kinds.push(Self::Custom);
        if has_model_server {
            kinds.push(Self::Llama);
        }
        kinds.sort_by_key(|k| k.as_str());
        kinds.dedup();
        kinds
    }

    /// Why the CLI needs a model named when it is pointed at a base URL, if it does: Codex's default
    /// model sends requests (tools in a "responses lite" item, JavaScript code mode) only OpenAI's own
    /// API understands, so any other server sees `tools: []`, answers in text, and the run "succeeds"
    /// having done nothing.
    pub fn model_needed_with_base_url(self) -> Option<&'static str> {
        match self {
            Self::Codex => Some(
                "name one the server at that URL serves (for example gpt-5.5); Codex's own default \
                 model works only with OpenAI's API, and elsewhere its runs get no tools and do nothing",
            ),
            _ => None,
        }
    }

    /// The permission mode the CLI gets inside Muster's sandbox for a profile's `mode`: Codex's own
    /// sandbox (bubblewrap) cannot run inside Landlock, so ours confines it instead (a read-only profile
    /// gets a read-only worktree there).
    pub fn mode_inside_sandbox(self, mode: PermissionMode) -> PermissionMode {
        match self {
            Self::Codex => PermissionMode::Bypass,
            _ => mode,
        }
    }

    /// The environment variables this CLI reads its model server's URL from, preferred first. Set in an
    /// agent's env, the first one set counts as the agent's base URL (when its Base URL field is empty):
    /// its host is allowed through the egress proxy (its port directly when loopback) and its
    /// credentials are redacted.
    pub fn base_url_vars(self) -> &'static [&'static str] {
        match self {
            Self::Claude => &claude::BASE_URL_VARS,
            Self::Codex => &codex::BASE_URL_VARS,
            Self::Opencode => &opencode::BASE_URL_VARS,
            Self::Llama => &llama::BASE_URL_VARS,
            // A custom command may wrap any of the CLIs.
            Self::Custom => &CUSTOM_BASE_URL_VARS,
        }
    }

    /// The model API this CLI reaches when no base URL is set (its vendor's), allowed through the egress
    /// proxy like a base URL's host.
    pub fn default_api_url(self) -> Option<&'static str> {
        match self {
            Self::Claude => Some(claude::DEFAULT_API_URL),
            Self::Codex => Some(codex::DEFAULT_API_URL),
            Self::Opencode | Self::Llama | Self::Custom => None,
        }
    }

    /// Every base-URL variable of this kind that `env` sets to a non-empty value, as `(name, url)`,
    /// preferred first (the last setting of a name wins).
    pub fn base_urls_in(self, env: &[(String, String)]) -> Vec<(&'static str, &str)> {
        self.base_url_vars()
            .iter()
            .filter_map(|name| {
                let value = env.iter().rev().find(|(k, _)| k == name)?.1.trim();
                (!value.is_empty()).then_some((*name, value))
            })
            .collect()
    }
}

/// What a custom command may read its model server's URL from: the variables of the CLIs it may wrap.
const CUSTOM_BASE_URL_VARS: [&str; 2] = ["ANTHROPIC_BASE_URL", "OPENAI_BASE_URL"];

/// How much the agent may do without asking; each adapter maps it to its CLI's flags.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "&'static str")]
pub enum PermissionMode {
    /// Read and run read-only commands; writes are refused.
    ReadOnly,
    /// Edit files inside the working directory.
    #[default]
    WorkspaceWrite,
    /// Everything, without sandbox or prompts (Claude needs `IS_SANDBOX=1` for this as root).
    Bypass,
}

impl PermissionMode {
    /// Every mode.
    pub const ALL: [Self; 3] = [Self::ReadOnly, Self::WorkspaceWrite, Self::Bypass];

    /// The snake_case name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::ReadOnly => "read_only",
            Self::WorkspaceWrite => "workspace_write",
            Self::Bypass => "bypass",
        }
    }

    /// How people name the mode on the agent form.
    pub fn label(self) -> &'static str {
        match self {
            Self::ReadOnly => "Read only",
            Self::WorkspaceWrite => "Edit the worktree",
            Self::Bypass => "Anything (inside the sandbox)",
        }
    }
}

/// A value outside a fixed set of names, with the field it was for and every accepted name.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown {field} {value:?}; expected one of: {valid}")]
pub struct UnknownChoice {
    /// The field's name as the API spells it (`kind`, `permission_mode`).
    pub field: &'static str,
    /// What was given, trimmed.
    pub value: String,
    /// The accepted names, comma-separated.
    pub valid: String,
}

/// The `FromStr`/`Display`/serde plumbing both enums share: the stored name both ways, and a parse error
/// that names the field and every accepted value.
macro_rules! named_choice {
    ($ty:ty, $field:literal) => {
        impl fmt::Display for $ty {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl FromStr for $ty {
            type Err = UnknownChoice;

            fn from_str(s: &str) -> Result<Self, UnknownChoice> {
                let s = s.trim();
                <$ty>::ALL
                    .into_iter()
                    .find(|v| v.as_str() == s)
                    .ok_or_else(|| UnknownChoice {
                        field: $field,
                        value: s.to_owned(),
                        valid: <$ty>::ALL.map(<$ty>::as_str).join(", "),
                    })
            }
        }

        impl TryFrom<String> for $ty {
            type Error = UnknownChoice;
            fn try_from(s: String) -> Result<Self, UnknownChoice> {
                s.parse()
            }
        }

        impl From<$ty> for &'static str {
            fn from(v: $ty) -> &'static str {
                v.as_str()
            }
        }
    };
}

named_choice!(RuntimeKind, "kind");
named_choice!(PermissionMode, "permission_mode");

impl From<UnknownChoice> for crate::Error {
    fn from(e: UnknownChoice) -> Self {
        crate::Error::parse(&e.value.clone(), e.to_string())
    }
}

#[cfg(test)]
mod tests;
