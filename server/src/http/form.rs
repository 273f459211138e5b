//! Form bodies of the pages: read once, CSRF-checked against the session the request already looked up,
//! and deserialized into the handler's own type with `serde_html_form` (repeated keys fill a `Vec`).
//! Numbers people type are [`Lenient`] fields: they never fail the form, so a handler reports every
//! field's problem together with the service's in one 422, and re-renders what was typed.

use std::str::FromStr;

use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::http::StatusCode;
use axum::http::request::Parts;

use super::extract::{CSRF_HEADER, CurrentUser, MAX_FORM_BYTES};
use super::{Error, Result};
use crate::auth;
use crate::service::Problems;
use crate::state::AppState;

/// A url-encoded form of the pages, CSRF-checked against the session, as the handler's own type `T`
/// (`serde_html_form`, so repeated keys fill a `Vec`). A field that does not fit `T` is a 422 naming it
/// (`serde_path_to_error`); forms whose numbers are typed by people read them as [`Lenient`] fields, so
/// every problem is reported at once. The session is the one [`CurrentUser`] already looked up for this
/// request (a page's `WsMember`), never looked up twice.
#[derive(Debug, Clone, Default)]
pub struct Form<T>(pub T);

/// The fields of a form that carries nothing but its CSRF token (a delete button, a sign-out).
#[derive(Debug, Clone, Copy, Default, serde::Deserialize)]
pub struct NoFields {}

/// A form that names one new thing (a token).
#[derive(Debug, Clone, Default, serde::Deserialize)]
#[serde(default)]
pub struct NameForm {
    pub name: String,
}

/// A url-encoded form sent before anyone is signed in (sign-in, first-run setup): no session, so no
/// CSRF token to check; otherwise read as [`Form`] is.
#[derive(Debug, Clone, Default)]
pub struct PublicForm<T>(pub T);

/// Reads a url-encoded body (at most [`MAX_FORM_BYTES`]) as bytes and as pairs: 413 past the limit, 400
/// when it cannot be read as pairs.
async fn form_body(req: Request) -> Result<(Parts, axum::body::Bytes, Vec<(String, String)>)> {
    let (parts, body) = req.into_parts();
    let bytes = axum::body::to_bytes(body, MAX_FORM_BYTES)
        .await
        .map_err(|_| {
            Error::Rejected(
                StatusCode::PAYLOAD_TOO_LARGE,
                "form",
                format!("is larger than {} MiB", MAX_FORM_BYTES >> 20),
            )
        })?;
    let pairs = serde_urlencoded::from_bytes::<Vec<(String, String)>>(&bytes).map_err(|e| {
        Error::Rejected(
            StatusCode::BAD_REQUEST,
            "form",
            format!("cannot be read: {e}"),
        )
    })?;
    Ok((parts, bytes, pairs))
}

/// The form's `_csrf` field (its first), else the `x-csrf-token` header.
fn sent_csrf<'a>(pairs: &'a [(String, String)], parts: &'a Parts) -> &'a str {
    pairs
        .iter()
        .find(|(k, _)| k == "_csrf")
        .map(|(_, v)| v.as_str())
        .or_else(|| parts.headers.get(CSRF_HEADER).and_then(|v| v.to_str().ok()))
        .unwrap_or_default()
}

/// `bytes` as `T`; a field that does not fit is a 422 naming it.
fn typed_form<T: serde::de::DeserializeOwned>(bytes: &[u8]) -> Result<T> {
    serde_path_to_error::deserialize(serde_html_form::Deserializer::from_bytes(bytes)).map_err(
        |e| {
            let path = e.path().to_string();
            let field = if path == "." { "form" } else { path.as_str() };
            Error::invalid([(field, e.into_inner().to_string())])
        },
    )
}

impl<T: serde::de::DeserializeOwned> FromRequest<AppState> for Form<T> {
    type Rejection = Error;

    async fn from_request(req: Request, state: &AppState) -> Result<Self> {
        let (mut parts, bytes, pairs) = form_body(req).await?;
        let current = CurrentUser::from_request_parts(&mut parts, state).await?;
        if !auth::constant_time_eq(sent_csrf(&pairs, &parts), &current.csrf()) {
            return Err(Error::CsrfMismatch);
        }
        typed_form(&bytes).map(Form)
    }
}

