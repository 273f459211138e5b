//! The executor's error: why a run could not be prepared or started, or why carrying its session failed.
//! Each variant's text is the sentence the run's failure (or its `session` event) shows, and
//! [`Error::reason`] is the one place that decides the run's [`FailureReason`] from it (which decides
//! retries: never for configuration problems).

use std::path::PathBuf;

use super::git::GitError;
use crate::domain::FailureReason;
use crate::sandbox::SandboxError;

/// What went wrong preparing or starting a run.
#[derive(Debug, thiserror::Error)]
pub(crate) enum Error {
    /// Git work failed (the mirror of a git URL).
    #[error("{0}")]
    Git(#[from] GitError),
    /// The workspace's repository setting is neither a URL nor an absolute path.
    #[error("the workspace's repository setting is invalid: {0}")]
    RepoSetting(#[source] GitError),
    /// The ensemble's common start commit is not in the repository.
    #[error("the run starts at commit {base}, which the repository does not have: {source}")]
    MissingBase {
        base: String,
        #[source]
        source: GitError,
    },
    /// The run's worktree could not be made.
    #[error("cannot create the run's git worktree: {0}")]
    Worktree(#[source] GitError),
    /// One of the run's folders (`work`, `home`, `tmp`) could not be made.
    #[error("cannot create {}: {source}", path.display())]
    CreateDir {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The brief could not be written into the run's folder.
    #[error("cannot write the brief: {0}")]
    Brief(#[source] crate::confined::Error),
    /// The task writing the brief did not finish (it panicked).
    #[error("cannot write the brief: {0}")]
    BriefTask(#[source] tokio::task::JoinError),
    /// The agent's skills could not be handed to the run.
    #[error("{0}")]
    Skills(#[from] crate::skills::Error),
    /// A custom agent has no command to run.
    #[error("a custom agent needs a command")]
    NoCommand,
    /// The kernel cannot sandbox agents and the operator did not allow them unsandboxed.
    #[error(
        "agents cannot start on this runner: {reason}; the operator can start it with --allow-unsandboxed-agents"
    )]
    SandboxRefused { reason: String },
    /// The run's sandbox policy or its launch through the exec step could not be built.
    #[error("cannot build the sandbox: {0}")]
    Sandbox(#[from] SandboxError),
    /// The agent's program is not on this runner.
    #[error("{} is not installed", program.display())]
    MissingCli { program: PathBuf },
    /// Nothing accepts connections at the agent's model server, before it starts.
    #[error("nothing accepted a connection at {0}, its base URL's address")]
    Unreachable(#[source] muster_llama::probe::Unreachable),
    /// The run's egress proxy could not listen.
    #[error("cannot open the run's egress proxy: {0}")]
    Egress(#[source] std::io::Error),
    /// The adapter could not build the CLI's command line.
    #[error("{0}")]
    Command(#[source] muster_agents::Error),
    /// The agent's process could not be started.
    #[error("{0}")]
    Spawn(#[source] muster_agents::Error),
    /// The previous run's session could not be carried into this run.
    #[error("{0}")]
    Carry(#[from] muster_agents::session::CarryError),
    /// The task carrying the session did not finish (it panicked).
    #[error("{0}")]
    CarryTask(#[source] tokio::task::JoinError),
    /// The carried session's databases could not be pointed at this run's folder.
    #[error("{0}")]
    Relocate(String),
}

impl Error {
    /// The run's failure reason for this error.
    pub(crate) fn reason(&self) -> FailureReason {
        match self {
            Error::Git(_) | Error::MissingBase { .. } | Error::Worktree(_) => FailureReason::Git,
            Error::SandboxRefused { .. } => FailureReason::Sandbox,
            Error::MissingCli { .. } | Error::Spawn(muster_agents::Error::NotInstalled { .. }) => {
                FailureReason::MissingCli
            }
            Error::Unreachable(_) => FailureReason::Unreachable,
            Error::RepoSetting(_)
            | Error::CreateDir { .. }
            | Error::Brief(_)
            | Error::BriefTask(_)
            | Error::Skills(_)
            | Error::NoCommand
            | Error::Sandbox(_)
            | Error::Egress(_)
            | Error::Command(_)
            | Error::Spawn(_)
            | Error::Carry(_)
            | Error::CarryTask(_)
            | Error::Relocate(_) => FailureReason::Config,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn git_failed() -> GitError {
        GitError::Failed {
            command: "worktree add".to_owned(),
            status: "exit status: 128".to_owned(),
            stderr: "fatal: bad object".to_owned(),
        }
    }

    #[test]
    fn the_failure_reason_follows_the_kind_of_error() {
        assert_eq!(Error::Worktree(git_failed()).reason(), FailureReason::Git);
        assert_eq!(
            Error::RepoSetting(GitError::Other("must not be empty".to_owned())).reason(),
            FailureReason::Config
        );
        assert_eq!(
            Error::Spawn(muster_agents::Error::NotInstalled {
                cli: "claude".to_owned()
            })
            .reason(),
            FailureReason::MissingCli
        );
        assert_eq!(
            Error::Spawn(muster_agents::Error::Spawn(std::io::Error::other("no"))).reason(),
            FailureReason::Config
        );
        assert_eq!(
            Error::SandboxRefused {
                reason: "no Landlock".to_owned()
            }
            .reason(),
            FailureReason::Sandbox
        );
        let unreachable = muster_llama::probe::Unreachable {
            address: "127.0.0.1:9".to_owned(),
            why: muster_llama::probe::NoConnection::NoAnswer(5000),
        };
        assert_eq!(
            Error::Unreachable(unreachable).reason(),
            FailureReason::Unreachable
        );
    }

    #[test]
    fn the_text_is_the_sentence_runs_always_showed() {
        assert_eq!(
            Error::Worktree(git_failed()).to_string(),
            "cannot create the run's git worktree: git worktree add failed (exit status: 128): fatal: bad object"
        );
        assert_eq!(
            Error::MissingBase {
                base: "abc123".to_owned(),
                source: git_failed()
            }
            .to_string(),
            "the run starts at commit abc123, which the repository does not have: git worktree add failed (exit status: 128): fatal: bad object"
        );
        let unreachable = muster_llama::probe::Unreachable {
            address: "127.0.0.1:9".to_owned(),
            why: muster_llama::probe::NoConnection::NoAnswer(5000),
        };
        assert_eq!(
            Error::Unreachable(unreachable).to_string(),
            "nothing accepted a connection at 127.0.0.1:9 (no answer within 5000 ms), its base URL's address"
        );
        assert_eq!(
            Error::MissingCli {
                program: PathBuf::from("claude")
            }
            .to_string(),
            "claude is not installed"
        );
        assert_eq!(
            Error::Sandbox(SandboxError::ParentGone(7)).to_string(),
            "cannot build the sandbox: sandbox: the process that started the agent (7) is gone; not starting it"
        );
    }
}
