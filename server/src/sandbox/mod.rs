//! The sandbox around every agent process (Linux Landlock), shared by every runner and every kind of agent.
//!
//! - [`detect`] asks the kernel which Landlock ABI it has (by creating, never enforcing, a ruleset that
//!   needs each version's rights), once per process;
//! - [`decide`] turns that and the operator's `--allow-unsandboxed-agents` into the [`Mode`] in force,
//!   shown on the Runtimes page and by `muster runtime detect`;
//! - [`policy`] computes what one run's agent may reach;
//! - [`wrap`] makes the launch go through the exec step ([`exec`]: `muster sandbox-exec --policy <json> --
//!   PROGRAM ARGS…`), which applies the policy in the child itself and then `exec`s the agent. The policy
//!   travels as that argument (it holds paths and ports, no secret); after `exec` the agent's command
//!   line replaces it. The exec step also puts the agent in a private PID namespace where the runner
//!   can make one ([`process_view`], [`init`]) and ties it to the runner's life.
//!
//! Where the kernel lacks what the sandbox relies on, agents do not start (the run fails with the reason)
//! unless the operator chose to run them unsandboxed.

mod error;
pub mod exec;
pub mod init;
pub mod policy;

use std::sync::OnceLock;

use landlock::{
    Access as _, AccessFs, AccessNet, CompatLevel, Compatible as _, Ruleset, RulesetAttr as _,
    Scope,
};
use serde::Serialize;

use crate::domain::{SandboxNote, SandboxPath};

pub use error::SandboxError;
pub use policy::{Access, PathRule, Policy, ProcessView};

/// The Landlock ABI the sandbox relies on: file-system rights including `refer`, `truncate` and device
/// ioctls, TCP connect rules (ABI 4), and signal and abstract-unix-socket scoping (ABI 6), without which an
/// agent could signal the server.
pub const REQUIRED_ABI: u8 = 6;

/// How agents run on this server.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "mode", rename_all = "snake_case")]
pub enum Mode {
    /// Every agent runs inside the Landlock sandbox.
    Sandboxed { abi: u8 },
    /// The kernel cannot sandbox agents and the operator allowed them to run without it.
    Unsandboxed { reason: String },
    /// The kernel cannot sandbox agents: runs fail instead of starting.
    Refused { reason: String },
}

impl Mode {
    /// One line for people: the Runtimes page and `muster runtime detect`.
    pub fn describe(&self) -> String {
        match self {
            Mode::Sandboxed { abi } => {
                format!("sandboxed: every agent runs inside a Landlock sandbox (kernel ABI {abi})")
            }
            Mode::Unsandboxed { reason } => format!(
                "unsandboxed by the operator's choice (--allow-unsandboxed-agents): {reason}"
            ),
            Mode::Refused { reason } => format!(
                "agents refused: {reason}; start the server with --allow-unsandboxed-agents to run them without a sandbox"
            ),
        }
    }
}

/// The kernel's Landlock ABI version, `None` without Landlock. Detected once per process.
pub fn detect() -> Option<u8> {
    static ABI: OnceLock<Option<u8>> = OnceLock::new();
    *ABI.get_or_init(probe)
}

/// The highest ABI for which a ruleset handling all of that version's rights can be created.
fn probe() -> Option<u8> {
    (1..=10u8).rev().find(|v| {
        let Some(abi) = exec::abi(*v) else {
            return false;
        };
        let mut ruleset = Ruleset::default()
            .set_compatibility(CompatLevel::HardRequirement)
            .handle_access(AccessFs::from_all(abi));
        if *v >= 4 {
            ruleset = ruleset.and_then(|r| r.handle_access(AccessNet::ConnectTcp));
        }
        if *v >= 6 {
            ruleset = ruleset.and_then(|r| r.scope(Scope::from_all(abi)));
        }
        ruleset.and_then(|r| r.create()).is_ok()
    })
}

/// The mode in force for a kernel ABI (`None`: no Landlock) and the operator's choice.
pub fn decide(abi: Option<u8>, allow_unsandboxed: bool) -> Mode {
    let reason = match abi {
        Some(abi) if abi >= REQUIRED_ABI => return Mode::Sandboxed { abi },
        Some(abi) => format!(
            "the kernel's Landlock ABI is {abi}; the sandbox needs ABI {REQUIRED_ABI} (Linux 6.12 or later)"
        ),
        None => "the kernel has no Landlock (Linux 6.12 or later with Landlock enabled is needed)"
            .to_owned(),
    };
    if allow_unsandboxed {
        Mode::Unsandboxed { reason }
    } else {
        Mode::Refused { reason }
    }
}

/// The mode of this server.
pub fn mode(config: &crate::config::Config) -> Mode {
    decide(detect(), config.allow_unsandboxed_agents)
}

/// What agents started by `muster` at `self_exe` will see of other processes: a private PID namespace
/// when the exec step can make one here (tried once per process, by running it in probe mode: it needs
/// root, or a container allowed to unshare and mount `/proc`), else only `/proc/self`.
pub fn process_view(self_exe: &std::path::Path) -> ProcessView {
    static VIEW: OnceLock<ProcessView> = OnceLock::new();
    *VIEW.get_or_init(|| {
        let policy = Policy {
            abi: REQUIRED_ABI,
            paths: Vec::new(),
            connect_ports: Vec::new(),
            process_view: ProcessView::Namespace,
        };
        let Ok(json) = serde_json::to_string(&policy) else {
            return ProcessView::SelfOnly;
        };
        let probe = std::process::Command::new(self_exe)
            .args([exec::SUBCOMMAND, "--probe", "--policy", &json, "--", "true"])
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .output();
        match probe {
            Ok(out) if out.status.success() => ProcessView::Namespace,
            Ok(out) => {
                tracing::warn!(
                    error = %String::from_utf8_lossy(&out.stderr).trim(),
                    "agents get no private PID namespace here; /proc is limited to /proc/self"
                );
                ProcessView::SelfOnly
            }
            Err(e) => {
                tracing::warn!(error = %e, "cannot probe for PID namespaces");
                ProcessView::SelfOnly
            }
        }
    })
}

