//! An ensemble candidate's check: `sh -c <command>` in the run's worktree once its work is committed,
//! before the worktree is removed (see `run::wrap_up_worktree`).
//!
//! Invariants:
//! - the check runs inside the same sandbox policy as the run's agent (when agents are sandboxed), with
//!   the run's HOME and TMPDIR and an explicit environment that holds none of the agent's variables (its
//!   secrets stay with the agent), stdin closed, in its own process group;
//! - past its timeout, or when the run is stopped meanwhile, the group is stopped with the agents'
//!   stop-group machinery (SIGINT, SIGTERM, SIGKILL) and reaped; after it exits by itself, whatever it
//!   left running in its group is killed: no survivors either way;
//! - its output is kept bounded (the last [`KEEP_BYTES`]), while the pass/fail counts are read from every
//!   line as it comes ([`muster_agents::checks::Reader`]); the tail is redacted with the run's redactor;
//! - exactly one [`CHECK_EVENT`] event comes of a check, even when it cannot start (then with `error`).

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::time::Duration;

use muster_agents::LaunchSpec;
use muster_agents::process::{self, CappedLines};
use tokio::io::BufReader;
use tokio::sync::mpsc;
use tokio::time::Instant;

use super::RunTiming;
use super::run::RunSignal;
use crate::domain::{CheckResult, CheckSpec};
use crate::redact::Redactor;
use crate::sandbox::{Policy, SandboxError};

/// Output kept of a check (the end of it), in bytes.
pub(super) const KEEP_BYTES: usize = 64 * 1024;
/// Lines of output kept in the result's `tail`.
pub(super) const TAIL_LINES: usize = 40;
/// Longest line kept of a check's output.
const MAX_LINE: usize = 8 * 1024;
/// After the check ends, how long to wait for the rest of its output.
const DRAIN_WAIT: Duration = Duration::from_secs(2);

/// Where and how a run's checks run: what the run's agent had.
#[derive(Debug, Clone)]
pub(crate) struct Confinement {
    /// The agent's sandbox policy; `None` when the operator allowed unsandboxed agents.
    pub policy: Option<Policy>,
    /// The `muster` executable (the sandbox's exec step).
    pub self_exe: PathBuf,
    /// The run's folder (`home/`, `tmp/` and the git exclude file are in it).
    pub run_dir: PathBuf,
    pub issue_key: String,
    pub run_id: String,
}

/// How a check ended when the run was not stopped meanwhile, or why it was.
pub(super) enum Outcome {
    /// The result to log (the check ran, timed out, or could not start).
    Done(CheckResult),
    /// The run was stopped during the check (a person's cancel, the runner's shutdown, a lost claim):
    /// the check was stopped too; `result` says so, for a run that still reports.
    Stopped(CheckResult),
}

/// A result for a check that could not run at all.
pub(super) fn not_run(spec: &CheckSpec, why: impl Into<String>) -> CheckResult {
    CheckResult {
        command: spec.command.clone(),
        exit_code: None,
        timed_out: false,
        duration_ms: 0,
        passed: None,
        failed: None,
        total: None,
        tail: String::new(),
        error: Some(why.into()),
    }
}

/// The check's launch: `sh -c <command>` in `workdir`, its environment, through the exec step when the
/// agent was sandboxed.
fn launch(spec: &CheckSpec, workdir: &Path, c: &Confinement) -> Result<LaunchSpec, SandboxError> {
    let (home, tmp) = (c.run_dir.join("home"), c.run_dir.join("tmp"));
    let mut env = vec![
        ("MUSTER_ISSUE".to_owned(), c.issue_key.clone()),
        ("MUSTER_RUN_ID".to_owned(), c.run_id.clone()),
        ("MUSTER_CHECK".to_owned(), "1".to_owned()),
        ("CI".to_owned(), "true".to_owned()),
    ];
    env.extend(super::git::agent_env(&c.run_dir));
    let launch = LaunchSpec {
        program: PathBuf::from("sh"),
        args: vec!["-c".to_owned(), spec.command.clone()],
        env,
        cwd: workdir.to_path_buf(),
        stdin: None,
        files: Vec::new(),
    };
    match &c.policy {
        Some(policy) => crate::sandbox::wrap(launch, policy, &c.self_exe, &home, &tmp),
        None => {
            let mut launch = launch;
            launch
                .env
                .push(("HOME".to_owned(), home.display().to_string()));
            launch
                .env
                .push(("TMPDIR".to_owned(), tmp.display().to_string()));
            Ok(launch)
        }
    }
}

