//! Shared support of the run engine tests: a real server in-process with its embedded runner, `custom`
//! agents whose command is a small shell script, polling with a deadline (never a fixed sleep).
#![allow(clippy::unwrap_used)]

use std::future::Future;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use crate::{AppBuilder, Backend, TestDb};
use chrono::{TimeDelta, Utc};
use muster::domain::*;
use muster::runner::executor::RunTiming;
use muster::state::AppState;
use muster::store::Store;
use serde_json::json;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// The longest any poll waits before the test fails.
pub const DEADLINE: Duration = Duration::from_secs(30);
/// How often a poll looks again.
pub const POLL: Duration = Duration::from_millis(25);
/// A secret value the agent prints; it must never reach the run log.
pub const SECRET: &str = "sk-test-hunter2-0123456789";

/// A server with a workspace, its owner (with an API token) and a scratch directory for scripts.
pub struct Env {
    pub state: AppState,
    pub store: Arc<dyn Store>,
    pub addr: std::net::SocketAddr,
    pub ws: Workspace,
    pub owner: UserId,
    pub token: String,
    pub scripts: tempfile::TempDir,
    pub shutdown: CancellationToken,
    pub handle: tokio::task::JoinHandle<anyhow::Result<()>>,
    pub db: TestDb,
    /// One HTTP client for the test's requests (building one loads the certificate store).
    pub http: reqwest::Client,
}

/// The production run clocks, but a stopped agent gets 2 s after SIGINT and 2 s after SIGTERM instead of
/// the production graces: a test that stops a run does not wait out minutes.
pub fn quick_stops() -> RunTiming {
    RunTiming {
        int_grace: Duration::from_secs(2),
        term_grace: Duration::from_secs(2),
        ..RunTiming::default()
    }
}

/// Clocks short enough for tests; the idle tick is long so that a quick claim proves the wake-up.
pub fn test_timing() -> RunTiming {
    RunTiming {
        idle_tick: Duration::from_secs(60),
        stall_override: Some(Duration::from_millis(800)),
        ..quick_stops()
    }
}

impl Env {
    /// A fresh server on `backend` with a workspace and its owner; `None` when the backend is absent.
    pub async fn start(backend: Backend) -> Option<Env> {
        Self::start_with_timing(backend, test_timing()).await
    }

    /// [`Env::start`] with other run clocks.
    pub async fn start_with_timing(backend: Backend, timing: RunTiming) -> Option<Env> {
        let db = TestDb::new(backend).await?;
        let store = db.store().await;
        let (user, ws) = seed_workspace(&store).await;
        Some(Self::boot_with(db, store, ws, user.id, |_| {}, timing).await)
    }

    /// Starts the server (and its runner) on a database already seeded with `ws` and its `owner`.
    pub async fn boot(db: TestDb, store: Arc<dyn Store>, ws: Workspace, owner: UserId) -> Env {
        Self::boot_with(db, store, ws, owner, |_| {}, test_timing()).await
    }

    /// [`Env::boot`] with a changed configuration and other clocks.
    pub async fn boot_with(
        db: TestDb,
        store: Arc<dyn Store>,
        ws: Workspace,
        owner: UserId,
        configure: impl FnOnce(&mut muster::config::Config),
        timing: RunTiming,
    ) -> Env {
        let token = crate::mint_token(store.as_ref(), ws.id, owner, "test").await;
        store.close().await;
        let scripts = tempfile::tempdir().unwrap();
        let app = AppBuilder::new(db.config())
            .embedded_runner()
            // The stand-in agents leave their findings (pids, outputs) beside their scripts: the one folder
            // outside its run that the sandbox lets them write, as an operator's `--agent-rw-path` would.
            .configure(|config| config.agent_rw_paths = vec![scripts.path().to_path_buf()])
            .configure(configure)
            .timing(timing)
            .spawn()
            .await;
        Env {
            store: app.store,
            state: app.state,
            addr: app.addr,
            ws,
            owner,
            token,
            scripts,
            shutdown: app.shutdown,
            handle: app.handle,
            db,
            http: reqwest::Client::new(),
        }
    }

    /// `http://addr/path`.
    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    /// Sends `method path`, with `body` as JSON if any, as the owner: the answer's status and text.
    pub async fn call(
        &self,
        method: reqwest::Method,
        path: &str,
        body: Option<serde_json::Value>,
    ) -> (u16, String) {
        let mut req = self
            .http
            .request(method, self.url(path))
            .bearer_auth(&self.token);
        if let Some(body) = body {
            req = req.json(&body);
        }
        let resp = req.send().await.unwrap();
        (resp.status().as_u16(), resp.text().await.unwrap())
    }

