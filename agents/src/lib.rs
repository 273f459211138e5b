//! Muster's agent adapters: everything Muster knows about the agent CLIs it drives.
//!
//! For each [`RuntimeKind`] this crate can
//! - **detect** the CLI ([`detect`]): path, `--version`, minimum version;
//! - **build a launch spec** ([`Adapter::command`]): argv, explicit environment, working directory,
//!   prompt for stdin and config files to write, as plain data;
//! - **parse** each stdout line into normalized [`AgentEvent`]s ([`Adapter::parse_line`]), a pure
//!   function that never panics: what it does not understand comes back as [`AgentEvent::Raw`];
//! - say where that CLI looks for skills ([`Adapter::skills_place`]).
//!
//! [`process`] is the only module that creates child processes: it turns a [`LaunchSpec`] into a
//! `tokio::process::Command`, stops a process group gracefully and reads output lines with a cap.
//! The crate depends on neither axum nor sqlx; the server's supervisor owns the runs.
#![forbid(unsafe_code)]

pub mod adapter;
pub mod bounded;
pub mod checks;
pub mod claude;
pub mod codex;
pub mod custom;
pub mod detect;
pub mod event;
pub mod kind;
pub mod llama;
pub mod opencode;
pub mod pins;
pub mod pricing;
pub mod process;
pub mod session;

mod json;

#[cfg(test)]
mod tests;

pub use adapter::{API_KEY_VARS, Adapter, LaunchSpec, RunSpec, SkillsPlace, adapter_for};
pub use custom::{CustomAdapter, CustomFormat};
pub use detect::{Detection, DetectionStatus, detect, detect_with_timeout};
pub use event::{AgentEvent, ErrorClass, FileChangeKind, TokenUsage};
pub use kind::{PermissionMode, RuntimeKind, UnknownChoice};
pub use pricing::{ModelRate, RateTable};

/// Longest input excerpt kept in an [`Error::Parse`], so errors stay readable in logs.
const PARSE_EXCERPT_CHARS: usize = 200;

/// Errors of the agents layer; callers branch on the variant.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The CLI binary is not installed (or not where the spec says).
    #[error("{cli} is not installed")]
    NotInstalled {
        /// The binary name or path that was looked for.
        cli: String,
    },
    /// Spawning the child process failed for another reason (permissions, bad cwd, …).
    #[error("could not start the agent process")]
    Spawn(#[source] std::io::Error),
    /// Text that should have been a known value or document could not be parsed.
    #[error("cannot parse {line:?}: {reason}")]
    Parse {
        /// The offending input, cut to a short excerpt.
        line: String,
        /// What was wrong, with the accepted values when there is a fixed set.
        reason: String,
    },
    /// The runtime kind has no child process to launch (llama runs inside Muster).
    #[error("{kind} has no command to launch: {reason}")]
    NoLaunch {
        /// The runtime kind.
        kind: RuntimeKind,
        /// Why, in plain words.
        reason: &'static str,
    },
}

impl Error {
    /// Builds an [`Error::Parse`], keeping only a short excerpt of `line`.
    pub fn parse(line: &str, reason: impl Into<String>) -> Self {
        Self::Parse {
            line: line.chars().take(PARSE_EXCERPT_CHARS).collect(),
            reason: reason.into(),
        }
    }
}

/// `Result` with this crate's [`Error`] as the default error.
pub type Result<T, E = Error> = std::result::Result<T, E>;
