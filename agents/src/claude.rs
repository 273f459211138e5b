//! Claude Code: `claude -p --input-format stream-json --output-format stream-json --verbose`.
//!
//! Output is one JSON object per line (AGENT-CLIS.md §1.4). Mapping:
//! - `system/init` → `Started`; `system/api_retry` → `Error` (classified by status); background
//!   tasks (`task_started`, `task_notification`), refused permissions, fallbacks and notifications →
//!   `Notice`; progress ticks, hooks and turn bookkeeping → nothing;
//! - `assistant` blocks → `Text` / `Thinking` / `ToolCall` (one line per block); their per-message
//!   `usage` is a snapshot and is ignored;
//! - `user` `tool_result` blocks → `ToolResult`;
//! - `stream_event` (`--include-partial-messages`) `message_start` → `TurnUsage` with the request's
//!   input and cache tokens, its `message_delta` → `TurnUsage` with its output tokens: each model
//!   request's usage as it ends, for budgets (the `assistant` lines' usage is a snapshot taken at
//!   `message_start`, output 1, repeated once per content block); text deltas yield nothing;
//! - `result` → `Usage` (from `modelUsage`, else `usage`, with Claude's own cost estimate), a
//!   `Refused` per entry of its `permission_denials`, then `Finished`. API errors arrive as
//!   `is_error: true` under `subtype: "success"`, so `is_error` decides, and the failure also yields
//!   an `Error` classified by the HTTP status. A result that is
//!   only Claude's `[ede_diagnostic]` line (a cancelled or refused turn) is no summary.
//!
//! The synthetic assistant line Claude prints before a failed `result` (`model: "<synthetic>"` with
//! an `error` field) repeats the result's text and yields nothing.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::{Value, json};

use crate::adapter::{
    Adapter, LaunchSpec, PermissionMode, RunSpec, RuntimeKind, base_env, finish_env,
};
use crate::event::{AgentEvent, ErrorClass, TokenUsage};
use crate::json::{content_text, parse_with};

/// The model name Claude gives the assistant lines it makes up itself.
const SYNTHETIC_MODEL: &str = "<synthetic>";

/// Where Claude Code reads its API root from (AGENT-CLIS.md §1.3): the usual way to point it at a model
/// server, and what the adapter sets from the agent's Base URL field.
pub const BASE_URL_VARS: [&str; 1] = ["ANTHROPIC_BASE_URL"];

/// The variable Claude Code reads its provider key from.
pub const KEY_VAR: &str = "ANTHROPIC_API_KEY";

/// Where Claude Code sends its model requests without a base URL.
pub const DEFAULT_API_URL: &str = "https://api.anthropic.com";

/// The Claude Code adapter.
#[derive(Debug, Clone, Copy, Default)]
pub struct ClaudeAdapter;

impl Adapter for ClaudeAdapter {
    fn kind(&self) -> RuntimeKind {
        RuntimeKind::Claude
    }

    fn parse_line(&self, line: &str) -> Vec<AgentEvent> {
        parse_line(line)
    }

    fn command(&self, spec: &RunSpec) -> crate::Result<LaunchSpec> {
        Ok(command(spec))
    }

    fn skills_place(&self) -> crate::adapter::SkillsPlace {
        crate::adapter::SkillsPlace::Workdir(".claude/skills")
    }

    fn carry_session(
        &self,
        session: &str,
        from: crate::session::SessionPlace<'_>,
        to: crate::session::SessionPlace<'_>,
    ) -> Result<(), crate::session::CarryError> {
        crate::session::carry_claude(session, from, to)
    }
}

/// Builds the launch spec: prompt as one stream-json user message on stdin, per-run `HOME`,
/// `IS_SANDBOX=1` when bypassing permissions as root, and no telemetry or auto-update traffic.
pub fn command(spec: &RunSpec) -> LaunchSpec {
    let mut args: Vec<String> = [
        "-p",
        "--input-format",
        "stream-json",
        "--output-format",
        "stream-json",
        "--verbose",
        // For each request's usage as it ends (`message_start` / `message_delta`), so budgets act
        // after every turn instead of at the final `result`.
        "--include-partial-messages",
        "--disallowedTools",
        "AskUserQuestion",
    ]
    .map(String::from)
    .to_vec();
    match spec.permission_mode {
        PermissionMode::ReadOnly => {}
        PermissionMode::WorkspaceWrite => {
            args.extend(["--permission-mode".into(), "acceptEdits".into()])
        }
        PermissionMode::Bypass => {
            args.extend(["--permission-mode".into(), "bypassPermissions".into()]);
        }
    }
    if let Some(model) = &spec.model {
        args.extend(["--model".into(), model.clone()]);
    }
    if let Some(session) = &spec.resume_session {
        args.extend(["--resume".into(), session.clone()]);
    }
    args.extend(spec.extra_args.iter().cloned());

    let mut env = base_env(spec);
    for key in [
        "DISABLE_AUTOUPDATER",
        "DISABLE_TELEMETRY",
        "DISABLE_ERROR_REPORTING",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC",
    ] {
        env.push((key.into(), "1".into()));
    }
    if let Some(url) = &spec.base_url {
        env.push(("ANTHROPIC_BASE_URL".into(), url.clone()));
    }
    if let Some(key) = &spec.api_key {
        env.push((KEY_VAR.into(), key.clone()));
    }
    if spec.running_as_root && spec.permission_mode == PermissionMode::Bypass {
        env.push(("IS_SANDBOX".into(), "1".into()));
    }
    LaunchSpec {
        program: spec.binary.clone(),
        args,
        env: finish_env(env, spec),
        cwd: spec.workdir.clone(),
        stdin: Some(stdin_message(&spec.prompt)),
        files: Vec::new(),
    }
}

