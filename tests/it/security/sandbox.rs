//! Security attacks: the sandbox around every agent process (issue 11, item 1).
//!
//! The attack: a `custom` agent (a member's, or any agent a hostile issue body talks into it) ran with the
//! server's rights: it read `<data-dir>/secret.key`, rewrote the database, and could signal the server.
//! Now every agent starts through `muster sandbox-exec` (Landlock + no capabilities). Here a real agent —
//! a shell script run by the real run engine, on both backends — tries each escape; every attempt must
//! fail with the exact EACCES/EPERM text the tool prints, the server's files must be untouched, and in the
//! same run the agent still commits in its worktree and reaches a loopback HTTP server on an allowed port.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use muster::domain::*;
use muster::runner::executor::RunTiming;
use muster::store::{DatabaseUrl, Store};
use muster_tests::model_server::ModelServer;
use muster_tests::seed;
use muster_tests::{AppBuilder, Backend, TestDb, git};
use serde_json::json;
use tokio_util::sync::CancellationToken;

/// The longest a run may take here.
const DEADLINE: Duration = Duration::from_secs(60);

/// Whether this kernel can sandbox agents; the attacks are only meaningful where it can (CI's kernel can:
/// the test then fails rather than skips if it cannot, see `sandbox_is_in_force`).
pub(super) fn sandboxed() -> bool {
    matches!(
        muster::sandbox::decide(muster::sandbox::detect(), false),
        muster::sandbox::Mode::Sandboxed { .. }
    )
}

/// How Python reports a socket the sandbox refuses.
pub(super) const DENIED: &str = "PermissionError: [Errno 13] Permission denied";

/// What the agent wrote to `file` and committed itself on `run`'s branch of `repo`.
pub(super) fn committed(repo: &Path, run: &Run, file: &str) -> String {
    let branch = run.branch.clone().unwrap();
    git(repo, &["show", &format!("{branch}:{file}")])
}

/// The rest of the line of `log` that starts with `name: `.
pub(super) fn said_in(log: &str, name: &str) -> String {
    log.lines()
        .find_map(|l| l.strip_prefix(&format!("{name}: ")))
        .unwrap_or_else(|| panic!("no {name} line in\n{log}"))
        .to_owned()
}

/// A todo issue `title` in `ws`, assigned to `agent` with `token` through the API of the server at
/// `addr` (which queues its run).
pub(super) async fn todo_assigned_through_api(
    store: &dyn Store,
    ws: &Workspace,
    addr: std::net::SocketAddr,
    token: &str,
    title: &str,
    agent: &Agent,
) -> Issue {
    let mut new = NewIssue::new(IssueTitle::parse(title).unwrap());
    new.status = IssueStatus::Todo;
    let issue = store.create_issue(ws.id, &new).await.unwrap();
    let resp = reqwest::Client::new()
        .patch(format!("http://{addr}/api/v1/issues/{}", issue.key))
        .bearer_auth(token)
        .json(&json!({ "assignee": agent.profile.name.as_str() }))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200, "{}", resp.text().await.unwrap());
    issue
}

pub(super) struct World {
    pub(super) db: TestDb,
    pub(super) store: Arc<dyn Store>,
    pub(super) ws: Workspace,
    pub(super) token: String,
    pub(super) addr: std::net::SocketAddr,
    shutdown: CancellationToken,
    pub(super) data_dir: PathBuf,
    pub(super) runs_dir: PathBuf,
    /// Holds the agent's script (a folder of its own, beside nothing of the server's).
    scripts: tempfile::TempDir,
    /// Holds the repository R.
    repo_dir: tempfile::TempDir,
}

impl World {
    pub(super) async fn start(backend: Backend) -> Option<World> {
        let db = TestDb::new(backend).await?;
        let store = db.store().await;
        let (owner, ws) = seed::owner_of(
            &store,
            seed::person("owner@sandbox.test", "owner"),
            ("Sandbox", "sandbox", "SBX"),
        )
        .await;
        let repo_dir = tempfile::tempdir().unwrap();
        let repo = repo_dir.path().join("repo");
        muster_tests::demo_repo(&repo);
        store
            .set_workspace_repo(ws.id, Some(&repo.display().to_string()))
            .await
            .unwrap();
        let token = muster_tests::mint_token(store.as_ref(), ws.id, owner.id, "test").await;
        store.close().await;
        let config = db.config();
        let (data_dir, runs_dir) = (config.data_dir.clone(), config.runs_dir.clone());
        let app = AppBuilder::new(config)
            .embedded_runner()
            .timing(RunTiming {
                idle_tick: Duration::from_millis(200),
                int_grace: Duration::from_secs(2),
                term_grace: Duration::from_secs(2),
                ..RunTiming::default()
            })
            .spawn()
            .await;
        Some(World {
            db,
            store: app.store,
            ws,
            token,
            addr: app.addr,
            shutdown: app.shutdown,
            data_dir,
            runs_dir,
            scripts: tempfile::tempdir().unwrap(),
            repo_dir,
        })
    }

