//! `@mention` autocompletion: a textarea carries the names it may complete as a `data-mentions` JSON
//! list, and `assets/mentions.js` turns `@` plus letters into an accessible listbox of the matching
//! ones. Without JavaScript the textarea is a plain one and `@name` still works when typed.

use maud::Markup;

use super::form::Form;
use crate::views::{MentionOptionView, PersonKind};

/// A textarea (as [`Form::textarea`]) that completes `@name` from `options`.
pub fn mention_textarea(
    f: &Form<'_>,
    name: &str,
    value: &str,
    rows: u8,
    options: &[MentionOptionView],
) -> Markup {
    f.textarea_with(name, value, rows, Some(mentions_json(options)))
}

/// `[{"name":"coder","label":"claude","kind":"agent"}, …]`, for the `data-mentions` attribute (which
/// maud escapes as any attribute).
pub fn mentions_json(options: &[MentionOptionView]) -> String {
    let items: Vec<String> = options
        .iter()
        .map(|o| {
            let kind = match o.kind {
                PersonKind::Agent => "agent",
                PersonKind::User | PersonKind::System => "person",
            };
            format!(
                r#"{{"name":{},"label":{},"kind":"{kind}"}}"#,
                json_string(&o.name),
                json_string(&o.label)
            )
        })
        .collect();
    format!("[{}]", items.join(","))
}

/// `s` as a JSON string literal.
fn json_string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if u32::from(c) < 0x20 => out.push_str(&format!("\\u{:04x}", u32::from(c))),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::views::FormErrors;

    #[test]
    fn the_textarea_carries_escaped_names() {
        let options = crate::samples::issue_form("t", "b", FormErrors::new()).mentions;
        assert_eq!(
            mentions_json(&options),
            r#"[{"name":"coder","label":"claude","kind":"agent"},{"name":"ada","label":"Ada \"the\" Lovelace","kind":"person"}]"#
        );
        assert_eq!(json_string("a\\b\n"), r#""a\\b\u000a""#);
        let errors = FormErrors::new();
        let html = mention_textarea(&Form::new("comment", &errors), "body", "hi", 4, &options)
            .into_string();
        assert!(
            html.starts_with(r#"<textarea id="comment-body" name="body" rows="4" data-mentions="[{&quot;name&quot;:&quot;coder&quot;"#),
            "{html}"
        );
        assert!(html.contains(r#"Ada \&quot;the\&quot; Lovelace"#), "{html}");
    }
}
