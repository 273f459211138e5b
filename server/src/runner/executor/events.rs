//! A run's event log on the way out: numbering (seq from the order's `next_seq`), redaction
//! (`crate::redact`), and batches handed to the runner's outbox, which keeps them until the server has
//! stored them. Batching is a group commit: an event goes out at once when nothing of the run is in
//! flight; while a batch is being stored, what arrives meanwhile waits and goes out as one batch when
//! the server acknowledges (or at [`FLUSH_COUNT`] events, or [`FLUSH_FALLBACK`] after the first pending
//! one when no acknowledgement comes). A quiet run's line is stored and shown after one commit, not
//! after a fixed window; a busy run's lines are stored in batches as large as the store's speed makes
//! them. Also the running tally (usage, session, summary, last error) the finish step needs.

use std::time::Duration;

use chrono::Utc;
use muster_agents::{AgentEvent, RateTable};
use tokio::time::Instant;

use crate::domain::failure::ErrorTrack;
use crate::domain::{NewRunEvent, RunEventBody, Seq, Usage};
use crate::redact::Redactor;
use crate::runner::core::Link;
use crate::runner::protocol::{Held, ToServer};

/// Pending events that go out even while a batch is in flight (one message's most).
pub(super) const FLUSH_COUNT: usize = 512;
/// Longest time an event waits for the batch in flight to be acknowledged before it goes out anyway
/// (a connection being re-established, a server that refused the run).
pub(super) const FLUSH_FALLBACK: Duration = Duration::from_millis(250);
/// Numbers, redacts and batches a run's events.
pub(super) struct EventLog {
    held: Held,
    next_seq: Seq,
    pending: Vec<NewRunEvent>,
    first_pending: Option<Instant>,
    /// The last seq handed to the outbox: in flight until the server acknowledges it.
    sent: Seq,
    redactor: Redactor,
    /// The most events stored for the run (see [`EventLog::set_cap`]).
    cap: Seq,
    /// What the run has spent, when that changed since the last batch went out.
    spent: Option<Usage>,
}

impl EventLog {
    /// A log numbering from `next_seq`.
    pub(super) fn new(held: Held, next_seq: Seq, redactor: Redactor) -> Self {
        Self {
            held,
            next_seq: next_seq.max(1),
            pending: Vec::new(),
            first_pending: None,
            sent: 0,
            redactor,
            cap: Seq::MAX,
            spent: None,
        }
    }

    /// Notes what the run has spent so far; the next batch carries it to the server.
    pub(super) fn note_spent(&mut self, spent: Usage) {
        self.spent = Some(spent);
    }

    /// Queues one event; the caller flushes when [`EventLog::must_flush`] says so or at [`EventLog::due`].
    pub(super) fn push(&mut self, body: impl Into<RunEventBody>) {
        let (kind, mut payload) = body.into().into_parts();
        self.redactor.json(&mut payload);
        self.pending.push(NewRunEvent {
            seq: self.next_seq,
            at: Utc::now(),
            kind,
            payload,
        });
        self.next_seq += 1;
        self.first_pending.get_or_insert_with(Instant::now);
    }

    pub(super) fn must_flush(&self) -> bool {
        self.pending.len() >= FLUSH_COUNT
    }

    /// Whether events wait to be sent.
    pub(super) fn has_pending(&self) -> bool {
        !self.pending.is_empty()
    }

    /// Whether the pending events should go out now, given the highest seq the server acknowledged:
    /// nothing of the run is in flight, or the batch is full.
    pub(super) fn ready(&self, acked: Seq) -> bool {
        self.has_pending() && (acked >= self.sent || self.must_flush())
    }

    /// When the oldest pending event goes out even without an acknowledgement, if any is pending.
    pub(super) fn due(&self) -> Option<Instant> {
        self.first_pending.map(|t| t + FLUSH_FALLBACK)
    }

    /// The seq of the last event numbered so far (0 before any).
    pub(super) fn last_seq(&self) -> Seq {
        (self.next_seq - 1).min(self.cap)
    }

