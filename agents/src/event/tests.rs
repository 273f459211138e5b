use super::*;
use serde_json::json;

#[test]
fn events_serialize_with_a_snake_case_kind_tag() {
    let call = AgentEvent::ToolCall {
        id: "t1".into(),
        name: "Bash".into(),
        input: json!({"command": "ls"}),
    };
    assert_eq!(
        serde_json::to_value(&call).unwrap(),
        json!({"kind": "tool_call", "id": "t1", "name": "Bash", "input": {"command": "ls"}})
    );
    let usage = AgentEvent::Usage(TokenUsage {
        input: 1,
        output: 2,
        cache_read: 3,
        cache_write: 4,
        cost_usd: None,
    });
    assert_eq!(
        serde_json::to_value(&usage).unwrap(),
        json!({"kind": "usage", "input": 1, "output": 2, "cache_read": 3, "cache_write": 4, "cost_usd": null})
    );
    let error = AgentEvent::error("API Error: 429 slow down");
    assert_eq!(
        serde_json::to_value(&error).unwrap(),
        json!({"kind": "error", "message": "API Error: 429 slow down", "class": "rate_limit"})
    );
}

#[test]
fn events_round_trip_and_kind_matches_the_tag() {
    let events = [
        AgentEvent::Started {
            session_id: "s".into(),
            model: Some("m".into()),
            skills: vec!["review-a-diff".into()],
        },
        AgentEvent::Text { text: "hi".into() },
        AgentEvent::Thinking { text: "hm".into() },
        AgentEvent::ToolResult {
            id: "t".into(),
            output: "o".into(),
            is_error: true,
        },
        AgentEvent::Command {
            cmd: "ls".into(),
            exit_code: Some(2),
            output: "x".into(),
        },
        AgentEvent::FileChange {
            path: "a.txt".into(),
            change: FileChangeKind::Add,
        },
        AgentEvent::Usage(TokenUsage::default()),
        AgentEvent::Error {
            message: "boom".into(),
            class: None,
        },
        AgentEvent::Finished {
            ok: true,
            summary: None,
        },
        AgentEvent::raw("junk"),
    ];
    for event in events {
        let value = serde_json::to_value(&event).unwrap();
        assert_eq!(value["kind"], event.kind(), "{event:?}");
        let back: AgentEvent = serde_json::from_value(value).unwrap();
        assert_eq!(back, event);
    }
}

#[test]
fn http_statuses_classify() {
    assert_eq!(ErrorClass::from_status(401), ErrorClass::Auth);
    assert_eq!(ErrorClass::from_status(403), ErrorClass::Auth);
    assert_eq!(ErrorClass::from_status(429), ErrorClass::RateLimit);
    assert_eq!(ErrorClass::from_status(400), ErrorClass::Config);
    assert_eq!(ErrorClass::from_status(500), ErrorClass::Server);
    assert_eq!(ErrorClass::from_status(529), ErrorClass::Server);
    assert_eq!(ErrorClass::from_status(418), ErrorClass::Other);
}

#[test]
fn messages_classify_by_status_then_keywords() {
    let cases = [
        (
            "Failed to authenticate. API Error: 401 mock error 401",
            Some(ErrorClass::Auth),
        ),
        (
            "unexpected status 401 Unauthorized: mock error 401, url: http://127.0.0.1:8802/v1/responses",
            Some(ErrorClass::Auth),
        ),
        ("API Error: 400 mock error 400", Some(ErrorClass::Config)),
        ("upstream said (503)", Some(ErrorClass::Server)),
        (
            "API Error: Unable to connect to API (ConnectionRefused)",
            Some(ErrorClass::Network),
        ),
        (
            "We’re currently experiencing high demand",
            Some(ErrorClass::Server),
        ),
        (
            "No conversation found with session ID: x",
            Some(ErrorClass::Config),
        ),
        // Ports, ids and long numbers are not statuses.
        ("connect to 127.0.0.1:443/v1 failed", None),
        ("item_4040 exploded", None),
        ("something odd happened", None),
    ];
    for (message, expected) in cases {
        assert_eq!(ErrorClass::from_message(message), expected, "{message}");
    }
}

#[test]
fn only_transient_classes_are_retryable() {
    assert!(ErrorClass::RateLimit.retryable());
    assert!(ErrorClass::Server.retryable());
    assert!(ErrorClass::Network.retryable());
    assert!(!ErrorClass::Auth.retryable());
    assert!(!ErrorClass::Config.retryable());
    assert!(!ErrorClass::Other.retryable());
}

#[test]
fn usages_add_up() {
    let a = TokenUsage {
        input: 1,
        output: 2,
        cache_read: 3,
        cache_write: 4,
        cost_usd: None,
    };
    let b = TokenUsage {
        cost_usd: Some(0.5),
        ..a
    };
    let sum = a + b;
    assert_eq!(
        (sum.input, sum.output, sum.cache_read, sum.cache_write),
        (2, 4, 6, 8)
    );
    assert_eq!(sum.cost_usd, Some(0.5));
    assert_eq!(sum.total_tokens(), 20);
    assert_eq!((a + a).cost_usd, None);
    assert_eq!(
        [a, b, b].into_iter().sum::<TokenUsage>().cost_usd,
        Some(1.0)
    );
}
