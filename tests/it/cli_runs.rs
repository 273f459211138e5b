//! `muster run …` against a real server: list, show, logs (text, `--json`, `--after`, `--follow`), cancel
//! and retry, with the exit codes of the rest of the CLI (0 ok, 1 error or an unsuccessful followed
//! run, 2 usage).
//!
//! The server runs in-process and the test holds its state, so it can write a run's log exactly as the
//! supervisor does (commit, then publish on the hub) while the binary follows it; the binary runs as a
//! child process with a cleared environment, off the async threads via `spawn_blocking`.

use std::process::{Command, Stdio};
use std::time::Duration;

use chrono::Utc;
use muster::domain::*;
use muster::hub::{LiveEvent, Topic};
use muster::state::AppState;
use muster_tests::engine::{bare_outcome, start_next};
use muster_tests::seed;
use muster_tests::{Backend, TestApp, TestDb, spawn_app};
use serde_json::{Value, json};

/// What one run of the binary printed.
#[derive(Debug)]
struct Out {
    code: i32,
    stdout: String,
    stderr: String,
}

impl Out {
    #[track_caller]
    fn ok(self) -> Self {
        assert_eq!(self.code, 0, "{self:?}");
        self
    }

    #[track_caller]
    fn fails(self, code: i32, needle: &str) -> Self {
        assert_eq!(self.code, code, "{self:?}");
        assert!(self.stderr.contains(needle), "{needle:?} not in {self:?}");
        self
    }
}

struct Harness {
    app: TestApp,
    state: AppState,
    ws: Workspace,
    token: String,
    config: tempfile::TempDir,
    _db: TestDb,
}

impl Harness {
    async fn start() -> Harness {
        let db = TestDb::new(Backend::Sqlite).await.unwrap();
        let app = spawn_app(db.config()).await;
        let state = app.state.clone();
        let (user, ws) = seed::owner_of(
            &state.store,
            seed::person("ada@example.com", "Ada"),
            ("Alpha", "alpha", "ALP"),
        )
        .await;
        let token = muster_tests::mint_token(state.store.as_ref(), ws.id, user.id, "cli").await;
        Harness {
            app,
            state,
            ws,
            token,
            config: tempfile::tempdir().unwrap(),
            _db: db,
        }
    }

    async fn stop(self) {
        self.app.shutdown.cancel();
        self.app.handle.await.unwrap().unwrap();
    }

    /// Runs `muster ARGS` with the server and token in its (otherwise empty) environment.
    async fn muster(&self, args: &[&str]) -> Out {
        let mut cmd = Command::new(muster_tests::muster_bin());
        cmd.env_clear()
            .env("HOME", self.config.path())
            .env("MUSTER_CONFIG_DIR", self.config.path())
            .env("MUSTER_URL", format!("http://{}", self.app.addr))
            .env("MUSTER_TOKEN", &self.token)
            .args(args)
            .stdin(Stdio::null());
        let out = tokio::time::timeout(
            Duration::from_secs(60),
            tokio::task::spawn_blocking(move || cmd.output().unwrap()),
        )
        .await
        .expect("muster finished")
        .unwrap();
        Out {
            code: out.status.code().unwrap_or(-1),
            stdout: String::from_utf8(out.stdout).unwrap(),
            stderr: String::from_utf8(out.stderr).unwrap(),
        }
    }

    /// An agent `coder`, issue ALP-n in progress and a running run of it on the issue.
    async fn running_run(&self, title: &str) -> (Issue, Run) {
        let store = &self.state.store;
        let agent = match store
            .get_agent_by_name(self.ws.id, &AgentName::parse("coder").unwrap())
            .await
        {
            Ok(a) => a,
            Err(_) => {
                let new = NewAgent::new(AgentName::parse("coder").unwrap(), RuntimeKind::Claude);
                store.create_agent(self.ws.id, &new).await.unwrap()
            }
        };
        let mut new = NewIssue::new(IssueTitle::parse(title).unwrap());
        new.status = IssueStatus::InProgress;
        let issue = store.create_issue(self.ws.id, &new).await.unwrap();
        let queued = store
            .create_run(&NewRun::assignment(self.ws.id, issue.id, agent.id))
            .await
            .unwrap();
        let run = start_next(store.as_ref(), "test", None)
            .await
            .expect("the queued run");
        assert_eq!(run.id, queued.id);
        (issue, run)
    }

