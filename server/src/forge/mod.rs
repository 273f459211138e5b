//! The forge side of "an agent's work becomes a pull request": one client per forge API (GitHub REST v3
//! including Enterprise `/api/v3` roots, GitLab REST v4, Gitea/Forgejo API v1) behind the [`Forge`]
//! trait, the credentials git pushes with, and webhooks in ([`hooks`]).
//!
//! Invariants: every request carries [`REQUEST_TIMEOUT`] and the User-Agent `muster`; the token goes only
//! in the header its forge reads and never into a URL, a log line or an error; answers are read into
//! typed structs per forge (`github.rs`, `gitlab.rs`, `gitea.rs`), so a field the forge renamed is an
//! [`ForgeError::Unreadable`], never a silent default.
//!
//! TLS: reqwest's rustls backend (its own aws-lc provider, the platform's certificate store), so
//! `https://` forges are reached and verified like any other HTTPS server.

use std::time::Duration;

use reqwest::{Method, RequestBuilder, StatusCode};
use serde::de::DeserializeOwned;

pub use crate::domain::{CheckState, ForgeKind, PrState, ReviewVerdict};

mod gitea;
mod github;
mod gitlab;
pub mod hooks;
mod log;
mod push;
#[cfg(test)]
mod tests;

pub use log::failing_part;
pub use push::{http_client, push_target, target};

/// Longest one forge request may take.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);
/// The User-Agent every request carries (GitHub refuses requests without one).
pub const USER_AGENT: &str = "muster";

/// Where and how to reach one forge project.
#[derive(Clone)]
pub struct Endpoint {
    pub kind: ForgeKind,
    /// The API root, without a trailing slash.
    pub api_url: String,
    /// `owner/name` (GitLab: `group/sub/name`).
    pub repo: String,
    pub token: String,
}

impl std::fmt::Debug for Endpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Endpoint")
            .field("kind", &self.kind)
            .field("api_url", &self.api_url)
            .field("repo", &self.repo)
            .field("token", &"[redacted]")
            .finish()
    }
}

/// What a token can do on the project (the "test connection" answer).
#[derive(Debug, Clone, serde::Serialize)]
pub struct Access {
    /// The https clone URL the forge reports.
    pub clone_url: String,
    pub default_branch: String,
    pub can_push: bool,
    pub can_open_prs: bool,
    pub can_read_checks: bool,
    pub can_comment: bool,
    /// Sentences for a person, e.g. "the token is read-only: it cannot push".
    pub notes: Vec<String>,
}

/// A pull request to open.
#[derive(Debug, Clone)]
pub struct NewPull {
    pub title: String,
    pub body: String,
    /// The branch with the work.
    pub head: String,
    /// The branch it merges into.
    pub base: String,
    pub draft: bool,
}

/// A pull request (GitLab: merge request, number = iid) as the forge reports it.
#[derive(Debug, Clone, PartialEq)]
pub struct Pull {
    pub number: i64,
    /// Where a person reads it.
    pub url: String,
    pub state: PrState,
    pub draft: bool,
    pub head: String,
    pub head_sha: String,
    pub base: String,
    /// Unknown while the forge is still computing it.
    pub mergeable: Option<bool>,
}

/// Where a failing check's log is read (what the webhook named).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LogRef {
    GithubJob(i64),
    GitlabJob(i64),
    GiteaJob(i64),
    None,
}

/// What went wrong talking to a forge; the message is a sentence a person can act on.
#[derive(Debug, thiserror::Error)]
pub enum ForgeError {
    #[error("the forge refused the token ({status}): {message}")]
    Unauthorized { status: u16, message: String },
    #[error("not found on the forge: {0}")]
    NotFound(String),
    #[error("the forge refused the request ({status}): {message}")]
    Refused { status: u16, message: String },
    #[error("cannot reach the forge at {url}: {reason}")]
    Unreachable { url: String, reason: String },
    #[error("the forge answered something Muster cannot read: {0}")]
    Unreadable(String),
}

/// One forge project, reached with one token.
#[async_trait::async_trait]
pub trait Forge: Send + Sync {
    fn kind(&self) -> ForgeKind;
    /// What the token can do there (the "test connection" answer).
    async fn access(&self) -> Result<Access, ForgeError>;
    /// The branch's head commit on the forge, None when it has no such branch.
    async fn branch_head(&self, branch: &str) -> Result<Option<String>, ForgeError>;
    async fn open_pull(&self, new: &NewPull) -> Result<Pull, ForgeError>;
    async fn pull(&self, number: i64) -> Result<Pull, ForgeError>;
    /// Every pull request whose head is `branch`, open, merged or closed (where a line's work may go:
    /// see [`push_target`]).
    async fn pulls_for_branch(&self, branch: &str) -> Result<Vec<Pull>, ForgeError>;
    /// The open pull request whose head is `branch`, if any (to avoid opening a second one).
    async fn pull_for_branch(&self, branch: &str) -> Result<Option<Pull>, ForgeError> {
        let pulls = self.pulls_for_branch(branch).await?;
        Ok(pulls.into_iter().find(|p| p.state == PrState::Open))
    }
    async fn comment(&self, number: i64, body: &str) -> Result<(), ForgeError>;
    /// The failing part of a check's log ([`failing_part`]); empty when the forge has no log API for
    /// it (a `LogRef` of another forge, a check that is not a job, a log the forge no longer keeps).
    async fn check_log(&self, log: &LogRef) -> Result<String, ForgeError>;
}

