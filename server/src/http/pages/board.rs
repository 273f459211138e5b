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
    BoardColumnView, BoardFilterView, BoardView, ColumnMoreView, ColumnPageView, IssueCardView,
    NavItem, OptionView,
};
use serde::Deserialize;

use super::inbox::nav_with_inbox;
use super::runs::{Waiting, card_run_state};
use super::views::{People, card, issue_form, issue_form_with_errors, issue_input, status_label};
use super::{PageResult, form_errors, invalid, see_other};
use crate::app::AppState;
use crate::domain::{
    Issue, IssueCursor, IssueFilter, IssueId, IssueStatus, Label, Priority, Run,
};
use crate::http::Error;
use crate::http::extract::{HxRequest, UiForm, WsMember, credential_hash};
use crate::hub::{LiveEvent, Topic};
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
        .route("/w/{slug}/columns/{status}", get(column))
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

/// Cards a column shows before its "show more" (and cards each "show more" adds): enough to fill a
/// screen, few enough that the board stays light at any number of issues.
pub(crate) const COLUMN_PAGE: i64 = 40;

impl BoardQuery {
    fn statuses(&self) -> &'static [IssueStatus] {
        if self.hidden == "1" {
            IssueStatus::ALL
        } else {
            IssueStatus::BOARD
        }
    }
}

/// The database filter of the board's filter bar, for every column (unknown values match nothing).
async fn issue_filter(
    state: &AppState,
    caller: &Caller,
    query: &BoardQuery,
) -> crate::http::Result<IssueFilter> {
    let mut filter = IssueFilter {
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
    Ok(filter)
}

/// What cards need besides their issue, read once per render: people, and the latest run of each issue.
struct CardContext<'a> {
    slug: String,
    people: &'a People,
    runs: HashMap<IssueId, Run>,
    waiting: Waiting,
}

impl<'a> CardContext<'a> {
    async fn load(state: &AppState, caller: &Caller, people: &'a People) -> crate::http::Result<Self> {
        let runs: HashMap<_, _> = state
            .store
            .latest_runs(caller.ws.id)
            .await?
            .into_iter()
            .map(|r| (r.issue_id, r))
            .collect();
        let waiting = Waiting::load(state, caller.ws.id, runs.values()).await?;
        Ok(Self {
            slug: caller.ws.slug.to_string(),
            people,
            runs,
            waiting,
        })
    }

    fn card(&self, issue: &Issue) -> IssueCardView {
        let run = self.runs.get(&issue.id);
        IssueCardView {
            run_state: run.and_then(card_run_state),
            run_waiting: run.and_then(|r| self.waiting.reason(r)),
            ..card(&self.slug, issue, self.people)
        }
    }
}

/// Where a column page starts and what it counts: the column, the cursor (`None`: the top), the
/// column's count under the filter, and how many of those lie from the cursor on.
struct PageAt {
    status: IssueStatus,
    after: Option<IssueCursor>,
    total: i64,
    from_here: i64,
}

/// One page of a column, with the next page's link when more follow. `base` is the filter without a
/// status.
async fn column_page(
    state: &AppState,
    caller: &Caller,
    query: &BoardQuery,
    base: &IssueFilter,
    at: PageAt,
    cx: &CardContext<'_>,
) -> crate::http::Result<BoardColumnView> {
    let page = usize::try_from(COLUMN_PAGE).unwrap_or(usize::MAX);
    let filter = IssueFilter {
        statuses: vec![at.status],
        after: at.after,
        limit: Some(COLUMN_PAGE + 1),
        ..base.clone()
    };
    let mut issues = state.store.list_issues(caller.ws.id, &filter).await?;
    let more = issues.len() > page;
    issues.truncate(page);
    let shown = i64::try_from(issues.len()).unwrap_or(i64::MAX);
    let next = issues.last().filter(|_| more).map(|last| ColumnMoreView {
        url: column_url(&cx.slug, at.status, IssueCursor::after(last), query),
        rest: (at.from_here - shown).max(1),
    });
    Ok(BoardColumnView {
        status: at.status.to_string(),
        label: status_label(at.status).to_owned(),
        cards: issues.iter().map(|i| cx.card(i)).collect(),
        total: at.total,
        more: next,
    })
}

fn column_url(slug: &str, status: IssueStatus, after: IssueCursor, query: &BoardQuery) -> String {
    let after = serde_urlencoded::to_string([("after", after.to_string())]).unwrap_or_default();
    format!("/w/{slug}/columns/{status}?{after}&{}", query.query_string())
}

/// How many issues `filter` matches in `status` (0 when none).
fn count_of(counts: &[(IssueStatus, i64)], status: IssueStatus) -> i64 {
    counts
        .iter()
        .find(|(s, _)| *s == status)
        .map_or(0, |(_, n)| *n)
}

