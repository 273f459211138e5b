//! Anthropic Messages (`POST /v1/messages`), streaming SSE or a single JSON message, as Claude
//! Code expects it (AGENT-CLIS.md §1.6).

use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use super::{
    ANTHROPIC_USAGE, DEFAULT_MODEL, Reply, decide, error_response, next_id, sse_body, sse_response,
    text_of, user_text,
};

/// The name of Claude Code's shell tool.
const SHELL_TOOL: &str = "Bash";

/// Answers one Messages request.
pub(super) fn messages(request: &Value) -> Response {
    let messages = super::messages(request);
    // All user text (markers may sit in any block), and the tool result if the conversation ends
    // with one.
    let user_text = user_text(messages);
    let tool_output = messages
        .last()
        .and_then(|m| m.get("content"))
        .and_then(Value::as_array)
        .and_then(|blocks| {
            blocks
                .iter()
                .find(|b| b.get("type").and_then(Value::as_str) == Some("tool_result"))
        })
        .map(|b| tool_result_text(&b["content"]));
    let offers_shell = super::tools(request)
        .iter()
        .any(|t| t.get("name").and_then(Value::as_str) == Some(SHELL_TOOL));
    let model = request
        .get("model")
        .and_then(Value::as_str)
        .unwrap_or(DEFAULT_MODEL);
    let content = match decide(&user_text, model, tool_output.as_deref(), offers_shell) {
        Reply::Error(status) => {
            let kind = match status {
                401 => "authentication_error",
                403 => "permission_error",
                429 => "rate_limit_error",
                500..=599 => "api_error",
                _ => "invalid_request_error",
            };
            return error_response(
                status,
                &json!({"type": "error", "error": {"type": kind, "message": format!("mock error {status}")}}),
            );
        }
        Reply::Text(text) => Content::Text(text),
        Reply::Shell(command) => Content::Tool {
            id: format!("toolu_mock_{}", next_id()),
            input: json!({"command": command, "description": "Run the scripted command"}),
        },
    };
    if request.get("stream").and_then(Value::as_bool) == Some(true) {
        sse_response(stream(model, &content))
    } else {
        axum::Json(whole_message(model, &content)).into_response()
    }
}

/// A `tool_result` content: a string, or text blocks.
fn tool_result_text(content: &Value) -> String {
    match content {
        Value::String(s) => s.clone(),
        other => text_of(other),
    }
}

enum Content {
    Text(String),
    Tool { id: String, input: Value },
}

impl Content {
    fn stop_reason(&self) -> &'static str {
        match self {
            Content::Text(_) => "end_turn",
            Content::Tool { .. } => "tool_use",
        }
    }
}

fn usage(output: u64) -> Value {
    json!({
        "input_tokens": ANTHROPIC_USAGE.input,
        "output_tokens": output,
        "cache_creation_input_tokens": ANTHROPIC_USAGE.cache_write,
        "cache_read_input_tokens": ANTHROPIC_USAGE.cache_read,
    })
}

fn stream(model: &str, content: &Content) -> String {
    let start = json!({"type": "message_start", "message": {
        "id": format!("msg_mock_{}", next_id()), "type": "message", "role": "assistant",
        "model": model, "content": [], "stop_reason": null, "stop_sequence": null,
        "usage": usage(1),
    }});
    let (block, deltas) = match content {
        Content::Text(text) => {
            let middle = text
                .char_indices()
                .nth(text.chars().count() / 2)
                .map_or(text.len(), |(i, _)| i);
            let (a, b) = text.split_at(middle);
            (
                json!({"type": "text", "text": ""}),
                [a, b]
                    .map(|part| json!({"type": "text_delta", "text": part}))
                    .to_vec(),
            )
        }
        Content::Tool { id, input } => (
            json!({"type": "tool_use", "id": id, "name": SHELL_TOOL, "input": {}}),
            vec![json!({"type": "input_json_delta", "partial_json": input.to_string()})],
        ),
    };
    let mut events = vec![
        ("message_start", start),
        (
            "content_block_start",
            json!({"type": "content_block_start", "index": 0, "content_block": block}),
        ),
        ("ping", json!({"type": "ping"})),
    ];
    events.extend(deltas.into_iter().map(|delta| {
        (
            "content_block_delta",
            json!({"type": "content_block_delta", "index": 0, "delta": delta}),
        )
    }));
    events.extend([
        (
            "content_block_stop",
            json!({"type": "content_block_stop", "index": 0}),
        ),
        (
            "message_delta",
            json!({"type": "message_delta",
                "delta": {"stop_reason": content.stop_reason(), "stop_sequence": null},
                "usage": {"output_tokens": ANTHROPIC_USAGE.output}}),
        ),
        ("message_stop", json!({"type": "message_stop"})),
    ]);
    sse_body(events.into_iter().map(|(name, data)| (Some(name), data)))
}

fn whole_message(model: &str, content: &Content) -> Value {
    let block = match content {
        Content::Text(text) => json!({"type": "text", "text": text}),
        Content::Tool { id, input } => {
            json!({"type": "tool_use", "id": id, "name": SHELL_TOOL, "input": input})
        }
    };
    json!({
        "id": format!("msg_mock_{}", next_id()), "type": "message", "role": "assistant",
        "model": model, "content": [block], "stop_reason": content.stop_reason(),
        "stop_sequence": null, "usage": usage(ANTHROPIC_USAGE.output),
    })
}
