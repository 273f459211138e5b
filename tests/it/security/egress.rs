//! Issue 26, finding 13: egress was any host on 80/443 (the sandbox allowed those ports to every host), so a
//! prompt-injected agent could send the worktree anywhere. Now an agent connects directly only to its
//! run's egress proxy, Muster's API and a loopback model server; the proxy (run by the runner, outside the
//! sandbox) resolves names itself and lets through only the hosts on the agent's allow-list. Every
//! connection is an `egress` event in the run's log.
//!
//! Here a real agent (a shell script run by the real run engine, inside the real sandbox, on both
//! backends) reaches an allow-listed name (the proxy resolves test names to a loopback listener), is
//! refused a direct connection to a listener on 127.0.0.1:443 (or another undeclared port when 443 is
//! taken), and is refused a proxied one to a name not on its list; a refusal that makes the agent fail
//! ends its run at once with the host and port, not retried; a member cannot change the list.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use muster::domain::*;
use muster::runner::executor::RunTiming;
use muster::store::Store;
use muster_tests::model_server::ModelServer;
use muster_tests::{AppBuilder, Backend, TestDb};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::sandbox::{committed, said_in, todo_assigned_through_api};
use crate::api::{Env, api_cases};
use muster_tests::seed;

/// The longest a run may take here.
const DEADLINE: Duration = Duration::from_secs(60);

fn sandboxed() -> bool {
    matches!(
        muster::sandbox::decide(muster::sandbox::detect(), false),
        muster::sandbox::Mode::Sandboxed { .. }
    )
}

struct World {
    _db: TestDb,
    store: Arc<dyn Store>,
    ws: Workspace,
    token: String,
    addr: SocketAddr,
    shutdown: CancellationToken,
    scripts: tempfile::TempDir,
    _repo: tempfile::TempDir,
}

impl World {
    /// A server with its embedded runner, on a workspace with a repository; the egress proxy resolves
    /// each of `names` to `target`.
    async fn start(backend: Backend, names: &[&str], target: SocketAddr) -> Option<World> {
        let db = TestDb::new(backend).await?;
        let store = db.store().await;
        let (owner, ws) = seed::owner_of(
            &store,
            seed::person("owner@egress.test", "owner"),
            ("Egress", "egress", "EGR"),
        )
        .await;
        let repo = tempfile::tempdir().unwrap();
        muster_tests::demo_repo(repo.path());
        store
            .set_workspace_repo(ws.id, Some(&repo.path().display().to_string()))
            .await
            .unwrap();
        let token = muster_tests::mint_token(store.as_ref(), ws.id, owner.id, "test").await;
        store.close().await;
        let app = AppBuilder::new(db.config())
            .embedded_runner()
            .configure(|config| {
                config.egress_resolve = names.iter().map(|n| ((*n).to_owned(), target)).collect();
            })
            .timing(RunTiming {
                idle_tick: Duration::from_millis(200),
                ..muster_tests::engine::quick_stops()
            })
            .spawn()
            .await;
        Some(World {
            _db: db,
            store: app.store,
            ws,
            token,
            addr: app.addr,
            shutdown: app.shutdown,
            scripts: tempfile::tempdir().unwrap(),
            _repo: repo,
        })
    }

    /// A custom agent named `name` running `body` as a script, allowed `hosts`, no base URL.
    async fn agent(&self, name: &str, body: &str, hosts: &[&str], retries: i32) -> Agent {
        use std::os::unix::fs::PermissionsExt as _;
        let script = self.scripts.path().join(format!("{name}.sh"));
        std::fs::write(&script, format!("#!/bin/sh\n{body}\n")).unwrap();
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
        let mut new = NewAgent::new(AgentName::parse(name).unwrap(), RuntimeKind::Custom);
        new.command = Some(script.display().to_string());
        new.max_retries = retries;
        new.egress_hosts = hosts
            .iter()
            .map(|h| HostPattern::parse_field("egress_hosts", h).unwrap())
            .collect();
        self.store.create_agent(self.ws.id, &new).await.unwrap()
    }