    /// Hands the pending events to the outbox (the server stores, then publishes, then acknowledges).
    pub(super) fn flush(&mut self, link: &Link) {
        self.keep_within_cap();
        if self.pending.is_empty() {
            return;
        }
        let events = std::mem::take(&mut self.pending);
        self.first_pending = None;
        self.sent = events.last().map_or(self.sent, |e| e.seq);
        link.keep(ToServer::Events {
            run_id: self.held.run_id,
            epoch: self.held.epoch,
            from_seq: events[0].seq,
            events,
            spent: self.spent.take(),
        });
    }
}

impl EventLog {
    /// Stores at most `cap` events for the run: the `cap`-th becomes the notice of the cap (so the log
    /// says why it ends), later ones are dropped. The watch loop stops the run once [`EventLog::capped`].
    pub(super) fn set_cap(&mut self, cap: Seq) {
        self.cap = cap.max(1);
    }

    /// Whether the run has produced as many events as its cap allows.
    pub(super) fn capped(&self) -> bool {
        self.next_seq > self.cap
    }

    /// Drops pending events past the cap and turns the one at the cap into its notice.
    fn keep_within_cap(&mut self) {
        let cap = self.cap;
        self.pending.retain(|e| e.seq <= cap);
        if let Some(last) = self.pending.last_mut().filter(|e| e.seq == cap) {
            (last.kind, last.payload) = RunEventBody::error(cap_message(cap)).into_parts();
        }
        if self.pending.is_empty() {
            self.first_pending = None;
        }
    }
}

/// Why a run that reached its event cap was stopped: its last event, its failure summary.
pub(super) fn cap_message(cap: Seq) -> String {
    format!("stopped: the run reached the cap of {cap} events")
}

/// What a run has said so far that decides how it ends.
#[derive(Debug, Default)]
pub(super) struct Tally {
    /// The CLI's final usage reports (`Usage` events), priced.
    pub usage: Usage,
    /// The turns (`TurnUsage` events) since the last `Usage` report, priced: what the run has spent
    /// that no final report covers yet. Budgets count both; a run stopped mid-way keeps it.
    pub turns: Usage,
    /// Whether a final `Usage` report has come: turns reported after it (Codex's session log is read
    /// a little behind its stdout) are already covered.
    pub reported: bool,
    /// Why the run engine stopped the run, when a guard did (the budget's figures).
    pub stop_note: Option<String>,
    pub session_id: Option<String>,
    pub model: Option<String>,
    pub last_text: Option<String>,
    pub finished: Option<(bool, Option<String>)>,
    /// The decisive error so far (see [`ErrorTrack`]).
    pub errors: ErrorTrack,
    /// The worktree's diff stat against its base, when the run had a worktree and changed something.
    pub diff_stat: Option<String>,
    /// Whether the run changed its worktree (or its change could not be read): an interrupted run is
    /// then left to a person instead of being re-queued.
    pub changed: bool,
    /// The run's start and the commit its work became (what is recorded, compared, pushed and merged).
    pub commits: Option<(String, String)>,
    /// Why the run's work could not be committed: a run that otherwise succeeded then fails with
    /// [`FailureReason::Git`](crate::domain::FailureReason::Git).
    pub git_error: Option<String>,
    /// Connections the egress proxy or the sandbox refused.
    pub egress: EgressTrack,
    /// Tool calls the agent made, and those its CLI refused under its permission mode (the first
    /// refusal in words).
    pub tool_calls: usize,
    pub refused: usize,
    pub first_refusal: Option<String>,
    /// The agent's permission mode, to say which mode refused.
    pub permission_mode: Option<String>,
}

/// What the run's refused connections say about its failure.
#[derive(Debug, Default)]
pub(super) struct EgressTrack {
    /// The TCP ports the sandbox let the agent connect to directly (empty: unsandboxed).
    pub direct_ports: Vec<u16>,
    /// The last refusal, in words: host, port, why, what to change.
    refused: Option<String>,
}

impl EgressTrack {
    /// Notes a connection the proxy refused.
    pub(super) fn proxy_refused(&mut self, record: &crate::egress::Record) {
        self.refused = Some(format!(
            "the egress proxy refused {}:{}: {}",
            record.host,
            record.port,
            record.why.as_deref().unwrap_or("not allowed")
        ));
    }

