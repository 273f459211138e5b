//! Small JSON helpers shared by the parsers.

use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::AgentEvent;

/// What a parser does with one line before looking at its content.
pub(crate) enum Line<T> {
    /// Blank: no event.
    Blank,
    /// Parsed into the CLI's line type.
    Known(T),
    /// Not JSON, or JSON of an unknown shape.
    Unknown,
}

/// Deserializes `line` into `T`; blank lines and failures are reported, never panicked on.
pub(crate) fn decode<T: DeserializeOwned>(line: &str) -> Line<T> {
    let trimmed = line.trim();
    if trimmed.is_empty() {
        return Line::Blank;
    }
    match serde_json::from_str(trimmed) {
        Ok(value) => Line::Known(value),
        Err(_) => Line::Unknown,
    }
}

/// Runs `parse` on a decoded line: blank → nothing, unknown → one `Raw`.
pub(crate) fn parse_with<T: DeserializeOwned>(
    line: &str,
    parse: impl FnOnce(T) -> Vec<AgentEvent>,
) -> Vec<AgentEvent> {
    match decode(line) {
        Line::Blank => Vec::new(),
        Line::Known(value) => parse(value),
        Line::Unknown => vec![AgentEvent::raw(line)],
    }
}

/// The text of a tool result or MCP content: a string as is, an array of `{type:"text",text}`
/// blocks joined with newlines, `null` as empty, anything else as compact JSON.
pub(crate) fn content_text(value: &Value) -> String {
    match value {
        Value::Null => String::new(),
        Value::String(s) => s.clone(),
        Value::Array(items) => items
            .iter()
            .map(|item| match item.get("text").and_then(Value::as_str) {
                Some(text) => text.to_owned(),
                None => item.to_string(),
            })
            .collect::<Vec<_>>()
            .join("\n"),
        Value::Object(map) => match map.get("content") {
            Some(inner) => content_text(inner),
            None => value.to_string(),
        },
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn content_text_handles_every_shape() {
        assert_eq!(content_text(&json!("hello")), "hello");
        assert_eq!(
            content_text(&json!([{"type": "text", "text": "A"}, {"type": "text", "text": "B"}])),
            "A\nB"
        );
        assert_eq!(
            content_text(
                &json!({"content": [{"type": "text", "text": "HI MCP"}], "structured_content": null})
            ),
            "HI MCP"
        );
        assert_eq!(content_text(&json!(null)), "");
        assert_eq!(content_text(&json!(7)), "7");
        assert_eq!(content_text(&json!([{"x": 1}])), r#"{"x":1}"#);
    }

    #[test]
    fn blank_and_unknown_lines_are_reported() {
        assert!(matches!(decode::<Value>("   "), Line::Blank));
        assert!(matches!(decode::<Value>("not json"), Line::Unknown));
        assert!(matches!(decode::<Value>(" {\"a\":1} "), Line::Known(_)));
    }
}
