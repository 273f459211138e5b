//! The planner: `POST /api/v1/issues/{key}/plan` asks an agent for a plan (a plan run); the run sends
//! its proposal to `POST /api/v1/issues/{key}/proposals` with its token; a person approves it (as
//! edited) or discards it under `/api/v1/proposals/{id}`.

use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::{get, post};
use axum::{Json, Router};
use chrono::{DateTime, Utc};
use serde::Serialize;

use super::ErrorBody;
use super::doc::path::{IssueKeyParam, ProposalIdParam};
use super::views::{IssueView, Names, RunView};
use crate::domain::{Issue, Proposal, ProposedIssue};
use crate::http::Result;
use crate::http::extract::{ApiCaller, AppJson, AppPath};
use crate::service::issues as issues_svc;
use crate::service::proposals::{self as svc, ApprovalInput, PlanRequest, ProposalInput};
use crate::state::AppState;

/// `POST /api/v1/issues/{key}/plan` ([`request_plan`]) is routed with the plan's `GET`, in `plans.rs`.
pub(super) fn router() -> Router<AppState> {
    Router::new()
        .route("/api/v1/issues/{key}/proposals", get(list).post(propose))
        .route("/api/v1/proposals/{id}", get(show))
        .route("/api/v1/proposals/{id}/approve", post(approve))
        .route("/api/v1/proposals/{id}/discard", post(discard))
}

/// One proposed sub-issue, and the issue it became once approved.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct ProposedItemView {
    #[serde(flatten)]
    pub item: ProposedIssue,
    /// The issue approval made of it.
    #[schema(example = "MUS-43")]
    pub created: Option<String>,
}

/// A proposed tree of sub-issues.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct ProposalView {
    pub id: uuid::Uuid,
    /// The issue it breaks down.
    #[schema(example = "MUS-42")]
    pub issue: String,
    /// pending, approved or discarded.
    #[schema(example = "pending")]
    pub status: String,
    /// The agent that proposed it.
    pub agent: Option<String>,
    pub run_id: Option<uuid::Uuid>,
    pub summary: String,
    /// Once approved: as approved, blockers first.
    pub items: Vec<ProposedItemView>,
    pub created_at: DateTime<Utc>,
    pub decided_at: Option<DateTime<Utc>>,
    /// Who approved or discarded it.
    pub decided_by: Option<String>,
}

impl ProposalView {
    fn new(p: &Proposal, issue: &Issue, created: &[String], names: &Names) -> Self {
        ProposalView {
            id: p.id.0,
            issue: issue.key.to_string(),
            status: p.status.to_string(),
            agent: p.agent_id.map(|a| {
                names
                    .agents
                    .get(&a)
                    .map_or_else(|| "deleted agent".to_owned(), |n| n.0.clone())
            }),
            run_id: p.run_id.map(|r| r.0),
            summary: p.summary.clone(),
            items: p
                .items
                .iter()
                .enumerate()
                .map(|(i, item)| ProposedItemView {
                    item: item.clone(),
                    created: created.get(i).cloned(),
                })
                .collect(),
            created_at: p.created_at,
            decided_at: p.decided_at,
            decided_by: p.decided_by.and_then(|u| names.users.get(&u).cloned()),
        }
    }
}

/// What an approval made.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct ApprovedView {
    pub proposal: ProposalView,
    /// The sub-issues created, blockers first.
    pub issues: Vec<IssueView>,
}

async fn view(
    state: &AppState,
    caller: &crate::service::Caller,
    p: &Proposal,
) -> Result<ProposalView> {
    let issue = state.store.get_issue_by_id(p.issue_id).await?;
    // A sub-issue deleted since reads as gone.
    let created: Vec<String> = svc::created_issues(state, p)
        .await?
        .iter()
        .map(|i| {
            i.as_ref()
                .map_or_else(|| "deleted".to_owned(), |i| i.key.to_string())
        })
        .collect();
    let names = Names::load(state, caller.ws.id).await?;
    Ok(ProposalView::new(p, &issue, &created, &names))
}

/// Asks an agent to plan the issue: `{"agent": "planner"}` queues a plan run (its issue's blockers do
/// not hold it). The agent reads the code, changes nothing, and proposes sub-issues for review.
#[utoipa::path(post, path = "/api/v1/issues/{key}/plan", tag = "planning",
    request_body = PlanRequest, params(IssueKeyParam),
    responses((status = 201, body = RunView), (status = 403, body = ErrorBody),
        (status = 404, body = ErrorBody), (status = 409, body = ErrorBody), (status = 422, body = ErrorBody)))]
pub(super) async fn request_plan(
    State(state): State<AppState>,
    ApiCaller(caller): ApiCaller,
    AppPath(key): AppPath<String>,
    AppJson(input): AppJson<PlanRequest>,
) -> Result<(StatusCode, Json<RunView>)> {
    let key = issues_svc::parse_key(&key)?;
    let run = svc::request_plan(&state, &caller, &key, &input).await?;
    let names = Names::load(&state, caller.ws.id).await?;
    Ok((
        StatusCode::CREATED,
        Json(RunView::new(&run, &key.to_string(), &names)),
    ))
}