    /// Assigns `agent` to a new issue through the API and waits for the first run's end.
    async fn run(&self, agent: &Agent) -> (Issue, Run) {
        let (store, ws) = (self.store.as_ref(), &self.ws);
        let issue =
            todo_assigned_through_api(store, ws, self.addr, &self.token, "Reach out", agent).await;
        let started = tokio::time::Instant::now();
        loop {
            let runs = self.store.list_runs_for_issue(issue.id).await.unwrap();
            if let Some(run) = runs.into_iter().find(|r| r.status.is_terminal()) {
                return (issue, run);
            }
            assert!(started.elapsed() < DEADLINE, "the run did not finish");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    async fn events(&self, run: RunId) -> Vec<RunEvent> {
        self.store.run_events_since(run, 0, 1000).await.unwrap()
    }
}

impl Drop for World {
    fn drop(&mut self) {
        self.shutdown.cancel();
    }
}

/// A listener nobody may reach: on 127.0.0.1:443 when that port is free (the port the old sandbox let
/// every agent connect to), else on an ephemeral port. Counts the connections it accepts.
async fn trap() -> (u16, Arc<AtomicUsize>) {
    let listener = match tokio::net::TcpListener::bind("127.0.0.1:443").await {
        Ok(l) => l,
        Err(_) => tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap(),
    };
    let port = listener.local_addr().unwrap().port();
    let hits = Arc::new(AtomicUsize::new(0));
    let counted = hits.clone();
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            counted.fetch_add(1, Ordering::SeqCst);
            drop(stream);
        }
    });
    (port, hits)
}

fn model_addr(model: &ModelServer) -> SocketAddr {
    model
        .base_url()
        .trim_start_matches("http://")
        .parse()
        .unwrap()
}

/// The `egress` events of a run, as `(method, host:port, allowed, why)`.
fn egress(events: &[RunEvent]) -> Vec<(String, String, bool, String, u64)> {
    events
        .iter()
        .filter(|e| e.kind == "egress")
        .map(|e| {
            let p = &e.payload;
            (
                p["method"].as_str().unwrap_or_default().to_owned(),
                format!("{}:{}", p["host"].as_str().unwrap_or_default(), p["port"]),
                p["allowed"].as_bool() == Some(true),
                p["why"].as_str().unwrap_or_default().to_owned(),
                p["bytes_down"].as_u64().unwrap_or_default(),
            )
        })
        .collect()
}

