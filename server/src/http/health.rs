//! Liveness (`/healthz`: the process answers) and readiness (`/readyz`: the database answers).

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use serde_json::json;

use crate::state::AppState;

pub(super) fn router() -> Router<AppState> {
    Router::new()
        .route("/healthz", get(live))
        .route("/readyz", get(ready))
}

async fn live() -> Json<serde_json::Value> {
    tracing::debug!("liveness probe");
    Json(json!({ "status": "ok", "version": env!("CARGO_PKG_VERSION") }))
}

async fn ready(State(state): State<AppState>) -> Response {
    match state.store.ping().await {
        Ok(()) => {
            tracing::debug!("readiness probe");
            Json(json!({ "status": "ready", "database": backend_name(&state) })).into_response()
        }
        Err(e) => {
            tracing::warn!(error = %e, "readiness probe failed: the database does not answer");
            let body = json!({ "status": "unavailable", "database": backend_name(&state), "reason": "the database does not answer" });
            (StatusCode::SERVICE_UNAVAILABLE, Json(body)).into_response()
        }
    }
}

fn backend_name(state: &AppState) -> &'static str {
    match state.store.backend() {
        crate::store::Backend::Postgres => "postgres",
        crate::store::Backend::Sqlite => "sqlite",
    }
}
