//! Signing in and out, and the first-run setup that creates the owner and the workspace.

use axum::Router;
use axum::extract::{ConnectInfo, Query, State};
use axum::http::{Extensions, HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use muster_web::views::{LoginView, SetupView};
use serde::Deserialize;

use super::{PageResult, form_errors, invalid, see_other};
use crate::auth;
use crate::domain::{Email, NewSession, NewUser, NewWorkspace};
use crate::http::Error;
use crate::http::extract::{CurrentUser, SESSION_COOKIE};
use crate::http::form::{Form, NoFields, PublicForm};
use crate::service::{Problems, members};
use crate::state::AppState;

/// How long a browser session lasts.
pub const SESSION_TTL: chrono::TimeDelta = chrono::TimeDelta::days(14);

pub(super) fn router() -> Router<AppState> {
    Router::new()
        .route("/", get(home))
        .route("/setup", get(setup_page).post(setup))
        .route("/login", get(login_page).post(login))
        .route("/logout", post(logout))
}

/// `/`: the first workspace's board, the setup page on a fresh install, or the login page.
async fn home(State(state): State<AppState>, user: Result<CurrentUser, Error>) -> PageResult {
    let Ok(user) = user else {
        return Ok(see_other("/login"));
    };
    let mine = state.store.list_workspaces_for_user(user.user.id).await?;
    let own = user.token.as_ref().map(|t| t.workspace_id);
    match mine.iter().find(|(ws, _)| own.is_none_or(|id| id == ws.id)) {
        Some((ws, _)) => Ok(see_other(&format!("/w/{}", ws.slug))),
        // No workspace (yet): the invitations, if any, are the way in.
        None => Ok(see_other("/invitations")),
    }
}

#[derive(Deserialize)]
struct TokenQuery {
    token: Option<String>,
}

/// Whether `token` is the pending setup token. Setup ends for good once any account exists (for example
/// one made by `muster admin bootstrap` while this server runs): then every setup link answers
/// [`setup_done`] instead.
async fn setup_token_ok(state: &AppState, token: &str) -> crate::http::Result<SetupLink> {
    let (pending, matches) = {
        let current = state
            .setup_token
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        (
            current.is_some(),
            current
                .as_deref()
                .is_some_and(|t| auth::constant_time_eq(t, token)),
        )
    };
    if !pending || state.store.count_users().await? > 0 {
        *state
            .setup_token
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = None;
        return Ok(SetupLink::Done);
    }
    Ok(if matches {
        SetupLink::Valid
    } else {
        SetupLink::Wrong
    })
}

/// What a setup link is worth.
enum SetupLink {
    /// The pending setup token.
    Valid,
    /// Setup is pending, but this is not its token.
    Wrong,
    /// Setup is done: no link works any more.
    Done,
}

/// A setup link once setup is done: 410 Gone (the one-time link is used up for good), with a page that
/// says so and links to the login page. A wrong token while setup is pending stays a plain 404.
fn setup_done() -> Response {
    (StatusCode::GONE, muster_web::pages::setup_used()).into_response()
}

async fn setup_page(State(state): State<AppState>, Query(q): Query<TokenQuery>) -> PageResult {
    let token = q.token.unwrap_or_default();
    match setup_token_ok(&state, &token).await? {
        SetupLink::Valid => {}
        SetupLink::Wrong => return Err(Error::NotFound.into()),
        SetupLink::Done => return Ok(setup_done()),
    }
    let view = SetupView {
        token,
        ..Default::default()
    };
    Ok(muster_web::pages::setup(&view).into_response())
}

/// The first-run setup form: the link's token, the workspace, and its owner.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct SetupForm {
    token: String,
    workspace_name: String,
    issue_prefix: String,
    name: String,
    email: String,
    password: String,
}

async fn setup(
    State(state): State<AppState>,
    PublicForm(form): PublicForm<SetupForm>,
) -> PageResult {
    let mut view = SetupView {
        token: form.token,
        workspace_name: form.workspace_name,
        issue_prefix: form.issue_prefix,
        name: form.name,
        email: form.email,
        errors: Default::default(),
    };
    match setup_token_ok(&state, &view.token).await? {
        SetupLink::Valid => {}
        SetupLink::Wrong => return Err(Error::NotFound.into()),
        SetupLink::Done => return Ok(setup_done()),
    }
    let password = form.password;
    let mut p = Problems::default();
    let (slug, default_prefix) = members::slug_and_prefix(&view.workspace_name);
    let prefix = if view.issue_prefix.trim().is_empty() {
        default_prefix
    } else {
        view.issue_prefix.clone()
    };
    let ws = p.take(
        NewWorkspace::parse(&view.workspace_name, &slug, &prefix).map_err(|mut e| {
            if e.field == "name" {
                e.field = "workspace_name";
            }
            e
        }),
    );
    let name = p.take(members::display_name(&view.name));
    let email = p.take(Email::parse(&view.email));
    p.take(auth::check_password(&password));
    let checked = p.finish().map(|()| (ws, name, email));
    let (Some(ws), Some(name), Some(email)) = (match checked {
        Ok(t) => t,
        Err(e) => {
            view.errors = form_errors(e)?;
            return Ok(invalid(muster_web::pages::setup(&view)));
        }
    }) else {
        return Err(Error::NotFound.into());
    };
    let password_hash = members::hash(password).await?;
    let (user, ws) = state
        .store
        .create_owner_and_workspace(
            &NewUser {
                email,
                display_name: name,
                password_hash,
            },
            &ws,
        )
        .await?;
    *state
        .setup_token
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner) = None;
    tracing::info!(workspace = %ws.slug, "first-run setup done");
    if let Err(e) = crate::skills::builtin::seed(state.store.as_ref(), ws.id).await {
        tracing::warn!(error = %e, "cannot seed the built-in skills");
    }
    start_session(&state, user.id, &format!("/w/{}", ws.slug)).await
}

