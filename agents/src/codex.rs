//! OpenAI Codex: `codex exec --json --skip-git-repo-check … -` (prompt on stdin).
//!
//! Output is one JSON object per line (AGENT-CLIS.md §2.4). Mapping:
//! - `thread.started` → `Started` (the thread id resumes with `codex exec resume <id>`);
//! - `item.started` of a command, file change or MCP call → `ToolCall`; its `item.completed` →
//!   `ToolResult` with the same id, plus `Command` (with exit code) or one `FileChange` per file;
//! - completed `agent_message` → `Text`, `reasoning` → `Thinking`, `error` items → `Error`;
//! - `turn.completed` → `Usage` (tokens only: price it with [`crate::RateTable`]) and `Finished`;
//! - top-level `error` → `Error` (classified), `turn.failed` → `Finished { ok: false }`.
//!
//! A custom base URL needs a custom provider with `wire_api = "responses"` (Codex ignores
//! `OPENAI_BASE_URL` and rejects `wire_api = "chat"`): it goes into a per-run `CODEX_HOME`. Its
//! `env_key` names the variable that holds the key ([`KEY_VARS`], or [`PROVIDER_KEY_ENV`] for
//! [`RunSpec::api_key`]), so the key is sent as `Authorization: Bearer …` and never written to disk.

use serde::Deserialize;
use serde_json::{Value, json};

pub use crate::adapter::PROVIDER_KEY_ENV;
use crate::adapter::{
    Adapter, LaunchSpec, PermissionMode, RunSpec, RuntimeKind, base_env, finish_env,
    provider_key_var,
};
use crate::event::{AgentEvent, FileChangeKind, TokenUsage};
use crate::json::{content_text, parse_with};

/// The provider id Muster writes into the per-run `config.toml`.
const PROVIDER_ID: &str = "muster";
/// The agent variables a custom provider's key is taken from, in this order (OpenAI's own name first,
/// as OpenAI-compatible proxies expect it).
pub const KEY_VARS: [&str; 2] = ["OPENAI_API_KEY", "CODEX_API_KEY"];

/// The variable people set to point an OpenAI client elsewhere. Codex 0.171 itself ignores it
/// (AGENT-CLIS.md §2); set in an agent's env it becomes the run's base URL, which the adapter turns into a
/// Responses provider Codex does follow.
pub const BASE_URL_VARS: [&str; 1] = ["OPENAI_BASE_URL"];

/// Where Codex's built-in provider sends its model requests without a base URL.
pub const DEFAULT_API_URL: &str = "https://api.openai.com";

/// The Codex adapter.
#[derive(Debug, Clone, Copy, Default)]
pub struct CodexAdapter;

impl Adapter for CodexAdapter {
    fn kind(&self) -> RuntimeKind {
        RuntimeKind::Codex
    }

    fn parse_line(&self, line: &str) -> Vec<AgentEvent> {
        parse_line(line)
    }

    fn command(&self, spec: &RunSpec) -> crate::Result<LaunchSpec> {
        Ok(command(spec))
    }

    fn skills_place(&self) -> crate::adapter::SkillsPlace {
        crate::adapter::SkillsPlace::Home(".codex/skills")
    }

    fn carry_session(
        &self,
        session: &str,
        from: crate::session::SessionPlace<'_>,
        to: crate::session::SessionPlace<'_>,
    ) -> Result<(), crate::session::CarryError> {
        crate::session::carry_codex(session, from, to)
    }

    fn usage_log_dir(&self, spec: &RunSpec) -> Option<std::path::PathBuf> {
        Some(spec.home_dir.join(".codex").join("sessions"))
    }

    fn parse_usage_log_line(&self, line: &str) -> Vec<AgentEvent> {
        parse_rollout_line(line)
    }
}

/// Builds the launch spec: `codex exec --json --skip-git-repo-check [--model] <sandbox>
/// [extra…] [resume <id>] -`, `CODEX_HOME` inside the per-run home, and a `config.toml` with a
/// custom Responses provider when a base URL is set.
pub fn command(spec: &RunSpec) -> LaunchSpec {
    let mut args: Vec<String> = ["exec", "--json", "--skip-git-repo-check"]
        .map(String::from)
        .to_vec();
    if let Some(model) = &spec.model {
        args.extend(["--model".into(), model.clone()]);
    }
    match spec.permission_mode {
        PermissionMode::ReadOnly => args.extend(["--sandbox".into(), "read-only".into()]),
        PermissionMode::WorkspaceWrite => {
            args.extend(["--sandbox".into(), "workspace-write".into()])
        }
        PermissionMode::Bypass => args.push("--dangerously-bypass-approvals-and-sandbox".into()),
    }
    args.extend(spec.extra_args.iter().cloned());
    if let Some(session) = &spec.resume_session {
        args.extend(["resume".into(), session.clone()]);
    }
    args.push("-".into());

    let codex_home = spec.home_dir.join(".codex");
    let mut env = base_env(spec);
    env.push(("CODEX_HOME".into(), codex_home.display().to_string()));
    let mut files = Vec::new();
    if let Some(url) = &spec.base_url {
        let key_var = provider_key_var(spec, &KEY_VARS, &mut env);
        files.push((
            codex_home.join("config.toml"),
            provider_config(spec, url, key_var),
        ));
    } else if let Some(key) = &spec.api_key {
        env.push(("CODEX_API_KEY".into(), key.clone()));
        env.push(("OPENAI_API_KEY".into(), key.clone()));
    }
    LaunchSpec {
        program: spec.binary.clone(),
        args,
        env: finish_env(env, spec),
        cwd: spec.workdir.clone(),
        stdin: Some(spec.prompt.clone()),
        files,
    }
}

