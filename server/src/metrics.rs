//! Prometheus metrics (issue 15), exposed at `GET /metrics` in the text exposition format (0.0.4) with
//! the Prometheus org's `prometheus-client` crate.
//!
//! Two kinds: counters and histograms this replica keeps as things happen ([`Metrics`], held by the
//! engine: events ingested, runs finished, claim and event-flush latency), and gauges read from the
//! database at each scrape ([`Snapshot`]: runs by status and runtime, the queue's depth and oldest age,
//! each runner's heartbeat age, the pool's connections), so every replica reports the same shared state.
//! Per-runner series (runner names belong to workspaces) are only in a scrape that carried the metrics
//! token; without it, only process-wide aggregates (see `http::metrics`).

use std::time::Duration;

use chrono::{DateTime, Utc};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

use crate::domain::{RunStatus, RuntimeKind};

/// A label set: (name, value) pairs.
type Labels = Vec<(String, String)>;

/// What this replica counts as it goes. Cheap to clone (every metric is shared).
#[derive(Debug, Clone)]
pub struct Metrics {
    /// Run events stored from runners.
    pub events_ingested: Counter,
    /// Runs that ended, by status and runtime.
    pub runs_finished: Family<Labels, Counter>,
    /// Seconds from a run being claimable (queued, or its retry backoff over) to a runner claiming it.
    pub claim_latency: Histogram,
    /// Seconds one group commit of run events took to store.
    pub event_flush: Histogram,
}

impl Default for Metrics {
    fn default() -> Self {
        Self {
            events_ingested: Counter::default(),
            runs_finished: Family::default(),
            // 1 ms to ~9 min.
            claim_latency: Histogram::new(exponential_buckets(0.001, 3.0, 13)),
            // 0.1 ms to ~53 s.
            event_flush: Histogram::new(exponential_buckets(0.0001, 3.0, 13)),
        }
    }
}

impl Metrics {
    /// Counts a run that ended.
    pub fn run_finished(&self, status: RunStatus, kind: Option<RuntimeKind>) {
        self.runs_finished
            .get_or_create(&vec![
                ("status".to_owned(), status.to_string()),
                (
                    "runtime".to_owned(),
                    kind.map_or_else(|| "unknown".to_owned(), |k| k.to_string()),
                ),
            ])
            .inc();
    }

    /// Records how long a claimed run waited since it became claimable at `since`.
    pub fn claimed(&self, since: DateTime<Utc>, now: DateTime<Utc>) {
        let waited = (now - since).num_microseconds().unwrap_or(0).max(0) as f64 / 1e6;
        self.claim_latency.observe(waited);
    }

    /// Records one group commit of `events` events that took `took`.
    pub fn flushed(&self, events: usize, took: Duration) {
        self.events_ingested.inc_by(events as u64);
        self.event_flush.observe(took.as_secs_f64());
    }
}

/// The shared state read from the database (and the hub) at a scrape.
#[derive(Debug, Clone, Default)]
pub struct Snapshot {
    /// (status, runtime, count) of every run.
    pub runs: Vec<(RunStatus, RuntimeKind, i64)>,
    /// Queued runs whose backoff is over, and when the oldest of them became claimable.
    pub queued: i64,
    pub oldest_queued: Option<DateTime<Utc>>,
    /// How many runners are registered (every workspace's).
    pub runner_count: i64,
    /// (runner name, last heartbeat) of every runner: only for a scrape with the metrics token.
    pub runners: Option<Vec<(String, DateTime<Utc>)>>,
    /// Open database connections, and how many of them are idle.
    pub pool_size: u32,
    pub pool_idle: u32,
    /// Browser and program connections subscribed to live topics, and live-log viewers.
    pub live_connections: i64,
    pub live_viewers: i64,
}

fn gauge<T: Into<f64>>(registry: &mut Registry, name: &str, help: &str, value: T) {
    let g = Gauge::<f64, std::sync::atomic::AtomicU64>::default();
    g.set(value.into());
    registry.register(name, help, g);
}

/// The whole exposition: this replica's counters and histograms and the snapshot's gauges.
pub fn render(metrics: &Metrics, snap: &Snapshot, now: DateTime<Utc>) -> String {
    let mut registry = Registry::with_prefix("muster");
    registry.register(
        "run_events_ingested",
        "Run events stored from runners by this replica",
        metrics.events_ingested.clone(),
    );
    registry.register(
        "runs_finished",
        "Runs that ended on this replica, by status and runtime",
        metrics.runs_finished.clone(),
    );
    registry.register(
        "claim_latency_seconds",
        "Seconds from a run being claimable to a runner claiming it",
        metrics.claim_latency.clone(),
    );
    registry.register(
        "event_flush_latency_seconds",
        "Seconds one group commit of run events took to store",
        metrics.event_flush.clone(),
    );
    let runs = Family::<Labels, Gauge>::default();
    for (status, kind, n) in &snap.runs {
        runs.get_or_create(&vec![
            ("status".to_owned(), status.to_string()),
            ("runtime".to_owned(), kind.to_string()),
        ])
        .set(*n);
    }
    registry.register("runs", "Runs in the database, by status and runtime", runs);
    gauge(
        &mut registry,
        "queue_depth",
        "Queued runs that a runner may claim now",
        snap.queued as f64,
    );
    let oldest = snap
        .oldest_queued
        .map_or(0.0, |t| (now - t).num_milliseconds().max(0) as f64 / 1000.0);
    gauge(
        &mut registry,
        "queue_oldest_age_seconds",
        "Seconds the oldest claimable queued run has waited (0 when none waits)",
        oldest,
    );
    gauge(
        &mut registry,
        "runners",
        "Runners registered with the server",
        snap.runner_count as f64,
    );
    if let Some(runners) = &snap.runners {
        let heartbeat = Family::<Labels, Gauge<f64, std::sync::atomic::AtomicU64>>::default();
        for (name, at) in runners {
            heartbeat
                .get_or_create(&vec![("runner".to_owned(), name.clone())])
                .set((now - *at).num_milliseconds().max(0) as f64 / 1000.0);
        }
        registry.register(
            "runner_heartbeat_age_seconds",
            "Seconds since each runner's last heartbeat",
            heartbeat,
        );
    }
    gauge(
        &mut registry,
        "db_pool_connections_in_use",
        "Database connections in use by this replica",
        f64::from(snap.pool_size.saturating_sub(snap.pool_idle)),
    );
    gauge(
        &mut registry,
        "db_pool_connections",
        "Database connections this replica holds open",
        f64::from(snap.pool_size),
    );
    gauge(
        &mut registry,
        "live_connections",
        "Live subscriptions (browser tabs and event streams) on this replica",
        snap.live_connections as f64,
    );
    gauge(
        &mut registry,
        "live_viewers",
        "Subscribers of live run logs on this replica",
        snap.live_viewers as f64,
    );
    let mut out = String::new();
    if prometheus_client::encoding::prometheus_text::encode(&mut out, &registry).is_err() {
        out.clear();
    }
    out
}
