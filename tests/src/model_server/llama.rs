//! A scripted local model server for the llama agent loop and the model-server probes: one
//! [`Scenario`] per server, covering what real servers do (llama.cpp's `content: null` first chunk and
//! `timings`, tool calls) and what broken ones do (malformed chunks, an HTML page, a stream that dies,
//! one that never ends, one that goes silent, a server that rejects `tools`).
//!
//! It also answers the probe endpoints as the chosen [`Flavor`] would: llama.cpp (`Server: llama.cpp`,
//! `/props`), Ollama (`/api/version`, `/api/tags`) or a bare OpenAI-compatible server (`/v1/models`).
//! Replies are decided from the request (is there a tool result yet?), never from a counter.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::{Context as _, Result};
use axum::Router;
use axum::body::{Body, Bytes};
use axum::http::{HeaderValue, Method, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use futures_util::StreamExt as _;
use futures_util::stream::{self, BoxStream};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

/// The model name the server reports.
pub const MODEL: &str = "scripted-llama";
/// The answer's words, streamed one delta each.
pub const ANSWER_WORDS: [&str; 12] = [
    "The", " answer", " is", " forty", "-two.", "\n", "It", " came", " from", " the", " script",
    ".",
];
/// Prompt and completion token counts reported in `usage`.
pub const USAGE: (u64, u64) = (38, 12);
/// llama.cpp's reported generation speed.
pub const TOKENS_PER_SECOND: f64 = 110.4;
/// The prefix of the final answer after a tool ran; the tool's output follows.
pub const TOOL_SAID: &str = "Tool said: ";

/// What the chat endpoint does.
#[derive(Debug, Clone, PartialEq)]
pub enum Scenario {
    /// Stream [`ANSWER_WORDS`] (after a `content: null` first chunk), then usage and timings.
    Text,
    /// Call tool `name` with `arguments` (a JSON text); once the result is back, answer
    /// `Tool said: <result>`.
    Tool {
        /// Tool name.
        name: String,
        /// Arguments as JSON text.
        arguments: String,
    },
    /// Like `Text`, with invalid JSON chunks and a stray line in between.
    Malformed,
    /// A few deltas, then the connection breaks without `finish_reason` or `[DONE]`.
    DiesMidStream,
    /// A 200 HTML page instead of a stream.
    Html,
    /// Deltas forever (ignoring `max_tokens`).
    Forever,
    /// One delta, then silence with the connection open.
    Silent,
    /// 500 "tools param requires --jinja flag" when the request has `tools`; else `Text`.
    RejectsTools,
    /// Like `Text`, but after the first chunk it waits until the file `gate` exists, then sends each word
    /// `pause` after the last: a slow model whose words arrive one by one while a page watches.
    Gated {
        /// Created by the test when it is ready to watch.
        gate: PathBuf,
        /// Time between two words.
        pause: Duration,
    },
}

/// The longest a [`Scenario::Gated`] stream waits for its gate.
const GATE_WAIT: Duration = Duration::from_secs(120);

/// Which server software the probe endpoints imitate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flavor {
    /// llama.cpp's llama-server.
    LlamaCpp,
    /// Ollama.
    Ollama,
    /// A bare OpenAI-compatible server.
    OpenAi,
}

/// The scripted server, serving until dropped.
pub struct LlamaServer {
    base_url: String,
    requests: Arc<Mutex<Vec<Value>>>,
    shutdown: CancellationToken,
}

impl LlamaServer {
    /// Binds `127.0.0.1:0` and serves `scenario` as `flavor` in the background.
    pub async fn start(scenario: Scenario, flavor: Flavor) -> Result<LlamaServer> {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .context("bind the scripted llama server")?;
        let addr = listener
            .local_addr()
            .context("scripted llama server address")?;
        let requests = Arc::new(Mutex::new(Vec::new()));
        let recorded = requests.clone();
        let app = Router::new().fallback(move |method, uri, body| {
            handle(
                scenario.clone(),
                flavor,
                recorded.clone(),
                method,
                uri,
                body,
            )
        });
        let shutdown = super::serve(listener, app, "scripted llama server");
        Ok(LlamaServer {
            base_url: format!("http://{addr}"),
            requests,
            shutdown,
        })
    }

