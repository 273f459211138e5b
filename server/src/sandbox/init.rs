//! The agent's private view of processes, and its tie to the runner's life.
//!
//! Every process on the machine shows its command line in `/proc/<pid>/cmdline`, and an agent that may
//! read `/proc` (the CLIs need their own `/proc/self`) would read them all. So the exec step puts the
//! agent in a PID namespace of its own, with a fresh `/proc` mounted in a mount namespace of its own:
//!
//! ```text
//! runner ── exec step (pid P, leads process group P; stays outside, waits)
//!             └─ init (PID 1 of the namespace, group P; mounts /proc, applies the sandbox, forwards signals)
//!                  └─ agent (PID 2, leads a group of its own) ── its shells, MCP servers, …
//! ```
//!
//! Invariants:
//! - the exec step and init are tied to their parent's life with `PR_SET_PDEATHSIG(SIGKILL)`, checked
//!   after it is set (a parent that died before is caught too): `kill -9` of the runner kills the exec
//!   step, which kills init, and the kernel kills every process of a namespace whose init dies;
//! - the runner's signals to group P (SIGINT, SIGTERM, SIGKILL of a stop) reach the exec step, which
//!   blocks the catchable ones and so just waits, and init, which forwards SIGINT, SIGTERM, SIGHUP and
//!   SIGQUIT to the agent's group once each; SIGKILL of group P kills init and so the whole namespace;
//! - init exits as soon as the agent does (its code, or 128 + the signal that killed it), which also
//!   ends what the agent left running, as a stop of the whole group did before;
//! - the agent is never PID 1, which the kernel would shield from signals it has no handler for;
//! - Landlock, the capability drop and the seccomp filter are applied by init after the mount, before it
//!   starts the agent, so they hold for the agent and everything it starts.

use std::ffi::OsString;
use std::os::unix::process::CommandExt as _;

use nix::errno::Errno;
use nix::mount::{MsFlags, mount};
use nix::sched::{CloneFlags, unshare};
use nix::sys::signal::{SigSet, SigmaskHow, Signal, killpg, sigprocmask};
use nix::sys::wait::{WaitPidFlag, WaitStatus, waitpid};
use nix::unistd::Pid;

use super::error::SandboxError;
use super::policy::Policy;

/// The signals a stop sends that the exec step ignores and init forwards to the agent.
const FORWARDED: [Signal; 4] = [
    Signal::SIGINT,
    Signal::SIGTERM,
    Signal::SIGHUP,
    Signal::SIGQUIT,
];

/// Binds this process's life to `parent`'s: SIGKILL when it dies, and an error if it already did (the
/// parent pid is read from `/proc/self/stat`, which as long as this process has not mounted its own
/// `/proc` is the parent namespace's view: `getppid` says 0 for init, whose parent is outside).
pub fn die_with(parent: u32) -> Result<(), SandboxError> {
    nix::sys::prctl::set_pdeathsig(Signal::SIGKILL)
        .map_err(|e| SandboxError::step("binding the agent to the runner's life", e))?;
    let stat = std::fs::read_to_string("/proc/self/stat")
        .map_err(|e| SandboxError::step("reading /proc/self/stat", e))?;
    // After the `(comm)` field: state, then ppid.
    let ppid = stat
        .rsplit_once(')')
        .and_then(|(_, rest)| rest.split_whitespace().nth(1))
        .and_then(|p| p.parse::<u32>().ok());
    if ppid != Some(parent) {
        return Err(SandboxError::ParentGone(parent));
    }
    Ok(())
}

