//! The board's columns, a page at a time: each column's first page and count for the board and its
//! live socket, and `GET /w/{slug}/columns/{status}?after=…` for the pages after it ("show more").

use std::collections::HashMap;

use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::IntoResponse;
use muster_web::views::{BoardColumnView, ColumnMoreView, ColumnPageView, IssueCardView, NavItem};
use serde::Deserialize;

use super::super::PageResult;
use super::super::inbox::nav_with_inbox;
use super::super::plans::CardPlans;
use super::super::runs::{Waiting, card_run_state};
use super::super::views::{People, card, status_label};
use super::BoardQuery;
use crate::domain::{Issue, IssueCursor, IssueFilter, IssueId, IssueStatus, Label, Priority, Run};
use crate::http::Error;
use crate::http::extract::{HxRequest, WsMember};
use crate::service::Caller;
use crate::service::issues as svc;
use crate::state::AppState;

/// Cards a column shows before its "show more" (and cards each "show more" adds): enough to fill a
/// screen, few enough that the board stays light at any number of issues.
pub(crate) const COLUMN_PAGE: i64 = 40;

impl BoardQuery {
    pub(super) fn statuses(&self) -> &'static [IssueStatus] {
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
    if !query.project.trim().is_empty() {
        // An unknown project matches nothing.
        filter.project = Some(
            crate::service::projects::typed_project(state, caller, &query.project)
                .await?
                .ok()
                .flatten()
                .unwrap_or_else(crate::domain::ProjectId::new),
        );
    }
    Ok(filter)
}

/// What cards need besides their issue, read once per render: people, and the latest run of each issue.
struct CardContext<'a> {
    slug: String,
    people: &'a People,
    runs: HashMap<IssueId, Run>,
    waiting: Waiting,
    ensembles: HashMap<IssueId, String>,
    pulls: HashMap<IssueId, muster_web::views::CardPullView>,
}

impl<'a> CardContext<'a> {
    async fn load(
        state: &AppState,
        caller: &Caller,
        people: &'a People,
    ) -> crate::http::Result<Self> {
        let runs: HashMap<_, _> = state
            .store
            .latest_runs(caller.ws.id)
            .await?
            .into_iter()
            .map(|r| (r.issue_id, r))
            .collect();
        let waiting = Waiting::load(state, caller.ws.id, runs.values()).await?;
        let ensembles = crate::service::ensembles::board_badges(state, caller.ws.id).await?;
        let pulls = super::super::pulls::card_pulls(state, caller.ws.id).await?;
        Ok(Self {
            slug: caller.ws.slug.to_string(),
            people,
            runs,
            waiting,
            ensembles,
            pulls,
        })
    }

    fn card(&self, issue: &Issue, plans: &CardPlans) -> IssueCardView {
        let run = self.runs.get(&issue.id);
        IssueCardView {
            run_state: run.and_then(card_run_state),
            run_waiting: plans
                .waiting(issue.id, run)
                .or_else(|| run.and_then(|r| self.waiting.reason(r))),
            plan: plans.card(issue.id, run),
            ensemble: self.ensembles.get(&issue.id).cloned(),
            pull: self.pulls.get(&issue.id).cloned(),
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
    let plans = CardPlans::load(state, &issues).await?;
    let shown = i64::try_from(issues.len()).unwrap_or(i64::MAX);
    let next = issues.last().filter(|_| more).map(|last| ColumnMoreView {
        url: column_url(&cx.slug, at.status, IssueCursor::after(last), query),
        rest: (at.from_here - shown).max(1),
    });
    Ok(BoardColumnView {
        status: at.status.to_string(),
        label: status_label(at.status).to_owned(),
        cards: issues.iter().map(|i| cx.card(i, &plans)).collect(),
        total: at.total,
        more: next,
    })
}

fn column_url(slug: &str, status: IssueStatus, after: IssueCursor, query: &BoardQuery) -> String {
    let after = serde_urlencoded::to_string([("after", after.to_string())]).unwrap_or_default();
    format!(
        "/w/{slug}/columns/{status}?{after}&{}",
        query.query_string()
    )
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
pub(super) async fn show(
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
    let total = count_of(
        &state.store.count_issues(caller.ws.id, &column).await?,
        status,
    );
    let from_here = match after {
        None => total,
        Some(after) => {
            let rest = IssueFilter {
                after: Some(after),
                ..column
            };
            count_of(
                &state.store.count_issues(caller.ws.id, &rest).await?,
                status,
            )
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
pub(super) struct ColumnQuery {
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
