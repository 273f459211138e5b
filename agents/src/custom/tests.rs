use super::*;
use crate::ErrorClass;
use crate::adapter::tests::sample_spec;
use std::path::Path;

#[test]
fn formats_parse_by_name_and_reject_unknown() {
    for format in CustomFormat::ALL {
        assert_eq!(format.to_string().parse::<CustomFormat>().unwrap(), format);
    }
    let err = "xml".parse::<CustomFormat>().unwrap_err();
    assert!(
        err.to_string()
            .ends_with("expected one of: stream_json, json_lines, plain_text"),
        "{err}"
    );
}

#[test]
fn command_runs_the_binary_with_extra_args_and_muster_env() {
    let launch = CustomAdapter::new(CustomFormat::PlainText)
        .command(&sample_spec())
        .unwrap();
    assert_eq!(launch.program, Path::new("/opt/bin/agent"));
    assert_eq!(launch.args, ["--extra"]);
    assert_eq!(launch.stdin.as_deref(), Some("fix the bug"));
    assert_eq!(launch.env_value("MUSTER_MODEL"), Some("m1"));
    assert_eq!(
        launch.env_value("MUSTER_BASE_URL"),
        Some("http://127.0.0.1:9/v1")
    );
    assert_eq!(launch.env_value("MUSTER_API_KEY"), Some("sk-secret-123"));
    assert_eq!(launch.env_value("MUSTER_TOKEN"), Some("run-token-456"));
    assert_eq!(launch.cwd, Path::new("/work/tree"));
}

#[test]
fn json_lines_accept_native_events_and_common_fields() {
    let adapter = CustomAdapter::new(CustomFormat::JsonLines);
    assert_eq!(
        adapter.parse_line(r#"{"kind":"command","cmd":"ls","exit_code":0,"output":"a"}"#),
        [AgentEvent::Command {
            cmd: "ls".into(),
            exit_code: Some(0),
            output: "a".into(),
        }]
    );
    assert_eq!(
        adapter.parse_line(r#"{"type":"message","text":"hello"}"#),
        [AgentEvent::Text {
            text: "hello".into()
        }]
    );
    assert_eq!(
        adapter.parse_line(r#"{"error":"HTTP 429 Too Many Requests"}"#),
        [AgentEvent::Error {
            message: "HTTP 429 Too Many Requests".into(),
            class: Some(ErrorClass::RateLimit),
        }]
    );
    for line in [r#"{"kind":"mystery"}"#, r#"{"n":1}"#, "plain words", "[]"] {
        assert_eq!(adapter.parse_line(line), [AgentEvent::raw(line)], "{line}");
    }
    assert!(adapter.parse_line("").is_empty());
}

#[test]
fn plain_text_lines_are_text() {
    let adapter = CustomAdapter::new(CustomFormat::PlainText);
    assert_eq!(
        adapter.parse_line("Hi from the mock!\r\n"),
        [AgentEvent::Text {
            text: "Hi from the mock!".into()
        }]
    );
    assert_eq!(
        adapter.parse_line(r#"{"looks":"like json"}"#),
        [AgentEvent::Text {
            text: r#"{"looks":"like json"}"#.into()
        }]
    );
    assert!(adapter.parse_line("   ").is_empty());
}

#[test]
fn stream_json_is_read_like_claude() {
    let adapter = CustomAdapter::new(CustomFormat::StreamJson);
    assert_eq!(adapter.format(), CustomFormat::StreamJson);
    let line =
        r#"{"type":"assistant","message":{"model":"x","content":[{"type":"text","text":"Hi"}]}}"#;
    assert_eq!(
        adapter.parse_line(line),
        [AgentEvent::Text { text: "Hi".into() }]
    );
}
