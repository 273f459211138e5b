//! An ensemble candidate's check, for real: orders carrying a check are executed by the run engine's
//! executor (`runner::executor::execute_alone`, no server: the ensemble that will set `Order::check` is not
//! built yet) with a stand-in agent (a shell script) in a git worktree, the real `muster` sandbox exec
//! step and real processes; the events it reports are then stored on each backend and read back.
//! Cases: a passing check (counts read from cargo-test output), a failing one, one that times out (its
//! whole group killed, no survivors), one that tries to read the data folder and the database and is
//! refused by the sandbox, one that commits on the run's branch (caught, the branch put back), the
//! agent's secret never in the check's output, a cancelled run not checked, an over-budget run checked,
//! a cancel during the check stopping it.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use muster::domain::*;
use muster::runner::protocol::{AgentSpec, Order, SpecEnv, ToServer};
use muster::store::Store;
use muster_tests::engine::{SECRET, poll, run_processes, seed_workspace, test_timing};
use muster_tests::{Backend, TestDb, demo_repo, git};
use tokio_util::sync::CancellationToken;

/// One database, a repository, the configuration a runner would have, and a run row to store into.
struct World {
    db: TestDb,
    store: Arc<dyn Store>,
    config: Arc<muster::config::Config>,
    scratch: tempfile::TempDir,
    repo: PathBuf,
    ws: Workspace,
    agent: Agent,
}

impl World {
    async fn new(backend: Backend) -> Option<World> {
        muster_tests::init_tracing();
        let db = TestDb::new(backend).await?;
        let store = db.store().await;
        let (_, ws) = seed_workspace(&store).await;
        let mut new = NewAgent::new(AgentName::parse("checker").unwrap(), RuntimeKind::Custom);
        new.command = Some("true".to_owned());
        let agent = store.create_agent(ws.id, &new).await.unwrap();
        let scratch = tempfile::tempdir().unwrap();
        let repo = scratch.path().join("repo");
        demo_repo(&repo);
        let mut config = db.config();
        // The database and the secret key live in the data folder: make sure there is something to steal.
        std::fs::create_dir_all(&config.data_dir).unwrap();
        std::fs::write(config.data_dir.join("stolen-goods"), "crown jewels\n").unwrap();
        config.runs_dir = scratch.path().join("runs");
        Some(World {
            db,
            store,
            config: Arc::new(config),
            scratch,
            repo,
            ws,
            agent,
        })
    }

    /// An order for a fresh run whose agent runs `script` (a custom agent, `sh -c`), with a secret.
    async fn order(&self, script: &str, check: Option<CheckSpec>) -> Order {
        let mut new = NewIssue::new(IssueTitle::parse("Checked work").unwrap());
        new.status = IssueStatus::Todo;
        let issue = self.store.create_issue(self.ws.id, &new).await.unwrap();
        let run = self
            .store
            .create_run(&NewRun::assignment(self.ws.id, issue.id, self.agent.id))
            .await
            .unwrap();
        Order {
            run_id: run.id,
            epoch: 1,
            workspace_id: self.ws.id,
            attempt: 1,
            issue_key: issue.key.to_string(),
            branch: format!("muster/{}-r1", issue.key),
            agent: AgentSpec {
                name: "checker".to_owned(),
                kind: RuntimeKind::Custom,
                model: None,
                instructions: String::new(),
                env: vec![SpecEnv {
                    key: "SECRET_TOKEN".to_owned(),
                    value: SECRET.to_owned(),
                    secret: true,
                }],
                extra_args: Vec::new(),
                permission_mode: PermissionMode::WorkspaceWrite,
                stall_timeout_secs: 600,
                budget: Budget::default(),
                command: Some(script.to_owned()),
                base_url: None,
                egress_hosts: Vec::new(),
                no_network: false,
            },
            brief: "Do the work.".to_owned(),
            prompt: "Do the work.".to_owned(),
            skills: Vec::new(),
            repo: Some(self.repo.display().to_string()),
            token: "mrun_test_token_not_for_checks_0123456789".to_owned(),
            api_url: Some("http://127.0.0.1:9".to_owned()),
            max_events: 10_000,
            next_seq: 1,
            resume: None,
            check,
            base: None,
            rates: None,
            blind: false,
            forge: None,
        }
    }