    /// Creates an agent through the API as the owner (`body` as `POST /api/v1/agents` takes it), which
    /// must answer 201: the answer's text.
    pub async fn create_agent(&self, body: serde_json::Value) -> String {
        let (status, text) = self
            .call(reqwest::Method::POST, "/api/v1/agents", Some(body))
            .await;
        assert_eq!(status, 201, "{text}");
        text
    }

    /// A `custom` agent, created through the API without retries, whose run reads its prompt and then
    /// runs the shell `script`.
    pub async fn script_agent(&self, name: &str, script: &str) {
        let path = self.script(&format!("{name}.sh"), &format!("cat >/dev/null\n{script}"));
        self.create_agent(json!({ "name": name, "kind": "custom",
            "command": path.display().to_string(), "max_retries": 0 }))
            .await;
    }

    /// Files a todo issue through the API as the owner, assigned to `agent` (which queues a run): its key.
    pub async fn file_assigned(&self, title: &str, body: &str, agent: &str) -> String {
        let issue = json!({ "title": title, "body": body, "status": "todo", "assignee": agent });
        let (status, text) = self
            .call(reqwest::Method::POST, "/api/v1/issues", Some(issue))
            .await;
        assert_eq!(status, 201, "{text}");
        let created: serde_json::Value = serde_json::from_str(&text).unwrap();
        created["key"].as_str().unwrap().to_owned()
    }

    /// The last run on the issue `key` once it ended and the issue settled in `settled` (the run's
    /// follow-up is done then), within `deadline`.
    pub async fn settled(&self, key: &str, settled: IssueStatus, deadline: Duration) -> Run {
        let key = IssueKey::parse(key).unwrap();
        let what = format!("the run on {key} to end with the issue in {settled}");
        poll_for(deadline, &what, || async {
            let issue = self.store.get_issue(self.ws.id, &key).await.unwrap();
            let runs = self.store.list_runs_for_issue(issue.id).await.unwrap();
            let run = runs.last()?;
            (run.status.is_terminal() && issue.status == settled).then(|| run.clone())
        })
        .await
    }

