//! Extractors: who is calling (session cookie or bearer token), in which workspace, and JSON, query and
//! path input with our error format (form bodies are in `form.rs`).

use std::collections::HashMap;

use axum::extract::{FromRequest, FromRequestParts, MatchedPath, Path, Request};
use axum::http::request::Parts;
use axum::http::{HeaderMap, Method, StatusCode, header};

use super::{Error, Result};
use crate::auth;
use crate::domain::{ApiToken, RunStatus, Slug, User};
use crate::service::{Caller, RunScope, RunSecret};
use crate::state::AppState;

/// Input structs of the API name it here; it lives with the domain so the service can use it too.
pub use crate::domain::serde_util::whole_number;

/// The session cookie's name.
pub const SESSION_COOKIE: &str = "muster_session";
/// Header that carries the CSRF token on script requests.
pub const CSRF_HEADER: &str = "x-csrf-token";
/// Largest form body accepted (issue bodies are up to 1 MiB).
pub const MAX_FORM_BYTES: usize = 2 * 1024 * 1024;

/// A cookie's value from the request headers.
pub fn cookie<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find_map(|(k, v)| (k == name).then_some(v))
}

/// The signed-in user, by bearer token or session cookie.
#[derive(Debug, Clone)]
pub struct CurrentUser {
    pub user: User,
    /// The session's secret (for the CSRF token), when signed in by cookie.
    pub session_secret: Option<String>,
    /// The API token, when signed in by token.
    pub token: Option<ApiToken>,
}

impl CurrentUser {
    /// The CSRF token for this session ("" for token callers, who need none).
    pub fn csrf(&self) -> String {
        self.session_secret
            .as_deref()
            .map(auth::csrf_token)
            .unwrap_or_default()
    }
}

impl FromRequestParts<AppState> for CurrentUser {
    type Rejection = Error;

    /// Looks the caller up once per request: the answer is kept in the request's extensions, where the
    /// extractors that run after (a page's [`Form`] after its `WsMember`) find it.
    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self> {
        if let Some(current) = parts.extensions.get::<CurrentUser>() {
            return Ok(current.clone());
        }
        let current = look_up(parts, state).await?;
        parts.extensions.insert(current.clone());
        Ok(current)
    }
}

/// The caller by bearer token or session cookie, from the store.
async fn look_up(parts: &Parts, state: &AppState) -> Result<CurrentUser> {
    if let Some(value) = parts.headers.get(header::AUTHORIZATION) {
        let token = value
            .to_str()
            .ok()
            .and_then(|v| v.strip_prefix("Bearer "))
            .ok_or(Error::Unauthorized)?;
        let found = match state
            .store
            .use_api_token(&auth::hash_secret(token.trim()), chrono::Utc::now())
            .await
        {
            Err(crate::store::Error::NotFound) => return Err(Error::Unauthorized),
            other => other?,
        };
        let user = state.store.get_user(found.user_id).await?;
        return Ok(CurrentUser {
            user,
            session_secret: None,
            token: Some(found),
        });
    }
    let secret = cookie(&parts.headers, SESSION_COOKIE).ok_or(Error::Unauthorized)?;
    match state
        .store
        .session_user(&auth::hash_secret(secret), chrono::Utc::now())
        .await
    {
        Ok((_, user)) => Ok(CurrentUser {
            user,
            session_secret: Some(secret.to_owned()),
            token: None,
        }),
        Err(crate::store::Error::NotFound) => Err(Error::Unauthorized),
        Err(e) => Err(e.into()),
    }
}

/// A member of the workspace named by the `{slug}` path segment (pages). Others get 404: a workspace's
/// existence is not revealed to outsiders.
#[derive(Debug, Clone)]
pub struct WsMember {
    pub caller: Caller,
    pub csrf: String,
}

