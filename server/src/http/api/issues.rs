//! `/api/v1/issues`: issues and their comments.

use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::{Deserialize, Serialize};

use super::ErrorBody;
use super::doc::path::IssueKeyParam;
use super::paging::{self, DEFAULT_LIMIT};
use super::views::{CommentView, IssueDetail, IssueView, Names};
use crate::domain::list::{IssueGrouping, IssueSort, ListCursor, SortDir};
use crate::domain::{CommentId, IssueCursor, IssueFilter, IssueStatus, Label, Priority};
use crate::http::Result;
use crate::http::extract::{ApiCaller, AppJson, AppPath, AppQuery};
use crate::service::comments as comments_svc;
use crate::service::issues::{self as svc, IssueInput};
use crate::state::AppState;

pub(super) fn router() -> Router<AppState> {
    Router::new()
        .route("/api/v1/issues", get(list).post(create))
        .route(
            "/api/v1/issues/{key}",
            get(show).patch(update).delete(delete),
        )
        .route("/api/v1/issues/{key}/move", post(move_issue))
        .route(
            "/api/v1/issues/{key}/comments",
            get(list_comments).post(comment),
        )
        .route(
            "/api/v1/issues/{key}/comments/{id}",
            axum::routing::patch(edit_comment).delete(delete_comment),
        )
}

/// Filters for the issue list.
#[derive(Debug, Default, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub(super) struct ListQuery {
    /// Only these statuses, comma-separated.
    #[param(value_type = Option<Vec<IssueStatus>>, style = Form, explode = false)]
    status: Option<String>,
    /// Agent name, member email or name.
    assignee: Option<String>,
    /// Only issues with this label.
    #[param(max_length = 50, pattern = "^[^,]*$")]
    label: Option<String>,
    #[param(value_type = Option<Priority>)]
    priority: Option<String>,
    /// The start of an issue key (`ACM-1` finds ACM-1 and ACM-12), or text in the title or body.
    q: Option<String>,
    /// Only issues of this project (its key).
    #[param(example = "WEB")]
    project: Option<String>,
    /// Issues per page, 1 to 200 (default 50).
    #[param(value_type = Option<i64>, minimum = 1, maximum = 200)]
    limit: Option<String>,
    /// Where the previous page ended: its `next_after`, as given (opaque; empty means the first page).
    /// A cursor is read only with the sort, direction and grouping it was made for.
    #[param(
        pattern = r"^((backlog|todo|in_progress|in_review|done|blocked|cancelled):-?[0-9]{1,18}:[0-9]{1,18}|[0-9]{1,18}(\.[0-9a-f-]{36})?:[0-9]{1,18}:.*)?$"
    )]
    after: Option<String>,
    /// Sort by `updated`, `created`, `priority`, `status`, `title` or `key` (the list view's order);
    /// without `sort`, `dir` and `group`, by board column then position.
    #[param(value_type = Option<IssueSort>)]
    sort: Option<String>,
    /// `asc` or `desc` (the sort's natural direction when left out: newest first for times).
    #[param(value_type = Option<SortDir>)]
    dir: Option<String>,
    /// Group by `status`, `assignee`, `priority` or `parent` first (`none`: no grouping).
    #[param(value_type = Option<IssueGrouping>)]
    group: Option<String>,
}

/// A page of the issue list.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub(super) struct IssuePage {
    issues: Vec<IssueView>,
    /// Pass as `after` for the next page; null on the last page.
    next_after: Option<String>,
}

/// Lists issues by column then position (or, with `sort`, `dir` or `group`, in the list view's order), a
/// page at a time: follow `next_after` until it is null.
#[utoipa::path(get, path = "/api/v1/issues", tag = "issues", params(ListQuery),
    responses((status = 200, body = IssuePage), (status = 400, body = ErrorBody),
        (status = 422, body = ErrorBody)))]
