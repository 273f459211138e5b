//! `/w/{slug}/account`: the signed-in person's own account, where they change their password.

use axum::Router;
use axum::extract::{ConnectInfo, Query, State};
use axum::http::{Extensions, HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use muster_web::pages::AccountView;
use muster_web::views::NavItem;
use serde::Deserialize;

use super::views::nav;
use super::{PageResult, form_errors, see_other};
use crate::http::extract::{SESSION_COOKIE, WsMember, cookie};
use crate::http::form::Form;
use crate::service::Error;
use crate::service::members::{self, PasswordChange};
use crate::state::AppState;

pub(super) fn router() -> Router<AppState> {
    Router::new()
        .route("/w/{slug}/account", get(show))
        .route("/w/{slug}/account/password", post(change_password))
}

#[derive(Deserialize)]
struct ShowQuery {
    changed: Option<String>,
}

fn view(member: &WsMember) -> AccountView {
    AccountView {
        nav: nav(&member.caller, &member.csrf, NavItem::Account),
        password_action: format!("/w/{}/account/password", member.caller.ws.slug),
        ..Default::default()
    }
}

async fn show(member: WsMember, Query(q): Query<ShowQuery>) -> Response {
    let mut v = view(&member);
    v.changed = q.changed.is_some();
    muster_web::pages::account(&v).into_response()
}

/// The client's address (the TCP peer), for the same rate limits as signing in.
pub(crate) fn client_ip(extensions: &Extensions) -> std::net::IpAddr {
    extensions
        .get::<ConnectInfo<std::net::SocketAddr>>()
        .map_or(std::net::Ipv4Addr::UNSPECIFIED.into(), |c| c.0.ip())
}

/// The password form: the current password, and the new one twice.
#[derive(Debug, Default, serde::Deserialize)]
#[serde(default)]
struct PasswordForm {
    current_password: String,
    new_password: String,
    new_password_again: String,
}

async fn change_password(
    State(state): State<AppState>,
    member: WsMember,
    extensions: Extensions,
    headers: HeaderMap,
    Form(form): Form<PasswordForm>,
) -> PageResult {
    let input = PasswordChange {
        current_password: form.current_password,
        new_password: form.new_password,
        new_password_again: Some(form.new_password_again),
    };
    let keep = cookie(&headers, SESSION_COOKIE).map(crate::auth::hash_secret);
    let result = members::change_password(
        &state,
        &state.login_throttle,
        &state.live,
        &member.caller.user,
        client_ip(&extensions),
        &input,
        keep.as_deref(),
    )
    .await;
    let (status, errors, retry_after) = match result {
        Ok(()) => {
            return Ok(see_other(&format!(
                "/w/{}/account?changed=1",
                member.caller.ws.slug
            )));
        }
        Err(Error::Throttled {
            field,
            message,
            retry_after_secs: retry_after,
        }) => (
            StatusCode::TOO_MANY_REQUESTS,
            [(field.to_owned(), vec![message])].into(),
            retry_after,
        ),
        Err(e) => (StatusCode::UNPROCESSABLE_ENTITY, form_errors(e)?, None),
    };
    let mut v = view(&member);
    v.errors = errors;
    let mut response = (status, muster_web::pages::account(&v)).into_response();
    if let Some(secs) = retry_after {
        response
            .headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from(secs));
    }
    Ok(response)
}