async fn an_agent_reaches_only_the_hosts_on_its_list(backend: Backend) {
    if !sandboxed() {
        eprintln!("!!! SKIPPING the egress attacks: this kernel cannot sandbox agents");
        return;
    }
    let model = ModelServer::start().await.unwrap();
    let names = ["allowed.test", "denied.test"];
    let Some(w) = World::start(backend, &names, model_addr(&model)).await else {
        return;
    };
    let (trap_port, hits) = trap().await;
    let script = format!(
        r#"cat >/dev/null
log="$PWD/egress.log"
echo "allowed: $(curl -s -o /dev/null -w '%{{http_code}}' http://allowed.test/)" >> "$log"
echo "tunnel: $(curl -s -p -o /dev/null -w '%{{http_code}}' http://allowed.test/)" >> "$log"
echo "denied: $(curl -s -w ' %{{http_code}}' http://denied.test/)" >> "$log"
echo "denied_tunnel: $(curl -s -S -p -o /dev/null http://denied.test/ 2>&1)" >> "$log"
echo "direct: $(curl -s -S --noproxy '*' -o /dev/null http://127.0.0.1:{trap_port}/ 2>&1)" >> "$log"
echo "proxy: $HTTPS_PROXY $HTTP_PROXY $NO_PROXY" >> "$log"
git add egress.log && git commit -q -m 'what the proxy said' || exit 7
echo '{{"type":"result","subtype":"success","is_error":false,"result":"done"}}'"#
    );
    let agent = w.agent("reacher", &script, &["allowed.test"], 0).await;
    let (_, run) = w.run(&agent).await;
    let events = w.events(run.id).await;
    assert_eq!(run.status, RunStatus::Succeeded, "{run:?}\n{events:#?}");

    // What the agent saw, committed by itself.
    let log = committed(w._repo.path(), &run, "egress.log");
    let said = |name: &str| said_in(&log, name);
    assert_eq!(said("allowed"), "200", "{log}");
    assert_eq!(said("tunnel"), "200", "{log}");
    assert!(
        said("denied").starts_with(
            "Muster egress proxy refused: denied.test:80 is not on the agent's egress allow-list; an owner or \
             admin can add \"denied.test\" to the agent's allowed hosts"
        ) && log.contains("(or the workspace's default list)\n 403\n"),
        "{log}"
    );
    assert!(
        said("denied_tunnel").starts_with("curl: (56) CONNECT tunnel failed, response 403"),
        "{log}"
    );
    assert!(
        said("direct").starts_with(&format!(
            "curl: (7) Failed to connect to 127.0.0.1 port {trap_port} after"
        )),
        "{log}"
    );
    assert_eq!(
        hits.load(Ordering::SeqCst),
        0,
        "a direct connection to 127.0.0.1:{trap_port} got through: {log}"
    );
    let proxy = said("proxy");
    assert!(
        proxy.starts_with("http://127.0.0.1:") && proxy.ends_with("localhost,127.0.0.1,::1"),
        "{proxy}"
    );

    // Each attempt through the proxy is in the log; the direct one never reached it.
    let seen = egress(&events);
    let find = |method: &str, target: &str, allowed: bool| {
        seen.iter()
            .find(|(m, t, a, _, _)| m == method && t == target && *a == allowed)
            .unwrap_or_else(|| panic!("no {method} {target} allowed={allowed} in {seen:#?}"))
            .clone()
    };
    assert!(find("GET", "allowed.test:80", true).4 > 0, "{seen:#?}");
    assert!(find("CONNECT", "allowed.test:80", true).4 > 0, "{seen:#?}");
    assert!(
        find("GET", "denied.test:80", false)
            .3
            .contains("not on the agent's egress allow-list"),
        "{seen:#?}"
    );
    find("CONNECT", "denied.test:80", false);
    assert!(
        !seen
            .iter()
            .any(|(_, t, _, _, _)| t.ends_with(&format!(":{trap_port}"))),
        "{seen:#?}"
    );
    assert_eq!(
        model.requests().len(),
        2,
        "the two allowed requests reached the listener"
    );

    // The sandbox event: only the proxy's port and Muster's, and the list in words.
    let sandbox = events.iter().find(|e| e.kind == "sandbox").unwrap();
    let proxy_port: u64 = sandbox.payload["egress"]["proxy"]
        .as_str()
        .unwrap()
        .rsplit(':')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    let mut expected = vec![u64::from(w.addr.port()), proxy_port];
    expected.sort_unstable();
    assert_eq!(sandbox.payload["connect_ports"], json!(expected));
    let muster::domain::RunEventBody::Sandbox(note) = sandbox.body() else {
        panic!("not a sandbox note: {sandbox:?}");
    };
    let lines = muster::sandbox::event_lines(&note);
    assert!(
        lines.contains(&format!(
            "egress: allowed allowed.test; always 127.0.0.1:{} (through the egress proxy \
             http://127.0.0.1:{proxy_port})",
            w.addr.port()
        )),
        "{lines:#?}"
    );
    // The run page shows each connection and the list.
    let page = reqwest::Client::new()
        .get(format!("http://{}/api/v1/runs/{}/events", w.addr, run.id))
        .bearer_auth(&w.token)
        .send()
        .await
        .unwrap();
    assert_eq!(page.status(), 200);
}