    /// Executes `order` (cancelled when `cancel` fires), stores its events on this backend and returns
    /// what came back from the store, with the finish it reported.
    async fn execute(&self, order: Order, cancel: CancellationToken) -> Executed {
        let run_id = order.run_id;
        let messages = muster::runner::executor::execute_alone(
            self.config.clone(),
            test_timing(),
            order,
            cancel,
        )
        .await;
        let mut events = Vec::new();
        let mut finished = None;
        let mut check_before_finish = false;
        for m in messages {
            match m {
                ToServer::Events { events: batch, .. } => {
                    assert!(finished.is_none(), "events after the finish");
                    check_before_finish |= batch.iter().any(|e| e.kind == CHECK_EVENT);
                    events.extend(batch);
                }
                ToServer::Finished(f) => finished = Some(f),
                _ => {}
            }
        }
        self.store.append_run_events(run_id, &events).await.unwrap();
        let stored = self
            .store
            .run_events_since(run_id, 0, 10_000)
            .await
            .unwrap();
        assert_eq!(stored.len(), events.len());
        Executed {
            events: stored,
            finished: finished.expect("a finish"),
            check_before_finish,
        }
    }

    fn data_dir(&self) -> &Path {
        &self.config.data_dir
    }
}

struct Executed {
    events: Vec<RunEvent>,
    finished: muster::runner::protocol::Finished,
    check_before_finish: bool,
}

impl Executed {
    /// The one check result stored, read back as the lead's code reads it.
    fn check(&self) -> CheckResult {
        let checks: Vec<&RunEvent> = self
            .events
            .iter()
            .filter(|e| e.kind == CHECK_EVENT)
            .collect();
        assert_eq!(
            checks.len(),
            1,
            "exactly one check event: {:#?}",
            self.events
        );
        assert!(self.check_before_finish);
        let diff = self.events.iter().find(|e| e.kind == "diff").unwrap();
        assert!(checks[0].seq > diff.seq, "checked after the commit");
        serde_json::from_value(checks[0].payload.clone()).unwrap()
    }
}

/// An agent that writes the check script `check.sh` into its worktree (and its secret into a file).
fn agent_writing(check_script: &str) -> String {
    format!(
        "cat >/dev/null\nprintf '%s\\n' \"$SECRET_TOKEN\" > secret.txt\ncat > check.sh <<'CHECK'\n{check_script}\nCHECK\nexit 0"
    )
}

fn spec(command: &str, timeout_secs: u64) -> Option<CheckSpec> {
    Some(CheckSpec {
        command: command.to_owned(),
        timeout_secs,
    })
}

