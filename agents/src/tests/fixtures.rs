//! Every recorded CLI stream in `fixtures/` (copied from the real CLIs, see
//! `versions.txt`), parsed line by line with exact expectations.

use super::support::{
    assert_fixture, claude_started, finished, fixtures_dir, json_f64, read_fixture, started, text,
    tool_result, usage,
};
use crate::{AgentEvent, ErrorClass, FileChangeKind, RuntimeKind, TokenUsage, adapter_for};
use serde_json::json;

/// Every fixture file a test below asserts on; `every_fixture_file_is_covered` keeps it complete.
const COVERED: &[&str] = &[
    "claude/api-error.jsonl",
    "claude/text.jsonl",
    "claude/thinking.jsonl",
    "claude/tool-bash.jsonl",
    "claude/tool-failing.jsonl",
    "codex/api-error.jsonl",
    "codex/api-error.stderr",
    "codex/file-change.jsonl",
    "codex/file-change.stderr",
    "codex/reasoning.jsonl",
    "codex/reasoning.stderr",
    "codex/text.jsonl",
    "codex/text.stderr",
    "codex/tool-shell.jsonl",
    "codex/tool-shell.stderr",
    "opencode/api-error.jsonl",
    "opencode/reasoning.jsonl",
    "opencode/text.jsonl",
    "opencode/tool-bash.jsonl",
    "versions.txt",
];

fn claude_cost() -> Option<f64> {
    Some(json_f64("0.00042500000000000003"))
}

fn claude_tool_cost() -> Option<f64> {
    Some(json_f64("0.0008500000000000001"))
}

const CLAUDE_MODEL: Option<&str> = Some("claude-opus-4-8[1m]");

#[test]
fn claude_text() {
    assert_fixture(
        RuntimeKind::Claude,
        "claude/text.jsonl",
        &[
            vec![claude_started(
                "5810e3a2-6dd3-4f47-9945-c70ef8ff2a1b",
                CLAUDE_MODEL,
            )],
            vec![text("Hi from the mock!")],
            vec![
                usage(25, 12, 0, claude_cost()),
                finished(true, Some("Hi from the mock!")),
            ],
        ],
    );
}

#[test]
fn claude_thinking() {
    assert_fixture(
        RuntimeKind::Claude,
        "claude/thinking.jsonl",
        &[
            vec![claude_started(
                "93f9c4c8-7110-4afb-9ede-db7d2032470f",
                CLAUDE_MODEL,
            )],
            vec![], // system/thinking_tokens: an estimate, not content
            vec![AgentEvent::Thinking {
                text: "Let me think about this.".into(),
            }],
            vec![text("Hi from the mock!")],
            vec![
                usage(25, 12, 0, claude_cost()),
                finished(true, Some("Hi from the mock!")),
            ],
        ],
    );
}

#[test]
fn claude_tool_bash() {
    let id = "toolu_69ad4c68bc0f405298f10c8e";
    assert_fixture(
        RuntimeKind::Claude,
        "claude/tool-bash.jsonl",
        &[
            vec![claude_started(
                "20c88412-3cbd-4be5-a881-85d9bc21c8f5",
                CLAUDE_MODEL,
            )],
            vec![text("I'll run a command.")],
            vec![AgentEvent::ToolCall {
                id: id.into(),
                name: "Bash".into(),
                input: json!({"command": "echo hello", "description": "Run the requested command"}),
            }],
            vec![tool_result(id, "hello", false)],
            vec![text("Tool said: hello")],
            vec![
                usage(50, 24, 0, claude_tool_cost()),
                finished(true, Some("Tool said: hello")),
            ],
        ],
    );
}

#[test]
fn claude_tool_failing() {
    let id = "toolu_4603217f638849f49f6a08c5";
    let output = "Exit code 2\nls: cannot access '/nonexistent-dir': No such file or directory";
    let said = format!("Tool said: {output}");
    assert_fixture(
        RuntimeKind::Claude,
        "claude/tool-failing.jsonl",
        &[
            vec![claude_started(
                "cc449d86-1aac-49b0-854b-5bfbc7265611",
                CLAUDE_MODEL,
            )],
            vec![text("I'll run a command.")],
            vec![AgentEvent::ToolCall {
                id: id.into(),
                name: "Bash".into(),
                input: json!({"command": "ls /nonexistent-dir", "description": "Run the requested command"}),
            }],
            vec![tool_result(id, output, true)],
            vec![text(&said)],
            vec![
                usage(50, 24, 0, claude_tool_cost()),
                finished(true, Some(&said)),
            ],
        ],
    );
}

