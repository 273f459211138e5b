//! Following a run's log: the replay-then-live contract of `service::runs::follow` (ARCHITECTURE.md §6),
//! over the real SSE endpoint and in process.
//!
//! The reconnect trials: producers append events to runs exactly as the supervisor does (commit with
//! `append_run_events`, then publish `RunEvents` on the run's topic; at the end finish the run and
//! announce its issue on the board), while clients read `/api/v1/runs/{id}/events/stream`, drop the
//! connection after a random number of bytes — mid-event as often as not — and reconnect with
//! `?after=<last seq received>`. Every client must receive every event exactly once, in order, then `end`.
//! The seed is printed; set `MUSTER_TEST_SEED` to replay one.

use std::time::Duration;

use chrono::Utc;
use futures_util::StreamExt as _;
use muster::client::run::SseParser;
use muster::domain::*;
use muster::hub::{LiveEvent, Topic};
use muster::service::runs::{FollowItem, follow};
use muster::state::AppState;
use muster_tests::engine::{bare_outcome, start_next};
use muster_tests::seed;
use muster_tests::{Backend, TestApp, TestDb, spawn_app};
use serde_json::json;

/// Runs followed at once, and events per run: together several hundred reconnects per backend.
const RUNS: usize = 6;
const EVENTS: i64 = 200;

/// Runs `case` on a fresh [`Server`] on `backend`.
async fn on_server(backend: Backend, case: impl AsyncFnOnce(&Server)) {
    if let Some(s) = Server::start(backend).await {
        case(&s).await;
        s.stop().await;
    }
}

both_backends!(
    runtime (flavor = "multi_thread", worker_threads = 4), with = crate::run_follow::on_server;
    reconnecting_clients_get_every_event_once_in_order,
    a_lagging_follower_resyncs_from_the_store,
    a_gap_in_a_live_log_is_waited_for_not_skipped,
);

/// A small deterministic PRNG (xorshift64*), so a failing seed can be replayed.
#[derive(Clone)]
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) % n.max(1)
    }
}

fn seed() -> u64 {
    let seed = muster_tests::env_setting("MUSTER_TEST_SEED")
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            let nanos = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos();
            u64::try_from(nanos % u128::from(u64::MAX)).unwrap() | 1
        });
    eprintln!("run_follow seed: MUSTER_TEST_SEED={seed}");
    seed
}

/// A server whose state (store and hub) the test holds, with one workspace, agent and token.
struct Server {
    app: TestApp,
    state: AppState,
    ws: Workspace,
    agent: Agent,
    token: String,
    http: reqwest::Client,
    _db: TestDb,
}

impl Server {
    async fn start(backend: Backend) -> Option<Server> {
        let db = TestDb::new(backend).await?;
        let app = spawn_app(db.config()).await;
        let state = app.state.clone();
        let (user, ws) = seed::owner_of(
            &state.store,
            seed::person("owner@follow.test", "owner"),
            ("Follow", "follow", "FOL"),
        )
        .await;
        let token = muster_tests::mint_token(state.store.as_ref(), ws.id, user.id, "follow").await;
        let mut new = NewAgent::new(AgentName::parse("coder").unwrap(), RuntimeKind::Claude);
        new.max_concurrent_runs = 64;
        let agent = state.store.create_agent(ws.id, &new).await.unwrap();
        Some(Server {
            app,
            state,
            ws,
            agent,
            token,
            http: reqwest::Client::new(),
            _db: db,
        })
    }

    async fn stop(self) {
        self.app.shutdown.cancel();
        self.app.handle.await.unwrap().unwrap();
    }

    /// A new issue with a running run on it.
    async fn running_run(&self, n: usize) -> (Issue, Run) {
        let mut new = NewIssue::new(IssueTitle::parse(&format!("Follow me {n}")).unwrap());
        new.status = IssueStatus::InProgress;
        let issue = self
            .state
            .store
            .create_issue(self.ws.id, &new)
            .await
            .unwrap();
        let queued = self
            .state
            .store
            .create_run(&NewRun::assignment(self.ws.id, issue.id, self.agent.id))
            .await
            .unwrap();
        // Start runs until we get our own (several producers may claim at once).
        let runner = format!("producer-{n}");
        let run = loop {
            let run = start_next(self.state.store.as_ref(), &runner, None)
                .await
                .expect("our queued run");
            if run.id == queued.id {
                break run;
            }
        };
        (issue, run)
    }
}

