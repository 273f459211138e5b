//! The HTTP surface: router, layers, and one module per resource.

pub mod api;
mod error;
pub mod extract;
pub mod form;
pub mod headers;
mod health;
mod metrics;
pub mod pages;
mod runner_socket;

use axum::Router;
use axum::extract::MatchedPath;
use axum::http::Request;
use tower_http::request_id::{MakeRequestUuid, PropagateRequestIdLayer, SetRequestIdLayer};
use tower_http::trace::TraceLayer;

pub use error::{Error, Result};

use crate::state::AppState;

/// The request id header, set on every request and echoed in every response.
pub const REQUEST_ID: &str = "x-request-id";

/// All routes with their layers. Health checks sit outside the trace layer so probes do not flood logs.
pub fn router(state: AppState) -> Router {
    let header = axum::http::HeaderName::from_static(REQUEST_ID);
    let traced = Router::new()
        .merge(api::router())
        .merge(api::hooks())
        .merge(pages::router())
        .merge(runner_socket::router())
        .layer(axum::extract::DefaultBodyLimit::max(extract::MAX_FORM_BYTES))
        .layer(
            TraceLayer::new_for_http().make_span_with(|req: &Request<_>| {
                let route = req
                    .extensions()
                    .get::<MatchedPath>()
                    .map_or(req.uri().path(), MatchedPath::as_str);
                let id = req
                    .headers()
                    .get(REQUEST_ID)
                    .and_then(|v| v.to_str().ok())
                    .unwrap_or("-");
                tracing::info_span!("http", method = %req.method(), http.route = route, request_id = id)
            }),
        )
        .layer(axum::middleware::from_fn(error::log_internal_errors));
    let all = traced
        .merge(health::router())
        .merge(metrics::router())
        .layer(PropagateRequestIdLayer::new(header.clone()))
        .layer(SetRequestIdLayer::new(header, MakeRequestUuid))
        .with_state(state);
    headers::add_to(all)
}
