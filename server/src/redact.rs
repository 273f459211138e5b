//! The one redactor: every text a run produces passes through a [`Redactor`] built from that run's
//! secrets (the agent's secret variables, the credentials in its base URL, the run's token) before it is
//! stored or shown — each event payload, the run's summary, diff stat and failure texts, inbox items, and
//! every comment written with the run's token.
//!
//! What it catches, for each secret value:
//! - the value itself (any length);
//! - for values of at least [`MIN_ENCODED_LEN`] characters, also: the value reversed; its base64 in the
//!   standard and the url-safe alphabet, with and without padding, and the run of base64 characters that
//!   encode only the value when it is encoded inside a longer text (`echo $KEY | base64`, `KEY=$KEY`
//!   encoded whole), at each of the three byte alignments; its hex, lower and upper case; its JSON string
//!   escape and its percent-encoding when those differ from the value.
//!
//! What it cannot catch, and does not pretend to: any other transformation (a secret split across
//! events, interleaved with other characters, encrypted, hashed and compared, spelled out, `xxd`-style
//! hex dumps with spaces, rot13, …). An agent that holds a secret can always leak it in some form; the
//! redactor removes the plain leaks and the ones a careless or lightly prompt-injected agent produces.

use aho_corasick::{AhoCorasick, MatchKind};
use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD, URL_SAFE, URL_SAFE_NO_PAD};
use serde_json::Value;

use crate::domain::Agent;
use crate::secrets::SecretBox;

/// What a secret (or an encoding of it) is replaced with.
pub const REDACTED: &str = "[redacted]";
/// Secrets at least this long are also looked for reversed and encoded (shorter ones would make their
/// encodings too short to tell from ordinary text).
pub const MIN_ENCODED_LEN: usize = 8;

/// Replaces the secrets of one run (and their encodings) in texts and JSON values. Cheap to clone.
#[derive(Clone, Default)]
pub struct Redactor {
    matcher: Option<AhoCorasick>,
    /// Set when the matcher could not be built: then every text is replaced whole (fail closed).
    broken: bool,
}

impl std::fmt::Debug for Redactor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let forms = self.matcher.as_ref().map_or(0, AhoCorasick::patterns_len);
        write!(f, "Redactor({forms} forms)")
    }
}

impl Redactor {
    /// A redactor for `secrets` (empty values are ignored).
    pub fn new<S: AsRef<str>>(secrets: impl IntoIterator<Item = S>) -> Self {
        let mut needles: Vec<String> = secrets
            .into_iter()
            .flat_map(|s| forms(s.as_ref()))
            .collect();
        needles.sort();
        needles.dedup();
        if needles.is_empty() {
            return Self::default();
        }
        // Leftmost-longest: a secret containing another, or a full encoding containing its own core, is
        // replaced whole.
        match AhoCorasick::builder()
            .match_kind(MatchKind::LeftmostLongest)
            .build(&needles)
        {
            Ok(matcher) => Self {
                matcher: Some(matcher),
                broken: false,
            },
            Err(e) => {
                tracing::error!(error = %e, "cannot build the redactor; hiding whole texts instead");
                Self {
                    matcher: None,
                    broken: true,
                }
            }
        }
    }

    /// A redactor for an agent's secrets (see [`agent_secrets`]) plus `extra` (a run's token).
    pub fn for_agent(secrets: &SecretBox, agent: &Agent, extra: Option<&str>) -> Self {
        let mut values = agent_secrets(secrets, agent);
        values.extend(extra.map(str::to_owned));
        Self::new(values)
    }

    /// `text` with every secret form replaced by [`REDACTED`].
    pub fn text(&self, text: &str) -> String {
        let Some(matcher) = &self.matcher else {
            return if self.broken {
                REDACTED.to_owned()
            } else {
                text.to_owned()
            };
        };
        let mut out = String::with_capacity(text.len());
        matcher.replace_all_with(text, &mut out, |_, _, dst| {
            dst.push_str(REDACTED);
            true
        });
        out
    }

    /// [`Redactor::text`] over an optional text.
    pub fn opt(&self, text: Option<&str>) -> Option<String> {
        text.map(|t| self.text(t))
    }

