//! The agent loop `muster llama-loop` runs: system prompt (the brief and skills) and user prompt (the issue),
//! then streamed turns until the model answers without tool calls, a guard trips or the server fails.
//!
//! Events, in order: `Started` (response id and model) on the first chunk; coalesced `Text`/`Thinking` while
//! streaming; per turn a `Usage` (cost 0) and, from llama.cpp, a `Speed` event with tokens/s; per tool
//! call `ToolCall`, the tool's `Command`/`FileChange` events, then `ToolResult`; finally `Finished` (the
//! answer as summary) or `Error` then `Finished { ok: false }`.
//!
//! Guards: [`Settings::max_turns`]; the context size (a rough four-characters-per-token estimate of the
//! conversation plus `max_tokens` must fit); the stream guards of [`crate::chat`]. When the server rejects
//! the `tools` parameter on the first turn, the loop says so and continues without tools.

use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

use muster_agents::{AgentEvent, ErrorClass};
use serde_json::{Value, json};

use crate::chat::{self, Endpoint, Request, Turn, TurnError};
use crate::tools::Workspace;

/// How often a server that answers 503 (llama.cpp while it loads its model) is asked again.
const LOADING_WAITS: u32 = 60;
/// The pause between those attempts.
const LOADING_PAUSE: Duration = Duration::from_secs(1);

/// Where the loop's events go.
pub trait EventSink: Send {
    /// Takes one event.
    fn emit(&mut self, event: AgentEvent);
}

impl EventSink for Vec<AgentEvent> {
    fn emit(&mut self, event: AgentEvent) {
        self.push(event);
    }
}

/// Writes each event as one JSON line and flushes, so the supervisor sees it at once.
#[derive(Debug)]
pub struct JsonLines<W>(pub W);

impl<W: Write + Send> EventSink for JsonLines<W> {
    fn emit(&mut self, event: AgentEvent) {
        if let Ok(line) = serde_json::to_string(&event) {
            // A closed stdout means the supervisor is gone; nothing useful is left to do with the error.
            let _ = writeln!(self.0, "{line}");
            let _ = self.0.flush();
        }
    }
}

/// Everything the loop needs.
#[derive(Debug, Clone)]
pub struct Settings {
    /// The server, with or without `/v1`.
    pub base_url: String,
    /// Model name; `None` asks the server's `/v1/models` for the first one.
    pub model: Option<String>,
    /// Sampling temperature (server default when `None`).
    pub temperature: Option<f32>,
    /// Most tokens per answer (server default when `None`).
    pub max_tokens: Option<u32>,
    /// The model's context size in tokens, when known: the conversation must fit.
    pub context_size: Option<u32>,
    /// Whether to offer tools.
    pub tools: bool,
    /// Whether `write_file` and `run_command` are offered (false in read-only mode).
    pub allow_write: bool,
    /// Most turns (model answers) per run.
    pub max_turns: u32,
    /// The system message: the brief and the enabled skills.
    pub system_prompt: String,
    /// The user message.
    pub user_prompt: String,
    /// The run's working directory; tools cannot leave it.
    pub workdir: PathBuf,
    /// How long `run_command` may take.
    pub command_timeout: Duration,
    /// Longest silence of the server within a stream.
    pub idle_timeout: Duration,
    /// How long connecting may take.
    pub connect_timeout: Duration,
    /// The environment of `run_command` children.
    pub command_env: Vec<(String, String)>,
}

impl Settings {
    /// Settings with the defaults: tools on and writable, 20 turns, 60 s commands, 120 s idle timeout.
    pub fn new(
        base_url: &str,
        workdir: PathBuf,
        system_prompt: String,
        user_prompt: String,
    ) -> Self {
        Self {
            base_url: base_url.to_owned(),
            model: None,
            temperature: None,
            max_tokens: None,
            context_size: None,
            tools: true,
            allow_write: true,
            max_turns: 20,
            system_prompt,
            user_prompt,
            workdir,
            command_timeout: Duration::from_secs(60),
            idle_timeout: Duration::from_secs(120),
            connect_timeout: Duration::from_secs(10),
            command_env: Vec::new(),
        }
    }

    /// Most characters one turn may stream: generous for `max_tokens`, bounded when it is unset.
    fn max_output_chars(&self) -> usize {
        let tokens = self.max_tokens.unwrap_or(8192) as usize;
        tokens.saturating_mul(16).max(16 * 1024)
    }
}

/// Runs the loop to the end; every outcome is reported through `sink`. Returns whether the run succeeded.
pub async fn run(settings: &Settings, sink: &mut dyn EventSink) -> bool {
    match run_inner(settings, sink).await {
        Ok(summary) => {
            sink.emit(AgentEvent::Finished {
                ok: true,
                summary: Some(summary),
            });
            true
        }
        Err(e) => {
            sink.emit(AgentEvent::Error {
                message: e.message.clone(),
                class: e.class,
            });
            sink.emit(AgentEvent::Finished {
                ok: false,
                summary: Some(e.message),
            });
            false
        }
    }
}

