//! The board: columns of cards, filters, the new-issue form, moves (drag and drop or the card menu), the
//! card menu and the command palette's data, and the live WebSocket that pushes re-rendered columns
//! when anyone changes the board.

mod columns;
mod live;
mod menu;
mod palette;

use axum::Router;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::IntoResponse;
use axum::routing::{get, post};
use muster_web::views::{BoardFilterView, BoardView, NavItem, OptionView};
use serde::Deserialize;

use columns::board_columns;

use super::inbox::nav_with_inbox;
use super::views::{IssueForm, People, issue_form, issue_form_with_errors};
use super::{PageResult, form_errors, invalid, see_other};
use crate::domain::{IssueStatus, Priority};
use crate::http::Error;
use crate::http::extract::{HxRequest, WsMember};
use crate::http::form::Form;
use crate::service::issues as svc;
use crate::state::AppState;

pub(super) fn router() -> Router<AppState> {
    Router::new()
        .route("/w/{slug}", get(show))
        .route("/w/{slug}/issues", post(create))
        .route("/w/{slug}/issues/{key}/move", post(move_card))
        .route("/w/{slug}/issues/{key}/menu", get(menu::show))
        .route("/w/{slug}/issues/{key}/assign", post(menu::assign))
        .route("/w/{slug}/palette", get(palette::show))
        .route("/w/{slug}/columns/{status}", get(columns::show))
        .route("/w/{slug}/live", get(live::open))
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
    /// A project's key.
    #[serde(default)]
    project: String,
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
            ("project", &self.project),
            ("hidden", &self.hidden),
        ])
        .unwrap_or_default()
    }
}

fn filter_view(
    query: &BoardQuery,
    people: &People,
    labels: &[String],
    projects: &[crate::domain::Project],
) -> BoardFilterView {
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
    let mut project = vec![pick("", "Any project", &query.project)];
    project.extend(projects.iter().map(|p| OptionView {
        value: p.key.to_string(),
        label: format!("{} · {}", p.key, p.name.as_str()),
        selected: p.key.as_str().eq_ignore_ascii_case(query.project.trim()),
    }));
    BoardFilterView {
        q: query.q.clone(),
        assignee,
        label,
        priority,
        project: if projects.is_empty() {
            Vec::new()
        } else {
            project
        },
        show_hidden: query.hidden == "1",
        active: !(query.q.is_empty()
            && query.assignee.is_empty()
            && query.label.is_empty()
            && query.priority.is_empty()
            && query.project.is_empty()),
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
    let projects = state.store.list_projects(member.caller.ws.id).await?;
    Ok(BoardView {
        nav: nav_with_inbox(state, member, NavItem::Board).await?,
        columns,
        filter: filter_view(query, &people, &labels, &projects),
        new_issue: issue_form(
            &people,
            &IssueForm {
                status: Some(IssueStatus::NEW_ISSUE_DEFAULT.as_str().to_owned()),
                priority: Some("none".to_owned()),
                // A board filtered to a project files new issues in it.
                project: Some(query.project.clone()),
                ..IssueForm::default()
            },
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

async fn create(
    State(state): State<AppState>,
    member: WsMember,
    Form(form): Form<IssueForm>,
) -> PageResult {
    match svc::create(&state, &member.caller, &form.input()).await {
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

/// A card dropped in a column: its status, and its place there (none: the end).
#[derive(Debug, Default, serde::Deserialize)]
#[serde(default)]
struct MoveForm {
    status: String,
    index: String,
}

async fn move_card(
    State(state): State<AppState>,
    member: WsMember,
    Path((_, key)): Path<(String, String)>,
    HxRequest(hx): HxRequest,
    Form(form): Form<MoveForm>,
) -> PageResult {
    let index =
        match form.index.as_str() {
            "" => None,
            raw => Some(raw.parse::<usize>().map_err(|_| {
                Error::invalid([("index", "must be a position (0, 1, …)".to_owned())])
            })?),
        };
    svc::move_to(
        &state,
        &member.caller,
        &svc::parse_key(&key)?,
        &form.status,
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

/// The close frame of a socket whose session ended or whose person left the workspace.
pub(super) fn ended_frame() -> axum::extract::ws::CloseFrame {
    axum::extract::ws::CloseFrame {
        code: axum::extract::ws::close_code::POLICY,
        reason: "signed out, or no longer a member of this workspace".into(),
    }
}
