//! The exec step: `muster sandbox-exec --parent-pid <runner> --policy <json> -- PROGRAM ARGS…`, the
//! process every agent starts as.
//!
//! It runs before any async runtime exists (`main` dispatches it first), so the process is single-threaded
//! and the Landlock domain covers the one thread that then starts the agent (Landlock restricts only the
//! calling thread and its future children). In order:
//! 0. it binds itself to the runner's life (`PR_SET_PDEATHSIG(SIGKILL)`, see [`super::init`]); with a
//!    private process view it then makes the PID and mount namespaces and starts our init, which mounts
//!    the namespace's `/proc` and does steps 1–5 before starting the agent as PID 2 (step 6 is then a
//!    spawn, not an `exec`); without one, this process does steps 1–6 itself;
//! 1. the ruleset is created with every file-system right of the policy's ABI handled, TCP connect handled
//!    (ABI ≥ 4) and signal and abstract-unix-socket scoping (ABI ≥ 6), as a hard requirement: a kernel
//!    that lacks any of it makes the step fail instead of running the agent with less;
//! 2. the policy's paths are opened here (so a `/proc/self` rule names this process, which becomes the
//!    agent, and `/proc` the namespace's own) and added with their rights, single files with file-only
//!    rights;
//! 3. `no_new_privs` is set and the ruleset enforced (`restrict_self`), which must report full enforcement;
//! 4. every capability is dropped (bounding, ambient, inheritable, effective, permitted) and checked to be
//!    gone, so that even as uid 0 the agent cannot read another process's `/proc/<pid>/environ`, open raw
//!    sockets or override file permissions;
//! 5. a seccomp filter makes `socket(2)` fail with `EACCES` for `AF_UNIX` (Landlock before ABI 9 does not
//!    govern connecting to a path-named unix socket, such as PostgreSQL's in `/run/postgresql`, and file
//!    permissions do not stop uid 0), for `AF_NETLINK`, and for `SOCK_DGRAM` on `AF_INET`/`AF_INET6`
//!    (Landlock's network rules cover TCP only: UDP would reach any host and port), and with it the two
//!    other ways to a unix socket: `socketpair(2)` of `AF_UNIX` datagram sockets (which could `sendto` a
//!    path; stream and seqpacket pairs, which node and Bun use for child stdio, stay allowed) and
//!    `io_uring_setup(2)` (an io_uring can create sockets without the `socket` system call). Other
//!    architectures' system calls (32-bit on x86_64) kill the process;
//! 6. the program is started: same environment (HOME and TMPDIR are the run's, set by the runner), same
//!    standard streams; every other descriptor of the server is close-on-exec.

use std::ffi::OsString;
use std::os::unix::process::CommandExt as _;

use caps::CapSet;
use landlock::{
    ABI, Access as _, AccessFs, AccessNet, BitFlags, CompatLevel, Compatible as _, NetPort,
    PathBeneath, PathFd, Ruleset, RulesetAttr as _, RulesetCreatedAttr as _, RulesetStatus, Scope,
};

use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
    SeccompRule, TargetArch,
};

use super::error::SandboxError;
use super::policy::{Access, Policy, ProcessView};

/// The subcommand name (hidden from `--help`).
pub const SUBCOMMAND: &str = "sandbox-exec";

/// What the runner asked the exec step to do (the hidden flags of `muster sandbox-exec`).
#[derive(Debug, Clone, Copy, Default)]
pub struct Stage {
    /// The runner's pid: the exec step dies with it (`PR_SET_PDEATHSIG`), and gives up at once if it is
    /// already gone.
    pub parent: Option<u32>,
    /// This process is the private PID namespace's init ([`super::init`]), started by the exec step.
    pub init: bool,
    /// Only check that a private PID namespace with its own `/proc` can be made, then exit 0.
    pub probe: bool,
}

/// Applies `policy` to this process and starts `program` (steps 0–6). Returns the exit code the exec
/// step ends with (the agent's, through the namespace's init) or, on failure, the reason.
pub fn run(
    policy_json: &str,
    stage: Stage,
    program: &OsString,
    args: &[OsString],
) -> Result<u8, SandboxError> {
    let policy: Policy =
        serde_json::from_str(policy_json).map_err(SandboxError::PolicyUnreadable)?;
    if let Some(parent) = stage.parent {
        super::init::die_with(parent)?;
    }
    if stage.init {
        return super::init::run(&policy, stage.probe, program, args);
    }
    if stage.probe || policy.process_view == ProcessView::Namespace {
        return super::init::enter(policy_json, stage.probe, program, args);
    }
    restrict(&policy)?;
    let source = std::process::Command::new(program).args(args).exec();
    Err(SandboxError::Exec {
        program: program.to_string_lossy().into_owned(),
        source,
    })
}

