//! Each thing shown once: a local model's streamed answer as one block (first render and live), a
//! command folded into its tool call, a session started once; checked on the recorded Codex and OpenCode
//! streams rendered as the live socket renders them.

use chrono::Utc;
use muster_agents::{AgentEvent, RuntimeKind, adapter_for};
use muster_web::views::{RunItemKind, RunLiveFrame};
use serde_json::{Value, json};

use super::super::Timeline;
use crate::domain::{RunEvent, RunId, Seq};

fn ev(seq: Seq, payload: Value) -> RunEvent {
    RunEvent {
        run_id: RunId::new(),
        seq,
        at: Utc::now(),
        kind: payload["kind"].as_str().unwrap_or("raw").to_owned(),
        payload,
    }
}

fn text(seq: Seq, t: &str) -> RunEvent {
    ev(seq, json!({"kind": "text", "text": t}))
}

fn text_html(kind: &RunItemKind) -> &str {
    match kind {
        RunItemKind::Text { html } => html,
        other => panic!("not a text block: {other:?}"),
    }
}

/// Every line of a recorded fixture parsed by `kind`'s adapter and numbered from 1.
fn fixture_events(kind: RuntimeKind, file: &str) -> Vec<RunEvent> {
    let path = format!("{}/../agents/fixtures/{file}", env!("CARGO_MANIFEST_DIR"));
    let adapter = adapter_for(kind);
    std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{path}: {e}"))
        .lines()
        .flat_map(|l| adapter.parse_line(l))
        .enumerate()
        .map(|(i, e)| ev(i as Seq + 1, serde_json::to_value(&e).unwrap()))
        .collect()
}

/// The HTML the live socket sends for `events` folded in one batch.
fn rendered(events: &[RunEvent]) -> String {
    let mut t = Timeline::new("r".into(), None);
    events.iter().for_each(|e| t.push(e));
    let b = t.take();
    let frame = RunLiveFrame {
        run_id: "r".into(),
        items: b.items,
        results: b.results,
        replaced: b.replaced,
        ..RunLiveFrame::default()
    };
    muster_web::pages::run_live_frame(&frame, "tok").into_string()
}

#[test]
fn a_streamed_answer_is_one_block_that_grows_and_is_not_repeated_when_finished() {
    let deltas = [
        "The",
        " answer",
        " is **forty",
        "-two**.\n",
        "It came",
        " from the script.",
    ];
    let answer = deltas.concat();
    let mut t = Timeline::new("r".into(), None).with_text_deltas(true);
    t.push(&ev(
        1,
        json!({"kind": "started", "session_id": "chatcmpl-1", "model": "smollm2"}),
    ));
    t.push(&text(2, deltas[0]));
    t.push(&text(3, deltas[1]));
    let first = t.take();
    assert_eq!(first.items.len(), 2, "{:?}", first.items);
    assert_eq!(first.items[1].seq, 2);
    assert!(text_html(&first.items[1].kind).contains("The answer"));

    // Live: later deltas re-render the block already on the page, under its first seq.
    for (i, d) in deltas[2..].iter().enumerate() {
        t.push(&text(4 + i as Seq, d));
    }
    let grown = t.take();
    assert!(grown.items.is_empty(), "no new row: {:?}", grown.items);
    assert_eq!(grown.replaced.len(), 1);
    assert_eq!(grown.replaced[0].seq, 2);
    let html = text_html(&grown.replaced[0].kind);
    assert!(
        html.contains("<strong>forty-two</strong>") && html.contains("from the script."),
        "markdown split across deltas renders whole: {html}"
    );

    t.push(&ev(8, json!({"kind": "usage", "input": 38, "output": 12, "cache_read": 0, "cache_write": 0, "cost_usd": 0.0})));
    t.push(&text(9, "Next turn."));
    t.push(&ev(
        10,
        json!({"kind": "finished", "ok": true, "summary": "Next turn."}),
    ));
    let end = t.take();
    assert!(end.replaced.is_empty(), "the usage closed the block");
    assert_eq!(end.items.len(), 2);
    assert!(text_html(&end.items[0].kind).contains("Next turn."));
    assert_eq!(
        end.items[1].kind,
        RunItemKind::Finished {
            ok: true,
            summary_html: None
        },
        "the answer is not repeated under Finished"
    );

    // The first render folds everything at once: one block per answer, the answer whole.
    let mut page = Timeline::new("r".into(), None).with_text_deltas(true);
    page.push(&ev(
        1,
        json!({"kind": "started", "session_id": "chatcmpl-1", "model": "smollm2"}),
    ));
    for (i, d) in deltas.iter().enumerate() {
        page.push(&text(2 + i as Seq, d));
    }
    page.push(&ev(
        8,
        json!({"kind": "finished", "ok": true, "summary": answer.trim()}),
    ));
    let items = page.take().items;
    let texts: Vec<_> = items
        .iter()
        .filter(|i| matches!(i.kind, RunItemKind::Text { .. }))
        .collect();
    assert_eq!(texts.len(), 1, "{items:?}");
    assert!(text_html(&texts[0].kind).contains("It came from the script."));
    assert!(matches!(
        items.last().unwrap().kind,
        RunItemKind::Finished {
            summary_html: None,
            ..
        }
    ));
}

