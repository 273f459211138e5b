//! The watch loop of a running child: one `select!` over output lines, child exit, the run's stop
//! signal, the stall watchdog and the batch flush timer. (Leases are renewed by the runner's heartbeat,
//! for all its runs at once.)
//!
//! Guards: an auth-classified error stops the run at once (CLIs otherwise retry a 401 for minutes); usage
//! past the agent's budget stops it gracefully after the turn that crossed it (each model request's usage
//! counts as it is reported, `TurnUsage`, not only the CLI's final report), with an `error` event saying
//! what was spent; reaching the event cap stops it; no output for the stall timeout flags the run `stalled`
//! (the server records it, tells the inbox and the board) and a second timeout stops it; any output
//! clears the flag. An error from the CLI that may mean "no connection" (unclassified, network), or a
//! quiet agent, has the runner check its model server again ([`ModelWatch`]): when nothing accepts
//! connections there any more, the run ends as unreachable instead of after the CLI's minutes of retries.

use std::time::Duration;

use muster_agents::{Adapter, AgentEvent, ErrorClass, RateTable};
use muster_llama::probe::Unreachable;
use tokio::process::Child;
use tokio::sync::mpsc;
use tokio::time::{Instant, MissedTickBehavior};

use super::ending::{Ending, Stop};
use super::events::{EventLog, Tally};
use super::run::{Host, RunSignal};
use crate::domain::{Budget, RunEventBody, StopWhy};
use crate::runner::core::Link;
use crate::runner::protocol::{Order, ToServer};

/// After the child exits (or is stopped), how long to wait for the rest of its output.
const DRAIN_WAIT: Duration = Duration::from_secs(2);
/// The watchdog's finest and coarsest tick.
const WATCHDOG_TICK: (Duration, Duration) = (Duration::from_millis(50), Duration::from_secs(1));

/// One output line of the child.
pub(super) enum Line {
    Out(String),
    Err(String),
    /// A line of the CLI's own usage log ([`muster_agents::Adapter::usage_log_dir`]).
    UsageLog(String),
    /// A connection through the run's egress proxy.
    Egress(crate::egress::Record),
}

/// What the watch loop needs to know about its run.
pub(super) struct Watch<'a> {
    pub host: &'a Host,
    pub order: &'a Order,
    pub link: &'a Link,
    pub adapter: &'a dyn Adapter,
    pub signal: &'a RunSignal,
    /// Where the agent's model server should accept connections ([`super::prepare::Prepared::model_probe`]).
    pub model_probe: Option<&'a str>,
}

/// How often, at most, the runner checks the agent's model server while the run goes on.
const REPROBE_EVERY: Duration = Duration::from_secs(5);
/// How long an agent may be quiet before the runner checks its model server.
const QUIET_PROBE_AFTER: Duration = Duration::from_secs(5);
/// Checks in a row, made while the agent was quiet, that found nothing listening before the run ends (a
/// CLI that retries silently, as OpenCode does, says nothing; a server restarting for a few seconds is
/// given that long).
const QUIET_MISSES: u32 = 3;

/// A check of the model server in flight.
type Probe = std::pin::Pin<Box<dyn std::future::Future<Output = Result<(), Unreachable>> + Send>>;

/// The runner's checks of the agent's model server while the run goes on: after a CLI's error that may
/// mean "no connection" (one miss ends the run, the CLI has already failed to connect), and while the agent
/// is quiet ([`QUIET_MISSES`] in a row end it).
struct ModelWatch<'a> {
    url: Option<&'a str>,
    probe: Option<Probe>,
    /// When the last check started.
    at: Option<Instant>,
    /// The check in flight follows an error of the CLI's.
    after_error: bool,
    /// Quiet checks in a row that found nothing listening.
    misses: u32,
    /// An error blamed a refused connection: the run ends for it once the model server is known up.
    egress_blamed: bool,
}

/// What a finished check of the model server means for the run.
enum Checked {
    Fine,
    EgressRefused,
    /// Nothing accepts connections at the model server's address.
    Unreachable(Unreachable),
}

impl<'a> ModelWatch<'a> {
    fn new(url: Option<&'a str>) -> Self {
        ModelWatch {
            url,
            probe: None,
            at: None,
            after_error: false,
            misses: 0,
            egress_blamed: false,
        }
    }