/// Runs the check in `workdir` and returns what it found. Stops it at its timeout or when `signal` fires.
pub(super) async fn run(
    spec: &CheckSpec,
    workdir: &Path,
    confinement: &Confinement,
    redactor: &Redactor,
    timing: &RunTiming,
    signal: &RunSignal,
) -> Outcome {
    let started = Instant::now();
    let launch = match launch(spec, workdir, confinement) {
        Ok(l) => l,
        Err(e) => return Outcome::Done(not_run(spec, super::Error::Sandbox(e).to_string())),
    };
    let mut child = match process::spawn(&launch).await {
        Ok(child) => child,
        Err(e) => {
            let why = match e {
                muster_agents::Error::Spawn(io) => format!("cannot start the check: {io}"),
                other => format!("cannot start the check: {other}"),
            };
            return Outcome::Done(not_run(spec, why));
        }
    };
    let pgid = child.id();
    let mut output = read_output(&mut child);
    let mut kept = Kept::default();
    let mut counts = muster_agents::checks::Reader::default();
    let deadline = started + Duration::from_secs(spec.timeout_secs.max(1));
    let mut open = true;
    enum End {
        Exited(Option<i32>),
        TimedOut,
        Stopped,
    }
    let end = loop {
        tokio::select! {
            status = child.wait() => break End::Exited(status.ok().and_then(|s| s.code())),
            () = tokio::time::sleep_until(deadline) => break End::TimedOut,
            () = signal.token().cancelled() => break End::Stopped,
            line = output.recv(), if open => match line {
                Some(line) => {
                    counts.line(&line);
                    kept.push(line);
                }
                None => open = false,
            },
        }
    };
    let exit_code = match end {
        End::Exited(code) => {
            if let Some(pgid) = pgid
                && process::kill_leftovers(pgid)
            {
                tracing::info!(pgid, "stopped what the check left running");
            }
            code
        }
        End::TimedOut | End::Stopped => {
            let _ = process::stop_group_with(&mut child, timing.int_grace, timing.term_grace).await;
            None
        }
    };
    let drain = Instant::now() + DRAIN_WAIT;
    while let Ok(Some(line)) = tokio::time::timeout_at(drain, output.recv()).await {
        counts.line(&line);
        kept.push(line);
    }
    let found = counts.counts();
    let result = CheckResult {
        command: spec.command.clone(),
        exit_code,
        timed_out: matches!(end, End::TimedOut),
        duration_ms: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
        passed: found.map(|c| c.passed),
        failed: found.map(|c| c.failed),
        total: found.map(|c| c.total),
        tail: tail(&redactor.text(&kept.text()), TAIL_LINES),
        error: None,
    };
    match end {
        End::Stopped => Outcome::Stopped(CheckResult {
            error: Some(if signal.is_shutdown() {
                "stopped: the runner is shutting down".to_owned()
            } else {
                "stopped: the run was cancelled during its check".to_owned()
            }),
            ..result
        }),
        _ => Outcome::Done(result),
    }
}

/// Both output streams as lines into one channel, closed when both end.
fn read_output(child: &mut tokio::process::Child) -> mpsc::Receiver<String> {
    let (tx, rx) = mpsc::channel(256);
    if let Some(out) = child.stdout.take() {
        let tx = tx.clone();
        tokio::spawn(async move {
            let mut lines = CappedLines::with_cap(BufReader::new(out), MAX_LINE);
            while let Ok(Some(line)) = lines.next_line().await {
                if tx.send(line).await.is_err() {
                    break;
                }
            }
        });
    }
    if let Some(err) = child.stderr.take() {
        tokio::spawn(async move {
            let mut lines = CappedLines::with_cap(BufReader::new(err), MAX_LINE);
            while let Ok(Some(line)) = lines.next_line().await {
                if tx.send(line).await.is_err() {
                    break;
                }
            }
        });
    }
    rx
}

/// The last [`KEEP_BYTES`] of output, as lines.
#[derive(Default)]
struct Kept {
    lines: VecDeque<String>,
    bytes: usize,
}

impl Kept {
    fn push(&mut self, line: String) {
        self.bytes += line.len() + 1;
        self.lines.push_back(line);
        while self.bytes > KEEP_BYTES && self.lines.len() > 1 {
            if let Some(old) = self.lines.pop_front() {
                self.bytes -= old.len() + 1;
            }
        }
    }

    fn text(&self) -> String {
        let mut text = String::with_capacity(self.bytes);
        for line in &self.lines {
            text.push_str(line);
            text.push('\n');
        }
        text
    }
}

/// The last `n` lines of `text`.
fn tail(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_end_of_the_output_is_kept() {
        let mut kept = Kept::default();
        for i in 0..20_000 {
            kept.push(format!("line {i}"));
        }
        assert!(kept.bytes <= KEEP_BYTES, "{}", kept.bytes);
        let text = kept.text();
        assert!(text.ends_with("line 19999\n"));
        assert!(!text.contains("line 0\n"));
        let t = tail(&text, TAIL_LINES);
        assert_eq!(t.lines().count(), TAIL_LINES);
        assert!(t.starts_with("line 19960"), "{t}");
    }
}