/// Appends `range` as one batch, then announces it: the supervisor's order (commit, then publish).
async fn commit(state: &AppState, run: RunId, range: std::ops::Range<i64>) {
    let batch: Vec<NewRunEvent> = range
        .map(|seq| NewRunEvent {
            seq,
            at: Utc::now(),
            kind: "text".into(),
            payload: json!({"kind": "text", "text": format!("event {seq}")}),
        })
        .collect();
    let last_seq = state.store.append_run_events(run, &batch).await.unwrap();
    state.hub.publish(
        Topic::Run(run),
        LiveEvent::RunEvents {
            run_id: run,
            last_seq,
        },
    );
}

/// Finishes the run and announces its issue, as the supervisor's `conclude` does.
async fn conclude(state: &AppState, issue: &Issue, run: RunId) {
    let outcome = RunOutcome {
        exit_code: Some(0),
        ..bare_outcome(RunStatus::Succeeded)
    };
    state.store.finish_run(run, &outcome).await.unwrap();
    state.hub.publish(
        Topic::Board(issue.workspace_id),
        LiveEvent::IssueChanged(issue.key.clone()),
    );
}

/// The supervisor's rhythm, randomised: batches of 1–6 events, now and then a pause of a few ms.
async fn produce(state: AppState, issue: Issue, run: RunId, mut rng: Rng) {
    let mut seq = 1;
    while seq <= EVENTS {
        let n = 1 + i64::try_from(rng.below(6)).unwrap();
        let end = (seq + n).min(EVENTS + 1);
        commit(&state, run, seq..end).await;
        seq = end;
        match rng.below(4) {
            0 => tokio::time::sleep(Duration::from_millis(rng.below(3))).await,
            _ => tokio::task::yield_now().await,
        }
    }
    conclude(&state, &issue, run).await;
}

/// Reads the stream, hanging up after a random byte budget and resuming from the last seq received.
/// Returns the seqs received, in order, and how many connections it took.
async fn consume(s: &Server, run: RunId, mut rng: Rng) -> (Vec<i64>, usize) {
    let mut got: Vec<i64> = Vec::new();
    let mut connections = 0;
    loop {
        connections += 1;
        assert!(connections < 10_000, "the client makes no progress");
        let after = got.last().copied().unwrap_or(0);
        let url = format!(
            "http://{}/api/v1/runs/{run}/events/stream?after={after}",
            s.app.addr
        );
        let mut resp = s.http.get(url).bearer_auth(&s.token).send().await.unwrap();
        assert_eq!(resp.status(), 200);
        // Hang up after up to ~10 events' worth of bytes, mid-event as often as not; the last
        // connection reads to the end because the budget outlasts what is left.
        let mut budget = 1 + usize::try_from(rng.below(1500)).unwrap();
        let mut parser = SseParser::default();
        'conn: while budget > 0 {
            let chunk = tokio::time::timeout(Duration::from_secs(20), resp.chunk())
                .await
                .expect("the stream went silent")
                .unwrap();
            let Some(chunk) = chunk else { break };
            let take = chunk.len().min(budget);
            budget -= take;
            for frame in parser.push(&chunk[..take]) {
                match frame.event.as_str() {
                    "end" => {
                        let ended: serde_json::Value = serde_json::from_str(&frame.data).unwrap();
                        assert_eq!(ended["status"], "succeeded");
                        return (got, connections);
                    }
                    "message" => {
                        let seq: i64 = frame.id.as_deref().unwrap().parse().unwrap();
                        let event: serde_json::Value = serde_json::from_str(&frame.data).unwrap();
                        assert_eq!(event["seq"], seq, "id: is the event's seq");
                        assert_eq!(event["payload"]["text"], format!("event {seq}"));
                        got.push(seq);
                    }
                    other => panic!("unexpected event {other:?}: {}", frame.data),
                }
                if budget == 0 {
                    break 'conn;
                }
            }
        }
        drop(resp);
    }
}

async fn reconnecting_clients_get_every_event_once_in_order(s: &Server) {
    let mut rng = Rng(seed());
    let mut producers = Vec::new();
    let mut runs = Vec::new();
    for n in 0..RUNS {
        let (issue, run) = s.running_run(n).await;
        runs.push(run.id);
        producers.push(tokio::spawn(produce(
            s.state.clone(),
            issue,
            run.id,
            Rng(rng.below(u64::MAX) | 1),
        )));
    }
    let clients = runs.iter().map(|run| {
        let rng = Rng(rng.below(u64::MAX) | 1);
        consume(s, *run, rng)
    });
    let results = futures_util::future::join_all(clients).await;
    for p in producers {
        p.await.unwrap();
    }
    let expected: Vec<i64> = (1..=EVENTS).collect();
    let mut trials = 0;
    for (run, (got, connections)) in runs.iter().zip(results) {
        assert_eq!(
            got, expected,
            "run {run}: every event exactly once, in order"
        );
        trials += connections;
    }
    eprintln!("{trials} connections over {RUNS} runs");
    assert!(
        trials >= 200,
        "hundreds of reconnects expected, got {trials}"
    );
    // Resuming past the end, or from the very end, yields only `end`.
    let url = format!(
        "http://{}/api/v1/runs/{}/events/stream?after={EVENTS}",
        s.app.addr, runs[0]
    );
    let body = s
        .http
        .get(url)
        .bearer_auth(&s.token)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let frames = SseParser::default().push(body.as_bytes());
    assert_eq!(frames.len(), 1, "{body}");
    assert_eq!(frames[0].event, "end");
}

