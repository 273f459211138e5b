//! The workspace Settings page (owners and admins): the git repository runs work in, the loop guard's
//! limits, and the forge connection (`forge`).

use axum::Router;
use axum::extract::{Query, State};
use axum::response::IntoResponse;
use axum::routing::get;
use muster_web::views::{FormErrors, NavItem, SettingsView};

use super::views::nav;
use super::{PageResult, form_errors, invalid, see_other};
use crate::http::extract::WsMember;
use crate::http::form::Form;
use crate::service::workspace::{self as svc, NumberInput, WorkspaceInput};
use crate::state::AppState;

mod forge;

pub(super) fn router() -> Router<AppState> {
    Router::new()
        .route("/w/{slug}/settings", get(show).post(save))
        .merge(forge::router())
}

fn view(member: &WsMember) -> SettingsView {
    let ws = &member.caller.ws;
    SettingsView {
        nav: nav(&member.caller, &member.csrf, NavItem::Settings),
        workspace_name: ws.name.clone(),
        repo_path: ws.repo_path.clone(),
        repo_input: ws.repo_path.clone().unwrap_or_default(),
        mention_depth_input: ws.mention_depth_limit.to_string(),
        runs_per_hour_input: ws.agent_runs_per_issue_per_hour.to_string(),
        check_input: ws
            .check
            .as_ref()
            .map(|c| c.command.clone())
            .unwrap_or_default(),
        egress_input: ws
            .egress_hosts
            .iter()
            .map(|h| h.as_str())
            .collect::<Vec<_>>()
            .join("\n"),
        saved: false,
        errors: FormErrors::new(),
        forge: Default::default(),
    }
}

/// `?saved=1` after a successful save.
#[derive(Debug, serde::Deserialize)]
struct ShowQuery {
    saved: Option<String>,
    /// `?forge_saved=1` after the Forge section's settings were saved.
    forge_saved: Option<String>,
}

async fn show(
    State(state): State<AppState>,
    member: WsMember,
    Query(q): Query<ShowQuery>,
) -> PageResult {
    member.caller.require_manager()?;
    let mut v = view(&member);
    v.saved = q.saved.is_some();
    v.forge = forge::section(&state, &member).await?;
    v.forge.saved = q.forge_saved.is_some();
    Ok(muster_web::pages::settings(&v).into_response())
}

/// The settings form as sent; the limits are text, checked by the service with the API's own messages.
#[derive(Debug, Default, serde::Deserialize)]
#[serde(default)]
struct SettingsForm {
    repo_path: String,
    mention_depth_limit: String,
    agent_runs_per_issue_per_hour: String,
    check_command: String,
    /// One host per line (or comma); not sent by a form without the field.
    egress_hosts: Option<String>,
}

async fn save(
    State(state): State<AppState>,
    member: WsMember,
    Form(form): Form<SettingsForm>,
) -> PageResult {
    let text = |value: &str| Some(NumberInput::Text(value.to_owned()));
    let input = WorkspaceInput {
        repo_path: Some(form.repo_path.clone()),
        mention_depth_limit: text(&form.mention_depth_limit),
        agent_runs_per_issue_per_hour: text(&form.agent_runs_per_issue_per_hour),
        check_command: Some(form.check_command.clone()),
        check_timeout_secs: None,
        egress_hosts: form.egress_hosts.as_ref().map(|hosts| {
            hosts
                .split(['\n', ','])
                .map(|l| l.trim().to_owned())
                .collect()
        }),
    };
    match svc::update(&state, &member.caller, &input).await {
        Ok(_) => Ok(see_other(&format!(
            "/w/{}/settings?saved=1",
            member.caller.ws.slug
        ))),
        Err(e) => {
            let mut v = view(&member);
            v.errors = form_errors(e)?;
            v.forge = forge::section(&state, &member).await?;
            v.repo_input = form.repo_path;
            v.mention_depth_input = form.mention_depth_limit;
            v.runs_per_hour_input = form.agent_runs_per_issue_per_hour;
            v.check_input = form.check_command;
            v.egress_input = form.egress_hosts.unwrap_or_default();
            Ok(invalid(muster_web::pages::settings(&v)))
        }
    }
}