    /// Commits events then announces them, as the supervisor does.
    async fn log(&self, run: RunId, events: &[(i64, Value)]) {
        let batch: Vec<NewRunEvent> = events
            .iter()
            .map(|(seq, payload)| NewRunEvent {
                seq: *seq,
                at: Utc::now(),
                kind: payload["kind"].as_str().unwrap().to_owned(),
                payload: payload.clone(),
            })
            .collect();
        let last_seq = self
            .state
            .store
            .append_run_events(run, &batch)
            .await
            .unwrap();
        self.state.hub.publish(
            Topic::Run(run),
            LiveEvent::RunEvents {
                run_id: run,
                last_seq,
            },
        );
    }

    async fn finish(&self, issue: &Issue, run: RunId, status: RunStatus) {
        let outcome = RunOutcome {
            exit_code: Some(i32::from(status != RunStatus::Succeeded)),
            failure_reason: (status == RunStatus::Failed).then_some(FailureReason::Exit),
            usage: Usage {
                input_tokens: 1200,
                output_tokens: 300,
                cache_read_tokens: 0,
                cache_write_tokens: 0,
                cost_usd: 0.0123,
                cost_unknown: false,
                cost_estimated: false,
            },
            summary: Some("Tests fixed".into()),
            diff_stat: Some("1 file changed".into()),
            ..bare_outcome(status)
        };
        self.state.store.finish_run(run, &outcome).await.unwrap();
        self.state.hub.publish(
            Topic::Board(self.ws.id),
            LiveEvent::IssueChanged(issue.key.clone()),
        );
    }
}

fn sample_events() -> Vec<(i64, Value)> {
    vec![
        (1, json!({"kind": "text", "text": "Looking at\nthe tests"})),
        (
            2,
            json!({"kind": "tool_call", "id": "t1", "name": "Bash", "input": {"command": "ls"}}),
        ),
        (
            3,
            json!({"kind": "command", "cmd": "cargo test", "exit_code": 101, "output": "1 failed"}),
        ),
        (
            4,
            json!({"kind": "error", "message": "boom", "class": null}),
        ),
    ]
}

