//! The run page, its live socket, cancel and retry, the issue's run list, the board's run indicator and
//! the inbox, over real HTTP on both backends. Runs and their events are written straight to the store
//! (no runner), so every event kind can be checked exactly.

use std::sync::Arc;
use std::time::Duration;

use chrono::Utc;
use futures_util::StreamExt as _;
use muster::domain::*;
use muster::store::Store;
use muster_tests::engine::bare_outcome;
use muster_tests::seed;
use muster_tests::{Backend, TestApp, TestDb, spawn_app};
use reqwest::StatusCode;
use serde_json::{Value, json};

/// How long the live socket test waits for a push (the follower's poll fallback is 2 s).
const LIVE: Duration = Duration::from_secs(15);

struct World {
    _db: TestDb,
    app: TestApp,
    ws: Workspace,
    ada: User,
    agent: Agent,
    issue: Issue,
}

async fn world(backend: Backend) -> Option<World> {
    let db = TestDb::new(backend).await?;
    let app = spawn_app(db.config()).await;
    let (ada, ws) = seed::owner_of(
        &app.store,
        seed::person("ada@acme.test", "Ada"),
        ("Acme", "acme", "ACM"),
    )
    .await;
    let agent = seed::agent(&app.store, ws.id, "coder", RuntimeKind::Claude).await;
    let mut new = NewIssue::new(IssueTitle::parse("Fix the <parser>").unwrap());
    new.status = IssueStatus::InProgress;
    let issue = app.store.create_issue(ws.id, &new).await.unwrap();
    Some(World {
        _db: db,
        app,
        ws,
        ada,
        agent,
        issue,
    })
}

impl World {
    /// How many of Ada's inbox items are unread.
    async fn unread(&self) -> i64 {
        let store = &self.app.store;
        store
            .count_unread_inbox(self.ws.id, self.ada.id)
            .await
            .unwrap()
    }

    async fn run(&self, attempt: i32) -> Run {
        self.app
            .store
            .create_run(&NewRun {
                attempt,
                ..NewRun::assignment(self.ws.id, self.issue.id, self.agent.id)
            })
            .await
            .unwrap()
    }

    /// Ends `run` with `status` and `reason` (see [`outcome`]).
    async fn finish(&self, run: &Run, status: RunStatus, reason: Option<FailureReason>) {
        let store = &self.app.store;
        store
            .finish_run(run.id, &outcome(status, reason))
            .await
            .unwrap();
    }

    /// Ada signed in to Acme's pages.
    async fn ada_signed_in(&self) -> muster_tests::Session {
        self.app
            .sign_in("ada@acme.test", "correct-horse", "acme")
            .await
    }

    async fn inbox_item(&self, kind: InboxKind, run: Option<RunId>, message: &str) -> InboxItem {
        self.app
            .store
            .create_inbox_item(&NewInboxItem {
                workspace_id: self.ws.id,
                user_id: None,
                kind,
                issue_id: Some(self.issue.id),
                run_id: run,
                comment_id: None,
                message: message.into(),
            })
            .await
            .unwrap()
    }
}

async fn append(store: &Arc<dyn Store>, run: RunId, from: i64, events: &[(&str, Value)]) -> i64 {
    let new: Vec<NewRunEvent> = events
        .iter()
        .enumerate()
        .map(|(i, (kind, payload))| NewRunEvent {
            seq: from + i as i64,
            at: Utc::now(),
            kind: (*kind).to_owned(),
            payload: payload.clone(),
        })
        .collect();
    store.append_run_events(run, &new).await.unwrap()
}

fn outcome(status: RunStatus, reason: Option<FailureReason>) -> RunOutcome {
    RunOutcome {
        exit_code: reason.map(|_| 2),
        failure_reason: reason,
        usage: Usage {
            input_tokens: 1_500,
            output_tokens: 20,
            cache_read_tokens: 3,
            cache_write_tokens: 0,
            cost_usd: 0.75,
            cost_unknown: false,
            cost_estimated: false,
        },
        summary: Some("Parser fixed.".into()),
        diff_stat: Some(
            " src/parse.rs | 2 +-\n 1 file changed, 1 insertion(+), 1 deletion(-)".into(),
        ),
        ..bare_outcome(status)
    }
}

fn location(res: &reqwest::Response) -> String {
    res.headers()["location"].to_str().unwrap().to_owned()
}

