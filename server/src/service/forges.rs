//! Forge connections (owners and admins), pull requests of agents' work (members), and the webhooks
//! forges send (no caller: the connection's secret signs them).

use serde::Deserialize;

use super::{Caller, Error, Problems, Result};
use crate::domain::{
    DEFAULT_MAX_ROUNDS, ForgeConnection, ForgeConnectionId, ForgeKind, IssueKey, MAX_ROUNDS_LIMIT,
    NewForgeConnection, OnClose, PullRequest, PullRequestId, RunId,
};
use crate::engine::Engine;
use crate::engine::forge::PullError;
use crate::forge::{Access, Endpoint};
use crate::store::ForgeSettings;

/// A connection as typed or sent.
#[derive(Debug, Clone, Default, Deserialize, utoipa::ToSchema)]
pub struct ForgeInput {
    /// `github`, `gitlab` or `gitea` (Gitea and Forgejo).
    #[schema(value_type = Option<crate::domain::ForgeKind>, example = "github")]
    pub kind: Option<String>,
    /// The API root: `https://api.github.com` (the default for GitHub), `https://ghe.example/api/v3`,
    /// `https://gitlab.com/api/v4` (the default for GitLab), `https://gitea.example/api/v1`.
    #[schema(example = "https://api.github.com")]
    pub api_url: Option<String>,
    /// The project: `owner/name` (GitLab: `group/subgroup/name`).
    #[schema(example = "acme/app")]
    pub repo: Option<String>,
    /// A token that may push, open pull requests, read checks and comment. Stored sealed; never shown
    /// again, never given to an agent.
    pub token: Option<String>,
    /// The secret the forge signs webhooks with; Muster makes one when none is given.
    pub webhook_secret: Option<String>,
    /// Open a draft pull request when an agent delivers (default off).
    pub auto_open: Option<bool>,
    /// Automatic rounds (CI fixes, review answers) per pull request, 1–20 (default 3).
    #[schema(minimum = 1, maximum = 20, example = 3)]
    pub max_rounds: Option<i64>,
    /// Where the issue goes when its pull request is closed unmerged: `todo` (default) or `cancelled`.
    #[schema(value_type = Option<crate::domain::OnClose>, example = "todo")]
    pub on_close: Option<String>,
}

/// A connection just made: with its webhook's address and secret (shown this once) and what the
/// token can do.
#[derive(Debug, Clone)]
pub struct Connected {
    pub connection: ForgeConnection,
    pub access: Access,
    pub webhook_path: String,
    pub webhook_secret: String,
}

/// The webhook path a connection's forge posts to.
pub fn webhook_path(conn: &ForgeConnection) -> String {
    format!("/hooks/{}/{}", conn.kind, conn.id)
}