/// The client for an endpoint. `http` is shared; every request carries [`REQUEST_TIMEOUT`] and the
/// User-Agent [`USER_AGENT`]; auth: GitHub `Authorization: Bearer`, GitLab `PRIVATE-TOKEN`, Gitea
/// `Authorization: token`.
pub fn client(endpoint: Endpoint, http: reqwest::Client) -> Box<dyn Forge> {
    let api = Api { endpoint, http };
    match api.endpoint.kind {
        ForgeKind::Github => Box::new(github::Github::new(api)),
        ForgeKind::Gitlab => Box::new(gitlab::Gitlab::new(api)),
        ForgeKind::Gitea => Box::new(gitea::Gitea::new(api)),
    }
}

/// The value of the `Authorization: Basic …` header git pushes and fetches with over HTTPS.
///
/// GitHub takes any token as the password of `x-access-token`; GitLab takes a personal, project or
/// group token (or an OAuth token) as the password of `oauth2`; Gitea/Forgejo take a token as the
/// password of any user name (the token names its owner).
pub fn git_auth_header(kind: ForgeKind, token: &str) -> String {
    use base64::Engine as _;
    let user = match kind {
        ForgeKind::Github => "x-access-token",
        ForgeKind::Gitlab => "oauth2",
        ForgeKind::Gitea => "muster",
    };
    let pair = base64::engine::general_purpose::STANDARD.encode(format!("{user}:{token}"));
    format!("Basic {pair}")
}

/// Whether two git or clone URLs name the same repository: the host (lowercase, any scheme, any
/// credentials, default ports dropped) and the path (no `.git`, no trailing slash) must match.
/// scp-like `git@host:owner/name.git` reads as `host/owner/name`.
pub fn same_repository(a: &str, b: &str) -> bool {
    let (a, b) = (normalize_repository(a), normalize_repository(b));
    !a.is_empty() && a == b
}

fn normalize_repository(url: &str) -> String {
    let url = url.trim();
    let (rest, scp_like) = match url.split_once("://") {
        Some((_, rest)) => (rest, false),
        None => (url, true),
    };
    let (authority, path) = if scp_like {
        match rest.split_once(':') {
            Some((host, path)) => (host, path),
            None => return String::new(),
        }
    } else {
        rest.split_once('/').unwrap_or((rest, ""))
    };
    let host = authority.rsplit('@').next().unwrap_or_default();
    let host = host
        .strip_suffix(":443")
        .or_else(|| host.strip_suffix(":80"))
        .or_else(|| host.strip_suffix(":22"))
        .unwrap_or(host)
        .to_ascii_lowercase();
    let path = path.split(['?', '#']).next().unwrap_or_default();
    let path = path.trim_matches('/');
    let path = path
        .strip_suffix(".git")
        .unwrap_or(path)
        .trim_end_matches('/');
    format!("{host}/{path}")
}

