//! The normalized event model every adapter produces.
//!
//! One CLI output line becomes zero or more [`AgentEvent`]s. Invariants the parsers keep:
//! - a line that is not understood becomes exactly one [`AgentEvent::Raw`] with the line as given;
//! - known lines that carry nothing worth keeping (turn markers, token estimates) become no event;
//! - [`AgentEvent::Usage`] values are *increments*: sum them over a run for its totals;
//! - [`AgentEvent::TurnUsage`] values report model requests as the run goes (one each, or one
//!   request in parts while it streams), for budgets and live counters; they are provisional: the next
//!   `Usage` covers every turn before it, so totals never add both;
//! - a failed turn ends with [`AgentEvent::Error`] (classified when possible) before or instead of a
//!   successful [`AgentEvent::Finished`]; `Finished { ok: false }` carries the reason as `summary`.

use serde::{Deserialize, Serialize};

/// One normalized thing an agent did or said. Serialized as `{"kind": "<snake_case>", …fields}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum AgentEvent {
    /// The CLI started (or resumed) a session; keep the id to resume later.
    Started {
        /// The CLI's own session or thread id.
        session_id: String,
        /// The model the CLI reported, when it reports one.
        model: Option<String>,
        /// The skills the CLI says it found (Claude Code lists them in `system/init`).
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        skills: Vec<String>,
    },
    /// Assistant text, whole (not a delta).
    Text {
        /// The text.
        text: String,
    },
    /// Reasoning or thinking text the CLI chose to show.
    Thinking {
        /// The text.
        text: String,
    },
    /// The agent called a tool; `id` pairs it with its [`AgentEvent::ToolResult`].
    ToolCall {
        /// Tool call id as the CLI reported it.
        id: String,
        /// Tool name as the CLI reported it (`Bash`, `bash`, `command_execution`, `mcp__x__y`, …).
        name: String,
        /// Tool input as JSON.
        input: serde_json::Value,
    },
    /// The result of the tool call with the same `id`.
    ToolResult {
        /// Tool call id.
        id: String,
        /// Output text (or error text when `is_error`).
        output: String,
        /// Whether the tool failed or was refused.
        is_error: bool,
    },
    /// A shell command ran; emitted besides the tool pair when the CLI reports the exit code.
    Command {
        /// The command line.
        cmd: String,
        /// Exit code, when known.
        exit_code: Option<i32>,
        /// Combined output.
        output: String,
    },
    /// A file was added, deleted or updated by the agent.
    FileChange {
        /// Path as the CLI reported it.
        path: String,
        /// What happened to it.
        change: FileChangeKind,
    },
    /// Token usage (and cost when known) since the previous `Usage` event.
    Usage(TokenUsage),
    /// Usage of one model request (a turn), reported while the run goes on so budgets can stop it
    /// after the turn that crossed them. Provisional: the next [`AgentEvent::Usage`] includes it.
    TurnUsage(TokenUsage),
    /// Something went wrong; `class` says whether a retry may help.
    Error {
        /// The message as the CLI printed it.
        message: String,
        /// The classification, when the message or status allowed one.
        class: Option<ErrorClass>,
    },
    /// The turn ended.
    Finished {
        /// Whether it ended successfully.
        ok: bool,
        /// The final answer on success, the reason on failure, when the CLI gives one.
        summary: Option<String>,
    },
    /// The CLI refused one of the agent's tool calls under its permission mode (it asks for an approval
    /// nobody can give headless): a run whose every call was refused did nothing.
    Refused {
        /// The tool as the CLI names it (`Bash`, `Edit`, …).
        tool: String,
        /// What it was asked (the command, the file), one line.
        input: String,
    },
    /// A status line the CLI gave about its own work (a background task started or ended, a model
    /// fallback, a refused permission, a compacted conversation): shown dimmed, never a summary.
    Notice {
        /// One readable line.
        text: String,
    },
    /// Generation speed reported by a local model server (llama.cpp `timings`).
    Speed {
        /// Tokens generated per second in the last turn.
        tokens_per_second: f64,
        /// One readable line with the details (tokens generated, prompt speed).
        detail: String,
    },
    /// A line no parser understood, kept verbatim.
    Raw {
        /// The line.
        line: String,
    },
}

impl AgentEvent {
    /// The serde tag of this event (`"text"`, `"tool_call"`, …), e.g. for a `kind` column.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Started { .. } => "started",
            Self::Text { .. } => "text",
            Self::Thinking { .. } => "thinking",
            Self::ToolCall { .. } => "tool_call",
            Self::ToolResult { .. } => "tool_result",
            Self::Command { .. } => "command",
            Self::FileChange { .. } => "file_change",
            Self::Usage(_) => "usage",
            Self::TurnUsage(_) => "turn_usage",
            Self::Error { .. } => "error",
            Self::Finished { .. } => "finished",
            Self::Refused { .. } => "refused",
            Self::Notice { .. } => "notice",
            Self::Speed { .. } => "speed",
            Self::Raw { .. } => "raw",
        }
    }

    /// A `Raw` event for `line`.
    pub fn raw(line: &str) -> Self {
        Self::Raw {
            line: line.to_owned(),
        }
    }

    /// An `Error` event whose class is derived from `message` (see [`ErrorClass::from_message`]).
    pub fn error(message: &str) -> Self {
        Self::Error {
            message: message.to_owned(),
            class: ErrorClass::from_message(message),
        }
    }
}