#[tokio::test(flavor = "multi_thread")]
async fn run_commands_list_show_logs_cancel_and_retry() {
    let h = Harness::start().await;
    let (issue, run) = h.running_run("Fix the tests").await;
    h.log(run.id, &sample_events()).await;
    h.finish(&issue, run.id, RunStatus::Failed).await;
    let id = run.id.to_string();

    let list = h.muster(&["run", "list"]).await.ok();
    let mut lines = list.stdout.lines();
    let header = lines.next().unwrap();
    assert!(
        header.starts_with("RUN") && header.contains("STATUS") && header.contains("COST"),
        "{header}"
    );
    let row = lines.next().unwrap();
    for part in [id.as_str(), "ALP-1", "coder", "failed (exit)", "$0.0123"] {
        assert!(row.contains(part), "{part:?} not in {row:?}");
    }
    let json = h
        .muster(&["run", "list", "--issue", "ALP-1", "--json"])
        .await
        .ok();
    let listed: Value = serde_json::from_str(&json.stdout).unwrap();
    assert_eq!(listed[0]["id"], id);
    assert_eq!(listed[0]["status"], "failed");
    h.muster(&["run", "list", "--status", "bogus"])
        .await
        .fails(1, "status: unknown status \"bogus\"");
    h.muster(&["run", "list", "--agent", "ghost"])
        .await
        .fails(1, "agent: no agent called \"ghost\"");

    let show = h.muster(&["run", "show", &id]).await.ok();
    for part in [
        "status:   failed (exit)",
        "issue:    ALP-1",
        "1200 in, 300 out, $0.0123",
        "Tests fixed",
    ] {
        assert!(
            show.stdout.contains(part),
            "{part:?} not in {}",
            show.stdout
        );
    }
    h.muster(&["run", "show", "not-a-run"])
        .await
        .fails(2, "is not a run id");
    let unknown = RunId::new().to_string();
    h.muster(&["run", "show", &unknown])
        .await
        .fails(1, &format!("run {unknown} not found"));

    let logs = h.muster(&["run", "logs", &id]).await.ok();
    assert_eq!(
        logs.stdout.lines().collect::<Vec<_>>(),
        [
            "#1 text: Looking at the tests",
            "#2 tool_call: Bash ls",
            "#3 command: $ cargo test (exit 101) 1 failed",
            "#4 error: boom",
        ]
    );
    let json = h
        .muster(&["run", "logs", &id, "--json", "--after", "2"])
        .await
        .ok();
    let seqs: Vec<i64> = json
        .stdout
        .lines()
        .map(|l| {
            serde_json::from_str::<Value>(l).unwrap()["seq"]
                .as_i64()
                .unwrap()
        })
        .collect();
    assert_eq!(seqs, [3, 4], "one JSON object per line, after the cursor");
    let followed = h.muster(&["run", "logs", &id, "--follow"]).await;
    let followed = followed.fails(1, &format!("run {id} ended failed (exit)"));
    assert_eq!(followed.stdout.lines().count(), 4, "{followed:?}");

    let retried = h.muster(&["run", "retry", &id]).await.ok();
    let new_id = retried.stdout.trim().to_owned();
    assert!(uuid::Uuid::parse_str(&new_id).is_ok(), "{retried:?}");
    let queued = h
        .muster(&["run", "list", "--status", "queued", "--json"])
        .await
        .ok();
    let queued: Value = serde_json::from_str(&queued.stdout).unwrap();
    assert_eq!(
        (queued[0]["id"].as_str(), queued[0]["attempt"].as_i64()),
        (Some(new_id.as_str()), Some(2))
    );
    h.muster(&["run", "retry", &id])
        .await
        .fails(1, "already has a queued or live run");
    let cancelled = h.muster(&["run", "cancel", &new_id]).await.ok();
    assert_eq!(cancelled.stdout.trim(), format!("run {new_id} cancelled"));
    h.muster(&["run", "cancel", &new_id])
        .await
        .fails(1, "already ended as cancelled");
    h.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn run_logs_follow_prints_live_events_once_and_exits_0_on_success() {
    let h = Harness::start().await;
    let (issue, run) = h.running_run("Follow me").await;
    h.log(run.id, &[(1, json!({"kind": "text", "text": "before"}))])
        .await;
    let id = run.id.to_string();
    let follower = {
        let args = ["run", "logs", &id, "--follow"].map(str::to_owned);
        let mut cmd = Command::new(muster_tests::muster_bin());
        cmd.env_clear()
            .env("HOME", h.config.path())
            .env("MUSTER_CONFIG_DIR", h.config.path())
            .env("MUSTER_URL", format!("http://{}", h.app.addr))
            .env("MUSTER_TOKEN", &h.token)
            .args(args)
            .stdin(Stdio::null());
        tokio::task::spawn_blocking(move || cmd.output().unwrap())
    };
    // Wait until the follower is connected (it holds a subscription to the run), then log live.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    while h.state.hub.topic_count() == 0 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the follower never connected"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    for seq in 2..=40 {
        h.log(
            run.id,
            &[(seq, json!({"kind": "text", "text": format!("live {seq}")}))],
        )
        .await;
        if seq % 10 == 0 {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }
    h.finish(&issue, run.id, RunStatus::Succeeded).await;
    let out = tokio::time::timeout(Duration::from_secs(30), follower)
        .await
        .expect("the follower exits once the run ended")
        .unwrap();
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut expected = vec!["#1 text: before".to_owned()];
    expected.extend((2..=40).map(|s| format!("#{s} text: live {s}")));
    assert_eq!(stdout.lines().collect::<Vec<_>>(), expected);
    h.stop().await;
}
