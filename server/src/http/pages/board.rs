//! The board: columns of cards, filters, the new-issue form, moves (drag and drop or the card menu), the
//! card menu and the command palette's data, and the live WebSocket that pushes re-rendered columns
//! when anyone changes the board.

mod menu;
mod palette;

use std::collections::HashMap;
use std::time::Duration;

use axum::Router;
use axum::extract::ws::{Message, WebSocket, WebSocketUpgrade};
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::IntoResponse;
use axum::routing::{get, post};
use muster_web::views::{
    BoardColumnView, BoardFilterView, BoardView, IssueCardView, NavItem, OptionView,
};
use serde::Deserialize;

use super::inbox::nav_with_inbox;
use super::runs::{Waiting, card_run_state};
use super::views::{People, card, issue_form, issue_form_with_errors, issue_input, status_label};
use super::{PageResult, form_errors, invalid, see_other};
use crate::app::AppState;
use crate::domain::{IssueFilter, IssueStatus, Label, Priority};
use crate::http::Error;
use crate::http::extract::{HxRequest, UiForm, WsMember, credential_hash};
use crate::hub::Topic;
use crate::live::LiveGuard;
use crate::service::Caller;
use crate::service::issues as svc;

/// How often an idle board socket is pinged, so dead connections are noticed.
const PING_EVERY: Duration = Duration::from_secs(30);

pub(super) fn router() -> Router<AppState> {
    Router::new()
        .route("/w/{slug}", get(show))
        .route("/w/{slug}/issues", post(create))
        .route("/w/{slug}/issues/{key}/move", post(move_card))
        .route("/w/{slug}/issues/{key}/menu", get(menu::show))
        .route("/w/{slug}/issues/{key}/assign", post(menu::assign))
        .route("/w/{slug}/palette", get(palette::show))
        .route("/w/{slug}/live", get(live))
}

/// The board's filter, from the query string.
#[derive(Debug, Clone, Default, Deserialize)]
pub(super) struct BoardQuery {
    #[serde(default)]
    q: String,
    #[serde(default)]
    assignee: String,
    #[serde(default)]
    label: String,
    #[serde(default)]
    priority: String,
    #[serde(default)]
    hidden: String,
}

impl BoardQuery {
    fn query_string(&self) -> String {
        serde_urlencoded::to_string([
            ("q", &self.q),
            ("assignee", &self.assignee),
            ("label", &self.label),
            ("priority", &self.priority),
            ("hidden", &self.hidden),
        ])
        .unwrap_or_default()
    }
}

/// The board's columns for `caller`, filtered as `query` says (unknown filter values match nothing).
pub(crate) async fn board_columns(
    state: &AppState,
    caller: &Caller,
    query: &BoardQuery,
    people: &People,
) -> crate::http::Result<Vec<BoardColumnView>> {
    let statuses: &[IssueStatus] = if query.hidden == "1" {
        IssueStatus::ALL
    } else {
        IssueStatus::BOARD
    };
    let mut filter = IssueFilter {
        statuses: statuses.to_vec(),
        text: Some(query.q.clone()),
        ..Default::default()
    };
    if !query.assignee.is_empty() {
        filter.assignee = svc::resolve_assignee(state, caller, &query.assignee)
            .await?
            .ok()
            .flatten();
    }
    filter.label = Label::parse(&query.label).ok();
    filter.priority = query.priority.parse::<Priority>().ok();
    let issues = state.store.list_issues(caller.ws.id, &filter).await?;
    let runs: HashMap<_, _> = state
        .store
        .latest_runs(caller.ws.id)
        .await?
        .into_iter()
        .map(|r| (r.issue_id, r))
        .collect();
    let waiting = Waiting::load(state, caller.ws.id, runs.values()).await?;
    let slug = caller.ws.slug.to_string();
    Ok(statuses
        .iter()
        .map(|s| BoardColumnView {
            status: s.to_string(),
            label: status_label(*s).to_owned(),
            cards: issues
                .iter()
                .filter(|i| i.status == *s)
                .map(|i| IssueCardView {
                    run_state: runs.get(&i.id).and_then(card_run_state),
                    run_waiting: runs.get(&i.id).and_then(|r| waiting.reason(r)),
                    ..card(&slug, i, people)
                })
                .collect(),
        })
        .collect())
}

fn filter_view(query: &BoardQuery, people: &People, labels: &[String]) -> BoardFilterView {
    let pick = |value: &str, label: &str, current: &str| OptionView {
        value: value.into(),
        label: label.into(),
        selected: value == current,
    };
    let mut assignee = people.assignee_options(&query.assignee);
    assignee[0].label = "Anyone".into();
    let mut label = vec![pick("", "Any label", &query.label)];
    label.extend(labels.iter().map(|l| pick(l, l, &query.label)));
    let mut priority = vec![pick("", "Any priority", &query.priority)];
    priority.extend(
        Priority::ALL
            .iter()
            .map(|p| pick(p.as_str(), p.as_str(), &query.priority)),
    );
    BoardFilterView {
        q: query.q.clone(),
        assignee,
        label,
        priority,
        show_hidden: query.hidden == "1",
        active: !(query.q.is_empty()
            && query.assignee.is_empty()
            && query.label.is_empty()
            && query.priority.is_empty()),
    }
}