impl FromRequestParts<AppState> for WsMember {
    type Rejection = Error;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self> {
        let current = CurrentUser::from_request_parts(parts, state).await?;
        if let Some(token) = current.token.as_ref().filter(|t| t.run_id.is_some()) {
            // Pages are for people: a run's token gets the same refusal as on the API.
            return Err(run_scope(state, token, parts).await?.refusal().into());
        }
        let Path(params) = Path::<HashMap<String, String>>::from_request_parts(parts, state)
            .await
            .map_err(|_| Error::NotFound)?;
        let slug = params
            .get("slug")
            .and_then(|s| Slug::parse(s).ok())
            .ok_or(Error::NotFound)?;
        let ws = state.store.get_workspace_by_slug(&slug).await?;
        let member = state.store.get_member(ws.id, current.user.id).await?;
        if let Some(token) = &current.token {
            token_for(token, &ws)?;
        }
        let csrf = current.csrf();
        Ok(WsMember {
            caller: Caller {
                ws,
                user: current.user,
                role: member.role,
                run: None,
            },
            csrf,
        })
    }
}

/// An API caller with their workspace: a token's own workspace, or for a browser session the workspace
/// named by the `x-muster-workspace` header (else their first). Session callers must send the CSRF
/// header on writes.
#[derive(Debug, Clone)]
pub struct ApiCaller(pub Caller);

impl FromRequestParts<AppState> for ApiCaller {
    type Rejection = Error;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self> {
        let current = CurrentUser::from_request_parts(parts, state).await?;
        let run = match current.token.as_ref().filter(|t| t.run_id.is_some()) {
            Some(token) => {
                let scope = run_scope(state, token, parts).await?;
                if !run_may(parts, &scope) {
                    return Err(scope.refusal().into());
                }
                Some(scope)
            }
            None => None,
        };
        let ws = match &current.token {
            Some(token) => {
                let ws = state.store.get_workspace(token.workspace_id).await?;
                if let Some(wanted) = parts.headers.get("x-muster-workspace")
                    && wanted.to_str().ok() != Some(ws.slug.as_str())
                {
                    return Err(wrong_workspace(&ws));
                }
                ws
            }
            None => {
                session_write_has_csrf(parts, &current)?;
                let wanted = parts
                    .headers
                    .get("x-muster-workspace")
                    .and_then(|v| v.to_str().ok());
                let mine = state
                    .store
                    .list_workspaces_for_user(current.user.id)
                    .await?;
                mine.into_iter()
                    .map(|(ws, _)| ws)
                    .find(|ws| wanted.is_none_or(|w| ws.slug.as_str() == w))
                    .ok_or(Error::NotFound)?
            }
        };
        let member = state
            .store
            .get_member(ws.id, current.user.id)
            .await
            .map_err(|e| match e {
                crate::store::Error::NotFound => Error::Forbidden,
                other => other.into(),
            })?;
        Ok(ApiCaller(Caller {
            ws,
            user: current.user,
            role: member.role,
            run,
        }))
    }
}

/// A person acting for themselves, in no particular workspace (their invitations): a session (writes need
/// the CSRF header) or a personal API token. A run's token is refused: an agent never answers for a person.
#[derive(Debug, Clone)]
pub struct ApiUser(pub User);

impl FromRequestParts<AppState> for ApiUser {
    type Rejection = Error;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self> {
        let current = CurrentUser::from_request_parts(parts, state).await?;
        if let Some(token) = current.token.as_ref().filter(|t| t.run_id.is_some()) {
            return Err(run_scope(state, token, parts).await?.refusal().into());
        }
        if current.token.is_none() {
            session_write_has_csrf(parts, &current)?;
        }
        Ok(ApiUser(current.user))
    }
}

/// A browser session's write (anything but GET and HEAD) must carry the session's CSRF token in the
/// `x-csrf-token` header (bearer callers have no cookie to ride on and need none).
fn session_write_has_csrf(parts: &Parts, current: &CurrentUser) -> Result<()> {
    if parts.method == Method::GET || parts.method == Method::HEAD {
        return Ok(());
    }
    let sent = parts
        .headers
        .get(CSRF_HEADER)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    if auth::constant_time_eq(sent, &current.csrf()) {
        Ok(())
    } else {
        Err(Error::CsrfMismatch)
    }
}

/// Refuses a token made for another workspace than `ws` (403).
fn token_for(token: &ApiToken, ws: &crate::domain::Workspace) -> Result<()> {
    if token.workspace_id == ws.id {
        Ok(())
    } else {
        Err(Error::Rejected(
            StatusCode::FORBIDDEN,
            "token",
            format!(
                "this token was made for another workspace and cannot be used in {}",
                ws.slug
            ),
        ))
    }
}