#[test]
fn thinking_and_text_deltas_are_a_block_each_and_whole_texts_stay_apart() {
    let mut t = Timeline::new("r".into(), None).with_text_deltas(true);
    t.push(&ev(1, json!({"kind": "thinking", "text": "Let me"})));
    t.push(&ev(2, json!({"kind": "thinking", "text": " think."})));
    t.push(&text(3, "Done"));
    t.push(&text(4, "."));
    t.push(&ev(5, json!({"kind": "raw", "line": "llama.cpp timings"})));
    t.push(&text(6, "Again."));
    let items = t.take().items;
    assert_eq!(items.len(), 4, "{items:?}");
    assert_eq!(
        items[0].kind,
        RunItemKind::Thinking {
            text: "Let me think.".into()
        }
    );
    assert!(text_html(&items[1].kind).contains("Done."));
    assert!(text_html(&items[3].kind).contains("Again."));

    // A CLI's text events are whole messages: each its own block.
    let mut claude = Timeline::new("r".into(), None);
    claude.push(&text(1, "First message."));
    claude.push(&text(2, "Second message."));
    assert_eq!(claude.take().items.len(), 2);
}

#[test]
fn a_command_adds_its_exit_code_to_its_call_in_any_order_and_any_batch() {
    let call = |seq, id: &str| {
        ev(
            seq,
            json!({"kind": "tool_call", "id": id, "name": "bash", "input": {"command": "make"}}),
        )
    };
    let result = |seq, id: &str| {
        ev(
            seq,
            json!({"kind": "tool_result", "id": id, "output": "built\n", "is_error": false}),
        )
    };
    let command = |seq, code| {
        ev(
            seq,
            json!({"kind": "command", "cmd": "make", "exit_code": code, "output": "built\n"}),
        )
    };
    let exit_of = |kind: &RunItemKind| match kind {
        RunItemKind::ToolCall {
            result: Some(r), ..
        } => r.exit_code,
        other => panic!("{other:?}"),
    };

    // Codex and OpenCode: call, result, command; all in one batch.
    let mut t = Timeline::new("r".into(), None);
    t.push(&call(1, "a"));
    t.push(&result(2, "a"));
    t.push(&command(3, 0));
    let items = t.take().items;
    assert_eq!(items.len(), 1, "{items:?}");
    assert_eq!(exit_of(&items[0].kind), Some(0));

    // The call in an earlier batch: the slot is sent once, with the exit code.
    t.push(&call(4, "b"));
    t.take();
    t.push(&result(5, "b"));
    t.push(&command(6, 2));
    let b = t.take();
    assert!(b.items.is_empty(), "{:?}", b.items);
    assert_eq!(b.results.len(), 1);
    assert_eq!(b.results[0].1.exit_code, Some(2));

    // The result in an earlier batch than its command: the slot is sent again.
    t.push(&call(7, "c"));
    t.push(&result(8, "c"));
    t.take();
    t.push(&command(9, 1));
    let c = t.take();
    assert!(c.items.is_empty());
    assert_eq!(c.results[0].0, "run-r-result-c");
    assert_eq!(c.results[0].1.exit_code, Some(1));

    // The local loop: call, command, result.
    t.push(&call(10, "d"));
    t.push(&command(11, 0));
    t.push(&result(12, "d"));
    let items = t.take().items;
    assert_eq!(items.len(), 1, "{items:?}");
    assert_eq!(exit_of(&items[0].kind), Some(0));

    // A result without its call, then its command: the command replaces the lone result.
    t.push(&result(13, "e"));
    t.push(&command(14, 0));
    let items = t.take().items;
    assert!(
        matches!(&items[..], [i] if matches!(i.kind, RunItemKind::Command { .. })),
        "{items:?}"
    );

    // A command of another call (or none) is its own block.
    t.push(&call(15, "f"));
    t.push(&result(16, "f"));
    t.push(&ev(
        17,
        json!({"kind": "command", "cmd": "ls", "exit_code": 0, "output": "x"}),
    ));
    t.push(&command(18, 0));
    let items = t.take().items;
    assert_eq!(items.len(), 3, "{items:?}");
}