/// Connects the workspace's repository to a forge (owners and admins): the token is tried first; the
/// forge's clone URL must be the workspace's repository (a workspace without one gets it).
pub async fn connect(state: &Engine, caller: &Caller, input: &ForgeInput) -> Result<Connected> {
    caller.require_manager()?;
    let mut problems = Problems::default();
    let kind = match input.kind.as_deref().map(str::trim) {
        None | Some("") => {
            problems.add("kind", "is required: github, gitlab or gitea");
            None
        }
        Some(raw) => problems.take(raw.parse::<ForgeKind>()),
    };
    let api_url = match (input.api_url.as_deref().map(str::trim), kind) {
        (Some(url), _) if !url.is_empty() => match api_url(url) {
            Ok(url) => Some(url),
            Err(why) => {
                problems.add("api_url", why);
                None
            }
        },
        (_, Some(kind)) => match kind.default_api_url() {
            Some(url) => Some(url.to_owned()),
            None => {
                problems.add(
                    "api_url",
                    format!(
                        "is required for {}: the server's API root, e.g. https://gitea.example/api/v1",
                        kind.label()
                    ),
                );
                None
            }
        },
        (_, None) => None,
    };
    let repo = match input.repo.as_deref().map(str::trim) {
        None | Some("") => {
            problems.add("repo", "is required: the project as owner/name");
            None
        }
        Some(raw) => match project(raw) {
            Ok(repo) => Some(repo),
            Err(why) => {
                problems.add("repo", why);
                None
            }
        },
    };
    let token = match input.token.as_deref().map(str::trim) {
        None | Some("") => {
            problems.add(
                "token",
                "is required: a token that may push and open pull requests",
            );
            None
        }
        Some(t) if t.chars().any(|c| c.is_whitespace() || c.is_control()) => {
            problems.add("token", "must not contain spaces or control characters");
            None
        }
        Some(t) => Some(t.to_owned()),
    };
    let secret = match input.webhook_secret.as_deref().map(str::trim) {
        None | Some("") => crate::auth::new_secret("whs").secret,
        Some(s) if s.len() < 16 => {
            problems.add("webhook_secret", "must be at least 16 characters");
            String::new()
        }
        Some(s) => s.to_owned(),
    };
    let settings = settings(&mut problems, input, None);
    problems.finish()?;
    let (Some(kind), Some(api_url), Some(repo), Some(token)) = (kind, api_url, repo, token) else {
        return Err(Error::invalid([("kind", "is required".to_owned())]));
    };
    let endpoint = Endpoint {
        kind,
        api_url: api_url.clone(),
        repo: repo.clone(),
        token: token.clone(),
    };
    let access = crate::forge::client(endpoint, crate::forge::http_client())
        .access()
        .await
        .map_err(|e| Error::invalid([("token", format!("{} says: {e}", kind.label()))]))?;
    match caller.ws.repo_path.as_deref() {
        Some(current) if !crate::forge::same_repository(current, &access.clone_url) => {
            return Err(Error::invalid([(
                "repo",
                format!(
                    "{} clones {repo} from {}, but this workspace's repository is {current}: set the workspace's repository to that URL, or connect the project it is",
                    kind.label(),
                    access.clone_url
                ),
            )]));
        }
        Some(_) => {}
        None => {
            state
                .store
                .set_workspace_repo(caller.ws.id, Some(&access.clone_url))
                .await?;
        }
    }
    let seal = |what: &str, value: &str| {
        state
            .secrets
            .seal(value)
            .map_err(|e| Error::Internal(e.context(format!("cannot seal the {what}"))))
    };
    let new = NewForgeConnection {
        workspace_id: caller.ws.id,
        kind,
        api_url,
        repo,
        token_sealed: seal("token", &token)?,
        webhook_secret_sealed: seal("webhook secret", &secret)?,
        auto_open: settings.auto_open,
        max_rounds: settings.max_rounds,
        on_close: settings.on_close,
        created_by: caller.user.id,
    };
    let connection = state
        .store
        .create_forge_connection(&new)
        .await
        .map_err(|e| match e {
            crate::store::Error::Conflict { .. } => Error::conflict(
                "kind",
                "this workspace is connected to a forge already: remove that connection first",
            ),
            other => other.into(),
        })?;
    tracing::info!(workspace = %caller.ws.slug.as_str(), kind = %connection.kind, repo = %connection.repo, "forge connected");
    Ok(Connected {
        webhook_path: webhook_path(&connection),
        connection,
        access,
        webhook_secret: secret,
    })
}

/// The settings `input` gives, over `current` (or the defaults).
fn settings(
    problems: &mut Problems,
    input: &ForgeInput,
    current: Option<&ForgeConnection>,
) -> ForgeSettings {
    let mut out = ForgeSettings {
        auto_open: current.is_some_and(|c| c.auto_open),
        max_rounds: current.map_or(DEFAULT_MAX_ROUNDS, |c| c.max_rounds),
        on_close: current.map_or(OnClose::Todo, |c| c.on_close),
    };
    if let Some(auto) = input.auto_open {
        out.auto_open = auto;
    }
    if let Some(n) = input.max_rounds {
        match i32::try_from(n) {
            Ok(n) if (1..=MAX_ROUNDS_LIMIT).contains(&n) => out.max_rounds = n,
            _ => problems.add(
                "max_rounds",
                format!("must be a whole number from 1 to {MAX_ROUNDS_LIMIT}"),
            ),
        }
    }
    if let Some(raw) = input.on_close.as_deref()
        && let Some(v) = problems.take(raw.parse::<OnClose>())
    {
        out.on_close = v;
    }
    out
}

