//! Custom commands: any program, prompt on stdin, output read in one of three [`CustomFormat`]s.
//!
//! The command gets the run's `HOME`, `PWD`, and — when set — `MUSTER_MODEL`, `MUSTER_BASE_URL`,
//! `MUSTER_API_KEY` and `MUSTER_RESUME_SESSION` (a follow-up run: the session to continue, its earlier
//! `HOME` copied into this one), then the run's own environment. Its argv is the binary plus the extra
//! arguments.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::adapter::{
    Adapter, LaunchSpec, RunSpec, RuntimeKind, base_env, finish_env, unknown_choice,
};
use crate::json::{Line, decode};
use crate::{AgentEvent, Error, claude};

/// How a custom command's stdout is read.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CustomFormat {
    /// Claude Code `stream-json` lines, parsed like Claude's.
    #[default]
    StreamJson,
    /// One JSON object per line: Muster's own [`AgentEvent`] JSON, or any object whose
    /// `error` / `text` / `message` / `content` string is taken as an error or as text.
    JsonLines,
    /// Plain text: each non-blank line is assistant text.
    PlainText,
}

impl CustomFormat {
    /// Every format.
    pub const ALL: [Self; 3] = [Self::StreamJson, Self::JsonLines, Self::PlainText];

    /// The snake_case name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::StreamJson => "stream_json",
            Self::JsonLines => "json_lines",
            Self::PlainText => "plain_text",
        }
    }
}

impl fmt::Display for CustomFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for CustomFormat {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self, Error> {
        Self::ALL
            .into_iter()
            .find(|format| format.as_str() == s)
            .ok_or_else(|| unknown_choice(s, "output format", &Self::ALL.map(Self::as_str)))
    }
}

/// The adapter for a custom command with a given output format.
#[derive(Debug, Clone, Copy, Default)]
pub struct CustomAdapter {
    format: CustomFormat,
}

impl CustomAdapter {
    /// An adapter reading output as `format`.
    pub fn new(format: CustomFormat) -> Self {
        Self { format }
    }

    /// The output format.
    pub fn format(&self) -> CustomFormat {
        self.format
    }
}

impl Adapter for CustomAdapter {
    fn kind(&self) -> RuntimeKind {
        RuntimeKind::Custom
    }

    fn parse_line(&self, line: &str) -> Vec<AgentEvent> {
        match self.format {
            CustomFormat::StreamJson => claude::parse_line(line),
            CustomFormat::JsonLines => parse_json_line(line),
            CustomFormat::PlainText => parse_text_line(line),
        }
    }

    fn command(&self, spec: &RunSpec) -> crate::Result<LaunchSpec> {
        let mut env = base_env(spec);
        let optional = [
            ("MUSTER_MODEL", &spec.model),
            ("MUSTER_BASE_URL", &spec.base_url),
            ("MUSTER_API_KEY", &spec.api_key),
            ("MUSTER_RESUME_SESSION", &spec.resume_session),
        ];
        env.extend(
            optional
                .into_iter()
                .filter_map(|(key, value)| Some((key.to_owned(), value.clone()?))),
        );
        Ok(LaunchSpec {
            program: spec.binary.clone(),
            args: spec.extra_args.clone(),
            env: finish_env(env, spec),
            cwd: spec.workdir.clone(),
            stdin: Some(spec.prompt.clone()),
            files: Vec::new(),
        })
    }

    fn skills_place(&self) -> crate::adapter::SkillsPlace {
        crate::adapter::SkillsPlace::Brief
    }

    /// A custom command keeps whatever it likes in its `HOME`: the earlier run's `HOME` is copied whole,
    /// and the command reads the session's id from `MUSTER_RESUME_SESSION`.
    fn carry_session(
        &self,
        session: &str,
        from: crate::session::SessionPlace<'_>,
        to: crate::session::SessionPlace<'_>,
    ) -> Result<(), crate::session::CarryError> {
        let _ = session;
        crate::session::carry_folder(".", from, to)
    }
}

/// Parses a generic JSON line (see [`CustomFormat::JsonLines`]).
pub fn parse_json_line(line: &str) -> Vec<AgentEvent> {
    let value = match decode::<Value>(line) {
        Line::Blank => return Vec::new(),
        Line::Unknown => return vec![AgentEvent::raw(line)],
        Line::Known(value) => value,
    };
    if value.get("kind").is_some()
        && let Ok(event) = serde_json::from_value::<AgentEvent>(value.clone())
    {
        return vec![event];
    }
    let field = |key: &str| value.get(key).and_then(Value::as_str);
    if let Some(message) = field("error") {
        return vec![AgentEvent::error(message)];
    }
    match ["text", "message", "content"].into_iter().find_map(field) {
        Some(text) => vec![AgentEvent::Text {
            text: text.to_owned(),
        }],
        None => vec![AgentEvent::raw(line)],
    }
}

/// Parses a plain-text line: non-blank lines are text, without the line ending.
pub fn parse_text_line(line: &str) -> Vec<AgentEvent> {
    let text = line.trim_end_matches(['\r', '\n']);
    if text.trim().is_empty() {
        return Vec::new();
    }
    vec![AgentEvent::Text {
        text: text.to_owned(),
    }]
}

#[cfg(test)]
mod tests;
