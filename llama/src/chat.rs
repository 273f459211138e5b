//! One streamed turn of `POST /v1/chat/completions`: the request, the chunk types, and the stream reader that
//! turns deltas into coalesced `Text`/`Thinking` events while assembling the turn (text, tool calls, usage,
//! llama.cpp `timings`).
//!
//! What a server may do and what the reader makes of it: a first chunk with `content: null` or no `content`
//! (ignored); `reasoning_content` deltas (thinking); a JSON body instead of a stream (read as one
//! completion); an HTML page or another content type (an error naming it); a malformed chunk (logged as
//! `Raw`, skipped; too many end the turn); a close before `finish_reason`/`[DONE]` (an error); silence
//! longer than the idle timeout (an error); endless output past the character cap (an error).
//!
//! Errors never quote what the server sent (the base URL may point at any service): they give the status,
//! the content type, and at most the message of an OpenAI- or Ollama-shaped JSON error, validated
//! ([`error_detail`]); the server's URL is named without credentials. The client follows no redirects.

use std::time::Duration;

use muster_agents::{AgentEvent, ErrorClass, TokenUsage};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tokio::time::Instant;

use crate::agent::EventSink;
use crate::coalesce::Coalescer;
use crate::sse::{Decoder, Item};

/// Most malformed chunks tolerated in one turn before it is abandoned.
pub const MAX_MALFORMED_CHUNKS: usize = 20;
/// Most bytes of an error body read to explain a failure.
const MAX_ERROR_BODY: usize = 64 * 1024;
/// Most characters of a JSON error's message shown in an error.
const DETAIL_CHARS: usize = 200;

/// How to reach the server and the stream guards.
#[derive(Debug, Clone)]
pub struct Endpoint {
    /// `<root>/v1/chat/completions`.
    pub url: String,
    /// Longest silence allowed between two pieces of the stream.
    pub idle_timeout: Duration,
    /// Most characters (text, reasoning and tool arguments) one turn may produce.
    pub max_output_chars: usize,
}

/// The request of one turn.
#[derive(Debug, Serialize)]
pub struct Request<'a> {
    /// Model name (ignored by llama.cpp, required by Ollama).
    pub model: &'a str,
    /// The conversation so far.
    pub messages: &'a [Value],
    /// Always `true`.
    pub stream: bool,
    /// Asks for a final `usage` chunk.
    pub stream_options: Value,
    /// Sampling temperature.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f32>,
    /// Most tokens to generate.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u32>,
    /// The tool definitions, when tools are offered.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tools: Option<&'a Value>,
}

impl<'a> Request<'a> {
    /// A streaming request with usage reporting.
    pub fn new(model: &'a str, messages: &'a [Value]) -> Self {
        Self {
            model,
            messages,
            stream: true,
            stream_options: json!({"include_usage": true}),
            temperature: None,
            max_tokens: None,
            tools: None,
        }
    }
}

/// A tool call the model asked for.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ToolCall {
    /// Its id (made up when the server sends none).
    pub id: String,
    /// The function name.
    pub name: String,
    /// The arguments, a JSON text.
    pub arguments: String,
}

/// llama.cpp's per-response speed report.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Timings {
    /// Prompt tokens evaluated (not served from the cache).
    #[serde(default)]
    pub prompt_n: Option<f64>,
    /// Prompt evaluation speed, tokens per second.
    #[serde(default)]
    pub prompt_per_second: Option<f64>,
    /// Tokens generated.
    #[serde(default)]
    pub predicted_n: Option<f64>,
    /// Time spent generating, milliseconds.
    #[serde(default)]
    pub predicted_ms: Option<f64>,
    /// Generation speed, tokens per second.
    #[serde(default)]
    pub predicted_per_second: Option<f64>,
    /// Prompt tokens served from the cache.
    #[serde(default)]
    pub cache_n: Option<f64>,
}

impl Timings {
    /// One readable line, e.g. `llama.cpp timings: 39 tokens generated at 110.4 tokens/s; prompt 38 tokens at
    /// 231.6 tokens/s`.
    pub fn describe(&self) -> String {
        let n = |v: Option<f64>| v.map_or_else(|| "?".to_owned(), |v| format!("{v:.0}"));
        let rate = |v: Option<f64>| v.map_or_else(|| "?".to_owned(), |v| format!("{v:.1}"));
        format!(
            "llama.cpp timings: {} tokens generated at {} tokens/s; prompt {} tokens at {} tokens/s",
            n(self.predicted_n),
            rate(self.predicted_per_second),
            n(self.prompt_n),
            rate(self.prompt_per_second)
        )
    }
}

