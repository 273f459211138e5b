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

    /// `12/13 passed`, when the output showed counts.
    pub fn counts_text(&self) -> Option<String> {
        Some(format!("{}/{} passed", self.passed?, self.total?))
    }

    /// How it ended: `exit 0`, `exit 101`, `timed out`, `killed`, or why it could not run.
    pub fn ending_text(&self) -> String {
        if let Some(e) = &self.error {
            format!("not run: {e}")
        } else if self.timed_out {
            "timed out".to_owned()
        } else {
            match self.exit_code {
                Some(code) => format!("exit {code}"),
                None => "killed".to_owned(),
            }
        }
    }

    /// `1.2 s` (or `340 ms`).
    pub fn duration_text(&self) -> String {
        if self.duration_ms < 1000 {
            format!("{} ms", self.duration_ms)
        } else {
            #[allow(clippy::cast_precision_loss)] // Shown to one decimal.
            let secs = self.duration_ms as f64 / 1000.0;
            format!("{secs:.1} s")
        }
    }

    /// One line for the CLI: `passed · 12/12 passed · exit 0 · 4.2 s · cargo test`.
    pub fn one_line(&self) -> String {
        let mut parts = vec![
            if self.passed_check() {
                "passed"
            } else {
                "failed"
            }
            .to_owned(),
        ];
        parts.extend(self.counts_text());
        parts.push(self.ending_text());
        if self.error.is_none() {
            parts.push(self.duration_text());
        }
        parts.push(self.command.clone());
        parts.join(" · ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn result() -> CheckResult {
        CheckResult {
            command: "cargo test".to_owned(),
            exit_code: Some(0),
            timed_out: false,
            duration_ms: 4_240,
            passed: Some(12),
            failed: Some(0),
            total: Some(12),
            tail: String::new(),
            error: None,
        }
    }

    #[test]
    fn one_line_says_how_the_check_ended() {
        assert_eq!(
            result().one_line(),
            "passed · 12/12 passed · exit 0 · 4.2 s · cargo test"
        );
        let failed = CheckResult {
            exit_code: Some(101),
            passed: Some(12),
            failed: Some(1),
            total: Some(13),
            duration_ms: 340,
            ..result()
        };
        assert_eq!(
            failed.one_line(),
            "failed · 12/13 passed · exit 101 · 340 ms · cargo test"
        );
        let timed_out = CheckResult {
            exit_code: None,
            timed_out: true,
            passed: None,
            total: None,
            ..result()
        };
        assert_eq!(
            timed_out.one_line(),
            "failed · timed out · 4.2 s · cargo test"
        );
        let not_run = CheckResult {
            error: Some("no worktree".to_owned()),
            exit_code: None,
            passed: None,
            total: None,
            ..result()
        };
        assert_eq!(
            not_run.one_line(),
            "failed · not run: no worktree · cargo test"
        );
        assert!(!not_run.passed_check());
    }
}