/// The 403 for a token sent to another workspace than its own (named by `x-muster-workspace`).
fn wrong_workspace(own: &crate::domain::Workspace) -> Error {
    Error::Rejected(
        StatusCode::FORBIDDEN,
        "token",
        format!(
            "this token belongs to workspace {} and cannot act in another one",
            own.slug
        ),
    )
}

/// SHA-256 of the credential the request carries (bearer token first, else session cookie), as the
/// store keeps it: names the session or token a live connection belongs to.
pub fn credential_hash(headers: &HeaderMap) -> Option<String> {
    let bearer = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(str::trim);
    bearer
        .or_else(|| cookie(headers, SESSION_COOKIE))
        .map(auth::hash_secret)
}

/// The scope of a run's token; 401 once the run is no longer live (its token dies with it).
async fn run_scope(state: &AppState, token: &ApiToken, parts: &Parts) -> Result<RunScope> {
    let run_id = token.run_id.ok_or(Error::Unauthorized)?;
    let run = match state.store.get_run(run_id).await {
        Err(crate::store::Error::NotFound) => return Err(Error::Unauthorized),
        other => other?,
    };
    if !matches!(run.status, RunStatus::Claimed | RunStatus::Running) {
        return Err(Error::Unauthorized);
    }
    let issue = state.store.get_issue_by_id(run.issue_id).await?;
    Ok(RunScope {
        run_id,
        agent_id: run.agent_id,
        issue_id: issue.id,
        issue_key: issue.key,
        in_ensemble: run.ensemble_run_id.is_some(),
        // What the agent sent, so that what it writes can be cleaned of it.
        token: RunSecret(bearer(parts).unwrap_or_default().to_owned()),
    })
}

/// The bearer token of the request, as sent.
fn bearer(parts: &Parts) -> Option<&str> {
    parts
        .headers
        .get(header::AUTHORIZATION)?
        .to_str()
        .ok()?
        .strip_prefix("Bearer ")
        .map(str::trim)
}

/// Whether a run's token may call this route: what `muster issue …` needs and nothing more. It reads the
/// workspace's issues (list, search, show, comments), people's and agents' names (the views leave out emails and
/// every agent's instructions and runtime: `MemberView::for_caller`, `AgentNameView`), its own issue's
/// thread and its own run; it comments on and moves its own issue (the service layer narrows edits to the
/// status), edits or deletes its own comments there, and files unassigned sub-issues of its own issue
/// (the service checks the parent); a plan run proposes a tree of sub-issues for its own issue (the service
/// checks that the run is a plan). A run of an ensemble only reads: what it wrote on
/// the shared issue would reach the other candidates. Everything else (tokens, runners, settings, usage,
/// other runs, skills, members' management) is refused.
fn run_may(parts: &Parts, scope: &RunScope) -> bool {
    let read = parts.method == Method::GET || parts.method == Method::HEAD;
    if scope.in_ensemble && !read {
        return false;
    }
    run_route_may(parts, scope)
}

fn run_route_may(parts: &Parts, scope: &RunScope) -> bool {
    let Some(route) = parts.extensions.get::<MatchedPath>() else {
        return false;
    };
    let segment = |prefix: &str| {
        let rest = parts.uri.path().strip_prefix(prefix).unwrap_or_default();
        rest.split('/').next().unwrap_or_default().to_owned()
    };
    let own_issue = || {
        crate::domain::IssueKey::parse(&segment("/api/v1/issues/"))
            .is_ok_and(|k| k == scope.issue_key)
    };
    let own_run = || segment("/api/v1/runs/") == scope.run_id.to_string();
    let read = parts.method == Method::GET || parts.method == Method::HEAD;
    match route.as_str() {
        "/api/v1/me" | "/api/v1/members" | "/api/v1/agents" | "/api/v1/agents/{name}" => read,
        // Creating: only a sub-issue of its own issue (the service checks the parent).
        "/api/v1/issues" => read || parts.method == Method::POST,
        "/api/v1/issues/search" | "/api/v1/issues/{key}/plan" => read,
        "/api/v1/issues/{key}" => read || (own_issue() && parts.method == Method::PATCH),
        "/api/v1/issues/{key}/comments" => read || (own_issue() && parts.method == Method::POST),
        "/api/v1/issues/{key}/thread" => own_issue() && read,
        // Its own comments only: the service checks the author.
        "/api/v1/issues/{key}/comments/{id}" => {
            own_issue() && (parts.method == Method::PATCH || parts.method == Method::DELETE)
        }
        "/api/v1/issues/{key}/move" => own_issue() && parts.method == Method::POST,
        // A plan run proposes for its own issue (the service checks that it is one); deciding is people's.
        "/api/v1/issues/{key}/proposals" => read || (own_issue() && parts.method == Method::POST),
        "/api/v1/proposals/{id}" => read,
        "/api/v1/runs/{id}" | "/api/v1/runs/{id}/events" => own_run() && read,
        _ => false,
    }
}