impl<T: serde::de::DeserializeOwned, S: Send + Sync> FromRequest<S> for PublicForm<T> {
    type Rejection = Error;

    async fn from_request(req: Request, _: &S) -> Result<Self> {
        let (_, bytes, _) = form_body(req).await?;
        typed_form(&bytes).map(PublicForm)
    }
}

/// A form field read as `T` that never fails the form: what was typed (kept to re-render the form) and
/// what it parsed to. Absent, it is blank.
#[derive(Debug, Clone, PartialEq)]
pub struct Lenient<T> {
    text: Option<String>,
    parsed: Option<T>,
}

impl<T> Default for Lenient<T> {
    fn default() -> Self {
        Lenient {
            text: None,
            parsed: None,
        }
    }
}

impl<'de, T: FromStr> serde::Deserialize<'de> for Lenient<T> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        Ok(Lenient::typed(text))
    }
}

impl<T: FromStr> Lenient<T> {
    /// The field as if `text` was typed into it.
    pub fn typed(text: impl Into<String>) -> Self {
        let text = text.into();
        let parsed = text.trim().parse().ok();
        Lenient {
            text: Some(text),
            parsed,
        }
    }
}

impl<T: Clone> Lenient<T> {
    /// What was typed, as typed ("" when the field was not sent).
    pub fn text(&self) -> &str {
        self.text.as_deref().unwrap_or_default()
    }

    /// Whether the form sent the field at all (a disabled field is not sent).
    pub fn sent(&self) -> bool {
        self.text.is_some()
    }

    /// `None` when left blank, the value when it parsed; otherwise `message` is recorded for `field` (and
    /// `None` returned), to be reported with every other problem of the form.
    pub fn read(&self, field: &'static str, message: &str, problems: &mut Problems) -> Option<T> {
        if self.text().trim().is_empty() {
            return None;
        }
        if self.parsed.is_none() {
            problems.add(field, message);
        }
        self.parsed.clone()
    }
}

/// An amount of money as people type it: `2.50`, `$2.50`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Amount(pub f64);

impl FromStr for Amount {
    type Err = std::num::ParseFloatError;

    fn from_str(s: &str) -> std::result::Result<Self, Self::Err> {
        s.trim().trim_start_matches('$').parse().map(Amount)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Default, serde::Deserialize)]
    #[serde(default)]
    struct Limits {
        runs: Lenient<i64>,
        budget: Lenient<Amount>,
        retries: Lenient<i64>,
        tags: Vec<String>,
        note: Option<String>,
    }

    #[test]
    fn lenient_fields_keep_what_was_typed_and_report_what_did_not_parse() {
        let form: Limits =
            typed_form(b"runs=+3+&budget=%242.50&tags=a&tags=b&note=&retries=many").unwrap();
        let mut problems = Problems::default();
        assert_eq!(form.runs.read("runs", "bad", &mut problems), Some(3));
        assert_eq!(form.runs.text(), " 3 ", "shown again as typed");
        assert_eq!(
            form.budget.read("budget", "bad", &mut problems),
            Some(Amount(2.5))
        );
        assert_eq!(
            form.retries.read("retries", "not a number", &mut problems),
            None
        );
        assert_eq!(form.tags, ["a", "b"], "repeated keys fill a Vec");
        assert_eq!(form.note.as_deref(), Some(""), "sent empty is not absent");
        assert!(
            matches!(problems.finish(), Err(crate::service::Error::Invalid(m)) if m.contains_key("retries"))
        );

        let blank: Limits = typed_form(b"runs=").unwrap();
        let mut problems = Problems::default();
        assert!(blank.runs.sent() && !blank.budget.sent());
        assert_eq!(blank.runs.read("runs", "bad", &mut problems), None);
        assert_eq!(blank.note, None);
        assert!(problems.finish().is_ok(), "blank is no problem");
    }

    #[test]
    fn a_field_that_does_not_fit_is_named() {
        let err = typed_form::<Limits>(b"note=a&note=b").unwrap_err();
        match err {
            Error::Invalid(fields) => assert!(fields.contains_key("note"), "{fields:?}"),
            other => panic!("{other:?}"),
        }
    }
}
