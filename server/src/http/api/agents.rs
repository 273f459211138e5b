//! `/api/v1/agents`.

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};

use super::ErrorBody;
use super::doc::path::AgentNameParam;
use crate::http::Result;
use crate::http::extract::{ApiCaller, AppJson, AppPath};
use crate::service::agents::{self as svc, AgentInput, AgentNameView, AgentView};
use crate::state::AppState;

pub(super) fn router() -> Router<AppState> {
    Router::new()
        .route("/api/v1/agents", get(list).post(create))
        .route(
            "/api/v1/agents/{name}",
            get(show).patch(update).delete(delete),
        )
}

/// Lists agents by name.
#[utoipa::path(get, path = "/api/v1/agents", tag = "agents", responses((status = 200, body = [AgentView],
    description = "the agents; a run's token gets only each one's id, name and colour (AgentNameView)")))]
pub(super) async fn list(
    State(state): State<AppState>,
    ApiCaller(caller): ApiCaller,
) -> Result<Response> {
    let agents = state.store.list_agents(caller.ws.id).await?;
    Ok(if caller.run.is_some() {
        Json(agents.iter().map(AgentNameView::from).collect::<Vec<_>>()).into_response()
    } else {
        Json(agents.iter().map(AgentView::from).collect::<Vec<_>>()).into_response()
    })
}

/// Creates an agent (owners and admins: an agent decides what runs on the server).
#[utoipa::path(post, path = "/api/v1/agents", tag = "agents", request_body = AgentInput,
    responses((status = 201, body = AgentView),
        (status = 403, body = ErrorBody, description = "a member: only owners and admins may create agents"),
        (status = 409, body = ErrorBody)))]
pub(super) async fn create(
    State(state): State<AppState>,
    ApiCaller(caller): ApiCaller,
    AppJson(input): AppJson<AgentInput>,
) -> Result<(StatusCode, Json<AgentView>)> {
    let agent = svc::create(&state, &caller, &input).await?;
    Ok((StatusCode::CREATED, Json(AgentView::from(&agent))))
}

/// One agent.
#[utoipa::path(get, path = "/api/v1/agents/{name}", tag = "agents", params(AgentNameParam),
    responses((status = 200, body = AgentView,
        description = "the agent; a run's token gets only its id, name and colour (AgentNameView)"),
        (status = 404, body = ErrorBody)))]
pub(super) async fn show(
    State(state): State<AppState>,
    ApiCaller(caller): ApiCaller,
    AppPath(name): AppPath<String>,
) -> Result<Response> {
    let agent = svc::by_name(&state, &caller, &name).await?;
    Ok(if caller.run.is_some() {
        Json(AgentNameView::from(&agent)).into_response()
    } else {
        Json(AgentView::from(&agent)).into_response()
    })
}

/// Edits the fields present in the body (absent secret values are kept, unless a new kind, command or
/// base URL drops them). Only owners and admins change kind, command, extra_args, env, base_url,
/// permission_mode, runners, name, model and stall_timeout_secs, and raise or remove a budget (members
/// may lower one).
#[utoipa::path(patch, path = "/api/v1/agents/{name}", tag = "agents", request_body = AgentInput,
    params(AgentNameParam),
    responses((status = 200, body = AgentView),
        (status = 403, body = ErrorBody, description = "a member changed a field only owners and admins may change; one message per field"),
        (status = 404, body = ErrorBody), (status = 409, body = ErrorBody)))]
pub(super) async fn update(
    State(state): State<AppState>,
    ApiCaller(caller): ApiCaller,
    AppPath(name): AppPath<String>,
    AppJson(input): AppJson<AgentInput>,
) -> Result<Json<AgentView>> {
    Ok(Json(AgentView::from(
        &svc::update(&state, &caller, &name, &input).await?,
    )))
}

/// Deletes an agent (owners and admins; refused while it has runs).
#[utoipa::path(delete, path = "/api/v1/agents/{name}", tag = "agents", params(AgentNameParam),
    responses((status = 204), (status = 403, body = ErrorBody), (status = 404, body = ErrorBody), (status = 409, body = ErrorBody)))]
pub(super) async fn delete(
    State(state): State<AppState>,
    ApiCaller(caller): ApiCaller,
    AppPath(name): AppPath<String>,
) -> Result<StatusCode> {
    svc::delete(&state, &caller, &name).await?;
    Ok(StatusCode::NO_CONTENT)
}
