//! The JSON API under `/api/v1`: everything the pages do, for scripts, agents and the `muster` CLI.
//! Authenticated by `Authorization: Bearer <token>` or the browser session (writes then need the
//! `x-csrf-token` header). Errors are `{"errors": {"field": ["message"]}}`. The OpenAPI document at
//! `/api/v1/openapi.json` is generated from these handlers, so it cannot drift.

mod account;
mod agents;
pub mod doc;
mod ensembles;
mod forges;
mod invitations;
mod issues;
mod members;
mod paging;
mod plans;
mod projects;
mod proposals;
mod runners;
mod runs;
mod runtimes;
mod saved_views;
mod search;
mod skills;
mod thread;
mod usage;
mod views;
mod workspace;

use axum::routing::get;
use axum::{Json, Router};
use utoipa::OpenApi;

use super::extract::ApiCaller;
use crate::state::AppState;
use doc::{CommonResponses, RequiredOnCreate};

pub(crate) use skills::zip_response;
pub use views::{
    CommentView, IssueDetail, IssueView, MeView, MemberView, Names, RunEventView, RunView,
    TokenView,
};

/// The API's routes.
pub fn router() -> Router<AppState> {
    Router::new()
        .route("/api/v1/openapi.json", get(openapi))
        .route("/api/v1/me", get(me))
        .merge(account::router())
        .merge(issues::router())
        .merge(search::router())
        .merge(thread::router())
        .merge(agents::router())
        .merge(ensembles::router())
        .merge(members::router())
        .merge(invitations::router())
        .merge(runtimes::router())
        .merge(skills::router())
        .merge(runs::router())
        .merge(runners::router())
        .merge(workspace::router())
        .merge(usage::router())
        .merge(forges::router())
        .merge(plans::router())
        .merge(projects::router())
        .merge(proposals::router())
        .merge(saved_views::router())
}

/// Where forges post their webhooks (outside `/api/v1`: signed by a connection's secret, no caller).
pub fn hooks() -> Router<AppState> {
    forges::hooks()
}

/// Create bodies that require fields their edit twin leaves optional.
const CREATE_BODIES: RequiredOnCreate = RequiredOnCreate(&[
    ("/api/v1/issues", "IssueInput", "NewIssue", &["title"]),
    (
        "/api/v1/ensembles",
        "EnsembleInput",
        "NewEnsemble",
        &["name", "members"],
    ),
    (
        "/api/v1/agents",
        "AgentInput",
        "NewAgent",
        &["name", "kind"],
    ),
    (
        "/api/v1/projects",
        "ProjectInput",
        "NewProject",
        &["key", "name"],
    ),
]);

/// The OpenAPI 3 document.
#[derive(OpenApi)]
#[openapi(
    info(title = "Muster API", description = "Issues, agents, members and tokens of one Muster workspace."),
    paths(
        me, account::change_password,
        issues::list, issues::create, issues::show, issues::update, issues::delete, issues::move_issue,
        issues::list_comments, issues::comment, issues::edit_comment, issues::delete_comment,
        search::search,
        thread::show,
        agents::list, agents::create, agents::show, agents::update, agents::delete,
        ensembles::list, ensembles::create, ensembles::show, ensembles::update, ensembles::delete,
        ensembles::assign, ensembles::compare, ensembles::choose,
        members::list, members::add, members::set_role, members::remove,
        members::list_tokens, members::create_token, members::revoke_token,
        invitations::mine, invitations::accept, invitations::decline, invitations::list, invitations::revoke,
        runtimes::list, runtimes::redetect,
        skills::list, skills::create, skills::import_archive, skills::import_path, skills::show,
        skills::update, skills::delete, skills::export, skills::agent_skills, skills::attach, skills::detach,
        runs::list, runs::show, runs::events, runs::stream, runs::cancel, runs::retry, runs::issue_runs,
        runners::list, runners::list_tokens, runners::create_token, runners::revoke_token,
        workspace::show, workspace::update,
        usage::report, usage::caps, usage::set_workspace_cap, usage::set_agent_cap, usage::rates,
        usage::set_rates,
        forges::list, forges::connect, forges::show, forges::update, forges::remove, forges::test,
        forges::list_pulls, forges::show_pull, forges::open_for_run, forges::open_for_issue,
        plans::show, plans::relate, plans::unrelate,
        proposals::request_plan, proposals::list, proposals::propose, proposals::show, proposals::approve,
        proposals::discard,
        projects::list, projects::create, projects::show, projects::update, projects::delete,
        saved_views::batch, saved_views::list, saved_views::create, saved_views::remove,
    ),
    // Schemas that paths name only through `value_type` or in a description, which do not register them.
    components(schemas(ErrorBody, crate::domain::RunStatus, crate::domain::IssueStatus,
        crate::domain::Priority, crate::service::agents::AgentNameView, crate::domain::ProjectStatus,
        crate::domain::list::IssueSort, crate::domain::list::SortDir, crate::domain::list::IssueGrouping)),
    modifiers(&CommonResponses, &CREATE_BODIES),
    security(("bearer" = [])),
)]
pub struct ApiDoc;

/// Every 4xx and 5xx body: messages per field.
#[derive(serde::Serialize, utoipa::ToSchema)]
pub struct ErrorBody {
    #[schema(example = json!({"title": ["must not be empty"]}))]
    pub errors: std::collections::BTreeMap<String, Vec<String>>,
    /// Only on a 500: the id to find the logged cause by.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub request_id: Option<String>,
}

async fn openapi() -> Json<utoipa::openapi::OpenApi> {
    Json(ApiDoc::openapi())
}

/// Who the caller is and in which workspace.
#[utoipa::path(get, path = "/api/v1/me", tag = "me", responses((status = 200, body = MeView)))]
async fn me(ApiCaller(caller): ApiCaller) -> Json<MeView> {
    Json(MeView::from(&caller))
}
