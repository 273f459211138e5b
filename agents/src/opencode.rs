//! OpenCode: `opencode run --format json …` with the prompt on stdin.
//!
//! Output is one JSON object per line, each with a `sessionID` (AGENT-CLIS.md §3.4). Mapping:
//! - `step_start` → `Started` (once per step, always the same session id: keep the first);
//! - `text` → `Text`, `reasoning` → `Thinking`;
//! - `tool_use` arrives once the tool has finished → `ToolCall` + `ToolResult` with the call id,
//!   plus `Command` when a `bash` call reports its exit code;
//! - `step_finish` → `Usage` (per step, with OpenCode's cost; a zero cost for nonzero tokens means
//!   the model has no price in OpenCode's config and becomes `None`), and `Finished` when its reason
//!   is `stop`;
//! - `error` → `Error` (classified by `statusCode`) and `Finished { ok: false }`.
//!
//! A custom base URL becomes an `@ai-sdk/openai-compatible` provider in `OPENCODE_CONFIG_CONTENT`.
//! Its `apiKey` is `{env:<var>}` (OpenCode substitutes it), the variable being the agent's
//! `OPENAI_API_KEY` or [`crate::adapter::PROVIDER_KEY_ENV`] for [`RunSpec::api_key`]: the key is
//! sent as `Authorization: Bearer …` and appears in no config. Without a base URL, `api_key` is not
//! used: pass the vendor's key variable in [`RunSpec::env`].

use serde::Deserialize;
use serde_json::{Map, Value, json};

use crate::adapter::{
    Adapter, LaunchSpec, PermissionMode, RunSpec, RuntimeKind, base_env, finish_env,
    provider_key_var,
};
use crate::event::{AgentEvent, ErrorClass, TokenUsage};
use crate::json::parse_with;

/// The provider id used for a custom base URL.
const PROVIDER_ID: &str = "muster";
/// The agent variables a custom provider's key is taken from.
pub const KEY_VARS: [&str; 1] = ["OPENAI_API_KEY"];

/// The variable people set to point an OpenAI-compatible client elsewhere; set in an agent's env it
/// becomes the run's base URL, which the adapter turns into an OpenAI-compatible provider.
pub const BASE_URL_VARS: [&str; 1] = ["OPENAI_BASE_URL"];
/// The model id used with a custom base URL when the run names none.
const DEFAULT_MODEL_ID: &str = "default";

/// The OpenCode adapter.
#[derive(Debug, Clone, Copy, Default)]
pub struct OpencodeAdapter;

impl Adapter for OpencodeAdapter {
    fn kind(&self) -> RuntimeKind {
        RuntimeKind::Opencode
    }

    fn parse_line(&self, line: &str) -> Vec<AgentEvent> {
        parse_line(line)
    }

    fn command(&self, spec: &RunSpec) -> crate::Result<LaunchSpec> {
        Ok(command(spec))
    }

    fn skills_place(&self) -> crate::adapter::SkillsPlace {
        crate::adapter::SkillsPlace::Workdir(".opencode/skills")
    }

    fn carry_session(
        &self,
        session: &str,
        from: crate::session::SessionPlace<'_>,
        to: crate::session::SessionPlace<'_>,
    ) -> Result<(), crate::session::CarryError> {
        // OpenCode keeps every session in one data folder; `--session` picks this one.
        let _ = session;
        crate::session::carry_folder(".local/share/opencode", from, to)
    }

    fn session_databases(&self) -> &'static [&'static str] {
        &[".local/share/opencode/opencode.db"]
    }
}

/// Builds the launch spec: `opencode run --format json [--model] [--session] [--auto] [extra…]`,
/// prompt on stdin, config (provider, permissions, no auto-update or sharing) inline in
/// `OPENCODE_CONFIG_CONTENT`.
pub fn command(spec: &RunSpec) -> LaunchSpec {
    let mut args: Vec<String> = ["run", "--format", "json"].map(String::from).to_vec();
    let model = match (&spec.base_url, &spec.model) {
        (Some(_), model) => Some(format!(
            "{PROVIDER_ID}/{}",
            model.as_deref().unwrap_or(DEFAULT_MODEL_ID)
        )),
        (None, model) => model.clone(),
    };
    if let Some(model) = model {
        args.extend(["--model".into(), model]);
    }
    if let Some(session) = &spec.resume_session {
        args.extend(["--session".into(), session.clone()]);
    }
    if spec.permission_mode == PermissionMode::Bypass {
        args.push("--auto".into());
    }
    args.extend(spec.extra_args.iter().cloned());

    let mut env = base_env(spec);
    for key in [
        "OPENCODE_DISABLE_AUTOUPDATE",
        "OPENCODE_DISABLE_SHARE",
        "OPENCODE_DISABLE_LSP_DOWNLOAD",
    ] {
        env.push((key.into(), "1".into()));
    }
    if spec.base_url.is_some() {
        env.push(("OPENCODE_DISABLE_MODELS_FETCH".into(), "1".into()));
    }
    let key_var = spec
        .base_url
        .is_some()
        .then(|| provider_key_var(spec, &KEY_VARS, &mut env))
        .flatten();
    env.push((
        "OPENCODE_CONFIG_CONTENT".into(),
        config_content(spec, key_var).to_string(),
    ));
    LaunchSpec {
        program: spec.binary.clone(),
        args,
        env: finish_env(env, spec),
        cwd: spec.workdir.clone(),
        stdin: Some(spec.prompt.clone()),
        files: Vec::new(),
    }
}