#[derive(Deserialize)]
struct NextQuery {
    next: Option<String>,
}

async fn login_page(Query(q): Query<NextQuery>) -> Response {
    muster_web::pages::login(&LoginView {
        next: safe_next(q.next.as_deref().unwrap_or_default()).to_owned(),
        ..Default::default()
    })
    .into_response()
}

/// Only a same-origin path may follow a login (no open redirects, nothing that breaks the `Location`
/// header): one leading `/` (not `//` nor `/\`), then printable ASCII only — no backslash, no control
/// character, no space. Anything else becomes `/`.
fn safe_next(next: &str) -> &str {
    let same_origin_path = next.starts_with('/')
        && !next.starts_with("//")
        && next.len() <= 2048
        && next.chars().all(|c| c.is_ascii_graphic() && c != '\\');
    if same_origin_path { next } else { "/" }
}

/// The client's address: the TCP peer (no proxy header is trusted). Unknown only without a listener
/// (then every such caller shares one limit).
fn client_ip(extensions: &Extensions) -> std::net::IpAddr {
    extensions
        .get::<ConnectInfo<std::net::SocketAddr>>()
        .map_or(std::net::Ipv4Addr::UNSPECIFIED.into(), |c| c.0.ip())
}

/// The sign-in form, and where to go after.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct LoginForm {
    email: String,
    password: String,
    next: String,
}

async fn login(
    State(state): State<AppState>,
    extensions: Extensions,
    PublicForm(form): PublicForm<LoginForm>,
) -> PageResult {
    let LoginForm {
        email,
        password,
        next,
    } = form;
    let next = safe_next(&next).to_owned();
    let refused = |status, message: String| {
        let view = LoginView {
            email: email.clone(),
            next: next.clone(),
            errors: [("form".to_owned(), vec![message])].into(),
        };
        (status, muster_web::pages::login(&view)).into_response()
    };
    let attempt = match state.login_throttle.attempt(client_ip(&extensions), &email) {
        Ok(attempt) => attempt,
        Err(wait) => {
            let secs = crate::throttle::retry_after_secs(wait);
            let mut response = refused(
                StatusCode::TOO_MANY_REQUESTS,
                format!("too many sign-in attempts; try again in {secs} seconds"),
            );
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from(secs));
            return Ok(response);
        }
    };
    let user = match Email::parse(&email) {
        Ok(e) => match state.store.get_user_by_email(&e).await {
            Ok(u) => Some(u),
            Err(crate::store::Error::NotFound) => None,
            Err(e) => return Err(e.into()),
        },
        Err(_) => None,
    };
    // An unknown email costs the same verification as a known one, and gets the same answer.
    let phc = user.as_ref().map(|u| u.password_hash.clone());
    let ok = auth::verify(password, phc).await;
    match user.filter(|_| ok) {
        Some(user) => {
            // The right password is no failure: it does not count towards this account's limits.
            state.login_throttle.succeeded(attempt);
            start_session(&state, user.id, &next).await
        }
        None => Ok(refused(
            StatusCode::UNAUTHORIZED,
            "wrong email or password".to_owned(),
        )),
    }
}

async fn start_session(state: &AppState, user: crate::domain::UserId, to: &str) -> PageResult {
    let secret = auth::new_secret("ses");
    let expires_at = chrono::Utc::now() + SESSION_TTL;
    state
        .store
        .create_session(&NewSession {
            user_id: user,
            token_hash: secret.hash,
            expires_at,
        })
        .await?;
    let mut response = see_other(to);
    let secure = if state.config.secure_cookies() {
        "; Secure"
    } else {
        ""
    };
    let cookie = format!(
        "{SESSION_COOKIE}={}; Path=/; HttpOnly; SameSite=Lax; Max-Age={}{secure}",
        secret.secret,
        SESSION_TTL.num_seconds()
    );
    response.headers_mut().append(
        header::SET_COOKIE,
        HeaderValue::from_str(&cookie).map_err(|e| Error::Internal(anyhow::Error::new(e)))?,
    );
    Ok(response)
}

async fn logout(
    State(state): State<AppState>,
    headers: HeaderMap,
    _form: Form<NoFields>,
) -> PageResult {
    if let Some(secret) = crate::http::extract::cookie(&headers, SESSION_COOKIE) {
        let hash = auth::hash_secret(secret);
        state.store.delete_session(&hash).await?;
        // The session's open sockets and streams end with it.
        state.credential_ended(&hash);
    }
    let mut response = see_other("/login");
    response.headers_mut().append(
        header::SET_COOKIE,
        HeaderValue::from_static("muster_session=; Path=/; HttpOnly; SameSite=Lax; Max-Age=0"),
    );
    Ok(response)
}
