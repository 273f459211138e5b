//! The adapter contract: what Muster needs from each runtime kind, and the data that flows in
//! ([`RunSpec`]) and out ([`LaunchSpec`]).
//!
//! Launch specs are plain data. They never read the process environment and never touch the
//! disk: files the CLI needs (a per-run Codex `config.toml`) are listed in [`LaunchSpec::files`]
//! and written by [`crate::process::spawn`].

use std::fmt;
use std::path::{Path, PathBuf};

use crate::session::{CarryError, SessionPlace};

use crate::custom::{CustomAdapter, CustomFormat};
pub use crate::kind::{PermissionMode, RuntimeKind};
use crate::{AgentEvent, Error, claude, codex, llama, opencode};

/// The `Error::Parse` for a value outside a fixed set, naming every accepted value.
pub(crate) fn unknown_choice(value: &str, what: &str, valid: &[&str]) -> Error {
    Error::parse(
        value,
        format!(
            "unknown {what} {value:?}; expected one of: {}",
            valid.join(", ")
        ),
    )
}

/// Everything needed to launch one run of one agent. Secrets stay out of `Debug`.
#[derive(Clone, Default)]
pub struct RunSpec {
    /// The CLI binary (from detection or an explicit override).
    pub binary: PathBuf,
    /// The prompt; always delivered on stdin, which is closed afterwards.
    pub prompt: String,
    /// Model name, passed as `--model` (or the provider's model for a custom base URL).
    pub model: Option<String>,
    /// API base URL; when set, the CLI is pointed at it (custom provider for Codex and OpenCode).
    pub base_url: Option<String>,
    /// API key for the base URL or the vendor API. Redacted from `Debug`.
    pub api_key: Option<String>,
    /// Extra arguments appended after the adapter's own.
    pub extra_args: Vec<String>,
    /// Permission mode.
    pub permission_mode: PermissionMode,
    /// Extra environment variables, applied after the adapter's (so they win). Values redacted.
    pub env: Vec<(String, String)>,
    /// Working directory (the run's worktree).
    pub workdir: PathBuf,
    /// Per-run home directory; becomes `HOME` so CLI state stays with the run.
    pub home_dir: PathBuf,
    /// Session id to resume, from an earlier [`AgentEvent::Started`].
    pub resume_session: Option<String>,
    /// Whether the child will run as root (Claude refuses bypass as root without `IS_SANDBOX=1`).
    pub running_as_root: bool,
}

impl fmt::Debug for RunSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RunSpec")
            .field("binary", &self.binary)
            .field("prompt_chars", &self.prompt.chars().count())
            .field("model", &self.model)
            .field("base_url", &self.base_url)
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .field("extra_args", &self.extra_args)
            .field("permission_mode", &self.permission_mode)
            .field("env", &EnvKeys(&self.env))
            .field("workdir", &self.workdir)
            .field("home_dir", &self.home_dir)
            .field("resume_session", &self.resume_session)
            .field("running_as_root", &self.running_as_root)
            .finish()
    }
}

/// How to start one CLI process: pure data, turned into a command by [`crate::process`].
#[derive(Clone, Default, PartialEq)]
pub struct LaunchSpec {
    /// The program to execute.
    pub program: PathBuf,
    /// Its arguments.
    pub args: Vec<String>,
    /// The complete child environment besides `PATH` (the parent environment is not inherited).
    pub env: Vec<(String, String)>,
    /// Working directory.
    pub cwd: PathBuf,
    /// Text written to stdin, which is then closed; `None` means stdin is `/dev/null`.
    pub stdin: Option<String>,
    /// Files to write (creating parent directories) before the process starts.
    pub files: Vec<(PathBuf, String)>,
}

impl LaunchSpec {
    /// The value of environment variable `key`, if the spec sets it (last setting wins).
    pub fn env_value(&self, key: &str) -> Option<&str> {
        self.env
            .iter()
            .rev()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }
}

impl fmt::Debug for LaunchSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let files: Vec<&Path> = self.files.iter().map(|(p, _)| p.as_path()).collect();
        f.debug_struct("LaunchSpec")
            .field("program", &self.program)
            .field("args", &self.args)
            .field("env", &EnvKeys(&self.env))
            .field("cwd", &self.cwd)
            .field("stdin_bytes", &self.stdin.as_ref().map(String::len))
            .field("files", &files)
            .finish()
    }
}

/// Debug view of an environment that shows keys only: values may be secrets.
struct EnvKeys<'a>(&'a [(String, String)]);

impl fmt::Debug for EnvKeys<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list()
            .entries(self.0.iter().map(|(k, _)| format!("{k}=<redacted>")))
            .finish()
    }
}

/// What Muster needs from one runtime kind.
pub trait Adapter: fmt::Debug + Send + Sync {
    /// The kind this adapter handles.
    fn kind(&self) -> RuntimeKind;

    /// Turns one stdout line into events. Pure and total: unknown input becomes
    /// [`AgentEvent::Raw`], blank lines become nothing, nothing panics.
    fn parse_line(&self, line: &str) -> Vec<AgentEvent>;

    /// How to launch a run. Fails only for kinds without a child process (llama).
    fn command(&self, spec: &RunSpec) -> Result<LaunchSpec, Error>;

