//! Muster's local-model side: the agent loop that `muster llama-loop` runs against an OpenAI-compatible
//! `/v1/chat/completions` endpoint (llama.cpp's `llama-server`, Ollama, llamafile, vLLM, LM Studio), and the
//! probes that find such servers.
//!
//! The loop ([`agent::run`]) streams each turn (`stream: true`), coalesces token deltas into readable
//! [`AgentEvent::Text`] chunks ([`coalesce`]), records usage at zero cost and llama.cpp's `timings`, and, when
//! the model takes tools, runs a small tool set on the run's working directory ([`tools`]; the file tools check
//! their paths, `run_command` is a plain shell confined only by the run engine's sandbox). It
//! writes one [`AgentEvent`] JSON line per event, which the llama adapter in `muster-agents` reads back, so
//! the run engine's guards (stall, budget, cancel, timeouts, the durable log) apply unchanged.
//!
//! This crate is the only one besides the server's client that speaks HTTP; `muster-agents` stays free of
//! it. Child processes (the `run_command` tool) are still started through `muster_agents::process`.
#![forbid(unsafe_code)]

pub mod agent;
pub mod chat;
pub mod coalesce;
pub mod probe;
pub mod sse;
pub mod tools;

pub use agent::{EventSink, JsonLines, Settings, run};
pub use muster_agents::AgentEvent;
pub use probe::{ModelServer, ServerKind, ServerStatus};

/// `base` without a trailing slash or `/v1`: the server root that `/v1/…`, `/props` and `/api/…` hang off.
pub fn server_root(base: &str) -> String {
    let trimmed = base.trim().trim_end_matches('/');
    trimmed
        .strip_suffix("/v1")
        .unwrap_or(trimmed)
        .trim_end_matches('/')
        .to_owned()
}

/// `url` without the `user:pass@` part of its authority: how a model server's URL is shown (in probe
/// results, errors and pages), so that credentials in a base URL never travel further than the request.
pub fn without_credentials(url: &str) -> String {
    match userinfo_span(url) {
        Some((start, at)) => format!("{}{}", &url[..start], &url[at + 1..]),
        None => url.to_owned(),
    }
}

/// The `user:pass` (or `token`) before the `@` of `url`'s authority, if it has one.
pub fn credentials(url: &str) -> Option<&str> {
    userinfo_span(url).map(|(start, at)| &url[start..at])
}

/// Where the userinfo of `url` starts and the index of the `@` that ends it. The authority ends at the
/// first `/`, `?` or `#` after `scheme://`; its last `@` ends the userinfo.
fn userinfo_span(url: &str) -> Option<(usize, usize)> {
    let start = url.find("://")? + 3;
    let rest = &url[start..];
    let authority = &rest[..rest.find(['/', '?', '#']).unwrap_or(rest.len())];
    authority.rfind('@').map(|at| (start, start + at))
}

/// A short, single-line excerpt of an error text (never of a server's body: those are not shown).
pub(crate) fn excerpt(text: &str, max_chars: usize) -> String {
    let flat: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if flat.chars().count() > max_chars {
        let cut: String = flat.chars().take(max_chars).collect();
        format!("{cut}…")
    } else {
        flat
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn server_root_drops_the_api_suffix_and_slashes() {
        assert_eq!(server_root("http://h:8080/v1/"), "http://h:8080");
        assert_eq!(server_root(" http://h:8080/ "), "http://h:8080");
        assert_eq!(server_root("http://h/proxy/v1"), "http://h/proxy");
        assert_eq!(excerpt("a\n  b   c", 10), "a b c");
        assert_eq!(excerpt("abcdef", 3), "abc…");
    }

    #[test]
    fn credentials_are_split_off_urls() {
        let url = "http://user:pass@127.0.0.1:8080/v1?x=a@b";
        assert_eq!(without_credentials(url), "http://127.0.0.1:8080/v1?x=a@b");
        assert_eq!(credentials(url), Some("user:pass"));
        assert_eq!(without_credentials("https://tok@h"), "https://h");
        assert_eq!(credentials("https://a@b@h/"), Some("a@b"));
        assert_eq!(without_credentials("http://h:1/a@b"), "http://h:1/a@b");
        assert_eq!(credentials("http://h:1/a@b"), None);
        assert_eq!(without_credentials("not a url"), "not a url");
    }
}
