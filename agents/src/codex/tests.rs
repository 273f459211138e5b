use super::*;
use crate::ErrorClass;
use crate::adapter::tests::sample_spec;
use std::path::PathBuf;

#[test]
fn command_reads_the_prompt_from_stdin_with_a_sandbox() {
    let mut spec = sample_spec();
    spec.base_url = None;
    let launch = command(&spec);
    assert_eq!(
        launch.args,
        [
            "exec",
            "--json",
            "--skip-git-repo-check",
            "--model",
            "m1",
            "--sandbox",
            "workspace-write",
            "--extra",
            "-",
        ]
    );
    assert_eq!(launch.stdin.as_deref(), Some("fix the bug"));
    assert_eq!(launch.env_value("HOME"), Some("/runs/r1/home"));
    assert_eq!(launch.env_value("CODEX_HOME"), Some("/runs/r1/home/.codex"));
    assert_eq!(launch.env_value("CODEX_API_KEY"), Some("sk-secret-123"));
    assert_eq!(launch.env_value("OPENAI_API_KEY"), Some("sk-secret-123"));
    assert!(launch.files.is_empty(), "no base URL, no config file");
}

#[test]
fn base_url_writes_a_responses_provider_into_codex_home() {
    let launch = command(&sample_spec());
    assert_eq!(
        launch.files,
        [(
            PathBuf::from("/runs/r1/home/.codex/config.toml"),
            "# Written by Muster for one run.\n\
             model = \"m1\"\n\
             model_provider = \"muster\"\n\n\
             [model_providers.muster]\n\
             name = \"Muster\"\n\
             base_url = \"http://127.0.0.1:9/v1\"\n\
             wire_api = \"responses\"\n\
             env_key = \"MUSTER_PROVIDER_API_KEY\"\n"
                .to_owned()
        )]
    );
    assert_eq!(launch.env_value(PROVIDER_KEY_ENV), Some("sk-secret-123"));
    assert_eq!(launch.env_value("OPENAI_API_KEY"), None);
    let config = &launch.files[0].1;
    assert!(
        !config.contains("sk-secret-123"),
        "the key travels in the environment only"
    );
}

#[test]
fn the_agents_openai_key_is_named_by_env_key() {
    let mut spec = sample_spec();
    spec.api_key = None;
    spec.env.push(("CODEX_API_KEY".into(), String::new()));
    spec.env
        .push(("OPENAI_API_KEY".into(), "sk-agent-789".into()));
    let launch = command(&spec);
    let config = &launch.files[0].1;
    assert!(
        config.ends_with("env_key = \"OPENAI_API_KEY\"\n"),
        "{config}"
    );
    assert!(!config.contains("sk-agent-789"), "{config}");
    assert_eq!(launch.env_value("OPENAI_API_KEY"), Some("sk-agent-789"));
    assert_eq!(launch.env_value(PROVIDER_KEY_ENV), None);

    // CODEX_API_KEY serves when OPENAI_API_KEY is not set (an empty value does not count).
    spec.env = vec![("CODEX_API_KEY".into(), "sk-codex".into())];
    let config = &command(&spec).files[0].1;
    assert!(
        config.ends_with("env_key = \"CODEX_API_KEY\"\n"),
        "{config}"
    );
}

