use super::*;
use crate::adapter::tests::sample_spec;
use serde_json::json;
use std::path::Path;

fn args_of(spec: &RunSpec) -> Vec<String> {
    command(spec).args
}

#[test]
fn command_reads_stream_json_from_stdin_with_model_and_extra_args() {
    let launch = command(&sample_spec());
    assert_eq!(launch.program, Path::new("/opt/bin/agent"));
    assert_eq!(launch.cwd, Path::new("/work/tree"));
    assert_eq!(
        launch.args,
        [
            "-p",
            "--input-format",
            "stream-json",
            "--output-format",
            "stream-json",
            "--verbose",
            "--include-partial-messages",
            "--disallowedTools",
            "AskUserQuestion",
            "--permission-mode",
            "acceptEdits",
            "--model",
            "m1",
            "--extra",
        ]
    );
    let stdin = launch.stdin.unwrap();
    assert!(stdin.ends_with('\n'));
    let message: Value = serde_json::from_str(stdin.trim_end()).unwrap();
    assert_eq!(
        message,
        json!({"type": "user", "message": {"role": "user", "content": [{"type": "text", "text": "fix the bug"}]}})
    );
    assert!(launch.files.is_empty());
}

#[test]
fn command_env_points_at_the_base_url_with_an_isolated_home() {
    let launch = command(&sample_spec());
    assert_eq!(launch.env_value("HOME"), Some("/runs/r1/home"));
    assert_eq!(
        launch.env_value("ANTHROPIC_BASE_URL"),
        Some("http://127.0.0.1:9/v1")
    );
    assert_eq!(launch.env_value("ANTHROPIC_API_KEY"), Some("sk-secret-123"));
    assert_eq!(launch.env_value("DISABLE_AUTOUPDATER"), Some("1"));
    assert_eq!(launch.env_value("IS_SANDBOX"), None);
}

#[test]
fn permission_modes_map_to_flags() {
    let mut spec = sample_spec();
    spec.permission_mode = PermissionMode::ReadOnly;
    assert!(!args_of(&spec).contains(&"--permission-mode".to_owned()));
    spec.permission_mode = PermissionMode::Bypass;
    let args = args_of(&spec);
    let at = args.iter().position(|a| a == "--permission-mode").unwrap();
    assert_eq!(args[at + 1], "bypassPermissions");
}

#[test]
fn is_sandbox_is_set_only_for_bypass_as_root() {
    let mut spec = sample_spec();
    spec.running_as_root = true;
    assert_eq!(
        command(&spec).env_value("IS_SANDBOX"),
        None,
        "acceptEdits works as root"
    );
    spec.permission_mode = PermissionMode::Bypass;
    assert_eq!(command(&spec).env_value("IS_SANDBOX"), Some("1"));
    spec.running_as_root = false;
    assert_eq!(command(&spec).env_value("IS_SANDBOX"), None);
}

#[test]
fn resume_passes_the_session_id() {
    let mut spec = sample_spec();
    spec.resume_session = Some("5810e3a2-6dd3-4f47-9945-c70ef8ff2a1b".into());
    let args = args_of(&spec);
    let at = args.iter().position(|a| a == "--resume").unwrap();
    assert_eq!(args[at + 1], "5810e3a2-6dd3-4f47-9945-c70ef8ff2a1b");
}

#[test]
fn api_retry_is_a_classified_error() {
    let line = r#"{"type":"system","subtype":"api_retry","attempt":1,"max_retries":10,"retry_delay_ms":521.36,"error_status":401,"error":"authentication_failed","session_id":"s"}"#;
    assert_eq!(
        parse_line(line),
        [AgentEvent::Error {
            message: "API request failed (authentication_failed, status 401); retry 1/10".into(),
            class: Some(ErrorClass::Auth),
        }]
    );
    let unknown = r#"{"type":"system","subtype":"api_retry","attempt":2,"max_retries":10,"error_status":null,"error":"unknown"}"#;
    assert_eq!(
        parse_line(unknown),
        [AgentEvent::Error {
            message: "API request failed (unknown); retry 2/10".into(),
            class: None,
        }]
    );
}

#[test]
fn error_result_without_text_uses_the_errors_list() {
    let line = r#"{"type":"result","subtype":"error_max_turns","is_error":true,"num_turns":2,"errors":["Reached maximum number of turns (1)"],"usage":{"input_tokens":5,"output_tokens":7,"cache_read_input_tokens":2,"cache_creation_input_tokens":1},"total_cost_usd":0.25}"#;
    let message = "Reached maximum number of turns (1)".to_owned();
    assert_eq!(
        parse_line(line),
        [
            AgentEvent::Usage(TokenUsage {
                input: 5,
                output: 7,
                cache_read: 2,
                cache_write: 1,
                cost_usd: Some(0.25),
            }),
            AgentEvent::Error {
                message: message.clone(),
                class: None,
            },
            AgentEvent::Finished {
                ok: false,
                summary: Some(message),
            },
        ]
    );
}

#[test]
fn connection_refused_result_is_a_network_error() {
    let line = r#"{"type":"result","subtype":"success","is_error":true,"api_error_status":null,"result":"API Error: Unable to connect to API (ConnectionRefused)","modelUsage":{}}"#;
    let events = parse_line(line);
    assert_eq!(
        events[1],
        AgentEvent::Error {
            message: "API Error: Unable to connect to API (ConnectionRefused)".into(),
            class: Some(ErrorClass::Network),
        }
    );
    assert!(matches!(events[2], AgentEvent::Finished { ok: false, .. }));
}