/// Every event kind, in the order a real run might produce them.
fn every_kind() -> Vec<(&'static str, Value)> {
    vec![
        (
            "started",
            json!({"kind": "started", "session_id": "sess-1", "model": "claude-sonnet-4-5"}),
        ),
        (
            "thinking",
            json!({"kind": "thinking", "text": "Where does the parser choke?"}),
        ),
        (
            "text",
            json!({"kind": "text", "text": "Looking at **parse.rs** <script>alert(1)</script>"}),
        ),
        (
            "tool_call",
            json!({"kind": "tool_call", "id": "toolu_1", "name": "Bash", "input": {"command": "cargo test parse"}}),
        ),
        (
            "usage",
            json!({"kind": "usage", "input": 1000, "output": 10, "cache_read": 3, "cache_write": 0, "cost_usd": 0.5}),
        ),
        (
            "tool_result",
            json!({"kind": "tool_result", "id": "toolu_1", "output": "1 failed: <b>parse_empty</b>", "is_error": true}),
        ),
        (
            "command",
            json!({"kind": "command", "cmd": "cargo test parse", "exit_code": 2, "output": "error[E0308]"}),
        ),
        (
            "file_change",
            json!({"kind": "file_change", "path": "src/parse.rs", "change": "add"}),
        ),
        (
            "error",
            json!({"kind": "error", "message": "API Error: 529 overloaded", "class": "server"}),
        ),
        ("stderr", json!({"line": "warning: unused variable"})),
        ("raw", json!({"kind": "raw", "line": "not json at all"})),
        ("status", json!({"status": "stalled"})),
        (
            "usage",
            json!({"kind": "usage", "input": 500, "output": 10, "cache_read": 0, "cache_write": 0, "cost_usd": 0.25}),
        ),
        (
            "finished",
            json!({"kind": "finished", "ok": false, "summary": "Could not make **parse_empty** pass."}),
        ),
        (
            "diff",
            json!({"patch": "--- a/src/parse.rs\n+++ b/src/parse.rs\n@@ -1 +1 @@\n-old()\n+new()"}),
        ),
    ]
}