fn failure(message: impl Into<String>, class: Option<ErrorClass>) -> TurnError {
    TurnError {
        message: message.into(),
        status: None,
        class,
    }
}

async fn run_inner(settings: &Settings, sink: &mut dyn EventSink) -> Result<String, TurnError> {
    // No redirects: the base URL names the one server the loop talks to.
    let http = crate::probe::client(settings.connect_timeout)
        .map_err(|e| failure(format!("cannot build an HTTP client: {e}"), None))?;
    let root = crate::server_root(&settings.base_url);
    let model = match &settings.model {
        Some(m) if !m.trim().is_empty() => m.trim().to_owned(),
        _ => first_model(&http, &root).await,
    };
    let endpoint = Endpoint {
        url: format!("{root}/v1/chat/completions"),
        idle_timeout: settings.idle_timeout,
        max_output_chars: settings.max_output_chars(),
    };
    let workspace = Workspace::new(
        &settings.workdir,
        settings.allow_write,
        settings.command_timeout,
        settings.command_env.clone(),
    )
    .map_err(|e| {
        failure(
            format!(
                "the working directory {} is unusable: {e}",
                settings.workdir.display()
            ),
            Some(ErrorClass::Config),
        )
    })?;
    let definitions = workspace.definitions();
    let mut tools_on = settings.tools;
    let mut messages = vec![
        json!({"role": "system", "content": settings.system_prompt}),
        json!({"role": "user", "content": settings.user_prompt}),
    ];
    let mut started = false;
    let mut turns = 0;
    let mut loading_waits = 0;
    loop {
        if turns >= settings.max_turns {
            return Err(failure(
                format!(
                    "stopped after {} turns without a final answer",
                    settings.max_turns
                ),
                Some(ErrorClass::Other),
            ));
        }
        check_context(settings, &messages)?;
        turns += 1;
        let mut request = Request::new(&model, &messages);
        request.temperature = settings.temperature;
        request.max_tokens = settings.max_tokens;
        request.tools = tools_on.then_some(&definitions);
        let turn = match chat::stream_turn(&http, &endpoint, &request, sink, &mut started).await {
            Ok(turn) => turn,
            Err(e) if tools_on && turns == 1 && rejects_tools(&e) => {
                sink.emit(AgentEvent::raw(&format!(
                    "the model server refused tool use ({}); continuing without tools",
                    e.message
                )));
                tools_on = false;
                turns = 0;
                continue;
            }
            Err(e) if e.status == Some(503) && loading_waits < LOADING_WAITS => {
                if loading_waits == 0 {
                    sink.emit(AgentEvent::raw(&format!("{}; waiting for it", e.message)));
                }
                loading_waits += 1;
                turns -= 1;
                tokio::time::sleep(LOADING_PAUSE).await;
                continue;
            }
            Err(e) => return Err(e),
        };
        report(&turn, sink);
        let calls = if tools_on {
            turn.tool_calls.clone()
        } else {
            Vec::new()
        };
        if calls.is_empty() {
            let answer = turn.text.trim();
            if answer.is_empty() {
                return Err(failure(
                    "the model returned an empty answer",
                    Some(ErrorClass::Other),
                ));
            }
            return Ok(answer.to_owned());
        }
        messages.push(assistant_message(&turn));
        for call in calls {
            let input = serde_json::from_str::<Value>(&call.arguments)
                .unwrap_or_else(|_| Value::String(call.arguments.clone()));
            sink.emit(AgentEvent::ToolCall {
                id: call.id.clone(),
                name: call.name.clone(),
                input,
            });
            let outcome = workspace.call(&call.name, &call.arguments).await;
            for event in outcome.events {
                sink.emit(event);
            }
            sink.emit(AgentEvent::ToolResult {
                id: call.id.clone(),
                output: outcome.output.clone(),
                is_error: outcome.is_error,
            });
            messages
                .push(json!({"role": "tool", "tool_call_id": call.id, "content": outcome.output}));
        }
    }
}

/// Usage and timings of a finished turn.
fn report(turn: &Turn, sink: &mut dyn EventSink) {
    if let Some(usage) = turn.usage {
        sink.emit(AgentEvent::Usage(usage));
    }
    if let Some(timings) = &turn.timings {
        sink.emit(match timings.predicted_per_second {
            Some(tokens_per_second) => AgentEvent::Speed {
                tokens_per_second,
                detail: timings.describe(),
            },
            None => AgentEvent::raw(&timings.describe()),
        });
    }
}

/// Whether a failed first request looks like the server refusing the `tools` parameter.
fn rejects_tools(e: &TurnError) -> bool {
    let lower = e.message.to_lowercase();
    matches!(e.status, Some(400 | 422 | 500 | 501))
        && (lower.contains("tool") || lower.contains("jinja"))
}

