//! `/api/v1/projects`: a workspace's projects, their own repositories and how far each is. Issues join
//! one with `"project": "WEB"` on `POST`/`PATCH /api/v1/issues`; `GET /api/v1/issues?project=WEB`
//! lists its issues.

use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::get;
use axum::{Json, Router};
use chrono::{DateTime, NaiveDate, Utc};
use serde::Serialize;

use super::ErrorBody;
use super::views::Names;
use crate::http::Result;
use crate::http::extract::{ApiCaller, AppJson, AppPath};
use crate::service::projects::{self as svc, ProjectInput, ProjectSummary};
use crate::state::AppState;

pub(super) fn router() -> Router<AppState> {
    Router::new()
        .route("/api/v1/projects", get(list).post(create))
        .route(
            "/api/v1/projects/{key}",
            get(show).patch(update).delete(delete),
        )
}

/// `{key}`: a project key.
#[derive(utoipa::IntoParams)]
#[into_params(parameter_in = Path)]
#[allow(dead_code)] // Only its OpenAPI description is used; the handlers parse the raw segment.
pub(super) struct ProjectKeyParam {
    /// Project key, e.g. WEB (case-insensitive).
    #[param(pattern = r"^[A-Za-z][A-Za-z0-9]{1,9}$", example = "WEB")]
    key: String,
}

/// Issues of a project in one status.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct StatusCount {
    #[schema(example = "todo")]
    pub status: String,
    pub issues: i64,
}

/// A project and how far it is.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct ProjectView {
    pub id: uuid::Uuid,
    #[schema(example = "WEB")]
    pub key: String,
    pub name: String,
    pub description: String,
    /// The lead's name.
    pub lead: Option<String>,
    pub lead_id: Option<uuid::Uuid>,
    #[schema(example = "active")]
    pub status: String,
    #[schema(value_type = Option<String>, format = Date, example = "2027-03-31")]
    pub target_date: Option<NaiveDate>,
    /// Its own repository; null: its issues' runs work in the workspace's.
    pub repo_path: Option<String>,
    /// Its check command; null: the workspace's.
    pub check_command: Option<String>,
    pub check_timeout_secs: Option<u64>,
    /// Done issues.
    pub done: i64,
    /// Issues not cancelled (what `done` is counted against).
    pub total: i64,
    /// Issues per status (statuses without issues left out).
    pub by_status: Vec<StatusCount>,
    /// Runs of its issues.
    pub runs: i64,
    /// What those runs cost, in US dollars (the priced part when `cost_unknown`).
    pub cost_usd: f64,
    /// Some tokens were used that nothing priced.
    pub cost_unknown: bool,
    pub tokens: i64,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

impl ProjectView {
    /// Maps a project with its stats, naming its lead.
    pub fn new(summary: &ProjectSummary, names: &Names) -> Self {
        let (p, s) = (&summary.project, &summary.stats);
        let (done, total) = s.progress();
        ProjectView {
            id: p.id.0,
            key: p.key.to_string(),
            name: p.name.as_str().to_owned(),
            description: p.description.clone(),
            lead: p.lead.map(|u| {
                names
                    .users
                    .get(&u)
                    .cloned()
                    .unwrap_or_else(|| "former member".into())
            }),
            lead_id: p.lead.map(|u| u.0),
            status: p.status.to_string(),
            target_date: p.target_date,
            repo_path: p.repo_path.clone(),
            check_command: p.check.as_ref().map(|c| c.command.clone()),
            check_timeout_secs: p.check.as_ref().map(|c| c.timeout_secs),
            done,
            total,
            by_status: s
                .by_status
                .iter()
                .map(|(status, n)| StatusCount {
                    status: status.to_string(),
                    issues: *n,
                })
                .collect(),
            runs: s.runs,
            cost_usd: s.usage.cost_usd,
            cost_unknown: s.usage.cost_unknown,
            tokens: s.usage.tokens(),
            created_at: p.created_at,
            updated_at: p.updated_at,
        }
    }
}

/// The workspace's projects, active ones first, each with its progress and spend.
#[utoipa::path(get, path = "/api/v1/projects", tag = "projects",
    responses((status = 200, body = Vec<ProjectView>)))]
pub(super) async fn list(
    State(state): State<AppState>,
    ApiCaller(caller): ApiCaller,
) -> Result<Json<Vec<ProjectView>>> {
    let projects = svc::list(&state, &caller).await?;
    let names = Names::load(&state, caller.ws.id).await?;
    Ok(Json(
        projects
            .iter()
            .map(|p| ProjectView::new(p, &names))
            .collect(),
    ))
}

async fn view(
    state: &AppState,
    caller: &crate::service::Caller,
    key: &crate::domain::ProjectKey,
) -> Result<ProjectView> {
    let summary = svc::get(state, caller, key).await?;
    let names = Names::load(state, caller.ws.id).await?;
    Ok(ProjectView::new(&summary, &names))
}

/// Creates a project (`key` and `name` required). Its repository and check are for owners and admins.
#[utoipa::path(post, path = "/api/v1/projects", tag = "projects", request_body = ProjectInput,
    responses((status = 201, body = ProjectView), (status = 403, body = ErrorBody),
        (status = 409, body = ErrorBody), (status = 422, body = ErrorBody)))]
pub(super) async fn create(
    State(state): State<AppState>,
    ApiCaller(caller): ApiCaller,
    AppJson(input): AppJson<ProjectInput>,
) -> Result<(StatusCode, Json<ProjectView>)> {
    let project = svc::create(&state, &caller, &input).await?;
    Ok((
        StatusCode::CREATED,
        Json(view(&state, &caller, &project.key).await?),
    ))
}

/// One project with its progress and spend (its issues: `GET /api/v1/issues?project=KEY`).
#[utoipa::path(get, path = "/api/v1/projects/{key}", tag = "projects", params(ProjectKeyParam),
    responses((status = 200, body = ProjectView), (status = 404, body = ErrorBody)))]
pub(super) async fn show(
    State(state): State<AppState>,
    ApiCaller(caller): ApiCaller,
    AppPath(key): AppPath<String>,
) -> Result<Json<ProjectView>> {
    Ok(Json(view(&state, &caller, &svc::parse_key(&key)?).await?))
}

/// Edits the fields present in the body.
#[utoipa::path(patch, path = "/api/v1/projects/{key}", tag = "projects", params(ProjectKeyParam),
    request_body = ProjectInput,
    responses((status = 200, body = ProjectView), (status = 403, body = ErrorBody),
        (status = 404, body = ErrorBody), (status = 409, body = ErrorBody), (status = 422, body = ErrorBody)))]
pub(super) async fn update(
    State(state): State<AppState>,
    ApiCaller(caller): ApiCaller,
    AppPath(key): AppPath<String>,
    AppJson(input): AppJson<ProjectInput>,
) -> Result<Json<ProjectView>> {
    let project = svc::update(&state, &caller, &svc::parse_key(&key)?, &input).await?;
    Ok(Json(view(&state, &caller, &project.key).await?))
}

/// Deletes a project (owners and admins); its issues stay, in no project.
#[utoipa::path(delete, path = "/api/v1/projects/{key}", tag = "projects", params(ProjectKeyParam),
    responses((status = 204), (status = 403, body = ErrorBody), (status = 404, body = ErrorBody)))]
pub(super) async fn delete(
    State(state): State<AppState>,
    ApiCaller(caller): ApiCaller,
    AppPath(key): AppPath<String>,
) -> Result<StatusCode> {
    svc::delete(&state, &caller, &svc::parse_key(&key)?).await?;
    Ok(StatusCode::NO_CONTENT)
}
