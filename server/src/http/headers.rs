//! Security headers on every response: pages, API, errors, assets and health alike.
//!
//! The Content-Security-Policy allows only our own scripts (no inline script, no `eval`), our own
//! stylesheet plus inline `style` *attributes* (the avatar colours are `style="--avatar:…"`; inline
//! `<style>` elements stay refused), images from us or `data:` URLs (markdown with a remote image cannot
//! make the reader's browser call out), connections to ourselves (`'self'` covers the same-origin
//! WebSockets of the live views), no framing (`frame-ancestors 'none'`, and `X-Frame-Options` for older
//! browsers), no `<base>` and forms that post only to us. Each header is set only when the handler did not
//! set one itself, so a route that needs a stricter policy can send its own.

use axum::Router;
use axum::http::{HeaderName, HeaderValue, header};
use tower_http::set_header::SetResponseHeaderLayer;

/// The Content-Security-Policy every response carries.
pub const CONTENT_SECURITY_POLICY: &str = "default-src 'self'; script-src 'self'; \
    style-src 'self'; style-src-attr 'unsafe-inline'; img-src 'self' data:; font-src 'self'; \
    connect-src 'self'; object-src 'none'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'";

/// Every security header with its value.
pub const HEADERS: [(HeaderName, &str); 4] = [
    (header::CONTENT_SECURITY_POLICY, CONTENT_SECURITY_POLICY),
    (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
    (header::REFERRER_POLICY, "same-origin"),
    (header::X_FRAME_OPTIONS, "DENY"),
];

/// `router` with [`HEADERS`] added to every response that lacks them.
pub fn add_to(router: Router) -> Router {
    HEADERS.into_iter().fold(router, |router, (name, value)| {
        router.layer(SetResponseHeaderLayer::if_not_present(
            name,
            HeaderValue::from_static(value),
        ))
    })
}
