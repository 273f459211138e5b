//! `/api/v1/runners` (any member) and `/api/v1/runner-tokens` (owners and admins).

use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::{delete, get};
use axum::{Json, Router};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use super::ErrorBody;
use super::doc::path::RunnerTokenIdParam;
use crate::domain::RunnerToken;
use crate::http::Result;
use crate::http::extract::{ApiCaller, AppJson, AppPath};
use crate::service::runners::{
    self as svc, CreatedRunnerToken, ReportedModels, ReportedRuntime, RunnerStatus,
};
use crate::state::AppState;

pub(super) fn router() -> Router<AppState> {
    Router::new()
        .route("/api/v1/runners", get(list))
        .route("/api/v1/runner-tokens", get(list_tokens).post(create_token))
        .route("/api/v1/runner-tokens/{id}", delete(revoke_token))
}

/// A runner: where it is, whether it is online, what it reported and what it runs now.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct RunnerView {
    pub id: uuid::Uuid,
    pub name: String,
    /// The server's own runner (serves every workspace and kind); otherwise a remote `muster runner`.
    pub embedded: bool,
    /// Its last heartbeat is at most 30 seconds old (and its token is not revoked).
    pub online: bool,
    pub last_heartbeat_at: DateTime<Utc>,
    /// The muster version it runs.
    pub version: String,
    /// The agent CLIs it detected.
    pub runtimes: Vec<ReportedRuntime>,
    /// The local model servers it reaches.
    pub local_models: Vec<ReportedModels>,
    /// How many runs it takes at once, when it said.
    pub max_runs: Option<u32>,
    /// Ids of this workspace's runs it holds (claimed or running).
    pub live_runs: Vec<uuid::Uuid>,
    /// Its token was revoked: it can no longer connect.
    pub revoked: bool,
}

impl From<&RunnerStatus> for RunnerView {
    fn from(s: &RunnerStatus) -> Self {
        RunnerView {
            id: s.runner.id.0,
            name: s.runner.name.clone(),
            embedded: s.embedded(),
            online: s.online,
            last_heartbeat_at: s.runner.last_heartbeat_at,
            version: s.runner.version.clone(),
            runtimes: s.reported.runtimes.clone(),
            local_models: s.reported.local_models.clone(),
            max_runs: s.reported.max_runs,
            live_runs: s.live_runs.iter().map(|r| r.id.0).collect(),
            revoked: s.runner.revoked,
        }
    }
}

/// A runner token (never its secret).
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct RunnerTokenView {
    pub id: uuid::Uuid,
    pub name: String,
    /// The token's first characters, to tell tokens apart.
    pub prefix: String,
    pub created_at: DateTime<Utc>,
    pub last_used_at: Option<DateTime<Utc>>,
    pub revoked_at: Option<DateTime<Utc>>,
}

impl From<&RunnerToken> for RunnerTokenView {
    fn from(t: &RunnerToken) -> Self {
        RunnerTokenView {
            id: t.id.0,
            name: t.name.clone(),
            prefix: t.prefix.clone(),
            created_at: t.created_at,
            last_used_at: t.last_used_at,
            revoked_at: t.revoked_at,
        }
    }
}

/// The runners this workspace can use: its remote runners and the servers' embedded ones.
#[utoipa::path(get, path = "/api/v1/runners", tag = "runners",
    responses((status = 200, body = [RunnerView])))]
pub(super) async fn list(
    State(state): State<AppState>,
    ApiCaller(caller): ApiCaller,
) -> Result<Json<Vec<RunnerView>>> {
    let runners = svc::list(&state, &caller).await?;
    Ok(Json(runners.iter().map(RunnerView::from).collect()))
}

/// The workspace's runner tokens, newest first, revoked ones included (owners and admins).
#[utoipa::path(get, path = "/api/v1/runner-tokens", tag = "runners",
    responses((status = 200, body = [RunnerTokenView])))]
pub(super) async fn list_tokens(
    State(state): State<AppState>,
    ApiCaller(caller): ApiCaller,
) -> Result<Json<Vec<RunnerTokenView>>> {
    let tokens = svc::list_tokens(&state, &caller).await?;
    Ok(Json(tokens.iter().map(RunnerTokenView::from).collect()))
}

/// A new runner token's name.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
pub(super) struct RunnerTokenInput {
    /// 1 to 64 characters, not blank: what the token is for ("gpu box").
    #[schema(min_length = 1, max_length = 64, pattern = r"\S")]
    name: String,
}

/// Creates a runner token (owners and admins); the secret is in this response only.
#[utoipa::path(post, path = "/api/v1/runner-tokens", tag = "runners", request_body = RunnerTokenInput,
    responses((status = 201, body = CreatedRunnerToken), (status = 422, body = ErrorBody)))]
pub(super) async fn create_token(
    State(state): State<AppState>,
    ApiCaller(caller): ApiCaller,
    AppJson(input): AppJson<RunnerTokenInput>,
) -> Result<(StatusCode, Json<CreatedRunnerToken>)> {
    Ok((
        StatusCode::CREATED,
        Json(svc::create_token(&state, &caller, &input.name).await?),
    ))
}

/// Revokes a runner token (owners and admins): its runners are disconnected and can no longer connect.
#[utoipa::path(delete, path = "/api/v1/runner-tokens/{id}", tag = "runners",
    params(RunnerTokenIdParam), responses((status = 204), (status = 404, body = ErrorBody)))]
pub(super) async fn revoke_token(
    State(state): State<AppState>,
    ApiCaller(caller): ApiCaller,
    AppPath(id): AppPath<String>,
) -> Result<StatusCode> {
    svc::revoke_token(&state, &caller, &id).await?;
    Ok(StatusCode::NO_CONTENT)
}