pub(super) async fn list(
    State(state): State<AppState>,
    ApiCaller(caller): ApiCaller,
    AppQuery(q): AppQuery<ListQuery>,
) -> Result<Json<IssuePage>> {
    let limit = paging::limit(q.limit.as_deref())?;
    let after = q.after.as_deref().filter(|a| !a.trim().is_empty());
    let listed = q.sort.is_some() || q.dir.is_some() || q.group.is_some();
    let mut filter = IssueFilter {
        after: after
            .filter(|_| !listed)
            .map(|a| a.parse::<IssueCursor>())
            .transpose()
            .map_err(|e| paging::bad_request("after", e.message))?,
        limit: Some(limit + 1),
        ..IssueFilter::default()
    };
    if let Some(statuses) = q.status.as_deref().filter(|s| !s.is_empty()) {
        filter.statuses = statuses
            .split(',')
            .map(str::parse::<IssueStatus>)
            .collect::<Result<_, _>>()?;
    }
    if let Some(raw) = q.assignee.as_deref() {
        filter.assignee = svc::resolve_assignee(&state, &caller, raw).await??;
    }
    filter.label = q
        .label
        .as_deref()
        .filter(|l| !l.is_empty())
        .map(Label::parse)
        .transpose()?;
    filter.priority = q
        .priority
        .as_deref()
        .filter(|p| !p.is_empty())
        .map(str::parse::<Priority>)
        .transpose()?;
    filter.text = q.q;
    if let Some(raw) = q.project.as_deref().filter(|p| !p.trim().is_empty()) {
        filter.project = crate::service::projects::typed_project(&state, &caller, raw).await??;
    }
    if q.sort.is_some() || q.dir.is_some() || q.group.is_some() {
        // The list view's order, paged by its own cursor.
        let params = crate::service::lists::ListParams {
            sort: q.sort.unwrap_or_default(),
            dir: q.dir.unwrap_or_default(),
            group: q.group.unwrap_or_default(),
            ..Default::default()
        };
        let order = params.order()?;
        let cursor = after
            .map(|a| ListCursor::parse(a, &order))
            .transpose()
            .map_err(|e| paging::bad_request("after", e.message))?;
        let mut issues = state
            .store
            .list_issue_page(caller.ws.id, &filter, &order, cursor.as_ref(), limit + 1)
            .await?;
        let next_after = paging::cut(&mut issues, limit, |i| {
            ListCursor::after(&order, i).to_string()
        });
        let names = Names::load(&state, caller.ws.id).await?;
        return Ok(Json(IssuePage {
            issues: issues.iter().map(|i| IssueView::new(i, &names)).collect(),
            next_after,
        }));
    }
    let mut issues = state.store.list_issues(caller.ws.id, &filter).await?;
    let next_after = paging::cut(&mut issues, limit, |i| IssueCursor::after(i).to_string());
    let names = Names::load(&state, caller.ws.id).await?;
    Ok(Json(IssuePage {
        issues: issues.iter().map(|i| IssueView::new(i, &names)).collect(),
        next_after,
    }))
}

/// Creates an issue.
#[utoipa::path(post, path = "/api/v1/issues", tag = "issues", request_body = IssueInput,
    responses((status = 201, body = IssueView), (status = 422, body = ErrorBody)))]
pub(super) async fn create(
    State(state): State<AppState>,
    ApiCaller(caller): ApiCaller,
    AppJson(input): AppJson<IssueInput>,
) -> Result<(StatusCode, Json<IssueView>)> {
    let issue = svc::create(&state, &caller, &input).await?;
    let names = Names::load(&state, caller.ws.id).await?;
    Ok((StatusCode::CREATED, Json(IssueView::new(&issue, &names))))
}

/// One issue with its first page of comments (see `comments_next_after`) and its activity.
#[utoipa::path(get, path = "/api/v1/issues/{key}", tag = "issues",
    params(IssueKeyParam),
    responses((status = 200, body = IssueDetail), (status = 404, body = ErrorBody)))]
pub(super) async fn show(
    State(state): State<AppState>,
    ApiCaller(caller): ApiCaller,
    AppPath(key): AppPath<String>,
) -> Result<Json<IssueDetail>> {
    let issue = state
        .store
        .get_issue(caller.ws.id, &svc::parse_key(&key)?)
        .await?;
    let mut comments = state
        .store
        .list_comments_page(issue.id, None, DEFAULT_LIMIT + 1)
        .await?;
    let next = paging::cut(&mut comments, DEFAULT_LIMIT, |c| c.id.to_string());
    let activity = state.store.list_activity(issue.id).await?;
    let names = Names::load(&state, caller.ws.id).await?;
    let mut detail = IssueDetail::new(&issue, &comments, &activity, &names);
    detail.comments_next_after = next;
    let runs = state.store.list_runs_for_issue(issue.id).await?;
    detail.lines = super::views::WorkLineView::of(&runs, &names);
    let plan = crate::service::plans::plan_of(&state, &issue).await?;
    detail.plan = super::views::PlanView::new(&plan, &names);
    Ok(Json(detail))
}