/// An issue's plan proposals, newest first.
#[utoipa::path(get, path = "/api/v1/issues/{key}/proposals", tag = "planning", params(IssueKeyParam),
    responses((status = 200, body = Vec<ProposalView>), (status = 404, body = ErrorBody)))]
pub(super) async fn list(
    State(state): State<AppState>,
    ApiCaller(caller): ApiCaller,
    AppPath(key): AppPath<String>,
) -> Result<Json<Vec<ProposalView>>> {
    let key = issues_svc::parse_key(&key)?;
    let (_, proposals) = svc::of_issue(&state, &caller, &key).await?;
    let mut out = Vec::with_capacity(proposals.len());
    for p in &proposals {
        out.push(view(&state, &caller, p).await?);
    }
    Ok(Json(out))
}

/// A plan run proposes a tree of sub-issues for its own issue, with its run's token: `{"summary": …,
/// "items": [{"ref": "api", "title": …, "description": …, "acceptance": …, "agent": "coder",
/// "blocked_by": ["db"]}]}`. It replaces the issue's pending proposal. Anything else's token is refused
/// (403); a bad tree (unknown ref or agent, a cycle, over 50 items) is a 422 naming the item.
#[utoipa::path(post, path = "/api/v1/issues/{key}/proposals", tag = "planning",
    request_body = ProposalInput, params(IssueKeyParam),
    responses((status = 201, body = ProposalView), (status = 403, body = ErrorBody),
        (status = 404, body = ErrorBody), (status = 409, body = ErrorBody), (status = 422, body = ErrorBody)))]
pub(super) async fn propose(
    State(state): State<AppState>,
    ApiCaller(caller): ApiCaller,
    AppPath(key): AppPath<String>,
    AppJson(input): AppJson<ProposalInput>,
) -> Result<(StatusCode, Json<ProposalView>)> {
    let key = issues_svc::parse_key(&key)?;
    let proposal = svc::propose(&state, &caller, &key, &input).await?;
    Ok((
        StatusCode::CREATED,
        Json(view(&state, &caller, &proposal).await?),
    ))
}

/// A plan proposal.
#[utoipa::path(get, path = "/api/v1/proposals/{id}", tag = "planning", params(ProposalIdParam),
    responses((status = 200, body = ProposalView), (status = 404, body = ErrorBody)))]
pub(super) async fn show(
    State(state): State<AppState>,
    ApiCaller(caller): ApiCaller,
    AppPath(id): AppPath<String>,
) -> Result<Json<ProposalView>> {
    let proposal = svc::get(&state, &caller, svc::parse_id(&id)?).await?;
    Ok(Json(view(&state, &caller, &proposal).await?))
}

/// Approves a pending proposal, as edited in `items` (or as proposed): every sub-issue and dependency
/// is created at once, blockers first, or none is. With `assign` (default true) each is assigned to its
/// agent, which starts once its blockers are done. A decided proposal is a 409.
#[utoipa::path(post, path = "/api/v1/proposals/{id}/approve", tag = "planning",
    request_body = ApprovalInput, params(ProposalIdParam),
    responses((status = 200, body = ApprovedView), (status = 403, body = ErrorBody),
        (status = 404, body = ErrorBody), (status = 409, body = ErrorBody), (status = 422, body = ErrorBody)))]
pub(super) async fn approve(
    State(state): State<AppState>,
    ApiCaller(caller): ApiCaller,
    AppPath(id): AppPath<String>,
    AppJson(input): AppJson<ApprovalInput>,
) -> Result<Json<ApprovedView>> {
    let (proposal, issues) = svc::approve(&state, &caller, svc::parse_id(&id)?, &input).await?;
    let names = Names::load(&state, caller.ws.id).await?;
    let keys: Vec<String> = issues.iter().map(|i| i.key.to_string()).collect();
    let parent = state.store.get_issue_by_id(proposal.issue_id).await?;
    Ok(Json(ApprovedView {
        proposal: ProposalView::new(&proposal, &parent, &keys, &names),
        issues: issues.iter().map(|i| IssueView::new(i, &names)).collect(),
    }))
}

/// Discards a pending proposal; nothing is created. A decided proposal is a 409.
#[utoipa::path(post, path = "/api/v1/proposals/{id}/discard", tag = "planning", params(ProposalIdParam),
    responses((status = 200, body = ProposalView), (status = 403, body = ErrorBody),
        (status = 404, body = ErrorBody), (status = 409, body = ErrorBody)))]
pub(super) async fn discard(
    State(state): State<AppState>,
    ApiCaller(caller): ApiCaller,
    AppPath(id): AppPath<String>,
) -> Result<Json<ProposalView>> {
    let proposal = svc::discard(&state, &caller, svc::parse_id(&id)?).await?;
    Ok(Json(view(&state, &caller, &proposal).await?))
}