async fn board_view(
    state: &AppState,
    member: &WsMember,
    query: &BoardQuery,
) -> crate::http::Result<BoardView> {
    let people = People::load(state, &member.caller).await?;
    let columns = board_columns(state, &member.caller, query, &people).await?;
    let all = state
        .store
        .list_issues(member.caller.ws.id, &IssueFilter::default())
        .await?;
    let mut labels: Vec<String> = all
        .iter()
        .flat_map(|i| i.labels.iter().map(|l| l.as_str().to_owned()))
        .collect();
    labels.sort();
    labels.dedup();
    Ok(BoardView {
        nav: nav_with_inbox(state, member, NavItem::Board).await?,
        columns,
        filter: filter_view(query, &people, &labels),
        new_issue: issue_form(
            &people,
            "",
            "",
            IssueStatus::NEW_ISSUE_DEFAULT.as_str(),
            "none",
            "",
            "",
        ),
        live_url: format!("/w/{}/live?{}", member.caller.ws.slug, query.query_string()),
    })
}

async fn show(
    State(state): State<AppState>,
    member: WsMember,
    Query(query): Query<BoardQuery>,
) -> PageResult {
    let view = board_view(&state, &member, &query).await?;
    Ok(muster_web::pages::board(&view).into_response())
}

async fn create(State(state): State<AppState>, member: WsMember, form: UiForm) -> PageResult {
    match svc::create(&state, &member.caller, &issue_input(&form)).await {
        Ok(_) => Ok(see_other(&format!("/w/{}", member.caller.ws.slug))),
        Err(e) => {
            let errors = form_errors(e)?;
            let mut view = board_view(&state, &member, &BoardQuery::default()).await?;
            let people = People::load(&state, &member.caller).await?;
            view.new_issue = issue_form_with_errors(&people, &form, errors);
            Ok(invalid(muster_web::pages::board(&view)))
        }
    }
}

async fn move_card(
    State(state): State<AppState>,
    member: WsMember,
    Path((_, key)): Path<(String, String)>,
    HxRequest(hx): HxRequest,
    form: UiForm,
) -> PageResult {
    let index =
        match form.get("index") {
            "" => None,
            raw => Some(raw.parse::<usize>().map_err(|_| {
                Error::invalid([("index", "must be a position (0, 1, …)".to_owned())])
            })?),
        };
    svc::move_to(
        &state,
        &member.caller,
        &svc::parse_key(&key)?,
        form.get("status"),
        index,
    )
    .await?;
    if hx {
        Ok(StatusCode::NO_CONTENT.into_response())
    } else {
        Ok(see_other(&format!("/w/{}", member.caller.ws.slug)))
    }
}

/// Whether a WebSocket's `Origin` is this server (browsers send it; a cross-site page cannot fake it).
pub(super) fn same_origin(headers: &HeaderMap) -> bool {
    let host = headers.get(header::HOST).and_then(|v| v.to_str().ok());
    match (
        headers.get(header::ORIGIN).and_then(|v| v.to_str().ok()),
        host,
    ) {
        (None, _) => true,
        (Some(origin), Some(host)) => origin
            .split_once("://")
            .is_some_and(|(_, rest)| rest == host),
        (Some(_), None) => false,
    }
}

async fn live(
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

/// Pushes the re-rendered columns after every board change. Subscribes before rendering anything, so no
/// change is missed; a lagging socket simply re-renders (the board is read from the store each time).
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
    loop {
        tokio::select! {
            event = events.recv() => {
                if matches!(event, Err(tokio::sync::broadcast::error::RecvError::Closed)) {
                    break;
                }
                let html = match render_columns(&state, &caller, &query).await {
                    Ok(html) => html,
                    Err(e) => {
                        tracing::warn!(error = %e, "cannot render the live board");
                        continue;
                    }
                };
                if socket.send(Message::Text(html.into())).await.is_err() {
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

/// The close frame of a socket whose session ended or whose person left the workspace.
pub(super) fn ended_frame() -> axum::extract::ws::CloseFrame {
    axum::extract::ws::CloseFrame {
        code: axum::extract::ws::close_code::POLICY,
        reason: "signed out, or no longer a member of this workspace".into(),
    }
}

async fn render_columns(
    state: &AppState,
    caller: &Caller,
    query: &BoardQuery,
) -> crate::http::Result<String> {
    let people = People::load(state, caller).await?;
    let columns = board_columns(state, caller, query, &people).await?;
    Ok(muster_web::partials::board_columns_oob(&columns).into_string())
}