async fn a_refused_connection_ends_the_run_with_the_host_and_port(backend: Backend) {
    if !sandboxed() {
        eprintln!("!!! SKIPPING the egress attacks: this kernel cannot sandbox agents");
        return;
    }
    let model = ModelServer::start().await.unwrap();
    let Some(w) = World::start(backend, &["denied.test"], model_addr(&model)).await else {
        return;
    };
    // Like a CLI whose model server is refused: one failed request, an error, then retries for minutes.
    let proxied = r#"cat >/dev/null
curl -s -o /dev/null http://denied.test:8443/v1/messages
echo '{"type":"result","subtype":"success","is_error":true,"result":"API Error: Unable to connect to API (ConnectionRefused)"}'
sleep 120"#;
    let agent = w.agent("walled", proxied, &[], 2).await;
    let started = tokio::time::Instant::now();
    let (issue, run) = w.run(&agent).await;
    let took = started.elapsed();
    let events = w.events(run.id).await;
    assert_eq!(run.status, RunStatus::Failed, "{run:?}\n{events:#?}");
    assert_eq!(
        run.failure_reason,
        Some(FailureReason::EgressRefused),
        "{run:?}"
    );
    assert!(!FailureReason::EgressRefused.retryable());
    let detail = run.failure_detail.clone().unwrap_or_default();
    assert!(
        detail.starts_with("the egress proxy refused denied.test:8443: denied.test:8443 is not on the agent's egress allow-list"),
        "{detail}"
    );
    let text = muster::domain::failure::explain(
        &muster::domain::failure::FailureFacts::of(&run, RuntimeKind::Custom, None).unwrap(),
    );
    assert!(text.what.contains("denied.test:8443"), "{text}");
    assert!(text.to_do.contains("egress allow-list"), "{text}");
    assert!(took < Duration::from_secs(100), "stopped, not waited for");
    // Not retried as a network failure.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let runs = w.store.list_runs_for_issue(issue.id).await.unwrap();
    assert_eq!(runs.len(), 1, "{runs:#?}");

    // A direct connection the sandbox refuses (Bun says FailedToOpenSocket): the same, naming the ports.
    let (trap_port, hits) = trap().await;
    let direct = format!(
        r#"cat >/dev/null
curl -s --noproxy '*' -o /dev/null http://127.0.0.1:{trap_port}/
echo '{{"type":"result","subtype":"success","is_error":true,"result":"API Error: Unable to connect to API (FailedToOpenSocket)"}}'
sleep 120"#
    );
    let agent = w.agent("boxed", &direct, &[], 2).await;
    let (_, run) = w.run(&agent).await;
    assert_eq!(
        run.failure_reason,
        Some(FailureReason::EgressRefused),
        "{run:?}"
    );
    let detail = run.failure_detail.unwrap_or_default();
    assert!(
        detail.contains("the sandbox refused a direct connection (API Error: Unable to connect to API (FailedToOpenSocket))"),
        "{detail}"
    );
    assert!(
        detail.contains(&format!("{}", w.addr.port()))
            && detail.contains("may connect directly only to ports"),
        "Muster's port is named among the allowed ones: {detail}"
    );
    assert!(detail.contains("ANTHROPIC_BASE_URL"), "{detail}");
    assert_eq!(hits.load(Ordering::SeqCst), 0);

    // Claude Code reports the proxy's 403 as "Failed to authenticate": still a refused connection.
    let quoted = r#"cat >/dev/null
curl -s -o /dev/null http://denied.test:8443/v1/messages
echo '{"type":"result","subtype":"success","is_error":true,"result":"Failed to authenticate. API Error: 403 Muster egress proxy refused: denied.test:8443 is not on the agent'"'"'s egress allow-list"}'
sleep 120"#;
    let agent = w.agent("quoted", quoted, &[], 2).await;
    let (_, run) = w.run(&agent).await;
    assert_eq!(
        run.failure_reason,
        Some(FailureReason::EgressRefused),
        "{run:?}"
    );
    assert!(
        run.failure_detail
            .unwrap_or_default()
            .starts_with("the egress proxy refused denied.test:8443"),
    );
}

mod runs {
    both_backends!(
        an_agent_reaches_only_the_hosts_on_its_list,
        a_refused_connection_ends_the_run_with_the_host_and_port,
    );
    use super::*;
}

api_cases!(a_member_cannot_change_the_egress_allow_list);

