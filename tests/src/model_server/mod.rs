//! A scripted model server for running the real agent CLIs offline: Anthropic Messages (for Claude
//! Code), OpenAI Responses (for Codex) and OpenAI Chat Completions (for OpenCode and the llama
//! runtime), all on one loopback port, all streaming SSE with fixed usage numbers.
//!
//! The reply to each request is decided from the request alone, never from a counter, because the
//! CLIs make side requests (titles, probes, retries). The markers, found in the user's text:
//! - `MOCK_ERROR=<status>`: that HTTP status with the protocol's error body;
//! - `CMD=<shell command>` (to the end of the line): when the request offers a shell tool, a call of
//!   that tool with the command; once the request carries the tool's result, a final text
//!   `Tool said: <output>`;
//! - `CMD@<part>=<shell command>` (to the end of the line): like `CMD=`, but only for requests whose
//!   model name contains `<part>`, and ahead of `CMD=`; so one prompt can script a different command
//!   for each model (an ensemble of Claude Code and Codex: `CMD@claude=… # CMD@gpt=… #`, the `#`
//!   making the rest of the line, the other marker included, a shell comment);
//! - `LOOP_CMD=<shell command>`: a call of the shell tool with the command on every request that
//!   offers one, tool result or not, so the agent keeps working turn after turn (budget tests);
//! - anything else: the text [`PLAIN_TEXT`].
//!
//! Every request is recorded ([`ModelServer::requests`]) so tests can assert what a CLI sent.

use std::sync::{Arc, Mutex};

use anyhow::{Context as _, Result};
use axum::Router;
use axum::body::Bytes;
use axum::http::{HeaderMap, Method, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

mod anthropic;
pub mod llama;
pub mod local_llama;
mod openai;

/// The text answer to a prompt without markers.
pub const PLAIN_TEXT: &str = "Hello from the Muster mock model.";
/// The prefix of the final answer after a tool ran; the tool's output follows.
pub const TOOL_SAID: &str = "Tool said: ";
/// The model name the server reports when a request names none.
pub const DEFAULT_MODEL: &str = "mock-model";

/// Usage reported by every Anthropic reply.
pub const ANTHROPIC_USAGE: ScriptedUsage = ScriptedUsage {
    input: 25,
    output: 12,
    cache_read: 4,
    cache_write: 2,
};
/// Usage reported by every OpenAI reply; `input` includes `cache_read` (OpenAI's convention).
pub const OPENAI_USAGE: ScriptedUsage = ScriptedUsage {
    input: 30,
    output: 12,
    cache_read: 5,
    cache_write: 0,
};
/// Reasoning tokens inside [`OPENAI_USAGE`]'s output (Responses API only).
pub const OPENAI_REASONING_TOKENS: u64 = 3;

/// Token counts the server puts in each reply.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ScriptedUsage {
    /// Input (prompt) tokens.
    pub input: u64,
    /// Output (completion) tokens.
    pub output: u64,
    /// Input tokens read from the prompt cache.
    pub cache_read: u64,
    /// Input tokens written to the prompt cache.
    pub cache_write: u64,
}

/// One request the server received.
#[derive(Debug, Clone)]
pub struct RecordedRequest {
    /// HTTP method.
    pub method: String,
    /// Path and query, as sent.
    pub path: String,
    /// Headers (lowercase names; values lossily decoded).
    pub headers: Vec<(String, String)>,
    /// The body as JSON, or `Value::Null` when it was empty or not JSON.
    pub body: Value,
    /// The HTTP status the server answered with.
    pub status: u16,
}

impl RecordedRequest {
    /// The value of header `name` (lowercase), if sent.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    /// The path without its query string.
    pub fn route(&self) -> &str {
        self.path.split('?').next().unwrap_or_default()
    }
}

/// What the script decided to answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reply {
    /// A final text answer.
    Text(String),
    /// A call of the shell tool with this command line.
    Shell(String),
    /// An HTTP error with this status.
    Error(u16),
}

/// The script: decides a reply from the user's text, the model the request names, the output of a
/// tool result that follows it (if any) and whether the request offers a shell tool.
pub fn decide(
    user_text: &str,
    model: &str,
    tool_output: Option<&str>,
    offers_shell: bool,
) -> Reply {
    if let Some(command) = marker(user_text, "LOOP_CMD=").filter(|_| offers_shell) {
        return Reply::Shell(command.to_owned());
    }
    if let Some(output) = tool_output {
        return Reply::Text(format!("{TOOL_SAID}{}", output.trim()));
    }
    if let Some(status) = marker(user_text, "MOCK_ERROR=").and_then(|s| s.parse().ok()) {
        return Reply::Error(status);
    }
    let command = model_marker(user_text, "CMD@", model).or_else(|| marker(user_text, "CMD="));
    match command {
        Some(command) if offers_shell => Reply::Shell(command.to_owned()),
        _ => Reply::Text(PLAIN_TEXT.to_owned()),
    }
}