/// The prompt as one `--input-format stream-json` user message, newline-terminated.
fn stdin_message(prompt: &str) -> String {
    let message = json!({
        "type": "user",
        "message": {"role": "user", "content": [{"type": "text", "text": prompt}]},
    });
    format!("{message}\n")
}

/// Parses one line of `--output-format stream-json` output.
pub fn parse_line(line: &str) -> Vec<AgentEvent> {
    parse_with(line, |parsed: ClaudeLine| match parsed {
        ClaudeLine::System(system) => system_events(line, system),
        ClaudeLine::Assistant(message) => assistant_events(message),
        ClaudeLine::User(message) => user_events(message),
        ClaudeLine::Result(result) => result_events(result),
        ClaudeLine::StreamEvent { event } => stream_events(event),
    })
}

/// The line types Muster reads; any other `type` is unknown and kept as `Raw`.
#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum ClaudeLine {
    System(SystemLine),
    Assistant(MessageLine),
    User(MessageLine),
    Result(ResultLine),
    /// Partial-message events (`--include-partial-messages`); the whole blocks follow anyway, only
    /// the usage of each request is read here.
    StreamEvent {
        #[serde(default)]
        event: StreamEvent,
    },
}

/// The raw Anthropic SSE event inside a `stream_event` line; only those carrying usage are read.
#[derive(Deserialize, Default)]
#[serde(tag = "type", rename_all = "snake_case")]
enum StreamEvent {
    MessageStart {
        message: StreamMessage,
    },
    MessageDelta {
        #[serde(default)]
        usage: ResultUsage,
    },
    #[default]
    #[serde(other)]
    Other,
}

#[derive(Deserialize)]
struct StreamMessage {
    #[serde(default)]
    usage: ResultUsage,
}

/// One request's usage in two parts: input and cache tokens when its message starts (the output
/// there is a placeholder), the output tokens when it ends (`message_delta` carries the final count).
fn stream_events(event: StreamEvent) -> Vec<AgentEvent> {
    match event {
        StreamEvent::MessageStart { message } => vec![AgentEvent::TurnUsage(TokenUsage {
            input: message.usage.input_tokens,
            cache_read: message.usage.cache_read_input_tokens,
            cache_write: message.usage.cache_creation_input_tokens,
            ..TokenUsage::default()
        })],
        StreamEvent::MessageDelta { usage } if usage.output_tokens > 0 => {
            vec![AgentEvent::TurnUsage(TokenUsage {
                output: usage.output_tokens,
                ..TokenUsage::default()
            })]
        }
        StreamEvent::MessageDelta { .. } | StreamEvent::Other => Vec::new(),
    }
}

#[derive(Deserialize)]
struct SystemLine {
    subtype: String,
    /// What a background task is (`task_started`, `task_progress`).
    description: Option<String>,
    /// How a background task ended (`task_notification`: `completed`, `failed`, `stopped`).
    status: Option<String>,
    /// A background task's closing summary (`task_notification`).
    summary: Option<String>,
    /// The text of `informational`, `model_fallback`, … lines.
    content: Option<String>,
    /// The text of `notification` lines.
    text: Option<String>,
    /// The refused tool (`permission_denied`).
    tool_name: Option<String>,
    /// Why it was refused (`permission_denied`).
    message: Option<String>,
    session_id: Option<String>,
    model: Option<String>,
    attempt: Option<u64>,
    max_retries: Option<u64>,
    error_status: Option<u16>,
    error: Option<String>,
    /// Names of the skills Claude Code found (`system/init`).
    #[serde(default)]
    skills: Vec<String>,
}

#[derive(Deserialize)]
struct MessageLine {
    message: Message,
    /// Set on synthetic assistant lines (`authentication_failed`, `unknown`, …).
    error: Option<String>,
}

