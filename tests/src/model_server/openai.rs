//! OpenAI Responses (`POST …/responses`, for Codex, AGENT-CLIS.md §2.5) and Chat Completions
//! (`POST …/chat/completions`, for OpenCode and the llama runtime, §3.5), both as SSE.

use axum::response::Response;
use serde_json::{Value, json};

use super::{
    DEFAULT_MODEL, OPENAI_REASONING_TOKENS, OPENAI_USAGE, Reply, decide, error_response, next_id,
    sse_body, sse_response, text_of, user_text,
};

/// Codex's shell tools, newest first, with how each takes its command line.
const CODEX_SHELL_TOOLS: [&str; 2] = ["exec_command", "shell"];
/// OpenCode's shell tool.
const CHAT_SHELL_TOOL: &str = "bash";

fn model_of(request: &Value) -> &str {
    request
        .get("model")
        .and_then(Value::as_str)
        .unwrap_or(DEFAULT_MODEL)
}

fn openai_error(status: u16) -> Response {
    let (kind, code) = match status {
        401 => ("invalid_request_error", "invalid_api_key"),
        429 => ("rate_limit_error", "rate_limit_exceeded"),
        500..=599 => ("server_error", "server_error"),
        _ => ("invalid_request_error", "invalid_request"),
    };
    error_response(
        status,
        &json!({"error": {"message": format!("mock error {status}"), "type": kind, "code": code}}),
    )
}

/// Answers one Responses request.
pub(super) fn responses(request: &Value) -> Response {
    let items = request
        .get("input")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    let is_user = |item: &Value| {
        item.get("role").and_then(Value::as_str) == Some("user")
            && item
                .get("type")
                .and_then(Value::as_str)
                .unwrap_or("message")
                == "message"
    };
    let user_text = items
        .iter()
        .filter(|item| is_user(item))
        .map(|item| text_of(&item["content"]))
        .collect::<Vec<_>>()
        .join("\n");
    let last_user = items.iter().rposition(is_user).unwrap_or(0);
    let tool_output = items[last_user..]
        .iter()
        .rev()
        .find(|item| item.get("type").and_then(Value::as_str) == Some("function_call_output"))
        .map(|item| match &item["output"] {
            Value::String(s) => s.clone(),
            other => text_of(other),
        });
    let tools: Vec<&str> = super::tools(request)
        .iter()
        .filter_map(|t| t.get("name").and_then(Value::as_str))
        .collect();
    let shell_tool = CODEX_SHELL_TOOLS
        .into_iter()
        .find(|name| tools.contains(name));
    let item = match decide(
        &user_text,
        model_of(request),
        tool_output.as_deref(),
        shell_tool.is_some(),
    ) {
        Reply::Error(status) => return openai_error(status),
        Reply::Text(text) => json!({
            "type": "message", "id": format!("msg_{}", next_id()), "role": "assistant",
            "status": "completed",
            "content": [{"type": "output_text", "text": text, "annotations": []}],
        }),
        Reply::Shell(command) => {
            let arguments = match shell_tool {
                Some("exec_command") => json!({"cmd": command}),
                _ => json!({"command": ["bash", "-lc", command]}),
            };
            json!({
                "type": "function_call", "id": format!("fc_{}", next_id()),
                "call_id": format!("call_{}", next_id()), "name": shell_tool,
                "arguments": arguments.to_string(), "status": "completed",
            })
        }
    };
    let response_id = format!("resp_{}", next_id());
    let response = |status: &str, output: Value| {
        json!({"id": response_id, "object": "response", "created_at": 1_796_219_200,
            "model": model_of(request), "status": status, "output": output})
    };
    let mut events = vec![
        json!({"type": "response.created", "response": response("in_progress", json!([]))}),
        json!({"type": "response.in_progress", "response": response("in_progress", json!([]))}),
    ];
    let mut added = item.clone();
    added["status"] = json!("in_progress");
    if item["type"] == "message" {
        added["content"] = json!([]);
    }
    events.push(json!({"type": "response.output_item.added", "output_index": 0, "item": added}));
    let item_id = item["id"].clone();
    if item["type"] == "message" {
        let text = item["content"][0]["text"].clone();
        let part = json!({"type": "output_text", "text": "", "annotations": []});
        events.extend([
            json!({"type": "response.content_part.added", "item_id": item_id, "output_index": 0,
                "content_index": 0, "part": part}),
            json!({"type": "response.output_text.delta", "item_id": item_id, "output_index": 0,
                "content_index": 0, "delta": text}),
            json!({"type": "response.output_text.done", "item_id": item_id, "output_index": 0,
                "content_index": 0, "text": text}),
            json!({"type": "response.content_part.done", "item_id": item_id, "output_index": 0,
                "content_index": 0, "part": item["content"][0]}),
        ]);
    } else {
        let arguments = item["arguments"].clone();
        events.extend([
            json!({"type": "response.function_call_arguments.delta", "item_id": item_id,
                "output_index": 0, "delta": arguments}),
            json!({"type": "response.function_call_arguments.done", "item_id": item_id,
                "output_index": 0, "arguments": arguments}),
        ]);
    }
    events.push(json!({"type": "response.output_item.done", "output_index": 0, "item": item}));
    let mut completed = response("completed", json!([item]));
    completed["usage"] = json!({
        "input_tokens": OPENAI_USAGE.input,
        "input_tokens_details": {"cached_tokens": OPENAI_USAGE.cache_read},
        "output_tokens": OPENAI_USAGE.output,
        "output_tokens_details": {"reasoning_tokens": OPENAI_REASONING_TOKENS},
        "total_tokens": OPENAI_USAGE.input + OPENAI_USAGE.output,
    });
    events.push(json!({"type": "response.completed", "response": completed}));
    sse_response(sse_body(events.into_iter().enumerate().map(
        |(n, mut e)| {
            e["sequence_number"] = json!(n);
            let name = e["type"].as_str().map(str::to_owned);
            (name, e)
        },
    )))
}

