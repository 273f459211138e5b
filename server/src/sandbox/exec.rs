//! The exec step: `muster sandbox-exec --policy <json> -- PROGRAM ARGS…`, the process every agent starts as.
//!
//! It runs before any async runtime exists (`main` dispatches it first), so the process is single-threaded
//! and the Landlock domain covers the one thread that then `exec`s the agent (Landlock restricts only the
//! calling thread and its future children). In order:
//! 1. the ruleset is created with every file-system right of the policy's ABI handled, TCP connect handled
//!    (ABI ≥ 4) and signal and abstract-unix-socket scoping (ABI ≥ 6), as a hard requirement: a kernel
//!    that lacks any of it makes the step fail instead of running the agent with less;
//! 2. the policy's paths are opened here (so a `/proc/self` rule names this process, which becomes the
//!    agent) and added with their rights, single files with file-only rights;
//! 3. `no_new_privs` is set and the ruleset enforced (`restrict_self`), which must report full enforcement;
//! 4. every capability is dropped (bounding, ambient, inheritable, effective, permitted) and checked to be
//!    gone, so that even as uid 0 the agent cannot read another process's `/proc/<pid>/environ`, open raw
//!    sockets or override file permissions;
//! 5. the program is `exec`ed: same pid, same environment (HOME and TMPDIR are the run's, set by the
//!    runner), same standard streams; every other descriptor of the server is close-on-exec.

use std::ffi::OsString;
use std::os::unix::process::CommandExt as _;

use caps::CapSet;
use landlock::{
    ABI, Access as _, AccessFs, AccessNet, BitFlags, CompatLevel, Compatible as _, NetPort,
    PathBeneath, PathFd, Ruleset, RulesetAttr as _, RulesetCreatedAttr as _, RulesetStatus, Scope,
};

use super::policy::{Access, Policy};

/// The subcommand name (hidden from `--help`).
pub const SUBCOMMAND: &str = "sandbox-exec";

/// Applies `policy` to this process and executes `program`. Returns only on failure, with the reason.
pub fn run(policy_json: &str, program: &OsString, args: &[OsString]) -> String {
    let policy: Policy = match serde_json::from_str(policy_json) {
        Ok(p) => p,
        Err(e) => return format!("the sandbox policy cannot be read: {e}"),
    };
    if let Err(e) = restrict(&policy) {
        return e;
    }
    let e = std::process::Command::new(program).args(args).exec();
    format!("cannot execute {}: {e}", program.to_string_lossy())
}

/// Steps 1–4: the Landlock domain, `no_new_privs`, no capabilities.
pub fn restrict(policy: &Policy) -> Result<(), String> {
    let abi = abi(policy.abi)
        .ok_or_else(|| format!("Landlock ABI {} is not supported by this build", policy.abi))?;
    let fail = |what: &str, e: &dyn std::fmt::Display| format!("sandbox: {what}: {e}");
    let all = AccessFs::from_all(abi);
    let mut ruleset = Ruleset::default()
        .set_compatibility(CompatLevel::HardRequirement)
        .handle_access(all)
        .map_err(|e| fail("file-system rights", &e))?;
    if policy.abi >= 4 {
        ruleset = ruleset
            .handle_access(AccessNet::ConnectTcp)
            .map_err(|e| fail("TCP connect rules", &e))?;
    }
    if policy.abi >= 6 {
        ruleset = ruleset
            .scope(Scope::from_all(abi))
            .map_err(|e| fail("signal and socket scoping", &e))?;
    }
    let mut created = ruleset
        .create()
        .map_err(|e| fail("creating the ruleset", &e))?;
    for rule in &policy.paths {
        let fd = PathFd::new(&rule.path).map_err(|e| fail(&rule.path.display().to_string(), &e))?;
        created = created
            .add_rule(PathBeneath::new(fd, rights(rule.access, abi)))
            .map_err(|e| fail(&rule.path.display().to_string(), &e))?;
    }
    if policy.abi >= 4 {
        for port in &policy.connect_ports {
            created = created
                .add_rule(NetPort::new(*port, AccessNet::ConnectTcp))
                .map_err(|e| fail(&format!("port {port}"), &e))?;
        }
    }
    let status = created
        .restrict_self()
        .map_err(|e| fail("enforcing the ruleset", &e))?;
    if status.ruleset != RulesetStatus::FullyEnforced || !status.no_new_privs {
        return Err(format!(
            "sandbox: the kernel did not fully enforce the ruleset ({:?}, no_new_privs {})",
            status.ruleset, status.no_new_privs
        ));
    }
    drop_capabilities()
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
/// and checks that none is left.
fn drop_capabilities() -> Result<(), String> {
    let sets = [
        CapSet::Bounding,
        CapSet::Ambient,
        CapSet::Inheritable,
        CapSet::Effective,
        CapSet::Permitted,
    ];
    for set in sets {
        caps::clear(None, set)
            .map_err(|e| format!("sandbox: dropping {set:?} capabilities: {e}"))?;
    }
    for set in sets {
        let left = caps::read(None, set)
            .map_err(|e| format!("sandbox: reading {set:?} capabilities: {e}"))?;
        if !left.is_empty() {
            return Err(format!(
                "sandbox: {set:?} capabilities are still held: {left:?}"
            ));
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
