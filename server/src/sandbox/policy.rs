//! What a run's agent may reach: the one place that decides it, for every runner and every kind of agent.
//!
//! A [`Policy`] is plain data (paths with rights, TCP ports) computed by the server per run and handed to
//! the exec step (`muster sandbox-exec`), which turns it into a Landlock ruleset. The rules (see
//! /work/shared/SANDBOX.md for the measurements behind them):
//! - read-write: the worktree W, the run's HOME H and TMPDIR T (W and T with the same rights, so a rename
//!   between them works); for the worktree of the run's private repository P (see
//!   `runner::executor::git::create`), only `P/objects`, the worktree's own `P/worktrees/<wt>`,
//!   `P/refs/heads/muster` and `P/logs/refs/heads/muster` (the rest of P is read-only, so an agent cannot
//!   plant hooks or config), and read-only the workspace's repository's objects that P's alternates name
//!   (none for a blind ensemble candidate, whose P holds a copy of its start's history);
//! - read + execute: `/usr` (and `/bin`, `/lib`, `/lib64`, `/sbin` when they are real folders), the
//!   agent CLI's install folder (the `node_modules` folder an npm launcher links into) and `node` when
//!   the CLI is a node script; a custom command's program; the `muster` executable (a file rule: agents
//!   use `muster issue …`, and `llama` agents run as `muster llama-loop`);
//! - read: `/etc`, `/dev/urandom` (a file rule); `/dev/null` read-write as a file rule; `/proc` when the
//!   agent gets a private PID namespace with its own `/proc` (see [`ProcessView`]), else only
//!   `/proc/self`;
//! - TCP connect: only the listed ports (the run's egress proxy, Muster's API, a loopback model
//!   endpoint's, and the operator's `--agent-ports`): every other host is reached through the proxy
//!   (`crate::egress`), which checks the agent's allow-list;
//! - read-write: the folders the operator added with `--agent-rw-path`.
//!
//! No rule may cover the data folder or the runs folder itself: a policy that would is refused.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::SandboxError;

/// What a rule allows beneath its path.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Access {
    /// Every file-system right (create, write, remove, rename, execute …).
    ReadWrite,
    /// Read files, list folders, execute programs.
    ReadExec,
    /// Read files and list folders.
    Read,
    /// A single file: read it.
    FileRead,
    /// A single file: read and write it.
    FileReadWrite,
    /// A single file: read and execute it.
    FileReadExec,
}

impl Access {
    /// How the run page and `muster run logs` name the right.
    pub fn label(self) -> &'static str {
        match self {
            Access::ReadWrite => "read-write",
            Access::ReadExec => "read, execute",
            Access::Read => "read",
            Access::FileRead => "read (file)",
            Access::FileReadWrite => "read-write (file)",
            Access::FileReadExec => "read, execute (file)",
        }
    }

    /// Whether the rule names one file rather than a folder.
    pub fn is_file(self) -> bool {
        matches!(
            self,
            Access::FileRead | Access::FileReadWrite | Access::FileReadExec
        )
    }
}

/// One path and what the agent may do beneath it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PathRule {
    pub path: PathBuf,
    pub access: Access,
}

/// Everything the exec step needs: the Landlock ABI the server detected, the path rules, the TCP ports
/// the agent may connect to and how it sees other processes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Policy {
    /// The kernel's Landlock ABI version (as detected by the server; the exec step requires it again).
    pub abi: u8,
    pub paths: Vec<PathRule>,
    pub connect_ports: Vec<u16>,
    /// Whether the exec step puts the agent in a private PID namespace.
    #[serde(default)]
    pub process_view: ProcessView,
}

/// What an agent sees of the machine's processes (their command lines may hold secrets).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ProcessView {
    /// A private PID namespace with its own `/proc`: only the agent's own processes exist for it.
    Namespace,
    /// No namespace (the runner cannot make one: not root, or a container without the right): `/proc`
    /// is readable only as `/proc/self`, the agent's own process.
    #[default]
    SelfOnly,
}

impl ProcessView {
    /// One line for the run page and `muster run logs`.
    pub fn describe(self) -> &'static str {
        match self {
            ProcessView::Namespace => {
                "processes: a private PID namespace with its own /proc (the agent sees only its own processes)"
            }
            ProcessView::SelfOnly => {
                "processes: no PID namespace here (not root, or not allowed); /proc is readable only as /proc/self"
            }
        }
    }
}