/// Everything one turn produced.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Turn {
    /// The response id, when the server sent one.
    pub id: Option<String>,
    /// The model the server named.
    pub model: Option<String>,
    /// The whole answer text.
    pub text: String,
    /// Tool calls, in order.
    pub tool_calls: Vec<ToolCall>,
    /// `stop`, `length`, `tool_calls`, …
    pub finish_reason: Option<String>,
    /// Token usage (cost 0), from `usage` or else from `timings`.
    pub usage: Option<TokenUsage>,
    /// llama.cpp's timings.
    pub timings: Option<Timings>,
}

/// Why a turn failed.
#[derive(Debug, Clone, PartialEq)]
pub struct TurnError {
    /// What happened, in plain words.
    pub message: String,
    /// The HTTP status, when the server answered with an error.
    pub status: Option<u16>,
    /// The classification for retries.
    pub class: Option<ErrorClass>,
}

impl TurnError {
    fn new(message: impl Into<String>, class: Option<ErrorClass>) -> Self {
        Self {
            message: message.into(),
            status: None,
            class,
        }
    }
}

#[derive(Deserialize)]
struct Chunk {
    id: Option<String>,
    model: Option<String>,
    #[serde(default)]
    choices: Vec<Choice>,
    usage: Option<UsageJson>,
    timings: Option<Timings>,
    error: Option<Value>,
}

#[derive(Deserialize)]
struct Choice {
    delta: Option<Delta>,
    /// A non-streamed completion carries `message` instead of `delta`.
    message: Option<Delta>,
    finish_reason: Option<String>,
}

#[derive(Deserialize, Default)]
struct Delta {
    content: Option<String>,
    reasoning_content: Option<String>,
    tool_calls: Option<Vec<ToolCallDelta>>,
}

#[derive(Deserialize)]
struct ToolCallDelta {
    index: Option<usize>,
    id: Option<String>,
    function: Option<FunctionDelta>,
}

#[derive(Deserialize)]
struct FunctionDelta {
    name: Option<String>,
    arguments: Option<Value>,
}

#[derive(Deserialize)]
struct UsageJson {
    #[serde(default)]
    prompt_tokens: u64,
    #[serde(default)]
    completion_tokens: u64,
    prompt_tokens_details: Option<PromptDetails>,
}

#[derive(Deserialize)]
struct PromptDetails {
    #[serde(default)]
    cached_tokens: u64,
}

/// The stream reader's state for one turn.
struct Reader<'s> {
    sink: &'s mut dyn EventSink,
    /// Whether the run's `Started` was emitted (by an earlier turn or this one).
    started: &'s mut bool,
    turn: Turn,
    text: Coalescer,
    thinking: Coalescer,
    output_chars: usize,
    max_output_chars: usize,
    malformed: usize,
    done: bool,
    seen_data: bool,
    /// Deltas received this turn (llama.cpp streams one token per delta), and how many of them were
    /// reported as provisional usage: the run page counts tokens while the answer streams.
    streamed: u64,
    reported: u64,
}

