//! Every body is stored exactly as the runner stored it before it was typed, and today's stored shapes
//! read back as their variant.

use muster_agents::{AgentEvent, ErrorClass};
use serde_json::{Value, json};

use super::*;

const RUN: &str = "0195f0a0-0000-7000-8000-000000000001";

/// Encodes `body`, checks the stored kind and payload, and that they decode back to `body`.
fn stored_as(body: RunEventBody, kind: &str, payload: Value) {
    assert_eq!(RunEventBody::decode(kind, &payload), body);
    let (k, p) = body.into_parts();
    assert_eq!((k.as_str(), p), (kind, payload));
}

fn record(allowed: bool) -> Record {
    Record {
        host: "evil.test".into(),
        port: 443,
        method: "CONNECT".into(),
        allowed,
        why: (!allowed).then(|| "not on the list".into()),
        bytes_up: 517,
        bytes_down: 4096,
    }
}

#[test]
fn runner_events_are_stored_as_before() {
    stored_as(
        RunEventBody::Stderr {
            line: "warn".into(),
        },
        "stderr",
        json!({"line": "warn"}),
    );
    stored_as(
        RunEventBody::Status {
            status: "stalled".into(),
            reason: None,
        },
        "status",
        json!({"status": "stalled"}),
    );
    stored_as(
        RunEventBody::Status {
            status: "cancelled".into(),
            reason: Some("stopped early".into()),
        },
        "status",
        json!({"status": "cancelled", "reason": "stopped early"}),
    );
    stored_as(
        RunEventBody::Diff(DiffNote {
            base: "b0".into(),
            commit: "c1".into(),
            branch: "muster/mus-1".into(),
            stat: " a | 1 +".into(),
            patch: "+a".into(),
            truncated: false,
        }),
        "diff",
        json!({"base": "b0", "commit": "c1", "branch": "muster/mus-1", "stat": " a | 1 +",
               "patch": "+a", "truncated": false}),
    );
    stored_as(
        RunEventBody::Push {
            remote: "https://example.com/r.git".into(),
            branch: "muster/mus-1".into(),
            commit: "c1".into(),
        },
        "push",
        json!({"remote": "https://example.com/r.git", "branch": "muster/mus-1", "commit": "c1"}),
    );
    stored_as(
        RunEventBody::error("stopped: the run reached the cap of 5 events"),
        "error",
        json!({"message": "stopped: the run reached the cap of 5 events"}),
    );
    stored_as(
        RunEventBody::Check(CheckResult {
            command: "cargo test".into(),
            exit_code: Some(0),
            timed_out: false,
            duration_ms: 4240,
            passed: Some(12),
            failed: Some(0),
            total: Some(12),
            tail: "ok".into(),
            error: None,
        }),
        "check",
        json!({"command": "cargo test", "exit_code": 0, "timed_out": false, "duration_ms": 4240,
               "passed": 12, "failed": 0, "total": 12, "tail": "ok", "error": null}),
    );
    stored_as(
        RunEventBody::Check(CheckResult {
            command: "make".into(),
            exit_code: None,
            timed_out: false,
            duration_ms: 0,
            passed: None,
            failed: None,
            total: None,
            tail: String::new(),
            error: Some("not run".into()),
        }),
        "check",
        json!({"command": "make", "exit_code": null, "timed_out": false, "duration_ms": 0,
               "passed": null, "failed": null, "total": null, "tail": "", "error": "not run"}),
    );
    stored_as(
        RunEventBody::Egress(record(true).into()),
        "egress",
        json!({"host": "evil.test", "port": 443, "method": "CONNECT", "allowed": true,
               "bytes_up": 517, "bytes_down": 4096,
               "line": "allowed CONNECT evil.test:443 (↑517 B ↓4096 B)"}),
    );
    stored_as(
        RunEventBody::Egress(record(false).into()),
        "egress",
        json!({"host": "evil.test", "port": 443, "method": "CONNECT", "allowed": false,
               "why": "not on the list", "bytes_up": 517, "bytes_down": 4096,
               "line": "refused CONNECT evil.test:443 (↑517 B ↓4096 B): not on the list"}),
    );
}