#[test]
fn provider_without_key_has_no_env_key_and_strings_are_escaped() {
    let mut spec = sample_spec();
    spec.api_key = None;
    spec.model = Some("we\"ird\\model\n".into());
    let config = &command(&spec).files[0].1;
    assert!(!config.contains("env_key"));
    assert!(config.contains(r#"model = "we\"ird\\model\n""#), "{config}");
}

#[test]
fn permission_modes_and_resume() {
    let mut spec = sample_spec();
    spec.permission_mode = PermissionMode::ReadOnly;
    assert!(
        command(&spec)
            .args
            .windows(2)
            .any(|w| w == ["--sandbox", "read-only"])
    );
    spec.permission_mode = PermissionMode::Bypass;
    spec.resume_session = Some("01a236fe".into());
    let args = command(&spec).args;
    assert!(args.contains(&"--dangerously-bypass-approvals-and-sandbox".to_owned()));
    assert!(!args.contains(&"--sandbox".to_owned()));
    assert_eq!(args[args.len() - 3..], ["resume", "01a236fe", "-"]);
}

#[test]
fn mcp_calls_pair_up() {
    let started = r#"{"type":"item.started","item":{"id":"item_1","type":"mcp_tool_call","server":"echo","tool":"echo_upper","arguments":{"text":"hi mcp"},"result":null,"error":null,"status":"in_progress"}}"#;
    assert_eq!(
        parse_line(started),
        [AgentEvent::ToolCall {
            id: "item_1".into(),
            name: "mcp__echo__echo_upper".into(),
            input: json!({"text": "hi mcp"}),
        }]
    );
    let completed = r#"{"type":"item.completed","item":{"id":"item_1","type":"mcp_tool_call","server":"echo","tool":"echo_upper","arguments":{"text":"hi mcp"},"result":{"content":[{"type":"text","text":"HI MCP"}],"structured_content":null},"error":null,"status":"completed"}}"#;
    assert_eq!(
        parse_line(completed),
        [AgentEvent::ToolResult {
            id: "item_1".into(),
            output: "HI MCP".into(),
            is_error: false,
        }]
    );
    let refused = r#"{"type":"item.completed","item":{"id":"item_2","type":"mcp_tool_call","server":"echo","tool":"echo_upper","arguments":{},"result":null,"error":{"message":"MCP tool call requires approval, but approval policy is never"},"status":"failed"}}"#;
    assert_eq!(
        parse_line(refused),
        [AgentEvent::ToolResult {
            id: "item_2".into(),
            output: "MCP tool call requires approval, but approval policy is never".into(),
            is_error: true,
        }]
    );
}

#[test]
fn failed_command_is_an_error_result_with_its_exit_code() {
    let line = r#"{"type":"item.completed","item":{"id":"item_1","type":"command_execution","command":"/bin/bash -lc 'ls /nonexistent'","aggregated_output":"ls: cannot access '/nonexistent': No such file or directory\n","exit_code":2,"status":"failed"}}"#;
    let output = "ls: cannot access '/nonexistent': No such file or directory\n".to_owned();
    assert_eq!(
        parse_line(line),
        [
            AgentEvent::ToolResult {
                id: "item_1".into(),
                output: output.clone(),
                is_error: true,
            },
            AgentEvent::Command {
                cmd: "/bin/bash -lc 'ls /nonexistent'".into(),
                exit_code: Some(2),
                output,
            },
        ]
    );
}

#[test]
fn errors_retries_and_failures() {
    let retry = r#"{"type":"error","message":"Reconnecting... 1/5 (unexpected status 401 Unauthorized: mock error 401, url: http://127.0.0.1:18432/v1/responses)"}"#;
    assert!(matches!(
        parse_line(retry).as_slice(),
        [AgentEvent::Error {
            class: Some(ErrorClass::Auth),
            ..
        }]
    ));
    let warning = r#"{"type":"item.completed","item":{"id":"item_0","type":"error","message":"Model metadata for `mock-model` not found."}}"#;
    assert_eq!(
        parse_line(warning),
        [AgentEvent::Error {
            message: "Model metadata for `mock-model` not found.".into(),
            class: None,
        }]
    );
    let failed =
        r#"{"type":"turn.failed","error":{"message":"We’re currently experiencing high demand"}}"#;
    assert_eq!(
        parse_line(failed),
        [AgentEvent::Finished {
            ok: false,
            summary: Some("We’re currently experiencing high demand".into()),
        }]
    );
}

#[test]
fn in_progress_text_and_unknown_items() {
    assert!(
        parse_line(r#"{"type":"item.started","item":{"id":"i","type":"agent_message","text":""}}"#)
            .is_empty()
    );
    assert!(parse_line(r#"{"type":"turn.started"}"#).is_empty());
    for line in [
        r#"{"type":"item.completed","item":{"id":"i","type":"todo_list","items":[]}}"#,
        r#"{"type":"item.plan.delta","delta":"x"}"#,
        r#"{"type":"thread.started"}"#,
        "Reading additional input from stdin...",
    ] {
        assert_eq!(parse_line(line), [AgentEvent::raw(line)], "{line}");
    }
}

#[test]
fn the_rollouts_token_counts_are_turn_usage() {
    let count = r#"{"timestamp":"2026-12-03T10:50:27.995Z","ordinal":17,"type":"event_msg","payload":{"type":"token_count","info":{"total_token_usage":{"input_tokens":60,"cached_input_tokens":10,"cache_write_input_tokens":0,"output_tokens":24,"reasoning_output_tokens":6,"total_tokens":84},"last_token_usage":{"input_tokens":30,"cached_input_tokens":5,"cache_write_input_tokens":0,"output_tokens":12,"reasoning_output_tokens":3,"total_tokens":42},"last_usage_includes_reasoning":false,"model_context_window":258400},"rate_limits":null}}"#;
    assert_eq!(
        parse_rollout_line(count),
        [AgentEvent::TurnUsage(TokenUsage {
            input: 25,
            output: 12,
            cache_read: 5,
            cache_write: 0,
            cost_usd: None,
        })]
    );
    let rate_limits_only =
        r#"{"type":"event_msg","payload":{"type":"token_count","info":null,"rate_limits":{}}}"#;
    assert_eq!(parse_rollout_line(rate_limits_only), []);
    let other = r#"{"type":"response_item","payload":{"type":"message","role":"user"}}"#;
    assert_eq!(parse_rollout_line(other), []);
    assert_eq!(parse_rollout_line("not json"), []);
}