/// The value after the last `name` in `text`: to the end of the line, trimmed.
fn marker<'a>(text: &'a str, name: &str) -> Option<&'a str> {
    let start = text.rfind(name)? + name.len();
    let value = text[start..].lines().next().unwrap_or_default().trim();
    (!value.is_empty()).then_some(value)
}

/// The value of the last `<name><part>=<value>` in `text` whose `<part>` (before the first `=`) is in
/// `model`: to the end of the line, trimmed.
fn model_marker<'a>(text: &'a str, name: &str, model: &str) -> Option<&'a str> {
    text.match_indices(name)
        .filter_map(|(at, _)| {
            let line = text[at + name.len()..].lines().next()?;
            let (part, value) = line.split_once('=')?;
            let (part, value) = (part.trim(), value.trim());
            (!part.is_empty() && !value.is_empty() && model.contains(part)).then_some(value)
        })
        .last()
}

/// Serves `app` on `listener` in the background until the returned token is cancelled; `what` names
/// the server in the message printed if serving fails.
pub(crate) fn serve(
    listener: tokio::net::TcpListener,
    app: Router,
    what: &'static str,
) -> CancellationToken {
    let shutdown = CancellationToken::new();
    let stop = shutdown.clone();
    tokio::spawn(async move {
        let served = axum::serve(listener, app)
            .with_graceful_shutdown(stop.cancelled_owned())
            .await;
        if let Err(e) = served {
            eprintln!("{what} stopped: {e}");
        }
    });
    shutdown
}

/// The `messages` array of a Messages or Chat Completions request (empty when it has none).
pub(crate) fn messages(request: &Value) -> &[Value] {
    array_field(request, "messages")
}

/// The `tools` the request offers the model (empty when it offers none).
pub(crate) fn tools(request: &Value) -> &[Value] {
    array_field(request, "tools")
}

fn array_field<'a>(request: &'a Value, field: &str) -> &'a [Value] {
    request
        .get(field)
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default()
}

/// The text of a message `content`: a string, or the `text` of each block of an array.
/// All user text of a conversation (markers may sit in any block), joined by newlines.
pub(crate) fn user_text(messages: &[Value]) -> String {
    messages
        .iter()
        .filter(|m| m.get("role").and_then(Value::as_str) == Some("user"))
        .map(|m| text_of(&m["content"]))
        .collect::<Vec<_>>()
        .join("\n")
}

