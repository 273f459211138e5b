//! `GET /metrics`: Prometheus text exposition (see `crate::metrics`). Outside the trace layer like the
//! health checks, so scrapes do not flood the logs. With `--metrics-token` it needs
//! `Authorization: Bearer <token>`.

use axum::Router;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use chrono::Utc;

use crate::app::AppState;
use crate::metrics::{Snapshot, render};

pub(super) fn router() -> Router<AppState> {
    Router::new().route("/metrics", get(scrape))
}

async fn snapshot(state: &AppState) -> crate::store::Result<Snapshot> {
    let now = Utc::now();
    let (queued, oldest_queued) = state.store.queue_state(now).await?;
    let (pool_size, pool_idle) = state.store.pool_stats();
    let (live_connections, live_viewers) = state.hub.subscriber_counts();
    Ok(Snapshot {
        runs: state.store.run_counts().await?,
        queued,
        oldest_queued,
        runners: state
            .store
            .all_runners()
            .await?
            .into_iter()
            .map(|r| (r.name, r.last_heartbeat_at))
            .collect(),
        pool_size,
        pool_idle,
        live_connections: i64::try_from(live_connections).unwrap_or(i64::MAX),
        live_viewers: i64::try_from(live_viewers).unwrap_or(i64::MAX),
    })
}

async fn scrape(State(state): State<AppState>, headers: HeaderMap) -> Response {
    if let Some(token) = &state.config.metrics_token {
        let sent = headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "))
            .unwrap_or_default();
        if !crate::auth::constant_time_eq(sent.trim(), token) {
            return (
                StatusCode::UNAUTHORIZED,
                [(header::WWW_AUTHENTICATE, "Bearer")],
                "metrics need the bearer token set with --metrics-token\n",
            )
                .into_response();
        }
    }
    match snapshot(&state).await {
        Ok(snap) => (
            [(
                header::CONTENT_TYPE,
                "text/plain; version=0.0.4; charset=utf-8",
            )],
            render(&state.metrics, &snap, Utc::now()),
        )
            .into_response(),
        Err(e) => {
            tracing::warn!(error = %e, "cannot read the metrics from the database");
            (
                StatusCode::SERVICE_UNAVAILABLE,
                "the database does not answer\n",
            )
                .into_response()
        }
    }
}