/// The facts about one run that the policy depends on.
#[derive(Debug, Clone)]
pub struct RunFacts<'a> {
    pub workdir: &'a Path,
    pub home: &'a Path,
    pub tmp: &'a Path,
    /// Whether the agent may only read its worktree (permission mode read-only).
    pub read_only: bool,
    /// The program that will be executed (as given: a name on `PATH` or a path).
    pub program: &'a Path,
    /// A custom agent's command line (run through `sh -c`), whose program is allowed too.
    pub custom_command: Option<&'a str>,
    /// Folders no rule may cover: the data folder and the runs folder.
    pub protected: &'a [&'a Path],
    pub abi: u8,
    pub connect_ports: Vec<u16>,
    /// The server's `PATH`, to find a program given by name.
    pub search_path: Option<&'a std::ffi::OsStr>,
    /// Folders the operator lets every agent read and write (`--agent-rw-path`).
    pub extra_rw: &'a [PathBuf],
    /// Single files of the run the agent may read (its git exclude file), when they exist.
    pub extra_read: &'a [PathBuf],
    /// The `muster` executable: every agent may run it (`muster issue …` with the run's token, and the
    /// `llama-loop` of `llama` agents).
    pub muster: &'a Path,
    /// Whether the agent gets a private PID namespace ([`super::process_view`] says if it can).
    pub process_view: ProcessView,
}

/// System folders every agent may read and execute beneath, when they exist as real folders (on merged-/usr
/// systems `/bin`, `/lib`, `/lib64` and `/sbin` are links into `/usr` and need no rule of their own).
const SYSTEM_EXEC: [&str; 5] = ["/usr", "/bin", "/sbin", "/lib", "/lib64"];

/// Builds the run's policy. Fails with a sentence when a rule would expose a protected folder or a needed
/// path cannot be found.
pub fn for_run(facts: &RunFacts<'_>) -> Result<Policy, SandboxError> {
    let mut rules: Vec<PathRule> = Vec::new();
    let mut add = |path: PathBuf, access: Access| {
        if !rules.iter().any(|r| r.path == path && r.access == access) {
            rules.push(PathRule { path, access });
        }
    };
    let work_access = if facts.read_only {
        Access::Read
    } else {
        Access::ReadWrite
    };
    add(facts.workdir.to_path_buf(), work_access);
    add(facts.home.to_path_buf(), Access::ReadWrite);
    add(facts.tmp.to_path_buf(), Access::ReadWrite);
    for (path, access) in git_rules(facts.workdir, facts.read_only)? {
        add(path, access);
    }
    for dir in SYSTEM_EXEC {
        let path = Path::new(dir);
        if path.symlink_metadata().is_ok_and(|m| m.is_dir()) {
            add(path.to_path_buf(), Access::ReadExec);
        }
    }
    add(PathBuf::from("/etc"), Access::Read);
    let proc = match facts.process_view {
        ProcessView::Namespace => "/proc",
        ProcessView::SelfOnly => "/proc/self",
    };
    add(PathBuf::from(proc), Access::Read);
    add(PathBuf::from("/dev/urandom"), Access::FileRead);
    add(PathBuf::from("/dev/null"), Access::FileReadWrite);
    for (path, access) in program_rules(facts) {
        add(path, access);
    }
    for path in facts.extra_rw {
        add(path.clone(), Access::ReadWrite);
    }
    for file in facts.extra_read.iter().filter(|f| f.is_file()) {
        add(file.clone(), Access::FileRead);
    }
    if let Ok(muster) = std::fs::canonicalize(facts.muster)
        && !SYSTEM_EXEC.iter().any(|d| muster.starts_with(d))
    {
        add(muster, Access::FileReadExec);
    }
    for rule in &rules {
        for protected in facts.protected {
            if covers(rule, protected) {
                return Err(SandboxError::Exposes {
                    rule: rule.path.clone(),
                    protected: protected.to_path_buf(),
                });
            }
        }
    }
    let mut ports = facts.connect_ports.clone();
    ports.sort_unstable();
    ports.dedup();
    Ok(Policy {
        abi: facts.abi,
        paths: rules,
        connect_ports: ports,
        process_view: facts.process_view,
    })
}