    /// `http://127.0.0.1:<port>`.
    pub fn base_url(&self) -> &str {
        &self.base_url
    }

    /// The bodies of the chat requests received so far.
    pub fn chat_requests(&self) -> Vec<Value> {
        self.requests
            .lock()
            .expect("the request log is never poisoned")
            .clone()
    }
}

impl Drop for LlamaServer {
    fn drop(&mut self) {
        self.shutdown.cancel();
    }
}

async fn handle(
    scenario: Scenario,
    flavor: Flavor,
    log: Arc<Mutex<Vec<Value>>>,
    method: Method,
    uri: Uri,
    body: Bytes,
) -> Response {
    let mut response = match (&method, uri.path()) {
        (&Method::POST, "/v1/chat/completions") => {
            let request: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
            log.lock()
                .expect("the request log is never poisoned")
                .push(request.clone());
            chat(&scenario, &request)
        }
        (&Method::GET, "/v1/models") => axum::Json(json!({
            "object": "list",
            "data": [{"id": MODEL, "object": "model", "owned_by": "llamacpp"}],
        }))
        .into_response(),
        (&Method::GET, "/props") if flavor == Flavor::LlamaCpp => axum::Json(json!({
            "build_info": "b4567-scripted",
            "model_alias": MODEL,
            "model_path": format!("/models/{MODEL}.gguf"),
            "default_generation_settings": {"n_ctx": 2048},
            "chat_template_caps": {"supports_tools": true},
        }))
        .into_response(),
        (&Method::GET, "/api/version") if flavor == Flavor::Ollama => {
            axum::Json(json!({"version": "0.14.1"})).into_response()
        }
        (&Method::GET, "/api/tags") if flavor == Flavor::Ollama => {
            axum::Json(json!({"models": [{"name": "llama3.2:latest"}, {"name": MODEL}]}))
                .into_response()
        }
        _ => StatusCode::NOT_FOUND.into_response(),
    };
    if flavor == Flavor::LlamaCpp {
        response
            .headers_mut()
            .insert(header::SERVER, HeaderValue::from_static("llama.cpp"));
    }
    response
}

fn chunk(delta: &Value, finish: Option<&str>) -> Bytes {
    let data = json!({
        "id": "chatcmpl-scripted",
        "object": "chat.completion.chunk",
        "model": MODEL,
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    });
    Bytes::from(format!("data: {data}\n\n"))
}

fn text_chunks() -> Vec<Bytes> {
    let mut out = vec![chunk(&json!({"role": "assistant", "content": null}), None)];
    out.extend(
        ANSWER_WORDS
            .iter()
            .map(|w| chunk(&json!({"content": w}), None)),
    );
    out
}

fn ending(finish: &str) -> Vec<Bytes> {
    let usage = json!({
        "id": "chatcmpl-scripted",
        "model": MODEL,
        "choices": [],
        "usage": {"prompt_tokens": USAGE.0, "completion_tokens": USAGE.1, "total_tokens": USAGE.0 + USAGE.1},
        "timings": {"prompt_n": USAGE.0, "prompt_ms": 164.1, "prompt_per_second": 231.6,
                    "predicted_n": USAGE.1, "predicted_ms": 108.7, "predicted_per_second": TOKENS_PER_SECOND},
    });
    vec![
        chunk(&json!({}), Some(finish)),
        Bytes::from(format!("data: {usage}\n\n")),
        Bytes::from_static(b"data: [DONE]\n\n"),
    ]
}

fn sse(body: BoxStream<'static, Result<Bytes, std::io::Error>>) -> Response {
    (
        [(header::CONTENT_TYPE, "text/event-stream")],
        Body::from_stream(body),
    )
        .into_response()
}

