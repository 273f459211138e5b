//! `/api/v1/runs`: list with filters, show, the paged event log, the SSE stream of a finished run,
//! cancel and retry, and the errors and workspace boundaries of each.

use chrono::Utc;
use muster::client::run::{SseFrame, SseParser};
use muster::domain::*;
use serde_json::{Value, json};

use super::{Env, api_cases, field};
use muster_tests::engine::bare_outcome;

api_cases!(
    run_list_and_show,
    run_list_validation,
    run_events_paging,
    run_event_stream_replays_and_ends,
    run_cancel_and_retry,
    runs_of_other_workspaces_are_not_found,
);

/// An agent of the `alpha` workspace.
async fn agent(t: &Env, name: &str) -> Agent {
    let mut new = NewAgent::new(AgentName::parse(name).unwrap(), RuntimeKind::Claude);
    new.max_concurrent_runs = 8;
    t.app.store.create_agent(t.ws.id, &new).await.unwrap()
}

async fn issue(t: &Env, title: &str) -> Issue {
    let mut new = NewIssue::new(IssueTitle::parse(title).unwrap());
    new.status = IssueStatus::Todo;
    t.app.store.create_issue(t.ws.id, &new).await.unwrap()
}

async fn queue(t: &Env, issue: &Issue, agent: &Agent, attempt: i32) -> Run {
    t.app
        .store
        .create_run(&NewRun {
            attempt,
            ..NewRun::assignment(t.ws.id, issue.id, agent.id)
        })
        .await
        .unwrap()
}

/// Claims and starts the oldest queued run (the test server has no embedded runner).
async fn start_next(t: &Env) -> Run {
    muster_tests::engine::start_next(t.app.store.as_ref(), "test-runner", Some("muster/ALP-1-r1"))
        .await
        .expect("a queued run")
}

async fn finish(t: &Env, run: &Run, status: RunStatus, reason: Option<FailureReason>) -> Run {
    let outcome = RunOutcome {
        exit_code: Some(i32::from(status != RunStatus::Succeeded)),
        failure_reason: reason,
        usage: Usage {
            input_tokens: 100,
            output_tokens: 20,
            cache_read_tokens: 0,
            cache_write_tokens: 0,
            cost_usd: 0.01,
            cost_unknown: false,
            cost_estimated: false,
        },
        summary: Some("did it".into()),
        ..bare_outcome(status)
    };
    t.app.store.finish_run(run.id, &outcome).await.unwrap()
}

/// Appends `n` text events after those already stored.
async fn append(t: &Env, run: &Run, from: i64, n: i64) {
    let events: Vec<NewRunEvent> = (from..from + n)
        .map(|seq| NewRunEvent {
            seq,
            at: Utc::now(),
            kind: "text".into(),
            payload: json!({"kind": "text", "text": format!("line {seq}")}),
        })
        .collect();
    t.app
        .store
        .append_run_events(run.id, &events)
        .await
        .unwrap();
}

fn seqs(events: &Value) -> Vec<i64> {
    events
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["seq"].as_i64().unwrap())
        .collect()
}

/// List newest first with filters, show one, and an issue's runs.
async fn run_list_and_show(t: &Env) {
    let (coder, tester) = (agent(t, "coder").await, agent(t, "tester").await);
    let (i1, i2) = (issue(t, "One").await, issue(t, "Two").await);
    let first = queue(t, &i1, &coder, 1).await;
    let running = start_next(t).await;
    assert_eq!(running.id, first.id);
    let second = queue(t, &i1, &tester, 1).await;
    let third = queue(t, &i2, &coder, 1).await;

    let api = &t.member.api;
    let all = api.get("/api/v1/runs").await.expect(200);
    assert_eq!(
        field(&all, "id"),
        [third.id, second.id, first.id].map(|i| i.to_string()),
        "newest first"
    );
    let shown = &all[2];
    assert_eq!(
        (shown["issue"].as_str(), shown["agent"].as_str()),
        (Some("ALP-1"), Some("coder"))
    );
    assert_eq!(shown["status"], "running");
    assert_eq!(shown["attempt"], 1);
    assert_eq!(shown["branch"], "muster/ALP-1-r1");
    assert_eq!(shown["stalled"], false);

    let filtered = api
        .get("/api/v1/runs?issue=alp-1&agent=coder")
        .await
        .expect(200);
    assert_eq!(field(&filtered, "id"), [first.id.to_string()]);
    let queued = api
        .get("/api/v1/runs?status=queued,claimed&limit=1")
        .await
        .expect(200);
    assert_eq!(field(&queued, "id"), [third.id.to_string()]);
    let by_agent = api.get("/api/v1/runs?agent=tester").await.expect(200);
    assert_eq!(field(&by_agent, "id"), [second.id.to_string()]);

    let one = api
        .get(&format!("/api/v1/runs/{}", third.id))
        .await
        .expect(200);
    assert_eq!(one["issue"], "ALP-2");
    assert_eq!(one["status"], "queued");
    assert_eq!(one["input_tokens"], 0);

    let of_issue = api.get("/api/v1/issues/ALP-1/runs").await.expect(200);
    assert_eq!(
        field(&of_issue, "id"),
        [second.id.to_string(), first.id.to_string()]
    );
    let running_of_issue = api
        .get("/api/v1/issues/ALP-1/runs?status=running")
        .await
        .expect(200);
    assert_eq!(field(&running_of_issue, "id"), [first.id.to_string()]);
    api.get("/api/v1/issues/ALP-99/runs")
        .await
        .error(404, "resource");
}