/// The inline OpenCode config for a run; a custom provider's key is read from `key_var`.
fn config_content(spec: &RunSpec, key_var: Option<&str>) -> Value {
    let mut config = Map::new();
    config.insert("autoupdate".into(), json!(false));
    config.insert("share".into(), json!("disabled"));
    if spec.permission_mode == PermissionMode::ReadOnly {
        config.insert("permission".into(), json!({"edit": "deny", "bash": "deny"}));
    }
    if let Some(url) = &spec.base_url {
        let model_id = spec.model.as_deref().unwrap_or(DEFAULT_MODEL_ID);
        let mut options = Map::new();
        options.insert("baseURL".into(), json!(url));
        if let Some(var) = key_var {
            options.insert("apiKey".into(), json!(format!("{{env:{var}}}")));
        }
        config.insert(
            "provider".into(),
            json!({ PROVIDER_ID: {
                "npm": "@ai-sdk/openai-compatible",
                "name": "Muster",
                "options": options,
                "models": { model_id: { "name": model_id } },
            }}),
        );
        let full = format!("{PROVIDER_ID}/{model_id}");
        config.insert("model".into(), json!(full));
        config.insert("small_model".into(), json!(full));
    }
    Value::Object(config)
}

/// Parses one line of `opencode run --format json` output.
pub fn parse_line(line: &str) -> Vec<AgentEvent> {
    parse_with(line, |parsed: OpencodeLine| match parsed {
        OpencodeLine::StepStart { session_id } => vec![AgentEvent::Started {
            session_id,
            model: None,
            skills: Vec::new(),
        }],
        OpencodeLine::Text { part } => vec![AgentEvent::Text { text: part.text }],
        OpencodeLine::Reasoning { part } => vec![AgentEvent::Thinking { text: part.text }],
        OpencodeLine::ToolUse { part } => tool_events(part),
        OpencodeLine::StepFinish { part } => step_finish_events(&part),
        OpencodeLine::Error { error } => error_events(&error),
    })
}

#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum OpencodeLine {
    StepStart {
        #[serde(rename = "sessionID")]
        session_id: String,
    },
    Text {
        part: TextPart,
    },
    Reasoning {
        part: TextPart,
    },
    ToolUse {
        part: ToolPart,
    },
    StepFinish {
        part: StepFinishPart,
    },
    Error {
        error: Value,
    },
}

#[derive(Deserialize)]
struct TextPart {
    text: String,
}

#[derive(Deserialize)]
struct ToolPart {
    tool: String,
    #[serde(rename = "callID")]
    call_id: String,
    state: ToolState,
}

#[derive(Deserialize)]
struct ToolState {
    status: String,
    #[serde(default)]
    input: Value,
    output: Option<String>,
    error: Option<String>,
    #[serde(default)]
    metadata: Value,
}

#[derive(Deserialize)]
struct StepFinishPart {
    reason: Option<String>,
    #[serde(default)]
    tokens: Tokens,
    cost: Option<f64>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct Tokens {
    input: u64,
    output: u64,
    reasoning: u64,
    cache: CacheTokens,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct CacheTokens {
    read: u64,
    write: u64,
}

fn tool_events(part: ToolPart) -> Vec<AgentEvent> {
    let ToolPart {
        tool,
        call_id,
        state,
    } = part;
    let command = state
        .input
        .get("command")
        .and_then(Value::as_str)
        .map(str::to_owned);
    let mut events = vec![AgentEvent::ToolCall {
        id: call_id.clone(),
        name: tool.clone(),
        input: state.input,
    }];
    let is_error = match state.status.as_str() {
        "completed" => false,
        "error" => true,
        _ => return events,
    };
    let output = if is_error {
        state.error.or(state.output)
    } else {
        state.output
    }
    .unwrap_or_default();
    events.push(AgentEvent::ToolResult {
        id: call_id,
        output: output.clone(),
        is_error,
    });
    let exit_code = state
        .metadata
        .get("exit")
        .and_then(Value::as_i64)
        .and_then(|code| i32::try_from(code).ok());
    if let (true, Some(cmd), Some(exit_code)) = (tool == "bash", command, exit_code) {
        events.push(AgentEvent::Command {
            cmd,
            exit_code: Some(exit_code),
            output,
        });
    }
    events
}

fn step_finish_events(part: &StepFinishPart) -> Vec<AgentEvent> {
    let tokens = &part.tokens;
    let mut usage = TokenUsage {
        input: tokens.input,
        output: tokens.output + tokens.reasoning,
        cache_read: tokens.cache.read,
        cache_write: tokens.cache.write,
        cost_usd: part.cost,
    };
    // OpenCode reports `cost: 0` for a model without a `cost` entry (every custom-provider model
    // Muster configures): that is "unpriced", not "free", so leave it to the rate table.
    if usage.cost_usd == Some(0.0) && usage.total_tokens() > 0 {
        usage.cost_usd = None;
    }
    let mut events = vec![AgentEvent::Usage(usage)];
    if part.reason.as_deref() == Some("stop") {
        events.push(AgentEvent::Finished {
            ok: true,
            summary: None,
        });
    }
    events
}

fn error_events(error: &Value) -> Vec<AgentEvent> {
    let data = error.get("data");
    let message = data
        .and_then(|d| d.get("message"))
        .and_then(Value::as_str)
        .or_else(|| error.get("name").and_then(Value::as_str))
        .map_or_else(|| error.to_string(), str::to_owned);
    let status = data
        .and_then(|d| d.get("statusCode"))
        .and_then(Value::as_u64)
        .and_then(|s| u16::try_from(s).ok());
    let class = status
        .map(ErrorClass::from_status)
        .or_else(|| ErrorClass::from_message(&message));
    vec![
        AgentEvent::Error {
            message: message.clone(),
            class,
        },
        AgentEvent::Finished {
            ok: false,
            summary: Some(message),
        },
    ]
}

#[cfg(test)]
mod tests;