pub(crate) fn text_of(content: &Value) -> String {
    match content {
        Value::String(s) => s.clone(),
        Value::Array(items) => items
            .iter()
            .filter_map(|item| item.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

/// An SSE body: each event as `event: <name>\n` (when named) and `data: <json>\n\n`.
pub(crate) fn sse_body<N: AsRef<str>>(
    events: impl IntoIterator<Item = (Option<N>, Value)>,
) -> String {
    let mut body = String::new();
    for (name, data) in events {
        if let Some(name) = name {
            let name = name.as_ref();
            body.push_str(&format!("event: {name}\n"));
        }
        body.push_str(&format!("data: {data}\n\n"));
    }
    body
}

/// A `text/event-stream` response.
pub(crate) fn sse_response(body: String) -> Response {
    (
        [
            (header::CONTENT_TYPE, "text/event-stream"),
            (header::CACHE_CONTROL, "no-cache"),
        ],
        body,
    )
        .into_response()
}

/// A JSON error response with `status`.
pub(crate) fn error_response(status: u16, body: &Value) -> Response {
    let status = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    (status, axum::Json(body.clone())).into_response()
}

/// A fresh id suffix for one reply (ids only; replies never depend on it).
pub(crate) fn next_id() -> String {
    use std::sync::atomic::{AtomicU32, Ordering};
    static NEXT: AtomicU32 = AtomicU32::new(1);
    format!("{:08x}", NEXT.fetch_add(1, Ordering::Relaxed))
}

/// The scripted model server, serving until dropped.
pub struct ModelServer {
    base_url: String,
    requests: Arc<Mutex<Vec<RecordedRequest>>>,
    shutdown: CancellationToken,
}

impl ModelServer {
    /// Binds `127.0.0.1:0` and serves in the background.
    pub async fn start() -> Result<ModelServer> {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .context("bind the model server")?;
        let addr = listener.local_addr().context("model server address")?;
        let requests = Arc::new(Mutex::new(Vec::new()));
        let recorded = requests.clone();
        let app = Router::new().fallback(move |method, uri, headers, body| {
            handle(recorded.clone(), method, uri, headers, body)
        });
        let shutdown = serve(listener, app, "model server");
        Ok(ModelServer {
            base_url: format!("http://{addr}"),
            requests,
            shutdown,
        })
    }

    /// `http://127.0.0.1:<port>`, without a trailing slash.
    pub fn base_url(&self) -> &str {
        &self.base_url
    }

    /// Stops serving: the port stops accepting connections (those open are closed once idle).
    pub fn stop(&self) {
        self.shutdown.cancel();
    }

    /// Every request received so far, in order.
    pub fn requests(&self) -> Vec<RecordedRequest> {
        self.requests
            .lock()
            .expect("the request log is never poisoned")
            .clone()
    }
}

impl Drop for ModelServer {
    fn drop(&mut self) {
        self.shutdown.cancel();
    }
}

async fn handle(
    log: Arc<Mutex<Vec<RecordedRequest>>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let json: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let path = uri.path();
    let response = match (&method, path) {
        (&Method::POST, p) if p.ends_with("/messages/count_tokens") => {
            axum::Json(json!({"input_tokens": ANTHROPIC_USAGE.input})).into_response()
        }
        (&Method::POST, p) if p.ends_with("/messages") => anthropic::messages(&json),
        (&Method::POST, p) if p.ends_with("/responses") => openai::responses(&json),
        (&Method::POST, p) if p.ends_with("/chat/completions") => openai::chat(&json),
        (&Method::GET, p) if p.ends_with("/models") => axum::Json(json!({
            "object": "list",
            "data": [{"id": DEFAULT_MODEL, "object": "model", "owned_by": "muster"}],
        }))
        .into_response(),
        (&Method::GET | &Method::HEAD, "/") => StatusCode::OK.into_response(),
        _ => StatusCode::NOT_FOUND.into_response(),
    };
    let recorded = RecordedRequest {
        method: method.to_string(),
        path: uri
            .path_and_query()
            .map_or_else(|| path.to_owned(), ToString::to_string),
        headers: headers
            .iter()
            .map(|(k, v)| (k.to_string(), String::from_utf8_lossy(v.as_bytes()).into()))
            .collect(),
        body: json,
        status: response.status().as_u16(),
    };
    log.lock()
        .expect("the request log is never poisoned")
        .push(recorded);
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_script_reads_markers_and_tool_results() {
        assert_eq!(
            decide("hi", "m", None, true),
            Reply::Text(PLAIN_TEXT.to_owned())
        );
        assert_eq!(
            decide("run CMD=echo a b\nthanks", "m", None, true),
            Reply::Shell("echo a b".to_owned())
        );
        assert_eq!(
            decide("run CMD=echo a", "m", None, false),
            Reply::Text(PLAIN_TEXT.to_owned())
        );
        assert_eq!(
            decide("run CMD=echo a", "m", Some("a\n"), true),
            Reply::Text("Tool said: a".to_owned())
        );
        assert_eq!(
            decide("x MOCK_ERROR=401", "m", None, true),
            Reply::Error(401)
        );
        assert_eq!(
            decide("go LOOP_CMD=echo again", "m", Some("again\n"), true),
            Reply::Shell("echo again".to_owned())
        );
        assert_eq!(
            decide("go LOOP_CMD=echo again", "m", None, false),
            Reply::Text(PLAIN_TEXT.to_owned())
        );
    }

    #[test]
    fn a_command_can_be_scripted_per_model() {
        let prompt =
            "Answer CMD@claude=echo 42 > a # CMD@gpt=echo 41 > a #. More text\nCMD=echo any";
        assert_eq!(
            decide(prompt, "claude-sonnet-4-6", None, true),
            Reply::Shell("echo 42 > a # CMD@gpt=echo 41 > a #. More text".to_owned())
        );
        assert_eq!(
            decide(prompt, "gpt-5.5", None, true),
            Reply::Shell("echo 41 > a #. More text".to_owned())
        );
        // No part in the model's name: the plain marker.
        assert_eq!(
            decide(prompt, "mock-model", None, true),
            Reply::Shell("echo any".to_owned())
        );
        assert_eq!(
            decide(prompt, "gpt-5.5", Some("done\n"), true),
            Reply::Text("Tool said: done".to_owned())
        );
        assert_eq!(
            decide(prompt, "gpt-5.5", None, false),
            Reply::Text(PLAIN_TEXT.to_owned())
        );
    }
}