#[test]
fn claude_api_error_is_classified_by_status_despite_subtype_success() {
    let message = "Failed to authenticate. API Error: 401 mock error 401";
    assert_fixture(
        RuntimeKind::Claude,
        "claude/api-error.jsonl",
        &[
            vec![claude_started(
                "a5168b24-7209-4e73-8313-9f3853693015",
                CLAUDE_MODEL,
            )],
            vec![], // the synthetic assistant line repeats the result's error
            vec![
                usage(0, 0, 0, Some(0.0)),
                AgentEvent::Error {
                    message: message.into(),
                    class: Some(ErrorClass::Auth),
                },
                finished(false, Some(message)),
            ],
        ],
    );
}

#[test]
fn codex_text() {
    assert_fixture(
        RuntimeKind::Codex,
        "codex/text.jsonl",
        &[
            vec![started("01a2370c-ccaf-70f2-8299-a87468b7ed23", None)],
            vec![],
            vec![text("Hi from the mock!")],
            // 30 input tokens of which 5 cached: 25 uncached.
            vec![usage(25, 12, 5, None), finished(true, None)],
        ],
    );
}

#[test]
fn codex_reasoning() {
    assert_fixture(
        RuntimeKind::Codex,
        "codex/reasoning.jsonl",
        &[
            vec![started("01a2370c-d1a4-7473-837f-bc749dd5e12d", None)],
            vec![],
            vec![AgentEvent::Thinking {
                text: "**Thinking** about the request".into(),
            }],
            vec![text("Hi from the mock!")],
            vec![usage(25, 12, 5, None), finished(true, None)],
        ],
    );
}

#[test]
fn codex_tool_shell() {
    let cmd = "/bin/bash -lc 'echo hello'";
    assert_fixture(
        RuntimeKind::Codex,
        "codex/tool-shell.jsonl",
        &[
            vec![started("01a2370c-ce28-7c42-ae24-7ee29902f975", None)],
            vec![],
            vec![AgentEvent::ToolCall {
                id: "item_0".into(),
                name: "command_execution".into(),
                input: json!({"command": cmd}),
            }],
            vec![
                tool_result("item_0", "hello\n", false),
                AgentEvent::Command {
                    cmd: cmd.into(),
                    exit_code: Some(0),
                    output: "hello\n".into(),
                },
            ],
            vec![text(
                "Tool said: Chunk ID: 8d373a\nWall time: 0.0000 seconds\nProcess exited with code 0\nOriginal token count: 2\nOutput:\nhello",
            )],
            vec![usage(50, 24, 10, None), finished(true, None)],
        ],
    );
}

#[test]
fn codex_file_change() {
    let path = "/home/dev/project/hello.txt";
    assert_fixture(
        RuntimeKind::Codex,
        "codex/file-change.jsonl",
        &[
            vec![started("01a2370c-cff7-7c53-a9d2-aebe006e4217", None)],
            vec![],
            vec![AgentEvent::ToolCall {
                id: "item_0".into(),
                name: "file_change".into(),
                input: json!({"changes": [{"path": path, "kind": "add"}]}),
            }],
            vec![
                tool_result("item_0", &format!("add {path}"), false),
                AgentEvent::FileChange {
                    path: path.into(),
                    change: FileChangeKind::Add,
                },
            ],
            vec![text(
                "Tool said: Exit code: 0\nWall time: 0 seconds\nOutput:\nSuccess. Updated the following files:\nA hello.txt",
            )],
            vec![usage(50, 24, 10, None), finished(true, None)],
        ],
    );
}

#[test]
fn codex_api_error() {
    let message = "unexpected status 401 Unauthorized: mock error 401, url: http://127.0.0.1:8802/v1/responses";
    assert_fixture(
        RuntimeKind::Codex,
        "codex/api-error.jsonl",
        &[
            vec![started("01a2370c-d33b-7851-a3fe-bdf4214e7b45", None)],
            vec![],
            vec![AgentEvent::Error {
                message: message.into(),
                class: Some(ErrorClass::Auth),
            }],
            vec![finished(false, Some(message))],
        ],
    );
}

