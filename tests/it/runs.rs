//! The run engine end to end: a real server in-process with its embedded runner, a `custom` agent whose
//! command is a small shell script replaying real Claude stream-json lines, real child processes.
//! Synchronisation is polling the store with a deadline, never a fixed sleep.

use std::path::Path;
use std::time::Duration;

use chrono::{TimeDelta, Utc};
use muster::domain::*;
use muster_tests::engine::*;
use muster_tests::{Backend, TestDb};
use serde_json::json;
use tokio::time::Instant;

async fn assigned_run_succeeds(backend: Backend) {
    let Some(env) = Env::start(backend).await else {
        return;
    };
    let replay = env.fixture("text.jsonl");
    let script = env.script(
        "agent.sh",
        &format!(
            "cat >/dev/null\ncat '{}'\necho \"using $SECRET_TOKEN\"\necho \"stderr $SECRET_TOKEN\" >&2",
            replay.display()
        ),
    );
    let agent = env.agent("coder", &script).await;
    let issue = env.issue("Make it work").await;
    let assigned_at = Instant::now();
    env.assign(&issue, &agent).await;
    let run = env.the_run(&issue).await;
    let started = poll("the run to be claimed", || async {
        let r = env.store.get_run(run.id).await.unwrap();
        (r.status != RunStatus::Queued).then_some(r)
    })
    .await;
    assert!(
        assigned_at.elapsed() < Duration::from_secs(10),
        "claimed at once, not on the (60 s) idle tick: {started:?}"
    );
    let run = env.finished(run.id).await;
    assert_eq!(run.status, RunStatus::Succeeded, "{run:?}");
    assert_eq!(run.exit_code, Some(0));
    assert_eq!((run.usage.input_tokens, run.usage.output_tokens), (25, 12));
    assert!(
        (run.usage.cost_usd - 0.000425).abs() < 1e-9,
        "{:?}",
        run.usage
    );
    assert_eq!(
        run.session_id.as_deref(),
        Some("5810e3a2-6dd3-4f47-9945-c70ef8ff2a1b")
    );
    assert_eq!(run.summary.as_deref(), Some("Hi from the mock!"));

    let events = env.events(run.id).await;
    let seqs: Vec<i64> = events.iter().map(|e| e.seq).collect();
    assert_eq!(seqs, (1..=events.len() as i64).collect::<Vec<_>>());
    let kinds: Vec<&str> = events.iter().map(|e| e.kind.as_str()).collect();
    for kind in ["started", "text", "usage", "finished", "raw", "stderr"] {
        assert!(kinds.contains(&kind), "{kind} missing from {kinds:?}");
    }
    let started_at = kinds.iter().position(|k| *k == "started").unwrap();
    let finished_at = kinds.iter().position(|k| *k == "finished").unwrap();
    assert!(started_at < finished_at, "{kinds:?}");
    let log =
        serde_json::to_string(&events.iter().map(|e| &e.payload).collect::<Vec<_>>()).unwrap();
    assert!(
        !log.contains(SECRET),
        "the secret leaked into the log: {log}"
    );
    assert!(log.contains("[redacted]"), "{log}");

    let issue = env.issue_reaches(&issue, IssueStatus::InReview).await;
    let comments = env.store.list_comments(issue.id).await.unwrap();
    let summary = comments.last().expect("a summary comment");
    assert_eq!(summary.body, "Hi from the mock!");
    assert_eq!(summary.author, CommentAuthor::Agent(agent.id));
    assert_eq!(summary.run_id, Some(run.id));
    let brief =
        std::fs::read_to_string(Path::new(run.worktree.as_deref().unwrap()).join("AGENTS.md"))
            .unwrap();
    assert!(
        brief.contains("Make it work") && brief.contains("Be brief."),
        "{brief}"
    );
    env.stop().await;
}

