//! Two replicas (`muster::app::build` twice) on one PostgreSQL database: A serves the API without a
//! runner, B runs agents with a one-minute idle tick. A run queued through A is claimed by B at once (a
//! NOTIFY wake-up, not B's tick); a board viewer on B sees A's change; a log viewer on A sees B's events;
//! cancelling through A stops B's run.

use std::time::Duration;

use muster::domain::*;
use muster::hub::{LiveEvent, Topic};
use muster_tests::engine::*;
use muster_tests::{AppBuilder, Backend, TestDb};
use serde_json::json;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// A second replica on `env`'s database, without a runner.
async fn replica(db: &TestDb) -> (muster::state::AppState, String, CancellationToken) {
    let app = AppBuilder::new(db.config())
        .timing(test_timing())
        .spawn()
        .await;
    let url = app.url("");
    (app.state, url, app.shutdown)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs PostgreSQL (MUSTER_TEST_PG_URL); run with --include-ignored"]
async fn replicas_wake_each_other_through_postgres() {
    // B: the runner (idle tick 60 s, see `test_timing`).
    let Some(b) = Env::start(Backend::Postgres).await else {
        return;
    };
    // A: the API replica, same database.
    let (a, a_url, a_stop) = replica(&b.db).await;
    let script = b.script(
        "ticker.sh",
        "cat >/dev/null\nwhile :; do echo tick; sleep 0.1; done",
    );
    b.agent("ticker", &script).await;
    let issue = b.issue("Across replicas").await;
    let mut board_on_b = b.state.hub.subscribe(Topic::Board(b.ws.id));
    // Let B's runner settle into its idle wait before the run is queued.
    tokio::time::sleep(Duration::from_millis(300)).await;

    let assigned_at = Instant::now();
    let resp = reqwest::Client::new()
        .patch(format!("{a_url}/api/v1/issues/{}", issue.key))
        .bearer_auth(&b.token)
        .json(&json!({ "assignee": "ticker" }))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    let seen = tokio::time::timeout(Duration::from_secs(10), async {
        loop {
            let event = board_on_b.recv().await.unwrap();
            if *event == LiveEvent::IssueChanged(issue.key.clone()) {
                return;
            }
        }
    })
    .await;
    assert!(seen.is_ok(), "B's board viewer heard of A's change");

    let run = b.the_run(&issue).await;
    let mut log_on_a = a.hub.subscribe(Topic::Run(run.id));
    let running = poll("B to claim the run", || async {
        let r = b.store.get_run(run.id).await.unwrap();
        (r.status == RunStatus::Running).then_some(r)
    })
    .await;
    assert!(
        assigned_at.elapsed() < Duration::from_secs(10),
        "claimed at once, not on B's 60 s idle tick: {running:?}"
    );
    let relayed = tokio::time::timeout(Duration::from_secs(10), log_on_a.recv()).await;
    match relayed.map(|e| e.map(|e| (*e).clone())) {
        Ok(Ok(LiveEvent::RunEvents { run_id, last_seq })) => {
            assert_eq!(run_id, run.id);
            let stored = b.events(run.id).await.len() as i64;
            assert!(stored >= last_seq, "relayed only what is stored");
        }
        other => panic!("A's log viewer heard nothing from B: {other:?}"),
    }

    // Cancel through A: B holds the process and stops it.
    let resp = reqwest::Client::new()
        .post(format!("{a_url}/api/v1/runs/{}/cancel", run.id))
        .bearer_auth(&b.token)
        .send()
        .await
        .unwrap();
    assert!(resp.status().is_success(), "{}", resp.status());
    let run = b.finished(run.id).await;
    assert_eq!(run.status, RunStatus::Cancelled, "{run:?}");
    a_stop.cancel();
    b.stop().await;
}