    /// `muster ARGS` (the CLI) as the owner, from a cleared environment; it must succeed: its stdout.
    pub async fn muster(&self, args: &[&str]) -> String {
        let home = self.scripts.path().join("cli-home");
        std::fs::create_dir_all(&home).unwrap();
        let mut cmd = std::process::Command::new(crate::muster_bin());
        cmd.env_clear()
            .env("HOME", &home)
            .env("MUSTER_CONFIG_DIR", &home)
            .env("MUSTER_URL", self.url(""))
            .env("MUSTER_TOKEN", &self.token)
            .args(args)
            .stdin(std::process::Stdio::null());
        let out = tokio::task::spawn_blocking(move || cmd.output().unwrap())
            .await
            .unwrap();
        let stdout = String::from_utf8(out.stdout).unwrap();
        assert!(
            out.status.success(),
            "muster {args:?}: {stdout}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        stdout
    }

    /// Writes `body` as an executable script and returns its path.
    pub fn script(&self, name: &str, body: &str) -> PathBuf {
        use std::os::unix::fs::PermissionsExt as _;
        let path = self.scripts.path().join(name);
        std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        path
    }

    /// Copies a Claude fixture next to the scripts and returns its path.
    pub fn fixture(&self, name: &str) -> PathBuf {
        let src = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../agents/fixtures/claude")
            .join(name);
        let dst = self.scripts.path().join(name);
        std::fs::copy(src, &dst).unwrap();
        dst
    }

    /// A custom agent running `script`, with one secret variable.
    pub async fn agent(&self, name: &str, script: &Path) -> Agent {
        let mut new = NewAgent::new(AgentName::parse(name).unwrap(), RuntimeKind::Custom);
        new.command = Some(script.display().to_string());
        new.max_retries = 0;
        new.instructions = "Be brief.".to_owned();
        new.env = vec![EnvVar {
            key: "SECRET_TOKEN".to_owned(),
            value: self.state.secrets.seal(SECRET).unwrap(),
            secret: true,
        }];
        self.store.create_agent(self.ws.id, &new).await.unwrap()
    }

    /// Changes an agent's profile in place.
    pub async fn tweak(&self, agent: &Agent, change: impl FnOnce(&mut NewAgent)) -> Agent {
        let mut profile = agent.profile.clone();
        change(&mut profile);
        self.store
            .update_agent(self.ws.id, agent.id, &profile)
            .await
            .unwrap()
    }

    /// A todo issue with no assignee.
    pub async fn issue(&self, title: &str) -> Issue {
        let mut new = NewIssue::new(IssueTitle::parse(title).unwrap())
            .with_body("Fix the thing.")
            .unwrap();
        new.status = IssueStatus::Todo;
        self.store.create_issue(self.ws.id, &new).await.unwrap()
    }

    /// Assigns `agent` through the JSON API, as a person would.
    pub async fn assign(&self, issue: &Issue, agent: &Agent) {
        let path = format!("/api/v1/issues/{}", issue.key);
        self.api(
            reqwest::Method::PATCH,
            &path,
            json!({ "assignee": agent.profile.name.as_str() }),
        )
        .await;
    }

    /// A todo issue `title` assigned to `agent` through the API, and its run once it is queued.
    pub async fn assign_new(&self, title: &str, agent: &Agent) -> (Issue, Run) {
        let issue = self.issue(title).await;
        self.assign(&issue, agent).await;
        let run = self.the_run(&issue).await;
        (issue, run)
    }

    /// A new issue `title` assigned to a new agent `name` that reports its run's `MUSTER_URL`,
    /// `MUSTER_TOKEN` and `MUSTER_ISSUE` and then holds the run open: for acting with a run's token from
    /// the test, as its agent could.
    pub async fn hold_run(&self, name: &str, title: &str) -> HeldRun {
        let (agent, out) = self.holder(name).await;
        let (issue, run) = self.assign_new(title, &agent).await;
        self.held(issue, run, &out).await
    }

    /// [`Env::hold_run`] for a plan run: a new issue `title`, unassigned, that a new agent `name` is
    /// asked to plan (`POST /api/v1/issues/{key}/plan`, as a person would); the run reports its token
    /// and holds on.
    pub async fn hold_plan_run(&self, name: &str, title: &str) -> HeldRun {
        let (_, out) = self.holder(name).await;
        let issue = self.issue(title).await;
        let (status, text) = self
            .call(
                reqwest::Method::POST,
                &format!("/api/v1/issues/{}/plan", issue.key),
                Some(serde_json::json!({ "agent": name })),
            )
            .await;
        assert_eq!(status, 201, "{text}");
        let run = self.the_run(&issue).await;
        assert_eq!(run.purpose, RunPurpose::Plan);
        self.held(issue, run, &out).await
    }

    /// An agent `name` whose runs report `MUSTER_URL`, `MUSTER_TOKEN` and `MUSTER_ISSUE` to the file
    /// returned, then hold on.
    async fn holder(&self, name: &str) -> (Agent, std::path::PathBuf) {
        let out = self.scripts.path().join(format!("{name}-token"));
        let script = self.script(
            &format!("{name}.sh"),
            &format!(
                "cat >/dev/null\n{}\n{TICK_FOREVER}",
                report_to(&out, "\"$MUSTER_URL $MUSTER_TOKEN $MUSTER_ISSUE\"")
            ),
        );
        (self.agent(name, &script).await, out)
    }

    async fn held(&self, issue: Issue, run: Run, out: &std::path::Path) -> HeldRun {
        let line = report_from("the run's token", out).await;
        let parts: Vec<String> = line.split_whitespace().map(str::to_owned).collect();
        assert_eq!(parts.len(), 3, "{line}");
        let [url, token, key] = [parts[0].clone(), parts[1].clone(), parts[2].clone()];
        assert_eq!(key, issue.key.to_string());
        HeldRun {
            issue,
            run,
            url,
            token,
            key,
            http: self.http.clone(),
        }
    }

    /// Sends `body` to `path` with the owner's token and expects 200.
    pub async fn api(&self, method: reqwest::Method, path: &str, body: serde_json::Value) {
        let (status, text) = self.call(method, path, Some(body)).await;
        assert_eq!(status, 200, "{text}");
    }

    /// `GET path` (a page, or any answer's text) with the owner's token, which must come with 200.
    pub async fn page(&self, path: &str) -> String {
        let (status, text) = self.call(reqwest::Method::GET, path, None).await;
        assert_eq!(status, 200, "GET {path}: {text}");
        text
    }

    /// `GET path` (a page) with `token`: the HTML, which must come with 200.
    pub async fn page_as(&self, token: &str, path: &str) -> String {
        let resp = self
            .http
            .get(format!("http://{}{path}", self.addr))
            .bearer_auth(token)
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), 200, "{path}");
        resp.text().await.unwrap()
    }

    /// `GET path` with the owner's token: the JSON body.
    pub async fn get(&self, path: &str) -> serde_json::Value {
        self.http
            .get(format!("http://{}{path}", self.addr))
            .bearer_auth(&self.token)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap()
    }

    /// Posts a comment on `issue` through the JSON API as the owner, expecting 201; the comment.
    pub async fn comment(&self, issue: &Issue, body: &str) -> serde_json::Value {
        let resp = self
            .http
            .post(format!(
                "http://{}/api/v1/issues/{}/comments",
                self.addr, issue.key
            ))
            .bearer_auth(&self.token)
            .json(&json!({ "body": body }))
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), 201);
        resp.json().await.unwrap()
    }

    /// Sets the workspace's repository to the local one at `repo`.
    pub async fn use_repo(&self, repo: &Path) {
        self.store
            .set_workspace_repo(self.ws.id, Some(&repo.display().to_string()))
            .await
            .unwrap();
    }

    /// The issue's only run, once it exists.
    pub async fn the_run(&self, issue: &Issue) -> Run {
        poll("a run to be queued", || async {
            self.store
                .list_runs_for_issue(issue.id)
                .await
                .unwrap()
                .pop()
        })
        .await
    }

    /// The run once it is in a final state.
    pub async fn finished(&self, run: RunId) -> Run {
        poll("the run to finish", || async {
            let run = self.store.get_run(run).await.unwrap();
            run.status.is_terminal().then_some(run)
        })
        .await
    }

    /// The issue once it reaches `status` (the run's follow-up comes right after `finish_run`).
    pub async fn issue_reaches(&self, issue: &Issue, status: IssueStatus) -> Issue {
        poll(&format!("the issue to reach {status}"), || async {
            let issue = self.store.get_issue_by_id(issue.id).await.unwrap();
            (issue.status == status).then_some(issue)
        })
        .await
    }

    /// The owner's inbox items about `run`, once there is one.
    pub async fn inbox_about(&self, run: RunId) -> Vec<InboxItem> {
        poll(&format!("an inbox item about {run}"), || async {
            let mut inbox = self.inbox().await;
            inbox.retain(|i| i.run_id == Some(run));
            (!inbox.is_empty()).then_some(inbox)
        })
        .await
    }

    /// The inbox once it holds an item of `kind` about `run`.
    pub async fn inbox_with(&self, kind: InboxKind, run: RunId) -> Vec<InboxItem> {
        poll(&format!("a {kind} inbox item"), || async {
            let inbox = self.inbox().await;
            inbox
                .iter()
                .any(|i| i.kind == kind && i.run_id == Some(run))
                .then_some(inbox)
        })
        .await
    }

    pub async fn events(&self, run: RunId) -> Vec<RunEvent> {
        self.store.run_events_since(run, 0, 10_000).await.unwrap()
    }

    pub async fn inbox(&self) -> Vec<InboxItem> {
        self.store.list_inbox(self.ws.id, self.owner).await.unwrap()
    }

    /// Shuts the server down (its runner first) and hands back the database.
    pub async fn stop(self) -> TestDb {
        self.shutdown.cancel();
        self.handle.await.unwrap().unwrap();
        self.db
    }
}

