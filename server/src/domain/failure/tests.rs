use super::*;
use muster_agents::{RuntimeKind, adapter_for};

/// The decisive error of a recorded stream, as the run engine tracks it.
fn track(kind: RuntimeKind, stream: &str) -> ErrorTrack {
    let adapter = adapter_for(kind);
    let mut track = ErrorTrack::default();
    for line in stream.lines() {
        for event in adapter.parse_line(line) {
            track.add(&event);
        }
    }
    track
}

fn facts<'a>(track: &'a ErrorTrack, kind: RuntimeKind, exit_code: Option<i32>) -> FailureFacts<'a> {
    FailureFacts {
        reason: track.reason(),
        kind,
        exit_code,
        detail: track.message(),
        summary: None,
        model: None,
    }
}

fn only(reason: FailureReason, kind: RuntimeKind, detail: Option<&str>) -> FailureText {
    explain(&FailureFacts {
        reason,
        kind,
        exit_code: None,
        detail,
        summary: None,
        model: None,
    })
}

#[test]
fn a_refused_key_names_the_cli_the_status_and_the_secret() {
    let cases = [
        (
            RuntimeKind::Claude,
            RuntimeKind::Claude,
            include_str!("../../../../agents/fixtures/claude/api-error.jsonl"),
            "Claude Code's API key was refused by the provider (401)",
            "check the agent's ANTHROPIC_API_KEY secret",
        ),
        (
            RuntimeKind::Codex,
            RuntimeKind::Codex,
            include_str!("../../../../agents/fixtures/codex/api-error.jsonl"),
            "Codex's API key was refused by the provider (401)",
            "check the agent's OPENAI_API_KEY secret",
        ),
        (
            RuntimeKind::Opencode,
            RuntimeKind::Opencode,
            include_str!("../../../../agents/fixtures/opencode/api-error.jsonl"),
            "OpenCode's API key was refused by the provider (401)",
            "check the agent's OPENAI_API_KEY secret",
        ),
    ];
    for (runtime, kind, stream, what, to_do) in cases {
        let track = track(runtime, stream);
        assert_eq!(
            track.reason(),
            FailureReason::Auth,
            "{runtime:?}: {track:?}"
        );
        let text = explain(&facts(&track, kind, Some(1)));
        assert_eq!(text.what, what);
        assert_eq!(text.to_do, to_do);
        assert!(text.in_agent_settings);
        assert_eq!(text.sentence(), format!("{what}: {to_do}"));
    }
}

/// The pinned Claude Code stopped after its first refused attempt: the retry notice carries the status,
/// the closing result only a diagnostic without one. The diagnostic must not hide the refusal.
#[test]
fn claudes_closing_diagnostic_does_not_hide_the_refusal() {
    let stream = concat!(
        r#"{"type":"system","subtype":"init","session_id":"s1","model":"claude-sonnet-4-5","tools":[]}"#,
        "\n",
        r#"{"type":"system","subtype":"api_retry","attempt":1,"max_retries":10,"retry_delay_ms":500,"error_status":401,"error":"authentication_failed","session_id":"s1"}"#,
        "\n",
        r#"{"type":"result","subtype":"success","is_error":true,"result":"[ede_diagnostic] result_type=user last_content_type=n/a stop_reason=null","session_id":"s1","total_cost_usd":0,"usage":{"input_tokens":0,"output_tokens":0}}"#,
        "\n",
    );
    let track = track(RuntimeKind::Claude, stream);
    assert_eq!(track.reason(), FailureReason::Auth);
    let detail = track.message().unwrap();
    assert!(detail.contains("401"), "{detail}");
    let text = explain(&facts(&track, RuntimeKind::Claude, Some(0)));
    assert_eq!(
        text.sentence(),
        "Claude Code's API key was refused by the provider (401): check the agent's ANTHROPIC_API_KEY secret"
    );
    // The raw diagnostic stays available.
    let f = FailureFacts {
        summary: Some("[ede_diagnostic] result_type=user last_content_type=n/a stop_reason=null"),
        ..facts(&track, RuntimeKind::Claude, Some(0))
    };
    let raw = diagnostic(&f);
    assert!(raw.contains("[ede_diagnostic]"), "{raw}");
    assert!(raw.contains("exit code: 0"), "{raw}");
    assert!(raw.contains("reason: auth"), "{raw}");
}

#[test]
fn a_recorded_success_has_no_error() {
    let track = track(
        RuntimeKind::Claude,
        include_str!("../../../../agents/fixtures/claude/text.jsonl"),
    );
    assert!(!track.seen());
    assert_eq!(track.reason(), FailureReason::Exit);
}

#[test]
fn each_cause_says_what_to_do() {
    let not_found = only(
        FailureReason::Config,
        RuntimeKind::Codex,
        Some("unexpected status 404 Not Found: model not found"),
    );
    assert_eq!(
        not_found.what,
        "The provider does not know Codex's model (404)"
    );
    assert!(not_found.to_do.contains("model setting"));
    let with_model = explain(&FailureFacts {
        reason: FailureReason::Config,
        kind: RuntimeKind::Opencode,
        exit_code: Some(1),
        detail: Some("The model `gpt-9` does not exist"),
        summary: None,
        model: Some("gpt-9"),
    });
    assert_eq!(
        with_model.what,
        "The provider does not know the model \"gpt-9\""
    );

    let limited = only(FailureReason::RateLimit, RuntimeKind::Claude, None);
    assert_eq!(
        limited.what,
        "The model provider rate-limited Claude Code (429)"
    );
    let unreachable = only(
        FailureReason::Network,
        RuntimeKind::Codex,
        Some("stream error: connection refused"),
    );
    assert_eq!(unreachable.what, "Codex could not reach its model server");
    assert!(unreachable.to_do.contains("base URL"));
    assert!(
        only(FailureReason::MissingCli, RuntimeKind::Opencode, None)
            .what
            .contains("OpenCode is not installed")
    );
    assert!(
        only(FailureReason::Sandbox, RuntimeKind::Claude, None)
            .to_do
            .contains("--allow-unsandboxed-agents")
    );
    assert!(
        only(FailureReason::Stalled, RuntimeKind::Claude, None)
            .to_do
            .contains("stall timeout")
    );
    let budget = only(FailureReason::OverBudget, RuntimeKind::Codex, None);
    assert!(budget.what.contains("budget") && budget.in_agent_settings);
    let exited = explain(&FailureFacts {
        exit_code: Some(3),
        ..FailureFacts {
            reason: FailureReason::Exit,
            kind: RuntimeKind::Custom,
            exit_code: None,
            detail: None,
            summary: None,
            model: None,
        }
    });
    assert_eq!(exited.what, "The agent's command exited with code 3");
    assert!(!exited.in_agent_settings);
}

#[test]
fn http_statuses_are_found_only_standing_alone() {
    assert_eq!(http_status("API Error: 401 mock error 401"), Some(401));
    assert_eq!(
        http_status("API request failed (authentication_failed, status 401); retry 1/10"),
        Some(401)
    );
    assert_eq!(http_status("listening on 127.0.0.1:4010"), None);
    assert_eq!(http_status("run 4010 failed"), None);
    assert_eq!(http_status("nothing here"), None);
}
