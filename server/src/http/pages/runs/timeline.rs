//! A run's stored events folded into the run page's timeline: assistant text as sanitised markdown,
//! tool calls paired with their results (by id), commands, file changes, errors, stderr; `usage` events
//! summed into the counters; a `diff` event kept for the end of the page.
//!
//! The same fold serves the first render (every stored event) and the live socket (a primer of the
//! events the page already shows, then one batch per push), so both render an event the same way.
//!
//! Shown once each, though stored as they came:
//! - a local model's answer streams as many `text` (or `thinking`) deltas; consecutive deltas are one
//!   block that grows (live, the block already on the page is re-rendered in place), and the `finished`
//!   summary repeating the answer is not shown again;
//! - a `command` event that repeats its tool call's output (Codex and OpenCode emit it beside the tool
//!   pair; the local loop just before the result) adds its exit code to the call's block instead of a
//!   second block;
//! - a `started` event for a session already shown (OpenCode starts every step) is not shown again.

use std::collections::{HashMap, HashSet};

use muster_agents::{AgentEvent, RateTable, TokenUsage};
use muster_web::views::{
    DiffLineView, LongTextView, RunDiffView, RunItemKind, RunItemView, ToolResultView,
};
use serde_json::Value;

use crate::domain::{RunEvent, RunEventBody, Seq, Usage};
use crate::markdown::to_safe_html;
use once::{OpenText, Prev};

/// Lines of a long output shown before "show all".
const SHOWN_LINES: usize = 20;
/// Characters of a long output shown before "show all".
const SHOWN_CHARS: usize = 4_000;
/// Lines of a patch rendered; the rest is counted, not shown.
const MAX_DIFF_LINES: usize = 5_000;

/// What one batch of events changes on the page.
#[derive(Debug, Default)]
pub(super) struct Batch {
    /// New timeline entries, in order.
    pub items: Vec<RunItemView>,
    /// Results of calls from earlier batches: `(slot_id, result)`.
    pub results: Vec<(String, ToolResultView)>,
    /// Entries of earlier batches re-rendered: a text block that grew, an orphan result that became its
    /// command.
    pub replaced: Vec<RunItemView>,
    pub usage_changed: bool,
    /// A `status` event (stalled, running) arrived: the header changed.
    pub status_changed: bool,
}

/// The fold over a run's events.
pub(super) struct Timeline {
    run_id: String,
    /// `/<run id>/work`: where the run's worktree shows in the paths the agent reports.
    worktree: String,
    model: Option<String>,
    rates: RateTable,
    /// Token and cost totals of the `usage` events so far.
    pub usage: Usage,
    /// The requests (`turn_usage`) since the last final report: what the run has spent that no report
    /// covers yet, shown live (a streaming local model reports each chunk's tokens).
    turns: Usage,
    /// The unified diff of the last `diff` event.
    pub patch: Option<String>,
    /// The last generation speed a local model server reported.
    pub tokens_per_second: Option<f64>,
    /// The highest seq folded.
    pub last_seq: Seq,
    last_text: Option<String>,
    batch: Batch,
    /// Calls of the current batch: tool id → index in `batch.items`.
    open_calls: HashMap<String, usize>,
    /// Calls of earlier batches (already on the page).
    known_calls: HashSet<String>,
    /// Whether `text`/`thinking` events are deltas of one answer (local models) rather than whole blocks.
    text_deltas: bool,
    /// The text block that consecutive deltas grow, while nothing else came after it.
    open_text: Option<OpenText>,
    /// The shell command each call ran, by tool id (to recognise the call's `command` event).
    call_commands: HashMap<String, String>,
    /// Exit codes of `command` events that came before their call's result, by tool id.
    pending_exits: HashMap<String, Option<i32>>,
    /// The previous event, when it was a call or a result (a `command` event may belong to it).
    prev: Option<Prev>,
    /// Sessions whose start is shown.
    sessions: HashSet<String>,
    /// How many batches were taken: tells whether an index into `batch.items` is still valid.
    generation: u64,
}

