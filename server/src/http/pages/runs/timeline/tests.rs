use chrono::Utc;
use serde_json::json;

use super::*;
use crate::domain::RunId;

fn ev(seq: Seq, kind: &str, payload: Value) -> RunEvent {
    RunEvent {
        run_id: RunId::new(),
        seq,
        at: Utc::now(),
        kind: kind.to_owned(),
        payload,
    }
}

#[test]
fn a_result_goes_into_its_call_in_the_same_batch_or_into_its_slot_later() {
    let mut t = Timeline::new("r".into(), None);
    t.push(&ev(
        1,
        "tool_call",
        json!({"kind": "tool_call", "id": "a1", "name": "Bash", "input": {"command": "ls"}}),
    ));
    t.push(&ev(
        2,
        "tool_result",
        json!({"kind": "tool_result", "id": "a1", "output": "x\ny", "is_error": false}),
    ));
    t.push(&ev(
        3,
        "tool_call",
        json!({"kind": "tool_call", "id": "b/2", "name": "Read", "input": {"path": "a"}}),
    ));
    let first = t.take();
    assert_eq!(first.items.len(), 2, "{:?}", first.items);
    match &first.items[0].kind {
        RunItemKind::ToolCall {
            slot_id,
            input,
            result,
            ..
        } => {
            assert_eq!(slot_id, "run-r-result-a1");
            assert_eq!(input.shown, "ls");
            assert_eq!(result.as_ref().unwrap().output.shown, "x\ny");
        }
        other => panic!("{other:?}"),
    }
    match &first.items[1].kind {
        RunItemKind::ToolCall {
            slot_id,
            result: None,
            input,
            ..
        } => {
            assert_eq!(slot_id, "run-r-result-622f32", "unsafe ids are hex-encoded");
            assert!(input.shown.contains("\"path\": \"a\""));
        }
        other => panic!("{other:?}"),
    }
    t.push(&ev(
        4,
        "tool_result",
        json!({"kind": "tool_result", "id": "b/2", "output": "no", "is_error": true}),
    ));
    t.push(&ev(
        5,
        "tool_result",
        json!({"kind": "tool_result", "id": "zz", "output": "?", "is_error": false}),
    ));
    let second = t.take();
    assert_eq!(second.results.len(), 1);
    assert_eq!(second.results[0].0, "run-r-result-622f32");
    assert!(second.results[0].1.is_error);
    assert!(
        matches!(second.items[0].kind, RunItemKind::ToolResult { .. }),
        "an unknown call's result stands alone"
    );
    assert_eq!(t.last_seq, 5);
}

#[test]
fn usage_is_summed_and_priced_text_is_sanitised_and_engine_kinds_render() {
    let mut t = Timeline::new("r".into(), None);
    t.push(&ev(
        1,
        "text",
        json!({"kind": "text", "text": "**hi** <script>x()</script>"}),
    ));
    t.push(&ev(2, "usage", json!({"kind": "usage", "input": 10, "output": 5, "cache_read": 100, "cache_write": 1, "cost_usd": 0.5})));
    t.push(&ev(3, "usage", json!({"kind": "usage", "input": 1, "output": 1, "cache_read": 0, "cache_write": 0, "cost_usd": 0.25})));
    t.push(&ev(4, "stderr", json!({"line": "warn"})));
    t.push(&ev(5, "status", json!({"status": "stalled"})));
    t.push(&ev(6, "diff", json!({"patch": "+a\n-b"})));
    t.push(&ev(
        7,
        "finished",
        json!({"kind": "finished", "ok": true, "summary": "**hi** <script>x()</script>"}),
    ));
    t.push(&ev(8, "mystery", json!({"what": 1})));
    t.push(&ev(
        9,
        "error",
        json!({"message": "nothing accepts a connection at 127.0.0.1:9 any more"}),
    ));
    t.push(&ev(
        10,
        "push",
        json!({"remote": "origin", "branch": "muster/ACM-1-coder", "commit": "0123456789abcdef"}),
    ));
    let b = t.take();
    assert!(b.usage_changed && b.status_changed);
    assert_eq!(
        (
            t.usage.input_tokens,
            t.usage.output_tokens,
            t.usage.cache_read_tokens
        ),
        (11, 6, 100)
    );
    assert!((t.usage.cost_usd - 0.75).abs() < 1e-9);
    assert_eq!(t.patch.as_deref(), Some("+a\n-b"));
    let kinds: Vec<_> = b.items.iter().map(|i| &i.kind).collect();
    match kinds[0] {
        RunItemKind::Text { html } => {
            assert!(html.contains("<strong>hi</strong>") && !html.contains("<script>"))
        }
        other => panic!("{other:?}"),
    }
    assert!(matches!(kinds[1], RunItemKind::Stderr { line } if line == "warn"));
    assert!(matches!(kinds[2], RunItemKind::Status { status } if status == "stalled"));
    assert!(
        matches!(
            kinds[3],
            RunItemKind::Finished {
                ok: true,
                summary_html: None
            }
        ),
        "a summary repeating the text is shown once"
    );
    assert!(matches!(kinds[4], RunItemKind::Raw { line } if line.starts_with("mystery: ")));
    // The runner's own error reads as an error, its push as a sentence: no stored JSON on the page.
    assert!(
        matches!(kinds[5], RunItemKind::Error { message } if message.starts_with("nothing accepts"))
    );
    assert!(
        matches!(kinds[6], RunItemKind::Raw { line } if line == "pushed muster/ACM-1-coder (0123456789) to origin"),
        "{:?}",
        kinds[6]
    );
}

