//! `GET /metrics`: Prometheus text exposition (see `crate::metrics`). Outside the trace layer like the
//! health checks, so scrapes do not flood the logs.
//!
//! Who may scrape (issue 26: the endpoint was open by default and listed every workspace's runners):
//! - with a metrics token configured (`MUSTER_METRICS_TOKEN`), only `Authorization: Bearer <token>`, and
//!   that scrape has everything, per-runner series included;
//! - without one, a server listening on a loopback address answers anyone who reaches it with
//!   process-wide aggregates only (no runner names);
//! - without one, a server listening on any other address answers 401: its metrics need a token.

use axum::Router;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use chrono::Utc;

use crate::metrics::{Snapshot, render};
use crate::state::AppState;

pub(super) fn router() -> Router<AppState> {
    Router::new().route("/metrics", get(scrape))
}

/// What a scrape may see.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Access {
    /// Everything: the token was sent.
    Full,
    /// Process-wide aggregates: no token is configured and the server listens on loopback.
    Aggregates,
}

/// Decides what this scrape may see, or the 401 message.
fn access(state: &AppState, headers: &HeaderMap) -> Result<Access, String> {
    let Some(token) = &state.config.metrics_token else {
        let addr = state.config.addr;
        return if addr.ip().is_loopback() {
            Ok(Access::Aggregates)
        } else {
            Err(format!(
                "the server listens on {addr}, beyond this machine: /metrics needs a bearer token; \
                 set MUSTER_METRICS_TOKEN\n"
            ))
        };
    };
    let sent = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .unwrap_or_default();
    if crate::auth::constant_time_eq(sent.trim(), token) {
        Ok(Access::Full)
    } else {
        Err("metrics need the bearer token set with MUSTER_METRICS_TOKEN\n".to_owned())
    }
}

async fn snapshot(state: &AppState, access: Access) -> crate::store::Result<Snapshot> {
    let now = Utc::now();
    let (queued, oldest_queued) = state.store.queue_state(now).await?;
    let (pool_size, pool_idle) = state.store.pool_stats();
    let (live_connections, live_viewers) = state.hub.subscriber_counts();
    let runners = state.store.all_runners().await?;
    Ok(Snapshot {
        runs: state.store.run_counts().await?,
        queued,
        oldest_queued,
        runner_count: i64::try_from(runners.len()).unwrap_or(i64::MAX),
        runners: (access == Access::Full).then(|| {
            runners
                .into_iter()
                .map(|r| (r.name, r.last_heartbeat_at))
                .collect()
        }),
        pool_size,
        pool_idle,
        live_connections: i64::try_from(live_connections).unwrap_or(i64::MAX),
        live_viewers: i64::try_from(live_viewers).unwrap_or(i64::MAX),
    })
}

async fn scrape(State(state): State<AppState>, headers: HeaderMap) -> Response {
    let access = match access(&state, &headers) {
        Ok(access) => access,
        Err(message) => {
            return (
                StatusCode::UNAUTHORIZED,
                [(header::WWW_AUTHENTICATE, "Bearer")],
                message,
            )
                .into_response();
        }
    };
    match snapshot(&state, access).await {
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
