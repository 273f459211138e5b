//! Pull requests on the pages: the issue page's panel (`#issue-pulls`) and its socket, which re-renders
//! it and the Plan panel (`#issue-plan`) whenever the issue or an issue of its plan changes (the engine announces every pull-request change as an
//! `IssueChanged` on the board's topic); the board cards' badges; and the "Open pull request" buttons of
//! the issue and run pages.

use std::collections::HashMap;
use std::time::Duration;

use axum::Router;
use axum::extract::ws::{Message, WebSocket, WebSocketUpgrade};
use axum::extract::{Path, State};
use axum::http::HeaderMap;
use axum::response::IntoResponse;
use axum::routing::{get, post};
use muster_web::views::{CardPullView, IssuePullsView, PrCheckView, PrReviewView, PullView};

use super::board::{ended_frame, same_origin};
use super::{PageResult, form_errors, invalid, see_other};
use crate::domain::{
    ForgeConnection, Issue, IssueId, IssueKey, PrState, PullRequest, ReviewVerdict, RunStatus,
    WorkspaceId,
};
use crate::http::Error;
use crate::http::extract::{WsMember, credential_hash};
use crate::http::form::{Form, NoFields};
use crate::hub::{LiveEvent, Topic};
use crate::live::LiveGuard;
use crate::service::Caller;
use crate::service::forges::{self as svc, From};
use crate::service::issues::parse_key;
use crate::state::AppState;

/// How often an idle issue socket is pinged, so dead connections are noticed.
const PING_EVERY: Duration = Duration::from_secs(30);

pub(super) fn router() -> Router<AppState> {
    Router::new()
        .route("/w/{slug}/issues/{key}/pull-request", post(open_for_issue))
        .route("/w/{slug}/issues/{key}/live", get(live))
        .route("/w/{slug}/runs/{id}/pull-request", post(open_for_run))
}

/// The workspace's connection, if it has one.
pub(super) async fn connection(
    state: &AppState,
    ws: WorkspaceId,
) -> crate::http::Result<Option<ForgeConnection>> {
    Ok(state
        .store
        .list_forge_connections(ws)
        .await?
        .into_iter()
        .next())
}

/// "Draft", "Open", "Merged", "Closed", with its CSS name.
fn state_of(pr: &PullRequest) -> (&'static str, &'static str) {
    match pr.state {
        PrState::Open if pr.draft => ("draft", "Draft"),
        PrState::Open => ("open", "Open"),
        PrState::Merged => ("merged", "Merged"),
        PrState::Closed => ("closed", "Closed"),
    }
}

fn verdict_label(v: ReviewVerdict) -> &'static str {
    match v {
        ReviewVerdict::Approved => "approved",
        ReviewVerdict::ChangesRequested => "changes requested",
        ReviewVerdict::Commented => "commented",
    }
}

fn pull_view(pr: &PullRequest, all: &[PullRequest], max_rounds: Option<i32>) -> PullView {
    let (state, label) = state_of(pr);
    PullView {
        number: pr.number,
        url: pr.url.clone(),
        state: state.to_owned(),
        state_label: label.to_owned(),
        mergeable: match pr.mergeable {
            Some(true) => "yes",
            Some(false) => "no",
            None => "unknown",
        }
        .to_owned(),
        checks: pr
            .checks
            .iter()
            .map(|c| PrCheckView {
                name: c.name.clone(),
                state: c.state.to_string(),
                url: c.url.clone(),
            })
            .collect(),
        reviews: pr
            .reviews
            .iter()
            .map(|r| PrReviewView {
                author: r.author.clone(),
                verdict: r.verdict.to_string(),
                verdict_label: verdict_label(r.verdict).to_owned(),
            })
            .collect(),
        rounds: match max_rounds {
            Some(max) => format!("round {} of {max}", pr.rounds),
            None => format!("round {}", pr.rounds),
        },
        superseded_by: pr
            .superseded_by
            .and_then(|id| all.iter().find(|p| p.id == id))
            .map(|p| p.number),
    }
}

/// The issue page's panel: the issue's pull requests, newest first, and the button that opens one when
/// the workspace has a connection and the issue no open pull request.
pub(super) async fn issue_pulls(
    state: &AppState,
    caller: &Caller,
    csrf: &str,
    issue: &Issue,
) -> crate::http::Result<IssuePullsView> {
    let conn = connection(state, caller.ws.id).await?;
    let pulls = state
        .store
        .list_pull_requests(caller.ws.id, Some(issue.id))
        .await?;
    let slug = caller.ws.slug.as_str();
    let url = format!("/w/{slug}/issues/{}", issue.key);
    let has_open = pulls.iter().any(|p| p.state == PrState::Open);
    Ok(IssuePullsView {
        pulls: pulls
            .iter()
            .map(|p| pull_view(p, &pulls, conn.as_ref().map(|c| c.max_rounds)))
            .collect(),
        open_url: (conn.is_some() && !has_open && caller.run.is_none())
            .then(|| format!("{url}/pull-request")),
        errors: Default::default(),
        csrf: csrf.to_owned(),
        live_url: (conn.is_some() || !pulls.is_empty()).then(|| format!("{url}/live")),
    })
}

/// Each issue's latest pull request, for the board's cards: one store call per board render.
pub(super) async fn card_pulls(
    state: &AppState,
    ws: WorkspaceId,
) -> crate::http::Result<HashMap<IssueId, CardPullView>> {
    let mut out = HashMap::new();
    // Newest first: the first of each issue is its latest.
    for pr in state.store.list_pull_requests(ws, None).await? {
        out.entry(pr.issue_id).or_insert_with(|| CardPullView {
            number: pr.number,
            state: state_of(&pr).0.to_owned(),
        });
    }
    Ok(out)
}

