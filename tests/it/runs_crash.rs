//! A real `kill -9` of a real `muster serve` in the middle of a run, then a restart on the same data
//! directory and database: no process of the agent outlives the server (not its background child, not a
//! grandchild that left its group and session; its heartbeat file stops growing), the run is
//! `interrupted`, every event the API served before the kill is still there, and the work it did in its
//! git worktree is committed on its branch and left to a person (an inbox item), since it changed files.

use std::path::Path;
use std::process::{Child, Command, Stdio};

use muster::domain::*;
use muster_tests::engine::{poll, run_processes, seed_workspace};
use muster_tests::{Backend, TestDb, git};
use serde_json::{Value, json};

/// A `muster serve` child process and how to reach it.
struct Server {
    child: Child,
    url: String,
}

/// Starts `muster serve` on `db` (data under `data_dir`), and waits until it answers.
async fn serve(db: &TestDb, data_dir: &Path, logs: &Path) -> Server {
    let scratch = logs.parent().unwrap();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let url = match &db.url {
        muster::store::DatabaseUrl::Sqlite(p) => format!("sqlite://{}", p.display()),
        muster::store::DatabaseUrl::Postgres(u) => u.clone(),
    };
    let log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(logs)
        .unwrap();
    let child = Command::new(muster_tests::muster_bin())
        .args(["serve", "--addr", &format!("127.0.0.1:{port}")])
        .arg("--data-dir")
        .arg(data_dir)
        .args(["--database-url", &url])
        .arg("--runs-dir")
        .arg(db.dir.path().join("runs"))
        // The agent writes its heartbeat in the scratch folder (its one folder outside the run).
        .arg("--agent-rw-path")
        .arg(scratch)
        .env_remove("MUSTER_NO_RUNNER")
        .env("RUST_LOG", "muster=debug")
        .stdin(Stdio::null())
        .stdout(log.try_clone().unwrap())
        .stderr(log)
        .spawn()
        .unwrap();
    let url = format!("http://127.0.0.1:{port}");
    let health = format!("{url}/healthz");
    poll("the server to answer", || async {
        let ok = reqwest::get(&health).await.ok()?;
        ok.status().is_success().then_some(())
    })
    .await;
    Server { child, url }
}

async fn get(server: &Server, token: &str, path: &str) -> Value {
    let resp = reqwest::Client::new()
        .get(format!("{}{path}", server.url))
        .bearer_auth(token)
        .send()
        .await
        .unwrap();
    assert!(resp.status().is_success(), "GET {path}: {}", resp.status());
    resp.json().await.unwrap()
}

/// Every event of the run the API serves now, by seq: pages until one is not full (the end as of that
/// answer; a live run keeps appending, so waiting for an empty page could last as long as the run).
async fn all_events(server: &Server, token: &str, run: &str) -> Vec<Value> {
    const PAGE: usize = 500;
    let mut out = Vec::new();
    let mut after = 0;
    loop {
        let page = get(
            server,
            token,
            &format!("/api/v1/runs/{run}/events?after={after}&limit={PAGE}"),
        )
        .await;
        let events = page["events"].as_array().unwrap().clone();
        let full = events.len() == PAGE;
        if let Some(last) = events.last() {
            after = last["seq"].as_i64().unwrap();
        }
        out.extend(events);
        if !full {
            return out;
        }
    }
}