fn finite(chunks: Vec<Bytes>) -> Response {
    sse(stream::iter(chunks.into_iter().map(Ok)).boxed())
}

fn tool_result(request: &Value) -> Option<String> {
    let messages = request.get("messages")?.as_array()?;
    let last = messages.last()?;
    (last.get("role")?.as_str()? == "tool")
        .then(|| last.get("content")?.as_str().map(str::to_owned))?
}

fn chat(scenario: &Scenario, request: &Value) -> Response {
    let has_tools = request.get("tools").is_some_and(|t| !t.is_null());
    match scenario {
        Scenario::Text => finite([text_chunks(), ending("stop")].concat()),
        Scenario::RejectsTools if has_tools => (
            StatusCode::INTERNAL_SERVER_ERROR,
            axum::Json(json!({"error": {"code": 500, "message": "tools param requires --jinja flag", "type": "server_error"}})),
        )
            .into_response(),
        Scenario::RejectsTools => finite([text_chunks(), ending("stop")].concat()),
        Scenario::Tool { name, arguments } => match tool_result(request) {
            Some(result) => finite(
                [
                    vec![chunk(&json!({"content": format!("{TOOL_SAID}{result}")}), None)],
                    ending("stop"),
                ]
                .concat(),
            ),
            None => finite(
                [
                    vec![
                        chunk(&json!({"role": "assistant", "content": null}), None),
                        chunk(
                            &json!({"tool_calls": [{"index": 0, "id": "call_1", "type": "function",
                                                     "function": {"name": name, "arguments": ""}}]}),
                            None,
                        ),
                        chunk(
                            &json!({"tool_calls": [{"index": 0, "function": {"arguments": arguments}}]}),
                            None,
                        ),
                    ],
                    ending("tool_calls"),
                ]
                .concat(),
            ),
        },
        Scenario::Malformed => {
            let mut chunks = text_chunks();
            chunks.insert(3, Bytes::from_static(b"data: {\"choices\": [\n\n"));
            chunks.insert(5, Bytes::from_static(b"this is not SSE\n\n"));
            chunks.insert(7, Bytes::from_static(b"data: not json at all\n\n"));
            finite([chunks, ending("stop")].concat())
        }
        Scenario::DiesMidStream => {
            let head = text_chunks().into_iter().take(4).map(Ok);
            // The pause lets the head reach the client before the connection breaks.
            let broken = stream::once(async {
                tokio::time::sleep(Duration::from_millis(300)).await;
                Err(std::io::Error::new(std::io::ErrorKind::BrokenPipe, "scripted crash"))
            });
            sse(stream::iter(head).chain(broken).boxed())
        }
        Scenario::Html => (
            [(header::CONTENT_TYPE, "text/html; charset=utf-8")],
            "<!DOCTYPE html><html><head><title>502 Bad Gateway</title></head><body>nginx</body></html>",
        )
            .into_response(),
        Scenario::Forever => {
            let words = stream::repeat_with(|| Ok(chunk(&json!({"content": " more"}), None)))
                .then(|item| async move {
                    tokio::time::sleep(Duration::from_millis(1)).await;
                    item
                });
            sse(words.boxed())
        }
        Scenario::Gated { gate, pause } => {
            let mut chunks = text_chunks().into_iter();
            let first = chunks.next().into_iter().map(Ok);
            let (gate, pause) = (gate.clone(), *pause);
            let opened = stream::once(async move {
                let deadline = tokio::time::Instant::now() + GATE_WAIT;
                while !gate.exists() && tokio::time::Instant::now() < deadline {
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            })
            .filter_map(|()| async { None });
            let words = stream::iter(chunks.chain(ending("stop"))).then(move |c| async move {
                tokio::time::sleep(pause).await;
                Ok(c)
            });
            sse(stream::iter(first).chain(opened).chain(words).boxed())
        }
        Scenario::Silent => {
            let first = stream::iter(text_chunks().into_iter().take(2).map(Ok));
            sse(first.chain(stream::pending()).boxed())
        }
    }
}
