//! `GET /w/{slug}/runs/{id}/live?after={seq}`: the run page's WebSocket. It follows the run with
//! [`svc::follow`] (subscribe, replay after the page's cursor, then live: each event once, in order) and
//! pushes HTML fragments for htmx's `ws` extension: new timeline entries, results into their calls, the
//! counters, the header when the status or stall changed, the moved cursor, and at the end the final
//! header and the diff, after which it closes normally (so the browser does not reconnect).
//!
//! A browser that lost the socket reconnects with the cursor the page holds (`app.js` rewrites `after`),
//! so nothing is shown twice or missed.

use std::time::Duration;

use axum::extract::ws::{CloseFrame, Message, WebSocket, close_code};
use axum::extract::{Path, Query, State, WebSocketUpgrade};
use axum::http::HeaderMap;
use axum::response::IntoResponse;
use futures_util::StreamExt as _;
use muster_web::views::{RunHeaderView, RunLiveFrame};
use serde::Deserialize;

use super::timeline::{Timeline, diff_view};
use super::{
    READ_PAGE, RunPlace, agent_model, counters_view, header_view, parse_run_id, streams_text_deltas,
};
use crate::domain::{Issue, Run, Seq};
use crate::http::Error;
use crate::http::extract::{WsMember, credential_hash};
use crate::http::pages::PageResult;
use crate::http::pages::board::{ended_frame, same_origin};
use crate::http::pages::views::People;
use crate::live::LiveGuard;
use crate::service::runs::{self as svc, FollowItem};
use crate::state::AppState;

/// Most events rendered into one push; more that are ready go in the next one.
const FRAME_EVENTS: usize = 128;
/// How long a push may show the run's row (status, times) as last read before reading it again; a
/// `status` event or the end reads it at once. Keeps a busy run's viewers from each reading the row at
/// every push.
const RUN_FRESH: Duration = Duration::from_secs(1);
/// How long one push may wait for a page that does not read before the socket is dropped.
const SEND_STALL: Duration = Duration::from_secs(30);
/// How often an idle socket is pinged, so dead connections are noticed.
const PING_EVERY: Duration = Duration::from_secs(30);

/// The cursor the page sends: the last seq it shows.
#[derive(Debug, Deserialize)]
pub(in crate::http::pages) struct LiveQuery {
    #[serde(default)]
    after: Seq,
}

pub(in crate::http::pages) async fn live(
    State(state): State<AppState>,
    member: WsMember,
    Path((_, id)): Path<(String, String)>,
    Query(query): Query<LiveQuery>,
    headers: HeaderMap,
    upgrade: WebSocketUpgrade,
) -> PageResult {
    if !same_origin(&headers) {
        return Err(Error::Forbidden.into());
    }
    let run = svc::get(&state, &member.caller, parse_run_id(&id)?).await?;
    let people = People::load(&state, &member.caller).await?;
    let issue = state.store.get_issue_by_id(run.issue_id).await?;
    let page = Page {
        slug: member.caller.ws.slug.to_string(),
        csrf: member.csrf,
        people,
        issue,
    };
    let after = query.after.max(0);
    let guard = state
        .live
        .open(
            member.caller.user.id,
            member.caller.ws.id,
            credential_hash(&headers),
        )
        .map_err(Error::from)?;
    Ok(upgrade
        .on_upgrade(move |socket| run_socket(state, page, run, after, socket, guard))
        .into_response())
}

/// What the fragments need besides the run.
struct Page {
    slug: String,
    csrf: String,
    people: People,
    issue: Issue,
}

/// What one push does to the socket.
enum Push {
    Frame(String),
    /// The last frame; close normally after it.
    Last(String),
    /// Following failed: close with "try again later" so the browser reconnects from its cursor.
    Failed(String),
}