/// A workspace (`RUN`) and its owner, straight in the store.
pub async fn seed_workspace(store: &Arc<dyn Store>) -> (User, Workspace) {
    crate::seed::owner_of(
        store,
        crate::seed::person("owner@runs.test", "owner"),
        ("Runs", "runs", "RUN"),
    )
    .await
}

/// A run's end with `status` and nothing more to say ([`RunOutcome::bare`]).
pub fn bare_outcome(status: RunStatus) -> RunOutcome {
    RunOutcome::bare(status)
}

/// Registers a runner named `runner` and has it claim the oldest queued run of any workspace, leased for
/// `lease`; `None` when nothing is queued.
pub async fn claim_next(store: &dyn Store, runner: &str, lease: TimeDelta) -> Option<Run> {
    let runner = store
        .register_runner(runner, "0", &json!([]))
        .await
        .unwrap();
    let now = Utc::now();
    let scope = muster::store::ClaimScope::anything(&runner.name);
    store
        .claim_next_run(runner.id, &scope, now, now + lease)
        .await
        .unwrap()
}

/// Claims the oldest queued run as runner `runner` and starts it (pid 1, on `branch`), as a runner's
/// agent would be running it; `None` when nothing is queued.
pub async fn start_next(store: &dyn Store, runner: &str, branch: Option<&str>) -> Option<Run> {
    let claimed = claim_next(store, runner, TimeDelta::minutes(5)).await?;
    let runner = claimed.runner_id.expect("a claimed run has its runner");
    let started = store
        .start_run(
            claimed.id,
            runner,
            claimed.lease_epoch,
            Some(1),
            None,
            branch,
        )
        .await
        .unwrap();
    Some(started)
}