#[derive(Deserialize)]
struct Message {
    model: Option<String>,
    #[serde(default)]
    content: Value,
}

#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Block {
    Text {
        text: String,
    },
    Thinking {
        thinking: String,
    },
    ToolUse {
        id: String,
        name: String,
        #[serde(default)]
        input: Value,
    },
    ToolResult {
        tool_use_id: String,
        #[serde(default)]
        content: Value,
        #[serde(default)]
        is_error: Option<bool>,
    },
    #[serde(other)]
    Other,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ResultLine {
    subtype: String,
    #[serde(default, rename = "is_error")]
    is_error: bool,
    result: Option<String>,
    #[serde(default)]
    errors: Vec<String>,
    #[serde(rename = "api_error_status")]
    api_error_status: Option<u16>,
    #[serde(rename = "total_cost_usd")]
    total_cost_usd: Option<f64>,
    usage: Option<ResultUsage>,
    #[serde(default)]
    model_usage: BTreeMap<String, ModelUsage>,
    /// The tool calls refused under the permission mode during the turn.
    #[serde(default, rename = "permission_denials")]
    permission_denials: Vec<Denial>,
}

/// One refused tool call in a `result` line.
#[derive(Deserialize)]
struct Denial {
    #[serde(default)]
    tool_name: String,
    #[serde(default)]
    tool_input: Value,
}