    /// Where this CLI discovers `<skill>/SKILL.md` folders for a run (where Muster writes an agent's
    /// skills), or that it has none and reads them from the brief.
    fn skills_place(&self) -> SkillsPlace;

    /// A folder where the CLI keeps a log of the run (one JSON object per line, appended as it goes)
    /// that reports each model request's usage, for a CLI whose stdout reports usage only at the end
    /// (Codex writes `CODEX_HOME/sessions/…/rollout-*.jsonl`). Read it with
    /// [`Adapter::parse_usage_log_line`]. `None` (the default): stdout says it all.
    fn usage_log_dir(&self, spec: &RunSpec) -> Option<PathBuf> {
        let _ = spec;
        None
    }

    /// One line of the [`Adapter::usage_log_dir`] log as events: [`AgentEvent::TurnUsage`] for a
    /// request's usage, nothing for anything else. Pure and total, like [`Adapter::parse_line`].
    fn parse_usage_log_line(&self, line: &str) -> Vec<AgentEvent> {
        let _ = line;
        Vec::new()
    }

    /// Copies what this CLI needs to resume `session` from an earlier run's `HOME` into a new run's
    /// (see [`crate::session`]); the new run then sets [`RunSpec::resume_session`]. The default: the CLI
    /// cannot resume.
    fn carry_session(
        &self,
        session: &str,
        from: SessionPlace<'_>,
        to: SessionPlace<'_>,
    ) -> Result<(), CarryError> {
        let _ = (session, from, to);
        Err(CarryError::Unsupported(self.kind().as_str()))
    }

    /// SQLite files under `HOME` (relative paths) in which a carried session names the earlier run's
    /// working directory, to be replaced with the new one before the CLI starts (OpenCode reopens a
    /// session in the folder it recorded). The default: none.
    fn session_databases(&self) -> &'static [&'static str] {
        &[]
    }
}

/// The adapter for `kind`; custom commands get the stream-json reader (use
/// [`CustomAdapter::new`] to choose another [`CustomFormat`]).
/// Where a CLI discovers skill folders for a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SkillsPlace {
    /// This folder of the run's working directory.
    Workdir(&'static str),
    /// This folder of the run's home (Codex: `<home>/.codex` is its `CODEX_HOME`, which the adapter sets).
    Home(&'static str),
    /// None: the skills are appended to the brief.
    Brief,
}

pub fn adapter_for(kind: RuntimeKind) -> Box<dyn Adapter> {
    match kind {
        RuntimeKind::Claude => Box::new(claude::ClaudeAdapter),
        RuntimeKind::Codex => Box::new(codex::CodexAdapter),
        RuntimeKind::Opencode => Box::new(opencode::OpencodeAdapter),
        RuntimeKind::Llama => Box::new(llama::LlamaAdapter),
        RuntimeKind::Custom => Box::new(CustomAdapter::new(CustomFormat::StreamJson)),
    }
}

/// The environment every adapter starts from: the per-run `HOME` and the run's working directory
/// as `PWD`.
pub(crate) fn base_env(spec: &RunSpec) -> Vec<(String, String)> {
    vec![
        ("HOME".into(), spec.home_dir.display().to_string()),
        ("PWD".into(), spec.workdir.display().to_string()),
    ]
}

/// The variable an adapter sets to [`RunSpec::api_key`] when it points its CLI at a base URL, so the
/// CLI's provider config names the variable (Codex `env_key`, OpenCode `{env:…}`) and never holds the
/// key itself.
pub const PROVIDER_KEY_ENV: &str = "MUSTER_PROVIDER_API_KEY";

/// Every variable a CLI reads an API key from (Claude Code, Codex, OpenCode's OpenAI-compatible
/// provider): a run hides their values from its log even when they were not saved as secrets.
pub const API_KEY_VARS: [&str; 4] = [
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_AUTH_TOKEN",
    "OPENAI_API_KEY",
    "CODEX_API_KEY",
];

/// The variable holding the key for a provider at a base URL: [`PROVIDER_KEY_ENV`] (set here to
/// [`RunSpec::api_key`]) when the spec has a key of its own, else the first of `names` the run's
/// variables set to a non-empty value (the agent's own secret, e.g. `OPENAI_API_KEY`). `None`: no
/// key, so nothing is sent.
pub(crate) fn provider_key_var(
    spec: &RunSpec,
    names: &[&'static str],
    env: &mut Vec<(String, String)>,
) -> Option<&'static str> {
    if let Some(key) = &spec.api_key {
        env.push((PROVIDER_KEY_ENV.into(), key.clone()));
        return Some(PROVIDER_KEY_ENV);
    }
    names.iter().copied().find(|name| {
        spec.env
            .iter()
            .rev()
            .find(|(k, _)| k == name)
            .is_some_and(|(_, v)| !v.is_empty())
    })
}

/// Appends the run's own variables last, so they override the adapter's defaults.
pub(crate) fn finish_env(mut env: Vec<(String, String)>, spec: &RunSpec) -> Vec<(String, String)> {
    env.extend(spec.env.iter().cloned());
    env
}

#[cfg(test)]
pub(crate) mod tests;