/// Runs `run` (the only queued one) to success straight in the store as a runner would (claimed,
/// started, finished with `summary` at a cost of $0.0123), and posts the summary as the agent's comment
/// the way the run engine does.
pub async fn succeed_in_store(store: &dyn Store, run: &Run, summary: &str) {
    let started = start_next(store, "test-runner", None)
        .await
        .expect("the run is queued");
    assert_eq!(started.id, run.id);
    let outcome = RunOutcome {
        exit_code: Some(0),
        usage: Usage {
            input_tokens: 1000,
            output_tokens: 200,
            cost_usd: 0.0123,
            ..Usage::default()
        },
        summary: Some(summary.into()),
        session_id: Some("sess-1".into()),
        ..bare_outcome(RunStatus::Succeeded)
    };
    store.finish_run(run.id, &outcome).await.unwrap();
    let mut comment = NewComment::parse(CommentAuthor::Agent(run.agent_id), summary).unwrap();
    comment.run_id = Some(run.id);
    store.add_comment(run.issue_id, &comment).await.unwrap();
}

/// Polls `check` until it yields a value, failing after [`DEADLINE`].
pub async fn poll<T, F, Fut>(what: &str, check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    poll_for(DEADLINE, what, check).await
}

/// [`poll`] with its own deadline.
pub async fn poll_for<T, F, Fut>(deadline: Duration, what: &str, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    let until = Instant::now() + deadline;
    loop {
        if let Some(found) = check().await {
            return found;
        }
        assert!(
            Instant::now() < until,
            "timed out after {deadline:?} waiting for {what}"
        );
        tokio::time::sleep(POLL).await;
    }
}

/// Whether `pid` names a live (not zombie) process.
pub fn alive(pid: &str) -> bool {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let state = stat.rsplit(')').next().unwrap_or_default().trim_start();
    !stat.is_empty() && !state.starts_with('Z') && !state.starts_with('X')
}

/// The live processes whose environment holds `MUSTER_RUN_ID=<run>` (every process of a run's agent
/// has it, whatever its group, session or PID namespace), read from `/proc` as root sees it.
pub fn run_processes(run: &str) -> Vec<u32> {
    let wanted = format!("MUSTER_RUN_ID={run}");
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| alive(&pid.to_string()))
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/environ"))
                .is_ok_and(|env| env.split(|b| *b == 0).any(|v| v == wanted.as_bytes()))
        })
        .collect()
}

/// The tail of an agent script that keeps it running (printing `tick` every 0.2 s) until it is stopped.
pub const TICK_FOREVER: &str = "while :; do echo tick; sleep 0.2; done";

/// A line of an agent's shell script that writes `words` (shell words, expanded by the script) to `file`
/// in one step, through a temporary file renamed into place, so a reader never sees half of it.
pub fn report_to(file: &Path, words: &str) -> String {
    format!(
        "echo {words} > '{0}.tmp'\nmv '{0}.tmp' '{0}'",
        file.display()
    )
}

/// What a script wrote to `file` with [`report_to`], once it is there (`what` names it if it never is).
pub async fn report_from(what: &str, file: &Path) -> String {
    poll(what, || async { std::fs::read_to_string(file).ok() }).await
}

/// The entry for `agent` among the `candidates` of an ensemble's comparison (as
/// `GET /api/v1/issues/{key}/ensemble` answers it); panics, showing the comparison, when there is none.
pub fn candidate<'a>(comparison: &'a serde_json::Value, agent: &str) -> &'a serde_json::Value {
    comparison["candidates"]
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["agent"] == agent)
        .unwrap_or_else(|| panic!("no candidate {agent} in {comparison:#}"))
}

/// A live run held open by its agent, with what the agent was given to call Muster ([`Env::hold_run`]).
pub struct HeldRun {
    pub issue: Issue,
    pub run: Run,
    /// `MUSTER_URL`.
    pub url: String,
    /// `MUSTER_TOKEN`: the run's token.
    pub token: String,
    /// `MUSTER_ISSUE`.
    pub key: String,
    http: reqwest::Client,
}

impl HeldRun {
    /// `method path` with the run's token and `body` as JSON: the status and the body's text.
    pub async fn call(
        &self,
        method: reqwest::Method,
        path: &str,
        body: serde_json::Value,
    ) -> (u16, String) {
        let resp = self
            .http
            .request(method, format!("{}{path}", self.url))
            .bearer_auth(&self.token)
            .json(&body)
            .send()
            .await
            .unwrap();
        let status = resp.status().as_u16();
        (status, resp.text().await.unwrap_or_default())
    }
}
