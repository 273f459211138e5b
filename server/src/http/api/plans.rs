//! `/api/v1/issues/{key}/plan` and `/relations`: an issue's parent, sub-issues and relations (blocks,
//! relates to, duplicate of). Parents and fan-in are set through `PATCH /api/v1/issues/{key}`.

use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::{delete, get, post};
use axum::{Json, Router};

use super::ErrorBody;
use super::doc::path::IssueKeyParam;
use super::views::{Names, PlanView};
use crate::http::Result;
use crate::http::extract::{ApiCaller, AppJson, AppPath};
use crate::service::issues as issues_svc;
use crate::service::plans::{self as svc, RelationInput};
use crate::state::AppState;

pub(super) fn router() -> Router<AppState> {
    Router::new()
        .route(
            "/api/v1/issues/{key}/plan",
            get(show).post(super::proposals::request_plan),
        )
        .route("/api/v1/issues/{key}/relations", post(relate))
        .route(
            "/api/v1/issues/{key}/relations/{kind}/{other}",
            delete(unrelate),
        )
}

async fn plan_view(
    state: &AppState,
    caller: &crate::service::Caller,
    key: &crate::domain::IssueKey,
) -> Result<PlanView> {
    let issue = state.store.get_issue(caller.ws.id, key).await?;
    let plan = svc::plan_of(state, &issue).await?;
    let names = Names::load(state, caller.ws.id).await?;
    Ok(PlanView::new(&plan, &names))
}

/// An issue's parent, sub-issues with their progress, relations, and the blockers its queued run waits on.
#[utoipa::path(get, path = "/api/v1/issues/{key}/plan", tag = "planning", params(IssueKeyParam),
    responses((status = 200, body = PlanView), (status = 404, body = ErrorBody)))]
pub(super) async fn show(
    State(state): State<AppState>,
    ApiCaller(caller): ApiCaller,
    AppPath(key): AppPath<String>,
) -> Result<Json<PlanView>> {
    let key = issues_svc::parse_key(&key)?;
    Ok(Json(plan_view(&state, &caller, &key).await?))
}

/// Adds a relation: `{"kind": "blocked_by", "issue": "ACM-2"}`. A blocked issue's agent does not start
/// until every blocker is done (`until: merged`: done with a merged pull request); then it starts once.
/// A blocks cycle is refused (422) with the cycle named; the same relation twice is a 409.
#[utoipa::path(post, path = "/api/v1/issues/{key}/relations", tag = "planning",
    request_body = RelationInput, params(IssueKeyParam),
    responses((status = 201, body = PlanView), (status = 403, body = ErrorBody),
        (status = 404, body = ErrorBody), (status = 409, body = ErrorBody), (status = 422, body = ErrorBody)))]
pub(super) async fn relate(
    State(state): State<AppState>,
    ApiCaller(caller): ApiCaller,
    AppPath(key): AppPath<String>,
    AppJson(input): AppJson<RelationInput>,
) -> Result<(StatusCode, Json<PlanView>)> {
    let key = issues_svc::parse_key(&key)?;
    svc::relate(&state, &caller, &key, &input).await?;
    Ok((
        StatusCode::CREATED,
        Json(plan_view(&state, &caller, &key).await?),
    ))
}

/// `{key}`, `{kind}` and `{other}`: which relation.
#[derive(utoipa::IntoParams)]
#[into_params(parameter_in = Path)]
#[allow(dead_code)] // Only its OpenAPI description is used; the handler parses the raw segments.
pub(super) struct RelationPath {
    /// Issue key, e.g. MUS-42 (the prefix is case-insensitive).
    #[param(pattern = r"^[A-Za-z]{2,10}-0*[1-9][0-9]{0,17}$", example = "MUS-42")]
    key: String,
    /// As read from `{key}`: `blocked_by`, `blocks`, `relates_to` or `duplicate_of`.
    #[param(value_type = crate::service::plans::TypedRelation, example = "blocked_by")]
    kind: String,
    /// The other issue's key.
    #[param(pattern = r"^[A-Za-z]{2,10}-0*[1-9][0-9]{0,17}$", example = "MUS-41")]
    other: String,
}

/// Removes a relation (a blocker removed may let a waiting run start).
#[utoipa::path(delete, path = "/api/v1/issues/{key}/relations/{kind}/{other}", tag = "planning",
    params(RelationPath),
    responses((status = 204), (status = 403, body = ErrorBody), (status = 404, body = ErrorBody),
        (status = 422, body = ErrorBody)))]
pub(super) async fn unrelate(
    State(state): State<AppState>,
    ApiCaller(caller): ApiCaller,
    AppPath((key, kind, other)): AppPath<(String, String, String)>,
) -> Result<StatusCode> {
    let key = issues_svc::parse_key(&key)?;
    svc::unrelate(&state, &caller, &key, &kind, &other).await?;
    Ok(StatusCode::NO_CONTENT)
}
