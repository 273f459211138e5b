//! Runs as people and programs see them: list, show, cancel, retry, and [`follow`] — the one
//! implementation of "replay from a cursor, then live" (ARCHITECTURE.md §6, STYLE.md E) that the JSON
//! event stream, the run page's WebSocket and any other follower share.
//!
//! `follow` invariants:
//! - it subscribes to `Topic::Run` *before* its first store read, so an event committed between the read
//!   and the subscription is still announced to it;
//! - it never forwards a hub payload: a notification only makes it read the store after the last seq it
//!   sent, so every event is delivered exactly once, in seq order, whatever the hub dropped or repeated;
//! - while the run is live it delivers only the contiguous part of the log (`last + 1`, `last + 2`, …),
//!   so a batch stored out of order can never make it skip a seq; once the run is terminal it delivers
//!   whatever is stored;
//! - a lagging subscription (`Lagged`) just means "read the store again"; the producer never waits;
//! - when nothing contiguous is new, the run's status is read *before* the log is read again, so
//!   "terminal and nothing new" proves that the log is complete (the supervisor commits its last events
//!   before it finishes the run) and only then is [`FollowItem::Ended`] sent.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use futures_util::Stream;
use serde::Deserialize;
use tokio_util::sync::CancellationToken;

use super::{Caller, Error, Problems, Result, announce};
use crate::domain::{AgentName, IssueKey, Run, RunId, RunStatus, Seq, ValidationError};
use crate::engine::Engine;
use crate::hub::{LiveEvent, SharedEvent, Subscription, Topic};
use crate::store::{self, RunFilter};

/// Runs listed when no limit is given.
pub const DEFAULT_LIST_LIMIT: i64 = 50;
/// Most runs one list returns.
pub const MAX_LIST_LIMIT: i64 = 500;
/// How many events [`follow`] reads from the store at a time.
pub const FOLLOW_PAGE: i64 = 256;
/// [`FOLLOW_PAGE`] for the run's feed.
const FOLLOW_FEED: usize = 256;
/// How often a follower of a quiet run looks at the store without being told to: a fallback for ends
/// nobody announces (a run finished by another replica) — normally the hub wakes it at once.
pub const FOLLOW_POLL: Duration = Duration::from_secs(2);

/// Raw run-list filters as a program or person typed them; every field is optional.
#[derive(Debug, Clone, Default, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct RunListInput {
    /// Only runs on this issue (key, e.g. MUS-42).
    #[param(pattern = r"^\s*([A-Za-z]{2,10}-0*[1-9][0-9]{0,17})?\s*$")]
    pub issue: Option<String>,
    /// Only these statuses, comma-separated.
    #[param(value_type = Option<Vec<RunStatus>>, style = Form, explode = false)]
    pub status: Option<String>,
    /// Only runs of the agent with this name.
    #[param(pattern = r"^\s*([A-Za-z0-9._-]{1,64})?\s*$")]
    pub agent: Option<String>,
    /// Only runs whose id starts with these hex digits (hyphens optional), to find a run by a short id.
    #[param(pattern = r"^\s*([0-9A-Fa-f-]{1,36})?\s*$")]
    pub id_prefix: Option<String>,
    /// How many runs, newest first (default 50).
    #[param(value_type = Option<i64>, minimum = 1, maximum = 500)]
    pub limit: Option<String>,
}

/// One step of [`follow`].
// `Ended` is sent once per stream, so its size does not matter; unboxed it is simpler to match on.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq)]
pub enum FollowItem {
    /// The next event of the log, in seq order, each once (shared with the run's other viewers).
    Event(Arc<SharedEvent>),
    /// The run is terminal and every event has been sent; the stream ends after this.
    Ended(Run),
    /// Following failed (the run vanished, the store failed, the server is stopping); the stream ends
    /// after this and the client may resume from the last seq it got.
    Error(String),
}

/// A run of the caller's workspace; 404 for a run of another workspace, as if it did not exist.
pub async fn get(state: &Engine, caller: &Caller, id: RunId) -> Result<Run> {
    let run = state.store.get_run(id).await?;
    if run.workspace_id != caller.ws.id {
        return Err(Error::NotFound);
    }
    Ok(run)
}

/// The workspace's runs matching `filter`, newest first.
pub async fn list(state: &Engine, caller: &Caller, filter: &RunListInput) -> Result<Vec<Run>> {
    let filter = parse_filter(state, caller, filter).await?;
    Ok(state.store.list_runs(caller.ws.id, &filter).await?)
}

