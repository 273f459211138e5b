//! Ensembles: several agents take one issue blind, each candidate is judged on evidence (a check command
//! run in its worktree), and a person chooses. This module holds what the runner and the server share
//! about checks; the ensemble records themselves live beside them.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use super::{
    AgentId, AgentName, Budget, EnsembleId, EnsembleRunId, IssueId, RunId, UserId, ValidationError,
    WorkspaceId,
};

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

/// An ensemble's name follows the rules of agent names (letters, digits, `-`, `_`, `.`).
pub type EnsembleName = AgentName;

/// The fewest and most members an ensemble has.
pub const ENSEMBLE_MEMBERS: std::ops::RangeInclusive<usize> = 2..=8;
/// The longest a check may run, and what it gets when nothing says otherwise.
pub const CHECK_TIMEOUT_MAX_SECS: u64 = 3600;
pub const CHECK_TIMEOUT_DEFAULT_SECS: u64 = 600;

/// When an ensemble stops its remaining candidates early.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum EarlyStop {
    /// Every candidate runs to its end.
    #[default]
    All,
    /// The first candidate whose check passes stops the others.
    FirstGreen,
    /// Once this many candidates passed their checks, the others are stopped.
    Quorum(u8),
}

impl std::fmt::Display for EarlyStop {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            EarlyStop::All => f.write_str("all"),
            EarlyStop::FirstGreen => f.write_str("first_green"),
            EarlyStop::Quorum(k) => write!(f, "quorum {k}"),
        }
    }
}

impl std::str::FromStr for EarlyStop {
    type Err = ValidationError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let bad = || {
            ValidationError::new(
                "early_stop",
                format!(
                    "unknown early-stop policy {s:?}; expected all, first_green or quorum K (K from 1 to 8)"
                ),
            )
        };
        let t = s.trim();
        match t {
            "all" => Ok(EarlyStop::All),
            "first_green" | "first-green" => Ok(EarlyStop::FirstGreen),
            _ => {
                let k = t
                    .strip_prefix("quorum")
                    .map(|k| k.trim_start_matches([' ', ':', '=']))
                    .ok_or_else(bad)?;
                match k.parse::<u8>() {
                    Ok(k @ 1..=8) => Ok(EarlyStop::Quorum(k)),
                    _ => Err(bad()),
                }
            }
        }
    }
}

impl serde::Serialize for EarlyStop {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> serde::Deserialize<'de> for EarlyStop {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        s.parse()
            .map_err(|e: ValidationError| serde::de::Error::custom(e.message))
    }
}

/// What an ensemble is made of; also the snapshot an ensemble run keeps of it, so editing the ensemble
/// never changes a run already under way.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EnsembleSettings {
    /// The agents that each take the issue, in the order they were listed.
    pub members: Vec<AgentId>,
    /// The check run in each candidate's worktree; `None`: the workspace's check command.
    #[serde(default)]
    pub check: Option<CheckSpec>,
    #[serde(default)]
    pub early_stop: EarlyStop,
    /// The agent that reviews blind when the checks do not decide; never one of the members.
    #[serde(default)]
    pub reviewer: Option<AgentId>,
    /// The budget of the whole ensemble run: candidates and reviewer together.
    #[serde(default)]
    pub budget: Budget,
    /// The most one candidate may spend, as a fraction of the budget (0 < share ≤ 1); `None`: an equal
    /// share (the budget divided by the number of members).
    #[serde(default)]
    pub share: Option<f64>,
}

impl EnsembleSettings {
    /// Checks the rules that need no database: 2–8 distinct members, a reviewer who is not a member,
    /// positive budgets, a share in (0, 1], a quorum no larger than the team, a sane check.
    pub fn validate(&self) -> Result<(), ValidationError> {
        let n = self.members.len();
        if !ENSEMBLE_MEMBERS.contains(&n) {
            return Err(ValidationError::new(
                "members",
                format!("an ensemble has 2 to 8 members; this one has {n}"),
            ));
        }
        let mut seen = std::collections::HashSet::new();
        if self.members.iter().any(|m| !seen.insert(*m)) {
            return Err(ValidationError::new(
                "members",
                "an agent may be a member only once",
            ));
        }
        if let Some(r) = self.reviewer
            && self.members.contains(&r)
        {
            return Err(ValidationError::new(
                "reviewer",
                "the reviewer may not be one of the members (it would review its own work)",
            ));
        }
        if let EarlyStop::Quorum(k) = self.early_stop
            && usize::from(k) > n
        {
            return Err(ValidationError::new(
                "early_stop",
                format!("quorum {k} needs at least {k} members; this ensemble has {n}"),
            ));
        }
        if let Some(usd) = self.budget.usd
            && !(usd.is_finite() && usd > 0.0)
        {
            return Err(ValidationError::new(
                "budget_usd",
                "the budget in USD must be a positive number",
            ));
        }
        if let Some(tokens) = self.budget.tokens
            && tokens <= 0
        {
            return Err(ValidationError::new(
                "budget_tokens",
                "the token budget must be a positive number",
            ));
        }
        if let Some(share) = self.share
            && !(share.is_finite() && share > 0.0 && share <= 1.0)
        {
            return Err(ValidationError::new(
                "share",
                "a candidate's share of the budget must be more than 0 and at most 1 (e.g. 0.5)",
            ));
        }
        if let Some(check) = &self.check {
            check.validate()?;
        }
        Ok(())
    }

