//! `/api/v1/ensembles` and an issue's ensemble runs: assign, compare, choose.

use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::{Deserialize, Serialize};

use super::ErrorBody;
use super::doc::path::{EnsembleNameParam, IssueKeyParam};
use crate::http::Result;
use crate::http::extract::{ApiCaller, AppJson, AppPath, AppQuery};
use crate::service::ensembles::{self as svc, Comparison, EnsembleInput, EnsembleView, Estimate};
use crate::service::issues::parse_key;
use crate::state::AppState;

pub(super) fn router() -> Router<AppState> {
    Router::new()
        .route("/api/v1/ensembles", get(list).post(create))
        .route(
            "/api/v1/ensembles/{name}",
            get(show).patch(update).delete(delete),
        )
        .route("/api/v1/issues/{key}/ensemble", post(assign).get(compare))
        .route("/api/v1/issues/{key}/ensemble/choose", post(choose))
}

async fn view(
    state: &AppState,
    caller: &crate::service::Caller,
    e: &crate::domain::Ensemble,
) -> Result<EnsembleView> {
    let agents = state.store.list_agents(caller.ws.id).await?;
    Ok(EnsembleView::of(e, &agents))
}

/// Lists ensembles by name.
#[utoipa::path(get, path = "/api/v1/ensembles", tag = "ensembles", responses((status = 200, body = [EnsembleView])))]
pub(super) async fn list(
    State(state): State<AppState>,
    ApiCaller(caller): ApiCaller,
) -> Result<Json<Vec<EnsembleView>>> {
    let agents = state.store.list_agents(caller.ws.id).await?;
    let all = svc::list(&state, &caller).await?;
    Ok(Json(
        all.iter().map(|e| EnsembleView::of(e, &agents)).collect(),
    ))
}

/// Creates an ensemble (owners and admins: its members and check decide what runs).
#[utoipa::path(post, path = "/api/v1/ensembles", tag = "ensembles", request_body = EnsembleInput,
    responses((status = 201, body = EnsembleView), (status = 403, body = ErrorBody),
        (status = 409, body = ErrorBody), (status = 422, body = ErrorBody)))]
pub(super) async fn create(
    State(state): State<AppState>,
    ApiCaller(caller): ApiCaller,
    AppJson(input): AppJson<EnsembleInput>,
) -> Result<(StatusCode, Json<EnsembleView>)> {
    let e = svc::create(&state, &caller, &input).await?;
    Ok((StatusCode::CREATED, Json(view(&state, &caller, &e).await?)))
}

/// One ensemble.
#[utoipa::path(get, path = "/api/v1/ensembles/{name}", tag = "ensembles", params(EnsembleNameParam),
    responses((status = 200, body = EnsembleView), (status = 404, body = ErrorBody)))]
pub(super) async fn show(
    State(state): State<AppState>,
    ApiCaller(caller): ApiCaller,
    AppPath(name): AppPath<String>,
) -> Result<Json<EnsembleView>> {
    let e = svc::by_name(&state, &caller, &name).await?;
    Ok(Json(view(&state, &caller, &e).await?))
}

/// Edits the fields present in the body (owners and admins); runs under way keep their settings.
#[utoipa::path(patch, path = "/api/v1/ensembles/{name}", tag = "ensembles", request_body = EnsembleInput,
    params(EnsembleNameParam),
    responses((status = 200, body = EnsembleView), (status = 403, body = ErrorBody),
        (status = 404, body = ErrorBody), (status = 409, body = ErrorBody), (status = 422, body = ErrorBody)))]
pub(super) async fn update(
    State(state): State<AppState>,
    ApiCaller(caller): ApiCaller,
    AppPath(name): AppPath<String>,
    AppJson(input): AppJson<EnsembleInput>,
) -> Result<Json<EnsembleView>> {
    let e = svc::update(&state, &caller, &name, &input).await?;
    Ok(Json(view(&state, &caller, &e).await?))
}

/// Deletes an ensemble (owners and admins); its past runs stay.
#[utoipa::path(delete, path = "/api/v1/ensembles/{name}", tag = "ensembles", params(EnsembleNameParam),
    responses((status = 204), (status = 403, body = ErrorBody), (status = 404, body = ErrorBody)))]