    /// [`World::start`] for an attack: `None`, saying so, where this kernel cannot sandbox agents.
    pub(super) async fn start_attack(backend: Backend) -> Option<World> {
        if !sandboxed() {
            eprintln!("!!! SKIPPING the sandbox attacks: this kernel cannot sandbox agents");
            return None;
        }
        World::start(backend).await
    }

    pub(super) fn repo(&self) -> PathBuf {
        self.repo_dir.path().join("repo")
    }

    /// A custom agent whose command is `body` as an executable script, pointed at `base_url`.
    async fn agent(&self, body: &str, base_url: &str) -> Agent {
        self.named_agent("intruder", body, base_url, &[]).await
    }

    /// [`World::agent`] with a name of its own and extra arguments (which land on its command line).
    pub(super) async fn named_agent(
        &self,
        name: &str,
        body: &str,
        base_url: &str,
        extra_args: &[&str],
    ) -> Agent {
        use std::os::unix::fs::PermissionsExt as _;
        let script = self.scripts.path().join(format!("{name}.sh"));
        std::fs::write(&script, format!("#!/bin/sh\n{body}\n")).unwrap();
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
        let mut new = NewAgent::new(AgentName::parse(name).unwrap(), RuntimeKind::Custom);
        new.extra_args = extra_args.iter().map(|a| (*a).to_owned()).collect();
        new.command = Some(script.display().to_string());
        new.base_url = Some(base_url.to_owned());
        new.max_retries = 0;
        self.store.create_agent(self.ws.id, &new).await.unwrap()
    }

    /// Assigns `agent` to a new issue through the API and waits for the run to end.
    pub(super) async fn run(&self, agent: &Agent) -> (Issue, Run) {
        let issue = self.assign(agent).await;
        (issue.clone(), self.finished(&issue).await)
    }

    /// Assigns `agent` to a new issue through the API (which queues its run).
    pub(super) async fn assign(&self, agent: &Agent) -> Issue {
        let (store, ws) = (self.store.as_ref(), &self.ws);
        todo_assigned_through_api(store, ws, self.addr, &self.token, "Escape", agent).await
    }