    /// What one candidate may spend: its share of the budget.
    pub fn candidate_budget(&self) -> Budget {
        let share = self.share.unwrap_or(1.0 / self.members.len().max(1) as f64);
        Budget {
            usd: self.budget.usd.map(|usd| usd * share),
            tokens: self
                .budget
                .tokens
                .map(|t| ((t as f64) * share).ceil() as i64),
        }
    }
}

impl CheckSpec {
    /// A non-empty command of at most 4 KiB without NUL, and a timeout from 1 s to an hour.
    pub fn validate(&self) -> Result<(), ValidationError> {
        if self.command.trim().is_empty() {
            return Err(ValidationError::new("check", "the check command is empty"));
        }
        if self.command.len() > 4096 || self.command.contains('\0') {
            return Err(ValidationError::new(
                "check",
                "the check command must be at most 4096 bytes, without NUL",
            ));
        }
        if !(1..=CHECK_TIMEOUT_MAX_SECS).contains(&self.timeout_secs) {
            return Err(ValidationError::new(
                "check_timeout",
                format!(
                    "the check timeout must be from 1 to {CHECK_TIMEOUT_MAX_SECS} seconds, not {}",
                    self.timeout_secs
                ),
            ));
        }
        Ok(())
    }
}

/// A named team of agents that takes issues together.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Ensemble {
    pub id: EnsembleId,
    pub workspace_id: WorkspaceId,
    pub name: EnsembleName,
    pub settings: EnsembleSettings,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

crate::domain::string_enum!(
    /// Where an ensemble run is: candidates at work, the reviewer at work, decided (a person may
    /// choose), chosen.
    EnsembleStatus, "ensemble_status" {
        Running => "running",
        Reviewing => "reviewing",
        Decided => "decided",
        Chosen => "chosen",
    }
);

/// How the blind review went: a validated verdict, or why the reviewer's answer was not one.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum ReviewOutcome {
    Verdict {
        verdict: serde_json::Value,
    },
    Invalid {
        error: String,
        answer: String,
    },
    /// The reviewer's run did not succeed (failed, cancelled, over budget).
    NoAnswer {
        why: String,
    },
}

/// One issue taken by an ensemble: its candidates are the runs that carry its id.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EnsembleRun {
    pub id: EnsembleRunId,
    pub workspace_id: WorkspaceId,
    pub issue_id: IssueId,
    /// The ensemble it came from (`None` once that ensemble is deleted; the snapshot stays).
    pub ensemble_id: Option<EnsembleId>,
    pub name: String,
    /// 1 for the issue's first ensemble run, then one more each time (the `r<n>` of its branches).
    pub number: i32,
    pub settings: EnsembleSettings,
    /// The commit every candidate starts from, when the workspace has a local repository.
    pub base_commit: Option<String>,
    /// The branch that commit was the tip of (where Choose merges to).
    pub base_branch: Option<String>,
    pub status: EnsembleStatus,
    /// Why candidates were stopped early (a policy met, the budget spent), when they were.
    pub stop_reason: Option<String>,
    pub review_run_id: Option<RunId>,
    /// The neutral label each reviewed candidate had, in the order the reviewer saw them.
    pub review_labels: Vec<(char, RunId)>,
    pub review: Option<ReviewOutcome>,
    pub chosen_run_id: Option<RunId>,
    pub chosen_by: Option<UserId>,
    /// The merge commit on the base branch, when the chosen candidate was merged.
    pub merged_commit: Option<String>,
    pub created_at: DateTime<Utc>,
    pub decided_at: Option<DateTime<Utc>>,
}

/// Input for an ensemble run.
#[derive(Debug, Clone)]
pub struct NewEnsembleRun {
    pub workspace_id: WorkspaceId,
    pub issue_id: IssueId,
    pub ensemble_id: EnsembleId,
    pub name: String,
    pub settings: EnsembleSettings,
    pub base_commit: Option<String>,
    pub base_branch: Option<String>,
}

crate::domain::string_enum!(
    /// Why the server stops a live run: a person, an ensemble's early-stop policy, or a budget shared
    /// by several runs (an ensemble's, a monthly cap).
    StopWhy, "why" {
        Person => "person",
        EarlyStop => "early_stop",
        OverBudget => "over_budget",
        OverCap => "over_cap",
    }
);

/// Why the server stops a live run, and the sentence that says so on the run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StopNote {
    pub why: StopWhy,
    pub note: String,
}