    /// Redacts every string inside `value`, object keys included.
    pub fn json(&self, value: &mut Value) {
        if self.matcher.is_none() && !self.broken {
            return;
        }
        match value {
            Value::String(s) => *s = self.text(s),
            Value::Array(items) => items.iter_mut().for_each(|v| self.json(v)),
            Value::Object(map) => {
                if map.keys().any(|k| self.text(k) != *k) {
                    *map = std::mem::take(map)
                        .into_iter()
                        .map(|(k, v)| (self.text(&k), v))
                        .collect();
                }
                map.values_mut().for_each(|v| self.json(v));
            }
            _ => {}
        }
    }
}

/// The plain values an agent's runs must never show: its secret variables (those that can be opened)
/// and the credentials in its base URL.
pub fn agent_secrets(secrets: &SecretBox, agent: &Agent) -> Vec<String> {
    let mut values: Vec<String> = agent
        .profile
        .env
        .iter()
        .filter(|v| v.secret)
        .filter_map(|v| secrets.open(&v.value).ok())
        .filter(|plain| !plain.is_empty())
        .collect();
    values.extend(url_credentials(agent.profile.base_url.as_deref()));
    values
}

/// The credentials in a URL's userinfo (`user:pass@`): the whole userinfo, and the password alone when it
/// is long enough not to be an ordinary word.
pub fn url_credentials(url: Option<&str>) -> Vec<String> {
    let Some(userinfo) = url.and_then(muster_llama::credentials) else {
        return Vec::new();
    };
    let mut found = vec![userinfo.to_owned()];
    if let Some((_, password)) = userinfo.split_once(':')
        && password.len() >= MIN_ENCODED_LEN
    {
        found.push(password.to_owned());
    }
    found
}

/// `url` without the `user:pass@` part of its authority: how a URL is shown to anyone but the owners
/// and admins editing it.
pub use muster_llama::without_credentials;

/// Every form of `secret` the redactor looks for.
fn forms(secret: &str) -> Vec<String> {
    if secret.is_empty() {
        return Vec::new();
    }
    let mut out = vec![secret.to_owned()];
    if secret.chars().count() < MIN_ENCODED_LEN {
        return out;
    }
    let bytes = secret.as_bytes();
    out.push(secret.chars().rev().collect());
    for engine in [&STANDARD, &STANDARD_NO_PAD, &URL_SAFE, &URL_SAFE_NO_PAD] {
        out.push(engine.encode(bytes));
    }
    for engine in [&STANDARD_NO_PAD, &URL_SAFE_NO_PAD] {
        for offset in 0..3 {
            out.push(base64_core(engine, bytes, offset));
        }
    }
    let hex = crate::auth::hex(bytes);
    out.push(hex.to_ascii_uppercase());
    out.push(hex);
    if let Ok(quoted) = serde_json::to_string(secret) {
        out.push(quoted[1..quoted.len() - 1].to_owned());
    }
    out.push(percent_encode(bytes));
    out.retain(|f| !f.is_empty());
    out
}

/// The base64 characters that encode only `bytes` when they start `offset` bytes into a longer text:
/// the characters shared by every such encoding, whatever surrounds the value.
fn base64_core(engine: &impl base64::Engine, bytes: &[u8], offset: usize) -> String {
    let mut padded = vec![0_u8; offset];
    padded.extend_from_slice(bytes);
    let encoded = engine.encode(&padded);
    // Character i holds bits [6i, 6i + 6); keep those inside the value's bits [8·offset, 8·(offset + n)).
    let first = (8 * offset).div_ceil(6);
    let end = (8 * (offset + bytes.len())) / 6;
    encoded.get(first..end).unwrap_or_default().to_owned()
}

/// Percent-encoding of every byte outside RFC 3986's unreserved set.
fn percent_encode(bytes: &[u8]) -> String {
    use std::fmt::Write as _;
    bytes.iter().fold(String::new(), |mut out, b| {
        if b.is_ascii_alphanumeric() || b"-._~".contains(b) {
            out.push(char::from(*b));
        } else {
            let _ = write!(out, "%{b:02X}");
        }
        out
    })
}

#[cfg(test)]
mod tests;
