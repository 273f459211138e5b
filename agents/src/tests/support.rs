//! Helpers for `fixtures.rs`: reading fixture files and building expected events.

use std::path::{Path, PathBuf};

use crate::{AgentEvent, RuntimeKind, TokenUsage, adapter_for};

/// `fixtures/` of this crate.
pub fn fixtures_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures")
}

/// The text of a fixture file, by path relative to `fixtures/`.
pub fn read_fixture(name: &str) -> String {
    std::fs::read_to_string(fixtures_dir().join(name)).expect("fixture file is readable")
}

/// Parses `name` with `kind`'s adapter and checks the events of each line.
pub fn assert_fixture(kind: RuntimeKind, name: &str, expected: &[Vec<AgentEvent>]) {
    let adapter = adapter_for(kind);
    let text = read_fixture(name);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), expected.len(), "{name}: line count");
    for (number, (line, want)) in lines.iter().zip(expected).enumerate() {
        assert_eq!(
            &adapter.parse_line(line),
            want,
            "{name} line {}",
            number + 1
        );
    }
}

/// A `Started` event.
pub fn started(session_id: &str, model: Option<&str>) -> AgentEvent {
    AgentEvent::Started {
        session_id: session_id.into(),
        model: model.map(Into::into),
        skills: Vec::new(),
    }
}

/// A `Text` event.
pub fn text(text: &str) -> AgentEvent {
    AgentEvent::Text { text: text.into() }
}

/// A `Usage` event without cache writes (no fixture has any).
pub fn usage(input: u64, output: u64, cache_read: u64, cost_usd: Option<f64>) -> AgentEvent {
    AgentEvent::Usage(TokenUsage {
        input,
        output,
        cache_read,
        cache_write: 0,
        cost_usd,
    })
}

/// A `Finished` event.
pub fn finished(ok: bool, summary: Option<&str>) -> AgentEvent {
    AgentEvent::Finished {
        ok,
        summary: summary.map(Into::into),
    }
}

/// A `ToolResult` event.
pub fn tool_result(id: &str, output: &str, is_error: bool) -> AgentEvent {
    AgentEvent::ToolResult {
        id: id.into(),
        output: output.into(),
        is_error,
    }
}

/// A number as serde_json reads it from the fixture (its float parsing is not always the
/// correctly rounded one Rust literals get, so literals could differ in the last bit).
pub fn json_f64(text: &str) -> f64 {
    serde_json::from_str(text).expect("a JSON number")
}

/// The skills every recorded Claude Code fixture lists in its `system/init` line.
pub const CLAUDE_FIXTURE_SKILLS: [&str; 12] = [
    "deep-research",
    "update-config",
    "verify",
    "debug",
    "code-review",
    "simplify",
    "batch",
    "fewer-permission-prompts",
    "loop",
    "claude-api",
    "run",
    "run-skill-generator",
];

/// The `Started` event of a recorded Claude Code fixture, with the skills its `system/init` lists.
pub fn claude_started(session_id: &str, model: Option<&str>) -> AgentEvent {
    AgentEvent::Started {
        session_id: session_id.into(),
        model: model.map(Into::into),
        skills: CLAUDE_FIXTURE_SKILLS
            .iter()
            .map(|s| (*s).to_owned())
            .collect(),
    }
}
