//! The HTTP layer's one error type. `status_code` is the single place statuses are chosen; 4xx bodies are
//! `{"errors": {"field": ["message"]}}`, 5xx bodies say only "internal error" and the request id, and the
//! cause chain is logged once, by [`log_internal_errors`].

use std::collections::BTreeMap;
use std::sync::Arc;

use axum::Json;
use axum::extract::Request;
use axum::http::StatusCode;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use serde_json::json;

use crate::domain::ValidationError;
use crate::{service, store};

/// `Result` with the HTTP [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything a handler can fail with.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// 401: no valid session or token.
    #[error("authentication required")]
    Unauthorized,
    /// 403: signed in, but the role does not allow it.
    #[error("you are not allowed to do this")]
    Forbidden,
    /// 403 about particular fields: the role may make the request, but not change these fields.
    #[error("you are not allowed to change these fields")]
    NotAllowed(BTreeMap<String, Vec<String>>),
    /// 404.
    #[error("not found")]
    NotFound,
    /// 409: clashes with existing data; the map says which field and why.
    #[error("conflict")]
    Conflict(BTreeMap<String, Vec<String>>),
    /// 422: bad input, one or more messages per field.
    #[error("invalid input")]
    Invalid(BTreeMap<String, Vec<String>>),
    /// 403: a form or script write without the session's CSRF token.
    #[error("missing or wrong CSRF token; reload the page and try again")]
    CsrfMismatch,
    /// A malformed or oversized request: status, field, message.
    #[error("{1} {2}")]
    Rejected(StatusCode, &'static str, String),
    /// 429: over a rate limit or cap: field, message, and the seconds to wait (`Retry-After`) if known.
    #[error("{1}")]
    TooManyRequests(&'static str, String, Option<u64>),
    /// 500: logged with its cause chain, never shown.
    #[error(transparent)]
    Internal(#[from] anyhow::Error),
}

impl Error {
    /// A 422 with messages per field.
    pub fn invalid<'a>(fields: impl IntoIterator<Item = (&'a str, String)>) -> Self {
        let mut map: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for (field, message) in fields {
            map.entry(field.to_owned()).or_default().push(message);
        }
        Error::Invalid(map)
    }

    /// A 403 with messages per field (fields the caller's role may not change).
    pub fn not_allowed<'a>(fields: impl IntoIterator<Item = (&'a str, String)>) -> Self {
        match Error::invalid(fields) {
            Error::Invalid(map) => Error::NotAllowed(map),
            other => other,
        }
    }

    /// A 409 about one field.
    pub fn conflict(field: &str, message: impl Into<String>) -> Self {
        Error::Conflict(BTreeMap::from([(field.to_owned(), vec![message.into()])]))
    }

    /// The status code for this error: the only place it is decided.
    pub fn status_code(&self) -> StatusCode {
        match self {
            Error::Unauthorized => StatusCode::UNAUTHORIZED,
            Error::Forbidden | Error::CsrfMismatch | Error::NotAllowed(_) => StatusCode::FORBIDDEN,
            Error::Rejected(status, _, _) => *status,
            Error::TooManyRequests(..) => StatusCode::TOO_MANY_REQUESTS,
            Error::NotFound => StatusCode::NOT_FOUND,
            Error::Conflict(_) => StatusCode::CONFLICT,
            Error::Invalid(_) => StatusCode::UNPROCESSABLE_ENTITY,
            Error::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }
}

impl From<ValidationError> for Error {
    fn from(e: ValidationError) -> Self {
        Error::invalid([(e.field, e.message)])
    }
}

impl From<store::Error> for Error {
    /// Through the service's mapping, so a violated constraint reads the same from every layer.
    fn from(e: store::Error) -> Self {
        service::Error::from(e).into()
    }
}

impl From<service::Error> for Error {
    /// The edge where a use-case's refusal gets its status: a precise refusal is a 403, a precise
    /// unknown a 404, a throttle a 429 (with `Retry-After`), each with its field's message.
    fn from(e: service::Error) -> Self {
        match e {
            service::Error::Forbidden => Error::Forbidden,
            service::Error::NotAllowed(fields) => Error::NotAllowed(fields),
            service::Error::NotFound => Error::NotFound,
            service::Error::Unknown { field, message } => {
                Error::Rejected(StatusCode::NOT_FOUND, field, message)
            }
            service::Error::Refused { field, message } => {
                Error::Rejected(StatusCode::FORBIDDEN, field, message)
            }
            service::Error::Conflict(fields) => Error::Conflict(fields),
            service::Error::Invalid(fields) => Error::Invalid(fields),
            service::Error::Throttled {
                field,
                message,
                retry_after_secs,
            } => Error::TooManyRequests(field, message, retry_after_secs),
            service::Error::Internal(cause) => Error::Internal(cause),
        }
    }
}