    /// Waits for the run of `issue` to end.
    pub(super) async fn finished(&self, issue: &Issue) -> Run {
        let started = tokio::time::Instant::now();
        loop {
            let runs = self.store.list_runs_for_issue(issue.id).await.unwrap();
            if let Some(run) = runs.into_iter().find(|r| r.status.is_terminal()) {
                return run;
            }
            assert!(started.elapsed() < DEADLINE, "the run did not finish");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    pub(super) async fn events(&self, run: RunId) -> Vec<RunEvent> {
        self.store.run_events_since(run, 0, 1000).await.unwrap()
    }
}

impl Drop for World {
    fn drop(&mut self) {
        self.shutdown.cancel();
    }
}

/// The agent: every escape, each line `name: <what the tool printed>` in `attack.log`, which it then
/// commits; then the allowed loopback HTTP request.
#[allow(clippy::too_many_arguments)]
fn attack_script(
    data_dir: &Path,
    db_file: Option<&Path>,
    other_run: &Path,
    server_pid: u32,
    repo: &Path,
    tmp_marker: &Path,
    model_url: &str,
) -> String {
    let db = db_file.map_or_else(String::new, |f| {
        format!("try read_db cat '{}'\n", f.display())
    });
    format!(
        r#"cat >/dev/null
log="$PWD/attack.log"
try() {{ name=$1; shift; if out=$("$@" 2>&1); then echo "$name: ALLOWED $out"; else echo "$name: $out"; fi >> "$log"; }}
try read_key cat '{data}/secret.key'
{db}try list_data ls '{data}'
try other_run cat '{other}/home/notes.txt'
try environ cat /proc/{pid}/environ
try write_tmp sh -c 'echo x > {marker}'
try write_repo sh -c 'echo x > {repo}/planted'
try plant_hook sh -c 'echo x > {repo}/.git/hooks/post-commit'
try write_parent sh -c 'echo x > ../escaped'
echo precious > moveme
try rename_out mv moveme {marker}.moved
try kill_server sh -c 'kill -0 {pid}'
try postgres bash -c 'exec 3<>/dev/tcp/127.0.0.1/5432'
try raw_socket /usr/bin/python3 -c 'import socket; socket.socket(socket.AF_INET, socket.SOCK_RAW, 1)'
echo "fds: $(ls -l /proc/$$/fd | tail -n +2 | sed 's/.*[0-9] \([0-9]*\) -> /\1 -> /' | tr '\n' ';')" >> "$log"
echo "model: $(curl -s -o /dev/null -w '%{{http_code}}' '{model}/')" >> "$log"
echo "api: $(curl -s -o /dev/null -w '%{{http_code}}' "$MUSTER_URL/healthz")" >> "$log"
git add attack.log moveme && git commit -q -m 'what the sandbox refused' || exit 7
echo '{{"type":"result","subtype":"success","is_error":false,"result":"done"}}'"#,
        data = data_dir.display(),
        other = other_run.display(),
        pid = server_pid,
        repo = repo.display(),
        marker = tmp_marker.display(),
        model = model_url,
    )
}

async fn an_agent_cannot_leave_its_run(backend: Backend) {
    let Some(w) = World::start_attack(backend).await else {
        return;
    };
    let model = ModelServer::start().await.unwrap();
    // Another run's folder, with something in it.
    let other_run = w.runs_dir.join(uuid::Uuid::new_v4().to_string());
    std::fs::create_dir_all(other_run.join("home")).unwrap();
    std::fs::write(other_run.join("home/notes.txt"), "another run's notes").unwrap();
    let key_before = std::fs::read(w.data_dir.join("secret.key")).unwrap();
    let db_file = match &w.db.url {
        DatabaseUrl::Sqlite(path) => Some(path.clone()),
        DatabaseUrl::Postgres(_) => None,
    };
    let marker = std::env::temp_dir().join(format!("muster-escape-{}", uuid::Uuid::new_v4()));
    let pid = std::process::id();
    let script = attack_script(
        &w.data_dir,
        db_file.as_deref(),
        &other_run,
        pid,
        &w.repo(),
        &marker,
        model.base_url(),
    );
    let agent = w.agent(&script, model.base_url()).await;
    let (issue, run) = w.run(&agent).await;
    let events = w.events(run.id).await;
    assert_eq!(run.status, RunStatus::Succeeded, "{run:?}\n{events:#?}");

    // The first event says what the agent could reach.
    let first = &events[0];
    assert_eq!(first.kind, "sandbox", "{events:#?}");
    let work = run.worktree.clone().unwrap();
    let rules = first.payload["paths"].as_array().unwrap();
    assert!(
        rules.contains(&json!({ "path": work, "access": "read-write" })),
        "{rules:?}"
    );
    assert!(
        rules.contains(&json!({ "path": "/dev/null", "access": "read-write (file)" })),
        "{rules:?}"
    );
    let ports: Vec<u64> = first.payload["connect_ports"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p.as_u64().unwrap())
        .collect();
    let model_port = u64::from(muster::sandbox::policy::url_port(model.base_url()).unwrap());
    // No 443 or 80 for every host: other hosts go through the run's egress proxy (security::egress).
    let proxy_port: u64 = first.payload["egress"]["proxy"]
        .as_str()
        .and_then(|p| p.rsplit(':').next())
        .and_then(|p| p.parse().ok())
        .unwrap();
    let mut expected = vec![u64::from(w.addr.port()), model_port, proxy_port];
    expected.sort_unstable();
    expected.dedup();
    assert_eq!(ports, expected, "no database port");

    // What the agent saw, committed on its branch by the agent itself.
    let branch = run.branch.clone().unwrap();
    let log = committed(&w.repo(), &run, "attack.log");
    let said = |name: &str| said_in(&log, name);
    let data = w.data_dir.display();
    assert_eq!(
        said("read_key"),
        format!("cat: {data}/secret.key: Permission denied")
    );
    if let Some(db) = &db_file {
        assert_eq!(
            said("read_db"),
            format!("cat: {}: Permission denied", db.display())
        );
    }
    assert_eq!(
        said("list_data"),
        format!("ls: cannot open directory '{data}': Permission denied")
    );
    assert_eq!(
        said("other_run"),
        format!(
            "cat: {}/home/notes.txt: Permission denied",
            other_run.display()
        )
    );
    // In a private PID namespace the server's pid names no process; without one, Landlock refuses it.
    let private = first.payload["process_view"] == "namespace";
    let (gone, refused) = if private {
        ("No such file or directory", "No such process")
    } else {
        ("Permission denied", "Operation not permitted")
    };
    assert_eq!(said("environ"), format!("cat: /proc/{pid}/environ: {gone}"));
    assert_eq!(
        said("write_tmp"),
        format!(
            "sh: 1: cannot create {}: Permission denied",
            marker.display()
        )
    );
    let repo = w.repo();
    assert_eq!(
        said("write_repo"),
        format!(
            "sh: 1: cannot create {}/planted: Permission denied",
            repo.display()
        )
    );
    assert_eq!(
        said("plant_hook"),
        format!(
            "sh: 1: cannot create {}/.git/hooks/post-commit: Permission denied",
            repo.display()
        )
    );
    assert_eq!(
        said("write_parent"),
        "sh: 1: cannot create ../escaped: Permission denied"
    );
    assert_eq!(
        said("rename_out"),
        format!(
            "mv: cannot move 'moveme' to '{}.moved': Permission denied",
            marker.display()
        )
    );
    assert_eq!(said("kill_server"), format!("sh: 1: kill: {refused}"));
    assert_eq!(said("postgres"), "bash: connect: Permission denied");
    assert!(
        log.contains("/dev/tcp/127.0.0.1/5432: Permission denied\n"),
        "{log}"
    );
    assert!(
        log.contains("PermissionError: [Errno 1] Operation not permitted"),
        "raw sockets need a capability the agent no longer has: {log}"
    );
    // Only the standard streams (pipes, /dev/null) and the shell's own script reach the agent: no
    // database, key or socket of the server (every server handle is close-on-exec).
    let fds = said("fds");
    let targets: Vec<&str> = fds
        .split(';')
        .filter(|f| !f.is_empty())
        .map(|f| f.split_once(" -> ").unwrap().1)
        .collect();
    assert!(targets.len() >= 3, "{fds}");
    for target in targets {
        assert!(
            target.starts_with("pipe:")
                || target == "/dev/null"
                || target.ends_with("/intruder.sh"),
            "an inherited descriptor: {target} in {fds}"
        );
    }
    // The honest part of the same run: the allowed ports answer, the commit is on the branch.
    assert_eq!(said("model"), "200", "{log}");
    assert_eq!(said("api"), "200", "{log}");
    assert!(
        model.requests().iter().any(|r| r.route() == "/"),
        "the model server saw the agent"
    );
    let subjects = git(&repo, &["log", "--format=%s", &branch]);
    assert!(
        subjects.lines().any(|s| s == "what the sandbox refused"),
        "{subjects}"
    );
    assert_eq!(
        git(&repo, &["show", &format!("{branch}:moveme")]),
        "precious\n",
        "the file the agent could not move out is still its work"
    );

    // The server is untouched.
    assert_eq!(
        std::fs::read(w.data_dir.join("secret.key")).unwrap(),
        key_before
    );
    assert!(!marker.exists() && !Path::new(&format!("{}.moved", marker.display())).exists());
    assert!(!repo.join("planted").exists());
    assert!(!repo.join(".git/hooks/post-commit").exists());
    assert!(!w.runs_dir.join(run.id.to_string()).join("escaped").exists());
    let again = w.store.get_issue_by_id(issue.id).await.unwrap();
    assert_eq!(again.key, issue.key, "the database still answers");
    let me = reqwest::Client::new()
        .get(format!("http://{}/api/v1/me", w.addr))
        .bearer_auth(&w.token)
        .send()
        .await
        .unwrap();
    assert_eq!(me.status(), 200);
    let me: serde_json::Value = me.json().await.unwrap();
    assert_eq!(me["role"], "owner", "{me}");
}

both_backends!(
    runtime ();
    an_agent_cannot_leave_its_run,
    an_agent_cannot_connect_to_a_unix_socket,
);

/// On CI's kernel the sandbox must be in force (else the attacks above would silently skip).
#[test]
fn sandbox_is_in_force() {
    if muster_tests::env_setting("MUSTER_REQUIRE_SANDBOX").is_some() {
        assert!(
            sandboxed(),
            "MUSTER_REQUIRE_SANDBOX=1 but this kernel cannot sandbox agents"
        );
    }
}

/// Where the kernel cannot sandbox, a run fails with the reason instead of starting the agent unsandboxed
/// (the decision itself is unit-tested in `muster::sandbox`; here the exec step refuses a policy whose ABI
/// the kernel lacks rather than running the program without it).
#[test]
fn the_exec_step_refuses_what_the_kernel_cannot_enforce() {
    let Some(abi) = muster::sandbox::detect() else {
        return;
    };
    if abi >= 10 {
        return; // No ABI above what this build knows to ask for.
    }
    let policy = muster::sandbox::Policy {
        abi: abi + 1,
        paths: Vec::new(),
        connect_ports: Vec::new(),
        process_view: muster::sandbox::ProcessView::SelfOnly,
    };
    let out = std::process::Command::new(muster_tests::muster_bin())
        .args([
            "sandbox-exec",
            "--policy",
            &serde_json::to_string(&policy).unwrap(),
            "--",
            "/usr/bin/true",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(126));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.starts_with("error: sandbox: "), "{stderr}");
}

/// A runner started by a normal user (a workstation's `muster runner`) holds no CAP_SETPCAP and cannot
/// shrink its capability bounding set: the exec step still confines the agent (Landlock, no_new_privs,
/// no capabilities) instead of refusing to start it. Runs the exec step as `nobody` through `setpriv`.
#[test]
fn a_non_root_user_can_start_a_sandboxed_agent() {
    let Some(abi) = muster::sandbox::detect() else {
        return;
    };
    let am_root = std::fs::read_to_string("/proc/self/status")
        .unwrap()
        .lines()
        .any(|l| l.starts_with("Uid:") && l.split_whitespace().nth(1) == Some("0"));
    if !am_root || !Path::new("/usr/bin/setpriv").exists() {
        eprintln!("!!! SKIPPING: switching to another user needs root and setpriv");
        return;
    }
    use muster::sandbox::{Access, PathRule};
    let read = |p: &str| PathRule {
        path: p.into(),
        access: Access::ReadExec,
    };
    let policy = muster::sandbox::Policy {
        abi,
        // Without a PID namespace (a non-root runner cannot make one), only its own /proc entry.
        paths: ["/usr", "/lib", "/lib64", "/bin", "/etc", "/proc/self"]
            .into_iter()
            .filter(|p| Path::new(p).exists())
            .map(read)
            .collect(),
        connect_ports: Vec::new(),
        process_view: muster::sandbox::ProcessView::SelfOnly,
    };
    // The binary must be readable by nobody: copy it where it is.
    let dir = tempfile::tempdir().unwrap();
    let muster = dir.path().join("muster");
    std::fs::copy(muster_tests::muster_bin(), &muster).unwrap();
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let mut policy = policy;
    policy.paths.push(PathRule {
        path: dir.path().to_path_buf(),
        access: Access::ReadExec,
    });
    let out = std::process::Command::new("/usr/bin/setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"])
        .arg(&muster)
        .args([
            "sandbox-exec",
            "--policy",
            &serde_json::to_string(&policy).unwrap(),
            "--",
            "/bin/sh",
            "-c",
            // Read by the shell itself: the /proc/self rule names the exec step's process, which the
            // shell becomes (a child's /proc/self is another entry).
            "while IFS= read -r l; do case $l in Cap*|NoNewPrivs*) echo \"$l\";; esac; done < /proc/self/status; \
             cat /proc/1/cmdline >/dev/null 2>&1 && echo 'pid 1: readable' || echo 'pid 1: refused'",
        ])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stdout.contains("pid 1: refused"), "{stdout}");
    for set in ["CapEff", "CapPrm", "CapInh", "CapAmb"] {
        let line = stdout.lines().find(|l| l.starts_with(set)).unwrap();
        assert!(line.ends_with("0000000000000000"), "{line}");
    }
    assert!(stdout.contains("NoNewPrivs:\t1"), "{stdout}");