async fn passing_and_failing_checks(backend: Backend) {
    let Some(w) = World::new(backend).await else {
        return;
    };
    // Cargo-test output of two test binaries, the check's environment, and the agent's secret file.
    let script = agent_writing(
        r#"echo "running 12 tests"
echo "test result: ok. 12 passed; 0 failed; 1 ignored; 0 measured; 0 filtered out; finished in 0.01s"
echo "test result: ok. 3 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.00s"
env | sort
echo "pwd=$(pwd)"
echo "secret file: $(cat secret.txt)"
echo "to stderr" >&2"#,
    );
    let order = w.order(&script, spec("sh check.sh", 30)).await;
    let run_dir = w.config.runs_dir.join(order.run_id.to_string());
    let done = w.execute(order, CancellationToken::new()).await;
    assert_eq!(done.finished.outcome.status, RunStatus::Succeeded);
    let check = done.check();
    assert!(check.passed_check(), "{check:#?}");
    assert_eq!(check.exit_code, Some(0));
    assert!(!check.timed_out);
    assert_eq!(
        (check.passed, check.failed, check.total),
        (Some(15), Some(0), Some(15))
    );
    assert_eq!(check.command, "sh check.sh");
    let tail = &check.tail;
    assert!(tail.contains("to stderr"), "{tail}");
    assert!(
        tail.contains(&format!("HOME={}", run_dir.join("home").display())),
        "{tail}"
    );
    assert!(tail.contains(&format!("pwd={}", run_dir.join("work").display())));
    assert!(tail.contains("MUSTER_CHECK=1"), "{tail}");
    // The agent's secret is neither in the check's environment nor in what it printed.
    assert!(!tail.contains(SECRET), "{tail}");
    assert!(!tail.contains("SECRET_TOKEN="), "{tail}");
    assert!(!tail.contains("MUSTER_TOKEN="), "{tail}");
    assert!(tail.contains("secret file: [redacted]"), "{tail}");
    assert!(
        !run_dir.join("work").exists(),
        "the worktree is removed after the check"
    );

    // A failing check: its exit code and counts, and the run itself still succeeded.
    let script = agent_writing(
        r#"echo "test result: FAILED. 3 passed; 1 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.01s"
exit 101"#,
    );
    let done = w
        .execute(
            w.order(&script, spec("sh check.sh", 30)).await,
            CancellationToken::new(),
        )
        .await;
    assert_eq!(done.finished.outcome.status, RunStatus::Succeeded);
    let check = done.check();
    assert!(!check.passed_check());
    assert_eq!(check.exit_code, Some(101));
    assert_eq!(
        (check.passed, check.failed, check.total),
        (Some(3), Some(1), Some(4))
    );

    // A failed agent is still checked; unknown output gives no counts, never a guess.
    let done = w
        .execute(
            w.order(
                "cat >/dev/null; echo partial > part.txt; exit 3",
                spec("cat part.txt", 30),
            )
            .await,
            CancellationToken::new(),
        )
        .await;
    assert_eq!(done.finished.outcome.status, RunStatus::Failed);
    let check = done.check();
    assert!(check.passed_check());
    assert_eq!(check.tail, "partial");
    assert_eq!(
        (check.passed, check.failed, check.total),
        (None, None, None)
    );

    // Without a check in the order there is no check event.
    let done = w
        .execute(
            w.order("cat >/dev/null; exit 0", None).await,
            CancellationToken::new(),
        )
        .await;
    assert!(done.events.iter().all(|e| e.kind != CHECK_EVENT));

    // Without a repository there is no worktree to check: the event says so.
    let mut order = w.order("cat >/dev/null; exit 0", spec("true", 30)).await;
    order.repo = None;
    let done = w.execute(order, CancellationToken::new()).await;
    let checks: Vec<CheckResult> = done
        .events
        .iter()
        .filter(|e| e.kind == CHECK_EVENT)
        .map(|e| serde_json::from_value(e.payload.clone()).unwrap())
        .collect();
    assert_eq!(checks.len(), 1);
    assert!(!checks[0].passed_check());
    assert!(
        checks[0].error.as_deref().unwrap().contains("no worktree"),
        "{:?}",
        checks[0]
    );
    drop(w.db);
}

both_backends!(
    runtime ();
    passing_and_failing_checks,
    a_check_past_its_timeout_is_killed_with_its_group,
    a_check_cannot_read_the_data_folder_or_move_its_branch,
    a_cancelled_run_is_not_checked,
    an_over_budget_run_is_checked_and_a_cancel_stops_a_check,
);

