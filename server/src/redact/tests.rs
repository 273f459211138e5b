use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD, URL_SAFE, URL_SAFE_NO_PAD};

use super::*;

/// Its base64 holds both `+` and `/` (url-safe: `-` and `_`), so the two alphabets differ.
const SECRET: &str = "sk-?>>?~~live-1234";

fn clean(text: &str) -> String {
    Redactor::new([SECRET]).text(text)
}

fn assert_hidden(form: &str) {
    let shown = clean(&format!("before {form} after"));
    assert_eq!(shown, "before [redacted] after", "form {form:?}");
}

#[test]
fn the_plain_value_is_hidden() {
    assert_hidden(SECRET);
    assert_eq!(clean(&format!("{SECRET}{SECRET}")), "[redacted][redacted]");
}

#[test]
fn the_reversed_value_is_hidden() {
    let reversed: String = SECRET.chars().rev().collect();
    assert_hidden(&reversed);
}

#[test]
fn standard_base64_with_and_without_padding_is_hidden() {
    let padded = STANDARD.encode(SECRET);
    assert!(padded.contains('+'), "{padded}");
    assert_hidden(&padded);
    assert_hidden(&STANDARD_NO_PAD.encode(SECRET));
}

#[test]
fn url_safe_base64_with_and_without_padding_is_hidden() {
    let padded = URL_SAFE.encode(SECRET);
    assert_ne!(padded, STANDARD.encode(SECRET));
    assert_hidden(&padded);
    assert_hidden(&URL_SAFE_NO_PAD.encode(SECRET));
}

#[test]
fn base64_of_a_longer_text_holding_the_value_loses_the_value_at_every_alignment() {
    // `echo $KEY | base64`, `echo KEY=$KEY | base64`, …: the value starts 0, 1 or 2 bytes into a block.
    for prefix in ["", "K", "K=", "KEY=", "export KEY="] {
        for suffix in ["", "\n", " and more"] {
            let whole = format!("{prefix}{SECRET}{suffix}");
            for engine in [&STANDARD, &URL_SAFE] {
                let encoded = engine.encode(&whole);
                let shown = clean(&encoded);
                assert!(
                    shown.contains(REDACTED),
                    "{whole:?} as {encoded} shown as {shown}"
                );
                // What is left are at most the two characters at each edge that mix in other bytes.
                let left = shown.replace(REDACTED, "");
                let edges = engine.encode(prefix).len() + engine.encode(suffix).len() + 4;
                assert!(left.len() <= edges, "{whole:?}: {shown}");
            }
        }
    }
}

#[test]
fn hex_in_either_case_is_hidden() {
    let hex = crate::auth::hex(SECRET.as_bytes());
    assert_hidden(&hex);
    assert_hidden(&hex.to_ascii_uppercase());
}

#[test]
fn json_escaped_and_percent_encoded_values_are_hidden() {
    let quoted = "pass\"word\\1234";
    let r = Redactor::new([quoted]);
    assert_eq!(
        r.text(r#"{"k":"pass\"word\\1234"}"#),
        r#"{"k":"[redacted]"}"#
    );
    assert_eq!(r.text("x=pass%22word%5C1234"), "x=[redacted]");
}

#[test]
fn short_secrets_are_hidden_plainly_but_not_their_encodings() {
    let r = Redactor::new(["abc123"]);
    assert_eq!(r.text("key=abc123"), "key=[redacted]");
    // "321cba" and "YWJjMTIz" are ordinary-looking strings for so short a value: left alone.
    assert_eq!(r.text("321cba YWJjMTIz"), "321cba YWJjMTIz");
}

#[test]
fn a_secret_containing_another_is_replaced_whole() {
    let r = Redactor::new(["abc123", "abc1234"]);
    assert_eq!(r.text("abc1234 abc123"), "[redacted] [redacted]");
}

#[test]
fn json_values_are_redacted_everywhere_keys_included() {
    let r = Redactor::new(["abc1234", "abc123"]);
    let mut v = serde_json::json!({
        "line": "key=abc123 and abc1234", "n": ["abc123"], "k": 3, "abc1234": {"x": "abc123"}
    });
    r.json(&mut v);
    assert_eq!(
        v,
        serde_json::json!({
            "line": "key=[redacted] and [redacted]", "n": ["[redacted]"], "k": 3,
            "[redacted]": {"x": "[redacted]"}
        })
    );
}

#[test]
fn an_empty_redactor_changes_nothing() {
    let r = Redactor::new(Vec::<String>::new());
    assert_eq!(r.text("anything"), "anything");
    let r = Redactor::new([""]);
    assert_eq!(r.text("anything"), "anything");
    assert_eq!(format!("{r:?}"), "Redactor(0 forms)");
}

#[test]
fn url_credentials_are_found_and_removed_for_display() {
    let url = "http://user:pa55w0rd-long@127.0.0.1:8080/v1?x=a@b";
    assert_eq!(without_credentials(url), "http://127.0.0.1:8080/v1?x=a@b");
    assert_eq!(
        url_credentials(Some(url)),
        ["user:pa55w0rd-long", "pa55w0rd-long"]
    );
    assert_eq!(url_credentials(Some("http://u:short@h/")), ["u:short"]);
    assert_eq!(without_credentials("https://tok@h"), "https://h");
    assert_eq!(without_credentials("http://h:1/a@b"), "http://h:1/a@b");
    assert_eq!(without_credentials("not a url"), "not a url");
    assert!(url_credentials(Some("http://h:1/a@b")).is_empty());
    assert!(url_credentials(None).is_empty());
    // The Basic-auth header a client builds from such a URL is caught too.
    let r = Redactor::new(url_credentials(Some(url)));
    let basic = STANDARD.encode("user:pa55w0rd-long");
    assert_eq!(
        r.text(&format!("Authorization: Basic {basic}")),
        "Authorization: Basic [redacted]"
    );
}