    /// Starts a check unless one is in flight or (unless `now`) one started lately.
    fn start(&mut self, after_error: bool, now: bool) {
        let Some(url) = self.url else { return };
        if self.probe.is_some() || (!now && self.at.is_some_and(|at| at.elapsed() < REPROBE_EVERY))
        {
            return;
        }
        self.at = Some(Instant::now());
        self.after_error = after_error;
        let url = url.to_owned();
        self.probe = Some(Box::pin(async move {
            muster_llama::probe::accepts_connections(&url, super::prepare::PROBE_TIMEOUT).await
        }));
    }

    /// What one line's errors ask for; `Some` when the run must end now (nothing to check first).
    fn after_line(&mut self, taken: &Taken) -> Option<Ending> {
        if taken.egress_blamed && self.url.is_none() {
            return Some(Ending::Stopped(Stop::EgressRefused, None));
        }
        self.egress_blamed |= taken.egress_blamed;
        if taken.egress_blamed || taken.connection_error {
            self.start(true, taken.egress_blamed);
        }
        None
    }

    async fn next(&mut self) -> Result<(), Unreachable> {
        match self.probe.as_mut() {
            Some(probe) => probe.await,
            None => std::future::pending().await,
        }
    }

    fn finished(&mut self, result: Result<(), Unreachable>) -> Checked {
        self.probe = None;
        match result {
            Ok(()) => {
                self.misses = 0;
                if self.egress_blamed {
                    Checked::EgressRefused
                } else {
                    Checked::Fine
                }
            }
            Err(why) if self.after_error => Checked::Unreachable(why),
            Err(why) => {
                self.misses += 1;
                if self.misses >= QUIET_MISSES {
                    Checked::Unreachable(why)
                } else {
                    Checked::Fine
                }
            }
        }
    }
}

/// Runs until the child exits or a guard, cancel or shutdown says stop. Does not stop the child.
pub(super) async fn watch(
    ctx: &Watch<'_>,
    child: &mut Child,
    lines: &mut mpsc::Receiver<Line>,
    log: &mut EventLog,
    tally: &mut Tally,
) -> Ending {
    let t = &ctx.host.timing;
    let stall = t.stall_override.unwrap_or_else(|| {
        Duration::from_secs(u64::try_from(ctx.order.agent.stall_timeout_secs.max(1)).unwrap_or(1))
    });
    let tick = (stall / 4).clamp(WATCHDOG_TICK.0, WATCHDOG_TICK.1);
    let mut watchdog = tokio::time::interval(tick);
    watchdog.set_missed_tick_behavior(MissedTickBehavior::Delay);
    let rates = ctx.order.rates.clone().unwrap_or_default();
    let mut last_output = Instant::now();
    let mut stalled = false;
    let mut open = true;
    log.set_cap(ctx.order.max_events);
    // Group commit: a line goes out at once when nothing is in flight, else with the next acknowledgement.
    let mut acks = ctx.link.acks(ctx.order.run_id);
    let mut acks_open = true;
    if log.ready(*acks.borrow()) {
        flush(ctx, log); // what the run said before its child's first line (its session, …)
    }
    let mut model = ModelWatch::new(ctx.model_probe);
    loop {
        let due = log.due();
        tokio::select! {
            () = ctx.signal.token().cancelled() => {
                if ctx.signal.is_lost() {
                    return Ending::LeaseLost;
                }
                if ctx.signal.is_shutdown() {
                    return Ending::Stopped(Stop::Shutdown, None);
                }
                return Ending::Stopped(server_stop(ctx, log, tally), None);
            }
            // A shared budget or a monthly cap spent stops the agent after the turn that spent it; once
            // the CLI gave its final report there is no next turn to save, and the run ends as it will.
            () = ctx.signal.spent().cancelled(), if !tally.reported => {
                return Ending::Stopped(server_stop(ctx, log, tally), None);
            }
            status = child.wait() => {
                return Ending::Exited(status.ok().and_then(|s| s.code()));
            }
            line = lines.recv(), if open => {
                let Some(line) = line else { open = false; continue };
                last_output = Instant::now();
                if stalled {
                    stalled = false;
                    set_stalled(ctx, log, false);
                }
                let taken = take_line(ctx, line, log, tally, &rates, true);
                if let Some(end) = taken.end {
                    return end;
                }
                if let Some(end) = model.after_line(&taken) {
                    return end;
                }
                if log.capped() {
                    return Ending::Stopped(Stop::EventCap(ctx.order.max_events), None);
                }
                if log.ready(*acks.borrow()) {
                    flush(ctx, log);
                }
            }
            changed = acks.changed(), if acks_open && log.has_pending() => match changed {
                Ok(()) => {
                    if log.ready(*acks.borrow_and_update()) {
                        flush(ctx, log);
                    }
                }
                // The outbox forgot the run: what is pending goes out at its fallback time.
                Err(_) => acks_open = false,
            },
            checked = model.next() => match model.finished(checked) {
                Checked::Fine => {}
                Checked::EgressRefused => return Ending::Stopped(Stop::EgressRefused, None),
                Checked::Unreachable(why) => {
                    let note = format!(
                        "nothing accepts a connection at {why} any more, its base URL's address; \
                         the model server stopped or became unreachable while the agent worked"
                    );
                    log.push(RunEventBody::error(note.clone()));
                    tally.stop_note = Some(note);
                    return Ending::Stopped(Stop::Unreachable, None);
                }
            },
            () = sleep_until(due), if due.is_some() => flush(ctx, log),
            _ = watchdog.tick() => {
                let quiet = last_output.elapsed();
                if stalled && quiet >= stall * 2 {
                    return Ending::Stopped(Stop::Stalled, None);
                }
                if !stalled && quiet >= stall {
                    stalled = true;
                    set_stalled(ctx, log, true);
                }
                if quiet >= QUIET_PROBE_AFTER {
                    model.start(false, false);
                }
            }
        }
    }
}