/// Steps 1–5: the Landlock domain, `no_new_privs`, no capabilities, no unix sockets.
pub fn restrict(policy: &Policy) -> Result<(), SandboxError> {
    let abi = abi(policy.abi).ok_or(SandboxError::UnsupportedAbi(policy.abi))?;
    let all = AccessFs::from_all(abi);
    let mut ruleset = Ruleset::default()
        .set_compatibility(CompatLevel::HardRequirement)
        .handle_access(all)
        .map_err(|e| SandboxError::step("file-system rights", e))?;
    if policy.abi >= 4 {
        ruleset = ruleset
            .handle_access(AccessNet::ConnectTcp)
            .map_err(|e| SandboxError::step("TCP connect rules", e))?;
    }
    if policy.abi >= 6 {
        ruleset = ruleset
            .scope(Scope::from_all(abi))
            .map_err(|e| SandboxError::step("signal and socket scoping", e))?;
    }
    let mut created = ruleset
        .create()
        .map_err(|e| SandboxError::step("creating the ruleset", e))?;
    for rule in &policy.paths {
        // Opened here, so `/proc/self` names this process (the agent after `exec`), and `/proc` the
        // namespace's own proc mounted just before.
        let fd = PathFd::new(&rule.path)
            .map_err(|e| SandboxError::step(rule.path.display().to_string(), e))?;
        created = created
            .add_rule(PathBeneath::new(fd, rights(rule.access, abi)))
            .map_err(|e| SandboxError::step(rule.path.display().to_string(), e))?;
    }
    if policy.abi >= 4 {
        for port in &policy.connect_ports {
            created = created
                .add_rule(NetPort::new(*port, AccessNet::ConnectTcp))
                .map_err(|e| SandboxError::step(format!("port {port}"), e))?;
        }
    }
    let status = created
        .restrict_self()
        .map_err(|e| SandboxError::step("enforcing the ruleset", e))?;
    if status.ruleset != RulesetStatus::FullyEnforced || !status.no_new_privs {
        return Err(SandboxError::NotEnforced {
            ruleset: status.ruleset,
            no_new_privs: status.no_new_privs,
        });
    }
    drop_capabilities()?;
    refuse_sockets()
}

/// Step 5: the seccomp filter (installed after `no_new_privs`, which `restrict_self` set; it stays in
/// force across `exec` and in every child).
fn refuse_sockets() -> Result<(), SandboxError> {
    let filter = socket_filter()?;
    seccompiler::apply_filter(&filter)
        .map_err(|e| SandboxError::step("installing the seccomp filter", e))
}

/// The filter of step 5 for this build's architecture (x86_64, aarch64 or riscv64; others are refused).
pub fn socket_filter() -> Result<BpfProgram, SandboxError> {
    fn fail(e: impl std::fmt::Display) -> SandboxError {
        SandboxError::step("building the seccomp filter", e)
    }
    let arch = TargetArch::try_from(std::env::consts::ARCH)
        .map_err(|_| SandboxError::NoSeccompArch(std::env::consts::ARCH))?;
    let arg = |index: u8, op: SeccompCmpOp, value: libc::c_int| {
        SeccompCondition::new(index, SeccompCmpArgLen::Dword, op, value as u64).map_err(fail)
    };
    let unix_socket =
        SeccompRule::new(vec![arg(0, SeccompCmpOp::Eq, libc::AF_UNIX)?]).map_err(fail)?;
    // Netlink (routing, audit, …) in any form.
    let netlink =
        SeccompRule::new(vec![arg(0, SeccompCmpOp::Eq, libc::AF_NETLINK)?]).map_err(fail)?;
    // UDP (and ICMP "ping" sockets, also SOCK_DGRAM) over IPv4 and IPv6: Landlock rules cover TCP only.
    let datagram = |family: libc::c_int| -> Result<SeccompRule, SandboxError> {
        SeccompRule::new(vec![
            arg(0, SeccompCmpOp::Eq, family)?,
            arg(1, SeccompCmpOp::MaskedEq(0xf), libc::SOCK_DGRAM)?,
        ])
        .map_err(fail)
    };
    let socket_rules = vec![
        unix_socket,
        netlink,
        datagram(libc::AF_INET)?,
        datagram(libc::AF_INET6)?,
    ];
    // The type argument also carries SOCK_CLOEXEC and SOCK_NONBLOCK: compare its low 4 bits.
    let unix_datagram_pair = SeccompRule::new(vec![
        arg(0, SeccompCmpOp::Eq, libc::AF_UNIX)?,
        arg(1, SeccompCmpOp::MaskedEq(0xf), libc::SOCK_DGRAM)?,
    ])
    .map_err(fail)?;
    let mut rules = std::collections::BTreeMap::new();
    for offset in syscall_tables() {
        rules.insert(offset + libc::SYS_socket, socket_rules.clone());
        rules.insert(
            offset + libc::SYS_socketpair,
            vec![unix_datagram_pair.clone()],
        );
        // No condition: every call.
        rules.insert(offset + libc::SYS_io_uring_setup, vec![]);
    }
    let filter = SeccompFilter::new(
        rules,
        SeccompAction::Allow,
        SeccompAction::Errno(libc::EACCES as u32),
        arch,
    )
    .map_err(fail)?;
    BpfProgram::try_from(filter).map_err(fail)
}