/// The per-run `config.toml` that points Codex at `base_url` through a Responses provider, its key
/// read from the variable `key_var`.
fn provider_config(spec: &RunSpec, base_url: &str, key_var: Option<&str>) -> String {
    let mut toml = String::from("# Written by Muster for one run.\n");
    if let Some(model) = &spec.model {
        toml.push_str(&format!("model = {}\n", toml_string(model)));
    }
    toml.push_str(&format!("model_provider = \"{PROVIDER_ID}\"\n\n"));
    toml.push_str(&format!("[model_providers.{PROVIDER_ID}]\n"));
    toml.push_str("name = \"Muster\"\n");
    toml.push_str(&format!("base_url = {}\n", toml_string(base_url)));
    toml.push_str("wire_api = \"responses\"\n");
    if let Some(var) = key_var {
        toml.push_str(&format!("env_key = {}\n", toml_string(var)));
    }
    toml
}

/// A TOML basic string: quotes, backslashes and control characters escaped.
fn toml_string(value: &str) -> String {
    let mut out = String::with_capacity(value.len() + 2);
    out.push('"');
    for c in value.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if c.is_control() => out.push_str(&format!("\\u{:04X}", u32::from(c))),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// Parses one line of `codex exec --json` output.
pub fn parse_line(line: &str) -> Vec<AgentEvent> {
    parse_with(line, |parsed: CodexLine| match parsed {
        CodexLine::ThreadStarted { thread_id } => vec![AgentEvent::Started {
            session_id: thread_id,
            model: None,
            skills: Vec::new(),
        }],
        CodexLine::TurnStarted {} => Vec::new(),
        CodexLine::TurnCompleted { usage } => vec![
            AgentEvent::Usage(usage.normalized()),
            AgentEvent::Finished {
                ok: true,
                summary: None,
            },
        ],
        CodexLine::TurnFailed { error } => vec![AgentEvent::Finished {
            ok: false,
            summary: error.map(|e| e.message),
        }],
        CodexLine::Error { message } => vec![AgentEvent::error(&message)],
        CodexLine::ItemStarted { item } => item_events(line, item, Phase::Started),
        CodexLine::ItemUpdated { item } => item_events(line, item, Phase::Updated),
        CodexLine::ItemCompleted { item } => item_events(line, item, Phase::Completed),
    })
}

#[derive(Deserialize)]
#[serde(tag = "type")]
enum CodexLine {
    #[serde(rename = "thread.started")]
    ThreadStarted { thread_id: String },
    #[serde(rename = "turn.started")]
    TurnStarted {},
    #[serde(rename = "turn.completed")]
    TurnCompleted {
        #[serde(default)]
        usage: CodexUsage,
    },
    #[serde(rename = "turn.failed")]
    TurnFailed { error: Option<ErrorBody> },
    #[serde(rename = "error")]
    Error { message: String },
    #[serde(rename = "item.started")]
    ItemStarted { item: Value },
    #[serde(rename = "item.updated")]
    ItemUpdated { item: Value },
    #[serde(rename = "item.completed")]
    ItemCompleted { item: Value },
}

#[derive(Deserialize)]
struct ErrorBody {
    message: String,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct CodexUsage {
    input_tokens: u64,
    cached_input_tokens: u64,
    cache_write_input_tokens: u64,
    output_tokens: u64,
}

impl CodexUsage {
    /// OpenAI counts cached tokens inside `input_tokens`; the normalized `input` excludes them.
    fn normalized(&self) -> TokenUsage {
        TokenUsage {
            input: self
                .input_tokens
                .saturating_sub(self.cached_input_tokens)
                .saturating_sub(self.cache_write_input_tokens),
            output: self.output_tokens,
            cache_read: self.cached_input_tokens,
            cache_write: self.cache_write_input_tokens,
            cost_usd: None,
        }
    }
}

#[derive(Clone, Copy, PartialEq)]
enum Phase {
    Started,
    Updated,
    Completed,
}

#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Item {
    AgentMessage {
        text: String,
    },
    Reasoning {
        text: String,
    },
    CommandExecution {
        id: String,
        command: String,
        #[serde(default)]
        aggregated_output: String,
        exit_code: Option<i32>,
        status: String,
    },
    FileChange {
        id: String,
        changes: Vec<Change>,
        status: String,
    },
    McpToolCall {
        id: String,
        server: String,
        tool: String,
        #[serde(default)]
        arguments: Value,
        #[serde(default)]
        result: Value,
        error: Option<ErrorBody>,
        status: String,
    },
    Error {
        message: String,
    },
}

#[derive(Deserialize)]
struct Change {
    path: String,
    kind: String,
}

fn item_events(line: &str, item: Value, phase: Phase) -> Vec<AgentEvent> {
    let Ok(item) = serde_json::from_value::<Item>(item) else {
        return vec![AgentEvent::raw(line)];
    };
    match (item, phase) {
        (Item::AgentMessage { text }, Phase::Completed) => vec![AgentEvent::Text { text }],
        (Item::Reasoning { text }, Phase::Completed) => vec![AgentEvent::Thinking { text }],
        (Item::Error { message }, Phase::Completed) => vec![AgentEvent::error(&message)],
        (Item::CommandExecution { id, command, .. }, Phase::Started) => {
            vec![AgentEvent::ToolCall {
                id,
                name: "command_execution".into(),
                input: json!({ "command": command }),
            }]
        }
        (Item::FileChange { id, changes, .. }, Phase::Started) => {
            let listed: Vec<Value> = changes
                .iter()
                .map(|c| json!({"path": c.path, "kind": c.kind}))
                .collect();
            vec![AgentEvent::ToolCall {
                id,
                name: "file_change".into(),
                input: json!({ "changes": listed }),
            }]
        }
        (
            Item::McpToolCall {
                id,
                server,
                tool,
                arguments,
                ..
            },
            Phase::Started,
        ) => vec![AgentEvent::ToolCall {
            id,
            name: format!("mcp__{server}__{tool}"),
            input: arguments,
        }],
        (item, Phase::Completed) => completed_tool_events(item),
        _ => Vec::new(),
    }
}

/// The result side of a command, file change or MCP call.
fn completed_tool_events(item: Item) -> Vec<AgentEvent> {
    match item {
        Item::CommandExecution {
            id,
            command,
            aggregated_output,
            exit_code,
            status,
        } => vec![
            AgentEvent::ToolResult {
                id,
                output: aggregated_output.clone(),
                is_error: status != "completed",
            },
            AgentEvent::Command {
                cmd: command,
                exit_code,
                output: aggregated_output,
            },
        ],
        Item::FileChange {
            id,
            changes,
            status,
        } => {
            let ok = status == "completed";
            let summary: Vec<String> = changes
                .iter()
                .map(|c| format!("{} {}", c.kind, c.path))
                .collect();
            let mut events = vec![AgentEvent::ToolResult {
                id,
                output: summary.join("\n"),
                is_error: !ok,
            }];
            if ok {
                events.extend(changes.into_iter().map(|c| AgentEvent::FileChange {
                    change: change_kind(&c.kind),
                    path: c.path,
                }));
            }
            events
        }
        Item::McpToolCall {
            id,
            result,
            error,
            status,
            ..
        } => {
            let is_error = error.is_some() || status != "completed";
            let output = error.map_or_else(|| content_text(&result), |e| e.message);
            vec![AgentEvent::ToolResult {
                id,
                output,
                is_error,
            }]
        }
        Item::AgentMessage { .. } | Item::Reasoning { .. } | Item::Error { .. } => Vec::new(),
    }
}

fn change_kind(kind: &str) -> FileChangeKind {
    match kind {
        "add" => FileChangeKind::Add,
        "delete" => FileChangeKind::Delete,
        _ => FileChangeKind::Update,
    }
}

/// One line of Codex's session rollout (`CODEX_HOME/sessions/…/rollout-*.jsonl`): a `token_count`
/// event becomes the [`AgentEvent::TurnUsage`] of the request it follows (`last_token_usage`);
/// everything else, and anything unreadable, nothing. `codex exec --json` reports usage only in its
/// final `turn.completed`; the rollout is how a budget sees each request.
pub fn parse_rollout_line(line: &str) -> Vec<AgentEvent> {
    #[derive(Deserialize)]
    struct RolloutLine {
        #[serde(rename = "type")]
        kind: String,
        #[serde(default)]
        payload: Value,
    }
    let Ok(parsed) = serde_json::from_str::<RolloutLine>(line) else {
        return Vec::new();
    };
    if parsed.kind != "event_msg" || parsed.payload["type"] != "token_count" {
        return Vec::new();
    }
    let last = &parsed.payload["info"]["last_token_usage"];
    match serde_json::from_value::<CodexUsage>(last.clone()) {
        Ok(usage) if !last.is_null() => vec![AgentEvent::TurnUsage(usage.normalized())],
        _ => Vec::new(),
    }
}

#[cfg(test)]
mod tests;