/// Every bad filter is named with a precise message; bad ids are 400, unknown ones 404.
async fn run_list_validation(t: &Env) {
    let api = &t.owner.api;
    let reply = api.get("/api/v1/runs?status=running,sleeping").await;
    reply.error_contains(422, "status", "unknown status \"sleeping\"");
    api.get("/api/v1/runs?limit=0")
        .await
        .error_contains(422, "limit", "from 1 to 500");
    api.get("/api/v1/runs?limit=501")
        .await
        .error_contains(422, "limit", "from 1 to 500");
    api.get("/api/v1/runs?limit=ten")
        .await
        .error_contains(422, "limit", "\"ten\"");
    api.get("/api/v1/runs?issue=ALP-7").await.error_contains(
        422,
        "issue",
        "no issue ALP-7 in this workspace",
    );
    api.get("/api/v1/runs?issue=nonsense").await.error_contains(
        422,
        "issue",
        "is not an issue key",
    );
    api.get("/api/v1/runs?agent=ghost").await.error_contains(
        422,
        "agent",
        "no agent called \"ghost\"",
    );
    // Several problems at once are all reported.
    let reply = api.get("/api/v1/runs?status=x&limit=-1&agent=ghost").await;
    for field in ["status", "limit", "agent"] {
        reply.error(422, field);
    }
    // Empty filters filter nothing.
    assert_eq!(
        api.get("/api/v1/runs?status=&issue=&agent=&limit=")
            .await
            .expect(200),
        json!([])
    );

    api.get("/api/v1/runs/not-a-uuid")
        .await
        .error_contains(400, "id", "is not a run id");
    api.get("/api/v1/runs/not-a-uuid/events")
        .await
        .error_contains(400, "id", "is not a run id");
    let unknown = RunId::new();
    api.get(&format!("/api/v1/runs/{unknown}"))
        .await
        .error(404, "resource");
    api.post(&format!("/api/v1/runs/{unknown}/cancel"), json!({}))
        .await
        .error(404, "resource");
}