pub(super) async fn delete(
    State(state): State<AppState>,
    ApiCaller(caller): ApiCaller,
    AppPath(name): AppPath<String>,
) -> Result<StatusCode> {
    svc::delete(&state, &caller, &name).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Which ensemble takes the issue.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
pub struct AssignInput {
    #[schema(pattern = r"^[A-Za-z0-9._-]{1,64}$", example = "trio")]
    pub ensemble: String,
}

/// What assigning queued.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct Assigned {
    pub ensemble: String,
    pub number: i32,
    pub base_commit: Option<String>,
    /// The candidates' runs, one per member.
    pub runs: Vec<uuid::Uuid>,
    /// Each member's (and the reviewer's) median cost per run so far.
    pub estimates: Vec<Estimate>,
    /// The sum of the members' medians (the reviewer's added when it has one), where known.
    pub estimated_total_usd: Option<f64>,
}

/// Assigns the issue to an ensemble: one blind run per member, from one base commit.
#[utoipa::path(post, path = "/api/v1/issues/{key}/ensemble", tag = "ensembles", params(IssueKeyParam),
    request_body = AssignInput,
    responses((status = 201, body = Assigned), (status = 404, body = ErrorBody),
        (status = 409, body = ErrorBody, description = "a member already has a live run on the issue, or an ensemble is at work on it"),
        (status = 422, body = ErrorBody)))]
pub(super) async fn assign(
    State(state): State<AppState>,
    ApiCaller(caller): ApiCaller,
    AppPath(key): AppPath<String>,
    AppJson(input): AppJson<AssignInput>,
) -> Result<(StatusCode, Json<Assigned>)> {
    let done = svc::assign(&state, &caller, &parse_key(&key)?, &input.ensemble).await?;
    let known: Vec<f64> = done
        .estimates
        .iter()
        .filter_map(|e| e.median_cost_usd)
        .collect();
    let total = (known.len() == done.estimates.len()).then(|| known.iter().sum());
    Ok((
        StatusCode::CREATED,
        Json(Assigned {
            ensemble: done.ensemble_run.name.clone(),
            number: done.ensemble_run.number,
            base_commit: done.ensemble_run.base_commit.clone(),
            runs: done.candidates.iter().map(|r| r.id.0).collect(),
            estimates: done.estimates,
            estimated_total_usd: total,
        }),
    ))
}

/// Which ensemble run to compare.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct CompareQuery {
    /// Its number (the `r<n>` of its branches); the latest when absent.
    #[param(minimum = 1, maximum = 2147483647)]
    pub number: Option<i32>,
}

/// The issue's latest (or `number`th) ensemble run: candidates side by side, the checks, the review,
/// the recommendation and what it cost.
#[utoipa::path(get, path = "/api/v1/issues/{key}/ensemble", tag = "ensembles", params(IssueKeyParam, CompareQuery),
    responses((status = 200, body = Comparison), (status = 400, body = ErrorBody),
        (status = 404, body = ErrorBody)))]
pub(super) async fn compare(
    State(state): State<AppState>,
    ApiCaller(caller): ApiCaller,
    AppPath(key): AppPath<String>,
    AppQuery(query): AppQuery<CompareQuery>,
) -> Result<Json<Comparison>> {
    let (_, comparison) = svc::compare(&state, &caller, &parse_key(&key)?, query.number).await?;
    Ok(Json(comparison))
}

/// The person's choice.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
pub struct ChooseInput {
    /// The candidate: its agent's name, its run id (or a prefix of 4+ characters) or its review label.
    #[schema(min_length = 1, example = "claude-coder")]
    pub candidate: String,
    /// Merge its branch into the branch the candidates started from (local repository only).
    #[serde(default)]
    pub merge: bool,
}

/// Chooses a candidate of the issue's latest ensemble run; with `merge`, merges its branch.
#[utoipa::path(post, path = "/api/v1/issues/{key}/ensemble/choose", tag = "ensembles", params(IssueKeyParam),
    request_body = ChooseInput,
    responses((status = 200, body = Comparison), (status = 404, body = ErrorBody),
        (status = 409, body = ErrorBody, description = "already chosen, still running, or the merge conflicts"),
        (status = 422, body = ErrorBody)))]
pub(super) async fn choose(
    State(state): State<AppState>,
    ApiCaller(caller): ApiCaller,
    AppPath(key): AppPath<String>,
    AppJson(input): AppJson<ChooseInput>,
) -> Result<Json<Comparison>> {
    let key = parse_key(&key)?;
    svc::choose(&state, &caller, &key, &input.candidate, input.merge).await?;
    let (_, comparison) = svc::compare(&state, &caller, &key, None).await?;
    Ok(Json(comparison))
}
