//! Property tests: no parser panics on any input, and input that matches no known line shape
//! comes back only as `Raw` (or `Error`), never as invented content.

use crate::{Adapter, AgentEvent, CustomAdapter, CustomFormat, RuntimeKind, adapter_for};
use proptest::prelude::*;
use serde_json::{Map, Value};

/// Every line-format parser: the three CLIs, llama's native reader and the custom JSON formats.
fn parsers() -> Vec<Box<dyn Adapter>> {
    vec![
        adapter_for(RuntimeKind::Claude),
        adapter_for(RuntimeKind::Codex),
        adapter_for(RuntimeKind::Opencode),
        adapter_for(RuntimeKind::Llama),
        Box::new(CustomAdapter::new(CustomFormat::StreamJson)),
        Box::new(CustomAdapter::new(CustomFormat::JsonLines)),
    ]
}

fn only_raw_or_error(events: &[AgentEvent]) -> bool {
    events
        .iter()
        .all(|e| matches!(e, AgentEvent::Raw { .. } | AgentEvent::Error { .. }))
}

/// Arbitrary JSON whose object keys can never be a field any parser looks at (`type`, `kind`,
/// `text`, …): they all start with `k_`.
fn arb_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<f64>().prop_map(Value::from),
        ".{0,20}".prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 32, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::btree_map("k_[a-z0-9]{0,6}", inner, 0..6)
                .prop_map(|map| Value::Object(map.into_iter().collect::<Map<_, _>>())),
        ]
    })
}

/// The `type` values the parsers know, plus some they do not.
fn arb_type() -> impl Strategy<Value = String> {
    prop_oneof![
        prop::sample::select(vec![
            "system",
            "assistant",
            "user",
            "result",
            "stream_event",
            "thread.started",
            "turn.started",
            "turn.completed",
            "turn.failed",
            "error",
            "item.started",
            "item.updated",
            "item.completed",
            "step_start",
            "step_finish",
            "text",
            "reasoning",
            "tool_use",
        ])
        .prop_map(str::to_owned),
        "[a-z_.]{0,12}",
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn arbitrary_strings_never_panic_and_stay_raw(line in ".{0,200}") {
        for parser in parsers() {
            let events = parser.parse_line(&line);
            prop_assert!(only_raw_or_error(&events), "{:?} gave {:?}", parser.kind(), events);
        }
    }

    #[test]
    fn arbitrary_json_never_panics_and_stays_raw(value in arb_json()) {
        let line = value.to_string();
        for parser in parsers() {
            let events = parser.parse_line(&line);
            prop_assert!(only_raw_or_error(&events), "{:?} gave {:?}", parser.kind(), events);
            if !line.trim().is_empty() {
                prop_assert_eq!(events.len(), 1);
            }
        }
    }

    #[test]
    fn known_types_with_arbitrary_fields_never_panic(
        kind in arb_type(),
        fields in prop::collection::btree_map(
            prop::sample::select(vec![
                "subtype", "message", "item", "part", "usage", "error", "session_id", "sessionID",
                "thread_id", "result", "is_error", "modelUsage", "content", "k_other",
            ]),
            arb_json(),
            0..6,
        ),
    ) {
        let mut object: Map<String, Value> =
            fields.into_iter().map(|(k, v)| (k.to_owned(), v)).collect();
        object.insert("type".into(), Value::String(kind));
        let line = Value::Object(object).to_string();
        for parser in parsers() {
            // Totality is the property: any result is fine as long as nothing panics.
            let events = parser.parse_line(&line);
            prop_assert!(events.len() <= 64, "{:?} gave {} events", parser.kind(), events.len());
        }
    }

    #[test]
    fn plain_text_keeps_every_non_blank_line(line in "[^\r\n]{0,200}") {
        let events = CustomAdapter::new(CustomFormat::PlainText).parse_line(&line);
        if line.trim().is_empty() {
            prop_assert!(events.is_empty());
        } else {
            prop_assert_eq!(events, vec![AgentEvent::Text { text: line }]);
        }
    }
}

#[test]
fn deeply_nested_json_is_raw_not_a_stack_overflow() {
    let line = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
    for parser in parsers() {
        assert_eq!(parser.parse_line(&line), [AgentEvent::raw(&line)]);
    }
}