/// Whether the run page offers "Open pull request": a succeeded run in a connected workspace.
pub(super) async fn run_open_url(
    state: &AppState,
    caller: &Caller,
    run: &crate::domain::Run,
) -> crate::http::Result<Option<String>> {
    if run.status != RunStatus::Succeeded || caller.run.is_some() {
        return Ok(None);
    }
    Ok(connection(state, caller.ws.id).await?.map(|_| {
        format!(
            "{}/pull-request",
            super::runs::run_url(caller.ws.slug.as_str(), run.id)
        )
    }))
}

/// Opens a draft pull request of the issue's latest delivered work; on a refusal, the issue page again
/// with the reason in its panel.
async fn open_for_issue(
    State(state): State<AppState>,
    member: WsMember,
    Path((_, key)): Path<(String, String)>,
    _form: Form<NoFields>,
) -> PageResult {
    let key = parse_key(&key)?;
    let url = format!("/w/{}/issues/{key}", member.caller.ws.slug);
    match svc::open(&state, &member.caller, From::Issue(&key), true).await {
        Ok(_) => Ok(see_other(&url)),
        Err(e) => {
            let errors = form_errors(e)?;
            let issue = state.store.get_issue(member.caller.ws.id, &key).await?;
            let mut view = super::issue::page_view(&state, &member, &issue).await?;
            view.pulls.errors = errors;
            // No socket on a refusal: its first frame would swap the panel back without the message.
            view.pulls.live_url = None;
            view.plan.live_url = None;
            Ok(invalid(muster_web::pages::issue(&view)))
        }
    }
}

/// Opens a draft pull request of a run's work, then shows the run again.
async fn open_for_run(
    State(state): State<AppState>,
    member: WsMember,
    Path((_, id)): Path<(String, String)>,
    _form: Form<NoFields>,
) -> PageResult {
    let id = super::runs::parse_run_id(&id)?;
    svc::open(&state, &member.caller, From::Run(id), true).await?;
    Ok(see_other(&super::runs::run_url(
        member.caller.ws.slug.as_str(),
        id,
    )))
}

/// `GET /w/{slug}/issues/{key}/live`: the panel's WebSocket.
async fn live(
    State(state): State<AppState>,
    member: WsMember,
    Path((_, key)): Path<(String, String)>,
    headers: HeaderMap,
    upgrade: WebSocketUpgrade,
) -> PageResult {
    if !same_origin(&headers) {
        return Err(Error::Forbidden.into());
    }
    let key = parse_key(&key)?;
    // The issue must be the workspace's before anything is pushed.
    state.store.get_issue(member.caller.ws.id, &key).await?;
    let guard = state
        .live
        .open(
            member.caller.user.id,
            member.caller.ws.id,
            credential_hash(&headers),
        )
        .map_err(Error::from)?;
    Ok(upgrade
        .on_upgrade(move |socket| issue_socket(state, member, key, socket, guard))
        .into_response())
}

/// Pushes the panels whenever the issue, or an issue its plan shows (a sub-issue finishing, a blocker
/// met), changes. Subscribes before the first render, so no change is missed; a lagging socket simply
/// re-renders (the panels are read from the store).
async fn issue_socket(
    state: AppState,
    member: WsMember,
    key: IssueKey,
    mut socket: WebSocket,
    guard: LiveGuard,
) {
    let mut events = state.hub.subscribe(Topic::Board(member.caller.ws.id));
    let mut ping = tokio::time::interval(PING_EVERY);
    ping.tick().await;
    let mut sent = String::new();
    let mut related = Vec::new();
    let mut changed = true;
    loop {
        if changed {
            match panels(&state, &member, &key, &mut related).await {
                Ok(html) if html != sent => {
                    if socket
                        .send(Message::Text(html.clone().into()))
                        .await
                        .is_err()
                    {
                        break;
                    }
                    sent = html;
                }
                Ok(_) => {}
                Err(e) => tracing::warn!(error = %e, "cannot render the issue's panels"),
            }
        }
        tokio::select! {
            event = events.recv() => {
                changed = match event {
                    Err(tokio::sync::broadcast::error::RecvError::Closed) => break,
                    Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => true,
                    Ok(event) => matches!(&*event,
                        LiveEvent::IssueChanged(k) if *k == key || related.contains(k)),
                };
            }
            incoming = socket.recv() => {
                changed = false;
                match incoming {
                    Some(Ok(Message::Close(_)) | Err(_)) | None => break,
                    Some(Ok(_)) => {}
                }
            }
            _ = ping.tick() => {
                changed = false;
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

/// The pull-request and plan panels as out-of-band swaps; `related` becomes the issues the plan shows.
async fn panels(
    state: &AppState,
    member: &WsMember,
    key: &IssueKey,
    related: &mut Vec<IssueKey>,
) -> crate::http::Result<String> {
    let issue = state.store.get_issue(member.caller.ws.id, key).await?;
    let view = issue_pulls(state, &member.caller, &member.csrf, &issue).await?;
    let (plan, keys) =
        super::plans::issue_plan(state, &member.caller, &member.csrf, &issue).await?;
    *related = keys;
    let mut html = muster_web::partials::pulls::issue_pulls_oob(&view).into_string();
    html.push_str(&muster_web::partials::plan::issue_plan_oob(&plan).into_string());
    Ok(html)
}