/// Whether `rule` gives access to `protected` or anything in it (the run's own folders sit inside the
/// runs folder, so only a rule on the folder itself or an ancestor counts).
fn covers(rule: &PathRule, protected: &Path) -> bool {
    let real = |p: &Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
    let (rule_path, protected) = (real(&rule.path), real(protected));
    if rule.access.is_file() {
        return rule_path == protected;
    }
    protected.starts_with(&rule_path)
}

/// The narrow git list for a worktree (SANDBOX.md pitfall 9): `W/.git` is a file naming the worktree's
/// git dir `R/.git/worktrees/<wt>`, whose `commondir` names `R/.git`.
fn git_rules(workdir: &Path, read_only: bool) -> Result<Vec<(PathBuf, Access)>, SandboxError> {
    let Ok(text) = std::fs::read_to_string(workdir.join(".git")) else {
        return Ok(Vec::new()); // No repository, or a plain clone inside W (covered by W's rule).
    };
    let Some(gitdir) = text.trim().strip_prefix("gitdir:").map(str::trim) else {
        return Ok(Vec::new());
    };
    let gitdir = workdir.join(gitdir);
    let common = match std::fs::read_to_string(gitdir.join("commondir")) {
        Ok(c) => gitdir.join(c.trim()),
        Err(_) => gitdir.clone(),
    };
    let resolve = |path: PathBuf| {
        std::fs::canonicalize(&path).map_err(|source| SandboxError::Resolve { path, source })
    };
    let common = resolve(common)?;
    let gitdir = resolve(gitdir)?;
    let mut rules = vec![(common.clone(), Access::Read)];
    // A private repository reads the workspace's repository's objects (never writes them): the folders
    // its alternates name, as the server wrote them before the agent started.
    if let Ok(alternates) = std::fs::read_to_string(common.join("objects/info/alternates")) {
        for line in alternates
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty() && !l.starts_with('#'))
        {
            let dir =
                std::fs::canonicalize(common.join("objects").join(line)).map_err(|source| {
                    SandboxError::ResolveAlternate {
                        line: line.to_owned(),
                        source,
                    }
                })?;
            rules.push((dir, Access::Read));
        }
    }
    let write = if read_only {
        Access::Read
    } else {
        Access::ReadWrite
    };
    let writable = [
        common.join("objects"),
        gitdir,
        common.join("refs/heads/muster"),
        common.join("logs/refs/heads/muster"),
    ];
    for dir in writable {
        if let Err(source) = std::fs::create_dir_all(&dir) {
            return Err(SandboxError::CreateDir { path: dir, source });
        }
        rules.push((dir, write));
    }
    Ok(rules)
}

/// The program's own rules: its install folder (or the file alone when it is a lone script), `node` for a
/// node launcher, and a custom command's first word.
fn program_rules(facts: &RunFacts<'_>) -> Vec<(PathBuf, Access)> {
    let mut rules = Vec::new();
    let mut programs = vec![facts.program.to_path_buf()];
    if let Some(word) = facts
        .custom_command
        .and_then(|c| c.split_whitespace().next())
        .filter(|w| !w.contains('='))
    {
        programs.push(PathBuf::from(word));
    }
    for program in programs {
        let Some(real) = resolve(&program, facts.search_path, facts.workdir) else {
            continue; // A shell builtin or a missing program: the spawn reports it.
        };
        if SYSTEM_EXEC.iter().any(|d| real.starts_with(d)) || real.starts_with(facts.workdir) {
            continue;
        }
        rules.push(install_rule(&real));
        if is_node_script(&real)
            && let Some(node) = resolve(Path::new("node"), facts.search_path, facts.workdir)
            && !SYSTEM_EXEC.iter().any(|d| node.starts_with(d))
        {
            rules.push(install_rule(&node));
        }
    }
    rules
}

/// The folder an installed program needs: the outermost `node_modules` above it (npm links `.bin`
/// entries into packages whose dependencies are siblings), else its own folder when it sits in a
/// folder named `bin` or a versioned install, else the file alone.
fn install_rule(real: &Path) -> (PathBuf, Access) {
    let mut outermost = None;
    for ancestor in real.ancestors() {
        if ancestor.file_name().is_some_and(|n| n == "node_modules") {
            outermost = Some(ancestor.to_path_buf());
        }
    }
    if let Some(dir) = outermost {
        return (dir, Access::ReadExec);
    }
    match real.parent() {
        Some(dir) => (dir.to_path_buf(), Access::ReadExec),
        None => (real.to_path_buf(), Access::FileReadExec),
    }
}