/// Validates raw filters into a [`RunFilter`], naming unknown issues and agents precisely.
async fn parse_filter(state: &Engine, caller: &Caller, raw: &RunListInput) -> Result<RunFilter> {
    let mut problems = Problems::default();
    let mut filter = RunFilter {
        limit: DEFAULT_LIST_LIMIT,
        ..RunFilter::default()
    };
    if let Some(key) = present(raw.issue.as_deref()) {
        match IssueKey::parse(key) {
            Ok(key) => match state.store.get_issue(caller.ws.id, &key).await {
                Ok(issue) => filter.issue = Some(issue.id),
                Err(store::Error::NotFound) => {
                    problems.add("issue", format!("no issue {key} in this workspace"));
                }
                Err(e) => return Err(e.into()),
            },
            Err(e) => problems.add("issue", e.message),
        }
    }
    if let Some(statuses) = present(raw.status.as_deref()) {
        for s in statuses.split(',').filter(|s| !s.trim().is_empty()) {
            if let Some(status) = problems.take(s.parse::<RunStatus>()) {
                filter.statuses.push(status);
            }
        }
    }
    if let Some(name) = present(raw.agent.as_deref()) {
        let unknown = || format!("no agent called {name:?} in this workspace");
        match AgentName::parse(name) {
            Ok(parsed) => match state.store.get_agent_by_name(caller.ws.id, &parsed).await {
                Ok(agent) => filter.agent = Some(agent.id),
                Err(store::Error::NotFound) => problems.add("agent", unknown()),
                Err(e) => return Err(e.into()),
            },
            Err(_) => problems.add("agent", unknown()),
        }
    }
    if let Some(limit) = present(raw.limit.as_deref())
        && let Some(n) = problems.take(parse_limit(limit))
    {
        filter.limit = n;
    }
    if let Some(prefix) = present(raw.id_prefix.as_deref()) {
        filter.id_prefix = problems.take(parse_id_prefix(prefix));
    }
    problems.finish()?;
    Ok(filter)
}

/// A run id prefix in the stored form: lowercase hex with hyphens where a whole id has them (after 8,
/// 12, 16 and 20 digits), whether or not the caller typed them.
fn parse_id_prefix(raw: &str) -> std::result::Result<String, ValidationError> {
    let digits: String = raw.chars().filter(|c| *c != '-').collect();
    if digits.is_empty() || digits.len() > 32 || !digits.chars().all(|c| c.is_ascii_hexdigit()) {
        return Err(ValidationError::new(
            "id_prefix",
            format!(
                "must be the start of a run id: 1 to 32 hex digits, hyphens optional (got {raw:?})"
            ),
        ));
    }
    let mut prefix = String::with_capacity(36);
    for (i, c) in digits.chars().enumerate() {
        if matches!(i, 8 | 12 | 16 | 20) {
            prefix.push('-');
        }
        prefix.push(c.to_ascii_lowercase());
    }
    Ok(prefix)
}

fn present(raw: Option<&str>) -> Option<&str> {
    raw.map(str::trim).filter(|s| !s.is_empty())
}

fn parse_limit(raw: &str) -> std::result::Result<i64, ValidationError> {
    match raw.parse::<i64>() {
        Ok(n) if (1..=MAX_LIST_LIMIT).contains(&n) => Ok(n),
        _ => Err(ValidationError::new(
            "limit",
            format!("must be a whole number from 1 to {MAX_LIST_LIMIT}, got {raw:?}"),
        )),
    }
}

/// Cancels a run of the caller's workspace: a queued run ends `cancelled` at once, a live one is
/// signalled (its process group is stopped and it ends `cancelled` shortly). Returns the run as it
/// stands now. 409 when the run has already ended.
pub async fn cancel(state: &Engine, caller: &Caller, id: RunId) -> Result<Run> {
    let run = get(state, caller, id).await?;
    if run.status.is_terminal() {
        return Err(already_ended(&run));
    }
    let now = state.cancel(id).await?;
    tracing::info!(run.id = %id, status = %now.status, "run cancel requested");
    note_cancel(state, caller, &now).await;
    announce_issue(state, caller, &now).await;
    Ok(now)
}

/// Says on the run's issue who cancelled it ("Cancelled by Lena Lead: coder's run."), so the thread tells
/// a person's stop apart from a failure. A failed write is only logged: the cancel itself happened.
async fn note_cancel(state: &Engine, caller: &Caller, run: &Run) {
    let agent = match state.store.get_agent(run.workspace_id, run.agent_id).await {
        Ok(a) => a.profile.name.as_str().to_owned(),
        Err(_) => "an agent".to_owned(),
    };
    let who = match &caller.run {
        Some(_) => format!("{agent} (through its run's token)"),
        None => caller.user.display_name.clone(),
    };
    let text = format!("Cancelled by {who}: {agent}'s run.");
    if let Err(e) = state.note_on_issue(run.issue_id, Some(run.id), &text).await {
        tracing::warn!(error = %e, run.id = %run.id, "cannot note who cancelled the run");
    }
}

