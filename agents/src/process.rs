//! Child processes: the only module that creates them (clippy's `disallowed-methods` bans
//! `tokio::process::Command::new` elsewhere).
//!
//! Invariants:
//! - a child gets an explicit environment: `PATH` plus the [`LaunchSpec`]'s variables, nothing
//!   inherited from the server (no `DATABASE_URL`, no keys it was not given);
//! - every child leads its own process group, so stopping it reaches the shells and MCP servers it
//!   started; [`stop_group`] escalates SIGINT → SIGTERM → SIGKILL and always reaps;
//! - stdin carries the prompt and is closed right after, because Codex and OpenCode read it to EOF;
//! - output lines are read with a length cap ([`CappedLines`]).

use std::ffi::OsStr;
use std::io;
use std::process::{ExitStatus, Stdio};
use std::time::Duration;

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncWriteExt};
use tokio::process::{Child, Command};

use crate::{Error, LaunchSpec};

/// Longest output line kept; the rest of a longer line is dropped and replaced by a marker.
pub const MAX_LINE_BYTES: usize = 1024 * 1024;
/// How long a child may take to exit after SIGINT before it gets SIGTERM.
pub const INT_GRACE: Duration = Duration::from_secs(10);
/// How long a child may take to exit after SIGTERM before its group gets SIGKILL.
pub const TERM_GRACE: Duration = Duration::from_secs(5);

/// Creates a `Command`. The single place that calls `Command::new`; every child, including the
/// `kill` helper, starts here.
#[allow(clippy::disallowed_methods)] // This module is the designated spawner (clippy.toml).
fn new_command(program: impl AsRef<OsStr>) -> Command {
    Command::new(program)
}

/// The server's own `PATH`, the one variable children inherit (STYLE F34), so that `#!/usr/bin/env
/// node` launchers and the shells agents start keep working.
#[allow(clippy::disallowed_methods)] // PATH is process state, not configuration.
pub fn inherited_path() -> Option<std::ffi::OsString> {
    std::env::var_os("PATH")
}

/// Turns a launch spec into a command: cleared environment plus `PATH` and the spec's variables,
/// the spec's cwd, stdin piped only when there is a prompt, stdout and stderr piped, its own
/// process group, and killed if dropped (a last resort; use [`stop_group`]).
pub fn to_command(spec: &LaunchSpec) -> Command {
    let mut command = new_command(&spec.program);
    command.args(&spec.args).env_clear();
    if let Some(path) = inherited_path() {
        command.env("PATH", path);
    }
    command
        .envs(spec.env.iter().map(|(k, v)| (k, v)))
        .current_dir(&spec.cwd)
        .stdin(if spec.stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    command
}

/// Writes the spec's files, starts the process and feeds it the prompt (closing stdin after).
/// A missing program is [`Error::NotInstalled`]; other failures are [`Error::Spawn`].
pub async fn spawn(spec: &LaunchSpec) -> Result<Child, Error> {
    for (path, contents) in &spec.files {
        if let Some(parent) = path.parent() {
            tokio::fs::create_dir_all(parent)
                .await
                .map_err(Error::Spawn)?;
        }
        tokio::fs::write(path, contents)
            .await
            .map_err(Error::Spawn)?;
    }
    let mut child = to_command(spec).spawn().map_err(|e| {
        // NotFound means a missing program or a missing cwd; only the first is "not installed".
        if e.kind() == io::ErrorKind::NotFound && spec.cwd.is_dir() {
            Error::NotInstalled {
                cli: spec.program.display().to_string(),
            }
        } else {
            Error::Spawn(e)
        }
    })?;
    if let (Some(prompt), Some(mut stdin)) = (spec.stdin.clone(), child.stdin.take()) {
        // A separate task, so a prompt larger than the pipe buffer cannot block the caller. A
        // write error means the child already exited; its exit status reports that.
        tokio::spawn(async move {
            let _ = stdin.write_all(prompt.as_bytes()).await;
            let _ = stdin.shutdown().await;
        });
    }
    Ok(child)
}

/// Stops `child` and its whole process group gracefully with the default waits, and reaps it.
pub async fn stop_group(child: &mut Child) -> io::Result<ExitStatus> {
    stop_group_with(child, INT_GRACE, TERM_GRACE).await
}

/// [`stop_group`] with explicit waits: SIGINT, wait `int_grace`, SIGTERM, wait `term_grace`,
/// SIGKILL. Once the leader has exited, what is left of the group is killed too.
pub async fn stop_group_with(
    child: &mut Child,
    int_grace: Duration,
    term_grace: Duration,
) -> io::Result<ExitStatus> {
    let Some(pgid) = child.id() else {
        return child.wait().await; // Already reaped: `wait` returns the cached status.
    };
    for (signal, grace) in [(Signal::SIGINT, int_grace), (Signal::SIGTERM, term_grace)] {
        if !signal_group(pgid, signal) {
            break; // ESRCH: the group is gone; just reap.
        }
        if let Ok(status) = tokio::time::timeout(grace, child.wait()).await {
            signal_group(pgid, Signal::SIGKILL);
            return status;
        }
    }
    kill_group(child).await
}

/// Kills `child`'s process group at once with SIGKILL and reaps the child.
pub async fn kill_group(child: &mut Child) -> io::Result<ExitStatus> {
    if let Some(pgid) = child.id() {
        signal_group(pgid, Signal::SIGKILL);
    }
    // The leader may sit in another group if it changed its own; kill it directly as well.
    let _ = child.start_kill();
    child.wait().await
}

/// Sends `signal` to process group `pgid` (`killpg`, no `kill` process spawned); false when nothing
/// received it (the group is gone). Never signals groups 0 and 1 (ours, and everything's).
fn signal_group(pgid: u32, signal: Signal) -> bool {
    match i32::try_from(pgid) {
        Ok(pgid) if pgid > 1 => killpg(Pid::from_raw(pgid), signal).is_ok(),
        _ => false,
    }
}

/// Kills whatever is left of process group `pgid` with SIGKILL (e.g. background children of a leader
/// that already exited and was reaped); false when nothing was left. Orphans are reparented to init,
/// which reaps them.
pub fn kill_leftovers(pgid: u32) -> bool {
    signal_group(pgid, Signal::SIGKILL)
}

/// The live (not zombie) members of process group `pgid`, read from `/proc` (Linux; empty elsewhere).
pub fn group_members(pgid: u32) -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            // After the `(comm)` field: state, ppid, pgrp.
            let mut rest = stat
                .rsplit_once(')')
                .map_or("", |(_, r)| r)
                .split_whitespace();
            let state = rest.next().unwrap_or("Z");
            let pgrp = rest.nth(1).and_then(|g| g.parse::<u32>().ok());
            pgrp == Some(pgid) && state != "Z" && state != "X"
        })
        .collect()
}

