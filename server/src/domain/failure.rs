//! Why a run did not succeed, in words a person can act on: what happened and what to do, per cause and
//! per CLI ("Claude Code's API key was refused by the provider (401): check the agent's
//! ANTHROPIC_API_KEY secret"). The one place failure texts are made: the run engine writes them into the
//! inbox and the comment, and the pages and the API render them from the same facts.
//!
//! The facts are what the run recorded: its classified [`FailureReason`] (from the adapters' structured
//! `Error` events and the exit status, see `engine::finish`), its exit code, and the decisive error
//! message (`failure_detail`), which may carry the HTTP status the provider answered with.

use muster_agents::{AgentEvent, ErrorClass};

use super::{FailureReason, Run, RuntimeKind};

/// The facts a failure text is made from.
#[derive(Debug, Clone, Copy)]
pub struct FailureFacts<'a> {
    pub reason: FailureReason,
    /// The agent's runtime (which CLI ran, which key it reads).
    pub kind: RuntimeKind,
    pub exit_code: Option<i32>,
    /// The decisive error message the CLI reported (redacted), when there was one.
    pub detail: Option<&'a str>,
    /// The run's summary: for a failure, the CLI's last word on it (often a raw diagnostic).
    pub summary: Option<&'a str>,
    /// The agent's configured model, if any.
    pub model: Option<&'a str>,
}

impl<'a> FailureFacts<'a> {
    /// The facts of `run` (of an agent of `kind` configured with `model`); `None` when it has no failure
    /// reason (it succeeded, was cancelled, or is not over).
    pub fn of(run: &'a Run, kind: RuntimeKind, model: Option<&'a str>) -> Option<Self> {
        Some(Self {
            reason: run.failure_reason?,
            kind,
            exit_code: run.exit_code,
            detail: run.failure_detail.as_deref(),
            summary: run.summary.as_deref(),
            model,
        })
    }
}

/// A failure explained: `what` happened, what `to_do`, and whether the fix is in the agent's settings
/// (pages then link to them).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FailureText {
    pub what: String,
    pub to_do: String,
    pub in_agent_settings: bool,
}

impl FailureText {
    /// One sentence: "what: to do".
    pub fn sentence(&self) -> String {
        format!("{}: {}", self.what, self.to_do)
    }
}

impl std::fmt::Display for FailureText {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.sentence())
    }
}

/// The first HTTP error status (400–599) standing alone in `text`: "API Error: 401 …",
/// "(authentication_failed, status 401)", "unexpected status 429 Too Many Requests".
pub fn http_status(text: &str) -> Option<u16> {
    text.split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|w| w.len() == 3)
        .filter_map(|w| w.parse::<u16>().ok())
        .find(|s| (400..=599).contains(s))
}

/// Whether the provider said the model does not exist.
fn model_missing(detail: &str, status: Option<u16>) -> bool {
    let lower = detail.to_lowercase();
    status == Some(404)
        || lower.contains("model not found")
        || lower.contains("model_not_found")
        || (lower.contains("model") && lower.contains("does not exist"))
}

