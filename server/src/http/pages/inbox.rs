//! The inbox: what needs the signed-in person (failed, stalled, over-budget and interrupted runs, work
//! awaiting review, mentions), read or unread per person; mark one or all read; one-click retry of a
//! run that may be retried; and the unread count in the header.

use std::collections::HashMap;

use axum::Router;
use axum::extract::{Path, Query, State};
use axum::response::IntoResponse;
use axum::routing::{get, post};
use chrono::Utc;
use muster_web::views::{InboxItemView, InboxView, Nav, NavItem};
use serde::Deserialize;

use super::runs::{failure_view, run_url};
use super::views::{People, nav};
use super::{PageResult, see_other};
use crate::domain::{InboxItemId, InboxKind, IssueFilter};
use crate::http::Error;
use crate::http::extract::WsMember;
use crate::http::form::{Form, NoFields};
use crate::service::runs as runs_svc;
use crate::state::AppState;

pub(super) fn router() -> Router<AppState> {
    Router::new()
        .route("/w/{slug}/inbox", get(show))
        .route("/w/{slug}/inbox/count", get(count))
        .route("/w/{slug}/inbox/read", post(read_all))
        .route("/w/{slug}/inbox/{id}/read", post(read))
        .route("/w/{slug}/inbox/{id}/retry", post(retry))
}

/// The frame of a page, with the unread count in the header.
pub(super) async fn nav_with_inbox(
    state: &AppState,
    member: &WsMember,
    active: NavItem,
) -> crate::http::Result<Nav> {
    let mut frame = nav(&member.caller, &member.csrf, active);
    let caller = &member.caller;
    frame.inbox_unread = Some(
        state
            .store
            .count_unread_inbox(caller.ws.id, caller.user.id)
            .await?,
    );
    Ok(frame)
}

/// `?show=unread` (the default) or `?show=all`.
#[derive(Debug, Default, Deserialize)]
struct InboxQuery {
    #[serde(default)]
    show: String,
}

fn kind_label(kind: InboxKind) -> &'static str {
    match kind {
        InboxKind::RunFailed => "Run failed",
        InboxKind::RunStalled => "Run stalled",
        InboxKind::OverBudget => "Over budget",
        InboxKind::CapWarning => "Spend cap",
        InboxKind::RunInterrupted => "Run interrupted",
        InboxKind::AwaitingReview => "Awaiting review",
        InboxKind::Mentioned => "Mentioned",
        InboxKind::LoopGuard => "Loop guard",
        InboxKind::PullRequest => "Pull request",
    }
}

