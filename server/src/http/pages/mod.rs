//! The HTML pages: the same use-cases as the API, rendered with `muster_web` from view structs built
//! here. Every form works without JavaScript: success answers `303 See Other`, bad input re-renders the
//! form with messages and the input kept (422), and a signed-out visitor is sent to the login page.

mod account;
pub(crate) use account::client_ip;
mod agents;
mod board;
mod ensemble_defs;
mod ensembles;
mod inbox;
mod invitations;
mod issue;
mod list;
mod members;
mod mentions;
mod plan_review;
mod plans;
mod projects;
mod pulls;
mod runners;
mod runs;
mod runtimes;
mod session;
mod settings;
mod skills;
mod usage;
pub(crate) mod views;

use axum::Router;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Redirect, Response};
use maud::Markup;
use muster_web::views::{ErrorPageView, FormErrors};

use super::Error;
use crate::state::AppState;

/// Every page route.
pub fn router() -> Router<AppState> {
    Router::new()
        .merge(session::router())
        .merge(account::router())
        .merge(board::router())
        .merge(list::router())
        .merge(issue::router())
        .merge(pulls::router())
        .merge(plans::router())
        .merge(projects::router())
        .merge(plan_review::router())
        .merge(ensembles::router())
        .merge(ensemble_defs::router())
        .merge(agents::router())
        .merge(members::router())
        .merge(runtimes::router())
        .merge(skills::router())
        .merge(runs::router())
        .merge(runners::router())
        .merge(inbox::router())
        .merge(invitations::router())
        .merge(settings::router())
        .merge(usage::router())
        .route("/assets/{version}/{name}", axum::routing::get(asset))
        .layer(axum::middleware::from_fn(login_on_401))
}

/// A signed-out visitor of a page goes to the login page, and comes back after signing in.
async fn login_on_401(request: axum::extract::Request, next: axum::middleware::Next) -> Response {
    let path = request
        .uri()
        .path_and_query()
        .map(|p| p.as_str().to_owned())
        .unwrap_or_default();
    let is_get = request.method() == axum::http::Method::GET;
    let response = next.run(request).await;
    if response.status() != StatusCode::UNAUTHORIZED || path.starts_with("/login") {
        return response;
    }
    let to = if is_get {
        format!(
            "/login?next={}",
            serde_urlencoded::to_string([("", &path)])
                .unwrap_or_default()
                .trim_start_matches('=')
        )
    } else {
        "/login".to_owned()
    };
    Redirect::to(&to).into_response()
}

/// An error on a page: 401 goes to the login page, others render the error page.
#[derive(Debug)]
pub struct PageError {
    error: Error,
}

impl From<Error> for PageError {
    fn from(error: Error) -> Self {
        PageError { error }
    }
}

impl From<crate::service::Error> for PageError {
    fn from(e: crate::service::Error) -> Self {
        Error::from(e).into()
    }
}

impl From<crate::store::Error> for PageError {
    fn from(e: crate::store::Error) -> Self {
        Error::from(e).into()
    }
}

/// `Result` for page handlers.
pub type PageResult<T = Response> = std::result::Result<T, PageError>;

impl IntoResponse for PageError {
    fn into_response(self) -> Response {
        let status = self.error.status_code();
        let (title, message) = match &self.error {
            Error::Unauthorized => {
                return (StatusCode::UNAUTHORIZED, Redirect::to("/login")).into_response();
            }
            Error::NotFound => (
                "Not found",
                "There is nothing here, or it is not yours to see.".to_owned(),
            ),
            Error::Forbidden => (
                "Not allowed",
                "Your role in this workspace does not allow this.".to_owned(),
            ),
            Error::CsrfMismatch => ("Form expired", self.error.to_string()),
            Error::NotAllowed(m) => ("Not allowed", messages(m)),
            Error::Invalid(m) | Error::Conflict(m) => ("Cannot do that", messages(m)),
            Error::Rejected(status, field, message) => (
                if *status == StatusCode::FORBIDDEN {
                    "Not allowed"
                } else {
                    "Bad request"
                },
                format!("{field} {message}"),
            ),
            Error::TooManyRequests(_, message, retry_after) => {
                let view = ErrorPageView {
                    status: status.as_u16(),
                    title: "Too many requests".into(),
                    message: message.clone(),
                    back_url: "/".into(),
                };
                let mut response = (status, muster_web::pages::error(&view, None)).into_response();
                if let Some(secs) = retry_after {
                    response
                        .headers_mut()
                        .insert(header::RETRY_AFTER, (*secs).into());
                }
                return response;
            }
            Error::Internal(_) => {
                // Keep the cause for the logging middleware; show only a generic page.
                let mut response = self.error.into_response();
                let page = muster_web::pages::error(
                    &ErrorPageView {
                        status: 500,
                        title: "Something went wrong".into(),
                        message: "An internal error happened; it has been logged.".into(),
                        back_url: "/".into(),
                    },
                    None,
                );
                *response.body_mut() = axum::body::Body::new(page.into_string());
                response.headers_mut().insert(
                    header::CONTENT_TYPE,
                    header::HeaderValue::from_static("text/html; charset=utf-8"),
                );
                return response;
            }
        };
        let view = ErrorPageView {
            status: status.as_u16(),
            title: title.into(),
            message,
            back_url: "/".into(),
        };
        (status, muster_web::pages::error(&view, None)).into_response()
    }
}

fn messages(m: &std::collections::BTreeMap<String, Vec<String>>) -> String {
    m.iter()
        .map(|(f, v)| format!("{f}: {}", v.join(", ")))
        .collect::<Vec<_>>()
        .join("; ")
}

/// Splits a service error: field messages (to re-render the form) or anything else (to fail the page).
pub(crate) fn form_errors(e: impl Into<Error>) -> std::result::Result<FormErrors, PageError> {
    match e.into() {
        Error::Invalid(m) | Error::Conflict(m) => Ok(m),
        other => Err(other.into()),
    }
}

/// A page re-rendered with form errors.
pub(crate) fn invalid(page: Markup) -> Response {
    (StatusCode::UNPROCESSABLE_ENTITY, page).into_response()
}

/// `303 See Other` to `to`.
pub(crate) fn see_other(to: &str) -> Response {
    Redirect::to(to).into_response()
}

async fn asset(
    axum::extract::Path((_version, name)): axum::extract::Path<(String, String)>,
) -> Response {
    match muster_web::assets::get(&name) {
        Some(asset) => (
            [
                (header::CONTENT_TYPE, asset.content_type),
                (header::CACHE_CONTROL, "public, max-age=31536000, immutable"),
            ],
            asset.bytes,
        )
            .into_response(),
        None => StatusCode::NOT_FOUND.into_response(),
    }
}