impl Timeline {
    /// An empty fold for run `run_id`; `model` prices usage that carries no cost (as the run engine does).
    pub(super) fn new(run_id: String, model: Option<String>) -> Self {
        Self {
            worktree: format!("/{run_id}/work"),
            run_id,
            model,
            rates: RateTable::default(),
            usage: Usage::default(),
            turns: Usage::default(),
            patch: None,
            tokens_per_second: None,
            last_seq: 0,
            last_text: None,
            batch: Batch::default(),
            open_calls: HashMap::new(),
            known_calls: HashSet::new(),
            text_deltas: false,
            open_text: None,
            call_commands: HashMap::new(),
            pending_exits: HashMap::new(),
            prev: None,
            sessions: HashSet::new(),
            generation: 0,
        }
    }

    /// Prices usage that carries no cost with `rates` (the workspace's table) instead of the built-in one.
    pub(super) fn with_rates(mut self, rates: RateTable) -> Self {
        self.rates = rates;
        self
    }

    /// Reads `text` and `thinking` events as deltas of one streamed answer (the local-model loop's).
    pub(super) fn with_text_deltas(mut self, on: bool) -> Self {
        self.text_deltas = on;
        self
    }

    /// Ends the current batch and returns what it changed.
    pub(super) fn take(&mut self) -> Batch {
        self.known_calls
            .extend(self.open_calls.drain().map(|(id, _)| id));
        self.generation += 1;
        std::mem::take(&mut self.batch)
    }

    /// Folds one event in.
    pub(super) fn push(&mut self, e: &RunEvent) {
        self.last_seq = self.last_seq.max(e.seq);
        let prev = self.prev.take();
        let kind = match e.body() {
            RunEventBody::Stderr { line } => RunItemKind::Stderr { line },
            RunEventBody::Status { status, .. } => {
                self.batch.status_changed = true;
                RunItemKind::Status { status }
            }
            RunEventBody::Diff(diff) => {
                self.patch = Some(diff.patch);
                return;
            }
            RunEventBody::Sandbox(note) => RunItemKind::Sandbox {
                lines: crate::sandbox::event_lines(&note),
            },
            RunEventBody::Egress(note) => RunItemKind::Egress {
                allowed: note.record.allowed,
                line: note.line,
            },
            RunEventBody::Check(c) => RunItemKind::Check {
                ok: c.passed_check(),
                ending: c.ending_text(),
                duration: c.error.is_none().then(|| c.duration_text()),
                counts: c.counts_text(),
                command: c.command,
                tail: c.tail,
            },
            RunEventBody::Session(note) => RunItemKind::Session {
                resumed: note.resumed,
                text: note.text(),
            },
            RunEventBody::Agent(event) => match self.agent_event(event, e, prev) {
                Some(kind) => kind,
                None => return,
            },
            // The runner's own errors (over budget, unreachable, the event cap) read as errors.
            RunEventBody::Error { message } => RunItemKind::Error { message },
            RunEventBody::Push {
                remote,
                branch,
                commit,
            } => RunItemKind::Raw {
                line: format!(
                    "pushed {branch} ({}) to {remote}",
                    commit.get(..10).unwrap_or(&commit)
                ),
            },
            RunEventBody::Unknown { .. } => RunItemKind::Raw {
                line: format!("{}: {}", e.kind, e.payload),
            },
        };
        if !matches!(
            kind,
            RunItemKind::Text { .. } | RunItemKind::Thinking { .. }
        ) {
            self.open_text = None;
        }
        self.batch.items.push(RunItemView {
            seq: e.seq,
            at: e.at,
            kind,
        });
    }

