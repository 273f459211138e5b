//! `/api/v1/members` and `/api/v1/tokens`.

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{delete, get};
use axum::{Json, Router};
use serde::Deserialize;

use super::ErrorBody;
use super::doc::path::{TokenIdParam, UserIdParam};
use super::views::{MemberView, TokenView};
use crate::http::Result;
use crate::http::extract::{ApiCaller, AppJson, AppPath};
use crate::service::invitations::InvitationView;
use crate::service::members::{self as svc, Added, MemberInput};
use crate::service::tokens::{self, CreatedToken};
use crate::state::AppState;

pub(super) fn router() -> Router<AppState> {
    Router::new()
        .route("/api/v1/members", get(list).post(add))
        .route(
            "/api/v1/members/{user_id}",
            axum::routing::patch(set_role).delete(remove),
        )
        .route("/api/v1/tokens", get(list_tokens).post(create_token))
        .route("/api/v1/tokens/{id}", delete(revoke_token))
}

/// Lists members (without their emails for a run's token).
#[utoipa::path(get, path = "/api/v1/members", tag = "members", responses((status = 200, body = [MemberView])))]
pub(super) async fn list(
    State(state): State<AppState>,
    ApiCaller(caller): ApiCaller,
) -> Result<Json<Vec<MemberView>>> {
    let members = state.store.list_members(caller.ws.id).await?;
    Ok(Json(
        members
            .iter()
            .map(|m| MemberView::for_caller(m, &caller))
            .collect(),
    ))
}

/// Adds a member (owners and admins): a new account with its initial password joins at once (201); an
/// email that already has an account gets an invitation instead (202), and joins only when it accepts.
#[utoipa::path(post, path = "/api/v1/members", tag = "members", request_body = MemberInput,
    responses((status = 201, body = MemberView), (status = 202, body = InvitationView, description = "the account exists: it is invited"),
        (status = 403, body = ErrorBody), (status = 409, body = ErrorBody), (status = 422, body = ErrorBody)))]
pub(super) async fn add(
    State(state): State<AppState>,
    ApiCaller(caller): ApiCaller,
    AppJson(input): AppJson<MemberInput>,
) -> Result<Response> {
    Ok(match svc::add(&state, &caller, &input).await? {
        Added::Member(member) => {
            (StatusCode::CREATED, Json(MemberView::from(&member))).into_response()
        }
        Added::Invited(invitation) => (
            StatusCode::ACCEPTED,
            Json(InvitationView::from(&invitation)),
        )
            .into_response(),
    })
}

/// A role change.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
pub(super) struct RoleInput {
    #[schema(value_type = crate::domain::Role)]
    role: String,
}

/// Changes a member's role (owners and admins; only owners touch ownership; one owner always stays).
#[utoipa::path(patch, path = "/api/v1/members/{user_id}", tag = "members", request_body = RoleInput,
    params(UserIdParam),
    responses((status = 200, body = MemberView), (status = 403, body = ErrorBody), (status = 404, body = ErrorBody), (status = 409, body = ErrorBody)))]
pub(super) async fn set_role(
    State(state): State<AppState>,
    ApiCaller(caller): ApiCaller,
    AppPath(user_id): AppPath<String>,
    AppJson(input): AppJson<RoleInput>,
) -> Result<Json<MemberView>> {
    let member = svc::set_role(&state, &caller, svc::parse_user_id(&user_id)?, &input.role).await?;
    Ok(Json(MemberView::from(&member)))
}

/// Removes a member.
#[utoipa::path(delete, path = "/api/v1/members/{user_id}", tag = "members", params(UserIdParam),
    responses((status = 204), (status = 403, body = ErrorBody), (status = 404, body = ErrorBody), (status = 409, body = ErrorBody)))]
pub(super) async fn remove(
    State(state): State<AppState>,
    ApiCaller(caller): ApiCaller,
    AppPath(user_id): AppPath<String>,
) -> Result<StatusCode> {
    svc::remove(&state, &state.live, &caller, svc::parse_user_id(&user_id)?).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// The caller's API tokens.
#[utoipa::path(get, path = "/api/v1/tokens", tag = "tokens", responses((status = 200, body = [TokenView])))]
pub(super) async fn list_tokens(
    State(state): State<AppState>,
    ApiCaller(caller): ApiCaller,
) -> Result<Json<Vec<TokenView>>> {
    let list = tokens::list(&state, &caller).await?;
    Ok(Json(list.iter().map(TokenView::from).collect()))
}

/// A new token's name.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
pub(super) struct TokenInput {
    /// 1 to 100 characters, not blank.
    #[schema(min_length = 1, max_length = 100, pattern = r"\S")]
    name: String,
}

/// Creates an API token; the secret is in this response only.
#[utoipa::path(post, path = "/api/v1/tokens", tag = "tokens", request_body = TokenInput,
    responses((status = 201, body = CreatedToken), (status = 422, body = ErrorBody)))]
pub(super) async fn create_token(
    State(state): State<AppState>,
    ApiCaller(caller): ApiCaller,
    AppJson(input): AppJson<TokenInput>,
) -> Result<(StatusCode, Json<CreatedToken>)> {
    Ok((
        StatusCode::CREATED,
        Json(tokens::create(&state, &caller, &input.name).await?),
    ))
}

/// Revokes one of the caller's tokens.
#[utoipa::path(delete, path = "/api/v1/tokens/{id}", tag = "tokens", params(TokenIdParam),
    responses((status = 204), (status = 404, body = ErrorBody)))]
pub(super) async fn revoke_token(
    State(state): State<AppState>,
    ApiCaller(caller): ApiCaller,
    AppPath(id): AppPath<String>,
) -> Result<StatusCode> {
    tokens::revoke(&state, &caller, &id).await?;
    Ok(StatusCode::NO_CONTENT)
}