impl Denial {
    /// The command, file or pattern the refused call named, on one line (at most 200 characters).
    fn input(&self) -> String {
        let named = ["command", "file_path", "path", "pattern", "url"]
            .iter()
            .find_map(|k| self.tool_input.get(*k).and_then(Value::as_str))
            .map(str::to_owned)
            .unwrap_or_else(|| self.tool_input.to_string());
        let line = named.split_whitespace().collect::<Vec<_>>().join(" ");
        line.chars().take(200).collect()
    }
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct ResultUsage {
    input_tokens: u64,
    output_tokens: u64,
    cache_read_input_tokens: u64,
    cache_creation_input_tokens: u64,
}

#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
struct ModelUsage {
    input_tokens: u64,
    output_tokens: u64,
    cache_read_input_tokens: u64,
    cache_creation_input_tokens: u64,
    #[serde(rename = "costUSD")]
    cost_usd: Option<f64>,
}

fn system_events(line: &str, system: SystemLine) -> Vec<AgentEvent> {
    match system.subtype.as_str() {
        "init" => match system.session_id {
            Some(session_id) => vec![AgentEvent::Started {
                session_id,
                model: system.model,
                skills: system.skills,
            }],
            None => vec![AgentEvent::raw(line)],
        },
        "api_retry" => {
            let cause = system.error.unwrap_or_else(|| "unknown".into());
            let status = system
                .error_status
                .map_or_else(String::new, |s| format!(", status {s}"));
            let attempt = system.attempt.unwrap_or(0);
            let max = system.max_retries.unwrap_or(0);
            let class = system
                .error_status
                .map(ErrorClass::from_status)
                .or_else(|| claude_error_class(&cause));
            vec![AgentEvent::Error {
                message: format!("API request failed ({cause}{status}); retry {attempt}/{max}"),
                class,
            }]
        }
        "task_started" => notice(format!(
            "Background task started: {}",
            system.description.as_deref().unwrap_or("(no description)")
        )),
        "task_notification" => {
            let status = system.status.as_deref().unwrap_or("ended");
            match system
                .summary
                .as_deref()
                .map(str::trim)
                .filter(|s| !s.is_empty())
            {
                Some(summary) => notice(format!("Background task {status}: {summary}")),
                None => notice(format!("Background task {status}")),
            }
        }
        "permission_denied" => notice(format!(
            "Permission refused for {}: {}",
            system.tool_name.as_deref().unwrap_or("a tool"),
            system
                .message
                .as_deref()
                .unwrap_or("not allowed in this permission mode")
        )),
        "informational"
        | "notification"
        | "model_fallback"
        | "model_refusal_fallback"
        | "model_refusal_no_fallback"
        | "model_consent_fallback"
        | "compact_boundary" => match system.content.or(system.text) {
            Some(text) if !text.trim().is_empty() => notice(text),
            _ if system.subtype == "compact_boundary" => {
                notice("Conversation compacted".to_owned())
            }
            _ => Vec::new(),
        },
        // Progress ticks, hooks and turn bookkeeping: nothing a person needs in the log.
        "thinking_tokens"
        | "status"
        | "task_progress"
        | "task_updated"
        | "hook_started"
        | "hook_progress"
        | "hook_response"
        | "session_state_changed"
        | "turn_starting"
        | "turn_duration"
        | "post_turn_summary"
        | "stop_hook_summary"
        | "file_snapshot"
        | "commands_changed" => Vec::new(),
        _ => vec![AgentEvent::raw(line)],
    }
}

fn notice(text: String) -> Vec<AgentEvent> {
    vec![AgentEvent::Notice { text }]
}

/// The prefix of the diagnostic Claude Code writes as its `result` when a turn ended without an answer
/// (a cancelled or refused turn): worth a log line, never a summary.
const DIAGNOSTIC_PREFIX: &str = "[ede_diagnostic]";

/// Claude's own error codes (`error` on synthetic lines and retries).
fn claude_error_class(code: &str) -> Option<ErrorClass> {
    match code {
        "authentication_failed" | "billing_error" => Some(ErrorClass::Auth),
        "rate_limit" => Some(ErrorClass::RateLimit),
        "server_error" | "overloaded" => Some(ErrorClass::Server),
        "invalid_request" => Some(ErrorClass::Config),
        _ => ErrorClass::from_message(code),
    }
}

/// The content blocks of a message; a plain-string content is one text block.
fn blocks(content: Value) -> Vec<Block> {
    match content {
        Value::String(text) => vec![Block::Text { text }],
        Value::Array(items) => items
            .into_iter()
            .map(|item| serde_json::from_value(item).unwrap_or(Block::Other))
            .collect(),
        _ => Vec::new(),
    }
}

fn assistant_events(line: MessageLine) -> Vec<AgentEvent> {
    if line.error.is_some() && line.message.model.as_deref() == Some(SYNTHETIC_MODEL) {
        return Vec::new();
    }
    blocks(line.message.content)
        .into_iter()
        .filter_map(|block| match block {
            Block::Text { text } => Some(AgentEvent::Text { text }),
            Block::Thinking { thinking } => Some(AgentEvent::Thinking { text: thinking }),
            Block::ToolUse { id, name, input } => Some(AgentEvent::ToolCall { id, name, input }),
            Block::ToolResult { .. } | Block::Other => None,
        })
        .collect()
}

fn user_events(line: MessageLine) -> Vec<AgentEvent> {
    blocks(line.message.content)
        .into_iter()
        .filter_map(|block| match block {
            Block::ToolResult {
                tool_use_id,
                content,
                is_error,
            } => Some(AgentEvent::ToolResult {
                id: tool_use_id,
                output: content_text(&content),
                is_error: is_error.unwrap_or(false),
            }),
            _ => None,
        })
        .collect()
}

fn result_events(result: ResultLine) -> Vec<AgentEvent> {
    let usage = result_usage(&result);
    let mut events = vec![AgentEvent::Usage(usage)];
    events.extend(
        result
            .permission_denials
            .iter()
            .map(|d| AgentEvent::Refused {
                tool: d.tool_name.clone(),
                input: d.input(),
            }),
    );
    if result.is_error || result.subtype != "success" {
        let message = match (&result.result, result.errors.is_empty()) {
            (Some(text), _) if !text.is_empty() => text.clone(),
            (_, false) => result.errors.join("; "),
            _ => format!("claude failed ({})", result.subtype),
        };
        let class = result
            .api_error_status
            .map(ErrorClass::from_status)
            .or_else(|| ErrorClass::from_message(&message));
        events.push(AgentEvent::Error {
            message: message.clone(),
            class,
        });
        let summary = (!message.starts_with(DIAGNOSTIC_PREFIX)).then_some(message);
        events.push(AgentEvent::Finished { ok: false, summary });
    } else {
        events.push(AgentEvent::Finished {
            ok: true,
            summary: result.result.filter(|r| !r.starts_with(DIAGNOSTIC_PREFIX)),
        });
    }
    events
}

/// Final usage: the per-model totals when present, else the top-level `usage`.
fn result_usage(result: &ResultLine) -> TokenUsage {
    if result.model_usage.is_empty() {
        let usage = result.usage.as_ref();
        return TokenUsage {
            input: usage.map_or(0, |u| u.input_tokens),
            output: usage.map_or(0, |u| u.output_tokens),
            cache_read: usage.map_or(0, |u| u.cache_read_input_tokens),
            cache_write: usage.map_or(0, |u| u.cache_creation_input_tokens),
            cost_usd: result.total_cost_usd,
        };
    }
    let per_model = result.model_usage.values().map(|m| TokenUsage {
        input: m.input_tokens,
        output: m.output_tokens,
        cache_read: m.cache_read_input_tokens,
        cache_write: m.cache_creation_input_tokens,
        cost_usd: m.cost_usd,
    });
    let total: TokenUsage = per_model.sum();
    TokenUsage {
        cost_usd: total.cost_usd.or(result.total_cost_usd),
        ..total
    }
}

#[cfg(test)]
mod tests;