/// The allow-list and the network switch decide where an agent's runs may send the worktree: owners'
/// and admins' alone, like the base URL. A member's attempt is a 403 naming the field and changes
/// nothing; an owner sets them, and the workspace's default list, which a member cannot change either.
async fn a_member_cannot_change_the_egress_allow_list(t: &Env) {
    let made = t
        .owner
        .api
        .post(
            "/api/v1/agents",
            json!({"name": "fetcher", "kind": "claude", "egress_hosts": ["github.com", "*.npmjs.org"]}),
        )
        .await
        .expect(201);
    assert_eq!(made["egress_hosts"], json!(["github.com", "*.npmjs.org"]));
    assert_eq!(made["no_network"], json!(false));
    for (field, body, message) in [
        (
            "egress_hosts",
            json!({"egress_hosts": ["github.com", "*.npmjs.org", "attacker.test"]}),
            "only owners and admins may change the hosts it may reach",
        ),
        (
            "no_network",
            json!({"no_network": true}),
            "only owners and admins may change its network switch",
        ),
    ] {
        let reply = t
            .member
            .api
            .patch("/api/v1/agents/fetcher", body.clone())
            .await;
        assert_eq!(reply.error(403, field), [message], "{body}");
    }
    let stored = t
        .app
        .store
        .get_agent_by_name(t.ws.id, &AgentName::parse("fetcher").unwrap())
        .await
        .unwrap()
        .profile;
    let hosts: Vec<&str> = stored
        .egress_hosts
        .iter()
        .map(HostPattern::as_str)
        .collect();
    assert_eq!(hosts, ["github.com", "*.npmjs.org"]);
    assert!(!stored.no_network);
    // Bad patterns are refused with what an entry is.
    let reply = t
        .owner
        .api
        .patch(
            "/api/v1/agents/fetcher",
            json!({"egress_hosts": ["https://github.com/x"]}),
        )
        .await;
    let errors = reply.error(422, "egress_hosts");
    assert!(
        errors[0].contains("an entry is a host name (github.com)"),
        "{errors:?}"
    );
    let changed = t
        .admin
        .api
        .patch(
            "/api/v1/agents/fetcher",
            json!({"egress_hosts": ["gitlab.com:8443"], "no_network": true}),
        )
        .await
        .expect(200);
    assert_eq!(changed["egress_hosts"], json!(["gitlab.com:8443"]));
    assert_eq!(changed["no_network"], json!(true));
    // The workspace's default list.
    let reply = t
        .member
        .api
        .patch(
            "/api/v1/workspace",
            json!({"egress_hosts": ["attacker.test"]}),
        )
        .await;
    assert_eq!(reply.status, 403, "{:?}", reply.body);
    let ws: Value = t
        .owner
        .api
        .patch(
            "/api/v1/workspace",
            json!({"egress_hosts": ["pypi.org", "*.pythonhosted.org"]}),
        )
        .await
        .expect(200);
    assert_eq!(
        ws["egress_hosts"],
        json!(["pypi.org", "*.pythonhosted.org"])
    );
    assert_eq!(ws["repo_path"], Value::Null, "the repository is untouched");
    let shown = t.member.api.get("/api/v1/workspace").await.expect(200);
    assert_eq!(shown["egress_hosts"], ws["egress_hosts"]);

    // A Codex base URL set the usual OpenAI way is a base URL: the agent needs a model, as with the field.
    let reply = t
        .owner
        .api
        .post(
            "/api/v1/agents",
            json!({"name": "codex-env", "kind": "codex",
                   "env": [{"key": "OPENAI_BASE_URL", "value": "http://10.0.0.7:8000/v1"}]}),
        )
        .await;
    assert!(
        reply.error(422, "model")[0].starts_with("a Codex agent with a base URL needs a model"),
        "{:?}",
        reply.body
    );
}

mod command_line {
    both_backends!(the_command_line_sets_the_lists_and_prints_egress_events);
    use super::*;
}

