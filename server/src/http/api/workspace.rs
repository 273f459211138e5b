//! `/api/v1/workspace`: the caller's workspace and its settings.

use axum::extract::State;
use axum::routing::get;
use axum::{Json, Router};
use serde::Serialize;

use super::ErrorBody;
use crate::domain::Workspace;
use crate::http::Result;
use crate::http::extract::{ApiCaller, AppJson};
use crate::service::workspace::{self as svc, WorkspaceInput};
use crate::state::AppState;

pub(super) fn router() -> Router<AppState> {
    Router::new().route("/api/v1/workspace", get(show).patch(update))
}

/// A workspace and its settings.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct WorkspaceView {
    pub id: uuid::Uuid,
    pub name: String,
    pub slug: String,
    #[schema(example = "MUS")]
    pub issue_prefix: String,
    /// The local git repository runs get worktrees of (`null`: a plain work folder per run).
    #[schema(example = "/home/me/project")]
    pub repo_path: Option<String>,
    /// Loop guard: how deep a chain of agents mentioning agents may go (default 3).
    pub mention_depth_limit: i32,
    /// Loop guard: how many runs agents' comments may start on one issue in an hour (default 10).
    pub agent_runs_per_issue_per_hour: i32,
    /// The check ensembles run unless they name their own.
    pub check_command: Option<String>,
    pub check_timeout_secs: Option<u64>,
    /// The default egress allow-list every agent's runs get (unless the agent has no network).
    pub egress_hosts: Vec<String>,
}

impl From<&Workspace> for WorkspaceView {
    fn from(ws: &Workspace) -> Self {
        WorkspaceView {
            id: ws.id.0,
            name: ws.name.clone(),
            slug: ws.slug.to_string(),
            issue_prefix: ws.issue_prefix.as_str().to_owned(),
            repo_path: ws.repo_path.clone(),
            mention_depth_limit: ws.mention_depth_limit,
            agent_runs_per_issue_per_hour: ws.agent_runs_per_issue_per_hour,
            check_command: ws.check.as_ref().map(|c| c.command.clone()),
            check_timeout_secs: ws.check.as_ref().map(|c| c.timeout_secs),
            egress_hosts: ws
                .egress_hosts
                .iter()
                .map(|h| h.as_str().to_owned())
                .collect(),
        }
    }
}

/// The caller's workspace.
#[utoipa::path(get, path = "/api/v1/workspace", tag = "workspace",
    responses((status = 200, body = WorkspaceView), (status = 401, body = ErrorBody)))]
pub(super) async fn show(ApiCaller(caller): ApiCaller) -> Json<WorkspaceView> {
    Json(WorkspaceView::from(&caller.ws))
}

/// Changes the workspace's settings (owners and admins): `repo_path` must be an absolute path to a git
/// repository with at least one commit (or a git URL); `""` or `null` clears it. `mention_depth_limit`
/// (1–20) and `agent_runs_per_issue_per_hour` (1–1000) are the loop guard's limits; `egress_hosts`
/// replaces the default egress allow-list; a field left out keeps its value (the repository too, unless
/// nothing at all is given).
#[utoipa::path(patch, path = "/api/v1/workspace", tag = "workspace", request_body = WorkspaceInput,
    responses((status = 200, body = WorkspaceView), (status = 403, body = ErrorBody), (status = 422, body = ErrorBody)))]
pub(super) async fn update(
    State(state): State<AppState>,
    ApiCaller(caller): ApiCaller,
    AppJson(input): AppJson<WorkspaceInput>,
) -> Result<Json<WorkspaceView>> {
    let ws = svc::update(&state, &caller, &input).await?;
    Ok(Json(WorkspaceView::from(&ws)))
}