/// Whether process group `pgid` still has a member whose environment holds `key=value`. This is how a
/// restarted server recognises an orphaned agent of one of its runs (the run id is in every child's
/// environment) without trusting a pid that may have been reused.
pub fn group_has_env(pgid: u32, key: &str, value: &str) -> bool {
    let wanted = format!("{key}={value}");
    group_members(pgid).into_iter().any(|pid| {
        std::fs::read(format!("/proc/{pid}/environ"))
            .is_ok_and(|env| env.split(|b| *b == 0).any(|v| v == wanted.as_bytes()))
    })
}

/// A short helper command (e.g. `git`): run to completion with `PATH` plus `env` only, in `cwd`, no
/// stdin, output captured. Past `timeout` its process group is killed and the result is an
/// [`io::ErrorKind::TimedOut`] error.
pub async fn run_captured(
    program: &str,
    args: &[String],
    cwd: &std::path::Path,
    env: &[(String, String)],
    timeout: Duration,
) -> io::Result<std::process::Output> {
    let mut command = new_command(program);
    command.args(args).env_clear();
    if let Some(path) = inherited_path() {
        command.env("PATH", path);
    }
    command
        .envs(env.iter().map(|(k, v)| (k, v)))
        .current_dir(cwd)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    let child = command.spawn()?;
    let pgid = child.id();
    match tokio::time::timeout(timeout, child.wait_with_output()).await {
        Ok(output) => output,
        Err(_) => {
            if let Some(pgid) = pgid {
                signal_group(pgid, Signal::SIGKILL);
            }
            Err(io::Error::new(
                io::ErrorKind::TimedOut,
                format!("{program} did not finish within {} s", timeout.as_secs()),
            ))
        }
    }
}

/// Reads lines and caps their length: bytes past `cap` are dropped and the line ends with
/// `… [truncated N bytes]`. Invalid UTF-8 is replaced, never an error.
#[derive(Debug)]
pub struct CappedLines<R> {
    reader: R,
    cap: usize,
    line: Vec<u8>,
}

impl<R: AsyncBufRead + Unpin> CappedLines<R> {
    /// Lines of `reader`, capped at [`MAX_LINE_BYTES`].
    pub fn new(reader: R) -> Self {
        Self::with_cap(reader, MAX_LINE_BYTES)
    }

    /// Lines of `reader`, capped at `cap` bytes.
    pub fn with_cap(reader: R, cap: usize) -> Self {
        Self {
            reader,
            cap,
            line: Vec::new(),
        }
    }

    /// The next line without its `\n` (or `\r\n`), or `None` at end of input.
    pub async fn next_line(&mut self) -> io::Result<Option<String>> {
        self.line.clear();
        let mut dropped = 0usize;
        let mut seen_any = false;
        loop {
            let available = self.reader.fill_buf().await?;
            if available.is_empty() {
                if !seen_any {
                    return Ok(None);
                }
                break;
            }
            seen_any = true;
            let (chunk, used, done) = match available.iter().position(|&b| b == b'\n') {
                Some(i) => (&available[..i], i + 1, true),
                None => (available, available.len(), false),
            };
            let room = self.cap.saturating_sub(self.line.len());
            let kept = chunk.len().min(room);
            self.line.extend_from_slice(&chunk[..kept]);
            dropped += chunk.len() - kept;
            self.reader.consume(used);
            if done {
                break;
            }
        }
        if dropped == 0 && self.line.last() == Some(&b'\r') {
            self.line.pop();
        }
        let mut text = String::from_utf8_lossy(&self.line).into_owned();
        if dropped > 0 {
            text.push_str(&format!("… [truncated {dropped} bytes]"));
        }
        Ok(Some(text))
    }
}

#[cfg(test)]
mod tests;