/// What happened to a file in [`AgentEvent::FileChange`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FileChangeKind {
    /// Created.
    Add,
    /// Removed.
    Delete,
    /// Modified (also used for kinds a CLI may add later).
    Update,
}

/// Token counts of a [`AgentEvent::Usage`], normalized to Anthropic's convention: `input` counts
/// only input tokens that were neither read from nor written to the prompt cache, and `output`
/// includes reasoning tokens.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct TokenUsage {
    /// Uncached input tokens.
    pub input: u64,
    /// Output tokens, reasoning included.
    pub output: u64,
    /// Input tokens served from the prompt cache.
    pub cache_read: u64,
    /// Input tokens written to the prompt cache.
    pub cache_write: u64,
    /// Cost in USD when the CLI reported one; price it with [`crate::RateTable`] otherwise.
    pub cost_usd: Option<f64>,
}

impl TokenUsage {
    /// All tokens counted, for token budgets.
    pub fn total_tokens(&self) -> u64 {
        self.input + self.output + self.cache_read + self.cache_write
    }
}

/// The sum of two usages; the cost is known if either is (an unknown part counts as 0).
impl std::ops::Add for TokenUsage {
    type Output = Self;

    fn add(self, other: Self) -> Self {
        let cost_usd = match (self.cost_usd, other.cost_usd) {
            (None, None) => None,
            (a, b) => Some(a.unwrap_or(0.0) + b.unwrap_or(0.0)),
        };
        Self {
            input: self.input + other.input,
            output: self.output + other.output,
            cache_read: self.cache_read + other.cache_read,
            cache_write: self.cache_write + other.cache_write,
            cost_usd,
        }
    }
}

/// Totals over a run's `Usage` events.
impl std::iter::Sum for TokenUsage {
    fn sum<I: Iterator<Item = Self>>(iter: I) -> Self {
        iter.fold(Self::default(), |total, usage| total + usage)
    }
}

/// Why an agent failed, coarse enough to decide on a retry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorClass {
    /// Bad or missing credentials, or an account problem (HTTP 401/403).
    Auth,
    /// Too many requests (HTTP 429).
    RateLimit,
    /// The API failed (HTTP 5xx, overload).
    Server,
    /// The API could not be reached (connection refused, DNS, timeout).
    Network,
    /// The request or the CLI configuration is wrong (HTTP 400/404/422, bad config, bad resume id).
    Config,
    /// Anything else that was recognized as an error.
    Other,
}

/// Substrings (lowercase) that identify an error class when no HTTP status is present.
const CLASS_KEYWORDS: &[(&str, ErrorClass)] = &[
    ("unable to connect", ErrorClass::Network),
    ("connectionrefused", ErrorClass::Network),
    ("connection refused", ErrorClass::Network),
    ("failed to lookup address", ErrorClass::Network),
    ("timed out", ErrorClass::Network),
    ("network", ErrorClass::Network),
    ("authenticat", ErrorClass::Auth),
    ("unauthorized", ErrorClass::Auth),
    ("api key", ErrorClass::Auth),
    ("rate limit", ErrorClass::RateLimit),
    ("rate_limit", ErrorClass::RateLimit),
    ("too many requests", ErrorClass::RateLimit),
    ("overloaded", ErrorClass::Server),
    ("high demand", ErrorClass::Server),
    ("internal server error", ErrorClass::Server),
    ("error loading config", ErrorClass::Config),
    ("no conversation found", ErrorClass::Config),
    ("invalid_request", ErrorClass::Config),
];

impl ErrorClass {
    /// Whether retrying the run later may succeed.
    pub fn retryable(self) -> bool {
        matches!(self, Self::RateLimit | Self::Server | Self::Network)
    }

    /// The class of an HTTP status.
    pub fn from_status(status: u16) -> Self {
        match status {
            401..=403 => Self::Auth,
            429 => Self::RateLimit,
            408 => Self::Network,
            400 | 404 | 413 | 422 => Self::Config,
            500..=599 => Self::Server,
            _ => Self::Other,
        }
    }

    /// Classifies an error message: by the first HTTP error status in it (`API Error: 401 …`,
    /// `unexpected status 429 …`), else by keywords; `None` when nothing is recognized.
    pub fn from_message(message: &str) -> Option<Self> {
        if let Some(status) = http_status_in(message) {
            return Some(Self::from_status(status));
        }
        let lower = message.to_lowercase();
        CLASS_KEYWORDS
            .iter()
            .find(|(needle, _)| lower.contains(needle))
            .map(|&(_, class)| class)
    }
}

/// The first standalone three-digit number in 400..=599 in `text`: preceded by the start, a space
/// or `(`, and followed by the end, a space or one of `,;)`. Ports and ids do not match.
fn http_status_in(text: &str) -> Option<u16> {
    let bytes = text.as_bytes();
    (0..bytes.len().saturating_sub(2)).find_map(|i| {
        let digits = bytes.get(i..i + 3)?;
        if !digits.iter().all(u8::is_ascii_digit) {
            return None;
        }
        let before_ok = i == 0 || matches!(bytes[i - 1], b' ' | b'(');
        let after_ok = bytes
            .get(i + 3)
            .is_none_or(|b| matches!(b, b' ' | b',' | b';' | b')'));
        let status: u16 = std::str::from_utf8(digits).ok()?.parse().ok()?;
        (before_ok && after_ok && (400..=599).contains(&status)).then_some(status)
    })
}

#[cfg(test)]
mod tests;