async fn run_socket(
    state: AppState,
    page: Page,
    run: Run,
    after: Seq,
    mut socket: WebSocket,
    guard: LiveGuard,
) {
    let mut fold = Timeline::new(run.id.to_string(), agent_model(&page.people, &run))
        .with_text_deltas(streams_text_deltas(&page.people, &run));
    if let Err(e) = prime(&state, &mut fold, &run, after).await {
        tracing::warn!(error = %e, run.id = %run.id, "cannot read the run's log for its socket");
        close(&mut socket, close_code::AGAIN, "cannot read the run's log").await;
        return;
    }
    let place = RunPlace::load(&state, &run).await.unwrap_or_else(|e| {
        tracing::debug!(error = %e, "cannot place the run among its issue's runs");
        RunPlace::default()
    });
    let mut shown = Shown {
        synced: false,
        header: header_view(&page.slug, &run, &page.issue, &page.people, &place),
        place,
        started_at: run.started_at,
        run: run.clone(),
        read_at: tokio::time::Instant::now(),
    };
    let follow =
        svc::follow(&state, state.shutdown.clone(), run.id, after).ready_chunks(FRAME_EVENTS);
    tokio::pin!(follow);
    let mut ping = tokio::time::interval(PING_EVERY);
    ping.tick().await;
    loop {
        tokio::select! {
            chunk = follow.next() => {
                let Some(chunk) = chunk else { break };
                match render(&state, &page, &run, &mut fold, &mut shown, chunk).await {
                    Push::Frame(html) => {
                        // A page that has not taken a push for this long is dropped rather than
                        // waited on: its browser reconnects from the cursor it holds (and reads the
                        // store from there), so nothing is lost and nothing piles up here.
                        let sent = tokio::time::timeout(SEND_STALL, socket.send(Message::Text(html.into()))).await;
                        if !matches!(sent, Ok(Ok(()))) {
                            break;
                        }
                    }
                    Push::Last(html) => {
                        if socket.send(Message::Text(html.into())).await.is_ok() {
                            close(&mut socket, close_code::NORMAL, "the run ended").await;
                        }
                        break;
                    }
                    Push::Failed(why) => {
                        close(&mut socket, close_code::AGAIN, &why).await;
                        break;
                    }
                }
            }
            incoming = socket.recv() => match incoming {
                Some(Ok(Message::Close(_))) | None | Some(Err(_)) => break,
                Some(Ok(_)) => {}
            },
            _ = ping.tick() => {
                if socket.send(Message::Ping(Vec::new().into())).await.is_err() {
                    break;
                }
            }
            () = guard.stopped() => {
                let _ = socket.send(Message::Close(Some(ended_frame()))).await;
                break;
            }
        }
    }
}

async fn close(socket: &mut WebSocket, code: u16, reason: &str) {
    let reason: String = reason.chars().take(100).collect();
    let _ = socket
        .send(Message::Close(Some(CloseFrame {
            code,
            reason: reason.into(),
        })))
        .await;
}

/// Folds the events the page already shows (seq ≤ `after`), for the counters' totals and to know which
/// tool calls are on the page.
async fn prime(
    state: &AppState,
    fold: &mut Timeline,
    run: &Run,
    after: Seq,
) -> crate::store::Result<()> {
    let mut cursor = 0;
    while cursor < after {
        let events = state
            .store
            .run_events_since(run.id, cursor, READ_PAGE)
            .await?;
        let Some(last) = events.last() else { break };
        cursor = last.seq;
        events
            .iter()
            .filter(|e| e.seq <= after)
            .for_each(|e| fold.push(e));
    }
    fold.take();
    fold.last_seq = fold.last_seq.max(after);
    Ok(())
}

/// What the page shows now, to push the header and clock only when they change.
struct Shown {
    /// `false` until the first push: the page may have been rendered before the run changed (e.g. a
    /// cancel's redirect lands before the run has ended), so the first push always carries the header.
    synced: bool,
    header: RunHeaderView,
    /// The run's number on its issue and its runner's name, as last read.
    place: RunPlace,
    started_at: Option<chrono::DateTime<chrono::Utc>>,
    /// The run's row as last read, and when.
    run: Run,
    read_at: tokio::time::Instant,
}

/// One push for a chunk of follow items.
async fn render(
    state: &AppState,
    page: &Page,
    run: &Run,
    fold: &mut Timeline,
    shown: &mut Shown,
    chunk: Vec<FollowItem>,
) -> Push {
    let mut ended = None;
    for item in chunk {
        match item {
            FollowItem::Event(e) => fold.push(&e),
            FollowItem::Ended(r) => ended = Some(r),
            FollowItem::Error(why) => return Push::Failed(why),
        }
    }
    let batch = fold.take();
    let now = match &ended {
        Some(r) => r.clone(),
        None if !shown.synced || batch.status_changed || shown.read_at.elapsed() >= RUN_FRESH => {
            shown.read_at = tokio::time::Instant::now();
            state
                .store
                .get_run(run.id)
                .await
                .unwrap_or_else(|_| shown.run.clone())
        }
        None => shown.run.clone(),
    };
    shown.place.follow(state, &now).await;
    let header = header_view(&page.slug, &now, &page.issue, &page.people, &shown.place);
    let header_changed = !shown.synced || ended.is_some() || header != shown.header;
    let clock_changed = now.started_at != shown.started_at;
    let usage = if now.status.is_terminal() {
        now.usage
    } else {
        fold.live_usage()
    };
    let frame = RunLiveFrame {
        run_id: run.id.to_string(),
        items: batch.items,
        results: batch.results,
        replaced: batch.replaced,
        counters: (batch.usage_changed || clock_changed || ended.is_some())
            .then(|| counters_view(&now, &page.people, &usage, fold.tokens_per_second)),
        header: header_changed.then(|| header.clone()),
        diff: ended
            .as_ref()
            .map(|r| diff_view(r.diff_stat.as_deref(), fold.patch.as_deref())),
        last_seq: fold.last_seq,
    };
    shown.synced = true;
    shown.header = header;
    shown.started_at = now.started_at;
    shown.run = now;
    let html = muster_web::pages::run_live_frame(&frame, &page.csrf).into_string();
    if ended.is_some() {
        Push::Last(html)
    } else {
        Push::Frame(html)
    }
}
