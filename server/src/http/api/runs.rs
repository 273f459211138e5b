//! `/api/v1/runs`: list and show runs, page through a run's event log, follow it live as Server-Sent
//! Events, cancel and retry. The SSE stream is [`svc::follow`] on the wire: `id:` is the event's seq, so
//! an `EventSource` (or `muster run logs --follow`) resumes with `Last-Event-ID` after a dropped
//! connection; a final `end` event carries the run.

use std::collections::HashMap;
use std::convert::Infallible;
use std::time::Duration;

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::routing::{get, post};
use axum::{Json, Router};
use futures_util::{Stream, StreamExt as _};
use serde::{Deserialize, Serialize};

use super::ErrorBody;
use super::doc::path::{IssueKeyParam, RunIdParam};
use super::views::{Names, RunEventView, RunView};
use crate::domain::{IssueId, Run, RunId, RunStatus, Seq};
use crate::http::extract::{ApiCaller, AppPath, AppQuery, credential_hash};
use crate::http::{Error, Result};
use crate::service::runs::{self as svc, FollowItem, RunListInput};
use crate::service::{Caller, issues};
use crate::state::AppState;

/// Events per page when no `limit` is given.
const DEFAULT_PAGE: i64 = 200;
/// Most events one page returns.
const MAX_PAGE: i64 = 1000;
/// How often an idle event stream sends a comment, so proxies and clients see the connection is alive.
const KEEP_ALIVE: Duration = Duration::from_secs(15);

pub(super) fn router() -> Router<AppState> {
    Router::new()
        .route("/api/v1/runs", get(list))
        .route("/api/v1/runs/{id}", get(show))
        .route("/api/v1/runs/{id}/events", get(events))
        .route("/api/v1/runs/{id}/events/stream", get(stream))
        .route("/api/v1/runs/{id}/cancel", post(cancel))
        .route("/api/v1/runs/{id}/retry", post(retry))
        .route("/api/v1/issues/{key}/runs", get(issue_runs))
}

/// Parses a run id from the path; 400 naming the bad value.
fn run_id(raw: &str) -> Result<RunId> {
    raw.trim().parse().map_err(|_| {
        Error::Rejected(
            StatusCode::BAD_REQUEST,
            "id",
            format!(
                "{raw:?} is not a run id (a UUID such as 0198c2f4-5b7e-7a10-9c3d-2f1e4a6b8c90)"
            ),
        )
    })
}

/// Parses a cursor: the seq of the last event the client has, 0 for "from the start".
fn cursor(field: &'static str, raw: &str) -> Result<Seq> {
    match raw.trim().parse::<Seq>() {
        Ok(n) if n >= 0 => Ok(n),
        _ => Err(Error::invalid([(
            field,
            format!(
                "must be a whole number of 0 or more (the seq of the last event you have), got {raw:?}"
            ),
        )])),
    }
}

/// Run views for `runs`, naming issues and agents with two queries whatever the number of runs.
async fn views(state: &AppState, caller: &Caller, runs: &[Run]) -> Result<Vec<RunView>> {
    let names = Names::load(state, caller.ws.id).await?;
    let mut keys: HashMap<IssueId, String> = HashMap::new();
    if runs.len() > 1 {
        let all = state
            .store
            .list_issues(caller.ws.id, &crate::domain::IssueFilter::default())
            .await?;
        keys.extend(all.into_iter().map(|i| (i.id, i.key.to_string())));
    }
    let mut out = Vec::with_capacity(runs.len());
    for run in runs {
        if !keys.contains_key(&run.issue_id) {
            let issue = state.store.get_issue_by_id(run.issue_id).await?;
            keys.insert(issue.id, issue.key.to_string());
        }
        let key = keys.get(&run.issue_id).map_or("", String::as_str);
        out.push(RunView::new(run, key, &names));
    }
    Ok(out)
}

async fn view(state: &AppState, caller: &Caller, run: &Run) -> Result<RunView> {
    let mut one = views(state, caller, std::slice::from_ref(run)).await?;
    one.pop()
        .ok_or_else(|| Error::Internal(anyhow::anyhow!("no view for run {}", run.id)))
}

/// Lists the workspace's runs, newest first.
#[utoipa::path(get, path = "/api/v1/runs", tag = "runs", params(RunListInput),
    responses((status = 200, body = [RunView]), (status = 422, body = ErrorBody)))]
pub(super) async fn list(
    State(state): State<AppState>,
    ApiCaller(caller): ApiCaller,
    AppQuery(q): AppQuery<RunListInput>,
) -> Result<Json<Vec<RunView>>> {
    let runs = svc::list(&state, &caller, &q).await?;
    Ok(Json(views(&state, &caller, &runs).await?))
}

/// Filters for an issue's runs.
#[derive(Debug, Default, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub(super) struct IssueRunsQuery {
    /// Only these statuses, comma-separated.
    #[param(value_type = Option<Vec<RunStatus>>, style = Form, explode = false)]
    status: Option<String>,
    /// How many runs, newest first (default 50).
    #[param(value_type = Option<i64>, minimum = 1, maximum = 500)]
    limit: Option<String>,
}