/// An API root: an http(s) URL without credentials, query or fragment; kept without a trailing slash.
fn api_url(raw: &str) -> std::result::Result<String, String> {
    let (scheme, rest) = raw.split_once("://").ok_or_else(|| {
        format!("{raw} is not a URL; give the API root, e.g. https://api.github.com")
    })?;
    if !matches!(scheme.to_ascii_lowercase().as_str(), "http" | "https") {
        return Err(format!("{raw} must be an http:// or https:// URL"));
    }
    let host = rest.split('/').next().unwrap_or_default();
    if host.is_empty() {
        return Err(format!("{raw} names no host"));
    }
    if host.contains('@') {
        return Err("must not carry credentials: give the token in `token`".to_owned());
    }
    if rest.contains(['?', '#']) || raw.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(format!(
            "{raw} must be a plain URL (no query, fragment or spaces)"
        ));
    }
    Ok(raw.trim_end_matches('/').to_owned())
}

/// A project path: two or more segments of letters, digits, `.`, `-` and `_`.
fn project(raw: &str) -> std::result::Result<String, String> {
    let trimmed = raw.trim_matches('/');
    let trimmed = trimmed.strip_suffix(".git").unwrap_or(trimmed);
    let segments: Vec<&str> = trimmed.split('/').collect();
    let fits = |s: &&str| {
        !s.is_empty()
            && *s != "."
            && *s != ".."
            && s.chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_'))
    };
    if segments.len() < 2 || !segments.iter().all(fits) {
        return Err(format!(
            "{raw} is not a project path: give owner/name (GitLab: group/subgroup/name), letters, digits, `.`, `-` and `_`"
        ));
    }
    Ok(segments.join("/"))
}

/// The workspace's connections (owners and admins).
pub async fn list(state: &Engine, caller: &Caller) -> Result<Vec<ForgeConnection>> {
    caller.require_manager()?;
    Ok(state.store.list_forge_connections(caller.ws.id).await?)
}

/// One of the workspace's connections (owners and admins).
pub async fn get(
    state: &Engine,
    caller: &Caller,
    id: ForgeConnectionId,
) -> Result<ForgeConnection> {
    caller.require_manager()?;
    let conn = state.store.get_forge_connection(id).await?;
    if conn.workspace_id != caller.ws.id {
        return Err(Error::NotFound);
    }
    Ok(conn)
}

/// What the connection's token can do now (owners and admins).
pub async fn test(state: &Engine, caller: &Caller, id: ForgeConnectionId) -> Result<Access> {
    let conn = get(state, caller, id).await?;
    let forge = crate::engine::forge::client(state, &conn).map_err(pull_error)?;
    forge
        .access()
        .await
        .map_err(|e| Error::refused("token", format!("{} says: {e}", conn.kind.label())))
}

/// Changes a connection's settings (owners and admins).
pub async fn update(
    state: &Engine,
    caller: &Caller,
    id: ForgeConnectionId,
    input: &ForgeInput,
) -> Result<ForgeConnection> {
    let conn = get(state, caller, id).await?;
    let mut problems = Problems::default();
    for (field, given) in [
        ("kind", input.kind.is_some()),
        ("api_url", input.api_url.is_some()),
        ("repo", input.repo.is_some()),
        ("token", input.token.is_some()),
        ("webhook_secret", input.webhook_secret.is_some()),
    ] {
        if given {
            problems.add(
                field,
                "cannot be changed: remove the connection and connect again",
            );
        }
    }
    let settings = settings(&mut problems, input, Some(&conn));
    problems.finish()?;
    Ok(state
        .store
        .update_forge_settings(caller.ws.id, id, settings)
        .await?)
}

/// Removes a connection (owners and admins); its pull requests stay on the forge.
pub async fn remove(state: &Engine, caller: &Caller, id: ForgeConnectionId) -> Result<()> {
    let conn = get(state, caller, id).await?;
    state
        .store
        .delete_forge_connection(caller.ws.id, conn.id)
        .await?;
    tracing::info!(workspace = %caller.ws.slug.as_str(), kind = %conn.kind, "forge connection removed");
    Ok(())
}

