//! `/api/v1/runtimes`: the agent CLIs and local model servers the server's machine has, as on the Runtimes
//! page.

use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::Serialize;

use super::ErrorBody;
use crate::http::Result;
use crate::http::extract::ApiCaller;
use crate::runtimes::{Detected, LocalModels, REDETECT_EVERY, TooSoon};
use crate::service::runtimes as svc;
use crate::state::AppState;
use muster_agents::detect::install_hint;

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

/// One local model server.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub(super) struct ModelServerView {
    /// The server root URL (without /v1).
    url: String,
    /// llama.cpp, ollama or openai; null when unrecognized.
    kind: Option<String>,
    /// ready, loading, unreachable or unrecognized.
    status: String,
    models: Vec<String>,
    version: Option<String>,
    /// The loaded model's context size in tokens (llama.cpp).
    context_size: Option<u64>,
    /// Whether the model's chat template takes tools (llama.cpp).
    supports_tools: Option<bool>,
    /// Where the URL came from: MUSTER_LLAMA_URL, OLLAMA_HOST, LLAMA_API_BASE, "agent <name>" or a port.
    source: String,
    /// Why it is unusable.
    reason: Option<String>,
}

/// What was detected and when.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub(super) struct RuntimesView {
    detected_at: chrono::DateTime<chrono::Utc>,
    runtimes: Vec<RuntimeView>,
    /// When the local models were scanned.
    models_detected_at: chrono::DateTime<chrono::Utc>,
    /// Local model servers: explicit URLs always, default loopback ports when a model server answered.
    model_servers: Vec<ModelServerView>,
    /// llama.cpp / Ollama / llamafile binaries on PATH.
    local_binaries: Vec<RuntimeView>,
}

fn view((at, found): Detected, local: &LocalModels) -> RuntimesView {
    let runtimes = found.iter().map(runtime_view).collect();
    RuntimesView {
        detected_at: at,
        runtimes,
        models_detected_at: local.detected_at,
        model_servers: local
            .servers
            .iter()
            .map(|s| ModelServerView {
                url: s.url.clone(),
                kind: s.kind.map(|k| k.as_str().to_owned()),
                status: s.status.as_str().to_owned(),
                models: s.models.clone(),
                version: s.version.clone(),
                context_size: s.context_size,
                supports_tools: s.supports_tools,
                source: s.source.clone(),
                reason: s.reason.clone(),
            })
            .collect(),
        local_binaries: local.binaries.iter().map(runtime_view).collect(),
    }
}

fn runtime_view(d: &muster_agents::Detection) -> RuntimeView {
    let usable = matches!(
        d.status,
        muster_agents::DetectionStatus::Found | muster_agents::DetectionStatus::Broken
    );
    RuntimeView {
        kind: d.kind.to_string(),
        label: d.kind.label().to_owned(),
        status: d.status.as_str().to_owned(),
        path: d.path.as_ref().map(|p| p.display().to_string()),
        version: d.version.clone(),
        reason: d.reason.clone(),
        install_hint: (!usable).then(|| install_hint(d.kind)).flatten(),
    }
}

/// The last detection (cached; detected now if there is none yet). The local model servers are this
/// workspace's: its agents' base URLs (without credentials), the server's configured ones and the default
/// loopback ports.
#[utoipa::path(get, path = "/api/v1/runtimes", tag = "runtimes", responses((status = 200, body = RuntimesView)))]
pub(super) async fn list(
    State(state): State<AppState>,
    ApiCaller(caller): ApiCaller,
) -> Result<Json<RuntimesView>> {
    let (found, local) = svc::cached(&state, caller.ws.id).await;
    Ok(Json(view(found, &local)))
}

/// Detects again, now: owners and admins only, at most once every 10 s per workspace (429 with
/// `Retry-After` in seconds otherwise).
#[utoipa::path(post, path = "/api/v1/runtimes/detect", tag = "runtimes", responses(
    (status = 200, body = RuntimesView),
    (status = 403, body = ErrorBody, description = "not an owner or admin"),
    (status = 429, body = ErrorBody, description = "re-detected less than 10 s ago; see Retry-After",
        headers(("Retry-After" = u64, description = "seconds until a re-detect is allowed")))))]
pub(super) async fn redetect(
    State(state): State<AppState>,
    ApiCaller(caller): ApiCaller,
) -> Result<Response> {
    match svc::redetect(&state, &caller).await? {
        Ok((found, local)) => Ok(Json(view(found, &local)).into_response()),
        Err(TooSoon(wait)) => Ok(too_soon(wait)),
    }
}

/// The 429 of a re-detect asked for too soon.
fn too_soon(wait: std::time::Duration) -> Response {
    let secs = wait.as_secs() + u64::from(wait.subsec_nanos() > 0);
    let message = format!(
        "re-detected less than {} s ago; try again in {secs} s",
        REDETECT_EVERY.as_secs()
    );
    (
        StatusCode::TOO_MANY_REQUESTS,
        [(header::RETRY_AFTER, secs.max(1).to_string())],
        Json(serde_json::json!({ "errors": { "runtimes": [message] } })),
    )
        .into_response()
}
