//! `/api/v1/runtimes`: the agent CLIs the server's machine has, as on the Runtimes page.

use axum::extract::State;
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::Serialize;

use crate::app::AppState;
use crate::http::Result;
use crate::http::extract::ApiCaller;
use crate::service::runtimes::{install_hint, label};

pub(super) fn router() -> Router<AppState> {
    Router::new()
        .route("/api/v1/runtimes", get(list))
        .route("/api/v1/runtimes/detect", post(redetect))
}

/// One detected runtime.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub(super) struct RuntimeView {
    /// claude, codex, opencode or llama.
    kind: String,
    label: String,
    /// found, too_old, not_installed or broken.
    status: String,
    path: Option<String>,
    version: Option<String>,
    /// Why it is not usable.
    reason: Option<String>,
    /// How to install the tested version, when it is missing or too old.
    install_hint: Option<String>,
}

/// What was detected and when.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub(super) struct RuntimesView {
    detected_at: chrono::DateTime<chrono::Utc>,
    runtimes: Vec<RuntimeView>,
}

fn view((at, found): crate::service::runtimes::Detected) -> RuntimesView {
    let runtimes = found
        .iter()
        .map(|d| {
            let status = d.status.as_str().to_owned();
            let usable = matches!(
                d.status,
                muster_agents::DetectionStatus::Found | muster_agents::DetectionStatus::Broken
            );
            RuntimeView {
                kind: d.kind.to_string(),
                label: label(d.kind).to_owned(),
                status,
                path: d.path.as_ref().map(|p| p.display().to_string()),
                version: d.version.clone(),
                reason: d.reason.clone(),
                install_hint: (!usable)
                    .then(|| install_hint(d.kind))
                    .flatten()
                    .map(str::to_owned),
            }
        })
        .collect();
    RuntimesView {
        detected_at: at,
        runtimes,
    }
}

/// The last detection (cached; detected now if there is none yet).
#[utoipa::path(get, path = "/api/v1/runtimes", tag = "runtimes", responses((status = 200, body = RuntimesView)))]
pub(super) async fn list(
    State(state): State<AppState>,
    ApiCaller(_): ApiCaller,
) -> Result<Json<RuntimesView>> {
    Ok(Json(view(state.runtimes.get().await)))
}

/// Detects again, now.
#[utoipa::path(post, path = "/api/v1/runtimes/detect", tag = "runtimes", responses((status = 200, body = RuntimesView)))]
pub(super) async fn redetect(
    State(state): State<AppState>,
    ApiCaller(_): ApiCaller,
) -> Result<Json<RuntimesView>> {
    Ok(Json(view(state.runtimes.detect().await)))
}