/// Pages through the log with `after`/`limit`; `done` only once the run has ended and the last page
/// was read; bad cursors are 422.
async fn run_events_paging(t: &Env) {
    let (coder, i1) = (agent(t, "coder").await, issue(t, "One").await);
    queue(t, &i1, &coder, 1).await;
    let run = start_next(t).await;
    append(t, &run, 1, 25).await;
    let api = &t.member.api;
    let base = format!("/api/v1/runs/{}/events", run.id);

    let page = api.get(&format!("{base}?limit=10")).await.expect(200);
    assert_eq!(seqs(&page["events"]), (1..=10).collect::<Vec<_>>());
    assert_eq!(page["next_after"], 10);
    assert_eq!(page["run_status"], "running");
    assert_eq!(page["done"], false);
    let event = &page["events"][0];
    assert_eq!(event["kind"], "text");
    assert_eq!(event["payload"]["text"], "line 1");
    assert_eq!(event["run_id"], run.id.to_string());

    let page = api
        .get(&format!("{base}?after=20&limit=10"))
        .await
        .expect(200);
    assert_eq!(seqs(&page["events"]), (21..=25).collect::<Vec<_>>());
    assert_eq!(
        page["done"], false,
        "a live run may still log more, even on a short page"
    );
    let empty = api.get(&format!("{base}?after=25")).await.expect(200);
    assert_eq!(
        (empty["events"].clone(), empty["next_after"].clone()),
        (json!([]), json!(25))
    );

    finish(t, &run, RunStatus::Succeeded, None).await;
    let page = api
        .get(&format!("{base}?after=10&limit=15"))
        .await
        .expect(200);
    assert_eq!(seqs(&page["events"]).len(), 15);
    assert_eq!(
        (page["run_status"].as_str(), page["done"].as_bool()),
        (Some("succeeded"), Some(true)),
        "a full last page of an ended run is done"
    );
    let page = api
        .get(&format!("{base}?after=10&limit=14"))
        .await
        .expect(200);
    assert_eq!(page["done"], false, "one event is still left");
    let all = api.get(&base).await.expect(200);
    assert_eq!(seqs(&all["events"]), (1..=25).collect::<Vec<_>>());
    assert_eq!(all["done"], true);

    api.get(&format!("{base}?after=-1"))
        .await
        .error_contains(422, "after", "0 or more");
    api.get(&format!("{base}?after=x"))
        .await
        .error_contains(422, "after", "\"x\"");
    let reply = api.get(&format!("{base}?after=x&limit=0")).await;
    reply.error_contains(422, "after", "0 or more");
    reply.error_contains(422, "limit", "from 1 to 1000");
    api.get(&format!("{base}?limit=1001"))
        .await
        .error_contains(422, "limit", "from 1 to 1000");
}

/// Reads an SSE response to its end.
async fn read_sse(t: &Env, path: &str, last_event_id: Option<&str>) -> (u16, Vec<SseFrame>) {
    let mut req = t
        .app
        .client
        .get(t.app.url(path))
        .bearer_auth(&t.member.token);
    if let Some(id) = last_event_id {
        req = req.header("last-event-id", id);
    }
    let mut resp = req.send().await.unwrap();
    let status = resp.status().as_u16();
    if status == 200 {
        assert!(
            resp.headers()["content-type"]
                .to_str()
                .unwrap()
                .starts_with("text/event-stream")
        );
    }
    let mut parser = SseParser::default();
    let mut frames = Vec::new();
    while let Some(chunk) = tokio::time::timeout(std::time::Duration::from_secs(10), resp.chunk())
        .await
        .expect("the stream of an ended run ends")
        .unwrap()
    {
        frames.extend(parser.push(&chunk));
    }
    (status, frames)
}

/// The stream of an ended run replays the log after the cursor (`after`, or `Last-Event-ID` when it is
/// further on), one event per seq with `id:` = seq, then `end` with the run, then closes.
async fn run_event_stream_replays_and_ends(t: &Env) {
    let (coder, i1) = (agent(t, "coder").await, issue(t, "One").await);
    queue(t, &i1, &coder, 1).await;
    let run = start_next(t).await;
    append(t, &run, 1, 300).await;
    finish(t, &run, RunStatus::Failed, Some(FailureReason::Exit)).await;
    let path = format!("/api/v1/runs/{}/events/stream", run.id);

    let (status, frames) = read_sse(t, &path, None).await;
    assert_eq!(status, 200);
    let (end, events) = frames.split_last().unwrap();
    let ids: Vec<String> = events.iter().map(|f| f.id.clone().unwrap()).collect();
    assert_eq!(
        ids,
        (1..=300).map(|s| s.to_string()).collect::<Vec<_>>(),
        "every event once, in order, across the follower's pages"
    );
    let first: Value = serde_json::from_str(&events[0].data).unwrap();
    assert_eq!(
        (first["seq"].as_i64(), first["payload"]["text"].as_str()),
        (Some(1), Some("line 1"))
    );
    assert_eq!(end.event, "end");
    let ended: Value = serde_json::from_str(&end.data).unwrap();
    assert_eq!(
        (ended["status"].as_str(), ended["failure_reason"].as_str()),
        (Some("failed"), Some("exit"))
    );
    assert_eq!(ended["issue"], "ALP-1");

    let (_, frames) = read_sse(t, &format!("{path}?after=295"), Some("298")).await;
    let ids: Vec<Option<&str>> = frames.iter().map(|f| f.id.as_deref()).collect();
    assert_eq!(ids, [Some("299"), Some("300"), None], "Last-Event-ID wins");
    let (_, frames) = read_sse(t, &format!("{path}?after=300"), None).await;
    assert_eq!(frames.len(), 1);
    assert_eq!(frames[0].event, "end");

    let (status, _) = read_sse(t, &format!("{path}?after=soon"), None).await;
    assert_eq!(status, 422);
    let (status, _) = read_sse(t, &path, Some("nope")).await;
    assert_eq!(status, 422);
    let reply = t.member.api.get(&format!("{path}?after=-3")).await;
    reply.error_contains(422, "after", "0 or more");
}