/// `muster agent edit --egress-host/--no-network`, `muster workspace egress` and `muster run logs`
/// (one readable line per connection, and the list in the sandbox block).
async fn the_command_line_sets_the_lists_and_prints_egress_events(backend: Backend) {
    let Some(db) = TestDb::new(backend).await else {
        return;
    };
    let app = muster_tests::spawn_app(db.config()).await;
    let store = app.store.clone();
    let f = crate::store_conformance::fixture(&store, "team", "MUS").await;
    let token = muster_tests::mint_token(store.as_ref(), f.ws.id, f.owner.id, "cli").await;
    let muster = |args: &[&str]| {
        let out = std::process::Command::new(muster_tests::muster_bin())
            .args(args)
            .env_clear()
            .env("MUSTER_URL", format!("http://{}", app.addr))
            .env("MUSTER_TOKEN", &token)
            .env("MUSTER_CONFIG_DIR", db.dir.path().join("client"))
            .output()
            .unwrap();
        let stdout = String::from_utf8(out.stdout).unwrap();
        let stderr = String::from_utf8(out.stderr).unwrap();
        assert!(out.status.success(), "{args:?}: {stdout}{stderr}");
        stdout
    };
    let coder = crate::store_conformance::agent(&store, f.ws.id, "coder", 1).await;
    muster(&[
        "agent",
        "edit",
        "coder",
        "--egress-host",
        "github.com",
        "--egress-host",
        "*.npmjs.org",
    ]);
    let shown = muster(&["agent", "show", "coder"]);
    assert!(
        shown.contains("egress:              github.com, *.npmjs.org (besides its model endpoint"),
        "{shown}"
    );
    muster(&["agent", "edit", "coder", "--no-network"]);
    let shown = muster(&["agent", "show", "coder"]);
    assert!(shown.contains("egress:              no network"), "{shown}");
    let stored = store.get_agent(f.ws.id, coder.id).await.unwrap().profile;
    assert!(stored.no_network && stored.egress_hosts.len() == 2);
    let shown = muster(&["workspace", "egress", "pypi.org", "*.pythonhosted.org"]);
    assert!(
        shown.contains("egress:    pypi.org, *.pythonhosted.org"),
        "{shown}"
    );
    let shown = muster(&["workspace", "egress", "--clear"]);
    assert!(shown.contains("egress:    no default hosts"), "{shown}");

    // A run's log with the sandbox block and two connections.
    let issue = crate::store_conformance::issue(&store, f.ws.id, "Work", IssueStatus::Todo).await;
    let run = store
        .create_run(&NewRun::assignment(f.ws.id, issue.id, coder.id))
        .await
        .unwrap();
    let allowed = muster::egress::Record {
        host: "github.com".into(),
        port: 443,
        method: "CONNECT".into(),
        allowed: true,
        why: None,
        bytes_up: 517,
        bytes_down: 4096,
    };
    let refused = muster::egress::Record {
        host: "evil.test".into(),
        port: 443,
        method: "CONNECT".into(),
        allowed: false,
        why: Some("evil.test:443 is not on the agent's egress allow-list".into()),
        bytes_up: 0,
        bytes_down: 0,
    };
    let event = |seq: i64, kind: &str, payload: Value| NewRunEvent {
        seq,
        at: chrono::Utc::now(),
        kind: kind.to_owned(),
        payload,
    };
    let with_line = |r: &muster::egress::Record| {
        let mut p = serde_json::to_value(r).unwrap();
        p["line"] = r.line().into();
        p
    };
    store
        .append_run_events(
            run.id,
            &[
                event(
                    1,
                    "sandbox",
                    json!({"mode": "sandboxed", "connect_ports": [4000, 4001],
                           "egress": {"summary": "allowed github.com; always api.example.com:443",
                                      "proxy": "http://127.0.0.1:4001"}}),
                ),
                event(2, "egress", with_line(&allowed)),
                event(3, "egress", with_line(&refused)),
            ],
        )
        .await
        .unwrap();
    let logs = muster(&["run", "logs", &run.id.to_string()]);
    assert!(
        logs.contains("egress: allowed github.com; always api.example.com:443 (through the egress proxy http://127.0.0.1:4001)"),
        "{logs}"
    );
    assert!(
        logs.contains("#2 egress: allowed CONNECT github.com:443 (↑517 B ↓4096 B)\n"),
        "{logs}"
    );
    assert!(
        logs.contains("#3 egress: refused CONNECT evil.test:443 (↑0 B ↓0 B): evil.test:443 is not on the agent's egress allow-list\n"),
        "{logs}"
    );
    app.shutdown.cancel();
}