both_backends!(assigned_run_succeeds,);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failing_agent_fails_the_run_and_returns_the_issue() {
    let env = Env::start(Backend::Sqlite).await.unwrap();
    let script = env.script(
        "fail.sh",
        "cat >/dev/null\necho 'Error: the tool crashed' >&2\nexit 1",
    );
    let agent = env.agent("failer", &script).await;
    let (issue, run) = env.assign_new("Break it", &agent).await;
    let run = env.finished(run.id).await;
    assert_eq!(run.status, RunStatus::Failed, "{run:?}");
    assert_eq!(run.exit_code, Some(1));
    assert_eq!(run.failure_reason, Some(FailureReason::Exit));
    let issue = env.issue_reaches(&issue, IssueStatus::Todo).await;
    env.inbox_with(InboxKind::RunFailed, run.id).await;
    let comments = env.store.list_comments(issue.id).await.unwrap();
    let note = comments
        .last()
        .expect("the failure is said on the issue too");
    assert_eq!(
        (note.author, note.run_id),
        (CommentAuthor::System, Some(run.id))
    );
    assert!(
        note.body.contains("failed on") && note.body.contains("exited with code 1"),
        "{}",
        note.body
    );
    let events = env.events(run.id).await;
    assert!(events.iter().any(|e| e.kind == "stderr"), "{events:?}");
    assert_eq!(
        env.store.list_runs_for_issue(issue.id).await.unwrap().len(),
        1,
        "no retry for `exit`"
    );
    env.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_silent_agent_is_flagged_stalled_then_stopped() {
    let env = Env::start(Backend::Sqlite).await.unwrap();
    let script = env.script("silent.sh", "cat >/dev/null\nsleep 60");
    let agent = env.agent("sleeper", &script).await;
    let (_, run) = env.assign_new("Think hard", &agent).await;
    poll("the stall flag", || async {
        env.store.get_run(run.id).await.unwrap().stalled_at
    })
    .await;
    let run = env.finished(run.id).await;
    assert_eq!(run.status, RunStatus::TimedOut, "{run:?}");
    assert_eq!(run.failure_reason, Some(FailureReason::Stalled));
    assert_eq!(run.stalled_at, None, "a finished run is no longer flagged");
    let inbox = env.inbox_with(InboxKind::RunFailed, run.id).await;
    assert!(
        inbox.iter().any(|i| i.kind == InboxKind::RunStalled),
        "{inbox:?}"
    );
    let events = env.events(run.id).await;
    assert!(
        events
            .iter()
            .any(|e| e.kind == "status" && e.payload["status"] == "stalled"),
        "{events:?}"
    );
    env.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_stops_the_whole_process_group() {
    let env = Env::start(Backend::Sqlite).await.unwrap();
    let pids = env.scripts.path().join("pids");
    let script = env.script(
        "busy.sh",
        &format!(
            "cat >/dev/null\nsleep 120 &\n{}\n{TICK_FOREVER}",
            report_to(&pids, "\"$$ $!\"")
        ),
    );
    let agent = env.agent("busy", &script).await;
    let (issue, run) = env.assign_new("Keep busy", &agent).await;
    let pids = report_from("the script's pids", &pids).await;
    let pids: Vec<String> = pids.split_whitespace().map(str::to_owned).collect();
    assert_eq!(pids.len(), 2);
    // Those pids are the agent's PID namespace's own; from here its processes are found by the run id.
    let id = run.id.to_string();
    assert!(
        run_processes(&id).len() >= 3,
        "the script and its sleeps run"
    );
    poll("the run to be running", || async {
        let r = env.store.get_run(run.id).await.unwrap();
        (r.status == RunStatus::Running).then_some(())
    })
    .await;
    env.state.cancel(run.id).await.unwrap();
    let run = env.finished(run.id).await;
    assert_eq!(run.status, RunStatus::Cancelled, "{run:?}");
    poll("every process of the group to be gone", || async {
        run_processes(&id).is_empty().then_some(())
    })
    .await;
    env.issue_reaches(&issue, IssueStatus::Todo).await;
    env.stop().await;
}

/// Issue 27: a person's cancel ends the run neutral: what the killed agent said last is no summary, and
/// the thread says who stopped it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancelled_run_says_who_cancelled_it_and_has_no_summary() {
    let env = Env::start(Backend::Sqlite).await.unwrap();
    let replay = env.fixture("text.jsonl");
    let script = env.script(
        "talks-then-waits.sh",
        &format!(
            "cat >/dev/null\ncat '{}'\nwhile :; do sleep 0.2; done",
            replay.display()
        ),
    );
    let agent = env.agent("talker", &script).await;
    let (issue, run) = env.assign_new("Stop me", &agent).await;
    poll("the replayed answer to be stored", || async {
        let events = env.events(run.id).await;
        events.iter().any(|e| e.kind == "finished").then_some(())
    })
    .await;
    env.api(
        reqwest::Method::POST,
        &format!("/api/v1/runs/{}/cancel", run.id),
        json!({}),
    )
    .await;
    let run = env.finished(run.id).await;
    assert_eq!(run.status, RunStatus::Cancelled, "{run:?}");
    assert_eq!(run.summary, None, "a cancelled run's summary: {run:?}");
    let comments = env.store.list_comments(issue.id).await.unwrap();
    let note = comments
        .iter()
        .find(|c| c.author == CommentAuthor::System && c.body.starts_with("Cancelled by"))
        .unwrap_or_else(|| panic!("{comments:?}"));
    assert_eq!(note.body, "Cancelled by owner: talker's run.");
    assert_eq!(note.run_id, Some(run.id));
    env.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelling_a_queued_run_finishes_it() {
    let env = Env::start(Backend::Sqlite).await.unwrap();
    let script = env.script("never.sh", "exit 0");
    let agent = env.agent("never", &script).await;
    let issue = env.issue("Not now").await;
    let run = env
        .store
        .create_run(&NewRun {
            not_before: Some(Utc::now() + TimeDelta::hours(1)),
            ..NewRun::assignment(env.ws.id, issue.id, agent.id)
        })
        .await
        .unwrap();
    let cancelled = env.state.cancel(run.id).await.unwrap();
    assert_eq!(cancelled.status, RunStatus::Cancelled);
    env.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_left_running_by_a_crash_is_interrupted_at_start() {
    let db = TestDb::new(Backend::Sqlite).await.unwrap();
    let store = db.store().await;
    let (user, ws) = seed_workspace(&store).await;
    let old = store
        .register_runner("crashed", "0.0.1", &json!([]))
        .await
        .unwrap();
    let then = Utc::now() - TimeDelta::minutes(5);
    // One run whose agent only talked, one whose agent called a tool in its worktree (on the lost
    // runner's machine): the log decides, as a stopping runner's worktree would.
    let mut left = Vec::new();
    for (title, branch) in [
        ("Crashed", None),
        ("Crashed in git", Some("muster/RUN-2-r1")),
        ("Talked in git", Some("muster/RUN-3-r1")),
    ] {
        // One agent each: an agent runs one run at a time by default.
        let name = format!("ghost-{}", left.len());
        let mut new = NewAgent::new(AgentName::parse(&name).unwrap(), RuntimeKind::Custom);
        new.command = Some("true".to_owned());
        let agent = store.create_agent(ws.id, &new).await.unwrap();
        let issue = store
            .create_issue(ws.id, &NewIssue::new(IssueTitle::parse(title).unwrap()))
            .await
            .unwrap();
        let queued = store
            .create_run(&NewRun::assignment(ws.id, issue.id, agent.id))
            .await
            .unwrap();
        let claimed = store
            .claim_next_run(
                old.id,
                &muster::store::ClaimScope::anything(&old.name),
                then,
                then + TimeDelta::seconds(20),
            )
            .await
            .unwrap()
            .unwrap();
        assert_eq!(claimed.id, queued.id);
        store
            .start_run(
                claimed.id,
                old.id,
                claimed.lease_epoch,
                Some(1),
                None,
                branch,
            )
            .await
            .unwrap();
        let logged: Vec<NewRunEvent> = (1..=2)
            .map(|seq| match (seq, title) {
                (2, "Crashed in git") => NewRunEvent {
                    seq,
                    at: then,
                    kind: "tool_call".to_owned(),
                    payload: json!({"kind": "tool_call", "id": "t1", "name": "Edit", "input": {}}),
                },
                _ => NewRunEvent {
                    seq,
                    at: then,
                    kind: "text".to_owned(),
                    payload: json!({ "text": seq }),
                },
            })
            .collect();
        store.append_run_events(claimed.id, &logged).await.unwrap();
        left.push((issue, claimed));
    }

    let env = Env::boot(db, store, ws, user.id).await;
    let (plain_issue, plain) = &left[0];
    let (git_issue, in_git) = &left[1];
    let (talked_issue, _) = &left[2];
    for (_, run) in &left {
        let run = env.finished(run.id).await;
        assert_eq!(run.status, RunStatus::Interrupted);
        assert_eq!(run.failure_reason, Some(FailureReason::RunnerLost));
        assert_eq!(env.events(run.id).await.len(), 2, "stored events stay");
    }
    let retry = poll("the plain run to be re-queued", || async {
        let runs = env.store.list_runs_for_issue(plain_issue.id).await.unwrap();
        runs.into_iter().find(|r| r.attempt == 2)
    })
    .await;
    assert_ne!(retry.id, plain.id);
    // Its worktree had a branch, but its log shows no tool call, no file change, no command.
    poll("the run that only talked to be re-queued", || async {
        let runs = env
            .store
            .list_runs_for_issue(talked_issue.id)
            .await
            .unwrap();
        runs.into_iter().find(|r| r.attempt == 2)
    })
    .await;
    let items = env.inbox_with(InboxKind::RunInterrupted, in_git.id).await;
    assert_eq!(
        items.len(),
        1,
        "only the run that may have changed files needs a person: {items:?}"
    );
    assert!(
        !items.iter().any(|i| i.run_id == Some(plain.id)),
        "{items:?}"
    );
    assert_eq!(
        env.store
            .list_runs_for_issue(git_issue.id)
            .await
            .unwrap()
            .len(),
        1,
        "a run whose agent acted is not re-queued"
    );
    env.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_past_its_token_budget_is_stopped_and_flagged() {
    let env = Env::start(Backend::Sqlite).await.unwrap();
    let replay = env.fixture("text.jsonl");
    let script = env.script(
        "spender.sh",
        &format!("cat >/dev/null\ncat '{}'\nsleep 60", replay.display()),
    );
    let agent = env.agent("spender", &script).await;
    let agent = env.tweak(&agent, |p| p.budget.tokens = Some(10)).await;
    let (issue, run) = env.assign_new("Spend", &agent).await;
    let run = env.finished(run.id).await;
    assert_eq!(run.status, RunStatus::Failed, "{run:?}");
    assert_eq!(run.failure_reason, Some(FailureReason::OverBudget));
    assert_eq!(run.usage.input_tokens + run.usage.output_tokens, 37);
    env.inbox_with(InboxKind::OverBudget, run.id).await;
    env.issue_reaches(&issue, IssueStatus::Todo).await;
    env.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_auth_error_stops_the_run_at_once_and_is_never_retried() {
    let env = Env::start(Backend::Sqlite).await.unwrap();
    let replay = env.fixture("api-error.jsonl");
    // A CLI that would keep retrying the 401 for minutes.
    let script = env.script(
        "unauthorized.sh",
        &format!("cat >/dev/null\ncat '{}'\nsleep 60", replay.display()),
    );
    let agent = env.agent("locked-out", &script).await;
    let agent = env.tweak(&agent, |p| p.max_retries = 3).await;
    let (issue, run) = env.assign_new("Log in", &agent).await;
    let run = env.finished(run.id).await;
    assert_eq!(run.status, RunStatus::Failed, "{run:?}");
    assert_eq!(run.failure_reason, Some(FailureReason::Auth));
    env.inbox_with(InboxKind::RunFailed, run.id).await;
    let runs = env.store.list_runs_for_issue(issue.id).await.unwrap();
    assert_eq!(runs.len(), 1, "auth failures are not retried: {runs:?}");
    env.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rate_limited_run_is_retried_with_backoff() {
    let env = Env::start(Backend::Sqlite).await.unwrap();
    let replay = env.fixture("api-error.jsonl");
    let script = env.script(
        "limited.sh",
        &format!(
            "cat >/dev/null\nsed 's/401/429/g' '{}'\nexit 1",
            replay.display()
        ),
    );
    let agent = env.agent("limited", &script).await;
    let agent = env.tweak(&agent, |p| p.max_retries = 1).await;
    let (issue, first) = env.assign_new("Try again", &agent).await;
    let first = env.finished(first.id).await;
    assert_eq!(
        first.failure_reason,
        Some(FailureReason::RateLimit),
        "{first:?}"
    );
    let retry = poll("the retry to be queued", || async {
        let runs = env.store.list_runs_for_issue(issue.id).await.unwrap();
        runs.into_iter().find(|r| r.attempt == 2)
    })
    .await;
    assert_eq!(retry.status, RunStatus::Queued);
    let wait = retry.not_before.expect("a backoff") - first.finished_at.unwrap();
    assert!(
        wait >= TimeDelta::seconds(9),
        "10 s backoff for the first retry: {wait}"
    );
    let inbox = env.inbox().await;
    assert!(
        !inbox.iter().any(|i| i.run_id == Some(first.id)),
        "a retried failure needs nobody yet: {inbox:?}"
    );
    env.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_backlog_issue_waits_until_it_leaves_the_backlog() {
    let env = Env::start(Backend::Sqlite).await.unwrap();
    let replay = env.fixture("text.jsonl");
    let script = env.script(
        "later.sh",
        &format!("cat >/dev/null\ncat '{}'", replay.display()),
    );
    let agent = env.agent("later", &script).await;
    let issue = env
        .store
        .create_issue(
            env.ws.id,
            &NewIssue::new(IssueTitle::parse("Someday").unwrap()),
        )
        .await
        .unwrap();
    assert_eq!(issue.status, IssueStatus::Backlog);
    env.assign(&issue, &agent).await;
    assert!(
        env.store
            .list_runs_for_issue(issue.id)
            .await
            .unwrap()
            .is_empty(),
        "assigning in the backlog queues nothing"
    );
    // The issue page says why the agent is idle.
    let html = env.page(&format!("/w/runs/issues/{}", issue.key)).await;
    assert!(
        html.contains("later starts when this issue moves to Todo"),
        "{html}"
    );
    let path = format!("/api/v1/issues/{}/move", issue.key);
    env.api(reqwest::Method::POST, &path, json!({ "status": "todo" }))
        .await;
    let run = env.the_run(&issue).await;
    let run = env.finished(run.id).await;
    assert_eq!(run.status, RunStatus::Succeeded);
    env.issue_reaches(&issue, IssueStatus::InReview).await;
    // "Updated" counts comments and runs, not only edits of the issue itself: a comment a second later
    // (the page shows seconds) moves it; the follow-up it queues only moves it further.
    tokio::time::sleep(Duration::from_millis(1100)).await;
    let said = env.comment(&issue, "noted").await;
    let said_at =
        chrono::DateTime::parse_from_rfc3339(said["created_at"].as_str().unwrap()).unwrap();
    let html = env.page(&format!("/w/runs/issues/{}", issue.key)).await;
    let needle = r#"<dt>Updated</dt><dd><time datetime=""#;
    let at = html.find(needle).map(|i| i + needle.len()).expect(&html);
    let updated = chrono::DateTime::parse_from_rfc3339(&html[at..at + 20]).unwrap();
    assert!(
        updated.timestamp() >= said_at.timestamp(),
        "{updated} before the comment of {said_at}"
    );
    env.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_events_are_committed_before_they_are_published() {
    use muster::hub::{LiveEvent, Topic};
    let env = Env::start(Backend::Sqlite).await.unwrap();
    let replay = env.fixture("tool-failing.jsonl");
    let script = env.script(
        "live.sh",
        &format!("cat >/dev/null\ncat '{}'", replay.display()),
    );
    let agent = env.agent("live", &script).await;
    let issue = env.issue("Watch me").await;
    // Queued straight in the store: the runner (idle tick 60 s) only claims it when woken below.
    let run = env
        .store
        .create_run(&NewRun::assignment(env.ws.id, issue.id, agent.id))
        .await
        .unwrap();
    let mut live = env.state.hub.subscribe(Topic::Run(run.id));
    env.state.runs.wake();
    let mut last = 0;
    let deadline = Instant::now() + DEADLINE;
    loop {
        let done = env
            .store
            .get_run(run.id)
            .await
            .unwrap()
            .status
            .is_terminal();
        if done && last == env.events(run.id).await.len() as i64 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "timed out waiting for live events"
        );
        let Ok(event) = tokio::time::timeout(POLL * 4, live.recv()).await else {
            continue;
        };
        let event = event.unwrap();
        let LiveEvent::RunEvents { run_id, last_seq } = *event else {
            panic!("unexpected {event:?}");
        };
        assert_eq!(run_id, run.id);
        assert!(last_seq > last, "seqs only grow: {last} then {last_seq}");
        let stored = env.events(run.id).await.len() as i64;
        assert!(stored >= last_seq, "published {last_seq} before storing it");
        last = last_seq;
    }
    let stored = env.events(run.id).await;
    assert_eq!(
        last,
        stored.len() as i64,
        "the last publish covers every event"
    );
    assert!(
        stored.iter().any(|e| e.kind == "tool_call")
            && stored.iter().any(|e| e.kind == "tool_result")
    );
    env.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutting_down_stops_live_runs_as_interrupted() {
    let env = Env::start(Backend::Sqlite).await.unwrap();
    let pids = env.scripts.path().join("pids");
    let script = env.script(
        "forever.sh",
        &format!("cat >/dev/null\n{}\n{TICK_FOREVER}", report_to(&pids, "$$")),
    );
    let agent = env.agent("forever", &script).await;
    let (_, run) = env.assign_new("Never ends", &agent).await;
    let pid = report_from("the script's pid", &pids).await;
    poll("the first tick in the log", || async {
        let events = env.events(run.id).await;
        events.iter().any(|e| e.kind == "raw").then_some(())
    })
    .await;
    let (owner, ws) = (env.owner, env.ws.id);
    let db = env.stop().await;
    assert!(!pid.trim().is_empty());
    assert_eq!(
        run_processes(&run.id.to_string()),
        Vec::<u32>::new(),
        "the agent was stopped with the server"
    );
    let store = db.store().await;
    let run = store.get_run(run.id).await.unwrap();
    assert_eq!(run.status, RunStatus::Interrupted, "{run:?}");
    assert_eq!(run.failure_reason, Some(FailureReason::RunnerLost));
    let inbox = store.list_inbox(ws, owner).await.unwrap();
    assert!(
        !inbox.iter().any(|i| i.run_id == Some(run.id)),
        "a run that changed no worktree is re-queued, not left to a person: {inbox:?}"
    );
    let runs = store.list_runs_for_issue(run.issue_id).await.unwrap();
    assert!(
        runs.iter()
            .any(|r| r.attempt == 2 && r.status == RunStatus::Queued),
        "re-queued for the next start: {runs:?}"
    );
    let events = store.run_events_since(run.id, 0, 10_000).await.unwrap();
    assert!(
        events.iter().any(|e| e.kind == "raw"),
        "the ticks were kept"
    );
    store.close().await;
}
