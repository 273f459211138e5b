//! The issue list's JSON routes: `POST /api/v1/issues/batch` (one change to many issues, checked in
//! full before anything is written) and `/api/v1/views` (saved views: a name for a list's query
//! string). A run's token may use neither (`run_route_may` lists neither).

use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::{delete, get, post};
use axum::{Json, Router};
use serde::Serialize;

use super::ErrorBody;
use super::views::{IssueView, Names};
use crate::domain::list::SavedView;
use crate::http::Result;
use crate::http::extract::{ApiCaller, AppJson, AppPath};
use crate::service::lists::{self as svc, BatchInput, BatchOutcome, ViewInput};
use crate::state::AppState;

pub(super) fn router() -> Router<AppState> {
    Router::new()
        .route("/api/v1/issues/batch", post(batch))
        .route("/api/v1/views", get(list).post(create))
        .route("/api/v1/views/{name}", delete(remove))
}

/// What a batch did.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub(super) struct BatchResult {
    /// The issues as they are now, in the order of the keys (empty for a delete).
    issues: Vec<IssueView>,
    /// The keys deleted (empty unless `delete`).
    #[schema(example = json!(["ACM-3"]))]
    deleted: Vec<String>,
}

/// Changes up to 500 issues at once: sets status, assignee, priority or parent, adds or removes labels,
/// or deletes them. Everything is checked first (each key, each value, cycles, the right to delete) and
/// a refusal names what is wrong with nothing changed; then each issue is changed as a single edit
/// would change it (an agent assigned gets a run, a move to done wakes the issues it blocked).
#[utoipa::path(post, path = "/api/v1/issues/batch", tag = "issues", request_body = BatchInput,
    responses((status = 200, body = BatchResult), (status = 403, body = ErrorBody),
        (status = 409, body = ErrorBody), (status = 422, body = ErrorBody)))]
pub(super) async fn batch(
    State(state): State<AppState>,
    ApiCaller(caller): ApiCaller,
    AppJson(input): AppJson<BatchInput>,
) -> Result<Json<BatchResult>> {
    let outcome = svc::batch(&state, &caller, &input).await?;
    let names = Names::load(&state, caller.ws.id).await?;
    Ok(Json(match outcome {
        BatchOutcome::Updated(issues) => BatchResult {
            issues: issues.iter().map(|i| IssueView::new(i, &names)).collect(),
            deleted: Vec::new(),
        },
        BatchOutcome::Deleted(issues) => BatchResult {
            issues: Vec::new(),
            deleted: issues.iter().map(|i| i.key.to_string()).collect(),
        },
    }))
}

/// A saved view.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub(super) struct SavedViewView {
    #[schema(example = "Urgent by assignee")]
    name: String,
    /// The list's query string: filter, sort and grouping.
    #[schema(example = "priority=urgent&group=assignee")]
    query: String,
    /// The list page showing it.
    #[schema(example = "/w/acme/list?priority=urgent&group=assignee")]
    url: String,
    /// Who saved it (null once they are gone).
    created_by: Option<uuid::Uuid>,
    created_at: chrono::DateTime<chrono::Utc>,
}

impl SavedViewView {
    fn new(v: &SavedView, slug: &str) -> Self {
        Self {
            name: v.name.as_str().to_owned(),
            query: v.query.clone(),
            url: format!("/w/{slug}/list?{}", v.query),
            created_by: v.created_by.map(|u| u.0),
            created_at: v.created_at,
        }
    }
}

/// The saved views.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub(super) struct SavedViews {
    views: Vec<SavedViewView>,
}

/// The workspace's saved views, by name.
#[utoipa::path(get, path = "/api/v1/views", tag = "views",
    responses((status = 200, body = SavedViews)))]
pub(super) async fn list(
    State(state): State<AppState>,
    ApiCaller(caller): ApiCaller,
) -> Result<Json<SavedViews>> {
    let views = svc::views(&state, &caller).await?;
    let slug = caller.ws.slug.to_string();
    Ok(Json(SavedViews {
        views: views.iter().map(|v| SavedViewView::new(v, &slug)).collect(),
    }))
}

/// Saves a view of the issue list under a name unique in the workspace.
#[utoipa::path(post, path = "/api/v1/views", tag = "views", request_body = ViewInput,
    responses((status = 201, body = SavedViewView), (status = 409, body = ErrorBody),
        (status = 422, body = ErrorBody)))]
pub(super) async fn create(
    State(state): State<AppState>,
    ApiCaller(caller): ApiCaller,
    AppJson(input): AppJson<ViewInput>,
) -> Result<(StatusCode, Json<SavedViewView>)> {
    let view = svc::save_view(&state, &caller, &input).await?;
    Ok((
        StatusCode::CREATED,
        Json(SavedViewView::new(&view, caller.ws.slug.as_str())),
    ))
}

/// Deletes a saved view (its creator, owners and admins).
#[utoipa::path(delete, path = "/api/v1/views/{name}", tag = "views",
    params(("name" = String, Path, description = "The view's name", max_length = 80, pattern = r"\S")),
    responses((status = 204), (status = 403, body = ErrorBody), (status = 404, body = ErrorBody)))]
pub(super) async fn remove(
    State(state): State<AppState>,
    ApiCaller(caller): ApiCaller,
    AppPath(name): AppPath<String>,
) -> Result<StatusCode> {
    svc::delete_view(&state, &caller, &name).await?;
    Ok(StatusCode::NO_CONTENT)
}