async fn kill_nine_mid_run(backend: Backend) {
    let Some(db) = TestDb::new(backend).await else {
        return;
    };
    let scratch = tempfile::tempdir().unwrap();
    let data_dir = db.dir.path().join("data");
    let logs = scratch.path().join("server.log");
    let repo = scratch.path().join("repo");
    muster_tests::demo_repo(&repo);

    // Seed: owner, token, a repository, an agent that edits a file then prints numbered lines forever,
    // with a background child and a grandchild in a session of its own that writes a heartbeat file.
    let store = db.store().await;
    let (user, ws) = seed_workspace(&store).await;
    store
        .set_workspace_repo(ws.id, Some(&repo.display().to_string()))
        .await
        .unwrap();
    let token = muster_tests::mint_token(store.as_ref(), ws.id, user.id, "crash").await;
    let beat = scratch.path().join("beat");
    let script = scratch.path().join("agent.sh");
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\ncat >/dev/null\necho 'work in progress' > WIP.md\nsleep 1000 &\nsetsid sh -c 'while :; do echo beat >> \"{0}\"; sleep 0.05; done' &\ni=0\nwhile :; do i=$((i+1)); echo \"line $i\"; sleep 0.02; done\n",
            beat.display()
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    let mut new = NewAgent::new(AgentName::parse("counter").unwrap(), RuntimeKind::Custom);
    new.command = Some(script.display().to_string());
    new.max_retries = 2;
    store.create_agent(ws.id, &new).await.unwrap();
    let mut issue = NewIssue::new(IssueTitle::parse("Count forever").unwrap());
    issue.status = IssueStatus::Todo;
    let issue = store.create_issue(ws.id, &issue).await.unwrap();
    store.close().await;

    let mut server = serve(&db, &data_dir, &logs).await;
    let resp = reqwest::Client::new()
        .patch(format!("{}/api/v1/issues/{}", server.url, issue.key))
        .bearer_auth(&token)
        .json(&json!({ "assignee": "counter" }))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    let runs_path = format!("/api/v1/issues/{}/runs", issue.key);
    let run_id = poll("the run to be queued", || async {
        let runs = get(&server, &token, &runs_path).await;
        runs[0]["id"].as_str().map(str::to_owned)
    })
    .await;
    // The script, its loop's sleeps, `sleep 1000` and the heartbeat grandchild (and the exec step).
    poll("the agent's processes and its heartbeat", || async {
        (run_processes(&run_id).len() >= 4 && beat.exists()).then_some(())
    })
    .await;
    // Read at least 30 numbered lines through the API: these are acknowledged.
    let seen = poll("30 acknowledged events", || async {
        let events = all_events(&server, &token, &run_id).await;
        (events.len() >= 30).then_some(events)
    })
    .await;

    server.child.kill().unwrap(); // SIGKILL: no shutdown path runs.
    server.child.wait().unwrap();
    // Every process of the agent dies with the server's runner (before: they all kept running).
    poll("no process of the run to be left", || async {
        run_processes(&run_id).is_empty().then_some(())
    })
    .await;
    let size = std::fs::metadata(&beat).unwrap().len();
    // Ten heartbeats' time: nobody is left to write one.
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    assert_eq!(
        std::fs::metadata(&beat).unwrap().len(),
        size,
        "the heartbeat file grew"
    );

    let server = serve(&db, &data_dir, &logs).await;
    let run_path = format!("/api/v1/runs/{run_id}");
    let run = poll("the run to be marked interrupted", || async {
        let run = get(&server, &token, &run_path).await;
        (run["status"] == "interrupted").then_some(run)
    })
    .await;
    assert_eq!(run["failure_reason"], "runner_lost", "{run}");
    let now = all_events(&server, &token, &run_id).await;
    for event in &seen {
        let seq = event["seq"].as_i64().unwrap();
        let kept = now.iter().find(|e| e["seq"].as_i64() == Some(seq));
        assert_eq!(
            kept,
            Some(event),
            "acknowledged event {seq} survived the crash"
        );
    }
    assert!(run_processes(&run_id).is_empty());
    // The work it did is kept on its branch, its diff logged last, and a person decides on a retry.
    let branch = format!("muster/{}-counter", issue.key);
    assert_eq!(run["branch"], branch.as_str());
    let files = git(&repo, &["ls-tree", "-r", "--name-only", &branch]);
    assert!(files.lines().any(|f| f == "WIP.md"), "{files}");
    let last = now.last().unwrap();
    assert_eq!(last["kind"], "diff", "{last}");
    assert!(
        last["payload"]["stat"].as_str().unwrap().contains("WIP.md"),
        "{last}"
    );
    let inbox = inbox_of(&db, ws.id, user.id).await;
    assert!(
        inbox.iter().any(|i| i.kind == InboxKind::RunInterrupted
            && i.run_id.map(|r| r.to_string()) == Some(run_id.clone())),
        "{inbox:?}"
    );
    let runs = get(&server, &token, &runs_path).await;
    assert_eq!(
        runs.as_array().unwrap().len(),
        1,
        "a run that changed files is not re-queued: {runs}"
    );
    stop(server);
}

/// The inbox, read straight from the store.
async fn inbox_of(db: &TestDb, ws: WorkspaceId, user: UserId) -> Vec<InboxItem> {
    let store = db.store().await;
    let inbox = store.list_inbox(ws, user).await.unwrap();
    store.close().await;
    inbox
}

/// Stops the server gracefully (SIGTERM) and waits for it.
fn stop(mut server: Server) {
    let _ = Command::new("kill")
        .args(["-TERM", &server.child.id().to_string()])
        .status();
    let _ = server.child.wait();
}

both_backends!(kill_nine_mid_run,);