    // Such a runner finds out once that it cannot give agents a PID namespace (and then lists only
    // /proc/self), rather than failing every run.
    let namespace = muster::sandbox::Policy {
        process_view: muster::sandbox::ProcessView::Namespace,
        ..policy
    };
    let probe = std::process::Command::new("/usr/bin/setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"])
        .arg(&muster)
        .args(["sandbox-exec", "--probe", "--policy"])
        .arg(serde_json::to_string(&namespace).unwrap())
        .args(["--", "true"])
        .output()
        .unwrap();
    assert_eq!(probe.status.code(), Some(126));
    let said = String::from_utf8_lossy(&probe.stderr);
    assert!(
        said.starts_with("error: sandbox: cannot make the agent's private process namespace: "),
        "{said}"
    );
}

/// The agent of the unix-socket attack: each attempt's output on a line `name: …` in `unix.log`, which
/// it commits; then the allowed loopback HTTP request and a stream socketpair (what node and Bun use for
/// child stdio).
fn unix_socket_script(listener: &Path, model_url: &str) -> String {
    format!(
        r#"cat >/dev/null
log="$PWD/unix.log"
try() {{ name=$1; shift; if out=$("$@" 2>&1); then echo "$name: ALLOWED $out"; else echo "$name: $(echo "$out" | tail -n 1)"; fi >> "$log"; }}
py=/usr/bin/python3
try postgres_socket $py -c 'import socket; socket.socket(socket.AF_UNIX).connect("/run/postgresql/.s.PGSQL.5432")'
try test_socket $py -c 'import socket; socket.socket(socket.AF_UNIX).connect("{listener}")'
try socat socat - UNIX-CONNECT:{listener}
try datagram_pair $py -c 'import socket; socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)'
try stream_pair $py -c 'import socket; a, b = socket.socketpair(); a.send(b"pair ok"); print(b.recv(7).decode())'
echo "model: $(curl -s -o /dev/null -w '%{{http_code}}' '{model}/')" >> "$log"
git add unix.log && git commit -q -m 'no unix sockets' || exit 7
echo '{{"type":"result","subtype":"success","is_error":false,"result":"done"}}'"#,
        listener = listener.display(),
        model = model_url,
    )
}

