//! Ensembles: several agents take one issue blind, each candidate is judged on evidence (a check command
//! run in its worktree), and a person chooses. This module holds what the runner and the server share
//! about checks; the ensemble records themselves live beside them.

use serde::{Deserialize, Serialize};

/// The run-event kind that carries a candidate's [`CheckResult`] (its payload), stored before the run's
/// finish so the result is in the log whatever happens next.
pub const CHECK_EVENT: &str = "check";

/// A check to run in a candidate's worktree once its agent has finished: `sh -c <command>` inside the
/// run's sandbox, stopped after `timeout_secs`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CheckSpec {
    pub command: String,
    pub timeout_secs: u64,
}

/// What a check found: how it ended, how long it took, the pass/fail counts when the output of a known
/// test runner shows them, and the last lines of its output (redacted).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CheckResult {
    pub command: String,
    /// `None` when it was killed (timeout) or could not be started.
    pub exit_code: Option<i32>,
    pub timed_out: bool,
    pub duration_ms: u64,
    #[serde(default)]
    pub passed: Option<u64>,
    #[serde(default)]
    pub failed: Option<u64>,
    #[serde(default)]
    pub total: Option<u64>,
    /// The last lines of its combined output.
    #[serde(default)]
    pub tail: String,
    /// Why it could not run at all (no worktree, sandbox refused), when it could not.
    #[serde(default)]
    pub error: Option<String>,
}

impl CheckResult {
    /// Green: it ran to the end and exited 0.
    pub fn passed_check(&self) -> bool {
        !self.timed_out && self.error.is_none() && self.exit_code == Some(0)
    }
}
