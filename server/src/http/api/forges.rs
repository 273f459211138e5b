//! `/api/v1/forges` (owners and admins): the workspace's forge connection; `/api/v1/pull-requests`, and
//! opening one from a run or an issue (members); `/hooks/{kind}/{connection}`: what forges send.

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::routing::{get, post};
use axum::{Json, Router};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use super::ErrorBody;
use super::doc::path::{IssueKeyParam, RunIdParam};
use crate::domain::{ForgeConnection, ForgeKind, PullRequest};
use crate::http::Result;
use crate::http::extract::{ApiCaller, AppJson, AppPath, AppQuery};
use crate::service::forges::{self as svc, ForgeInput};
use crate::state::AppState;

pub(super) fn router() -> Router<AppState> {
    Router::new()
        .route("/api/v1/forges", get(list).post(connect))
        .route(
            "/api/v1/forges/{id}",
            get(show).patch(update).delete(remove),
        )
        .route("/api/v1/forges/{id}/test", post(test))
        .route("/api/v1/pull-requests", get(list_pulls))
        .route("/api/v1/pull-requests/{id}", get(show_pull))
        .route("/api/v1/runs/{id}/pull-request", post(open_for_run))
        .route("/api/v1/issues/{key}/pull-request", post(open_for_issue))
}

/// The webhook route: outside `/api/v1` (no token, no session: the connection's secret signs it).
pub fn hooks() -> Router<AppState> {
    Router::new().route("/hooks/{kind}/{connection}", post(hook))
}

/// A forge connection (never its token or webhook secret).
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct ForgeView {
    pub id: uuid::Uuid,
    #[schema(value_type = crate::domain::ForgeKind, example = "github")]
    pub kind: String,
    pub api_url: String,
    #[schema(example = "acme/app")]
    pub repo: String,
    /// Open a draft pull request when an agent delivers.
    pub auto_open: bool,
    /// Automatic rounds per pull request.
    pub max_rounds: i32,
    /// Where the issue goes when its pull request is closed unmerged.
    #[schema(value_type = crate::domain::OnClose, example = "todo")]
    pub on_close: String,
    /// Where the forge posts its webhooks, on this server.
    #[schema(example = "/hooks/github/0190f3c4-…")]
    pub webhook_path: String,
    pub created_at: DateTime<Utc>,
}

impl From<&ForgeConnection> for ForgeView {
    fn from(c: &ForgeConnection) -> Self {
        ForgeView {
            id: c.id.0,
            kind: c.kind.to_string(),
            api_url: c.api_url.clone(),
            repo: c.repo.clone(),
            auto_open: c.auto_open,
            max_rounds: c.max_rounds,
            on_close: c.on_close.to_string(),
            webhook_path: svc::webhook_path(c),
            created_at: c.created_at,
        }
    }
}

/// What a token can do on its project.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct AccessView {
    /// The URL the forge clones the project from (the workspace's repository).
    pub clone_url: String,
    pub default_branch: String,
    pub can_push: bool,
    pub can_open_prs: bool,
    pub can_read_checks: bool,
    pub can_comment: bool,
    /// What a person should know, in sentences.
    pub notes: Vec<String>,
}

impl From<&crate::forge::Access> for AccessView {
    fn from(a: &crate::forge::Access) -> Self {
        AccessView {
            clone_url: a.clone_url.clone(),
            default_branch: a.default_branch.clone(),
            can_push: a.can_push,
            can_open_prs: a.can_open_prs,
            can_read_checks: a.can_read_checks,
            can_comment: a.can_comment,
            notes: a.notes.clone(),
        }
    }
}

/// A connection just made, with its webhook secret (shown in this response only).
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct ConnectedView {
    pub connection: ForgeView,
    pub access: AccessView,
    /// The secret to give the forge's webhook settings.
    pub webhook_secret: String,
}

/// A check on a pull request's head.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct CheckView {
    pub name: String,
    /// `pending`, `success` or `failure`.
    #[schema(value_type = crate::domain::CheckState)]
    pub state: String,
    pub url: Option<String>,
}

/// A reviewer's latest verdict.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct ReviewView {
    pub author: String,
    /// `approved`, `changes_requested` or `commented`.
    #[schema(value_type = crate::domain::ReviewVerdict)]
    pub verdict: String,
}

/// A pull request (GitLab: merge request) Muster opened for an agent's work.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct PullRequestView {
    pub id: uuid::Uuid,
    pub issue_id: uuid::Uuid,
    pub agent_id: uuid::Uuid,
    /// The run whose work opened it.
    pub run_id: uuid::Uuid,
    /// Its number on the forge.
    pub number: i64,
    pub url: String,
    pub branch: String,
    pub base: String,
    /// `open`, `merged` or `closed`.
    #[schema(value_type = crate::domain::PrState)]
    pub state: String,
    pub draft: bool,
    pub head_sha: String,
    /// Whether the forge says it can merge (`null`: not said yet).
    pub mergeable: Option<bool>,
    pub checks: Vec<CheckView>,
    pub reviews: Vec<ReviewView>,
    /// Automatic rounds it has had.
    pub rounds: i32,
    /// The pull request that took the work that came after this one was merged or closed.
    pub superseded_by: Option<uuid::Uuid>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