#[test]
fn recorded_codex_and_opencode_runs_show_each_tool_output_and_session_once() {
    for (kind, file) in [
        (RuntimeKind::Codex, "codex/tool-shell.jsonl"),
        (RuntimeKind::Opencode, "opencode/tool-bash.jsonl"),
    ] {
        let events = fixture_events(kind, file);
        let kinds: Vec<&str> = events.iter().map(|e| e.kind.as_str()).collect();
        assert!(
            kinds.contains(&"command") && kinds.contains(&"tool_result"),
            "{file}: the stream still carries both events: {kinds:?}"
        );
        let html = rendered(&events);
        assert_eq!(
            html.matches(r#"<pre class="tool-output">hello</pre>"#)
                .count(),
            1,
            "{file}: {html}"
        );
        assert!(!html.contains("ev-command"), "{file}: {html}");
        assert_eq!(html.matches(">exit 0<").count(), 1, "{file}: {html}");
        assert_eq!(html.matches("ev ev-started").count(), 1, "{file}: {html}");
    }
    let opencode = fixture_events(RuntimeKind::Opencode, "opencode/tool-bash.jsonl");
    let started = opencode.iter().filter(|e| e.kind == "started").count();
    assert_eq!(
        started, 2,
        "OpenCode starts each step; both events are kept"
    );
    assert!(matches!(
        serde_json::from_value::<AgentEvent>(opencode[0].payload.clone()),
        Ok(AgentEvent::Started { .. })
    ));
}

/// A streaming local model reports each piece's tokens (`turn_usage`) between its pieces: they stay one
/// block; the turn's final `usage` still ends it.
#[test]
fn provisional_usage_between_pieces_keeps_one_block() {
    let mut t = Timeline::new("r".into(), None).with_text_deltas(true);
    let turn = |seq, output| {
        ev(
            seq,
            json!({"kind": "turn_usage", "input": 0, "output": output, "cache_read": 0, "cache_write": 0, "cost_usd": null}),
        )
    };
    t.push(&text(1, "The"));
    t.push(&turn(2, 1));
    t.push(&text(3, " answer"));
    t.push(&turn(4, 1));
    let batch = t.take();
    assert_eq!(batch.items.len(), 1, "{:?}", batch.items);
    assert!(text_html(&batch.items[0].kind).contains("The answer"));
    t.push(&ev(
        5,
        json!({"kind": "usage", "input": 9, "output": 2, "cache_read": 0, "cache_write": 0, "cost_usd": 0.0}),
    ));
    t.push(&text(6, "Next turn."));
    assert_eq!(t.take().items.len(), 1, "the final usage ended the block");
}
