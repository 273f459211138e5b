use super::*;
use crate::adapter::tests::sample_spec;

fn config_of(launch: &LaunchSpec) -> Value {
    serde_json::from_str(launch.env_value("OPENCODE_CONFIG_CONTENT").unwrap()).unwrap()
}

#[test]
fn base_url_becomes_an_openai_compatible_provider() {
    let launch = command(&sample_spec());
    assert_eq!(
        launch.args,
        ["run", "--format", "json", "--model", "muster/m1", "--extra"]
    );
    assert_eq!(launch.stdin.as_deref(), Some("fix the bug"));
    assert_eq!(launch.env_value("HOME"), Some("/runs/r1/home"));
    assert_eq!(launch.env_value("OPENCODE_DISABLE_MODELS_FETCH"), Some("1"));
    assert_eq!(
        config_of(&launch),
        json!({
            "autoupdate": false,
            "share": "disabled",
            "provider": {"muster": {
                "npm": "@ai-sdk/openai-compatible",
                "name": "Muster",
                "options": {"baseURL": "http://127.0.0.1:9/v1", "apiKey": "{env:MUSTER_PROVIDER_API_KEY}"},
                "models": {"m1": {"name": "m1"}},
            }},
            "model": "muster/m1",
            "small_model": "muster/m1",
        })
    );
    assert_eq!(
        launch.env_value("MUSTER_PROVIDER_API_KEY"),
        Some("sk-secret-123")
    );
    assert!(
        !launch
            .env_value("OPENCODE_CONFIG_CONTENT")
            .unwrap()
            .contains("sk-secret-123"),
        "the config names the variable, not the key"
    );
}

#[test]
fn the_agents_openai_key_reaches_a_custom_provider_by_name() {
    let mut spec = sample_spec();
    spec.api_key = None;
    spec.env
        .push(("OPENAI_API_KEY".into(), "sk-agent-789".into()));
    let launch = command(&spec);
    let config = config_of(&launch);
    assert_eq!(
        config["provider"]["muster"]["options"]["apiKey"],
        "{env:OPENAI_API_KEY}"
    );
    assert_eq!(launch.env_value("OPENAI_API_KEY"), Some("sk-agent-789"));
    assert_eq!(launch.env_value("MUSTER_PROVIDER_API_KEY"), None);

    // No key anywhere: no apiKey, so OpenCode sends no Authorization header at all.
    spec.env.retain(|(k, _)| k != "OPENAI_API_KEY");
    let config = config_of(&command(&spec));
    assert_eq!(
        config["provider"]["muster"]["options"],
        json!({"baseURL": "http://127.0.0.1:9/v1"})
    );
}

#[test]
fn without_base_url_the_model_passes_through() {
    let mut spec = sample_spec();
    spec.base_url = None;
    spec.model = Some("anthropic/claude-sonnet-4-5".into());
    spec.resume_session = Some("ses_dc8f".into());
    spec.permission_mode = PermissionMode::Bypass;
    let launch = command(&spec);
    assert_eq!(
        launch.args,
        [
            "run",
            "--format",
            "json",
            "--model",
            "anthropic/claude-sonnet-4-5",
            "--session",
            "ses_dc8f",
            "--auto",
            "--extra",
        ]
    );
    assert_eq!(
        config_of(&launch),
        json!({"autoupdate": false, "share": "disabled"})
    );
    assert_eq!(launch.env_value("OPENCODE_DISABLE_MODELS_FETCH"), None);
}

#[test]
fn read_only_denies_edits_and_bash() {
    let mut spec = sample_spec();
    spec.permission_mode = PermissionMode::ReadOnly;
    let launch = command(&spec);
    assert_eq!(
        config_of(&launch)["permission"],
        json!({"edit": "deny", "bash": "deny"})
    );
    assert!(!launch.args.contains(&"--auto".to_owned()));
}

#[test]
fn rejected_tool_is_an_error_result_without_a_command() {
    let line = r#"{"type":"tool_use","sessionID":"ses_1","part":{"type":"tool","tool":"bash","callID":"call_f0a4","state":{"status":"error","input":{"command":"touch /tmp/x"},"error":"The user rejected permission to use this specific tool call."}}}"#;
    assert_eq!(
        parse_line(line),
        [
            AgentEvent::ToolCall {
                id: "call_f0a4".into(),
                name: "bash".into(),
                input: json!({"command": "touch /tmp/x"}),
            },
            AgentEvent::ToolResult {
                id: "call_f0a4".into(),
                output: "The user rejected permission to use this specific tool call.".into(),
                is_error: true,
            },
        ]
    );
}

#[test]
fn running_tool_is_only_a_call() {
    let line = r#"{"type":"tool_use","part":{"type":"tool","tool":"read","callID":"c1","state":{"status":"running","input":{"path":"a"}}}}"#;
    assert_eq!(
        parse_line(line),
        [AgentEvent::ToolCall {
            id: "c1".into(),
            name: "read".into(),
            input: json!({"path": "a"}),
        }]
    );
}

#[test]
fn reasoning_tokens_count_as_output_and_errors_without_status_use_keywords() {
    let step = r#"{"type":"step_finish","part":{"reason":"length","tokens":{"input":3,"output":4,"reasoning":5,"cache":{"read":6,"write":7}},"cost":0.5}}"#;
    assert_eq!(
        parse_line(step),
        [AgentEvent::Usage(TokenUsage {
            input: 3,
            output: 9,
            cache_read: 6,
            cache_write: 7,
            cost_usd: Some(0.5),
        })]
    );
    let error = r#"{"type":"error","error":{"name":"UnknownError","data":{"message":"fetch failed: Unable to connect"}}}"#;
    assert_eq!(
        parse_line(error)[0],
        AgentEvent::Error {
            message: "fetch failed: Unable to connect".into(),
            class: Some(ErrorClass::Network),
        }
    );
    let bare = r#"{"type":"error","error":{"name":"ProviderAuthError"}}"#;
    assert_eq!(
        parse_line(bare)[1],
        AgentEvent::Finished {
            ok: false,
            summary: Some("ProviderAuthError".into()),
        }
    );
}

#[test]
fn unknown_lines_are_raw() {
    assert!(parse_line("  ").is_empty());
    for line in [
        r#"{"type":"patch","part":{}}"#,
        r#"{"type":"text","part":{}}"#,
        "! permission requested: external_directory; auto-rejecting",
    ] {
        assert_eq!(parse_line(line), [AgentEvent::raw(line)], "{line}");
    }
}

#[test]
fn a_zero_cost_for_real_tokens_is_unpriced_not_free() {
    // What the real opencode 1.18.33 prints for a custom-provider model without a `cost` entry.
    let step = r#"{"type":"step_finish","part":{"reason":"stop","tokens":{"total":42,"input":25,"output":12,"reasoning":0,"cache":{"read":5,"write":0}},"cost":0}}"#;
    assert_eq!(
        parse_line(step)[0],
        AgentEvent::Usage(TokenUsage {
            input: 25,
            output: 12,
            cache_read: 5,
            cache_write: 0,
            cost_usd: None,
        })
    );
    let empty = r#"{"type":"step_finish","part":{"reason":"stop","tokens":{"input":0,"output":0},"cost":0}}"#;
    assert_eq!(
        parse_line(empty)[0],
        AgentEvent::Usage(TokenUsage {
            cost_usd: Some(0.0),
            ..TokenUsage::default()
        })
    );
}