#[test]
fn mcp_tool_results_join_text_blocks() {
    let line = r#"{"type":"user","message":{"role":"user","content":[{"tool_use_id":"toolu_a8a3","type":"tool_result","content":[{"type":"text","text":"HI MCP"}]}]}}"#;
    assert_eq!(
        parse_line(line),
        [AgentEvent::ToolResult {
            id: "toolu_a8a3".into(),
            output: "HI MCP".into(),
            is_error: false,
        }]
    );
}

#[test]
fn noise_and_unknown_lines() {
    assert!(parse_line("").is_empty());
    assert!(
        parse_line(r#"{"type":"stream_event","event":{"type":"content_block_delta"}}"#).is_empty()
    );
    assert!(parse_line(r#"{"type":"system","subtype":"status","status":"requesting"}"#).is_empty());
    for line in [
        "Warning: no stdin data received in 3s",
        r#"{"type":"control_request","request_id":"r1","request":{"subtype":"can_use_tool"}}"#,
        r#"{"type":"system","subtype":"some_future_subtype"}"#,
        r#"{"type":"system","subtype":"init"}"#,
        r#"{"type":"assistant","message":5}"#,
        r#"[1,2,3]"#,
    ] {
        assert_eq!(parse_line(line), [AgentEvent::raw(line)], "{line}");
    }
}

/// The pinned Claude Code (2.1.197) reports background tasks, refused permissions and its bookkeeping as
/// `system` lines; the ones a person wants are notices, the rest nothing, none of them raw JSON.
#[test]
fn the_pinned_versions_system_lines_are_notices_or_nothing() {
    let notice = |line: &str| match parse_line(line).as_slice() {
        [AgentEvent::Notice { text }] => text.clone(),
        other => panic!("{line}: {other:?}"),
    };
    assert_eq!(
        notice(
            r#"{"type":"system","subtype":"task_started","task_id":"b1","tool_use_id":"t1","description":"Run the test suite","task_type":"local_bash","session_id":"s"}"#
        ),
        "Background task started: Run the test suite"
    );
    assert_eq!(
        notice(
            r#"{"type":"system","subtype":"task_notification","task_id":"b1","status":"completed","output_file":"","summary":"42 tests passed","session_id":"s"}"#
        ),
        "Background task completed: 42 tests passed"
    );
    assert_eq!(
        notice(
            r#"{"type":"system","subtype":"permission_denied","tool_name":"Bash","tool_use_id":"t2","message":"This command requires approval"}"#
        ),
        "Permission refused for Bash: This command requires approval"
    );
    assert_eq!(
        notice(
            r#"{"type":"system","subtype":"compact_boundary","compact_metadata":{"trigger":"auto"}}"#
        ),
        "Conversation compacted"
    );
    for quiet in [
        r#"{"type":"system","subtype":"task_progress","task_id":"b1","description":"x","usage":{"total_tokens":1}}"#,
        r#"{"type":"system","subtype":"hook_started","hook_id":"h"}"#,
        r#"{"type":"system","subtype":"turn_duration"}"#,
    ] {
        assert!(parse_line(quiet).is_empty(), "{quiet}");
    }
}

/// A cancelled turn ends with Claude's diagnostic as its `result`: an error line, never a summary.
#[test]
fn the_closing_diagnostic_is_not_a_summary() {
    let line = r#"{"type":"result","subtype":"success","is_error":true,"result":"[ede_diagnostic] result_type=user last_content_type=n/a stop_reason=null","session_id":"s1","total_cost_usd":0,"usage":{"input_tokens":0,"output_tokens":0}}"#;
    let events = parse_line(line);
    assert!(
        matches!(
            events.last(),
            Some(AgentEvent::Finished {
                ok: false,
                summary: None
            })
        ),
        "{events:?}"
    );
    assert!(events.iter().any(|e| matches!(e, AgentEvent::Error { .. })));
}

#[test]
fn unknown_content_blocks_are_skipped_and_known_ones_kept() {
    let line = r#"{"type":"assistant","message":{"model":"m","content":[{"type":"redacted_thinking","data":"x"},{"type":"text","text":"ok"},{"type":"tool_use"}]}}"#;
    assert_eq!(parse_line(line), [AgentEvent::Text { text: "ok".into() }]);
}

#[test]
fn each_request_reports_its_usage_as_turn_usage_and_text_deltas_nothing() {
    let start = r#"{"type":"stream_event","event":{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"claude-opus-4-8","content":[],"usage":{"input_tokens":25,"output_tokens":1,"cache_creation_input_tokens":2,"cache_read_input_tokens":4}}},"session_id":"s","parent_tool_use_id":null,"uuid":"u1"}"#;
    let delta = r#"{"type":"stream_event","event":{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":" from"}},"session_id":"s","parent_tool_use_id":null,"uuid":"u2"}"#;
    let end = r#"{"type":"stream_event","event":{"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":12}},"session_id":"s","parent_tool_use_id":null,"uuid":"u3"}"#;
    let stop =
        r#"{"type":"stream_event","event":{"type":"message_stop"},"session_id":"s","uuid":"u4"}"#;
    assert_eq!(
        parse_line(start),
        [AgentEvent::TurnUsage(TokenUsage {
            input: 25,
            output: 0,
            cache_read: 4,
            cache_write: 2,
            cost_usd: None,
        })]
    );
    assert_eq!(parse_line(delta), []);
    assert_eq!(
        parse_line(end),
        [AgentEvent::TurnUsage(TokenUsage {
            output: 12,
            ..TokenUsage::default()
        })]
    );
    assert_eq!(parse_line(stop), []);
}