fn assistant_message(turn: &Turn) -> Value {
    let calls: Vec<Value> = turn
        .tool_calls
        .iter()
        .map(|c| {
            json!({"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}})
        })
        .collect();
    json!({"role": "assistant", "content": turn.text, "tool_calls": calls})
}

/// Fails when the conversation (about four characters a token) plus the answer no longer fits.
fn check_context(settings: &Settings, messages: &[Value]) -> Result<(), TurnError> {
    let Some(context) = settings.context_size else {
        return Ok(());
    };
    let chars: usize = messages.iter().map(|m| m.to_string().len()).sum();
    let estimate = chars / 4 + settings.max_tokens.unwrap_or(0) as usize;
    if estimate > context as usize {
        return Err(failure(
            format!(
                "the conversation (about {estimate} tokens with the answer) no longer fits the context size of {context} tokens"
            ),
            Some(ErrorClass::Config),
        ));
    }
    Ok(())
}

/// The first model the server lists, or `"default"` (llama.cpp ignores the name anyway).
async fn first_model(http: &reqwest::Client, root: &str) -> String {
    let listed = async {
        let v: Value = http
            .get(format!("{root}/v1/models"))
            .timeout(Duration::from_secs(5))
            .send()
            .await
            .ok()?
            .json()
            .await
            .ok()?;
        v.pointer("/data/0/id")?
            .as_str()
            .and_then(crate::probe::sane_name)
    };
    listed.await.unwrap_or_else(|| "default".to_owned())
}

/// Longest skill file appended to the system prompt; small models have small contexts.
const MAX_SKILL_BYTES: usize = 16 * 1024;

/// The system prompt: the brief, then each `<skills_dir>/<skill>/SKILL.md` (sorted by folder name).
pub fn system_prompt(
    brief: &std::path::Path,
    skills_dir: Option<&std::path::Path>,
) -> std::io::Result<String> {
    let mut prompt = std::fs::read_to_string(brief)?;
    let Some(dir) = skills_dir else {
        return Ok(prompt);
    };
    let mut skills: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .filter_map(Result::ok)
                .map(|e| e.path().join("SKILL.md"))
                .filter(|p| p.is_file())
                .collect()
        })
        .unwrap_or_default();
    skills.sort();
    for path in skills {
        let Ok(mut text) = std::fs::read_to_string(&path) else {
            continue;
        };
        if text.len() > MAX_SKILL_BYTES {
            let mut cut = MAX_SKILL_BYTES;
            while !text.is_char_boundary(cut) {
                cut -= 1;
            }
            text.truncate(cut);
            text.push_str("\n… [truncated]");
        }
        let name = path
            .parent()
            .and_then(|p| p.file_name())
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        prompt.push_str(&format!(
            "\n\n---\n\n## Skill: {name}\n\n{}\n",
            text.trim_end()
        ));
    }
    Ok(prompt)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_system_prompt_is_the_brief_then_the_skills() {
        let dir = tempfile::tempdir().unwrap();
        let brief = dir.path().join("AGENTS.md");
        std::fs::write(&brief, "# MUS-1: Fix it").unwrap();
        let skills = dir.path().join("skills");
        for (name, body) in [("b-skill", "Second."), ("a-skill", "First.")] {
            std::fs::create_dir_all(skills.join(name)).unwrap();
            std::fs::write(skills.join(name).join("SKILL.md"), body).unwrap();
        }
        std::fs::create_dir_all(skills.join("empty")).unwrap();
        let prompt = system_prompt(&brief, Some(&skills)).unwrap();
        assert!(prompt.starts_with("# MUS-1: Fix it"));
        let (a, b) = (
            prompt.find("Skill: a-skill").unwrap(),
            prompt.find("Skill: b-skill").unwrap(),
        );
        assert!(a < b && prompt.contains("First.") && prompt.contains("Second."));
        assert!(!prompt.contains("Skill: empty"));
        assert_eq!(
            system_prompt(&brief, Some(&dir.path().join("none"))).unwrap(),
            "# MUS-1: Fix it"
        );
        assert!(system_prompt(&dir.path().join("missing.md"), None).is_err());
    }

    #[test]
    fn tool_rejections_are_recognized_and_the_context_guard_trips() {
        let e = |status, message: &str| TurnError {
            message: message.into(),
            status: Some(status),
            class: None,
        };
        assert!(rejects_tools(&e(500, "tools param requires --jinja flag")));
        assert!(rejects_tools(&e(400, "this model does not support tools")));
        assert!(!rejects_tools(&e(401, "tools need a key")));
        assert!(!rejects_tools(&e(500, "out of memory")));
        let mut s = Settings::new("http://x", PathBuf::from("."), "s".into(), "u".into());
        s.context_size = Some(100);
        s.max_tokens = Some(50);
        let small = vec![json!({"role": "user", "content": "hi"})];
        assert!(check_context(&s, &small).is_ok());
        let big = vec![json!({"role": "user", "content": "x".repeat(400)})];
        let err = check_context(&s, &big).unwrap_err();
        assert!(
            err.message.contains("context size of 100 tokens"),
            "{}",
            err.message
        );
    }
}