impl Reader<'_> {
    fn emit_due(&mut self, now: std::time::Instant) {
        if let Some(text) = self.thinking.poll(now) {
            self.emit_text(AgentEvent::Thinking { text });
        }
        if let Some(text) = self.text.poll(now) {
            self.emit_text(AgentEvent::Text { text });
        }
    }

    fn flush(&mut self) {
        if let Some(text) = self.thinking.flush() {
            self.emit_text(AgentEvent::Thinking { text });
        }
        if let Some(text) = self.text.flush() {
            self.emit_text(AgentEvent::Text { text });
        }
    }

    /// A coalesced piece of the answer, then the tokens streamed since the last one as provisional
    /// usage (the turn's final `usage`, when the server sends one, covers them).
    fn emit_text(&mut self, event: AgentEvent) {
        self.sink.emit(event);
        let new = self.streamed - self.reported;
        if new > 0 {
            self.reported = self.streamed;
            self.sink
                .emit(AgentEvent::TurnUsage(muster_agents::TokenUsage {
                    output: new,
                    ..muster_agents::TokenUsage::default()
                }));
        }
    }

    fn item(&mut self, item: Item) -> Result<(), TurnError> {
        match item {
            Item::Data(data) if data.trim() == "[DONE]" => {
                self.done = true;
                Ok(())
            }
            Item::Data(data) => match serde_json::from_str::<Chunk>(&data) {
                Ok(chunk) => {
                    self.seen_data = true;
                    self.chunk(chunk)
                }
                Err(e) => self.malformed(&format!(
                    "malformed chunk from the model server ({} error at line {} column {}, {} bytes)",
                    json_error_kind(&e),
                    e.line(),
                    e.column(),
                    data.len()
                )),
            },
            Item::Other(line) if !self.seen_data && looks_like_html(&line) => Err(TurnError::new(
                "the model server answered with an HTML page, not an event stream",
                Some(ErrorClass::Config),
            )),
            Item::Other(line) => self.malformed(&format!(
                "unexpected line from the model server ({} bytes, not an event-stream field)",
                line.len()
            )),
            Item::TooLong => {
                self.malformed("the model server sent an over-long line; it was dropped")
            }
        }
    }

    fn malformed(&mut self, message: &str) -> Result<(), TurnError> {
        self.malformed += 1;
        self.sink.emit(AgentEvent::raw(message));
        if self.malformed > MAX_MALFORMED_CHUNKS {
            return Err(TurnError::new(
                format!(
                    "more than {MAX_MALFORMED_CHUNKS} malformed chunks from the model server; gave up"
                ),
                Some(ErrorClass::Server),
            ));
        }
        Ok(())
    }

    fn chunk(&mut self, chunk: Chunk) -> Result<(), TurnError> {
        if let Some(error) = chunk.error {
            let message = error
                .get("message")
                .and_then(Value::as_str)
                .map_or_else(|| error.to_string(), str::to_owned);
            return Err(TurnError::new(
                format!("the model server reported an error mid-stream: {message}"),
                ErrorClass::from_message(&message).or(Some(ErrorClass::Server)),
            ));
        }
        let turn = &mut self.turn;
        if turn.id.is_none() {
            turn.id = chunk.id;
        }
        if turn.model.is_none() {
            turn.model = chunk.model;
        }
        if !*self.started {
            *self.started = true;
            self.sink.emit(AgentEvent::Started {
                session_id: self.turn.id.clone().unwrap_or_else(|| "local".to_owned()),
                model: self.turn.model.clone(),
                skills: Vec::new(),
            });
        }
        let now = std::time::Instant::now();
        for choice in chunk.choices {
            if let Some(reason) = choice.finish_reason {
                self.turn.finish_reason = Some(reason);
            }
            let Some(delta) = choice.delta.or(choice.message) else {
                continue;
            };
            if let Some(reasoning) = delta.reasoning_content.filter(|s| !s.is_empty()) {
                self.output_chars += reasoning.chars().count();
                self.streamed += 1;
                if let Some(text) = self.thinking.push(&reasoning, now) {
                    self.emit_text(AgentEvent::Thinking { text });
                }
            }
            if let Some(content) = delta.content.filter(|s| !s.is_empty()) {
                self.output_chars += content.chars().count();
                self.streamed += 1;
                self.turn.text.push_str(&content);
                if let Some(text) = self.text.push(&content, now) {
                    self.emit_text(AgentEvent::Text { text });
                }
            }
            for call in delta.tool_calls.unwrap_or_default() {
                self.tool_delta(call);
            }
        }
        if let Some(usage) = chunk.usage {
            let cached = usage
                .prompt_tokens_details
                .map_or(0, |d| d.cached_tokens)
                .min(usage.prompt_tokens);
            self.turn.usage = Some(TokenUsage {
                input: usage.prompt_tokens - cached,
                output: usage.completion_tokens,
                cache_read: cached,
                cache_write: 0,
                cost_usd: Some(0.0),
            });
        }
        if chunk.timings.is_some() {
            self.turn.timings = chunk.timings;
        }
        if self.output_chars > self.max_output_chars {
            return Err(TurnError::new(
                format!(
                    "the model server kept streaming past {} characters; stopped reading",
                    self.max_output_chars
                ),
                Some(ErrorClass::Server),
            ));
        }
        Ok(())
    }

    fn tool_delta(&mut self, call: ToolCallDelta) {
        let calls = &mut self.turn.tool_calls;
        let index = call.index.unwrap_or(calls.len().saturating_sub(1));
        while calls.len() <= index {
            calls.push(ToolCall {
                id: format!("call_{}", calls.len() + 1),
                ..ToolCall::default()
            });
        }
        let slot = &mut calls[index];
        if let Some(id) = call.id.filter(|s| !s.is_empty()) {
            slot.id = id;
        }
        if let Some(function) = call.function {
            if let Some(name) = function.name {
                slot.name.push_str(&name);
            }
            match function.arguments {
                Some(Value::String(part)) => {
                    self.output_chars += part.len();
                    slot.arguments.push_str(&part);
                }
                Some(Value::Null) | None => {}
                Some(object) => slot.arguments = object.to_string(),
            }
        }
    }

    fn finish(mut self) -> Turn {
        self.flush();
        if self.turn.usage.is_none()
            && let Some(t) = self.turn.timings
        {
            let count = |v: Option<f64>| v.map_or(0, |v| v.max(0.0) as u64);
            self.turn.usage = Some(TokenUsage {
                input: count(t.prompt_n),
                output: count(t.predicted_n),
                cache_read: count(t.cache_n),
                cache_write: 0,
                cost_usd: Some(0.0),
            });
        }
        self.turn
    }
}