/// Landlock (ABI < 9) does not govern connecting to a unix socket with a path, and PostgreSQL trusts local
/// connections: the exec step's seccomp filter refuses `socket(AF_UNIX)` (and `AF_UNIX` datagram
/// socketpairs, which could `sendto` a path) with EACCES, while the same run still commits and reaches the
/// model server.
async fn an_agent_cannot_connect_to_a_unix_socket(backend: Backend) {
    let Some(w) = World::start_attack(backend).await else {
        return;
    };
    let model = ModelServer::start().await.unwrap();
    // A unix socket the test listens on, outside the run's folder.
    let outside = tempfile::tempdir().unwrap();
    let path = outside.path().join("server.sock");
    let listener = std::os::unix::net::UnixListener::bind(&path).unwrap();
    listener.set_nonblocking(true).unwrap();
    let agent = w
        .agent(
            &unix_socket_script(&path, model.base_url()),
            model.base_url(),
        )
        .await;
    let (_issue, run) = w.run(&agent).await;
    let events = w.events(run.id).await;
    assert_eq!(run.status, RunStatus::Succeeded, "{run:?}\n{events:#?}");
    assert_eq!(events[0].kind, "sandbox", "{events:#?}");
    assert_eq!(events[0].payload["unix_sockets"], "refused");
    let muster::domain::RunEventBody::Sandbox(note) = events[0].body() else {
        panic!("not a sandbox note: {events:#?}");
    };
    assert!(
        muster::sandbox::event_lines(&note).contains(
            &"unix sockets: refused (seccomp: socket(AF_UNIX) fails with EACCES; stream socketpairs allowed)"
                .to_owned()
        ),
        "{:?}",
        events[0].payload
    );

    let branch = run.branch.clone().unwrap();
    let log = committed(&w.repo(), &run, "unix.log");
    let said = |name: &str| said_in(&log, name);
    let denied = DENIED;
    if Path::new("/run/postgresql/.s.PGSQL.5432").exists() {
        assert_eq!(said("postgres_socket"), denied, "{log}");
    }
    assert_eq!(said("test_socket"), denied, "{log}");
    assert!(
        said("socat").ends_with("socket(1, 1, 0): Permission denied"),
        "{log}"
    );
    assert_eq!(said("datagram_pair"), denied, "{log}");
    // The honest part of the same run.
    assert_eq!(said("stream_pair"), "ALLOWED pair ok", "{log}");
    assert_eq!(said("model"), "200", "{log}");
    let subjects = git(&w.repo(), &["log", "--format=%s", &branch]);
    assert!(
        subjects.lines().any(|s| s == "no unix sockets"),
        "{subjects}"
    );
    // Nothing reached the test's socket.
    assert_eq!(
        listener.accept().map(|_| ()).unwrap_err().kind(),
        std::io::ErrorKind::WouldBlock
    );
}
