//! The command-line client: `muster login`, `issue …`, `agent …` talk to a Muster server over the JSON API
//! (`/api/v1`, bearer token); `admin bootstrap` talks to the database directly.
//!
//! Errors come back as `anyhow` errors whose text is one line a person can act on: API field errors are
//! rendered `field: message` (joined with `; `), so `main` prints `error: title: must not be empty`. The
//! token is never printed and never appears in a `Debug` (see [`Secret`]).
//!
//! The HTTP client speaks plain `http://` only: reqwest 0.13 has no feature for rustls on the `ring`
//! provider, and its `rustls` feature pulls in aws-lc-rs, which cannot coexist with sqlx's ring-backed
//! rustls. An `https://` server URL is refused with a message saying so.
//!
//! `print!` and `println!` are shadowed below for every module of the client: they write through
//! [`output::write_stdout`], so that a reader closing the pipe early ends any command quietly.

/// The client's `print!`: [`output::write_stdout`] (a closed pipe is a quiet exit, not a panic).
macro_rules! print {
    ($($arg:tt)*) => {
        $crate::client::output::write_stdout(format_args!($($arg)*))
    };
}

/// The client's `println!`: [`output::write_stdout`] (a closed pipe is a quiet exit, not a panic).
macro_rules! println {
    () => {
        $crate::client::output::write_stdout(format_args!("\n"))
    };
    ($($arg:tt)*) => {
        $crate::client::output::write_stdout(format_args!("{}\n", format_args!($($arg)*)))
    };
}

pub mod admin;
pub mod agent;
pub mod config;
pub mod ensemble;
pub mod events;
pub mod forge;
pub mod issue;
mod login;
pub mod output;
mod pages;
pub mod plan;
pub mod project;
pub mod run;
pub mod runners;
pub mod runtime;
pub mod search;
pub mod skill;
pub mod team;
mod thread;
pub mod usage;
pub mod view;
pub mod workspace;

pub use login::{login, logout};

use std::collections::BTreeMap;
use std::io::Read as _;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context as _;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

/// A credential (API token or password) that never shows in `Debug` output or logs.
#[derive(Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(transparent)]
pub struct Secret(String);

impl Secret {
    /// The secret itself, for the one place that must send it.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Secret([redacted])")
    }
}

impl std::str::FromStr for Secret {
    type Err = std::convert::Infallible;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Ok(Secret(s.trim().to_owned()))
    }
}

/// Where and how the client commands reach a server, as given on the command line or in the environment.
#[derive(Debug, Clone, Default)]
pub struct Remote {
    /// `--server` / `MUSTER_URL`; overrides the stored server.
    pub server: Option<String>,
    /// `--token` / `MUSTER_TOKEN`; overrides the stored token.
    pub token: Option<Secret>,
    /// `--config-dir` / `MUSTER_CONFIG_DIR`: the folder holding `config.json`.
    pub config_dir: Option<PathBuf>,
    /// `--json`: machine-readable output.
    pub json: bool,
    /// Whether to colour text output (`--color`, the terminal and `NO_COLOR` decided).
    pub color: bool,
}

impl Remote {
    /// A client for the server and token given here, else the ones stored by `muster login`.
    pub fn connect(&self) -> anyhow::Result<Client> {
        let stored = config::load(&config::path(self.config_dir.as_deref())?)?.unwrap_or_default();
        let hint =
            "run `muster login --server URL --token TOKEN`, or set MUSTER_URL and MUSTER_TOKEN";
        let server = self
            .server
            .clone()
            .or(stored.server)
            .with_context(|| format!("no Muster server configured; {hint}"))?;
        let token = self
            .token
            .clone()
            .or(stored.token)
            .with_context(|| format!("not logged in (no API token); {hint}"))?;
        Client::new(&server, token)
    }
}