/// What kind of JSON error `e` is, without the values serde quotes in its message.
fn json_error_kind(e: &serde_json::Error) -> &'static str {
    match e.classify() {
        serde_json::error::Category::Io => "read",
        serde_json::error::Category::Syntax => "syntax",
        serde_json::error::Category::Data => "shape",
        serde_json::error::Category::Eof => "truncated",
    }
}

fn looks_like_html(line: &str) -> bool {
    let l = line.trim_start().to_ascii_lowercase();
    l.starts_with("<!doctype") || l.starts_with("<html") || l.starts_with('<')
}

/// Sends one request and streams the answer: deltas become coalesced events in `sink` as they arrive. The
/// first chunk of the run (while `started` is false) is announced with `Started`.
pub async fn stream_turn(
    http: &reqwest::Client,
    endpoint: &Endpoint,
    request: &Request<'_>,
    sink: &mut dyn EventSink,
    started: &mut bool,
) -> Result<Turn, TurnError> {
    let response = http
        .post(&endpoint.url)
        .json(request)
        .send()
        .await
        .map_err(|e| {
            TurnError::new(
                format!(
                    "cannot reach the model server at {}: {}",
                    crate::without_credentials(&endpoint.url),
                    error_chain(&e.without_url())
                ),
                Some(ErrorClass::Network),
            )
        })?;
    let status = response.status();
    let content_type = response
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_ascii_lowercase();
    if !status.is_success() {
        let body = read_capped(response, endpoint.idle_timeout).await;
        let message = match error_detail(&body) {
            Some(detail) => format!("the model server answered {status}: {detail}"),
            None => format!("the model server answered {status}"),
        };
        return Err(TurnError {
            message,
            status: Some(status.as_u16()),
            class: Some(ErrorClass::from_status(status.as_u16())),
        });
    }
    let mut reader = Reader {
        sink,
        started,
        turn: Turn::default(),
        text: Coalescer::default(),
        thinking: Coalescer::default(),
        output_chars: 0,
        max_output_chars: endpoint.max_output_chars,
        malformed: 0,
        done: false,
        seen_data: false,
        streamed: 0,
        reported: 0,
    };
    if content_type.starts_with("application/json") {
        let body = read_capped(response, endpoint.idle_timeout).await;
        for item in [Item::Data(body), Item::Data("[DONE]".into())] {
            reader.item(item)?;
        }
        return Ok(reader.finish());
    }
    if !content_type.starts_with("text/event-stream") {
        let mime = content_type.split(';').next().unwrap_or("").trim();
        let shown = if mime.is_empty() {
            "no content type"
        } else if mime.len() <= 100
            && mime
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "/.+-".contains(c))
        {
            mime
        } else {
            "an unusual content type"
        };
        return Err(TurnError::new(
            format!("the model server answered {shown}, not an event stream"),
            Some(ErrorClass::Config),
        ));
    }
    read_stream(response, endpoint, reader).await
}

async fn read_stream(
    mut response: reqwest::Response,
    endpoint: &Endpoint,
    mut reader: Reader<'_>,
) -> Result<Turn, TurnError> {
    match read_items(&mut response, endpoint, &mut reader).await {
        Ok(()) => Ok(reader.finish()),
        Err(e) => {
            reader.flush();
            Err(e)
        }
    }
}