async fn run_page_shows_every_event_kind(backend: Backend) {
    let Some(w) = world(backend).await else {
        return;
    };
    let run = w.run(1).await;
    append(&w.app.store, run.id, 1, &every_kind()).await;
    w.finish(&run, RunStatus::Failed, Some(FailureReason::Exit))
        .await;
    let ada = w.ada_signed_in().await;
    let html = ada.page(&w.app, &format!("/w/acme/runs/{}", run.id)).await;

    assert!(
        html.contains("Fix the &lt;parser&gt;") && html.contains(r#"href="/w/acme/issues/ACM-1""#)
    );
    assert!(html.contains("claude-sonnet-4-5") && html.contains("sess-1"));
    assert!(html.contains("<details><summary>Thinking</summary>"));
    assert!(
        html.contains("Looking at <strong>parse.rs</strong>"),
        "markdown rendered"
    );
    assert!(!html.contains("<script>alert(1)"), "and sanitised");
    // The tool result is inside its call's block, before the next entry.
    let call = html.find(r#"id="run-entry-4""#).unwrap();
    let result = html
        .find("1 failed: &lt;b&gt;parse_empty&lt;/b&gt;")
        .unwrap();
    // The command that followed the call (seq 7) is shown in the call's block, not again on its own.
    assert!(!html.contains(r#"id="run-entry-7""#), "{html}");
    let next = html.find(r#"id="run-entry-8""#).unwrap();
    assert!(
        call < result && result < next,
        "result paired with its call"
    );
    assert!(html.contains(r#"<div class="tool-result tool-error">"#));
    assert!(html.contains(r#"<span class="exit exit-bad">exit 2</span>"#));
    assert!(
        html.contains(
            r#"<span class="file-change file-add">added</span> <code>src/parse.rs</code>"#
        )
    );
    assert!(
        html.contains(r#"<li class="ev ev-error""#) && html.contains("API Error: 529 overloaded")
    );
    assert!(html.contains(
        r#"<li class="ev ev-stderr" id="run-entry-10" data-seq="10">warning: unused variable</li>"#
    ));
    assert!(html.contains("not json at all"));
    assert!(html.contains("Stalled: no output"));
    assert!(html.contains("Could not make <strong>parse_empty</strong> pass."));
    assert!(!html.contains("ev-usage"), "usage only moves the counters");
    // Counters: the run's recorded totals; the failure; retry, not cancel; the diff, coloured.
    assert!(
        html.contains(r#"<dd class="counter-input">1,500</dd>"#),
        "{html}"
    );
    assert!(html.contains(r#"<dd class="counter-cost">$0.7500</dd>"#));
    assert!(html.contains("Claude Code exited with code 2"), "{html}");
    assert!(html.contains(&format!(r#"action="/w/acme/runs/{}/retry""#, run.id)));
    assert!(
        !html.contains("/cancel\"") && !html.contains("ws-connect"),
        "an ended run is not live"
    );
    assert!(html.contains(r#"<span class="diff-line diff-add">+new()"#));
    assert!(html.contains(r#"<span class="diff-line diff-del">-old()"#));
    assert!(html.contains("1 file changed, 1 insertion(+), 1 deletion(-)"));

    // The issue page lists the run; the board card shows it failed.
    let issue = ada.page(&w.app, "/w/acme/issues/ACM-1").await;
    assert!(issue.contains(&format!(
        r#"<a class="run-link" href="/w/acme/runs/{}">Run 1</a>"#,
        run.id
    )));
    assert!(
        issue.contains("1,523") && issue.contains("$0.7500") && issue.contains("1 file changed")
    );
    let board = ada.page(&w.app, "/w/acme").await;
    let card = board.split(r#"id="card-ACM-1""#).nth(1).unwrap();
    assert!(
        card.split("</article>")
            .next()
            .unwrap()
            .contains(r#"class="run run-failed""#)
    );

    // Unknown and foreign runs are 404.
    assert_eq!(
        ada.get(&w.app, &format!("/w/acme/runs/{}", RunId::new()))
            .await
            .status(),
        404
    );
    assert_eq!(
        ada.get(&w.app, "/w/acme/runs/not-a-run").await.status(),
        404
    );
}

both_backends!(
    runtime ();
    run_page_shows_every_event_kind,
    cancel_and_retry_need_the_csrf_token,
    inbox_read_unread_and_retry,
);

async fn cancel_and_retry_need_the_csrf_token(backend: Backend) {
    let Some(w) = world(backend).await else {
        return;
    };
    let run = w.run(1).await;
    let ada = w.ada_signed_in().await;
    let path = format!("/w/acme/runs/{}", run.id);
    let html = ada.page(&w.app, &path).await;
    assert!(html.contains(&format!(r#"ws-connect="{path}/live?after=0""#)));
    assert!(html.contains(&format!(r#"action="{path}/cancel""#)) && !html.contains("/retry\""));
    let board = ada.page(&w.app, "/w/acme").await;
    assert!(
        board.contains(
            r#"class="run run-queued run-waiting" title="waiting for a runner: none is online""#
        ),
        "the card shows the queued run, and why it waits: this server has no runner"
    );

    let forged = ada
        .post(
            &w.app,
            &format!("{path}/cancel"),
            &[("_csrf", "not-the-token")],
        )
        .await;
    assert_eq!(forged.status(), StatusCode::FORBIDDEN);
    assert_eq!(
        w.app.store.get_run(run.id).await.unwrap().status,
        RunStatus::Queued
    );
    let cancelled = ada
        .post(&w.app, &format!("{path}/cancel"), &[("_csrf", &ada.csrf)])
        .await;
    assert_eq!(cancelled.status(), StatusCode::SEE_OTHER);
    assert_eq!(location(&cancelled), path);
    assert_eq!(
        w.app.store.get_run(run.id).await.unwrap().status,
        RunStatus::Cancelled
    );
    assert!(
        !ada.page(&w.app, "/w/acme").await.contains("run-queued"),
        "no indicator after a cancel"
    );

    let forged = ada
        .post(&w.app, &format!("{path}/retry"), &[("_csrf", "")])
        .await;
    assert_eq!(forged.status(), StatusCode::FORBIDDEN);
    let retried = ada
        .post(&w.app, &format!("{path}/retry"), &[("_csrf", &ada.csrf)])
        .await;
    assert_eq!(retried.status(), StatusCode::SEE_OTHER);
    let runs = w.app.store.list_runs_for_issue(w.issue.id).await.unwrap();
    assert_eq!(runs.len(), 2);
    assert_eq!((runs[1].attempt, runs[1].status), (2, RunStatus::Queued));
    assert_eq!(location(&retried), format!("/w/acme/runs/{}", runs[1].id));
    // A second retry while attempt 2 is queued is refused with a message.
    let again = ada
        .post(&w.app, &format!("{path}/retry"), &[("_csrf", &ada.csrf)])
        .await;
    assert_eq!(again.status(), StatusCode::CONFLICT);
    assert!(
        again
            .text()
            .await
            .unwrap()
            .contains("already has a queued or live run")
    );
    // Cancelling an ended run says so.
    let late = ada
        .post(&w.app, &format!("{path}/cancel"), &[("_csrf", &ada.csrf)])
        .await;
    assert_eq!(late.status(), StatusCode::CONFLICT);
}

async fn inbox_read_unread_and_retry(backend: Backend) {
    let Some(w) = world(backend).await else {
        return;
    };
    let run = w.run(1).await;
    w.finish(
        &run,
        RunStatus::Interrupted,
        Some(FailureReason::RunnerLost),
    )
    .await;
    let stalled = w
        .inbox_item(InboxKind::RunStalled, None, "coder went quiet")
        .await;
    let broken = w
        .inbox_item(
            InboxKind::RunInterrupted,
            Some(run.id),
            "run <i>interrupted</i>",
        )
        .await;
    let ada = w.ada_signed_in().await;

    let html = ada.page(&w.app, "/w/acme/inbox").await;
    assert!(
        html.contains(r#"title="2 unread">2</span>"#),
        "the header counts unread items"
    );
    assert!(
        html.contains("coder went quiet") && html.contains("run &lt;i&gt;interrupted&lt;/i&gt;")
    );
    let newest = html.find(&broken.id.to_string()).unwrap();
    let older = html.find(&stalled.id.to_string()).unwrap();
    assert!(newest < older, "newest first");
    assert!(html.contains(&format!(r#"action="/w/acme/inbox/{}/retry""#, broken.id)));
    assert!(
        !html.contains(&format!("/inbox/{}/retry", stalled.id)),
        "no retry for a stall item"
    );
    assert!(html.contains(&format!(r#"href="/w/acme/runs/{}""#, run.id)));
    assert!(html.contains(r#"<a class="issue-key" href="/w/acme/issues/ACM-1">ACM-1</a>"#));
    // Other workspace pages load the count from the badge endpoint.
    let badge = ada.page(&w.app, "/w/acme/inbox/count").await;
    assert!(badge.contains(r#"id="inbox-count""#) && badge.contains(">2</span>"));

    let forged = ada
        .post(
            &w.app,
            &format!("/w/acme/inbox/{}/read", stalled.id),
            &[("_csrf", "x")],
        )
        .await;
    assert_eq!(forged.status(), StatusCode::FORBIDDEN);
    let read = ada
        .post(
            &w.app,
            &format!("/w/acme/inbox/{}/read", stalled.id),
            &[("_csrf", &ada.csrf)],
        )
        .await;
    assert_eq!(read.status(), StatusCode::SEE_OTHER);
    assert_eq!(w.unread().await, 1);
    let unread = ada.page(&w.app, "/w/acme/inbox").await;
    assert!(
        !unread.contains("coder went quiet"),
        "the unread filter hides read items"
    );
    let all = ada.page(&w.app, "/w/acme/inbox?show=all").await;
    assert!(all.contains("coder went quiet"));
    assert!(all.contains(&format!(
        r#"<li class="inbox-item" id="inbox-{}""#,
        stalled.id
    )));
    assert_eq!(
        ada.post(
            &w.app,
            &format!("/w/acme/inbox/{}/read", InboxItemId::new()),
            &[("_csrf", &ada.csrf)]
        )
        .await
        .status(),
        404
    );

    // One-click retry: a new attempt, the item read, and the new run's page.
    let retried = ada
        .post(
            &w.app,
            &format!("/w/acme/inbox/{}/retry", broken.id),
            &[("_csrf", &ada.csrf)],
        )
        .await;
    assert_eq!(retried.status(), StatusCode::SEE_OTHER);
    let runs = w.app.store.list_runs_for_issue(w.issue.id).await.unwrap();
    assert_eq!(location(&retried), format!("/w/acme/runs/{}", runs[1].id));
    assert_eq!(w.unread().await, 0);
    let after = ada.page(&w.app, "/w/acme/inbox?show=all").await;
    assert!(
        !after.contains("/retry\""),
        "the retried run is no longer the latest"
    );

    w.inbox_item(InboxKind::RunFailed, None, "one more").await;
    let all_read = ada
        .post(&w.app, "/w/acme/inbox/read", &[("_csrf", &ada.csrf)])
        .await;
    assert_eq!(all_read.status(), StatusCode::SEE_OTHER);
    let empty = ada.page(&w.app, "/w/acme/inbox").await;
    assert!(
        empty.contains("You are all caught up.") && empty.contains(r#"id="inbox-count" hidden"#)
    );
}

/// Reads text frames until one contains `needle`; returns everything read.
async fn read_until<S>(socket: &mut S, needle: &str) -> String
where
    S: futures_util::Stream<
            Item = Result<
                tokio_tungstenite::tungstenite::Message,
                tokio_tungstenite::tungstenite::Error,
            >,
        > + Unpin,
{
    let mut seen = String::new();
    let deadline = tokio::time::Instant::now() + LIVE;
    while !seen.contains(needle) {
        let next = tokio::time::timeout_at(deadline, socket.next()).await;
        match next {
            Ok(Some(Ok(tokio_tungstenite::tungstenite::Message::Text(t)))) => seen.push_str(&t),
            Ok(Some(Ok(_))) => {}
            other => panic!("waiting for {needle:?}: {other:?}; got so far: {seen}"),
        }
    }
    seen
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_live_socket_resumes_after_the_cursor_and_ends_with_the_run() {
    let Some(w) = world(Backend::Sqlite).await else {
        return;
    };
    let run = w.run(1).await;
    let store = w.app.store.clone();
    append(&store, run.id, 1, &every_kind()[..4]).await;
    let ada = w.ada_signed_in().await;
    let html = ada.page(&w.app, &format!("/w/acme/runs/{}", run.id)).await;
    assert!(
        html.contains("/live?after=4"),
        "the page opens the socket after what it shows"
    );

    let path = format!("/w/acme/runs/{}/live?after=4", run.id);
    let cookie = ("cookie", ada.cookie.as_str());
    assert!(
        w.app
            .socket(&path, &[cookie, ("origin", "http://evil.example")])
            .await
            .is_err(),
        "cross-site sockets are refused"
    );
    assert!(
        w.app.socket(&path, &[]).await.is_err(),
        "signed-out sockets are refused"
    );
    let mut socket = w.app.socket(&path, &[cookie]).await.unwrap();

    // The result of the call the page already shows goes into its slot; new entries are appended.
    append(&store, run.id, 5, &every_kind()[4..8]).await;
    let got = read_until(&mut socket, r#"data-seq="8""#).await;
    assert!(
        got.contains(&format!(
            r#"<div class="tool-result-slot" id="run-{}-result-toolu_1" hx-swap-oob="outerHTML">"#,
            run.id
        )),
        "{got}"
    );
    assert!(got.contains(&format!(r##"hx-swap-oob="beforeend:#run-{}-log""##, run.id)));
    assert!(
        got.contains(r#"id="run-entry-8""#)
            && !got.contains(r#"id="run-entry-7""#)
            && !got.contains(r#"id="run-entry-4""#),
        "nothing the page has is sent again, and the call's command joins the call: {got}"
    );
    assert!(
        got.contains(r#"<dd class="counter-input">1,000</dd>"#),
        "usage moves the counters: {got}"
    );

    // The run ends: the final header (retry, no cancel) and the diff, then a normal close.
    append(&store, run.id, 9, &every_kind()[8..]).await;
    w.finish(&run, RunStatus::Failed, Some(FailureReason::Exit))
        .await;
    let got = read_until(&mut socket, "diff-line diff-add").await;
    assert!(got.contains(r#"data-seq="15""#), "{got}");
    assert!(got.contains(&format!(
        r#"id="run-{}-header" hx-swap-oob="outerHTML" data-status="failed""#,
        run.id
    )));
    assert!(got.contains("/retry\"") && got.contains(&format!(r#"value="{}""#, ada.csrf)));
    assert!(
        got.contains(r#"<dd class="counter-input">1,500</dd>"#),
        "the recorded totals at the end"
    );
    let closed = tokio::time::timeout(LIVE, socket.next()).await.unwrap();
    match closed {
        Some(Ok(tokio_tungstenite::tungstenite::Message::Close(Some(frame)))) => {
            assert_eq!(
                u16::from(frame.code),
                1000,
                "a normal close: the browser does not reconnect"
            );
        }
        other => panic!("expected a close frame, got {other:?}"),
    }
}