impl From<&PullRequest> for PullRequestView {
    fn from(p: &PullRequest) -> Self {
        PullRequestView {
            id: p.id.0,
            issue_id: p.issue_id.0,
            agent_id: p.agent_id.0,
            run_id: p.run_id.0,
            number: p.number,
            url: p.url.clone(),
            branch: p.branch.clone(),
            base: p.base.clone(),
            state: p.state.to_string(),
            draft: p.draft,
            head_sha: p.head_sha.clone(),
            mergeable: p.mergeable,
            checks: p
                .checks
                .iter()
                .map(|c| CheckView {
                    name: c.name.clone(),
                    state: c.state.to_string(),
                    url: c.url.clone(),
                })
                .collect(),
            reviews: p
                .reviews
                .iter()
                .map(|r| ReviewView {
                    author: r.author.clone(),
                    verdict: r.verdict.to_string(),
                })
                .collect(),
            rounds: p.rounds,
            superseded_by: p.superseded_by.map(|id| id.0),
            created_at: p.created_at,
            updated_at: p.updated_at,
        }
    }
}

/// `{id}`: a forge connection's or pull request's id.
#[derive(utoipa::IntoParams)]
#[into_params(parameter_in = Path)]
#[allow(dead_code)] // Only its OpenAPI description is used; the handlers parse the raw segment.
pub(super) struct IdParam {
    /// Id (UUID).
    id: uuid::Uuid,
}

fn parse_id<T: std::str::FromStr>(raw: &str) -> Result<T> {
    raw.parse()
        .map_err(|_| crate::http::Error::from(crate::service::Error::NotFound))
}

/// The workspace's forge connections (owners and admins).
#[utoipa::path(get, path = "/api/v1/forges", tag = "forges",
    responses((status = 200, body = [ForgeView])))]
pub(super) async fn list(
    State(state): State<AppState>,
    ApiCaller(caller): ApiCaller,
) -> Result<Json<Vec<ForgeView>>> {
    let all = svc::list(&state, &caller).await?;
    Ok(Json(all.iter().map(ForgeView::from).collect()))
}

/// Connects the workspace's repository to its forge project (owners and admins). The token is tried
/// first; the project's clone URL must be the workspace's repository (a workspace without one gets it).
/// The webhook secret is in this response only.
#[utoipa::path(post, path = "/api/v1/forges", tag = "forges", request_body = ForgeInput,
    responses((status = 201, body = ConnectedView), (status = 409, body = ErrorBody), (status = 422, body = ErrorBody)))]
pub(super) async fn connect(
    State(state): State<AppState>,
    ApiCaller(caller): ApiCaller,
    AppJson(input): AppJson<ForgeInput>,
) -> Result<(StatusCode, Json<ConnectedView>)> {
    let made = svc::connect(&state, &caller, &input).await?;
    Ok((
        StatusCode::CREATED,
        Json(ConnectedView {
            connection: ForgeView::from(&made.connection),
            access: AccessView::from(&made.access),
            webhook_secret: made.webhook_secret,
        }),
    ))
}

/// One forge connection (owners and admins).
#[utoipa::path(get, path = "/api/v1/forges/{id}", tag = "forges", params(IdParam),
    responses((status = 200, body = ForgeView), (status = 404, body = ErrorBody)))]
pub(super) async fn show(
    State(state): State<AppState>,
    ApiCaller(caller): ApiCaller,
    AppPath(id): AppPath<String>,
) -> Result<Json<ForgeView>> {
    let conn = svc::get(&state, &caller, parse_id(&id)?).await?;
    Ok(Json(ForgeView::from(&conn)))
}

/// Changes a connection's settings (`auto_open`, `max_rounds`, `on_close`; owners and admins).
#[utoipa::path(patch, path = "/api/v1/forges/{id}", tag = "forges", params(IdParam), request_body = ForgeInput,
    responses((status = 200, body = ForgeView), (status = 404, body = ErrorBody), (status = 422, body = ErrorBody)))]
pub(super) async fn update(
    State(state): State<AppState>,
    ApiCaller(caller): ApiCaller,
    AppPath(id): AppPath<String>,
    AppJson(input): AppJson<ForgeInput>,
) -> Result<Json<ForgeView>> {
    let conn = svc::update(&state, &caller, parse_id(&id)?, &input).await?;
    Ok(Json(ForgeView::from(&conn)))
}

/// Removes a connection (owners and admins); its pull requests stay on the forge.
#[utoipa::path(delete, path = "/api/v1/forges/{id}", tag = "forges", params(IdParam),
    responses((status = 204), (status = 404, body = ErrorBody)))]
pub(super) async fn remove(
    State(state): State<AppState>,
    ApiCaller(caller): ApiCaller,
    AppPath(id): AppPath<String>,
) -> Result<StatusCode> {
    svc::remove(&state, &caller, parse_id(&id)?).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// What the connection's token can do now: push, open pull requests, read checks, comment.
#[utoipa::path(post, path = "/api/v1/forges/{id}/test", tag = "forges", params(IdParam),
    responses((status = 200, body = AccessView), (status = 403, body = ErrorBody), (status = 404, body = ErrorBody)))]