/// Explains a failure from its facts.
pub fn explain(f: &FailureFacts<'_>) -> FailureText {
    let cli = f.kind.subject();
    let detail = f.detail.unwrap_or_default();
    let status = f.detail.and_then(http_status);
    let code = |default: &str| status.map_or_else(|| default.to_owned(), |s| format!(" ({s})"));
    let (what, to_do, settings) = match f.reason {
        FailureReason::Auth => (
            match f.kind.key_var() {
                None => {
                    format!("The provider refused the agent's API key{}", code(""))
                }
                _ => format!("{cli}'s API key was refused by the provider{}", code("")),
            },
            f.kind.key_hint(),
            true,
        ),
        FailureReason::RateLimit => (
            format!("The model provider rate-limited {cli}{}", code(" (429)")),
            "wait and retry the run, or raise the account's rate limits with the provider".to_owned(),
            false,
        ),
        FailureReason::Server => (
            format!("The model provider failed to answer {cli}{}", code("")),
            "retry the run later; Muster retries such failures on its own up to the agent's retry limit"
                .to_owned(),
            false,
        ),
        FailureReason::Network => (
            format!("{cli} could not reach its model server"),
            "check the agent's base URL and that the server is running and reachable from the runner"
                .to_owned(),
            true,
        ),
        FailureReason::Config if model_missing(detail, status) => (
            match f.model {
                Some(m) => format!("The provider does not know the model \"{m}\"{}", code("")),
                None => format!("The provider does not know {cli}'s model{}", code("")),
            },
            "check the agent's model setting (empty uses the CLI's default)".to_owned(),
            true,
        ),
        FailureReason::Config => (
            format!("{cli} was refused its configuration{}", code("")),
            "check the agent's model, base URL and extra arguments".to_owned(),
            true,
        ),
        FailureReason::MissingCli => (
            format!("{cli} is not installed on the runner"),
            "install it (the Runtimes page says how) or change the agent's runtime".to_owned(),
            true,
        ),
        FailureReason::Sandbox => (
            "The sandbox refused to start the agent".to_owned(),
            "see the Runtimes page: the operator can fix the kernel support or start the server with \
             --allow-unsandboxed-agents"
                .to_owned(),
            false,
        ),
        FailureReason::Git => (
            "Git could not prepare or keep the run's work".to_owned(),
            "the run's log has git's own message: check the workspace's repository (disk space, \
             permissions, its branch moved by hand) and retry the run"
                .to_owned(),
            false,
        ),
        FailureReason::EgressRefused => (
            match f.detail.map(str::trim).filter(|d| !d.is_empty()) {
                Some(d) => format!("A connection of {cli} was refused: {d}"),
                None => format!("A connection of {cli} was refused by the sandbox or the egress proxy"),
            },
            "an owner or admin can add the host to the agent's egress allow-list (or turn off its \
             \"no network\" switch), or set its model server as the agent's Base URL; Muster does not \
             retry such runs"
                .to_owned(),
            true,
        ),
        FailureReason::Unreachable => (
            match f.summary.map(str::trim).filter(|s| !s.is_empty()) {
                Some(why) => format!("{cli}'s model server did not answer: {why}"),
                None => format!("{cli}'s model server did not answer"),
            },
            "check the agent's Base URL (or its base-URL variable) and that the server is running and \
             reachable from the runner; Muster does not retry such runs"
                .to_owned(),
            true,
        ),
        FailureReason::NeedsPermission => (
            match f.detail.map(str::trim).filter(|d| !d.is_empty()) {
                Some(d) => format!("{cli} was refused every tool call it tried: {d}"),
                None => format!("{cli} was refused every tool call it tried"),
            },
            "allow more in the agent's Permission mode (read_only: reading only; workspace_write: edits \
             in its worktree, while the CLI asks approval for commands it cannot vet, which nobody can \
             give headless; bypass: any command, still inside Muster's sandbox), then retry the run"
                .to_owned(),
            true,
        ),
        FailureReason::RunnerLost => (
            "The runner stopped while the run was live".to_owned(),
            "retry the run".to_owned(),
            false,
        ),
        FailureReason::OverBudget => (
            "The run went over the agent's budget and was stopped".to_owned(),
            "raise the budget in the agent's settings, or split the issue".to_owned(),
            true,
        ),
        FailureReason::OverCap => (
            match f.summary.map(str::trim).filter(|s| !s.is_empty()) {
                Some(why) => format!("Over a monthly spend cap: {why}"),
                None => "Over a monthly spend cap".to_owned(),
            },
            "an owner or admin can raise the cap (the agent's page, or the Usage page for the workspace's), \
             or wait for next month"
                .to_owned(),
            false,
        ),
        FailureReason::Stalled => (
            format!("{cli} stayed silent past its stall timeout and was stopped"),
            "look at its last events; raise the stall timeout in the agent's settings if it needs longer"
                .to_owned(),
            true,
        ),
        FailureReason::Timeout => (
            format!("{cli} ran out of time and was stopped"),
            "split the issue or give the agent more time".to_owned(),
            true,
        ),
        FailureReason::EventCap => (
            f.summary
                .filter(|s| !s.is_empty())
                .map_or_else(|| "The run reached the cap of events per run".to_owned(), str::to_owned),
            "the agent was looping or very verbose; look at its last events".to_owned(),
            false,
        ),
        FailureReason::Exit => (
            match f.exit_code {
                Some(0) | None => format!("{cli} ended its turn with an error"),
                Some(n) => format!("{cli} exited with code {n}"),
            },
            "open the run for its last error (under details)".to_owned(),
            false,
        ),
    };
    FailureText {
        what,
        to_do,
        in_agent_settings: settings,
    }
}

/// The raw diagnostic behind a failure text: the decisive error, the CLI's last word, the exit code and
/// the recorded reason, one per line.
pub fn diagnostic(f: &FailureFacts<'_>) -> String {
    let mut lines = Vec::new();
    if let Some(d) = f.detail.filter(|d| !d.trim().is_empty()) {
        lines.push(format!("error: {}", d.trim()));
    }
    if let Some(s) = f.summary.filter(|s| !s.trim().is_empty())
        && f.detail.is_none_or(|d| d.trim() != s.trim())
    {
        lines.push(format!("last output: {}", s.trim()));
    }
    if let Some(code) = f.exit_code {
        lines.push(format!("exit code: {code}"));
    }
    lines.push(format!("reason: {}", f.reason));
    lines.join("\n")
}

/// The decisive error of a run, followed event by event: the last classified `Error` event (a later
/// unclassified one, such as Claude's closing diagnostic, does not hide it), else the last error.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ErrorTrack {
    class: Option<ErrorClass>,
    message: Option<String>,
}

impl ErrorTrack {
    /// Takes one event into account (only `Error` events count).
    pub fn add(&mut self, event: &AgentEvent) {
        if let AgentEvent::Error { message, class } = event
            && (class.is_some() || self.class.is_none())
        {
            self.class = *class;
            self.message = Some(message.clone());
        }
    }

    /// Whether any error was seen.
    pub fn seen(&self) -> bool {
        self.message.is_some()
    }

    /// The class of the decisive error.
    pub fn class(&self) -> Option<ErrorClass> {
        self.class
    }

    /// The decisive error's message.
    pub fn message(&self) -> Option<&str> {
        self.message.as_deref()
    }

    /// The failure reason of a run that ended unsuccessfully by itself (no stop of ours).
    pub fn reason(&self) -> FailureReason {
        match self.class {
            Some(ErrorClass::Auth) => FailureReason::Auth,
            Some(ErrorClass::RateLimit) => FailureReason::RateLimit,
            Some(ErrorClass::Server) => FailureReason::Server,
            Some(ErrorClass::Network) => FailureReason::Network,
            Some(ErrorClass::Config) => FailureReason::Config,
            Some(ErrorClass::Other) | None => FailureReason::Exit,
        }
    }
}

#[cfg(test)]
mod tests;
