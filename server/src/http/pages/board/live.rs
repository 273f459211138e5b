//! `GET /w/{slug}/live`: the board's WebSocket, which pushes what a board change changed for what the
//! reader is shown (see [`board_socket`]).

use std::collections::HashMap;
use std::time::Duration;

use axum::extract::ws::{Message, WebSocket, WebSocketUpgrade};
use axum::extract::{Query, State};
use axum::http::HeaderMap;
use axum::response::IntoResponse;

use super::super::PageResult;
use super::super::views::People;
use super::{BoardQuery, board_columns, ended_frame, same_origin};
use crate::http::Error;
use crate::http::extract::{WsMember, credential_hash};
use crate::hub::{LiveEvent, Topic};
use crate::live::LiveGuard;
use crate::service::Caller;
use crate::state::AppState;

/// How often an idle board socket is pinged, so dead connections are noticed.
const PING_EVERY: Duration = Duration::from_secs(30);

pub(super) async fn open(
    State(state): State<AppState>,
    member: WsMember,
    Query(query): Query<BoardQuery>,
    headers: HeaderMap,
    upgrade: WebSocketUpgrade,
) -> PageResult {
    if !same_origin(&headers) {
        return Err(Error::Forbidden.into());
    }
    let guard = state
        .live
        .open(
            member.caller.user.id,
            member.caller.ws.id,
            credential_hash(&headers),
        )
        .map_err(Error::from)?;
    Ok(upgrade
        .on_upgrade(move |socket| board_socket(state, member.caller, query, socket, guard))
        .into_response())
}

/// Pushes what changed on the board after every change. Subscribes before rendering anything, so no
/// change is missed; a lagging socket simply re-renders (the board is read from the store each time).
/// Each column's first page is compared with what this socket last sent: a changed page is sent whole,
/// an unchanged one only gets its count, and a changed issue on no first page is removed from the
/// reader's further pages (it is counted where it now is, and "show more" finds it there).
async fn board_socket(
    state: AppState,
    caller: Caller,
    query: BoardQuery,
    mut socket: WebSocket,
    guard: LiveGuard,
) {
    let mut events = state.hub.subscribe(Topic::Board(caller.ws.id));
    let mut ping = tokio::time::interval(PING_EVERY);
    ping.tick().await;
    // What the reader has: the board as it is now that the socket listens (the page was just read).
    let mut sent = SentPages::default();
    if let Err(e) = live_frame(&state, &caller, &query, &mut sent, None).await {
        tracing::warn!(error = %e, "cannot render the live board");
    }
    loop {
        tokio::select! {
            event = events.recv() => {
                let changed = match event {
                    Err(tokio::sync::broadcast::error::RecvError::Closed) => break,
                    Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => None,
                    Ok(event) => match &*event {
                        LiveEvent::IssueChanged(key) => Some(key.to_string()),
                        LiveEvent::RunEvents { .. } => None,
                    },
                };
                let html = match live_frame(&state, &caller, &query, &mut sent, changed.as_deref()).await {
                    Ok(html) => html,
                    Err(e) => {
                        tracing::warn!(error = %e, "cannot render the live board");
                        continue;
                    }
                };
                if !html.is_empty() && socket.send(Message::Text(html.into())).await.is_err() {
                    break;
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
            () = state.shutdown.cancelled() => break,
            () = guard.stopped() => {
                let _ = socket.send(Message::Close(Some(ended_frame()))).await;
                break;
            }
        }
    }
}

/// What a board socket last sent of each column, by status: its first page (cards, in order, as
/// rendered, and whether more follow) and its count.
#[derive(Default)]
struct SentPages(HashMap<String, (String, i64)>);

/// The frame for one board change (empty when nothing a reader sees changed): whole columns whose first
/// page changed, the counts of the others, and the removal of `changed` when it is on no first page.
async fn live_frame(
    state: &AppState,
    caller: &Caller,
    query: &BoardQuery,
    sent: &mut SentPages,
    changed: Option<&str>,
) -> crate::http::Result<String> {
    let people = People::load(state, caller).await?;
    let columns = board_columns(state, caller, query, &people).await?;
    let mut frame = String::new();
    for col in &columns {
        let mut page: String = col
            .cards
            .iter()
            .map(|c| muster_web::partials::issue_card(c).into_string())
            .collect();
        page.push_str(if col.more.is_some() { "+" } else { "" });
        let part = match sent.0.get(&col.status) {
            Some((p, total)) if *p == page && *total == col.total => None,
            Some((p, _)) if *p == page => Some(muster_web::partials::column_count_oob(col)),
            _ => Some(muster_web::partials::board_columns_oob(
                std::slice::from_ref(col),
            )),
        };
        if let Some(part) = part {
            frame.push_str(&part.into_string());
        }
        sent.0.insert(col.status.clone(), (page, col.total));
    }
    if let Some(key) = changed
        && !columns
            .iter()
            .any(|c| c.cards.iter().any(|card| card.key == key))
    {
        frame.push_str(&muster_web::partials::card_removal_oob(key).into_string());
    }
    Ok(frame)
}