pub(super) async fn test(
    State(state): State<AppState>,
    ApiCaller(caller): ApiCaller,
    AppPath(id): AppPath<String>,
) -> Result<Json<AccessView>> {
    let access = svc::test(&state, &caller, parse_id(&id)?).await?;
    Ok(Json(AccessView::from(&access)))
}

/// `?issue=MUS-42`: one issue's pull requests.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub(super) struct PullFilter {
    /// An issue key.
    #[param(pattern = r"^[A-Za-z]{2,10}-0*[1-9][0-9]{0,17}$", example = "MUS-42")]
    issue: Option<String>,
}

/// The workspace's pull requests (or one issue's), newest first.
#[utoipa::path(get, path = "/api/v1/pull-requests", tag = "forges", params(PullFilter),
    responses((status = 200, body = [PullRequestView]), (status = 404, body = ErrorBody)))]
pub(super) async fn list_pulls(
    State(state): State<AppState>,
    ApiCaller(caller): ApiCaller,
    AppQuery(filter): AppQuery<PullFilter>,
) -> Result<Json<Vec<PullRequestView>>> {
    let key = filter
        .issue
        .as_deref()
        .map(crate::service::issues::parse_key)
        .transpose()?;
    let all = svc::list_pulls(&state, &caller, key.as_ref()).await?;
    Ok(Json(all.iter().map(PullRequestView::from).collect()))
}

/// One pull request.
#[utoipa::path(get, path = "/api/v1/pull-requests/{id}", tag = "forges", params(IdParam),
    responses((status = 200, body = PullRequestView), (status = 404, body = ErrorBody)))]
pub(super) async fn show_pull(
    State(state): State<AppState>,
    ApiCaller(caller): ApiCaller,
    AppPath(id): AppPath<String>,
) -> Result<Json<PullRequestView>> {
    let pr = svc::get_pull(&state, &caller, parse_id(&id)?).await?;
    Ok(Json(PullRequestView::from(&pr)))
}

/// How to open a pull request.
#[derive(Debug, Default, Deserialize, utoipa::ToSchema)]
pub(super) struct OpenInput {
    /// Open it as a draft (default true).
    #[serde(default)]
    draft: Option<bool>,
}

/// Opens the pull request for a run's delivered work (or answers the one already open for its branch).
#[utoipa::path(post, path = "/api/v1/runs/{id}/pull-request", tag = "forges", params(RunIdParam),
    request_body = OpenInput,
    responses((status = 200, body = PullRequestView), (status = 404, body = ErrorBody), (status = 409, body = ErrorBody)))]
pub(super) async fn open_for_run(
    State(state): State<AppState>,
    ApiCaller(caller): ApiCaller,
    AppPath(id): AppPath<String>,
    AppJson(input): AppJson<OpenInput>,
) -> Result<Json<PullRequestView>> {
    let from = svc::From::Run(parse_id(&id)?);
    let pr = svc::open(&state, &caller, from, input.draft.unwrap_or(true)).await?;
    Ok(Json(PullRequestView::from(&pr)))
}

/// Opens the pull request for an issue's latest delivered work.
#[utoipa::path(post, path = "/api/v1/issues/{key}/pull-request", tag = "forges", params(IssueKeyParam),
    request_body = OpenInput,
    responses((status = 200, body = PullRequestView), (status = 404, body = ErrorBody), (status = 409, body = ErrorBody)))]
pub(super) async fn open_for_issue(
    State(state): State<AppState>,
    ApiCaller(caller): ApiCaller,
    AppPath(key): AppPath<String>,
    AppJson(input): AppJson<OpenInput>,
) -> Result<Json<PullRequestView>> {
    let key = crate::service::issues::parse_key(&key)?;
    let pr = svc::open(
        &state,
        &caller,
        svc::From::Issue(&key),
        input.draft.unwrap_or(true),
    )
    .await?;
    Ok(Json(PullRequestView::from(&pr)))
}

/// What the hook did.
#[derive(Debug, Serialize)]
struct HookAnswer {
    done: String,
}

/// A forge's webhook delivery: 202 when taken; 401 for a bad or missing signature, 403 for another
/// repository's delivery, 409 for a replay, 404 for an unknown connection.
async fn hook(
    State(state): State<AppState>,
    AppPath((kind, connection)): AppPath<(String, String)>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<(StatusCode, Json<HookAnswer>)> {
    let kind: ForgeKind = kind
        .parse()
        .map_err(|_| crate::http::Error::from(crate::service::Error::NotFound))?;
    let id = parse_id(&connection)?;
    match svc::receive_hook(&state, kind, id, &headers, &body).await {
        Ok(done) => Ok((StatusCode::ACCEPTED, Json(HookAnswer { done }))),
        Err(crate::service::Error::Refused {
            field: "signature",
            message,
        }) => Err(crate::http::Error::Rejected(
            StatusCode::UNAUTHORIZED,
            "signature",
            message,
        )),
        Err(e) => Err(e.into()),
    }
}