/// Cancel a queued run; cancel of an ended run is 409; retry queues attempt + 1 (only of an ended,
/// unsuccessful run, and not while the agent has a live run on the issue).
async fn run_cancel_and_retry(t: &Env) {
    let (coder, i1) = (agent(t, "coder").await, issue(t, "One").await);
    let run = queue(t, &i1, &coder, 1).await;
    let api = &t.member.api;
    let retry_path = format!("/api/v1/runs/{}/retry", run.id);
    api.post(&retry_path, json!({}))
        .await
        .error_contains(409, "status", "still queued");

    let cancelled = api
        .post(&format!("/api/v1/runs/{}/cancel", run.id), json!({}))
        .await
        .expect(200);
    assert_eq!(cancelled["status"], "cancelled");
    assert_eq!(
        t.app.store.get_run(run.id).await.unwrap().status,
        RunStatus::Cancelled
    );
    api.post(&format!("/api/v1/runs/{}/cancel", run.id), json!({}))
        .await
        .error_contains(409, "status", "already ended as cancelled");

    let retried = api.post(&retry_path, json!({})).await.expect(201);
    assert_eq!(
        (retried["status"].as_str(), retried["attempt"].as_i64()),
        (Some("queued"), Some(2))
    );
    assert_eq!(retried["agent"], "coder");
    assert_eq!(retried["issue"], "ALP-1");
    assert_ne!(retried["id"], run.id.to_string());
    api.post(&retry_path, json!({})).await.error_contains(
        409,
        "agent",
        "already has a queued or live run",
    );

    // A live run: cancel is accepted (nobody supervises it here, so it stays running); then it fails
    // and can be retried, while a succeeded one cannot.
    let live = start_next(t).await;
    assert_eq!(live.id.to_string(), retried["id"]);
    let reply = api
        .post(&format!("/api/v1/runs/{}/cancel", live.id), json!({}))
        .await
        .expect(200);
    assert_eq!(reply["id"], live.id.to_string());
    finish(t, &live, RunStatus::Failed, Some(FailureReason::Network)).await;
    let third = api
        .post(&format!("/api/v1/runs/{}/retry", live.id), json!({}))
        .await
        .expect(201);
    assert_eq!(third["attempt"], 3);
    let ok = start_next(t).await;
    finish(t, &ok, RunStatus::Succeeded, None).await;
    api.post(&format!("/api/v1/runs/{}/retry", ok.id), json!({}))
        .await
        .error_contains(409, "status", "ended succeeded");
    let list = api.get("/api/v1/runs?issue=ALP-1").await.expect(200);
    assert_eq!(
        list.as_array().unwrap().len(),
        3,
        "three attempts on the issue: {list}"
    );
}

/// Another workspace's runs are invisible: not listed, 404 on every route.
async fn runs_of_other_workspaces_are_not_found(t: &Env) {
    let (coder, i1) = (agent(t, "coder").await, issue(t, "One").await);
    let mine = queue(t, &i1, &coder, 1).await;
    append(t, &mine, 1, 3).await;
    let (_, outsider) = t.other_workspace().await;
    assert_eq!(
        outsider.api.get("/api/v1/runs").await.expect(200),
        json!([])
    );
    for path in [
        format!("/api/v1/runs/{}", mine.id),
        format!("/api/v1/runs/{}/events", mine.id),
        format!("/api/v1/runs/{}/events/stream", mine.id),
    ] {
        outsider.api.get(&path).await.error(404, "resource");
    }
    for action in ["cancel", "retry"] {
        outsider
            .api
            .post(&format!("/api/v1/runs/{}/{action}", mine.id), json!({}))
            .await
            .error(404, "resource");
    }
    outsider
        .api
        .get("/api/v1/runs?issue=ALP-1")
        .await
        .error_contains(422, "issue", "no issue ALP-1");
    assert_eq!(
        t.app.store.get_run(mine.id).await.unwrap().status,
        RunStatus::Queued,
        "the outsider's cancel did nothing"
    );
}