/// Answers one Chat Completions request.
pub(super) fn chat(request: &Value) -> Response {
    let messages = super::messages(request);
    let user_text = user_text(messages);
    let tool_output = messages
        .last()
        .filter(|m| m.get("role").and_then(Value::as_str) == Some("tool"))
        .map(|m| text_of(&m["content"]));
    let offers_shell = super::tools(request)
        .iter()
        .any(|t| t["function"]["name"].as_str() == Some(CHAT_SHELL_TOOL));
    let id = format!("chatcmpl-{}", next_id());
    let model = model_of(request);
    let chunk = |delta: Value, finish: Value| {
        json!({"id": id, "object": "chat.completion.chunk", "created": 1_796_219_200,
            "model": model, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
    };
    let mut chunks = vec![chunk(
        json!({"role": "assistant", "content": ""}),
        Value::Null,
    )];
    let finish = match decide(&user_text, model, tool_output.as_deref(), offers_shell) {
        Reply::Error(status) => return openai_error(status),
        Reply::Text(text) => {
            chunks.push(chunk(json!({"content": text}), Value::Null));
            "stop"
        }
        Reply::Shell(command) => {
            let call = json!({"index": 0, "id": format!("call_{}", next_id()), "type": "function",
                "function": {"name": CHAT_SHELL_TOOL, "arguments": ""}});
            let arguments = json!({"command": command, "description": "Run the scripted command"});
            let more = json!({"index": 0, "function": {"arguments": arguments.to_string()}});
            chunks.push(chunk(json!({"tool_calls": [call]}), Value::Null));
            chunks.push(chunk(json!({"tool_calls": [more]}), Value::Null));
            "tool_calls"
        }
    };
    chunks.push(chunk(json!({}), json!(finish)));
    let mut usage = chunk(json!({}), Value::Null);
    usage["choices"] = json!([]);
    usage["usage"] = json!({
        "prompt_tokens": OPENAI_USAGE.input,
        "completion_tokens": OPENAI_USAGE.output,
        "total_tokens": OPENAI_USAGE.input + OPENAI_USAGE.output,
        "prompt_tokens_details": {"cached_tokens": OPENAI_USAGE.cache_read},
    });
    chunks.push(usage);
    let mut body = sse_body(chunks.into_iter().map(|c| (None::<&str>, c)));
    body.push_str("data: [DONE]\n\n");
    sse_response(body)
}