/// The exec step's side (outside the namespace): makes the private PID and mount namespaces, starts
/// init in them (`sandbox-exec --init`), waits for it and returns its exit code.
pub fn enter(
    policy_json: &str,
    probe: bool,
    program: &OsString,
    args: &[OsString],
) -> Result<u8, SandboxError> {
    unshare(CloneFlags::CLONE_NEWPID | CloneFlags::CLONE_NEWNS)
        .map_err(|e| SandboxError::step("cannot make the agent's private process namespace", e))?;
    // Nothing mounted here (the namespace's /proc) may propagate back to the machine's mount table.
    mount(
        None::<&str>,
        "/",
        None::<&str>,
        MsFlags::MS_REC | MsFlags::MS_PRIVATE,
        None::<&str>,
    )
    .map_err(|e| SandboxError::step("making the agent's mounts private", e))?;
    // Signals to the group are for the agent (init forwards them); this process only waits for init.
    // The mask is inherited by nothing: the standard library empties it in every child it starts.
    block(&FORWARDED)?;
    let exe = std::fs::read_link("/proc/self/exe")
        .map_err(|e| SandboxError::step("finding the muster executable", e))?;
    let mut init = std::process::Command::new(exe);
    init.args([super::exec::SUBCOMMAND, "--init", "--parent-pid"])
        .arg(std::process::id().to_string())
        .args(["--policy", policy_json]);
    if probe {
        init.arg("--probe");
    }
    init.arg("--").arg(program).args(args);
    let status = init
        .status()
        .map_err(|e| SandboxError::step("starting the agent's namespace", e))?;
    let code = exit_code(status.code(), {
        use std::os::unix::process::ExitStatusExt as _;
        status.signal()
    });
    // An agent that a signal ended (128 + N, as init reports it) ends the exec step the same way, so
    // the runner sees what it always saw: no exit code, the process was killed.
    if let Some(signal) = code
        .checked_sub(128)
        .and_then(|n| Signal::try_from(i32::from(n)).ok())
        // Not the signals whose default is a core dump (it would land in the worktree) or nothing.
        .filter(|s| {
            matches!(
                s,
                Signal::SIGINT
                    | Signal::SIGTERM
                    | Signal::SIGHUP
                    | Signal::SIGKILL
                    | Signal::SIGPIPE
            )
        })
    {
        let _ = sigprocmask(SigmaskHow::SIG_SETMASK, Some(&SigSet::empty()), None);
        let _ = nix::sys::signal::raise(signal);
    }
    Ok(code)
}

/// Init's side (PID 1 of the namespace): mounts the namespace's `/proc`, applies the sandbox, starts the
/// agent as PID 2 in a process group of its own, forwards stop signals to that group, reaps every child
/// and exits with the agent's code when the agent ends.
pub fn run(
    policy: &Policy,
    probe: bool,
    program: &OsString,
    args: &[OsString],
) -> Result<u8, SandboxError> {
    // Blocked before anything can arrive, and taken with `sigwait` below: PID 1 would otherwise drop
    // them, having no handler.
    let mut waited = FORWARDED.to_vec();
    waited.push(Signal::SIGCHLD);
    let set = block(&waited)?;
    mount(
        Some("proc"),
        "/proc",
        Some("proc"),
        MsFlags::MS_NOSUID | MsFlags::MS_NODEV | MsFlags::MS_NOEXEC,
        None::<&str>,
    )
    .map_err(|e| SandboxError::step("mounting the agent's own /proc", e))?;
    if probe {
        return Ok(0);
    }
    super::exec::restrict(policy)?;
    let agent = std::process::Command::new(program)
        .args(args)
        .process_group(0)
        .spawn()
        .map_err(|source| SandboxError::Exec {
            program: program.to_string_lossy().into_owned(),
            source,
        })?;
    let agent = Pid::from_raw(i32::try_from(agent.id()).map_err(|_| SandboxError::PidOutOfRange)?);
    loop {
        let signal = set
            .wait()
            .map_err(|e| SandboxError::step("waiting for the agent", e))?;
        if signal != Signal::SIGCHLD {
            // ESRCH: the group is gone, and its SIGCHLD is on its way.
            let _ = killpg(agent, signal);
            continue;
        }
        if let Some(code) = reap(agent)? {
            return Ok(code);
        }
    }
}

/// Reaps every child that has ended; `Some(code)` once the agent is among them.
fn reap(agent: Pid) -> Result<Option<u8>, SandboxError> {
    loop {
        match waitpid(None, Some(WaitPidFlag::WNOHANG)) {
            Ok(WaitStatus::Exited(pid, code)) if pid == agent => {
                return Ok(Some(exit_code(Some(code), None)));
            }
            Ok(WaitStatus::Signaled(pid, signal, _)) if pid == agent => {
                return Ok(Some(exit_code(None, Some(signal as i32))));
            }
            Ok(WaitStatus::StillAlive) | Err(Errno::ECHILD) => return Ok(None),
            Ok(_) | Err(Errno::EINTR) => {} // another descendant, reparented to init: reaped
            Err(e) => return Err(SandboxError::step("reaping the agent's processes", e)),
        }
    }
}

/// Blocks `signals` in this (single-threaded) process and returns them as a set.
fn block(signals: &[Signal]) -> Result<SigSet, SandboxError> {
    let mut set = SigSet::empty();
    for signal in signals {
        set.add(*signal);
    }
    sigprocmask(SigmaskHow::SIG_BLOCK, Some(&set), None)
        .map_err(|e| SandboxError::step("blocking signals", e))?;
    Ok(set)
}

/// An exit code as a shell reports it: the code, or 128 + the signal that ended the process.
fn exit_code(code: Option<i32>, signal: Option<i32>) -> u8 {
    match (code, signal) {
        (Some(code), _) => u8::try_from(code & 0xff).unwrap_or(1),
        (None, Some(signal)) => u8::try_from(128 + (signal & 0x7f)).unwrap_or(1),
        (None, None) => 1,
    }
}