fn already_ended(run: &Run) -> Error {
    Error::conflict(
        "status",
        format!("this run already ended as {}", run.status),
    )
}

/// Whether a run in `status` can be retried: it ended without succeeding.
pub fn retryable(status: RunStatus) -> bool {
    matches!(
        status,
        RunStatus::Failed | RunStatus::Cancelled | RunStatus::TimedOut | RunStatus::Interrupted
    )
}

/// Queues the next attempt of a run that ended failed, cancelled, timed out or interrupted: the same
/// agent on the same issue, `attempt + 1`, claimable at once. 409 when the run is not retryable or the
/// agent already has a live run on the issue.
pub async fn retry(state: &Engine, caller: &Caller, id: RunId) -> Result<Run> {
    let run = get(state, caller, id).await?;
    if !retryable(run.status) {
        let why = if run.status.is_terminal() {
            format!(
                "this run ended {}; only a failed, cancelled, timed out or interrupted run can be retried",
                run.status
            )
        } else {
            format!(
                "this run is still {}; cancel it first or wait for it to end",
                run.status
            )
        };
        return Err(Error::conflict("status", why));
    }
    let Some(queued) = state.requeue(&run, None).await? else {
        return Err(Error::conflict(
            "agent",
            "this agent already has a queued or live run on this issue; cancel it first",
        ));
    };
    tracing::info!(run.id = %queued.id, retry_of = %run.id, attempt = queued.attempt, "run retry queued");
    announce_issue(state, caller, &queued).await;
    Ok(queued)
}

/// Tells the board that the run's issue changed (its run indicator); a failed lookup is only logged.
async fn announce_issue(state: &Engine, caller: &Caller, run: &Run) {
    match state.store.get_issue_by_id(run.issue_id).await {
        Ok(issue) => announce(state, caller, &issue.key),
        Err(e) => tracing::warn!(error = %e, run.id = %run.id, "cannot announce the run's issue"),
    }
}

/// Follows a run's log from after `after`: every stored event with a greater seq, each once and in
/// order, then live ones as they are committed, then [`FollowItem::Ended`] once the run is terminal and
/// everything is sent. Checks no permission: callers look the run up with [`get`] first.
///
/// The subscription to the run's topic is taken before this returns, so nothing committed afterwards
/// can be missed. The stream also ends (with [`FollowItem::Error`]) when `shutdown` is cancelled (the
/// server is shutting down).
pub fn follow(
    state: &Engine,
    shutdown: CancellationToken,
    run: RunId,
    after: Seq,
) -> impl Stream<Item = FollowItem> + Send + use<> {
    let follower = Follower {
        run_events: state.hub.subscribe(Topic::Run(run)),
        state: state.clone(),
        shutdown,
        run,
        last_sent: after.max(0),
        announced: 0,
        store_due: true,
        buffer: VecDeque::new(),
        board: None,
        finished: false,
    };
    futures_util::stream::unfold(follower, |mut f| async move {
        let item = f.next().await?;
        Some((item, f))
    })
}

/// The state of one [`follow`] stream.
struct Follower {
    state: Engine,
    shutdown: CancellationToken,
    run: RunId,
    run_events: Subscription,
    /// The workspace board's topic and the run's issue key: the supervisor announces a finished run
    /// there (not on the run's topic), so a follower wakes at once when the run ends.
    board: Option<(Subscription, IssueKey)>,
    last_sent: Seq,
    /// The highest seq the run's topic announced as committed.
    announced: Seq,
    /// Whether the next read must ask the store: at the start, and after a wake-up that was not the
    /// announcement of new events (the poll tick, a change of the run's issue such as its end, a lag).
    store_due: bool,
    buffer: VecDeque<Arc<SharedEvent>>,
    finished: bool,
}

impl Follower {
    async fn next(&mut self) -> Option<FollowItem> {
        loop {
            if self.finished {
                return None;
            }
            if let Some(event) = self.buffer.pop_front() {
                self.last_sent = event.seq;
                return Some(FollowItem::Event(event));
            }
            match self.read().await {
                Ok(Some(ended)) => {
                    self.finished = true;
                    return Some(FollowItem::Ended(ended));
                }
                Ok(None) => {}
                Err(message) => {
                    self.finished = true;
                    return Some(FollowItem::Error(message));
                }
            }
            if self.buffer.is_empty() && !self.wait().await {
                self.finished = true;
                return Some(FollowItem::Error(
                    "the server is shutting down; reconnect to resume".to_owned(),
                ));
            }
        }
    }