/// An issue's runs, newest first.
#[utoipa::path(get, path = "/api/v1/issues/{key}/runs", tag = "runs", params(
        IssueKeyParam, IssueRunsQuery),
    responses((status = 200, body = [RunView]), (status = 404, body = ErrorBody), (status = 422, body = ErrorBody)))]
pub(super) async fn issue_runs(
    State(state): State<AppState>,
    ApiCaller(caller): ApiCaller,
    AppPath(key): AppPath<String>,
    AppQuery(q): AppQuery<IssueRunsQuery>,
) -> Result<Json<Vec<RunView>>> {
    let issue = state
        .store
        .get_issue(caller.ws.id, &issues::parse_key(&key)?)
        .await?;
    let input = RunListInput {
        issue: Some(issue.key.to_string()),
        status: q.status,
        agent: None,
        limit: q.limit,
        ..RunListInput::default()
    };
    let runs = svc::list(&state, &caller, &input).await?;
    Ok(Json(views(&state, &caller, &runs).await?))
}

/// One run.
#[utoipa::path(get, path = "/api/v1/runs/{id}", tag = "runs",
    params(RunIdParam),
    responses((status = 200, body = RunView), (status = 400, body = ErrorBody), (status = 404, body = ErrorBody)))]
pub(super) async fn show(
    State(state): State<AppState>,
    ApiCaller(caller): ApiCaller,
    AppPath(id): AppPath<String>,
) -> Result<Json<RunView>> {
    let run = svc::get(&state, &caller, run_id(&id)?).await?;
    let mut one = view(&state, &caller, &run).await?;
    if let Some(runner) = run.runner_id {
        one.runner = state.store.get_runner(runner).await.ok().map(|r| r.name);
    }
    Ok(Json(one))
}

/// Where a page of events starts and how long it is.
#[derive(Debug, Default, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub(super) struct EventsQuery {
    /// Only events with a seq greater than this (default 0: from the start).
    #[param(value_type = Option<i64>, minimum = 0)]
    after: Option<String>,
    /// Events per page (default 200).
    #[param(value_type = Option<i64>, minimum = 1, maximum = 1000)]
    limit: Option<String>,
}

/// A page of a run's log.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub(super) struct EventsPage {
    events: Vec<RunEventView>,
    /// Pass as `after` for the next page (the last seq of this page, or the `after` given).
    next_after: Seq,
    /// The run's status when the page was read.
    run_status: String,
    /// The run is terminal and no event exists after this page: stop asking.
    done: bool,
}

/// A page of a run's event log, after a cursor.
#[utoipa::path(get, path = "/api/v1/runs/{id}/events", tag = "runs",
    params(RunIdParam, EventsQuery),
    responses((status = 200, body = EventsPage), (status = 400, body = ErrorBody),
        (status = 404, body = ErrorBody), (status = 422, body = ErrorBody)))]
pub(super) async fn events(
    State(state): State<AppState>,
    ApiCaller(caller): ApiCaller,
    AppPath(id): AppPath<String>,
    AppQuery(q): AppQuery<EventsQuery>,
) -> Result<Json<EventsPage>> {
    let id = run_id(&id)?;
    let after = q.after.as_deref().map(|a| cursor("after", a)).transpose();
    let limit = q.limit.as_deref().map(page_limit).transpose();
    let (after, limit) = match (after, limit) {
        (Ok(a), Ok(l)) => (a.unwrap_or(0), l.unwrap_or(DEFAULT_PAGE)),
        (Err(Error::Invalid(mut a)), Err(Error::Invalid(l))) => {
            a.extend(l);
            return Err(Error::Invalid(a));
        }
        (Err(e), _) | (_, Err(e)) => return Err(e),
    };
    // The status is read before the events, so `done` cannot hide an event committed in between.
    let run = svc::get(&state, &caller, id).await?;
    let mut events = state.store.run_events_since(id, after, limit + 1).await?;
    let more = events.len() as i64 > limit;
    events.truncate(usize::try_from(limit).unwrap_or(usize::MAX));
    let next_after = events.last().map_or(after, |e| e.seq);
    Ok(Json(EventsPage {
        events: events.iter().map(RunEventView::from).collect(),
        next_after,
        run_status: run.status.to_string(),
        done: run.status.is_terminal() && !more,
    }))
}

fn page_limit(raw: &str) -> Result<i64> {
    match raw.trim().parse::<i64>() {
        Ok(n) if (1..=MAX_PAGE).contains(&n) => Ok(n),
        _ => Err(Error::invalid([(
            "limit",
            format!("must be a whole number from 1 to {MAX_PAGE}, got {raw:?}"),
        )])),
    }
}

/// Where a live stream starts.
#[derive(Debug, Default, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub(super) struct StreamQuery {
    /// Only events with a seq greater than this (default 0). A `Last-Event-ID` header, as an
    /// `EventSource` sends when it reconnects, wins when it is further on.
    #[param(value_type = Option<i64>, minimum = 0)]
    after: Option<String>,
}

