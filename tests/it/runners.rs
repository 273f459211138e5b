//! Remote runners, for real: `muster serve` replicas (board only) on one PostgreSQL and `muster runner`
//! processes, each with its own HOME, PATH and state folder, standing in for separate machines. A run
//! streams to a viewer on the other replica; `kill -9` of the runner's replica mid-run (the runner fails
//! over, the viewer sees every line exactly once, in order); `kill -9` of a runner mid-run (the run is
//! marked within 30 s, and not executed twice); a token revoked mid-run; and what the server refuses: an
//! older protocol, a wrong token, events for a run the runner does not hold or under a stale epoch.
//! Bounded polls only, never a sleep as synchronisation.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use futures_util::{SinkExt as _, StreamExt as _};
use muster::domain::*;
use muster::runner::protocol::{self, ToRunner, ToServer};
use muster::secrets::SecretBox;
use muster::store::Store;
use muster_tests::engine::{DEADLINE, bare_outcome, poll, poll_for, run_processes, seed_workspace};
use muster_tests::{Backend, TestDb};
use serde_json::{Value, json};
use tokio_tungstenite::tungstenite::Message;

/// A child process killed when dropped (a failed assertion never leaves servers behind).
struct Proc {
    child: Child,
    log: PathBuf,
}

impl Proc {
    fn kill_nine(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        if std::thread::panicking() {
            // A failed test shows what each process said.
            eprintln!("----- {} -----\n{}", self.log.display(), self.log());
        }
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// The shared world: one database, one data folder (one secret key, as in the compose file), a scratch
/// folder for logs, runner homes and scripts.
struct World {
    db: TestDb,
    store: std::sync::Arc<dyn Store>,
    scratch: tempfile::TempDir,
    ws: Workspace,
    owner: User,
    api_token: String,
}

impl World {
    async fn new(backend: Backend) -> Option<World> {
        let db = TestDb::new(backend).await?;
        let store = db.store().await;
        let (owner, ws) = seed_workspace(&store).await;
        let api_token = muster_tests::mint_token(store.as_ref(), ws.id, owner.id, "tests").await;
        Some(World {
            db,
            store,
            scratch: tempfile::tempdir().unwrap(),
            ws,
            owner,
            api_token,
        })
    }

    /// [`World::new`] with one replica serving at the returned URL, and the secret of a runner token
    /// named `token`.
    async fn with_replica(backend: Backend, token: &str) -> Option<(World, Proc, String, String)> {
        let world = World::new(backend).await?;
        let (replica, url) = world.replica("replica").await;
        let (_, secret) = world.runner_token(token).await;
        Some((world, replica, url, secret))
    }

    fn data_dir(&self) -> PathBuf {
        self.db.dir.path().join("data")
    }

    fn database_url(&self) -> String {
        match &self.db.url {
            muster::store::DatabaseUrl::Sqlite(p) => format!("sqlite://{}", p.display()),
            muster::store::DatabaseUrl::Postgres(u) => u.clone(),
        }
    }

    /// Starts a board-only replica and waits until it answers.
    async fn replica(&self, name: &str) -> (Proc, String) {
        let port = free_port();
        let log = self.scratch.path().join(format!("{name}.log"));
        let out = std::fs::File::create(&log).unwrap();
        let child = Command::new(muster_tests::muster_bin())
            .args([
                "serve",
                "--no-runner",
                "--addr",
                &format!("127.0.0.1:{port}"),
            ])
            .arg("--data-dir")
            .arg(self.data_dir())
            .args(["--database-url", &self.database_url()])
            .env("RUST_LOG", "muster=debug")
            .stdin(Stdio::null())
            .stdout(out.try_clone().unwrap())
            .stderr(out)
            .spawn()
            .unwrap();
        let url = format!("http://127.0.0.1:{port}");
        let health = format!("{url}/healthz");
        poll(&format!("replica {name} to answer"), || async {
            let ok = reqwest::get(&health).await.ok()?;
            ok.status().is_success().then_some(())
        })
        .await;
        (Proc { child, log }, url)
    }

    /// A runner token of the workspace.
    async fn runner_token(&self, name: &str) -> (RunnerToken, String) {
        let secret = muster::auth::new_secret("mrt");
        let token = self
            .store
            .create_runner_token(&NewRunnerToken {
                workspace_id: self.ws.id,
                name: name.to_owned(),
                prefix: secret.prefix,
                token_hash: secret.hash,
                created_by: self.owner.id,
            })
            .await
            .unwrap();
        (token, secret.secret)
    }

    /// Starts `muster runner` as a separate machine would: its own HOME, state and runs folders, and a
    /// PATH holding only the system's tools (plus `extra_path`).
    fn runner(&self, name: &str, servers: &[&str], token: &str, extra_path: Option<&Path>) -> Proc {
        self.runner_with(name, servers, token, extra_path, &[])
    }

    fn runner_with(
        &self,
        name: &str,
        servers: &[&str],
        token: &str,
        extra_path: Option<&Path>,
        args: &[&str],
    ) -> Proc {
        let home = self.scratch.path().join(format!("{name}-home"));
        std::fs::create_dir_all(&home).unwrap();
        let log = self.scratch.path().join(format!("{name}.log"));
        let out = std::fs::File::create(&log).unwrap();
        let mut path = String::new();
        if let Some(extra) = extra_path {
            path.push_str(&extra.display().to_string());
            path.push(':');
        }
        path.push_str("/usr/local/bin:/usr/bin:/bin");
        let mut cmd = Command::new(muster_tests::muster_bin());
        cmd.arg("runner");
        for s in servers {
            cmd.args(["--server", s]);
        }
        let child = cmd
            .args(["--name", name, "--max-runs", "2"])
            .args(args)
            .arg("--state-dir")
            .arg(self.scratch.path().join(format!("{name}-state")))
            .arg("--runs-dir")
            .arg(self.scratch.path().join(format!("{name}-runs")))
            .env_clear()
            // The token from the environment: on the command line it is refused.
            .env("MUSTER_RUNNER_TOKEN", token)
            .env("HOME", &home)
            .env("PATH", path)
            .env("RUST_LOG", "muster=debug")
            .stdin(Stdio::null())
            .stdout(out.try_clone().unwrap())
            .stderr(out)
            .spawn()
            .unwrap();
        Proc { child, log }
    }

    /// A custom agent running `body` as a script in the scratch folder (readable by any runner).
    async fn agent(&self, name: &str, body: &str, runners: &[&str]) -> Agent {
        use std::os::unix::fs::PermissionsExt as _;
        // In a folder of their own: the sandbox lets the agent read its program's folder, which must
        // hold nothing of the runner's.
        let scripts = self.scratch.path().join("scripts");
        std::fs::create_dir_all(&scripts).unwrap();
        let script = scripts.join(format!("{name}.sh"));
        std::fs::write(&script, format!("#!/bin/sh\n{body}\n")).unwrap();
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
        let secrets = SecretBox::load_or_create(&self.data_dir()).unwrap();
        let mut new = NewAgent::new(AgentName::parse(name).unwrap(), RuntimeKind::Custom);
        new.command = Some(script.display().to_string());
        new.max_retries = 1;
        new.runners = runners.iter().map(|r| (*r).to_owned()).collect();
        new.env = vec![EnvVar {
            key: "SECRET_TOKEN".to_owned(),
            value: secrets.seal(muster_tests::engine::SECRET).unwrap(),
            secret: true,
        }];
        self.store.create_agent(self.ws.id, &new).await.unwrap()
    }

    /// An issue assigned to `agent` through the API of `server` (which queues the run).
    async fn assign(&self, server: &str, title: &str, agent: &Agent) -> (Issue, Run) {
        self.assign_with_body(server, title, "", agent).await
    }

    async fn assign_with_body(
        &self,
        server: &str,
        title: &str,
        body: &str,
        agent: &Agent,
    ) -> (Issue, Run) {
        let mut new = NewIssue::new(IssueTitle::parse(title).unwrap())
            .with_body(body)
            .unwrap();
        new.status = IssueStatus::Todo;
        let issue = self.store.create_issue(self.ws.id, &new).await.unwrap();
        let resp = reqwest::Client::new()
            .patch(format!("{server}/api/v1/issues/{}", issue.key))
            .bearer_auth(&self.api_token)
            .json(&json!({ "assignee": agent.profile.name.as_str() }))
            .send()
            .await
            .unwrap();
        assert!(
            resp.status().is_success(),
            "assign: {}",
            resp.text().await.unwrap()
        );
        let run = poll("the run to be queued", || async {
            self.store
                .list_runs_for_issue(issue.id)
                .await
                .unwrap()
                .into_iter()
                .next()
        })
        .await;
        (issue, run)
    }

    async fn run(&self, id: RunId) -> Run {
        self.store.get_run(id).await.unwrap()
    }

    /// Waits up to `deadline` until `run` is as `done` wants it, and returns it.
    async fn run_until(
        &self,
        run: RunId,
        deadline: Duration,
        what: &str,
        done: impl Fn(&Run) -> bool,
    ) -> Run {
        poll_for(deadline, what, || async {
            let run = self.run(run).await;
            done(&run).then_some(run)
        })
        .await
    }

    /// Every event stored for `run`, in seq order.
    async fn events(&self, run: RunId) -> Vec<RunEvent> {
        self.store.run_events_since(run, 0, 100_000).await.unwrap()
    }

    /// Every stored event's `tick-N` numbers, in seq order.
    async fn ticks(&self, run: RunId) -> Vec<u32> {
        let events = self.events(run).await;
        events.iter().filter_map(|e| tick(&e.payload)).collect()
    }

    /// Waits until `run` has stored at least `n` ticks.
    async fn printed(&self, run: RunId, n: usize) {
        poll(&format!("the run to print {n} lines"), || async {
            (self.ticks(run).await.len() >= n).then_some(())
        })
        .await;
    }

    /// The workspace's runner called `name`, once it has registered.
    async fn runner_named(&self, name: &str) -> Option<Runner> {
        let runners = self.store.list_runners(self.ws.id).await.unwrap();
        runners.into_iter().find(|r| r.name == name)
    }

    /// Waits until the runner `name` has registered.
    async fn registered(&self, name: &str) -> Runner {
        poll(&format!("{name} to register"), || self.runner_named(name)).await
    }

    /// Sends `method path` to the API of `server` as the owner; the call must succeed.
    async fn call(&self, server: &str, method: reqwest::Method, path: &str) {
        let resp = reqwest::Client::new()
            .request(method.clone(), format!("{server}{path}"))
            .bearer_auth(&self.api_token)
            .send()
            .await
            .unwrap();
        assert!(
            resp.status().is_success(),
            "{method} {path}: {}",
            resp.status()
        );
    }
}

/// The `tick-N` a stand-in agent printed, if this event carries one.
fn tick(payload: &Value) -> Option<u32> {
    let text = payload.to_string();
    let at = text.find("tick-")? + 5;
    let digits: String = text[at..]
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    digits.parse().ok()
}

/// A stand-in agent printing `tick-1` … `tick-N`, one every `pause` seconds.
fn ticker(n: u32, pause: &str) -> String {
    format!("i=1; while [ $i -le {n} ]; do echo tick-$i; i=$((i+1)); sleep {pause}; done")
}

/// Follows the run's SSE stream on `server` from the start to its `end` event, collecting ticks.
async fn view(server: String, token: String, run: RunId) -> Vec<u32> {
    let mut resp = reqwest::Client::new()
        .get(format!("{server}/api/v1/runs/{run}/events/stream?after=0"))
        .bearer_auth(token)
        .send()
        .await
        .unwrap();
    assert!(resp.status().is_success(), "stream: {}", resp.status());
    let mut buffer = String::new();
    let mut ticks = Vec::new();
    while let Some(chunk) = resp.chunk().await.unwrap() {
        buffer.push_str(&String::from_utf8_lossy(&chunk));
        while let Some(end) = buffer.find("\n\n") {
            let frame: String = buffer.drain(..end + 2).collect();
            if frame.lines().any(|l| l == "event: end") {
                return ticks;
            }
            for line in frame.lines() {
                if let Some(data) = line.strip_prefix("data: ")
                    && let Ok(event) = serde_json::from_str::<Value>(data)
                    && let Some(t) = tick(&event["payload"])
                {
                    ticks.push(t);
                }
            }
        }
    }
    panic!("the stream ended without its end event; ticks so far: {ticks:?}");
}

fn one_to(n: u32) -> Vec<u32> {
    (1..=n).collect()
}

#[tokio::test]
#[ignore = "needs PostgreSQL; run with --include-ignored"]
async fn a_run_on_a_remote_runner_survives_the_death_of_its_replica() {
    let Some(world) = World::new(Backend::Postgres).await else {
        return;
    };
    let (mut first, first_url) = world.replica("replica-1").await;
    let (second, second_url) = world.replica("replica-2").await;
    let (_, token) = world.runner_token("build box").await;
    let agent = world.agent("ticker", &ticker(150, "0.02"), &[]).await;
    // The runner prefers the first replica; the viewer watches on the second.
    let runner = world.runner("box-a", &[&first_url, &second_url], &token, None);
    world.registered("box-a").await;
    let (issue, run) = world
        .assign(&second_url, "Tick through a failover", &agent)
        .await;
    let viewer = tokio::spawn(view(second_url.clone(), world.api_token.clone(), run.id));
    // Mid-run: kill -9 the replica the runner is connected to.
    world.printed(run.id, 30).await;
    first.kill_nine();
    let done = world
        .run_until(
            run.id,
            DEADLINE,
            "the run to finish on the other replica",
            |r| r.status.is_terminal(),
        )
        .await;
    assert_eq!(
        done.status,
        RunStatus::Succeeded,
        "run: {done:?}\nrunner log:\n{}\nreplica-2 log:\n{}",
        runner.log(),
        second.log()
    );
    assert_eq!(
        world.ticks(run.id).await,
        one_to(150),
        "stored: every line once, in order"
    );
    let seen = tokio::time::timeout(Duration::from_secs(30), viewer)
        .await
        .expect("the viewer reaches the end")
        .unwrap();
    assert_eq!(
        seen,
        one_to(150),
        "the viewer on the other replica: every line once, in order"
    );
    assert!(
        runner.log().contains("connection lost"),
        "the runner says it failed over:\n{}",
        runner.log()
    );
    let issue = world.store.get_issue_by_id(issue.id).await.unwrap();
    assert_eq!(issue.status, IssueStatus::InReview);
    let secret_shown = world
        .events(run.id)
        .await
        .iter()
        .any(|e| e.payload.to_string().contains(muster_tests::engine::SECRET));
    assert!(!secret_shown, "the agent's secret never reaches the log");
}

#[tokio::test]
#[ignore = "needs PostgreSQL; run with --include-ignored"]
async fn a_killed_runner_is_marked_within_30s_and_its_run_is_not_executed_twice() {
    let Some((world, _replica, url, token)) =
        World::with_replica(Backend::Postgres, "laptops").await
    else {
        return;
    };
    // Bound to box-a: only box-a may take the first attempt; the retry may go to either.
    let agent = world.agent("slow", &ticker(600, "0.05"), &[]).await;
    let mut box_a = world.runner("box-a", &[&url], &token, None);
    world.registered("box-a").await;
    let (_, run) = world
        .assign(&url, "Tick until the runner dies", &agent)
        .await;
    world.printed(run.id, 10).await;
    box_a.kill_nine();
    let killed_at = tokio::time::Instant::now();
    let stored_at_kill = world.ticks(run.id).await.len();
    let interrupted = world
        .run_until(
            run.id,
            Duration::from_secs(45),
            "the run to be marked interrupted",
            |r| r.status == RunStatus::Interrupted,
        )
        .await;
    let took = killed_at.elapsed();
    assert!(
        took <= Duration::from_secs(31),
        "marked {took:?} after the kill (lease 20 s + sweep 10 s)"
    );
    assert_eq!(interrupted.failure_reason, Some(FailureReason::RunnerLost));
    // A second runner comes: it takes the next attempt, never the interrupted run itself.
    let _box_b = world.runner("box-b", &[&url], &token, None);
    let retry = poll_for(
        Duration::from_secs(60),
        "the next attempt to run on box-b",
        || async {
            let runs = world
                .store
                .list_runs_for_issue(interrupted.issue_id)
                .await
                .unwrap();
            runs.into_iter()
                .find(|r| r.attempt == 2 && r.status == RunStatus::Running)
        },
    )
    .await;
    let box_b = world.runner_named("box-b").await.unwrap();
    assert_eq!(retry.runner_id, Some(box_b.id));
    let after = world.run(run.id).await;
    assert_eq!(
        after.status,
        RunStatus::Interrupted,
        "the interrupted run stays so"
    );
    let ticks = world.ticks(run.id).await;
    assert!(ticks.len() >= stored_at_kill, "nothing stored is lost");
    let mut sorted = ticks.clone();
    sorted.dedup();
    assert_eq!(sorted, ticks, "no line stored twice");
}

/// `kill -9` of `muster runner` mid-run (issue 26, finding 15: the orphaned agent and its children kept
/// writing into the worktree): every process of the run dies with the runner — the agent, its
/// background child and a grandchild that left its group and session — and its heartbeat file stops.
#[tokio::test]
#[ignore = "needs PostgreSQL; run with --include-ignored"]
async fn a_killed_runner_leaves_no_agent_process_alive() {
    let Some((world, _replica, url, token)) =
        World::with_replica(Backend::Postgres, "orphans").await
    else {
        return;
    };
    let body = format!(
        "sleep 1000 &\nsetsid sh -c 'while :; do echo beat >> \"$HOME/beat\"; sleep 0.05; done' &\n{}",
        ticker(100_000, "0.05")
    );
    let agent = world.agent("forker", &body, &[]).await;
    let mut runner = world.runner("box-k", &[&url], &token, None);
    let (_, run) = world.assign(&url, "Fork, then tick", &agent).await;
    let id = run.id.to_string();
    let beat = world
        .scratch
        .path()
        .join("box-k-runs")
        .join(&id)
        .join("home/beat");
    poll("the agent's processes and its heartbeat", || async {
        (run_processes(&id).len() >= 4 && beat.exists()).then_some(())
    })
    .await;
    runner.kill_nine();
    poll("no process of the run to be left", || async {
        run_processes(&id).is_empty().then_some(())
    })
    .await;
    let size = std::fs::metadata(&beat).unwrap().len();
    // Ten heartbeats' time: nobody is left to write one.
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(
        std::fs::metadata(&beat).unwrap().len(),
        size,
        "the heartbeat file grew"
    );
}

#[tokio::test]
#[ignore = "needs PostgreSQL; run with --include-ignored"]
async fn a_token_revoked_mid_run_disconnects_the_runner_and_its_run_is_handled() {
    let Some(world) = World::new(Backend::Postgres).await else {
        return;
    };
    let (_replica, url) = world.replica("replica").await;
    let (token, secret) = world.runner_token("revoked soon").await;
    let agent = world.agent("long", &ticker(600, "0.05"), &[]).await;
    let mut runner = world.runner("box-r", &[&url], &secret, None);
    let (_, run) = world.assign(&url, "Tick until revoked", &agent).await;
    world.printed(run.id, 5).await;
    // Revoked by a person through the API: the runner is disconnected at once (not at its next
    // heartbeat), with the reason.
    let revoke = format!("/api/v1/runner-tokens/{}", token.id);
    world.call(&url, reqwest::Method::DELETE, &revoke).await;
    let until = tokio::time::Instant::now() + Duration::from_secs(4);
    let status = loop {
        if let Some(status) = runner.child.try_wait().unwrap() {
            break status;
        }
        assert!(
            tokio::time::Instant::now() < until,
            "the runner did not stop:\n{}",
            runner.log()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert!(
        !status.success(),
        "the runner exits with an error when its token is revoked"
    );
    assert!(
        runner.log().contains("revoked"),
        "the runner says why:\n{}",
        runner.log()
    );
    let run = world
        .run_until(
            run.id,
            Duration::from_secs(45),
            "the run to be handled",
            |r| r.status.is_terminal(),
        )
        .await;
    assert_eq!(run.status, RunStatus::Interrupted);
}

/// A raw protocol client: the tests' own WebSocket to a replica.
struct RawClient {
    socket: tokio_tungstenite::WebSocketStream<
        tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>,
    >,
}

impl RawClient {
    async fn connect(url: &str) -> RawClient {
        let ws = url.replacen("http://", "ws://", 1) + "/api/v1/runners/connect";
        let (socket, _) = tokio_tungstenite::connect_async(ws).await.unwrap();
        RawClient { socket }
    }

    async fn send(&mut self, message: &ToServer) {
        let text = serde_json::to_string(message).unwrap();
        self.socket.send(Message::Text(text.into())).await.unwrap();
    }

    /// The next protocol message other than `alive`; panics on a close.
    async fn answer(&mut self) -> ToRunner {
        loop {
            match self.next().await.unwrap() {
                ToRunner::Alive => {}
                other => return other,
            }
        }
    }

    /// The next protocol message, or the close frame's (code, reason).
    async fn next(&mut self) -> Result<ToRunner, (u16, String)> {
        loop {
            let frame = tokio::time::timeout(Duration::from_secs(20), self.socket.next())
                .await
                .expect("the server answers");
            match frame {
                Some(Ok(Message::Text(text))) => return Ok(serde_json::from_str(&text).unwrap()),
                Some(Ok(Message::Close(Some(frame)))) => {
                    return Err((u16::from(frame.code), frame.reason.to_string()));
                }
                Some(Ok(Message::Close(None))) | None => return Err((1005, String::new())),
                Some(Ok(_)) => {}
                Some(Err(e)) => return Err((1006, e.to_string())),
            }
        }
    }

    async fn hello(&mut self, token: &str, version: u32, name: &str) {
        let hello = protocol::Hello {
            protocol: version,
            token: token.to_owned(),
            name: name.to_owned(),
            version: "test".to_owned(),
            runtimes: Vec::new(),
            local_models: Vec::new(),
            max_runs: 1,
            live: Vec::new(),
        };
        self.send(&ToServer::Hello(hello)).await;
    }
}

fn event(seq: Seq) -> NewRunEvent {
    NewRunEvent {
        seq,
        at: chrono::Utc::now(),
        kind: "text".to_owned(),
        payload: json!({ "text": "forged" }),
    }
}

#[tokio::test]
#[ignore = "needs PostgreSQL; run with --include-ignored"]
async fn the_server_refuses_old_protocols_wrong_tokens_and_runs_a_runner_does_not_hold() {
    let Some((world, _replica, url, token)) = World::with_replica(Backend::Postgres, "raw").await
    else {
        return;
    };

    // An older protocol: closed with 4002 and a reason naming both versions.
    let mut old = RawClient::connect(&url).await;
    old.hello(&token, protocol::PROTOCOL_VERSION - 1, "old")
        .await;
    let (code, reason) = old.next().await.unwrap_err();
    assert_eq!(code, 4002, "{reason}");
    assert!(reason.contains("protocol"), "{reason}");

    // A wrong token: closed with 4001 before anything is registered.
    let mut wrong = RawClient::connect(&url).await;
    wrong
        .hello("mrt_not-a-token", protocol::PROTOCOL_VERSION, "intruder")
        .await;
    let (code, reason) = wrong.next().await.unwrap_err();
    assert_eq!(code, 4001, "{reason}");
    assert!(
        world.runner_named("intruder").await.is_none(),
        "nothing registered"
    );

    // A message before hello: closed with 4003.
    let mut rude = RawClient::connect(&url).await;
    rude.send(&ToServer::Claim { slots: 1 }).await;
    let (code, _) = rude.next().await.unwrap_err();
    assert_eq!(code, 4003);

    // A real runner holds a run; a second connection with the same token tries to write into it.
    let agent = world.agent("held", &ticker(400, "0.05"), &[]).await;
    let _runner = world.runner("box-h", &[&url], &token, None);
    let (_, run) = world.assign(&url, "Held by box-h", &agent).await;
    let running = world
        .run_until(run.id, DEADLINE, "the run to run", |r| {
            r.status == RunStatus::Running
        })
        .await;
    let mut forger = RawClient::connect(&url).await;
    forger
        .hello(&token, protocol::PROTOCOL_VERSION, "forger")
        .await;
    let Ok(ToRunner::Welcome(_)) = forger.next().await else {
        panic!("the forger's hello is welcome (its token is valid)");
    };
    let before = world.events(run.id).await.len();
    let forged_seq = 90_000;
    for epoch in [running.lease_epoch, running.lease_epoch - 1] {
        forger
            .send(&ToServer::Events {
                run_id: run.id,
                epoch,
                from_seq: forged_seq,
                events: vec![event(forged_seq)],
                spent: None,
            })
            .await;
        let answer = forger.answer().await;
        let ToRunner::Refused { run_id, reason } = answer else {
            panic!("events for a run the forger does not hold are refused, got {answer:?}");
        };
        assert_eq!(run_id, run.id);
        assert!(reason.contains("does not hold"), "{reason}");
    }
    let forged = world
        .store
        .run_events_since(run.id, forged_seq - 1, 10)
        .await
        .unwrap();
    assert!(forged.is_empty(), "nothing written: {forged:?}");
    assert!(
        world.events(run.id).await.len() >= before,
        "the real runner's events keep coming"
    );
    // A finish from the forger does not end the run either.
    let finish = protocol::Finished {
        run_id: run.id,
        epoch: running.lease_epoch,
        last_seq: 1,
        outcome: RunOutcome {
            exit_code: Some(0),
            summary: Some("forged".to_owned()),
            ..bare_outcome(RunStatus::Succeeded)
        },
        changed: false,
    };
    forger.send(&ToServer::Finished(finish)).await;
    let answer = forger.answer().await;
    assert!(matches!(answer, ToRunner::Refused { .. }), "{answer:?}");
    assert_eq!(world.run(run.id).await.status, RunStatus::Running);
}

#[tokio::test]
#[ignore = "needs the agent CLIs (MUSTER_AGENT_CLIS_DIR, installed by .ci/run) and PostgreSQL (MUSTER_TEST_PG_URL); run with --include-ignored"]
async fn the_real_claude_code_completes_a_run_through_a_remote_runner() {
    let Some(claude) =
        muster_tests::agent_cli("claude", "a run of the real Claude Code on a remote runner")
    else {
        return;
    };
    let Some(world) = World::new(Backend::Postgres).await else {
        return;
    };
    let server = muster_tests::model_server::ModelServer::start()
        .await
        .unwrap();
    let (_replica, url) = world.replica("replica").await;
    let (_, token) = world.runner_token("claude box").await;
    // Only this runner has Claude Code: its PATH and its --claude-path, as on a developer's laptop.
    let claude_path = claude.display().to_string();
    let runner = world.runner_with(
        "claude-box",
        &[&url],
        &token,
        claude.parent(),
        &["--claude-path", &claude_path],
    );
    poll("the runner to report Claude Code", || async {
        let runner = world.runner_named("claude-box").await;
        runner.filter(|r| r.detected.to_string().contains("claude"))
    })
    .await;
    const KEY: &str = "sk-ant-remote-4711";
    let secrets = SecretBox::load_or_create(&world.data_dir()).unwrap();
    let mut new = NewAgent::new(AgentName::parse("claude").unwrap(), RuntimeKind::Claude);
    new.base_url = Some(server.base_url().to_owned());
    new.permission_mode = PermissionMode::Bypass;
    new.max_retries = 0;
    new.env = vec![
        EnvVar {
            key: "ANTHROPIC_API_KEY".to_owned(),
            value: secrets.seal(KEY).unwrap(),
            secret: true,
        },
        EnvVar {
            key: "CLAUDE_CODE_MAX_RETRIES".to_owned(),
            value: "0".to_owned(),
            secret: false,
        },
    ];
    let agent = world.store.create_agent(world.ws.id, &new).await.unwrap();
    let (_, run) = world
        .assign_with_body(
            &url,
            "Run a command remotely",
            "CMD=echo remote-$((6*7))",
            &agent,
        )
        .await;
    let done = world
        .run_until(
            run.id,
            Duration::from_secs(120),
            "the Claude run to finish",
            |r| r.status.is_terminal(),
        )
        .await;
    let events = world.events(run.id).await;
    let log: String = events
        .iter()
        .map(|e| format!("{} {}\n", e.kind, e.payload))
        .collect();
    assert_eq!(
        done.status,
        RunStatus::Succeeded,
        "{done:?}\n{log}\nrunner:\n{}",
        runner.log()
    );
    let remote = world.runner_named("claude-box").await.unwrap();
    assert_eq!(
        done.runner_id,
        Some(remote.id),
        "it ran on the remote runner"
    );
    assert!(
        log.contains("remote-42"),
        "the tool ran on the runner:\n{log}"
    );
    let requests = server.requests();
    assert!(
        requests
            .iter()
            .any(|r| r.path.starts_with("/v1/messages") && r.header("x-api-key") == Some(KEY)),
        "Claude Code called the model with the agent's key"
    );
    assert!(!log.contains(KEY), "the key never reaches the log");
}

#[tokio::test]
#[ignore = "needs PostgreSQL; run with --include-ignored"]
async fn a_runner_holding_a_run_is_refused_under_a_stale_epoch_and_acknowledged_under_its_own() {
    let Some((world, _replica, url, token)) = World::with_replica(Backend::Postgres, "raw").await
    else {
        return;
    };
    // The test itself is the runner, speaking the protocol by hand; the agent is bound to it.
    let agent = world.agent("bound", "true", &["raw-runner"]).await;
    let mut raw = RawClient::connect(&url).await;
    raw.hello(&token, protocol::PROTOCOL_VERSION, "raw-runner")
        .await;
    let Ok(ToRunner::Welcome(welcome)) = raw.next().await else {
        panic!("welcome");
    };
    assert!(welcome.orphans.is_empty());
    raw.send(&ToServer::Claim { slots: 1 }).await;
    let (_, run) = world.assign(&url, "Held by hand", &agent).await;
    let ToRunner::Run(order) = raw.answer().await else {
        panic!("expected the order");
    };
    assert_eq!(order.run_id, run.id);
    assert_eq!(order.agent.name, "bound");
    assert!(
        order
            .agent
            .env
            .iter()
            .any(|v| v.secret && v.value == muster_tests::engine::SECRET),
        "the order carries the agent's secret opened, for the runner only"
    );
    // A stale epoch: refused, nothing written.
    raw.send(&ToServer::Events {
        run_id: run.id,
        epoch: order.epoch - 1,
        from_seq: 1,
        events: vec![event(1)],
        spent: None,
    })
    .await;
    let ToRunner::Refused { reason, .. } = raw.answer().await else {
        panic!("a stale epoch is refused");
    };
    assert!(reason.contains("epoch"), "{reason}");
    assert!(
        world
            .store
            .run_events_since(run.id, 0, 10)
            .await
            .unwrap()
            .is_empty()
    );
    // Its own epoch: stored and acknowledged; a resend is harmless.
    for _ in 0..2 {
        raw.send(&ToServer::Events {
            run_id: run.id,
            epoch: order.epoch,
            from_seq: 1,
            events: vec![event(1), event(2)],
            spent: None,
        })
        .await;
        let ToRunner::Ack { run_id, seq } = raw.answer().await else {
            panic!("events under the run's epoch are acknowledged");
        };
        assert_eq!((run_id, seq), (run.id, 2));
    }
    assert_eq!(
        world
            .store
            .run_events_since(run.id, 0, 10)
            .await
            .unwrap()
            .len(),
        2
    );
}

#[tokio::test]
#[ignore = "needs PostgreSQL; run with --include-ignored"]
async fn a_cancel_on_another_replica_reaches_the_runner_at_once() {
    let Some(world) = World::new(Backend::Postgres).await else {
        return;
    };
    let (_first, first_url) = world.replica("replica-1").await;
    let (_second, second_url) = world.replica("replica-2").await;
    let (_, token) = world.runner_token("box").await;
    let agent = world.agent("endless", &ticker(100_000, "0.05"), &[]).await;
    let _runner = world.runner("box-c", &[&first_url], &token, None);
    let (_, run) = world
        .assign(&first_url, "Cancel me elsewhere", &agent)
        .await;
    world.printed(run.id, 1).await;
    let cancel = format!("/api/v1/runs/{}/cancel", run.id);
    world
        .call(&second_url, reqwest::Method::POST, &cancel)
        .await;
    let cancelled_at = tokio::time::Instant::now();
    let done = world
        .run_until(
            run.id,
            Duration::from_secs(15),
            "the run to end cancelled",
            |r| r.status.is_terminal(),
        )
        .await;
    assert_eq!(done.status, RunStatus::Cancelled, "{done:?}");
    // SIGINT's grace is 10 s by default, but the ticker stops at SIGINT: well under a heartbeat lease.
    assert!(
        cancelled_at.elapsed() < Duration::from_secs(12),
        "{:?}",
        cancelled_at.elapsed()
    );
}

/// Issue 27: a runner that goes away is offline at once (not half a minute later, when its heartbeat is
/// stale), so a queued card says why it waits from the moment its runner is gone; one that comes back is
/// online at once.
#[tokio::test]
async fn a_runner_that_goes_is_offline_at_once() {
    let Some((world, _replica, url, token)) = World::with_replica(Backend::Sqlite, "laptops").await
    else {
        return;
    };
    let online = |name: &'static str| {
        let world = &world;
        async move {
            let now = chrono::Utc::now();
            world
                .store
                .list_runners(world.ws.id)
                .await
                .unwrap()
                .iter()
                .any(|r| r.name == name && r.online_at(now))
        }
    };
    let mut box_a = world.runner("box-a", &[&url], &token, None);
    poll("box-a to be online", || async {
        online("box-a").await.then_some(())
    })
    .await;
    box_a.kill_nine();
    poll_for(Duration::from_secs(5), "box-a to be offline", || async {
        (!online("box-a").await).then_some(())
    })
    .await;
}