/// Edits the fields present in the body.
#[utoipa::path(patch, path = "/api/v1/issues/{key}", tag = "issues", request_body = IssueInput,
    params(IssueKeyParam),
    responses((status = 200, body = IssueView), (status = 404, body = ErrorBody), (status = 422, body = ErrorBody)))]
pub(super) async fn update(
    State(state): State<AppState>,
    ApiCaller(caller): ApiCaller,
    AppPath(key): AppPath<String>,
    AppJson(input): AppJson<IssueInput>,
) -> Result<Json<IssueView>> {
    let issue = svc::update(&state, &caller, &svc::parse_key(&key)?, &input).await?;
    let names = Names::load(&state, caller.ws.id).await?;
    Ok(Json(IssueView::new(&issue, &names)))
}

/// Deletes an issue with its comments, activity and runs (owners, admins and its creator). Its live runs
/// are cancelled first; 409 if one has not stopped in time.
#[utoipa::path(delete, path = "/api/v1/issues/{key}", tag = "issues", params(IssueKeyParam),
    responses((status = 204), (status = 403, body = ErrorBody), (status = 404, body = ErrorBody),
        (status = 409, body = ErrorBody)))]
pub(super) async fn delete(
    State(state): State<AppState>,
    ApiCaller(caller): ApiCaller,
    AppPath(key): AppPath<String>,
) -> Result<StatusCode> {
    svc::delete(&state, &caller, &svc::parse_key(&key)?).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Where to move an issue.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
pub(super) struct MoveInput {
    #[schema(value_type = IssueStatus)]
    status: String,
    /// 0-based position in the target column; the end when absent or past the end.
    #[serde(default, deserialize_with = "crate::http::extract::whole_number")]
    #[schema(format = Int64, minimum = 0, maximum = 4294967295_u32)]
    index: Option<u32>,
}

/// Moves an issue to a column and position.
#[utoipa::path(post, path = "/api/v1/issues/{key}/move", tag = "issues", request_body = MoveInput,
    params(IssueKeyParam),
    responses((status = 200, body = IssueView), (status = 404, body = ErrorBody), (status = 422, body = ErrorBody)))]
pub(super) async fn move_issue(
    State(state): State<AppState>,
    ApiCaller(caller): ApiCaller,
    AppPath(key): AppPath<String>,
    AppJson(input): AppJson<MoveInput>,
) -> Result<Json<IssueView>> {
    let issue = svc::move_to(
        &state,
        &caller,
        &svc::parse_key(&key)?,
        &input.status,
        input.index.map(|i| i as usize),
    )
    .await?;
    let names = Names::load(&state, caller.ws.id).await?;
    Ok(Json(IssueView::new(&issue, &names)))
}

/// Where a page of comments starts and how long it is.
#[derive(Debug, Default, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub(super) struct CommentsQuery {
    /// Comments per page, 1 to 200 (default 50).
    #[param(value_type = Option<i64>, minimum = 1, maximum = 200)]
    limit: Option<String>,
    /// The id of the last comment you have (a page's `next_after`); the page starts after it.
    #[param(value_type = Option<uuid::Uuid>)]
    after: Option<String>,
}

/// A page of an issue's comments.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub(super) struct CommentPage {
    comments: Vec<CommentView>,
    /// Pass as `after` for the next page; null on the last page.
    next_after: Option<String>,
}

/// An issue's comments, oldest first, a page at a time: follow `next_after` until it is null.
#[utoipa::path(get, path = "/api/v1/issues/{key}/comments", tag = "issues",
    params(IssueKeyParam, CommentsQuery),
    responses((status = 200, body = CommentPage), (status = 400, body = ErrorBody),
        (status = 404, body = ErrorBody)))]