/// Reads what is left of the output after the child ended, for at most [`DRAIN_WAIT`].
pub(super) async fn drain(
    ctx: &Watch<'_>,
    lines: &mut mpsc::Receiver<Line>,
    log: &mut EventLog,
    tally: &mut Tally,
) {
    let rates = ctx.order.rates.clone().unwrap_or_default();
    let deadline = Instant::now() + DRAIN_WAIT;
    while let Ok(Some(line)) = tokio::time::timeout_at(deadline, lines.recv()).await {
        // Guards no longer matter: the child is gone, only the events and the tally do.
        take_line(ctx, line, log, tally, &rates, false);
        if log.must_flush() {
            flush(ctx, log);
        }
    }
}

async fn sleep_until(due: Option<Instant>) {
    match due {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

fn flush(ctx: &Watch<'_>, log: &mut EventLog) {
    if !ctx.signal.is_lost() {
        log.flush(ctx.link);
    }
}

/// What one line of the child brought.
#[derive(Default)]
struct Taken {
    /// A guard (checked when asked) says the run must stop.
    end: Option<Ending>,
    /// The CLI reported an error that may mean it cannot reach its model server: one the server did not
    /// answer itself (an HTTP status would say auth, rate limit, configuration or server).
    connection_error: bool,
    /// The error follows a connection the egress proxy or the sandbox refused.
    egress_blamed: bool,
}

/// Turns one line into events, checking the guards when `guard`.
fn take_line(
    ctx: &Watch<'_>,
    line: Line,
    log: &mut EventLog,
    tally: &mut Tally,
    rates: &RateTable,
    guard: bool,
) -> Taken {
    let events = match line {
        Line::Err(text) => {
            log.push(RunEventBody::Stderr { line: text });
            return Taken::default();
        }
        Line::Out(text) => ctx.adapter.parse_line(&text),
        Line::UsageLog(text) => ctx.adapter.parse_usage_log_line(&text),
        Line::Egress(record) => {
            if record.refused() {
                tally.egress.proxy_refused(&record);
            }
            log.push(RunEventBody::Egress(record.into()));
            return Taken::default();
        }
    };
    let mut end = None;
    let mut connection_error = false;
    let mut egress_blamed = false;
    for mut event in events {
        // A CLI that quotes the proxy's 403 may call it an auth failure (Claude Code: "Failed to
        // authenticate. API Error: 403 Muster egress proxy refused: …"): it is a refused connection.
        if let AgentEvent::Error { message, class } = &mut event
            && message.contains(crate::egress::REFUSAL_MARK)
        {
            *class = Some(ErrorClass::Network);
        }
        if let AgentEvent::Error { class, .. } = &event {
            connection_error |=
                matches!(class, None | Some(ErrorClass::Network | ErrorClass::Other));
        }
        tally.add(&event, rates);
        if matches!(event, AgentEvent::Usage(_) | AgentEvent::TurnUsage(_)) {
            log.note_spent(tally.spent());
        }
        if let AgentEvent::Error {
            class: Some(ErrorClass::Auth),
            ..
        } = event
        {
            end = end.or(Some(Ending::Stopped(Stop::Auth, None)));
        }
        // A CLI that reports an error after a refused connection would retry into the same wall for
        // minutes: the run ends now, saying which host and port and what to change (once the model
        // server is known to be up, when there is one to check: a CLI whose model server went away
        // fails for that, whatever else it was refused before).
        if let AgentEvent::Error { message, class } = &event
            && (*class == Some(ErrorClass::Network)
                || (class.is_none() && crate::egress::about_connecting(message)))
            && tally.egress.blames(message)
        {
            egress_blamed = true;
        }
        log.push(event);
    }
    if guard
        && end.is_none()
        && tally.stop_note.is_none()
        && let Some(note) = over_budget(ctx.order.agent.budget, tally)
    {
        // Checked after every line, so after every turn's usage: the run stops after the turn that
        // crossed its budget.
        log.push(RunEventBody::error(note.clone()));
        tally.stop_note = Some(note);
        end = Some(Ending::Stopped(Stop::OverBudget, None));
    }
    Taken {
        end,
        connection_error,
        egress_blamed,
    }
}

/// How a stop the server asked for ends the run: a person's cancel or an ensemble's early stop ends it
/// `cancelled` (the note, if any, becomes its summary); a shared budget spent ends it over budget, like
/// its own budget would, with the note in its log.
fn server_stop(ctx: &Watch<'_>, log: &mut EventLog, tally: &mut Tally) -> Stop {
    let Some(note) = ctx.signal.why() else {
        return Stop::Cancelled;
    };
    match note.why {
        StopWhy::OverBudget | StopWhy::OverCap => {
            log.push(RunEventBody::error(note.note.clone()));
            tally.stop_note = Some(note.note);
            if note.why == StopWhy::OverCap {
                Stop::OverCap
            } else {
                Stop::OverBudget
            }
        }
        StopWhy::EarlyStop | StopWhy::Person => {
            log.push(RunEventBody::Status {
                status: "cancelled".to_owned(),
                reason: Some(note.note.clone()),
            });
            tally.stop_note = Some(note.note);
            Stop::Cancelled
        }
    }
}

/// Why the run is over its budget (what it spent against what it may), if it is.
fn over_budget(budget: Budget, tally: &Tally) -> Option<String> {
    let spent = tally.cost_usd();
    if let Some(usd) = budget.usd.filter(|usd| spent > *usd) {
        return Some(format!(
            "stopped over budget: this run has spent ${spent:.4}, more than the agent's budget of \
             ${usd:.4} per run; raise the budget on the agent's page to let it go further"
        ));
    }
    let used = tally.total_tokens();
    budget.tokens.filter(|tokens| used > *tokens).map(|tokens| {
        format!(
            "stopped over budget: this run has used {used} tokens, more than the agent's budget of \
             {tokens} tokens per run; raise the budget on the agent's page to let it go further"
        )
    })
}

/// Flags (or clears) the stall: in the log, and to the server (which records it, tells the inbox and
/// the board).
fn set_stalled(ctx: &Watch<'_>, log: &mut EventLog, stalled: bool) {
    let status = if stalled { "stalled" } else { "running" };
    log.push(RunEventBody::Status {
        status: status.to_owned(),
        reason: None,
    });
    flush(ctx, log);
    if stalled {
        tracing::warn!("run stalled: no output for the stall timeout");
    }
    ctx.link.note(ToServer::Stalled {
        run_id: ctx.order.run_id,
        epoch: ctx.order.epoch,
        stalled,
    });
}