async fn a_check_past_its_timeout_is_killed_with_its_group(backend: Backend) {
    let Some(w) = World::new(backend).await else {
        return;
    };
    // A background child that ignores SIGINT and SIGTERM, and a foreground sleep.
    let check =
        r#"sh -c 'trap "" INT TERM; sleep 300' & echo "bg $!"; echo "leader $$"; sleep 300"#;
    let order = w.order("cat >/dev/null; exit 0", spec(check, 1)).await;
    let run_id = order.run_id.to_string();
    let done = w.execute(order, CancellationToken::new()).await;
    let check = done.check();
    assert!(check.timed_out, "{check:#?}");
    assert_eq!(check.exit_code, None);
    assert!(!check.passed_check());
    assert!(check.duration_ms >= 1000, "{}", check.duration_ms);
    // Its pids are the namespace's own (the check runs in the agent's sandbox): the processes are found
    // by the run id in their environment.
    assert!(
        check.tail.contains("bg ") && check.tail.contains("leader "),
        "{}",
        check.tail
    );
    poll("the check's group to be gone", || async {
        run_processes(&run_id).is_empty().then_some(())
    })
    .await;
    assert_eq!(done.finished.outcome.status, RunStatus::Succeeded);
    drop(w.db);
}

async fn a_check_cannot_read_the_data_folder_or_move_its_branch(backend: Backend) {
    let Some(w) = World::new(backend).await else {
        return;
    };
    // Agents (and so checks) start only when sandboxed, unless the operator allowed otherwise.
    assert!(matches!(
        muster::sandbox::mode(&w.config),
        muster::sandbox::Mode::Sandboxed { .. }
    ));
    let mut targets = vec![w.data_dir().join("stolen-goods")];
    if let muster::store::DatabaseUrl::Sqlite(path) = &w.db.url {
        targets.push(path.clone());
    }
    let mut attack = String::new();
    for t in &targets {
        attack.push_str(&format!(
            "if cat '{t}' >/dev/null; then echo 'READ {t}'; else echo 'REFUSED {t}'; fi\n",
            t = t.display()
        ));
    }
    attack.push_str(&format!(
        "ls '{}' && echo LISTED || echo 'REFUSED listing'\ncat '{}/stolen-goods' || true",
        w.data_dir().display(),
        w.data_dir().display()
    ));
    let script = agent_writing(&attack);
    let done = w
        .execute(
            w.order(&script, spec("sh check.sh", 30)).await,
            CancellationToken::new(),
        )
        .await;
    let check = done.check();
    let tail = &check.tail;
    for t in &targets {
        assert!(
            tail.contains(&format!("REFUSED {}", t.display())),
            "{}: {tail}",
            t.display()
        );
    }
    assert!(!tail.contains("READ "), "{tail}");
    assert!(tail.contains("REFUSED listing"), "{tail}");
    assert!(!tail.contains("crown jewels"), "{tail}");
    assert!(tail.contains("Permission denied"), "{tail}");

    // A check that commits on the run's branch (it may: it has the agent's rights) commits into the
    // run's private repository only: the branch in the workspace's repository holds what the run
    // committed, and the check's commit is nowhere there.
    let check = "echo sneaky > sneaky.txt && git add sneaky.txt && git -c user.name=x -c user.email=x@x commit -q -m sneaky && echo COMMITTED";
    let order = w
        .order("cat >/dev/null; echo work > work.txt", spec(check, 30))
        .await;
    let branch = order.branch.clone();
    let done = w.execute(order, CancellationToken::new()).await;
    let check = done.check();
    assert!(check.tail.contains("COMMITTED"), "{check:#?}");
    assert_eq!(check.error, None, "{check:#?}");
    let files = git(&w.repo, &["ls-tree", "--name-only", &branch]);
    assert!(files.contains("work.txt"), "{files}");
    assert!(!files.contains("sneaky.txt"), "{files}");
    drop(w.db);
}