    /// The entry for an agent event; `None` when it only changes the counters or an entry already made.
    fn agent_event(
        &mut self,
        event: AgentEvent,
        e: &RunEvent,
        prev: Option<Prev>,
    ) -> Option<RunItemKind> {
        // A request's provisional usage adds no entry: a streamed answer's pieces around it stay one
        // block (the turn's final `usage` ends the block).
        if !matches!(
            event,
            AgentEvent::Text { .. } | AgentEvent::Thinking { .. } | AgentEvent::TurnUsage(_)
        ) {
            self.open_text = None;
        }
        Some(match event {
            AgentEvent::Started {
                session_id,
                model,
                skills,
            } => {
                if model.is_some() {
                    self.model.clone_from(&model);
                }
                if !self.sessions.insert(session_id.clone()) && skills.is_empty() {
                    return None;
                }
                RunItemKind::Started {
                    session_id,
                    model,
                    skills,
                }
            }
            AgentEvent::Text { text } if self.text_deltas => return self.delta(e, false, &text),
            AgentEvent::Thinking { text } if self.text_deltas => {
                return self.delta(e, true, &text);
            }
            AgentEvent::Text { text } => {
                let html = to_safe_html(&text);
                self.last_text = Some(text);
                RunItemKind::Text { html }
            }
            AgentEvent::Thinking { text } => RunItemKind::Thinking { text },
            AgentEvent::ToolCall { id, name, input } => {
                self.open_calls.insert(id.clone(), self.batch.items.len());
                if let Some(cmd) = input.get("command").and_then(Value::as_str) {
                    self.call_commands.insert(id.clone(), cmd.to_owned());
                }
                self.prev = Some(Prev::Call { id: id.clone() });
                RunItemKind::ToolCall {
                    slot_id: self.slot_id(&id),
                    name,
                    input: long_text(&self.relative(&tool_input(&input))),
                    result: None,
                }
            }
            AgentEvent::ToolResult {
                id,
                output,
                is_error,
            } => {
                let result = ToolResultView {
                    output: long_text(&self.relative(&output)),
                    is_error,
                    exit_code: self.pending_exits.remove(&id).flatten(),
                };
                return self.place_result(&id, result, e);
            }
            AgentEvent::Command {
                cmd,
                exit_code,
                output,
            } => return self.command_of(prev, &cmd, exit_code, &output),
            AgentEvent::FileChange { path, change } => RunItemKind::FileChange {
                path: self.relative(&path),
                change: serde_json::to_value(change)
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_owned))
                    .unwrap_or_else(|| "update".to_owned()),
            },
            AgentEvent::Usage(u) => {
                self.add_usage(u);
                return None;
            }
            // Provisional: shown live until the final `usage` report, which covers it.
            AgentEvent::TurnUsage(u) => {
                self.turns.add_priced(u, self.model.as_deref(), &self.rates);
                self.batch.usage_changed = true;
                return None;
            }
            AgentEvent::Error { message, .. } => RunItemKind::Error { message },
            AgentEvent::Finished { ok, summary } => {
                // The summary usually repeats the last assistant text; show it once.
                let fresh = summary.filter(|s| {
                    !s.trim().is_empty()
                        && self.last_text.as_deref().map(str::trim) != Some(s.trim())
                });
                RunItemKind::Finished {
                    ok,
                    summary_html: fresh.map(|s| to_safe_html(&s)),
                }
            }
            AgentEvent::Speed {
                tokens_per_second,
                detail,
            } => {
                self.tokens_per_second = Some(tokens_per_second);
                self.batch.usage_changed = true;
                RunItemKind::Raw { line: detail }
            }
            AgentEvent::Notice { text } => RunItemKind::Raw { line: text },
            AgentEvent::Refused { tool, input } => RunItemKind::Error {
                message: format!("Permission refused: {tool} {}", self.relative(&input)),
            },
            AgentEvent::Raw { line } => RunItemKind::Raw { line },
        })
    }

    /// `text` with the run's worktree paths (`…/<run id>/work/src/x.rs`) relative to the repository
    /// (`src/x.rs`; the worktree itself is `.`): where the runner put the checkout says nothing.
    fn relative(&self, text: &str) -> String {
        let marker = self.worktree.as_str();
        if !text.contains(marker) {
            return text.to_owned();
        }
        let mut out = String::with_capacity(text.len());
        let mut rest = text;
        while let Some(at) = rest.find(marker) {
            // The path starts after the last separator before it (space, quote, `=`, bracket, newline).
            let start = rest[..at]
                .rfind(|c: char| c.is_whitespace() || "\"'`=([{,:".contains(c))
                .map_or(0, |i| i + 1);
            let after = &rest[at + marker.len()..];
            out.push_str(&rest[..start]);
            rest = match after.strip_prefix('/') {
                Some(inner) => inner,
                None if after.starts_with(|c: char| c.is_alphanumeric() || c == '-') => {
                    // Not this run's worktree (a longer name): keep it as it is.
                    out.push_str(&rest[start..at + marker.len()]);
                    after
                }
                None => {
                    out.push('.');
                    after
                }
            };
        }
        out.push_str(rest);
        out
    }

    /// What the run has spent so far: the final reports, and the requests none covers yet.
    pub(super) fn live_usage(&self) -> Usage {
        let mut all = self.usage;
        all += &self.turns;
        all
    }

    fn add_usage(&mut self, u: TokenUsage) {
        // The final report covers every request before it.
        self.turns = Usage::default();
        self.usage.add_priced(u, self.model.as_deref(), &self.rates);
        self.batch.usage_changed = true;
    }

    /// The DOM id of a call's result slot: the tool id when it is id-safe, else its hex.
    fn slot_id(&self, tool_id: &str) -> String {
        let safe = !tool_id.is_empty()
            && tool_id
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
        let part = if safe {
            tool_id.to_owned()
        } else {
            tool_id.bytes().map(|b| format!("{b:02x}")).collect()
        };
        format!("run-{}-result-{part}", self.run_id)
    }
}