/// The cause of a 500, kept in the response extensions for [`log_internal_errors`].
#[derive(Clone)]
struct InternalCause(Arc<anyhow::Error>);

impl IntoResponse for Error {
    fn into_response(self) -> Response {
        let status = self.status_code();
        match self {
            Error::Internal(cause) => {
                let mut response = (
                    status,
                    Json(json!({ "errors": { "server": ["internal error"] } })),
                )
                    .into_response();
                response
                    .extensions_mut()
                    .insert(InternalCause(Arc::new(cause)));
                response
            }
            Error::Invalid(fields) | Error::Conflict(fields) | Error::NotAllowed(fields) => {
                (status, Json(json!({ "errors": fields }))).into_response()
            }
            Error::Rejected(_, field, message) => {
                (status, Json(json!({ "errors": { field: [message] } }))).into_response()
            }
            Error::TooManyRequests(field, message, retry_after) => {
                let mut response =
                    (status, Json(json!({ "errors": { field: [message] } }))).into_response();
                if let Some(secs) = retry_after {
                    response
                        .headers_mut()
                        .insert(axum::http::header::RETRY_AFTER, secs.into());
                }
                response
            }
            other => {
                let field = match other {
                    Error::NotFound => "resource",
                    Error::CsrfMismatch => "csrf",
                    _ => "auth",
                };
                (
                    status,
                    Json(json!({ "errors": { field: [other.to_string()] } })),
                )
                    .into_response()
            }
        }
    }
}

/// Logs the cause chain of a 500 once, inside the request's span, and adds the request id to its body.
pub(super) async fn log_internal_errors(request: Request, next: Next) -> Response {
    let request_id = request
        .headers()
        .get(super::REQUEST_ID)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("-")
        .to_owned();
    let mut response = next.run(request).await;
    if let Some(InternalCause(cause)) = response.extensions_mut().remove::<InternalCause>() {
        tracing::error!(error.cause_chain = ?cause, %request_id, "request failed");
        let body = json!({ "errors": { "server": ["internal error"] }, "request_id": request_id });
        response = (StatusCode::INTERNAL_SERVER_ERROR, Json(body)).into_response();
    }
    response
}

#[cfg(test)]
mod tests {
    use axum::http::{StatusCode, header};
    use axum::response::IntoResponse as _;
    use serde_json::{Value, json};

    use super::Error;
    use crate::service;

    /// The status, `Retry-After` and JSON body a service error gets at the edge.
    async fn answer(e: service::Error) -> (StatusCode, Option<String>, Value) {
        let response = Error::from(e).into_response();
        let status = response.status();
        let retry = response
            .headers()
            .get(header::RETRY_AFTER)
            .map(|v| v.to_str().unwrap().to_owned());
        let bytes = axum::body::to_bytes(response.into_body(), 1 << 16)
            .await
            .unwrap();
        (status, retry, serde_json::from_slice(&bytes).unwrap())
    }

    #[tokio::test]
    async fn service_refusals_get_their_status_and_field_at_the_edge() {
        let refused = answer(service::Error::refused("token", "may only act on MUS-1")).await;
        assert_eq!(
            refused,
            (
                StatusCode::FORBIDDEN,
                None,
                json!({ "errors": { "token": ["may only act on MUS-1"] } })
            )
        );
        let unknown = service::Error::Unknown {
            field: "comment",
            message: "x is not a comment on MUS-1".into(),
        };
        assert_eq!(
            answer(unknown).await,
            (
                StatusCode::NOT_FOUND,
                None,
                json!({ "errors": { "comment": ["x is not a comment on MUS-1"] } })
            )
        );
        let throttled = service::Error::Throttled {
            field: "current_password",
            message: "too many".into(),
            retry_after_secs: Some(7),
        };
        assert_eq!(
            answer(throttled).await,
            (
                StatusCode::TOO_MANY_REQUESTS,
                Some("7".to_owned()),
                json!({ "errors": { "current_password": ["too many"] } })
            )
        );
        assert_eq!(
            answer(service::Error::NotFound).await,
            (
                StatusCode::NOT_FOUND,
                None,
                json!({ "errors": { "resource": ["not found"] } })
            )
        );
        let not_allowed = service::Error::not_allowed([("model", "owners only".to_owned())]);
        assert_eq!(answer(not_allowed).await.0, StatusCode::FORBIDDEN);
        let invalid = service::Error::invalid([("title", "must not be empty".to_owned())]);
        assert_eq!(
            answer(invalid).await,
            (
                StatusCode::UNPROCESSABLE_ENTITY,
                None,
                json!({ "errors": { "title": ["must not be empty"] } })
            )
        );
    }
}