/// The board's columns for `caller`, filtered as `query` says: each column's first page and its count
/// (one grouped count in the database; no column is read past its first page).
pub(crate) async fn board_columns(
    state: &AppState,
    caller: &Caller,
    query: &BoardQuery,
    people: &People,
) -> crate::http::Result<Vec<BoardColumnView>> {
    let statuses = query.statuses();
    let base = issue_filter(state, caller, query).await?;
    let all_columns = IssueFilter {
        statuses: statuses.to_vec(),
        ..base.clone()
    };
    let counts = state.store.count_issues(caller.ws.id, &all_columns).await?;
    let cx = CardContext::load(state, caller, people).await?;
    let mut columns = Vec::with_capacity(statuses.len());
    for &status in statuses {
        let total = count_of(&counts, status);
        let at = PageAt {
            status,
            after: None,
            total,
            from_here: total,
        };
        columns.push(column_page(state, caller, query, &base, at, &cx).await?);
    }
    Ok(columns)
}

/// `GET /w/{slug}/columns/{status}?after=…` plus the board's filter: the next page of a column. With
/// htmx, its cards to append and the next "show more"; without, a page of its own.
async fn column(
    State(state): State<AppState>,
    member: WsMember,
    Path((_, status)): Path<(String, String)>,
    Query(query): Query<BoardQuery>,
    Query(paging): Query<ColumnQuery>,
    HxRequest(hx): HxRequest,
) -> PageResult {
    let caller = &member.caller;
    let status = status.parse::<IssueStatus>().map_err(|_| {
        Error::Rejected(
            StatusCode::NOT_FOUND,
            "status",
            format!("the board has no column {status:?}"),
        )
    })?;
    let after = parse_column_cursor(&paging.after, status)?;
    let base = issue_filter(&state, caller, &query).await?;
    let column = IssueFilter {
        statuses: vec![status],
        ..base.clone()
    };
    let total = count_of(&state.store.count_issues(caller.ws.id, &column).await?, status);
    let from_here = match after {
        None => total,
        Some(after) => {
            let rest = IssueFilter {
                after: Some(after),
                ..column
            };
            count_of(&state.store.count_issues(caller.ws.id, &rest).await?, status)
        }
    };
    let people = People::load(&state, caller).await?;
    let cx = CardContext::load(&state, caller, &people).await?;
    let at = PageAt {
        status,
        after,
        total,
        from_here,
    };
    let view = column_page(&state, caller, &query, &base, at, &cx).await?;
    if hx {
        return Ok(muster_web::partials::column_page_fragment(&view).into_response());
    }
    let board_url = match query.query_string() {
        q if q.is_empty() => format!("/w/{}", caller.ws.slug),
        q => format!("/w/{}?{q}", caller.ws.slug),
    };
    Ok(muster_web::pages::column_page(&ColumnPageView {
        nav: nav_with_inbox(&state, &member, NavItem::Board).await?,
        board_url,
        column: view,
    })
    .into_response())
}

/// The `after` of a column page.
#[derive(Debug, Default, Deserialize)]
struct ColumnQuery {
    #[serde(default)]
    after: String,
}

/// A column page's cursor: empty for the top, else a cursor this column handed out (400 otherwise).
fn parse_column_cursor(raw: &str, status: IssueStatus) -> crate::http::Result<Option<IssueCursor>> {
    if raw.trim().is_empty() {
        return Ok(None);
    }
    let cursor = raw
        .parse::<IssueCursor>()
        .map_err(|e| Error::Rejected(StatusCode::BAD_REQUEST, "after", e.message))?;
    if cursor.status != status {
        return Err(Error::Rejected(
            StatusCode::BAD_REQUEST,
            "after",
            format!(
                "{raw:?} is a cursor of the {} column, not of {status}; pass the link's own `after`",
                cursor.status
            ),
        ));
    }
    Ok(Some(cursor))
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
    // The filter's label choices, from the database (the board no longer reads every issue for them).
    let labels: Vec<String> = state
        .store
        .list_issue_labels(member.caller.ws.id)
        .await?
        .iter()
        .map(|l| l.as_str().to_owned())
        .collect();
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

/// The close frame of a socket whose session ended or whose person left the workspace.
pub(super) fn ended_frame() -> axum::extract::ws::CloseFrame {
    axum::extract::ws::CloseFrame {
        code: axum::extract::ws::close_code::POLICY,
        reason: "signed out, or no longer a member of this workspace".into(),
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
            _ => Some(muster_web::partials::board_columns_oob(std::slice::from_ref(col))),
        };
        if let Some(part) = part {
            frame.push_str(&part.into_string());
        }
        sent.0.insert(col.status.clone(), (page, col.total));
    }
    if let Some(key) = changed
        && !columns.iter().any(|c| c.cards.iter().any(|card| card.key == key))
    {
        frame.push_str(&muster_web::partials::card_removal_oob(key).into_string());
    }
    Ok(frame)
}