/// The service's error for an engine's [`PullError`].
fn pull_error(e: PullError) -> Error {
    match e {
        PullError::NotConnected => Error::conflict("forge", e.to_string()),
        PullError::NoWork(why) => Error::conflict("run", why),
        PullError::Forge(e) => Error::conflict("forge", e.to_string()),
        PullError::Sealed { .. } => Error::Internal(anyhow::Error::new(e)),
        PullError::Store(e) => e.into(),
    }
}

/// What to open a pull request from.
#[derive(Debug, Clone, Copy)]
pub enum From<'a> {
    Run(RunId),
    Issue(&'a IssueKey),
}

/// Opens (or finds) the pull request for a run's, or an issue's latest, delivered work (members; not a
/// run's token).
pub async fn open(
    state: &Engine,
    caller: &Caller,
    from: From<'_>,
    draft: bool,
) -> Result<PullRequest> {
    if let Some(scope) = &caller.run {
        return Err(scope.refusal());
    }
    let opened = match from {
        From::Run(id) => {
            let run = super::runs::get(state, caller, id).await?;
            crate::engine::forge::open_for_run(state, &run, draft).await
        }
        From::Issue(key) => {
            let issue = state.store.get_issue(caller.ws.id, key).await?;
            crate::engine::forge::open_for_issue(state, &issue, draft).await
        }
    };
    opened.map_err(pull_error)
}

/// The workspace's pull requests, or one issue's.
pub async fn list_pulls(
    state: &Engine,
    caller: &Caller,
    issue: Option<&IssueKey>,
) -> Result<Vec<PullRequest>> {
    let issue = match issue {
        Some(key) => Some(state.store.get_issue(caller.ws.id, key).await?.id),
        None => None,
    };
    Ok(state.store.list_pull_requests(caller.ws.id, issue).await?)
}

/// One pull request of the workspace.
pub async fn get_pull(state: &Engine, caller: &Caller, id: PullRequestId) -> Result<PullRequest> {
    let pr = state.store.get_pull_request(id).await?;
    if pr.workspace_id != caller.ws.id {
        return Err(Error::NotFound);
    }
    Ok(pr)
}

/// Takes a webhook delivery for connection `id` of `kind`: verified against the connection's secret,
/// for the connection's repository only, once per delivery id. What it did, for the forge's log.
pub async fn receive_hook(
    state: &Engine,
    kind: ForgeKind,
    id: ForgeConnectionId,
    headers: &axum::http::HeaderMap,
    body: &[u8],
) -> Result<String> {
    let conn = match state.store.get_forge_connection(id).await {
        Ok(conn) if conn.kind == kind => conn,
        Ok(_) | Err(crate::store::Error::NotFound) => return Err(Error::NotFound),
        Err(e) => return Err(e.into()),
    };
    let secret = state
        .secrets
        .open(&conn.webhook_secret_sealed)
        .map_err(|e| Error::Internal(e.context("cannot open the webhook secret")))?;
    crate::forge::hooks::verify(kind, headers, body, &secret)
        .map_err(|e| Error::refused("signature", e.to_string()))?;
    let delivery = crate::forge::hooks::parse(kind, headers, body)
        .map_err(|e| Error::invalid([("body", e.to_string())]))?;
    if !delivery.repo.eq_ignore_ascii_case(&conn.repo) && !delivery.repo.is_empty() {
        return Err(Error::refused(
            "repository",
            format!(
                "the delivery is about {}, not this connection's {}",
                delivery.repo, conn.repo
            ),
        ));
    }
    if !state
        .store
        .take_forge_delivery(conn.id, &delivery.id, chrono::Utc::now())
        .await?
    {
        return Err(Error::conflict(
            "delivery",
            format!("delivery {} was taken already (a replay)", delivery.id),
        ));
    }
    let done = match crate::engine::forge::take(state, &conn, &delivery).await {
        Ok(done) => done,
        Err(e) => {
            // Not taken after all: the forge's redelivery is then a first delivery, not a replay.
            if let Err(e) = state
                .store
                .release_forge_delivery(conn.id, &delivery.id)
                .await
            {
                tracing::warn!(error = %e, "cannot release the delivery");
            }
            return Err(pull_error(e));
        }
    };
    tracing::info!(kind = %kind, delivery = %delivery.id, "{done}");
    Ok(done)
}
