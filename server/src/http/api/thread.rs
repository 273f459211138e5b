//! `GET /api/v1/issues/{key}/thread`: the issue's conversation as one timeline (see `service::thread`).

use axum::extract::State;
use axum::routing::get;
use axum::{Json, Router};
use chrono::{DateTime, Utc};
use serde::Serialize;

use super::ErrorBody;
use super::doc::path::IssueKeyParam;
use super::views::{CommentView, Names, PersonRef, RunView};
use crate::domain::IssueStatus;
use crate::http::Result;
use crate::http::extract::{ApiCaller, AppPath};
use crate::service::issues::parse_key;
use crate::service::thread::{self as svc, Entry};
use crate::state::AppState;

pub(super) fn router() -> Router<AppState> {
    Router::new().route("/api/v1/issues/{key}/thread", get(show))
}

/// An issue's timeline, oldest first.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub(super) struct ThreadView {
    /// The issue's key.
    #[schema(example = "MUS-42")]
    issue: String,
    entries: Vec<ThreadEntry>,
}

/// One entry of the timeline, by `kind`.
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub(super) enum ThreadEntry {
    /// A comment (a run's summary is not one: it is in its run's entry).
    Comment {
        at: DateTime<Utc>,
        comment: CommentView,
    },
    /// A run of an agent, standing where it was queued.
    Run {
        at: DateTime<Utc>,
        run: Box<RunView>,
        /// Whether it is queued, claimed or running.
        live: bool,
        /// Who wrote the comment that queued it (a reply or a mention), while that comment exists.
        triggered_by: Option<PersonRef>,
        /// The comment that carries its summary (`run.summary`), which the timeline does not repeat.
        summary_comment_id: Option<uuid::Uuid>,
        /// Seconds from start to end (to now while it runs); null before it started.
        duration_secs: Option<i64>,
        /// Why a queued run waits, when no runner could take it now.
        waiting: Option<String>,
    },
    /// The issue moved from one status to another.
    Status {
        at: DateTime<Utc>,
        actor: PersonRef,
        #[schema(value_type = IssueStatus)]
        from: String,
        #[schema(value_type = IssueStatus)]
        to: String,
    },
    /// Another change of the activity trail.
    Change {
        at: DateTime<Utc>,
        actor: PersonRef,
        /// created, assignee, title, priority, labels or body.
        what: String,
        /// `{"from": …, "to": …}` (created: `{"status": …}`).
        #[schema(value_type = Object)]
        detail: serde_json::Value,
        /// For an assignee change, whom the issue went to (null when unassigned).
        assignee: Option<PersonRef>,
    },
}

impl ThreadEntry {
    fn new(entry: &Entry, key: &str, names: &Names) -> Self {
        match entry {
            Entry::Comment(c) => ThreadEntry::Comment {
                at: c.created_at,
                comment: CommentView::new(c, names),
            },
            Entry::Run(r) => ThreadEntry::Run {
                at: r.run.created_at,
                run: Box::new(RunView::new(&r.run, key, names)),
                live: r.is_live(),
                triggered_by: r.trigger_author.map(|a| names.actor(a)),
                summary_comment_id: r.summary.as_ref().map(|c| c.id.0),
                duration_secs: r.duration_secs(),
                waiting: r.waiting.clone(),
            },
            Entry::Status(s) => ThreadEntry::Status {
                at: s.at,
                actor: names.actor(s.actor),
                from: s.from.to_string(),
                to: s.to.to_string(),
            },
            Entry::Change(a) => ThreadEntry::Change {
                at: a.at,
                actor: names.actor(a.actor),
                what: a.kind.to_string(),
                detail: a.detail.clone(),
                assignee: a.new_assignee().map(|to| names.actor(to)),
            },
        }
    }
}

/// The issue's conversation, oldest first: comments, each run of an agent (its summary inside it, live
/// runs with their state), status changes and the other changes of its activity trail.
#[utoipa::path(get, path = "/api/v1/issues/{key}/thread", tag = "issues", params(IssueKeyParam),
    responses((status = 200, body = ThreadView), (status = 404, body = ErrorBody)))]
pub(super) async fn show(
    State(state): State<AppState>,
    ApiCaller(caller): ApiCaller,
    AppPath(key): AppPath<String>,
) -> Result<Json<ThreadView>> {
    let thread = svc::load(&state, &caller, &parse_key(&key)?).await?;
    let names = Names::load(&state, caller.ws.id).await?;
    let key = thread.issue.key.to_string();
    Ok(Json(ThreadView {
        entries: thread
            .entries
            .iter()
            .map(|e| ThreadEntry::new(e, &key, &names))
            .collect(),
        issue: key,
    }))
}