/// Follows a run's log live as Server-Sent Events: every event after the cursor (`id:` = seq, data = the
/// event JSON), then new ones as they are stored, then an `end` event with the run JSON once the run has
/// ended and everything is sent. A `stream_error` event (`{"errors": {"stream": [..]}}`) ends the stream
/// early; reconnect from the last seq received. Idle streams get a keep-alive comment every 15 s.
#[utoipa::path(get, path = "/api/v1/runs/{id}/events/stream", tag = "runs",
    params(RunIdParam, StreamQuery,
        ("Last-Event-ID" = Option<i64>, Header, nullable = false, minimum = 0, description = "The last seq received, on reconnect")),
    responses((status = 200, content_type = "text/event-stream", description = "Server-Sent Events"),
        (status = 400, body = ErrorBody), (status = 404, body = ErrorBody), (status = 422, body = ErrorBody),
        (status = 429, body = ErrorBody, description = "Too many live connections open")))]
pub(super) async fn stream(
    State(state): State<AppState>,
    ApiCaller(caller): ApiCaller,
    AppPath(id): AppPath<String>,
    AppQuery(q): AppQuery<StreamQuery>,
    headers: HeaderMap,
) -> Result<Sse<impl Stream<Item = std::result::Result<Event, Infallible>>>> {
    let id = run_id(&id)?;
    let mut after = q
        .after
        .as_deref()
        .map(|a| cursor("after", a))
        .transpose()?
        .unwrap_or(0);
    if let Some(raw) = headers.get("last-event-id") {
        let raw = raw.to_str().unwrap_or("?");
        after = after.max(cursor("last-event-id", raw)?);
    }
    svc::get(&state, &caller, id).await?;
    let guard = state
        .live
        .open(caller.user.id, caller.ws.id, credential_hash(&headers))?;
    let events = svc::follow(&state, state.shutdown.clone(), id, after).then(move |item| {
        let (state, caller) = (state.clone(), caller.clone());
        async move { Ok(sse_event(&state, &caller, item).await) }
    });
    // Ends (the response completes) when the session signs out or the person leaves the workspace.
    let events = guard.guard(events);
    Ok(Sse::new(events).keep_alive(KeepAlive::new().interval(KEEP_ALIVE)))
}

/// One SSE event: `id:` = seq and the event JSON; `end` with the run JSON; `stream_error`.
async fn sse_event(state: &AppState, caller: &Caller, item: FollowItem) -> Event {
    let built = match item {
        // Encoded once per event, shared by every viewer of the run.
        FollowItem::Event(e) => Ok(Event::default().id(e.seq.to_string()).data(e.json(|e| {
            serde_json::to_string(&RunEventView::from(e)).unwrap_or_else(|e| {
                serde_json::json!({ "errors": { "stream": [format!("cannot encode an event: {e}")] } })
                    .to_string()
            })
        }))),
        FollowItem::Ended(run) => match view(state, caller, &run).await {
            Ok(run) => Event::default().event("end").json_data(run),
            Err(e) => return stream_error(&format!("cannot describe the run: {e}")),
        },
        FollowItem::Error(message) => return stream_error(&message),
    };
    built.unwrap_or_else(|e| stream_error(&format!("cannot encode an event: {e}")))
}

fn stream_error(message: &str) -> Event {
    let body = serde_json::json!({ "errors": { "stream": [message] } });
    Event::default()
        .event("stream_error")
        .data(body.to_string())
}

/// Cancels a run: a queued one ends at once, a live one is stopped (its whole process group) and ends
/// `cancelled` shortly. Returns the run as it stands.
#[utoipa::path(post, path = "/api/v1/runs/{id}/cancel", tag = "runs",
    params(RunIdParam),
    responses((status = 200, body = RunView), (status = 400, body = ErrorBody),
        (status = 404, body = ErrorBody), (status = 409, body = ErrorBody)))]
pub(super) async fn cancel(
    State(state): State<AppState>,
    ApiCaller(caller): ApiCaller,
    AppPath(id): AppPath<String>,
) -> Result<Json<RunView>> {
    let run = svc::cancel(&state, &caller, run_id(&id)?).await?;
    Ok(Json(view(&state, &caller, &run).await?))
}

/// Queues the next attempt of a run that ended failed, cancelled, timed out or interrupted.
#[utoipa::path(post, path = "/api/v1/runs/{id}/retry", tag = "runs",
    params(RunIdParam),
    responses((status = 201, body = RunView), (status = 400, body = ErrorBody),
        (status = 404, body = ErrorBody), (status = 409, body = ErrorBody)))]
pub(super) async fn retry(
    State(state): State<AppState>,
    ApiCaller(caller): ApiCaller,
    AppPath(id): AppPath<String>,
) -> Result<(StatusCode, Json<RunView>)> {
    let run = svc::retry(&state, &caller, run_id(&id)?).await?;
    Ok((
        StatusCode::CREATED,
        Json(view(&state, &caller, &run).await?),
    ))
}
