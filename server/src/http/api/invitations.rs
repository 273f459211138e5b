//! `/api/v1/invitations`: the caller's own invitations, accepted or declined by them alone; and
//! `/api/v1/members/invitations`: a workspace's pending invitations, for its owners and admins.

use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::{delete, get, post};
use axum::{Json, Router};
use serde::Serialize;

use super::ErrorBody;
use super::doc::path::InvitationIdParam;
use crate::http::Result;
use crate::http::extract::{ApiCaller, ApiUser, AppPath};
use crate::service::invitations::{self as svc, InvitationView};
use crate::state::AppState;

pub(super) fn router() -> Router<AppState> {
    Router::new()
        .route("/api/v1/invitations", get(mine))
        .route("/api/v1/invitations/{id}/accept", post(accept))
        .route("/api/v1/invitations/{id}/decline", post(decline))
        .route("/api/v1/members/invitations", get(list))
        .route("/api/v1/members/invitations/{id}", delete(revoke))
}

/// The invitations waiting for the caller's answer, in any workspace.
#[utoipa::path(get, path = "/api/v1/invitations", tag = "invitations",
    responses((status = 200, body = [InvitationView]), (status = 401, body = ErrorBody), (status = 403, body = ErrorBody)))]
pub(super) async fn mine(
    State(state): State<AppState>,
    ApiUser(user): ApiUser,
) -> Result<Json<Vec<InvitationView>>> {
    let list = svc::mine(&state, &user).await?;
    Ok(Json(list.iter().map(InvitationView::from).collect()))
}

/// The membership an accepted invitation created.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub(super) struct JoinedView {
    /// The workspace's slug.
    workspace: String,
    role: String,
    joined_at: chrono::DateTime<chrono::Utc>,
}

/// Accepts one of the caller's invitations: only now is the caller a member. Another person's
/// invitation, or an expired one, is 404.
#[utoipa::path(post, path = "/api/v1/invitations/{id}/accept", tag = "invitations", params(InvitationIdParam),
    responses((status = 200, body = JoinedView), (status = 401, body = ErrorBody), (status = 403, body = ErrorBody), (status = 404, body = ErrorBody)))]
pub(super) async fn accept(
    State(state): State<AppState>,
    ApiUser(user): ApiUser,
    AppPath(id): AppPath<String>,
) -> Result<Json<JoinedView>> {
    let member = svc::accept(&state, &user, &id).await?;
    let ws = state.store.get_workspace(member.workspace_id).await?;
    Ok(Json(JoinedView {
        workspace: ws.slug.to_string(),
        role: member.role.to_string(),
        joined_at: member.joined_at,
    }))
}

/// Declines one of the caller's invitations.
#[utoipa::path(post, path = "/api/v1/invitations/{id}/decline", tag = "invitations", params(InvitationIdParam),
    responses((status = 204), (status = 401, body = ErrorBody), (status = 403, body = ErrorBody), (status = 404, body = ErrorBody)))]
pub(super) async fn decline(
    State(state): State<AppState>,
    ApiUser(user): ApiUser,
    AppPath(id): AppPath<String>,
) -> Result<StatusCode> {
    svc::decline(&state, &user, &id).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// The workspace's pending invitations (owners and admins).
#[utoipa::path(get, path = "/api/v1/members/invitations", tag = "members",
    responses((status = 200, body = [InvitationView]), (status = 403, body = ErrorBody)))]
pub(super) async fn list(
    State(state): State<AppState>,
    ApiCaller(caller): ApiCaller,
) -> Result<Json<Vec<InvitationView>>> {
    let list = svc::list(&state, &caller).await?;
    Ok(Json(list.iter().map(InvitationView::from).collect()))
}

/// Revokes a pending invitation (owners and admins).
#[utoipa::path(delete, path = "/api/v1/members/invitations/{id}", tag = "members", params(InvitationIdParam),
    responses((status = 204), (status = 403, body = ErrorBody), (status = 404, body = ErrorBody)))]
pub(super) async fn revoke(
    State(state): State<AppState>,
    ApiCaller(caller): ApiCaller,
    AppPath(id): AppPath<String>,
) -> Result<StatusCode> {
    svc::revoke(&state, &caller, &id).await?;
    Ok(StatusCode::NO_CONTENT)
}