    /// Whether a network (or unclassified) error the CLI reported is explained by a refused connection:
    /// one the proxy refused before, or a direct connection the sandbox refused (Bun's
    /// `FailedToOpenSocket`, `EACCES`), which is then noted.
    pub(super) fn blames(&mut self, message: &str) -> bool {
        if self.refused.is_some() {
            return true;
        }
        if let Some(at) = message.find(crate::egress::REFUSAL_MARK) {
            // The proxy's answer, quoted by the CLI before the proxy's own record arrived.
            let said = message[at + crate::egress::REFUSAL_MARK.len()..].trim();
            self.refused = Some(format!("the egress proxy refused a connection: {said}"));
            return true;
        }
        let lower = message.to_lowercase();
        let sandbox = !self.direct_ports.is_empty()
            && [
                "failedtoopensocket",
                "eacces",
                "permission denied",
                "operation not permitted",
            ]
            .iter()
            .any(|w| lower.contains(w));
        if sandbox {
            let ports: Vec<String> = self.direct_ports.iter().map(ToString::to_string).collect();
            self.refused = Some(format!(
                "the sandbox refused a direct connection ({}): the agent may connect directly only to \
                 ports {} (its egress proxy, Muster's API and a model server on this machine); set the \
                 model server as the agent's Base URL or its CLI's base-URL variable (e.g. \
                 ANTHROPIC_BASE_URL), or allow the host in the agent's egress allow-list",
                message.trim(),
                ports.join(", ")
            ));
        }
        sandbox
    }

    /// The refusal that explains the run's failure, if any.
    pub(super) fn refusal(&self) -> Option<&str> {
        self.refused.as_deref()
    }
}

impl Tally {
    /// Takes one event into account.
    pub(super) fn add(&mut self, event: &AgentEvent, rates: &RateTable) {
        match event {
            AgentEvent::Started {
                session_id, model, ..
            } => {
                self.session_id = Some(session_id.clone());
                if model.is_some() {
                    self.model.clone_from(model);
                }
            }
            AgentEvent::Text { text } => self.last_text = Some(text.clone()),
            AgentEvent::Usage(u) => {
                // The final report covers every turn before it.
                self.turns = Usage::default();
                self.reported = true;
                self.usage.add_priced(*u, self.model.as_deref(), rates);
            }
            AgentEvent::TurnUsage(u) if !self.reported => {
                self.turns.add_priced(*u, self.model.as_deref(), rates);
            }
            AgentEvent::Error { .. } => self.errors.add(event),
            AgentEvent::ToolCall { .. } => self.tool_calls += 1,
            AgentEvent::Refused { tool, input } => {
                self.refused += 1;
                if self.first_refusal.is_none() {
                    self.first_refusal = Some(format!("{tool} `{input}`"));
                }
            }
            AgentEvent::Finished { ok, summary } => self.finished = Some((*ok, summary.clone())),
            _ => {}
        }
    }

    /// Every token counted so far, final reports and turns not yet covered by one, for token budgets.
    pub(super) fn total_tokens(&self) -> i64 {
        self.usage.tokens() + self.turns.tokens()
    }

    /// Everything spent so far, final reports and turns not yet covered by one.
    pub(super) fn spent(&self) -> Usage {
        let mut all = self.usage;
        all += &self.turns;
        all
    }

    /// Whether the agent tried tools and its CLI refused every call: the run did nothing it was asked.
    pub(super) fn all_refused(&self) -> bool {
        self.refused > 0 && self.refused >= self.tool_calls
    }

    /// What the run has cost so far, final reports and turns not yet covered by one.
    pub(super) fn cost_usd(&self) -> f64 {
        self.usage.cost_usd + self.turns.cost_usd
    }

    /// Folds the turns no final report covered into the usage (a run stopped before its CLI's last
    /// report still records what it spent).
    pub(super) fn settle(&mut self) {
        let turns = std::mem::take(&mut self.turns);
        self.usage += &turns;
    }

    /// The summary to record: why a guard stopped the run, else the `Finished` summary, else the last
    /// assistant text.
    pub(super) fn summary(&self) -> Option<String> {
        self.stop_note
            .clone()
            .or_else(|| self.finished.as_ref().and_then(|(_, s)| s.clone()))
            .or_else(|| self.last_text.clone())
            .filter(|s| !s.trim().is_empty())
    }
}
