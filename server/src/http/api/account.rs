//! `/api/v1/account/password`: a person changes their own password.

use axum::Router;
use axum::extract::State;
use axum::http::{Extensions, HeaderMap, StatusCode};
use axum::routing::put;

use super::ErrorBody;
use crate::http::Result;
use crate::http::extract::{ApiUser, AppJson, SESSION_COOKIE, cookie};
use crate::service::members::{self, PasswordChange};
use crate::state::AppState;

pub(super) fn router() -> Router<AppState> {
    Router::new().route("/api/v1/account/password", put(change_password))
}

/// Changes the caller's own password. The current password is required; `new_password_again`, when
/// sent, must match. Every try counts against the sign-in limits of the account and the client address
/// (429 with `Retry-After` past them). Every session of the account is signed out except the browser
/// session that asked; API tokens keep working. A 422 lists every problem at once.
#[utoipa::path(put, path = "/api/v1/account/password", tag = "me", request_body = PasswordChange,
    responses((status = 204, description = "Changed; the account's other sessions are signed out."),
        (status = 403, body = ErrorBody, description = "a run's token: agents never act for a person"),
        (status = 422, body = ErrorBody, description = "every problem at once: `current_password` wrong or empty, `new_password` too short or the same, `new_password_again` different"),
        (status = 429, body = ErrorBody, description = "too many tries; `Retry-After` says when to try again")))]
pub(super) async fn change_password(
    State(state): State<AppState>,
    ApiUser(user): ApiUser,
    extensions: Extensions,
    headers: HeaderMap,
    AppJson(input): AppJson<PasswordChange>,
) -> Result<StatusCode> {
    // Only a cookie session stays: a bearer caller keeps no session, so every session ends.
    let keep = match headers.get(axum::http::header::AUTHORIZATION) {
        Some(_) => None,
        None => cookie(&headers, SESSION_COOKIE).map(crate::auth::hash_secret),
    };
    let ip = crate::http::pages::client_ip(&extensions);
    members::change_password(
        &state,
        &state.login_throttle,
        &state.live,
        &user,
        ip,
        &input,
        keep.as_deref(),
    )
    .await?;
    Ok(StatusCode::NO_CONTENT)
}