/// The offsets of the system-call tables of this architecture's audit arch: on x86_64 also the x32 ABI's
/// (the same numbers with bit 30 set, reachable from a 64-bit process when the kernel has it).
fn syscall_tables() -> Vec<i64> {
    if cfg!(target_arch = "x86_64") {
        vec![0, 0x4000_0000]
    } else {
        vec![0]
    }
}

/// The rights of one rule at `abi`.
fn rights(access: Access, abi: ABI) -> BitFlags<AccessFs> {
    let read = AccessFs::from_read(abi);
    let file = AccessFs::from_file(abi);
    let no_exec = !BitFlags::from(AccessFs::Execute);
    match access {
        Access::ReadWrite => AccessFs::from_all(abi),
        Access::ReadExec => read,
        Access::Read => read & no_exec,
        Access::FileRead => file & read & no_exec,
        Access::FileReadExec => file & read,
        Access::FileReadWrite => file & no_exec,
    }
}

/// Drops every capability of every set, bounding first (that needs CAP_SETPCAP, itself dropped last),
/// and checks that none is left. A process without CAP_SETPCAP (any non-root user: `muster runner` on a
/// workstation) cannot shrink its bounding set; it holds no capability to lose, and with `no_new_privs`
/// (set before) no exec can gain one, so its bounding set is left as it is.
fn drop_capabilities() -> Result<(), SandboxError> {
    let can_bound = caps::has_cap(None, CapSet::Effective, caps::Capability::CAP_SETPCAP)
        .map_err(|e| SandboxError::step("reading the effective capabilities", e))?;
    let all = [
        CapSet::Bounding,
        CapSet::Ambient,
        CapSet::Inheritable,
        CapSet::Effective,
        CapSet::Permitted,
    ];
    let sets: Vec<CapSet> = all
        .into_iter()
        .filter(|set| can_bound || !matches!(set, CapSet::Bounding))
        .collect();
    for set in sets.iter().copied() {
        caps::clear(None, set)
            .map_err(|e| SandboxError::step(format!("dropping {set:?} capabilities"), e))?;
    }
    for set in sets.iter().copied() {
        let left = caps::read(None, set)
            .map_err(|e| SandboxError::step(format!("reading {set:?} capabilities"), e))?;
        if !left.is_empty() {
            return Err(SandboxError::CapabilitiesHeld { set, left });
        }
    }
    Ok(())
}

/// The crate's ABI for a version number; `None` past what this build knows.
pub fn abi(version: u8) -> Option<ABI> {
    Some(match version {
        1 => ABI::V1,
        2 => ABI::V2,
        3 => ABI::V3,
        4 => ABI::V4,
        5 => ABI::V5,
        6 => ABI::V6,
        7 => ABI::V7,
        8 => ABI::V8,
        9 => ABI::V9,
        10 => ABI::V10,
        _ => return None,
    })
}

/// `muster sandbox-exec` options (set by the runner).
#[derive(Debug, clap::Args)]
pub struct SandboxExecArgs {
    /// The policy: JSON of `sandbox::Policy`.
    #[arg(long)]
    pub policy: String,
    /// The pid of the process that starts this one: the exec step dies with it.
    #[arg(long)]
    pub parent_pid: Option<u32>,
    /// Run as the init of the agent's private PID namespace (started by the exec step itself).
    #[arg(long)]
    pub init: bool,
    /// Only check that a private PID namespace with its own /proc can be made here, then exit.
    #[arg(long)]
    pub probe: bool,
    /// The program to execute inside the sandbox.
    pub program: std::ffi::OsString,
    /// Its arguments.
    #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
    pub args: Vec<std::ffi::OsString>,
}