/// What a tool was asked: a shell command as is, anything else as pretty JSON.
fn tool_input(input: &Value) -> String {
    if let Some(cmd) = input.get("command").and_then(Value::as_str) {
        return cmd.to_owned();
    }
    match input {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => serde_json::to_string_pretty(other).unwrap_or_default(),
    }
}

/// A text cut to its first lines for display, with the whole kept when it was cut.
pub(super) fn long_text(text: &str) -> LongTextView {
    let text = text.trim_end_matches('\n');
    let lines = text.lines().count();
    let mut end = text.len();
    if let Some((i, _)) = text.match_indices('\n').nth(SHOWN_LINES - 1) {
        end = i;
    }
    if end > SHOWN_CHARS {
        end = (0..=SHOWN_CHARS)
            .rev()
            .find(|&i| text.is_char_boundary(i))
            .unwrap_or(0);
    }
    LongTextView {
        shown: text[..end].to_owned(),
        full: (end < text.len()).then(|| text.to_owned()),
        lines,
    }
}

/// The diff section: the stat and the patch's lines, classified for colour.
pub(super) fn diff_view(stat: Option<&str>, patch: Option<&str>) -> RunDiffView {
    let all: Vec<&str> = patch.map(|p| p.lines().collect()).unwrap_or_default();
    const META: &[&str] = &["+++", "---", "diff ", "index ", "new file", "deleted file"];
    let kind = |l: &str| {
        if META.iter().any(|m| l.starts_with(m)) {
            "meta"
        } else if l.starts_with("@@") {
            "hunk"
        } else if l.starts_with('+') {
            "add"
        } else if l.starts_with('-') {
            "del"
        } else {
            "ctx"
        }
    };
    RunDiffView {
        stat: stat.map(str::to_owned).filter(|s| !s.trim().is_empty()),
        lines: all
            .iter()
            .take(MAX_DIFF_LINES)
            .map(|l| DiffLineView {
                kind: kind(l).to_owned(),
                text: (*l).to_owned(),
            })
            .collect(),
        omitted: all.len().saturating_sub(MAX_DIFF_LINES),
    }
}

mod once;
#[cfg(test)]
mod tests;