#[test]
fn sessions_are_stored_as_before() {
    let previous = RUN.to_owned();
    stored_as(
        RunEventBody::Session(SessionNote {
            previous_run_id: previous.clone(),
            resumed: true,
            from_branch: None,
            session_id: Some("s-1".into()),
            reason: None,
            branch_missing: None,
        }),
        "session",
        json!({"previous_run_id": RUN, "resumed": true, "from_branch": null, "session_id": "s-1"}),
    );
    let fresh = SessionNote {
        previous_run_id: previous,
        resumed: false,
        from_branch: None,
        session_id: None,
        reason: Some("the session is gone".into()),
        branch_missing: Some("muster/mus-1".into()),
    };
    stored_as(
        RunEventBody::Session(fresh.clone()),
        "session",
        json!({"previous_run_id": RUN, "resumed": false, "from_branch": null,
               "reason": "the session is gone", "branch_missing": "muster/mus-1"}),
    );
    assert_eq!(
        fresh.text(),
        "Started a fresh session (the session is gone); the brief carries the thread so far. Branch \
         muster/mus-1 is not on this runner: the work starts from the repository's HEAD."
    );
    let resumed = SessionNote {
        from_branch: Some("muster/mus-1".into()),
        resumed: true,
        session_id: Some("s-1".into()),
        reason: None,
        branch_missing: None,
        ..fresh
    };
    stored_as(
        RunEventBody::Session(resumed.clone()),
        "session",
        json!({"previous_run_id": RUN, "resumed": true, "from_branch": "muster/mus-1",
               "session_id": "s-1"}),
    );
    assert_eq!(
        resumed.text(),
        "Resumed session s-1 of run 0195f0a0. The work continues from branch muster/mus-1."
    );
}

#[test]
fn sandbox_notes_are_stored_as_before() {
    stored_as(
        RunEventBody::Sandbox(SandboxNote {
            mode: "unsandboxed".into(),
            ..SandboxNote::default()
        }),
        "sandbox",
        json!({"mode": "unsandboxed"}),
    );
    let sandboxed = SandboxNote {
        mode: "sandboxed (Landlock ABI 6)".into(),
        abi: Some(6),
        paths: Some(vec![SandboxPath {
            path: "/run/work".into(),
            access: "read, write".into(),
        }]),
        connect_ports: Some(vec![4000, 4001]),
        unix_sockets: Some("refused".into()),
        udp_netlink: Some("refused".into()),
        process_view: Some(json!("namespace")),
        egress: Some(SandboxEgress {
            summary: "allowed github.com".into(),
            hosts: vec![HostPattern::parse_field("h", "github.com").unwrap()],
            always: vec!["api.example.com:443".into()],
            no_network: false,
            proxy: Some("http://127.0.0.1:4001".into()),
        }),
    };
    stored_as(
        RunEventBody::Sandbox(sandboxed.clone()),
        "sandbox",
        json!({"mode": "sandboxed (Landlock ABI 6)", "abi": 6,
               "paths": [{"path": "/run/work", "access": "read, write"}],
               "connect_ports": [4000, 4001], "unix_sockets": "refused", "udp_netlink": "refused",
               "process_view": "namespace",
               "egress": {"summary": "allowed github.com", "hosts": ["github.com"],
                          "always": ["api.example.com:443"], "no_network": false,
                          "proxy": "http://127.0.0.1:4001"}}),
    );
    let mut no_proxy = sandboxed;
    no_proxy.egress = Some(SandboxEgress {
        summary: "no network".into(),
        no_network: true,
        ..SandboxEgress::default()
    });
    stored_as(
        RunEventBody::Sandbox(no_proxy),
        "sandbox",
        json!({"mode": "sandboxed (Landlock ABI 6)", "abi": 6,
               "paths": [{"path": "/run/work", "access": "read, write"}],
               "connect_ports": [4000, 4001], "unix_sockets": "refused", "udp_netlink": "refused",
               "process_view": "namespace",
               "egress": {"summary": "no network", "hosts": [], "always": [], "no_network": true,
                          "proxy": null}}),
    );
}

#[test]
fn agent_events_keep_their_tag_in_the_payload() {
    stored_as(
        AgentEvent::Text { text: "hi".into() }.into(),
        "text",
        json!({"kind": "text", "text": "hi"}),
    );
    stored_as(
        AgentEvent::Error {
            message: "401".into(),
            class: Some(ErrorClass::Auth),
        }
        .into(),
        "error",
        json!({"kind": "error", "message": "401", "class": "auth"}),
    );
    stored_as(
        AgentEvent::Error {
            message: "boom".into(),
            class: None,
        }
        .into(),
        "error",
        json!({"kind": "error", "message": "boom", "class": null}),
    );
    // An API client's payload without its tag still reads as the row's kind.
    assert_eq!(
        RunEventBody::decode("error", &json!({"message": "401", "class": "auth"})),
        RunEventBody::Agent(AgentEvent::Error {
            message: "401".into(),
            class: Some(ErrorClass::Auth),
        })
    );
}

#[test]
fn what_does_not_decode_is_kept_raw() {
    for (kind, payload) in [
        ("brand_new", json!({"x": 1})),
        ("check", json!({"x": 1})),
        ("push", json!({"remote": "r"})),
        ("session", json!({"resumed": "yes"})),
        ("text", json!({"kind": "text"})),
        ("tool_call", json!("not an object")),
        ("egress", json!({"line": "allowed"})),
    ] {
        assert_eq!(
            RunEventBody::decode(kind, &payload),
            RunEventBody::Unknown {
                kind: kind.to_owned(),
                payload: payload.clone(),
            },
            "{kind}"
        );
        assert_eq!(
            RunEventBody::decode(kind, &payload).into_parts(),
            (kind.to_owned(), payload)
        );
    }
}