/// A non-2xx answer from the API, rendered for people.
#[derive(Debug, thiserror::Error)]
#[error("{message}")]
pub struct ApiError {
    /// The HTTP status code.
    pub status: u16,
    /// One line: `field: message; field: message`.
    pub message: String,
}

impl ApiError {
    fn from_body(status: reqwest::StatusCode, body: &[u8]) -> Self {
        #[derive(serde::Deserialize)]
        struct Body {
            errors: BTreeMap<String, Vec<String>>,
            request_id: Option<String>,
        }
        let message = if status == reqwest::StatusCode::UNAUTHORIZED {
            "authentication failed: the server did not accept the API token (revoked or mistyped?); \
             run `muster login --server URL --token TOKEN` with a valid one"
                .to_owned()
        } else if let Ok(parsed) = serde_json::from_slice::<Body>(body) {
            let mut parts: Vec<String> = Vec::new();
            for (field, messages) in &parsed.errors {
                for m in messages {
                    parts.push(match field.as_str() {
                        "resource" | "auth" | "server" | "form" => m.clone(),
                        _ => format!("{field}: {m}"),
                    });
                }
            }
            let mut text = parts.join("; ");
            if let Some(id) = parsed.request_id {
                text.push_str(&format!(" (request id {id})"));
            }
            text
        } else {
            let snippet: String = String::from_utf8_lossy(body)
                .chars()
                .take(200)
                .map(|c| if c.is_control() { ' ' } else { c })
                .collect();
            format!("the server answered {status}: {}", snippet.trim())
        };
        ApiError {
            status: status.as_u16(),
            message,
        }
    }
}

/// Replaces a 404 from the API by "`what` not found"; other errors pass through.
pub fn not_found_as(e: anyhow::Error, what: &str) -> anyhow::Error {
    match e.downcast_ref::<ApiError>() {
        Some(api) if api.status == 404 => anyhow::anyhow!("{what} not found"),
        _ => e,
    }
}

/// A small JSON client for one server and token.
pub struct Client {
    base: String,
    token: Secret,
    http: reqwest::Client,
}

impl Client {
    /// A client for `server` (`http://host:port`, a trailing `/` is fine).
    pub fn new(server: &str, token: Secret) -> anyhow::Result<Self> {
        let base = server_url(server)?;
        let http = reqwest::Client::builder()
            .timeout(Duration::from_secs(60))
            .user_agent(concat!("muster-cli/", env!("CARGO_PKG_VERSION")))
            .build()
            .context("cannot set up the HTTP client")?;
        Ok(Client { base, token, http })
    }

    /// The server's base URL, without a trailing `/`.
    pub fn base(&self) -> &str {
        &self.base
    }

    /// The token this client sends.
    pub fn token(&self) -> &Secret {
        &self.token
    }

    /// GET `path` (which starts with `/api/v1`).
    pub async fn get(&self, path: &str) -> anyhow::Result<Value> {
        self.send(self.http.get(self.url(path))).await
    }

    /// POST a JSON body.
    pub async fn post(&self, path: &str, body: &impl Serialize) -> anyhow::Result<Value> {
        self.send(self.http.post(self.url(path)).json(body)).await
    }

    /// PATCH a JSON body.
    pub async fn patch(&self, path: &str, body: &impl Serialize) -> anyhow::Result<Value> {
        self.send(self.http.patch(self.url(path)).json(body)).await
    }

    /// DELETE `path`.
    pub async fn delete(&self, path: &str) -> anyhow::Result<()> {
        self.send(self.http.delete(self.url(path))).await.map(drop)
    }

    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    async fn send(&self, request: reqwest::RequestBuilder) -> anyhow::Result<Value> {
        let response = request
            .bearer_auth(self.token.expose())
            .send()
            .await
            .map_err(|e| {
                anyhow::anyhow!(
                    "cannot reach the Muster server at {}: {}",
                    self.base,
                    chain(&e)
                )
            })?;
        let status = response.status();
        let body = response
            .bytes()
            .await
            .with_context(|| format!("reading the answer of {}", self.base))?;
        if !status.is_success() {
            return Err(ApiError::from_body(status, &body).into());
        }
        if body.is_empty() {
            return Ok(Value::Null);
        }
        serde_json::from_slice(&body).with_context(|| {
            format!(
                "{} did not answer with JSON; is it a Muster server?",
                self.base
            )
        })
    }
}