/// JSON object bodies with our error format on rejection. Every body the API takes is an object, so
/// any other JSON value is refused (422) before it reaches serde, which would read an array as a
/// struct's fields in order.
#[derive(Debug, Clone, Copy, Default)]
pub struct AppJson<T>(pub T);

impl<T, S> FromRequest<S> for AppJson<T>
where
    T: serde::de::DeserializeOwned,
    S: Send + Sync,
{
    type Rejection = Error;

    async fn from_request(req: Request, state: &S) -> Result<Self> {
        let axum::Json(value) = axum::Json::<serde_json::Value>::from_request(req, state).await?;
        let kind = match &value {
            serde_json::Value::Object(_) => None,
            serde_json::Value::Array(_) => Some("an array"),
            serde_json::Value::String(_) => Some("a string"),
            serde_json::Value::Number(_) => Some("a number"),
            serde_json::Value::Bool(_) => Some("a boolean"),
            serde_json::Value::Null => Some("null"),
        };
        if let Some(kind) = kind {
            return Err(Error::Rejected(
                StatusCode::UNPROCESSABLE_ENTITY,
                "body",
                format!("the body must be a JSON object, not {kind}"),
            ));
        }
        serde_path_to_error::deserialize(value)
            .map(AppJson)
            .map_err(|e| {
                Error::Rejected(
                    StatusCode::UNPROCESSABLE_ENTITY,
                    "body",
                    format!("Failed to deserialize the JSON body into the target type: {e}"),
                )
            })
    }
}

/// Query strings with our error format on rejection (400, `query`).
#[derive(Debug, Clone, Copy, Default, FromRequestParts)]
#[from_request(via(axum::extract::Query), rejection(Error))]
pub struct AppQuery<T>(pub T);

impl From<axum::extract::rejection::QueryRejection> for Error {
    fn from(rejection: axum::extract::rejection::QueryRejection) -> Self {
        Error::Rejected(rejection.status(), "query", rejection.body_text())
    }
}

/// Path parameters with our error format on rejection (400, `path`), e.g. for bytes that are not UTF-8.
#[derive(Debug, Clone, Copy, Default, FromRequestParts)]
#[from_request(via(axum::extract::Path), rejection(Error))]
pub struct AppPath<T>(pub T);

impl From<axum::extract::rejection::PathRejection> for Error {
    fn from(rejection: axum::extract::rejection::PathRejection) -> Self {
        Error::Rejected(rejection.status(), "path", rejection.body_text())
    }
}

impl From<axum::extract::rejection::JsonRejection> for Error {
    fn from(rejection: axum::extract::rejection::JsonRejection) -> Self {
        Error::Rejected(rejection.status(), "body", rejection.body_text())
    }
}

/// Whether htmx sent the request (`HX-Request: true`): handlers then answer with a fragment or 204.
#[derive(Debug, Clone, Copy)]
pub struct HxRequest(pub bool);

impl<S: Send + Sync> FromRequestParts<S> for HxRequest {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(
        parts: &mut Parts,
        _: &S,
    ) -> std::result::Result<Self, Self::Rejection> {
        Ok(HxRequest(
            parts.headers.get("hx-request").is_some_and(|v| v == "true"),
        ))
    }
}