/// The real path of `program`: as given when it names a path (relative to `cwd`), else found on `path`.
fn resolve(program: &Path, path: Option<&std::ffi::OsStr>, cwd: &Path) -> Option<PathBuf> {
    let found = if program.components().count() > 1 {
        cwd.join(program)
    } else {
        which::which_in(program, path, cwd).ok()?
    };
    std::fs::canonicalize(found).ok()
}

/// Whether `file` starts with a `#!` line that runs node.
fn is_node_script(file: &Path) -> bool {
    use std::io::Read as _;
    let mut head = [0u8; 128];
    let Ok(mut f) = std::fs::File::open(file) else {
        return false;
    };
    let n = f.read(&mut head).unwrap_or(0);
    let head = &head[..n];
    head.starts_with(b"#!")
        && head
            .split(|b| *b == b'\n')
            .next()
            .is_some_and(|line| line.windows(4).any(|w| w == b"node"))
}

/// The TCP port of `url` (`http://host:port/…`; 80 for http and 443 for https without one).
pub fn url_port(url: &str) -> Option<u16> {
    let (scheme, rest) = url.trim().split_once("://")?;
    let authority = rest.split(['/', '?', '#']).next()?;
    let host_port = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    let port = if let Some(v6) = host_port.strip_prefix('[') {
        v6.split_once("]:").map(|(_, p)| p)
    } else {
        host_port.rsplit_once(':').map(|(_, p)| p)
    };
    match port {
        Some(p) => p.parse().ok(),
        None => match scheme.to_ascii_lowercase().as_str() {
            "http" | "ws" => Some(80),
            "https" | "wss" => Some(443),
            _ => None,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ports_come_from_urls() {
        assert_eq!(url_port("http://127.0.0.1:8080/v1"), Some(8080));
        assert_eq!(url_port("https://api.example.com/v1"), Some(443));
        assert_eq!(url_port("http://u:p@host"), Some(80));
        assert_eq!(url_port("http://[::1]:11434"), Some(11434));
        assert_eq!(url_port("nonsense"), None);
    }

    #[test]
    fn no_rule_may_cover_the_data_dir() {
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path().join("data");
        let (work, home, tmp) = (
            dir.path().join("w"),
            dir.path().join("h"),
            dir.path().join("t"),
        );
        for d in [&data, &work, &home, &tmp] {
            std::fs::create_dir_all(d).unwrap();
        }
        // A custom command that lives next to the data folder would expose it through its folder.
        let script = dir.path().join("agent.sh");
        std::fs::write(&script, "#!/bin/sh\n").unwrap();
        let command = script.display().to_string();
        let facts = RunFacts {
            workdir: &work,
            home: &home,
            tmp: &tmp,
            read_only: false,
            program: Path::new("sh"),
            custom_command: Some(&command),
            protected: &[&data],
            abi: 7,
            connect_ports: vec![443, 80, 443],
            search_path: Some(std::ffi::OsStr::new("/usr/bin:/bin")),
            extra_rw: &[],
            extra_read: &[],
            muster: Path::new("/usr/bin/true"),
            process_view: ProcessView::Namespace,
        };
        let e = for_run(&facts).unwrap_err();
        let SandboxError::Exposes { rule, protected } = &e else {
            panic!("not a rule that exposes a protected folder: {e}");
        };
        assert_eq!(protected, &data);
        let real = |p: &Path| std::fs::canonicalize(p).unwrap();
        assert!(real(&data).starts_with(real(rule)), "{e}");
        assert_eq!(
            e.to_string(),
            format!(
                "the sandbox rule for {} would expose {}; move the agent's program elsewhere",
                rule.display(),
                data.display()
            )
        );
        let other = tempfile::tempdir().unwrap();
        let script = other.path().join("agent.sh");
        std::fs::write(&script, "#!/bin/sh\n").unwrap();
        let command = script.display().to_string();
        let policy = for_run(&RunFacts {
            custom_command: Some(&command),
            ..facts
        })
        .unwrap();
        assert_eq!(policy.connect_ports, vec![80, 443]);
        let real = std::fs::canonicalize(other.path()).unwrap();
        assert!(policy.paths.contains(&PathRule {
            path: real,
            access: Access::ReadExec
        }));
        assert!(policy.paths.contains(&PathRule {
            path: PathBuf::from("/dev/null"),
            access: Access::FileReadWrite
        }));
    }
}