async fn show(
    State(state): State<AppState>,
    member: WsMember,
    Query(query): Query<InboxQuery>,
) -> PageResult {
    let caller = &member.caller;
    let unread_only = query.show != "all";
    let entries = state
        .store
        .list_inbox_with_read(caller.ws.id, caller.user.id, unread_only)
        .await?;
    let issues: HashMap<_, _> = state
        .store
        .list_issues(caller.ws.id, &IssueFilter::default())
        .await?
        .into_iter()
        .map(|i| (i.id, i.key.to_string()))
        .collect();
    // Retry is offered for the latest run of its issue only, while it may be retried.
    let retryable: HashMap<_, _> = state
        .store
        .latest_runs(caller.ws.id)
        .await?
        .into_iter()
        .map(|r| (r.id, runs_svc::retryable(r.status)))
        .collect();
    let slug = caller.ws.slug.to_string();
    let base = format!("/w/{slug}/inbox");
    let people = People::load(&state, caller).await?;
    // The raw diagnostic of each failed run, for its "details" toggle.
    let mut details = HashMap::new();
    for e in &entries {
        if let (InboxKind::RunFailed | InboxKind::OverBudget, Some(run)) =
            (e.item.kind, e.item.run_id)
            && let Ok(run) = state.store.get_run(run).await
            && let Some(failure) = failure_view(&slug, &run, &people)
        {
            details.insert(run.id, failure.details);
        }
    }
    let items = entries
        .into_iter()
        .map(|e| {
            let i = e.item;
            let key = i.issue_id.and_then(|id| issues.get(&id).cloned());
            let offers_retry = matches!(
                i.kind,
                InboxKind::RunFailed | InboxKind::RunInterrupted | InboxKind::OverBudget
            ) && i
                .run_id
                .is_some_and(|r| retryable.get(&r).copied().unwrap_or(false));
            InboxItemView {
                id: i.id.to_string(),
                kind: i.kind.to_string(),
                kind_label: kind_label(i.kind).to_owned(),
                message: i.message,
                details: i.run_id.and_then(|r| details.remove(&r)),
                diff_url: i
                    .run_id
                    .filter(|_| i.kind == InboxKind::AwaitingReview)
                    .map(|r| format!("{}#run-{r}-diff", run_url(&slug, r))),
                comment_url: key
                    .as_ref()
                    .zip(i.comment_id)
                    .map(|(k, c)| format!("/w/{slug}/issues/{k}#comment-{c}")),
                issue_url: key.as_ref().map(|k| format!("/w/{slug}/issues/{k}")),
                issue_key: key,
                run_url: i.run_id.map(|r| run_url(&slug, r)),
                at: i.created_at,
                read: e.read_at.is_some(),
                read_url: e.read_at.is_none().then(|| format!("{base}/{}/read", i.id)),
                retry_url: offers_retry.then(|| format!("{base}/{}/retry", i.id)),
            }
        })
        .collect();
    let nav = nav_with_inbox(&state, &member, NavItem::Inbox).await?;
    let view = InboxView {
        unread_count: nav.inbox_unread.unwrap_or_default(),
        nav,
        items,
        unread_only,
        read_all_url: format!("{base}/read"),
        invitations: crate::service::invitations::mine(&state, &caller.user)
            .await?
            .len(),
    };
    Ok(muster_web::pages::inbox(&view).into_response())
}

/// The header's unread badge, loaded by pages that did not count it.
async fn count(State(state): State<AppState>, member: WsMember) -> PageResult {
    let caller = &member.caller;
    let unread = state
        .store
        .count_unread_inbox(caller.ws.id, caller.user.id)
        .await?;
    Ok(muster_web::layout::inbox_count(unread).into_response())
}

fn parse_item(raw: &str) -> crate::http::Result<InboxItemId> {
    raw.parse::<InboxItemId>().map_err(|_| Error::NotFound)
}

async fn read(
    State(state): State<AppState>,
    member: WsMember,
    Path((_, id)): Path<(String, String)>,
    _form: Form<NoFields>,
) -> PageResult {
    let caller = &member.caller;
    state
        .store
        .mark_inbox_read(caller.ws.id, caller.user.id, parse_item(&id)?, Utc::now())
        .await?;
    Ok(see_other(&format!("/w/{}/inbox", caller.ws.slug)))
}

async fn read_all(
    State(state): State<AppState>,
    member: WsMember,
    _form: Form<NoFields>,
) -> PageResult {
    let caller = &member.caller;
    state
        .store
        .mark_all_inbox_read(caller.ws.id, caller.user.id, Utc::now())
        .await?;
    Ok(see_other(&format!("/w/{}/inbox", caller.ws.slug)))
}

/// Retries the item's run (a new attempt of the same agent on the same issue), marks the item read and
/// goes to the new run's page.
async fn retry(
    State(state): State<AppState>,
    member: WsMember,
    Path((_, id)): Path<(String, String)>,
    _form: Form<NoFields>,
) -> PageResult {
    let caller = &member.caller;
    let id = parse_item(&id)?;
    let item = state
        .store
        .list_inbox_with_read(caller.ws.id, caller.user.id, false)
        .await?
        .into_iter()
        .find(|e| e.item.id == id)
        .ok_or(Error::NotFound)?;
    let run = item.item.run_id.ok_or_else(|| {
        Error::conflict(
            "run",
            "this inbox item is not about a run, so there is nothing to retry",
        )
    })?;
    let queued = runs_svc::retry(&state, caller, run).await?;
    state
        .store
        .mark_inbox_read(caller.ws.id, caller.user.id, id, Utc::now())
        .await?;
    Ok(see_other(&run_url(caller.ws.slug.as_str(), queued.id)))
}