pub(super) async fn list_comments(
    State(state): State<AppState>,
    ApiCaller(caller): ApiCaller,
    AppPath(key): AppPath<String>,
    AppQuery(q): AppQuery<CommentsQuery>,
) -> Result<Json<CommentPage>> {
    let limit = paging::limit(q.limit.as_deref())?;
    let after = match q.after.as_deref().map(str::trim).filter(|a| !a.is_empty()) {
        Some(raw) => Some(raw.parse::<CommentId>().map_err(|_| {
            paging::bad_request(
                "after",
                format!("{raw:?} is not a comment id (pass the `next_after` of the previous page)"),
            )
        })?),
        None => None,
    };
    let issue = state
        .store
        .get_issue(caller.ws.id, &svc::parse_key(&key)?)
        .await?;
    let page = state
        .store
        .list_comments_page(issue.id, after, limit + 1)
        .await;
    let mut comments = match (page, after) {
        (Err(crate::store::Error::NotFound), Some(id)) => {
            let message = format!("{id} is not a comment on {}", issue.key);
            return Err(paging::bad_request("after", message));
        }
        (page, _) => page?,
    };
    let next_after = paging::cut(&mut comments, limit, |c| c.id.to_string());
    let names = Names::load(&state, caller.ws.id).await?;
    Ok(Json(CommentPage {
        comments: comments
            .iter()
            .map(|c| CommentView::new(c, &names))
            .collect(),
        next_after,
    }))
}

/// A comment's text, new or edited.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
pub(super) struct CommentInput {
    /// Markdown, not blank, at most 1 MiB.
    #[schema(min_length = 1, pattern = r"\S")]
    body: String,
}

/// Comments on an issue.
#[utoipa::path(post, path = "/api/v1/issues/{key}/comments", tag = "issues", request_body = CommentInput,
    params(IssueKeyParam),
    responses((status = 201, body = CommentView), (status = 404, body = ErrorBody), (status = 422, body = ErrorBody)))]
pub(super) async fn comment(
    State(state): State<AppState>,
    ApiCaller(caller): ApiCaller,
    AppPath(key): AppPath<String>,
    AppJson(input): AppJson<CommentInput>,
) -> Result<(StatusCode, Json<CommentView>)> {
    let comment = svc::comment(&state, &caller, &svc::parse_key(&key)?, &input.body).await?;
    let names = Names::load(&state, caller.ws.id).await?;
    Ok((
        StatusCode::CREATED,
        Json(CommentView::new(&comment, &names)),
    ))
}

/// `{key}` and `{id}`: an issue and one of its comments.
#[derive(utoipa::IntoParams)]
#[into_params(parameter_in = Path)]
#[allow(dead_code)] // Only its OpenAPI description is used; the handlers parse the raw segments.
pub(super) struct CommentPathParams {
    /// Issue key, e.g. MUS-42 (the prefix is case-insensitive).
    #[param(pattern = r"^[A-Za-z]{2,10}-0*[1-9][0-9]{0,17}$", example = "MUS-42")]
    key: String,
    /// Comment id (UUID).
    id: uuid::Uuid,
}

/// Replaces the text of one of your own comments (an agent's run token: only its own); it then carries
/// `edited_at`.
#[utoipa::path(patch, path = "/api/v1/issues/{key}/comments/{id}", tag = "issues",
    request_body = CommentInput, params(CommentPathParams),
    responses((status = 200, body = CommentView), (status = 403, body = ErrorBody),
        (status = 404, body = ErrorBody), (status = 422, body = ErrorBody)))]
pub(super) async fn edit_comment(
    State(state): State<AppState>,
    ApiCaller(caller): ApiCaller,
    AppPath((key, id)): AppPath<(String, String)>,
    AppJson(input): AppJson<CommentInput>,
) -> Result<Json<CommentView>> {
    let key = svc::parse_key(&key)?;
    let id = comments_svc::parse_id(&id, &key)?;
    let comment = comments_svc::edit(&state, &caller, &key, id, &input.body).await?;
    let names = Names::load(&state, caller.ws.id).await?;
    Ok(Json(CommentView::new(&comment, &names)))
}

/// Deletes a comment: your own, or any as an owner or admin (an agent's run token: only its own).
#[utoipa::path(delete, path = "/api/v1/issues/{key}/comments/{id}", tag = "issues",
    params(CommentPathParams),
    responses((status = 204), (status = 403, body = ErrorBody), (status = 404, body = ErrorBody)))]
pub(super) async fn delete_comment(
    State(state): State<AppState>,
    ApiCaller(caller): ApiCaller,
    AppPath((key, id)): AppPath<(String, String)>,
) -> Result<StatusCode> {
    let key = svc::parse_key(&key)?;
    let id = comments_svc::parse_id(&id, &key)?;
    comments_svc::delete(&state, &caller, &key, id).await?;
    Ok(StatusCode::NO_CONTENT)
}