/// Makes `launch` start through the exec step with `policy`: `<muster> sandbox-exec --parent-pid <this
/// process> --policy <json> -- PROGRAM ARGS…`, with `HOME` and `TMPDIR` set last (so a profile's
/// variables cannot move them). The exec step dies with this process.
pub fn wrap(
    mut launch: muster_agents::LaunchSpec,
    policy: &Policy,
    self_exe: &std::path::Path,
    home: &std::path::Path,
    tmp: &std::path::Path,
) -> Result<muster_agents::LaunchSpec, SandboxError> {
    let json = serde_json::to_string(policy).map_err(SandboxError::PolicyUnwritable)?;
    let mut args = vec![
        exec::SUBCOMMAND.to_owned(),
        "--parent-pid".to_owned(),
        std::process::id().to_string(),
        "--policy".to_owned(),
        json,
        "--".to_owned(),
        launch.program.display().to_string(),
    ];
    args.append(&mut launch.args);
    launch.args = args;
    launch.program = self_exe.to_path_buf();
    launch.env.retain(|(k, _)| k != "HOME" && k != "TMPDIR");
    launch
        .env
        .push(("HOME".to_owned(), home.display().to_string()));
    launch
        .env
        .push(("TMPDIR".to_owned(), tmp.display().to_string()));
    Ok(launch)
}

/// The `sandbox` event: the mode, and the rules and ports when sandboxed, for the run page and
/// `muster run logs`.
pub fn event_note(mode: &Mode, policy: Option<&Policy>) -> SandboxNote {
    let mut note = SandboxNote {
        mode: mode.describe(),
        ..SandboxNote::default()
    };
    if let Some(policy) = policy {
        note.abi = Some(policy.abi.into());
        note.paths = Some(
            policy
                .paths
                .iter()
                .map(|r| SandboxPath {
                    path: r.path.display().to_string(),
                    access: r.access.label().to_owned(),
                })
                .collect(),
        );
        note.connect_ports = Some(policy.connect_ports.clone());
        // The exec step's seccomp filter, applied to every sandboxed agent.
        note.unix_sockets = Some("refused".to_owned());
        note.udp_netlink = Some("refused".to_owned());
        note.process_view = Some(serde_json::to_value(policy.process_view).unwrap_or_default());
    }
    note
}

/// The `sandbox` event as readable lines (one per rule, then the ports).
pub fn event_lines(note: &SandboxNote) -> Vec<String> {
    let mut lines = Vec::new();
    if !note.mode.is_empty() {
        lines.push(note.mode.clone());
    }
    if let Some(abi) = note.abi {
        lines.push(format!("Landlock ABI {abi}; no capabilities; no_new_privs"));
    }
    if note.unix_sockets.as_deref() == Some("refused") {
        lines.push(
            "unix sockets: refused (seccomp: socket(AF_UNIX) fails with EACCES; stream socketpairs allowed)"
                .to_owned(),
        );
    }
    if note.udp_netlink.as_deref() == Some("refused") {
        lines.push(
            "UDP and netlink: refused (seccomp: socket(AF_INET/AF_INET6, SOCK_DGRAM) and socket(AF_NETLINK) fail with EACCES)"
                .to_owned(),
        );
    }
    if let Some(view) = note
        .process_view
        .clone()
        .and_then(|v| serde_json::from_value::<ProcessView>(v).ok())
    {
        lines.push(view.describe().to_owned());
    }
    for rule in note.paths.iter().flatten() {
        lines.push(format!("{:<22} {}", rule.access, rule.path));
    }
    if let Some(ports) = &note.connect_ports {
        let ports: Vec<String> = ports.iter().map(ToString::to_string).collect();
        lines.push(format!("TCP connect only to ports {}", ports.join(", ")));
    }
    if let Some(egress) = &note.egress {
        let proxy = egress
            .proxy
            .as_deref()
            .map_or_else(String::new, |p| format!(" (through the egress proxy {p})"));
        lines.push(format!("egress: {}{proxy}", egress.summary));
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_kernel_without_what_we_need_refuses_agents_unless_the_operator_allows_them() {
        assert_eq!(decide(Some(7), false), Mode::Sandboxed { abi: 7 });
        assert_eq!(decide(Some(7), true), Mode::Sandboxed { abi: 7 });
        let refused = decide(None, false);
        assert!(matches!(refused, Mode::Refused { .. }));
        assert_eq!(
            refused.describe(),
            "agents refused: the kernel has no Landlock (Linux 6.12 or later with Landlock enabled is needed); start the server with --allow-unsandboxed-agents to run them without a sandbox"
        );
        assert!(matches!(decide(Some(5), false), Mode::Refused { .. }));
        assert_eq!(
            decide(Some(5), true).describe(),
            "unsandboxed by the operator's choice (--allow-unsandboxed-agents): the kernel's Landlock ABI is 5; the sandbox needs ABI 6 (Linux 6.12 or later)"
        );
    }
}
