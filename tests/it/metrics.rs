//! Issue 15: `GET /metrics` in the Prometheus text format, parsed with a Prometheus text parser; behind
//! its bearer token when one is set; its counters and gauges move when a real run (the embedded runner,
//! a stand-in agent) happens. Both backends.
//!
//! Issue 26, finding 11: `/metrics` was open by default and listed every workspace's runners. Now a server
//! listening beyond loopback answers 401 without the token, and an open loopback scrape shows only
//! process-wide aggregates.

use muster::domain::{IssueStatus, RunStatus};
use muster_tests::Backend;
use prometheus_parse::{Scrape, Value};

use crate::usage::{ALPHA, World};

const TOKEN: &str = "scrape-secret-0123";

async fn scrape(w: &World) -> Scrape {
    let resp = reqwest::Client::new()
        .get(w.url("/metrics"))
        .bearer_auth(TOKEN)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    let kind = resp.headers()["content-type"].to_str().unwrap().to_owned();
    assert!(kind.starts_with("text/plain; version=0.0.4"), "{kind}");
    let text = resp.text().await.unwrap();
    Scrape::parse(text.lines().map(|l| Ok(l.to_owned()))).unwrap()
}

/// The value of the sample named `name` whose labels include `labels`.
fn value(s: &Scrape, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
    s.samples
        .iter()
        .find(|x| x.metric == name && labels.iter().all(|(k, v)| x.labels.get(k) == Some(*v)))
        .map(|x| match &x.value {
            Value::Counter(v) | Value::Gauge(v) | Value::Untyped(v) => *v,
            Value::Histogram(buckets) => buckets.last().map_or(0.0, |b| b.count),
            Value::Summary(_) => f64::NAN,
        })
}

/// The runners once the embedded one has registered (it does so as the server starts).
async fn registered_runners(w: &World) -> Vec<muster::domain::Runner> {
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        let runners = w.store.all_runners().await.unwrap();
        if !runners.is_empty() {
            return runners;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the embedded runner registers"
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}

async fn metrics_parse_and_move_with_runs(backend: Backend) {
    let Some(w) = World::start_with(backend, |c| c.metrics_token = Some(TOKEN.to_owned())).await
    else {
        return;
    };
    registered_runners(&w).await;
    // Without the token (or with another): refused.
    let anon = reqwest::get(w.url("/metrics")).await.unwrap();
    assert_eq!(anon.status(), 401);
    let wrong = reqwest::Client::new()
        .get(w.url("/metrics"))
        .bearer_auth("nope")
        .send()
        .await
        .unwrap();
    assert_eq!(wrong.status(), 401);

    let before = scrape(&w).await;
    assert_eq!(
        value(&before, "muster_run_events_ingested_total", &[]),
        Some(0.0)
    );
    assert_eq!(value(&before, "muster_queue_depth", &[]), Some(0.0));
    assert_eq!(
        value(&before, "muster_queue_oldest_age_seconds", &[]),
        Some(0.0)
    );
    assert_eq!(
        value(&before, "muster_runs", &[("status", "succeeded")]),
        None
    );
    assert!(value(&before, "muster_db_pool_connections", &[]).unwrap() >= 1.0);
    // The embedded runner has a heartbeat.
    let runner = before
        .samples
        .iter()
        .find(|s| s.metric == "muster_runner_heartbeat_age_seconds")
        .expect("the embedded runner's heartbeat age");
    assert!(
        matches!(runner.value, Value::Gauge(v) if v >= 0.0),
        "{runner:?}"
    );

    w.agent("alpha", ALPHA).await;
    let run = w.run("Count me", "alpha", IssueStatus::InReview).await;
    assert_eq!(run.status, RunStatus::Succeeded);
    let after = scrape(&w).await;
    let done = [("status", "succeeded"), ("runtime", "custom")];
    assert_eq!(value(&after, "muster_runs", &done), Some(1.0));
    assert_eq!(
        value(&after, "muster_runs_finished_total", &done),
        Some(1.0)
    );
    let stored = w
        .store
        .run_events_since(run.id, 0, 10_000)
        .await
        .unwrap()
        .len();
    assert!(stored > 0);
    assert_eq!(
        value(&after, "muster_run_events_ingested_total", &[]),
        Some(stored as f64)
    );
    assert_eq!(
        value(&after, "muster_claim_latency_seconds", &[]),
        Some(1.0)
    );
    assert!(value(&after, "muster_event_flush_latency_seconds", &[]).unwrap() >= 1.0);
    w.stop().await;
}

both_backends!(
    metrics_parse_and_move_with_runs,
    anonymous_metrics_beyond_loopback_are_refused,
    open_loopback_metrics_show_only_aggregates,
);

/// The attack: an anonymous scrape of a server listening on every address (`0.0.0.0`, as in a container)
/// with no metrics token configured. Before: 200 with every runner's name. Now: 401 saying why.
async fn anonymous_metrics_beyond_loopback_are_refused(backend: Backend) {
    let Some(w) = World::start_with(backend, |c| {
        c.addr = std::net::SocketAddr::from(([0, 0, 0, 0], 0));
    })
    .await
    else {
        return;
    };
    let url = w.url("/metrics").replace("0.0.0.0", "127.0.0.1");
    let anon = reqwest::get(&url).await.unwrap();
    assert_eq!(anon.status(), 401);
    assert_eq!(anon.headers()["www-authenticate"], "Bearer");
    let text = anon.text().await.unwrap();
    assert!(
        text.contains("/metrics needs a bearer token; set MUSTER_METRICS_TOKEN"),
        "{text}"
    );
    assert!(!text.contains("muster_"), "{text}");
    // Any bearer is no better.
    let guess = reqwest::Client::new()
        .get(&url)
        .bearer_auth("guess")
        .send()
        .await
        .unwrap();
    assert_eq!(guess.status(), 401);
    w.stop().await;
}

/// Open on loopback without a token, but with aggregates only: no runner's name or per-runner series,
/// while the count of runners and the run and queue gauges are there.
async fn open_loopback_metrics_show_only_aggregates(backend: Backend) {
    let Some(w) = World::start(backend).await else {
        return;
    };
    let runners = registered_runners(&w).await;
    let resp = reqwest::get(w.url("/metrics")).await.unwrap();
    assert_eq!(resp.status(), 200);
    let text = resp.text().await.unwrap();
    let scrape = Scrape::parse(text.lines().map(|l| Ok(l.to_owned()))).unwrap();
    assert_eq!(
        value(&scrape, "muster_runners", &[]),
        Some(runners.len() as f64)
    );
    assert_eq!(value(&scrape, "muster_queue_depth", &[]), Some(0.0));
    assert!(
        !scrape
            .samples
            .iter()
            .any(|s| s.metric == "muster_runner_heartbeat_age_seconds"),
        "{text}"
    );
    assert!(
        scrape
            .samples
            .iter()
            .all(|s| s.labels.get("runner").is_none()),
        "{text}"
    );
    for r in &runners {
        assert!(!text.contains(&r.name), "runner {} named in {text}", r.name);
    }
    w.stop().await;
}
