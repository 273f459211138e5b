//! The issue page: rendered markdown, the edit form, comments and the activity trail.

use axum::Router;
use axum::extract::{Path, State};
use axum::response::IntoResponse;
use axum::routing::{get, post};
use muster_web::views::{ActivityView, CommentView, FormErrors, IssuePageView, NavItem};

use super::inbox::nav_with_inbox;
use super::runs::run_row;
use super::views::{
    People, assignee_value, issue_form, issue_form_with_errors, issue_input, status_label,
};
use super::{PageResult, form_errors, invalid, see_other};
use crate::app::AppState;
use crate::domain::{Activity, ActivityKind, Issue};
use crate::http::extract::{UiForm, WsMember};
use crate::markdown::to_safe_html;
use crate::service::issues as svc;

pub(super) fn router() -> Router<AppState> {
    Router::new()
        .route("/w/{slug}/issues/{key}", get(show).post(update))
        .route("/w/{slug}/issues/{key}/comments", post(comment))
}

fn describe(a: &Activity, people: &People) -> String {
    let d = &a.detail;
    let text = |v: &serde_json::Value| v.as_str().unwrap_or_default().replace('_', " ");
    match a.kind {
        ActivityKind::Created => "created this issue".into(),
        ActivityKind::Status => {
            format!("moved this from {} to {}", text(&d["from"]), text(&d["to"]))
        }
        ActivityKind::Priority => format!("set priority to {}", text(&d["to"])),
        ActivityKind::Title => format!("renamed this to \u{201c}{}\u{201d}", text(&d["to"])),
        ActivityKind::Labels => "changed the labels".into(),
        ActivityKind::Body => "edited the description".into(),
        ActivityKind::Assignee => {
            match serde_json::from_value::<Option<AssigneeJson>>(d["to"].clone())
                .ok()
                .flatten()
            {
                Some(to) => format!("assigned this to {}", people.person(to.actor()).name),
                None => "removed the assignee".into(),
            }
        }
    }
}

#[derive(serde::Deserialize)]
#[serde(tag = "type", content = "id", rename_all = "snake_case")]
enum AssigneeJson {
    User(crate::domain::UserId),
    Agent(crate::domain::AgentId),
}

impl AssigneeJson {
    fn actor(&self) -> crate::domain::Actor {
        match self {
            AssigneeJson::User(u) => crate::domain::Actor::User(*u),
            AssigneeJson::Agent(a) => crate::domain::Actor::Agent(*a),
        }
    }
}

async fn page_view(
    state: &AppState,
    member: &WsMember,
    issue: &Issue,
) -> crate::http::Result<IssuePageView> {
    let people = People::load(state, &member.caller).await?;
    let comments = state.store.list_comments(issue.id).await?;
    let activity = state.store.list_activity(issue.id).await?;
    let runs = state.store.list_runs_for_issue(issue.id).await?;
    let slug = member.caller.ws.slug.to_string();
    let key = issue.key.to_string();
    let labels: Vec<String> = issue.labels.iter().map(|l| l.as_str().to_owned()).collect();
    Ok(IssuePageView {
        nav: nav_with_inbox(state, member, NavItem::Board).await?,
        url: format!("/w/{}/issues/{key}", member.caller.ws.slug),
        key,
        title: issue.title.as_str().to_owned(),
        body_html: to_safe_html(&issue.body),
        status: issue.status.to_string(),
        status_label: status_label(issue.status).to_owned(),
        priority: issue.priority.to_string(),
        labels: labels.clone(),
        assignee: people.assignee(issue.assignee),
        created_by: issue
            .created_by
            .map(|u| people.person(crate::domain::Actor::User(u))),
        created_at: Some(issue.created_at),
        updated_at: Some(issue.updated_at),
        form: issue_form(
            &people,
            issue.title.as_str(),
            &issue.body,
            issue.status.as_str(),
            issue.priority.as_str(),
            &assignee_value(issue.assignee),
            &labels.join(", "),
        ),
        comments: comments
            .iter()
            .map(|c| CommentView {
                author: people.person(c.author),
                body_html: to_safe_html(&c.body),
                at: c.created_at,
            })
            .collect(),
        activity: activity
            .iter()
            .map(|a| ActivityView {
                actor: people.person(a.actor),
                text: describe(a, &people),
                at: a.at,
            })
            .collect(),
        comment_body: String::new(),
        comment_errors: FormErrors::new(),
        runs: runs
            .iter()
            .rev()
            .map(|r| run_row(&slug, r, &people))
            .collect(),
    })
}

async fn show(
    State(state): State<AppState>,
    member: WsMember,
    Path((_, key)): Path<(String, String)>,
) -> PageResult {
    let issue = state
        .store
        .get_issue(member.caller.ws.id, &svc::parse_key(&key)?)
        .await?;
    Ok(muster_web::pages::issue(&page_view(&state, &member, &issue).await?).into_response())
}

async fn update(
    State(state): State<AppState>,
    member: WsMember,
    Path((_, key)): Path<(String, String)>,
    form: UiForm,
) -> PageResult {
    let key = svc::parse_key(&key)?;
    let input = issue_input(&form);
    match svc::update(&state, &member.caller, &key, &input).await {
        Ok(issue) => Ok(see_other(&format!(
            "/w/{}/issues/{}",
            member.caller.ws.slug, issue.key
        ))),
        Err(e) => {
            let errors = form_errors(e)?;
            let issue = state.store.get_issue(member.caller.ws.id, &key).await?;
            let mut view = page_view(&state, &member, &issue).await?;
            let people = People::load(&state, &member.caller).await?;
            view.form = issue_form_with_errors(&people, &form, errors);
            Ok(invalid(muster_web::pages::issue(&view)))
        }
    }
}

async fn comment(
    State(state): State<AppState>,
    member: WsMember,
    Path((_, key)): Path<(String, String)>,
    form: UiForm,
) -> PageResult {
    let key = svc::parse_key(&key)?;
    let body = form.get("body");
    match svc::comment(&state, &member.caller, &key, body).await {
        Ok(_) => Ok(see_other(&format!(
            "/w/{}/issues/{key}#comments",
            member.caller.ws.slug
        ))),
        Err(e) => {
            let errors = form_errors(e)?;
            let issue = state.store.get_issue(member.caller.ws.id, &key).await?;
            let mut view = page_view(&state, &member, &issue).await?;
            view.comment_body = body.to_owned();
            view.comment_errors = errors;
            Ok(invalid(muster_web::pages::issue(&view)))
        }
    }
}
