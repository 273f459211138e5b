//! A card's quick menu and the assign action behind it: the board's popover (htmx) or a page of its own
//! (no JavaScript), both ending in the same use-cases as the issue page, with the same roles and CSRF.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::IntoResponse;
use muster_web::views::{AssigneeChoiceView, CardMenuView, NavItem};

use super::super::inbox::nav_with_inbox;
use super::super::views::{People, assignee_value, nav};
use super::super::{PageResult, see_other};
use crate::domain::{Actor, Issue};
use crate::http::Error;
use crate::http::extract::{HxRequest, WsMember};
use crate::http::form::Form;
use crate::service::issues::{self as svc, IssueInput};
use crate::state::AppState;

/// `GET /w/{slug}/issues/{key}/menu`: the fragment for the board's popover, or the whole page.
pub(super) async fn show(
    State(state): State<AppState>,
    member: WsMember,
    Path((_, key)): Path<(String, String)>,
    HxRequest(hx): HxRequest,
) -> PageResult {
    let key = svc::parse_key(&key)?;
    let issue = state.store.get_issue(member.caller.ws.id, &key).await?;
    let people = People::load(&state, &member.caller).await?;
    let nav = if hx {
        nav(&member.caller, &member.csrf, NavItem::Board)
    } else {
        nav_with_inbox(&state, &member, NavItem::Board).await?
    };
    let view = menu_view(nav, &issue, &people);
    Ok(if hx {
        muster_web::partials::board_menu::card_menu(&view).into_response()
    } else {
        muster_web::pages::card_menu_page(&view).into_response()
    })
}

fn menu_view(nav: muster_web::views::Nav, issue: &Issue, people: &People) -> CardMenuView {
    let url = format!("/w/{}/issues/{}", nav.workspace_slug, issue.key);
    let current = assignee_value(issue.assignee);
    let mut assignees = vec![AssigneeChoiceView {
        value: String::new(),
        person: None,
        selected: current.is_empty(),
    }];
    let members = people
        .members
        .iter()
        .map(|m| (format!("user:{}", m.user.id), Actor::User(m.user.id)));
    let agents = people
        .agents
        .iter()
        .map(|a| (format!("agent:{}", a.id), Actor::Agent(a.id)));
    assignees.extend(
        members
            .chain(agents)
            .map(|(value, actor)| AssigneeChoiceView {
                selected: value == current,
                person: Some(people.person(actor)),
                value,
            }),
    );
    CardMenuView {
        key: issue.key.to_string(),
        title: issue.title.as_str().to_owned(),
        move_url: format!("{url}/move"),
        assign_url: format!("{url}/assign"),
        url,
        status: issue.status.to_string(),
        assignees,
        nav,
    }
}

/// The assignee form: `""` is nobody, absent is a mistake.
#[derive(Debug, Default, serde::Deserialize)]
#[serde(default)]
pub(super) struct AssignForm {
    assignee: Option<String>,
}

/// `POST /w/{slug}/issues/{key}/assign` with `assignee` (`""` for nobody, `user:<id>`, `agent:<id>`, an
/// agent's name or a member's email): 204 for htmx and the palette, else back to the board.
pub(super) async fn assign(
    State(state): State<AppState>,
    member: WsMember,
    Path((_, key)): Path<(String, String)>,
    HxRequest(hx): HxRequest,
    Form(form): Form<AssignForm>,
) -> PageResult {
    let Some(assignee) = form.assignee else {
        return Err(Error::invalid([(
            "assignee",
            "is missing: send \"\" for nobody, user:<id>, agent:<id> or an agent's name".to_owned(),
        )])
        .into());
    };
    let input = IssueInput {
        assignee: Some(assignee),
        ..IssueInput::default()
    };
    svc::update(&state, &member.caller, &svc::parse_key(&key)?, &input).await?;
    if hx {
        Ok(StatusCode::NO_CONTENT.into_response())
    } else {
        Ok(see_other(&format!("/w/{}", member.caller.ws.slug)))
    }
}