    /// Reads what is new after `last_sent` into the buffer. `Ok(Some(run))` when the run is terminal and
    /// nothing is left to send. While events flow this is one query; the run itself is read only when
    /// nothing contiguous is new, and then *before* the log is read again, so "terminal and nothing new"
    /// proves the log complete.
    async fn read(&mut self) -> std::result::Result<Option<Run>, String> {
        if self.board.is_none() {
            let run = self.state.store.get_run(self.run).await.map_err(failed)?;
            let issue = self
                .state
                .store
                .get_issue_by_id(run.issue_id)
                .await
                .map_err(failed)?;
            let sub = self.state.hub.subscribe(Topic::Board(run.workspace_id));
            self.board = Some((sub, issue.key));
        }
        // The run's feed first: what the runner session just committed, shared by every viewer.
        if let Some(events) = self
            .state
            .hub
            .feed_after(self.run, self.last_sent, FOLLOW_FEED)
        {
            if !events.is_empty() {
                self.buffer.extend(events);
                return Ok(None);
            }
            // Caught up with the feed, and nothing announced past it: the store has nothing newer. (It
            // was read here at every wake-up: two queries per viewer per commit, measured as most of
            // the server's work with 500 viewers of one run.)
            if !self.store_due && self.announced <= self.last_sent {
                return Ok(None);
            }
        }
        self.store_due = false;
        let events = self.events().await?;
        if events.first().is_some_and(|e| e.seq == self.last_sent + 1) {
            let mut expected = self.last_sent + 1;
            for event in events {
                if event.seq != expected {
                    break; // a gap while live: wait for the missing seq rather than skip it
                }
                expected = event.seq + 1;
                self.buffer.push_back(event);
            }
            return Ok(None);
        }
        let run = self.state.store.get_run(self.run).await.map_err(failed)?;
        if !run.status.is_terminal() {
            return Ok(None);
        }
        let events = self.events().await?;
        if events.is_empty() {
            return Ok(Some(run));
        }
        self.buffer.extend(events);
        Ok(None)
    }

    async fn events(&self) -> std::result::Result<Vec<Arc<SharedEvent>>, String> {
        let events = self
            .state
            .store
            .run_events_since(self.run, self.last_sent, FOLLOW_PAGE)
            .await
            .map_err(failed)?;
        Ok(events.into_iter().map(SharedEvent::new).collect())
    }

    /// Waits until there may be something new: a notification past `last_sent`, a board change of the
    /// run's issue, a lag (resync), or the poll tick. `false` when the server is shutting down.
    async fn wait(&mut self) -> bool {
        let Self {
            shutdown,
            run_events,
            board,
            last_sent,
            announced,
            store_due,
            ..
        } = self;
        let tick = tokio::time::sleep(FOLLOW_POLL);
        tokio::pin!(tick);
        loop {
            tokio::select! {
                () = shutdown.cancelled() => return false,
                () = &mut tick => break,
                got = run_events.recv() => match got {
                    Ok(event) => match *event {
                        LiveEvent::RunEvents { last_seq, .. } if last_seq <= *last_sent => {}
                        LiveEvent::RunEvents { last_seq, .. } => {
                            *announced = (*announced).max(last_seq);
                            return true;
                        }
                        LiveEvent::IssueChanged(_) => break,
                    },
                    Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => break,
                    // Cannot happen while we hold a receiver; fall back to the poll tick.
                    Err(tokio::sync::broadcast::error::RecvError::Closed) => {
                        (&mut tick).await;
                        break;
                    }
                },
                got = recv_board(board) => match got {
                    Some(true) => break,
                    Some(false) => {}
                    None => {
                        (&mut tick).await;
                        break;
                    }
                },
            }
        }
        *store_due = true;
        true
    }
}

/// A store error as a [`FollowItem::Error`] message.
fn failed(e: store::Error) -> String {
    match e {
        store::Error::NotFound => "run not found".to_owned(),
        other => format!("cannot read the run's log: {other}"),
    }
}

/// The next board notification: `Some(true)` when it may concern the run (its issue changed, or the
/// subscription lagged), `Some(false)` for other issues, `None` when there is no board subscription.
async fn recv_board(board: &mut Option<(Subscription, IssueKey)>) -> Option<bool> {
    let (sub, key) = board.as_mut()?;
    match sub.recv().await {
        Ok(event) => Some(matches!(&*event, LiveEvent::IssueChanged(k) if k == key)),
        Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => Some(true),
        Err(tokio::sync::broadcast::error::RecvError::Closed) => None,
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn id_prefixes_take_the_stored_form() {
        let p = |raw| super::parse_id_prefix(raw);
        assert_eq!(p("0A1B").unwrap(), "0a1b");
        assert_eq!(p("0a1b2c3d4e5f").unwrap(), "0a1b2c3d-4e5f");
        assert_eq!(p("0a1b2c3d-4e5f").unwrap(), "0a1b2c3d-4e5f");
        assert!(p("0a1g").is_err());
        assert!(p("--").is_err());
        assert!(p(&"a".repeat(33)).is_err());
    }
}