async fn read_items(
    response: &mut reqwest::Response,
    endpoint: &Endpoint,
    reader: &mut Reader<'_>,
) -> Result<(), TurnError> {
    let mut decoder = Decoder::new();
    let mut idle_deadline = Instant::now() + endpoint.idle_timeout;
    while !reader.done {
        let flush_at = [reader.text.deadline(), reader.thinking.deadline()]
            .into_iter()
            .flatten()
            .min()
            .map(Instant::from_std);
        let wake = flush_at.map_or(idle_deadline, |f| f.min(idle_deadline));
        match tokio::time::timeout_at(wake, response.chunk()).await {
            Err(_) if Instant::now() >= idle_deadline => {
                return Err(TurnError::new(
                    format!(
                        "the model server sent nothing for {} s; gave up",
                        endpoint.idle_timeout.as_secs()
                    ),
                    Some(ErrorClass::Network),
                ));
            }
            Err(_) => reader.emit_due(std::time::Instant::now()),
            Ok(Err(e)) => {
                return Err(TurnError::new(
                    format!(
                        "the model server broke off the stream: {}",
                        error_chain(&e.without_url())
                    ),
                    Some(ErrorClass::Network),
                ));
            }
            Ok(Ok(None)) => {
                for item in decoder.finish() {
                    reader.item(item)?;
                }
                break;
            }
            Ok(Ok(Some(bytes))) => {
                idle_deadline = Instant::now() + endpoint.idle_timeout;
                for item in decoder.push(&bytes) {
                    reader.item(item)?;
                    if reader.done {
                        break;
                    }
                }
            }
        }
    }
    if !reader.done && reader.turn.finish_reason.is_none() {
        return Err(TurnError::new(
            "the model server closed the stream before the answer was complete",
            Some(ErrorClass::Network),
        ));
    }
    Ok(())
}

/// The body as text, at most [`MAX_ERROR_BODY`] bytes, giving up after `timeout`.
async fn read_capped(mut response: reqwest::Response, timeout: Duration) -> String {
    let mut body = Vec::new();
    let read = async {
        while let Ok(Some(bytes)) = response.chunk().await {
            body.extend_from_slice(&bytes);
            if body.len() >= MAX_ERROR_BODY {
                break;
            }
        }
    };
    let _ = tokio::time::timeout(timeout, read).await;
    body.truncate(MAX_ERROR_BODY);
    String::from_utf8_lossy(&body).into_owned()
}

/// The message of a JSON error body, when it has the shape model servers use — OpenAI / llama.cpp
/// `{"error": {"message": …, "type" or "code": …}}` or Ollama `{"error": "…"}` — cut to one line of at
/// most [`DETAIL_CHARS`] printable characters. Anything else in the body is never shown.
pub fn error_detail(body: &str) -> Option<String> {
    let v: Value = serde_json::from_str(body).ok()?;
    let error = v.get("error")?;
    let message = match error {
        Value::String(s) => s.as_str(),
        Value::Object(o) if o.contains_key("type") || o.contains_key("code") => {
            o.get("message")?.as_str()?
        }
        _ => return None,
    };
    let flat: String = message
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .chars()
        .filter(|c| !c.is_control())
        .take(DETAIL_CHARS)
        .collect();
    (!flat.is_empty()).then_some(flat)
}

/// An error with its sources, one line (reqwest's own message hides the cause). Give it reqwest errors
/// `without_url()`: a URL may carry credentials.
pub(crate) fn error_chain(e: &dyn std::error::Error) -> String {
    let mut out = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        out.push_str(": ");
        out.push_str(&s.to_string());
        source = s.source();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_model_server_shaped_errors_are_shown_and_only_their_message() {
        let llama = r#"{"error":{"code":400,"message":"the request exceeds\nthe context","type":"invalid_request_error"}}"#;
        assert_eq!(
            error_detail(llama).as_deref(),
            Some("the request exceeds the context")
        );
        assert_eq!(
            error_detail(r#"{"error":"model 'x' not found"}"#).as_deref(),
            Some("model 'x' not found")
        );
        for other in [
            r#"{"error":{"message":"no type or code"}}"#,
            r#"{"message":"internal"}"#,
            r#"{"error":{"reason":"x","type":"y"}}"#,
            "<html>502</html>",
            "plain text",
        ] {
            assert_eq!(error_detail(other), None, "{other}");
        }
        let long = format!(r#"{{"error":"{}"}}"#, "a".repeat(500));
        assert_eq!(error_detail(&long).map(|d| d.len()), Some(DETAIL_CHARS));
    }
}