/// Percent-encodes one URL path segment or query value (everything but RFC 3986's unreserved set).
pub(crate) fn encode(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for byte in value.bytes() {
        if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'.' | b'_' | b'~') {
            out.push(char::from(byte));
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

/// Like [`encode`], but keeps `/` (a branch name in a path that the forge reads to its end).
pub(crate) fn encode_path(value: &str) -> String {
    value.split('/').map(encode).collect::<Vec<_>>().join("/")
}

/// The longest error message kept from a forge's answer.
const MESSAGE_LIMIT: usize = 300;

/// One endpoint's HTTP plumbing, shared by the three clients.
pub(crate) struct Api {
    endpoint: Endpoint,
    http: reqwest::Client,
}

/// The error bodies of the three forges: `message` (GitHub, Gitea; GitLab sometimes an object),
/// `error` (GitLab OAuth), `errors` (GitHub validation details).
#[derive(serde::Deserialize, Default)]
struct ErrorBody {
    #[serde(default)]
    message: Option<serde_json::Value>,
    #[serde(default)]
    error: Option<String>,
    #[serde(default)]
    errors: Option<serde_json::Value>,
}

impl Api {
    pub(crate) fn repo(&self) -> &str {
        &self.endpoint.repo
    }

    /// A request to `path` (from the API root), authenticated the way this forge reads tokens.
    pub(crate) fn request(&self, method: Method, path: &str) -> RequestBuilder {
        let url = format!("{}{path}", self.endpoint.api_url.trim_end_matches('/'));
        let token = &self.endpoint.token;
        let request = self
            .http
            .request(method, url)
            .timeout(REQUEST_TIMEOUT)
            .header(reqwest::header::USER_AGENT, USER_AGENT);
        match self.endpoint.kind {
            ForgeKind::Github => request
                .header(reqwest::header::AUTHORIZATION, format!("Bearer {token}"))
                .header(reqwest::header::ACCEPT, "application/vnd.github+json")
                .header("X-GitHub-Api-Version", "2022-11-28"),
            ForgeKind::Gitlab => request.header("PRIVATE-TOKEN", token.as_str()),
            ForgeKind::Gitea => request
                .header(reqwest::header::AUTHORIZATION, format!("token {token}"))
                .header(reqwest::header::ACCEPT, "application/json"),
        }
    }

    /// Sends `request` and returns the response when it succeeded; `what` names the object for a 404.
    pub(crate) async fn send(
        &self,
        request: RequestBuilder,
        what: &str,
    ) -> Result<reqwest::Response, ForgeError> {
        let response = request.send().await.map_err(|e| self.unreachable(e))?;
        let status = response.status();
        if status.is_success() {
            return Ok(response);
        }
        let body = response.bytes().await.unwrap_or_default();
        let message = error_message(&body, status);
        Err(match status {
            StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN => ForgeError::Unauthorized {
                status: status.as_u16(),
                message,
            },
            StatusCode::NOT_FOUND => ForgeError::NotFound(what.to_owned()),
            _ => ForgeError::Refused {
                status: status.as_u16(),
                message,
            },
        })
    }

    /// Sends `request` and reads its JSON answer as `T`.
    pub(crate) async fn json<T: DeserializeOwned>(
        &self,
        request: RequestBuilder,
        what: &str,
    ) -> Result<T, ForgeError> {
        let response = self.send(request, what).await?;
        let body = response.bytes().await.map_err(|e| self.unreachable(e))?;
        let mut de = serde_json::Deserializer::from_slice(&body);
        serde_path_to_error::deserialize(&mut de)
            .map_err(|e| ForgeError::Unreadable(format!("{what}: {e}")))
    }

    /// Like [`Api::json`], but a 404 is `None`.
    pub(crate) async fn json_opt<T: DeserializeOwned>(
        &self,
        request: RequestBuilder,
        what: &str,
    ) -> Result<Option<T>, ForgeError> {
        match self.json(request, what).await {
            Ok(value) => Ok(Some(value)),
            Err(ForgeError::NotFound(_)) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Reads a job log as text and keeps its failing part; a log the forge does not have is empty.
    pub(crate) async fn log(
        &self,
        request: RequestBuilder,
        what: &str,
    ) -> Result<String, ForgeError> {
        let response = match self.send(request, what).await {
            Ok(response) => response,
            Err(ForgeError::NotFound(_)) => return Ok(String::new()),
            Err(e) => return Err(e),
        };
        let body = response.bytes().await.map_err(|e| self.unreachable(e))?;
        Ok(failing_part(&String::from_utf8_lossy(&body)))
    }

    fn unreachable(&self, e: reqwest::Error) -> ForgeError {
        // Without the URL: reqwest's message repeats it, and ours names the root once.
        let reason = if e.is_timeout() {
            format!("no answer within {} s", REQUEST_TIMEOUT.as_secs())
        } else {
            let e = e.without_url();
            let mut reason = e.to_string();
            let mut source = std::error::Error::source(&e);
            while let Some(cause) = source {
                reason = format!("{reason}: {cause}");
                source = cause.source();
            }
            reason
        };
        ForgeError::Unreachable {
            url: self.endpoint.api_url.clone(),
            reason,
        }
    }
}

/// A forge's error body as one line: its message and any details, or the status's reason.
fn error_message(body: &[u8], status: StatusCode) -> String {
    let parsed: ErrorBody = serde_json::from_slice(body).unwrap_or_default();
    let as_text = |v: &serde_json::Value| match v {
        serde_json::Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    let mut parts: Vec<String> = parsed.message.iter().map(as_text).collect();
    parts.extend(parsed.error);
    if let Some(serde_json::Value::Array(errors)) = &parsed.errors {
        parts.extend(errors.iter().map(|e| match e.get("message") {
            Some(m) => as_text(m),
            None => as_text(e),
        }));
    }
    let mut message = parts.join("; ");
    if message.is_empty() {
        message = status
            .canonical_reason()
            .unwrap_or("no reason given")
            .to_owned();
    }
    if message.len() > MESSAGE_LIMIT {
        let mut end = MESSAGE_LIMIT;
        while !message.is_char_boundary(end) {
            end -= 1;
        }
        message.truncate(end);
        message.push('…');
    }
    message
}

/// Whether a title marks a work in progress the way GitLab and Gitea read it (`Draft:`, `WIP:`,
/// `[Draft]`, `[WIP]`, any case).
pub(crate) fn is_draft_title(title: &str) -> bool {
    let lower = title.trim_start().to_ascii_lowercase();
    ["draft:", "wip:", "[draft]", "[wip]", "(draft)"]
        .iter()
        .any(|prefix| lower.starts_with(prefix))
}