/// The innermost cause of an error, which for a connection failure says what happened ("Connection
/// refused") rather than only "error sending request".
fn chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut last = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        last = s.to_string();
        source = s.source();
    }
    last
}

/// Checks a server URL: plain `http://` only (see the module docs), no trailing `/`.
pub fn server_url(raw: &str) -> anyhow::Result<String> {
    let raw = raw.trim().trim_end_matches('/');
    if raw.starts_with("https://") {
        anyhow::bail!(
            "{raw}: https:// servers are not supported by this build of muster (its HTTP client has no TLS); \
             use an http:// URL, e.g. through an SSH tunnel to the server's loopback address"
        );
    }
    let Some(rest) = raw.strip_prefix("http://") else {
        anyhow::bail!("server URL {raw:?} must start with http://, e.g. http://127.0.0.1:7777");
    };
    anyhow::ensure!(
        !rest.is_empty() && !rest.contains(char::is_whitespace),
        "server URL {raw:?} names no host, e.g. http://127.0.0.1:7777"
    );
    Ok(raw.to_owned())
}

/// Percent-encodes one path segment (an issue key or agent name).
pub fn segment(raw: &str) -> String {
    let mut out = String::with_capacity(raw.len());
    for b in raw.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// A text argument where `-` means "read standard input".
pub fn text_arg(raw: String) -> anyhow::Result<String> {
    if raw != "-" {
        return Ok(raw);
    }
    let mut text = String::new();
    std::io::stdin()
        .read_to_string(&mut text)
        .context("cannot read standard input")?;
    Ok(text)
}

/// Deserializes an API answer into the shape a command prints.
pub fn shape<T: DeserializeOwned>(value: &Value) -> anyhow::Result<T> {
    T::deserialize(value)
        .context("the server's answer has an unexpected shape; is muster up to date?")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn server_urls_are_plain_http() {
        assert_eq!(
            server_url("http://127.0.0.1:7777/").unwrap(),
            "http://127.0.0.1:7777"
        );
        let e = server_url("https://muster.example.com")
            .unwrap_err()
            .to_string();
        assert!(e.contains("https:// servers are not supported"), "{e}");
        assert!(server_url("127.0.0.1:7777").is_err());
        assert!(server_url("http://").is_err());
    }

    #[test]
    fn field_errors_read_as_one_line() {
        let body =
            br#"{"errors":{"title":["must not be empty"],"status":["unknown status \"x\""]}}"#;
        let e = ApiError::from_body(reqwest::StatusCode::UNPROCESSABLE_ENTITY, body);
        assert_eq!(
            e.message,
            r#"status: unknown status "x"; title: must not be empty"#
        );
        let e = ApiError::from_body(
            reqwest::StatusCode::NOT_FOUND,
            br#"{"errors":{"resource":["not found"]}}"#,
        );
        assert_eq!(e.message, "not found");
        let e = ApiError::from_body(reqwest::StatusCode::BAD_GATEWAY, b"<html>\nbad</html>");
        assert_eq!(
            e.message,
            "the server answered 502 Bad Gateway: <html> bad</html>"
        );
    }

    #[test]
    fn secrets_stay_out_of_debug_and_segments_are_encoded() {
        let s: Secret = "mst_abc".parse().unwrap();
        assert!(!format!("{s:?}").contains("abc"));
        assert_eq!(segment("MUS-7"), "MUS-7");
        assert_eq!(segment("a b/c"), "a%20b%2Fc");
    }
}