async fn a_cancelled_run_is_not_checked(backend: Backend) {
    let Some(w) = World::new(backend).await else {
        return;
    };
    let marks = w.scratch.path().join("marks");
    std::fs::create_dir_all(&marks).unwrap();
    let marker = marks.join("started");
    let script = format!(
        "cat >/dev/null; echo change > change.txt; echo go > '{}'; sleep 300",
        marker.display()
    );
    // The marker is written outside the run, in a folder made writable for it (`--agent-rw-path`).
    let mut config = (*w.config).clone();
    config.agent_rw_paths = vec![marks.clone()];
    let w = World {
        config: Arc::new(config),
        ..w
    };
    let ran = marks.join("checked");
    let order = w
        .order(
            &script,
            spec(&format!("echo ran > '{}'", ran.display()), 30),
        )
        .await;
    let cancel = CancellationToken::new();
    let trigger = cancel.clone();
    let waiting = marker.clone();
    tokio::spawn(async move {
        poll("the agent to start", || async {
            waiting.exists().then_some(())
        })
        .await;
        trigger.cancel();
    });
    let done = w.execute(order, cancel).await;
    assert_eq!(done.finished.outcome.status, RunStatus::Cancelled);
    assert!(
        done.events.iter().any(|e| e.kind == "diff"),
        "the work is committed"
    );
    assert!(done.events.iter().all(|e| e.kind != CHECK_EVENT));
    assert!(!ran.exists(), "the check never ran");
    drop(w.db);
}

/// A Claude stream-json replay reporting 37 tokens of usage.
const SPEND: &str = include_str!("../../agents/fixtures/claude/text.jsonl");

async fn an_over_budget_run_is_checked_and_a_cancel_stops_a_check(backend: Backend) {
    let Some(w) = World::new(backend).await else {
        return;
    };
    // Over its token budget the agent is stopped; its partial work is committed and checked.
    let script = format!(
        "cat >/dev/null\necho partial > part.txt\ncat <<'EOF'\n{}\nEOF\nsleep 300",
        SPEND.trim_end()
    );
    let mut order = w.order(&script, spec("cat part.txt", 30)).await;
    order.agent.budget.tokens = Some(10);
    let done = w.execute(order, CancellationToken::new()).await;
    assert_eq!(done.finished.outcome.status, RunStatus::Failed);
    assert_eq!(
        done.finished.outcome.failure_reason,
        Some(FailureReason::OverBudget)
    );
    let check = done.check();
    assert!(check.passed_check(), "{check:#?}");
    assert_eq!(check.tail, "partial");

    // A person's cancel while the check runs stops the check's group; the run ends cancelled and
    // the check says it was stopped.
    let marks = w.scratch.path().join("marks");
    std::fs::create_dir_all(&marks).unwrap();
    let marker = marks.join("checking");
    let mut config = (*w.config).clone();
    config.agent_rw_paths = vec![marks.clone()];
    let w = World {
        config: Arc::new(config),
        ..w
    };
    let check = format!(
        "echo \"leader $$\"; echo go > '{}'; sleep 300",
        marker.display()
    );
    let order = w.order("cat >/dev/null; exit 0", spec(&check, 300)).await;
    let run_id = order.run_id.to_string();
    let cancel = CancellationToken::new();
    let trigger = cancel.clone();
    tokio::spawn(async move {
        poll("the check to start", || async {
            marker.exists().then_some(())
        })
        .await;
        trigger.cancel();
    });
    let done = w.execute(order, cancel).await;
    assert_eq!(done.finished.outcome.status, RunStatus::Cancelled);
    let check = done.check();
    assert_eq!(
        check.error.as_deref(),
        Some("stopped: the run was cancelled during its check")
    );
    assert!(!check.timed_out);
    assert_eq!(check.exit_code, None);
    assert!(check.tail.contains("leader "), "{}", check.tail);
    poll("the check to be gone", || async {
        run_processes(&run_id).is_empty().then_some(())
    })
    .await;
    drop(w.db);
}