#[test]
fn long_text_is_cut_and_diff_lines_are_classified() {
    let text: String = (1..=30).map(|n| format!("line {n}\n")).collect();
    let cut = long_text(&text);
    assert_eq!(cut.lines, 30);
    assert_eq!(cut.shown.lines().count(), SHOWN_LINES);
    assert_eq!(cut.full.as_deref(), Some(text.trim_end()));
    let short = long_text("one\ntwo\n");
    assert_eq!(
        (short.shown.as_str(), short.full.is_none()),
        ("one\ntwo", true)
    );
    let wide = long_text(&"é".repeat(SHOWN_CHARS));
    assert!(wide.full.is_some() && wide.shown.len() <= SHOWN_CHARS);

    let d = diff_view(
        Some(" 1 file changed"),
        Some("diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1 +1 @@\n-old\n+new\n same"),
    );
    let kinds: Vec<&str> = d.lines.iter().map(|l| l.kind.as_str()).collect();
    assert_eq!(kinds, ["meta", "meta", "meta", "hunk", "del", "add", "ctx"]);
    assert_eq!(d.stat.as_deref(), Some(" 1 file changed"));
    assert_eq!(diff_view(Some("  "), None), RunDiffView::default());
}

#[test]
fn a_local_model_speed_feeds_the_counter_and_stays_readable_in_the_log() {
    let mut t = Timeline::new("r".into(), None);
    assert_eq!(t.tokens_per_second, None);
    t.push(&ev(
        1,
        "speed",
        json!({"kind": "speed", "tokens_per_second": 98.5, "detail": "llama.cpp timings: 40 tokens generated at 98.5 tokens/s"}),
    ));
    t.push(&ev(
        2,
        "speed",
        json!({"kind": "speed", "tokens_per_second": 110.25, "detail": "llama.cpp timings: 12 tokens generated at 110.2 tokens/s"}),
    ));
    assert_eq!(t.tokens_per_second, Some(110.25), "the last report wins");
    let batch = t.take();
    assert!(batch.usage_changed, "the counters are re-rendered");
    let lines: Vec<_> = batch
        .items
        .iter()
        .filter_map(|i| match &i.kind {
            RunItemKind::Raw { line } => Some(line.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(lines.len(), 2);
    assert!(lines[1].contains("110.2 tokens/s"));
}

#[test]
fn the_sandbox_event_is_one_block_of_readable_lines() {
    let policy = crate::sandbox::Policy {
        abi: 7,
        paths: vec![crate::sandbox::PathRule {
            path: "/runs/r/work".into(),
            access: crate::sandbox::Access::ReadWrite,
        }],
        connect_ports: vec![80, 443, 7777],
        process_view: crate::sandbox::ProcessView::Namespace,
    };
    let mode = crate::sandbox::Mode::Sandboxed { abi: 7 };
    let mut t = Timeline::new("r".into(), None);
    t.push(&ev(
        1,
        "sandbox",
        RunEventBody::Sandbox(crate::sandbox::event_note(&mode, Some(&policy)))
            .into_parts()
            .1,
    ));
    let batch = t.take();
    assert_eq!(
        batch.items[0].kind,
        RunItemKind::Sandbox {
            lines: vec![
                "sandboxed: every agent runs inside a Landlock sandbox (kernel ABI 7)".to_owned(),
                "Landlock ABI 7; no capabilities; no_new_privs".to_owned(),
                "unix sockets: refused (seccomp: socket(AF_UNIX) fails with EACCES; stream socketpairs allowed)".to_owned(),
                "UDP and netlink: refused (seccomp: socket(AF_INET/AF_INET6, SOCK_DGRAM) and socket(AF_NETLINK) fail with EACCES)".to_owned(),
                "processes: a private PID namespace with its own /proc (the agent sees only its own processes)".to_owned(),
                "read-write             /runs/r/work".to_owned(),
                "TCP connect only to ports 80, 443, 7777".to_owned(),
            ]
        }
    );
}

#[test]
fn the_session_event_says_whether_the_follow_up_resumed_and_where_its_work_starts() {
    let mut t = Timeline::new("r".into(), None);
    t.push(&ev(
        1,
        "session",
        json!({"previous_run_id": "01a23cd5-94c0-7023", "resumed": true, "session_id": "ses_1",
               "from_branch": "muster/ACM-1-r1"}),
    ));
    t.push(&ev(
        2,
        "session",
        json!({"previous_run_id": "01a23cd5-94c0-7023", "resumed": false,
               "reason": "the session's files are not on this runner", "from_branch": null,
               "branch_missing": "muster/ACM-1-r1"}),
    ));
    let items: Vec<RunItemKind> = t.take().items.into_iter().map(|i| i.kind).collect();
    assert_eq!(
        items,
        [
            RunItemKind::Session {
                resumed: true,
                text: "Resumed session ses_1 of run 01a23cd5. The work continues from branch muster/ACM-1-r1."
                    .to_owned(),
            },
            RunItemKind::Session {
                resumed: false,
                text: "Started a fresh session (the session's files are not on this runner); the brief \
                       carries the thread so far. Branch muster/ACM-1-r1 is not on this runner: the work \
                       starts from the repository's HEAD."
                    .to_owned(),
            },
        ]
    );
}

#[test]
fn a_check_event_is_a_gate_entry() {
    let result = crate::domain::CheckResult {
        command: "cargo test".to_owned(),
        exit_code: Some(101),
        timed_out: false,
        duration_ms: 1_500,
        passed: Some(12),
        failed: Some(1),
        total: Some(13),
        tail: "test result: FAILED. 12 passed; 1 failed".to_owned(),
        error: None,
    };
    let mut t = Timeline::new("r".into(), None);
    t.push(&ev(
        7,
        crate::domain::CHECK_EVENT,
        serde_json::to_value(&result).unwrap(),
    ));
    t.push(&ev(8, crate::domain::CHECK_EVENT, json!({"oops": 1})));
    let batch = t.take();
    assert_eq!(
        batch.items[0].kind,
        RunItemKind::Check {
            ok: false,
            command: "cargo test".to_owned(),
            ending: "exit 101".to_owned(),
            duration: Some("1.5 s".to_owned()),
            counts: Some("12/13 passed".to_owned()),
            tail: "test result: FAILED. 12 passed; 1 failed".to_owned(),
        }
    );
    // A payload that is not a check result is shown as it is, not guessed at.
    assert!(matches!(&batch.items[1].kind, RunItemKind::Raw { line } if line.contains("oops")));
}

/// Issue 27: paths under the run's worktree read relative to the repository, wherever the runner put it;
/// another run's folder and look-alike names stay as they are.
#[test]
fn worktree_paths_read_relative_to_the_repository() {
    let t = Timeline::new("0195ab12".into(), None);
    let root = "/var/lib/muster/runs/0195ab12/work";
    assert_eq!(t.relative(&format!("{root}/src/x.rs")), "src/x.rs");
    assert_eq!(
        t.relative(&format!(
            r#"{{"file_path": "{root}/a b/c.md", "cwd": "{root}"}}"#
        )),
        r#"{"file_path": "a b/c.md", "cwd": "."}"#
    );
    assert_eq!(
        t.relative(&format!(
            "cd {root} && cargo test --manifest-path={root}/Cargo.toml"
        )),
        "cd . && cargo test --manifest-path=Cargo.toml"
    );
    let other = "/var/lib/muster/runs/0195ab13/work/src/x.rs";
    assert_eq!(t.relative(other), other);
    let longer = format!("{root}space/x");
    assert_eq!(t.relative(&longer), longer);

    let mut t = Timeline::new("0195ab12".into(), None);
    t.push(&ev(
        1,
        "file_change",
        json!({"kind": "file_change", "path": format!("{root}/src/lib.rs"), "change": "update"}),
    ));
    match &t.take().items[0].kind {
        RunItemKind::FileChange { path, .. } => assert_eq!(path, "src/lib.rs"),
        other => panic!("{other:?}"),
    }
}

/// Issue 27: a run's counters move while it works: each request's usage (a streaming local model reports
/// every chunk's tokens) counts until the final report, which covers them all.
#[test]
fn requests_count_live_until_the_final_report_covers_them() {
    let mut t = Timeline::new("r".into(), None);
    let usage = |kind: &str, input: u64, output: u64| json!({"kind": kind, "input": input, "output": output, "cache_read": 0, "cache_write": 0, "cost_usd": null});
    t.push(&ev(1, "turn_usage", usage("turn_usage", 0, 7)));
    t.push(&ev(2, "turn_usage", usage("turn_usage", 0, 5)));
    assert_eq!(t.live_usage().output_tokens, 12);
    assert!(t.take().usage_changed);
    t.push(&ev(3, "usage", usage("usage", 30, 12)));
    let live = t.live_usage();
    assert_eq!((live.input_tokens, live.output_tokens), (30, 12));
}