#[test]
fn codex_stderr_is_not_events() {
    for name in COVERED.iter().filter(|n| n.ends_with(".stderr")) {
        let stderr = read_fixture(name);
        assert_fixture(
            RuntimeKind::Codex,
            name,
            &stderr
                .lines()
                .map(|l| vec![AgentEvent::raw(l)])
                .collect::<Vec<_>>(),
        );
        assert!(
            stderr.contains("Reading additional input from stdin..."),
            "{name}"
        );
    }
}

#[test]
fn opencode_text() {
    assert_fixture(
        RuntimeKind::Opencode,
        "opencode/text.jsonl",
        &[
            vec![started("ses_dc8f322b8ffegthOTF3FqBiTs2", None)],
            vec![text("Hi from the mock!")],
            vec![usage(30, 12, 0, None), finished(true, None)],
        ],
    );
}

#[test]
fn opencode_reasoning() {
    assert_fixture(
        RuntimeKind::Opencode,
        "opencode/reasoning.jsonl",
        &[
            vec![started("ses_dc8f2f60affe0Il6UjV7O9LlS4", None)],
            vec![AgentEvent::Thinking {
                text: "Thinking about the request.".into(),
            }],
            vec![text("Hi from the mock!")],
            vec![usage(30, 12, 0, None), finished(true, None)],
        ],
    );
}

#[test]
fn opencode_tool_bash() {
    let session = "ses_dc8f30ca6ffeEn64QxmGE5Sm1J";
    let id = "call_43e52812227d488eb519";
    assert_fixture(
        RuntimeKind::Opencode,
        "opencode/tool-bash.jsonl",
        &[
            vec![started(session, None)],
            vec![
                AgentEvent::ToolCall {
                    id: id.into(),
                    name: "bash".into(),
                    input: json!({"command": "echo hello"}),
                },
                tool_result(id, "hello\n", false),
                AgentEvent::Command {
                    cmd: "echo hello".into(),
                    exit_code: Some(0),
                    output: "hello\n".into(),
                },
            ],
            vec![usage(30, 12, 0, None)], // reason "tool-calls": another step follows
            vec![started(session, None)],
            vec![text("Tool said: hello")],
            vec![usage(30, 12, 0, None), finished(true, None)],
        ],
    );
}

#[test]
fn opencode_api_error() {
    assert_fixture(
        RuntimeKind::Opencode,
        "opencode/api-error.jsonl",
        &[vec![
            AgentEvent::Error {
                message: "mock error 401".into(),
                class: Some(ErrorClass::Auth),
            },
            finished(false, Some("mock error 401")),
        ]],
    );
}

#[test]
fn usage_events_sum_to_the_run_totals() {
    let adapter = adapter_for(RuntimeKind::Opencode);
    let total = read_fixture("opencode/tool-bash.jsonl")
        .lines()
        .flat_map(|line| adapter.parse_line(line))
        .filter_map(|event| match event {
            AgentEvent::Usage(usage) => Some(usage),
            _ => None,
        })
        .sum::<TokenUsage>();
    // OpenCode prints `cost: 0` for a model without a price (the mock provider here, and every
    // custom-provider model Muster configures): unpriced, so `None`, left to the rate table.
    assert_eq!((total.input, total.output, total.cost_usd), (60, 24, None));
}

#[test]
fn every_fixture_file_is_covered() {
    let mut found = Vec::new();
    for dir in std::fs::read_dir(fixtures_dir()).unwrap() {
        let path = dir.unwrap().path();
        // `checks/` holds test runners' output, read by the exact tests in `src/checks.rs`.
        if path.file_name().is_some_and(|n| n == "checks") {
            continue;
        }
        if path.is_dir() {
            for file in std::fs::read_dir(&path).unwrap() {
                let file = file.unwrap().path();
                found.push(
                    file.strip_prefix(fixtures_dir())
                        .unwrap()
                        .display()
                        .to_string(),
                );
            }
        } else {
            found.push(path.file_name().unwrap().to_string_lossy().into_owned());
        }
    }
    found.sort();
    assert_eq!(
        found, COVERED,
        "add an exact test for each new fixture file"
    );
}
