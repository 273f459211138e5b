//! What can go wrong with the sandbox: building a run's policy and launch on the runner, and applying
//! it in the exec step (`muster sandbox-exec`), which prints the error as `error: <text>` and exits 126.
//!
//! The exec step runs in the agent's process before it starts: building an error allocates only on the
//! failure path, and the fixed parts of its text are `'static`.

use std::borrow::Cow;
use std::path::PathBuf;

/// Why an agent cannot be started inside the sandbox. Its text is the sentence a person reads (the run's
/// failure, or the exec step's last line on stderr).
#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    /// The policy the runner passed to the exec step is not valid JSON of a [`super::Policy`].
    #[error("the sandbox policy cannot be read: {0}")]
    PolicyUnreadable(#[source] serde_json::Error),
    /// The policy cannot be written as the exec step's argument.
    #[error("{0}")]
    PolicyUnwritable(#[source] serde_json::Error),
    /// The kernel's Landlock ABI (as the server detected it) is newer than this build knows.
    #[error("Landlock ABI {0} is not supported by this build")]
    UnsupportedAbi(u8),
    /// One step of applying the sandbox failed (`what` names it, `reason` is the system's answer).
    #[error("sandbox: {what}: {reason}")]
    Step {
        what: Cow<'static, str>,
        reason: String,
    },
    /// The kernel accepted the ruleset but did not enforce all of it.
    #[error(
        "sandbox: the kernel did not fully enforce the ruleset ({ruleset:?}, no_new_privs {no_new_privs})"
    )]
    NotEnforced {
        ruleset: landlock::RulesetStatus,
        no_new_privs: bool,
    },
    /// No seccomp filter can be built for this machine's architecture.
    #[error("sandbox: no seccomp filter for the {0} architecture: agents cannot be sandboxed here")]
    NoSeccompArch(&'static str),
    /// A capability set still holds capabilities after they were dropped.
    #[error("sandbox: {set:?} capabilities are still held: {left:?}")]
    CapabilitiesHeld {
        set: caps::CapSet,
        left: caps::CapsHashSet,
    },
    /// The runner that started the exec step died before the agent could be bound to its life.
    #[error("sandbox: the process that started the agent ({0}) is gone; not starting it")]
    ParentGone(u32),
    /// The agent's pid does not fit a `pid_t`.
    #[error("sandbox: the agent's pid is out of range")]
    PidOutOfRange,
    /// The agent's program could not be executed (or spawned, under the namespace's init).
    #[error("cannot execute {program}: {source}")]
    Exec {
        program: String,
        #[source]
        source: std::io::Error,
    },
    /// A rule of the policy would give the agent a protected folder (the data or runs folder).
    #[error(
        "the sandbox rule for {} would expose {}; move the agent's program elsewhere",
        rule.display(),
        protected.display()
    )]
    Exposes { rule: PathBuf, protected: PathBuf },
    /// A path of the worktree's git layout cannot be resolved.
    #[error("cannot resolve {}: {source}", path.display())]
    Resolve {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// A folder the private repository's alternates name cannot be resolved.
    #[error("cannot resolve the alternate objects folder {line}: {source}")]
    ResolveAlternate {
        line: String,
        #[source]
        source: std::io::Error,
    },
    /// A folder the agent's git writes to cannot be created.
    #[error("cannot create {}: {source}", path.display())]
    CreateDir {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

impl SandboxError {
    /// A failed step: `sandbox: <what>: <reason>`.
    pub(crate) fn step(what: impl Into<Cow<'static, str>>, reason: impl std::fmt::Display) -> Self {
        SandboxError::Step {
            what: what.into(),
            reason: reason.to_string(),
        }
    }
}