/// A follower that is not polled while far more notifications than the channel holds are published
/// lags; it re-reads the store and still yields every event once, then `Ended`.
async fn a_lagging_follower_resyncs_from_the_store(s: &Server) {
    let (issue, run) = s.running_run(0).await;
    let mut events = Box::pin(follow(&s.state, s.state.shutdown.clone(), run.id, 0));
    let first = 3 * i64::try_from(muster::hub::LIVE_CHANNEL_CAPACITY).unwrap();
    commit(&s.state, run.id, 1..2).await;
    let Some(FollowItem::Event(e)) = events.next().await else {
        panic!("the first event")
    };
    assert_eq!(e.seq, 1);
    // The follower is now subscribed and idle; flood its channel.
    for seq in 2..=first {
        commit(&s.state, run.id, seq..seq + 1).await;
    }
    let mut got = vec![1];
    while got.len() < usize::try_from(first).unwrap() {
        match events.next().await {
            Some(FollowItem::Event(e)) => got.push(e.seq),
            other => panic!("expected an event, got {other:?}"),
        }
    }
    assert_eq!(got, (1..=first).collect::<Vec<_>>());
    // Its subscription is still far behind: waiting now meets `Lagged` first, then stale notifications,
    // and must still deliver the next event once it is committed.
    let late = {
        let state = s.state.clone();
        let run = run.id;
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(20)).await;
            commit(&state, run, first + 1..first + 2).await;
        })
    };
    match events.next().await {
        Some(FollowItem::Event(e)) => assert_eq!(e.seq, first + 1),
        other => panic!("expected the late event, got {other:?}"),
    }
    late.await.unwrap();
    let first = first + 1;
    conclude(&s.state, &issue, run.id).await;
    match events.next().await {
        Some(FollowItem::Ended(r)) => assert_eq!(r.status, RunStatus::Succeeded),
        other => panic!("expected the end, got {other:?}"),
    }
    assert!(events.next().await.is_none(), "the stream ends after Ended");
    // Following from a cursor replays only what is after it.
    let rest: Vec<FollowItem> = follow(&s.state, s.state.shutdown.clone(), run.id, first - 2)
        .collect()
        .await;
    assert!(
        matches!(&rest[..], [FollowItem::Event(a), FollowItem::Event(b), FollowItem::Ended(_)]
            if (a.seq, b.seq) == (first - 1, first))
    );
}

/// While a run is live, a seq stored out of order (4 before 3) is not skipped: the follower stops at the
/// gap and goes on once it is filled. Following an unknown run yields an error.
async fn a_gap_in_a_live_log_is_waited_for_not_skipped(s: &Server) {
    let (issue, run) = s.running_run(0).await;
    let mut events = Box::pin(follow(&s.state, s.state.shutdown.clone(), run.id, 0));
    commit(&s.state, run.id, 1..3).await;
    commit(&s.state, run.id, 4..5).await;
    for want in [1, 2] {
        match events.next().await {
            Some(FollowItem::Event(e)) => assert_eq!(e.seq, want),
            other => panic!("expected event {want}, got {other:?}"),
        }
    }
    let early = tokio::time::timeout(Duration::from_millis(150), events.next()).await;
    assert!(
        early.is_err(),
        "nothing is delivered across the gap: {early:?}"
    );
    commit(&s.state, run.id, 3..4).await;
    let mut got = Vec::new();
    for _ in 0..2 {
        match events.next().await {
            Some(FollowItem::Event(e)) => got.push(e.seq),
            other => panic!("expected an event, got {other:?}"),
        }
    }
    assert_eq!(got, [3, 4]);
    conclude(&s.state, &issue, run.id).await;
    assert!(matches!(events.next().await, Some(FollowItem::Ended(_))));

    let unknown: Vec<FollowItem> = follow(&s.state, s.state.shutdown.clone(), RunId::new(), 0)
        .collect()
        .await;
    assert_eq!(unknown, [FollowItem::Error("run not found".into())]);
}
