//! The Projects page (every project with its progress; the form that creates one) and one project's page
//! (progress by status, its issues, its runs and spend; the form that edits it; delete).

use axum::Router;
use axum::extract::{Path, Query, State};
use axum::response::IntoResponse;
use axum::routing::{get, post};
use muster_web::views::{
    FormErrors, NavItem, OptionView, ProjectFormView, ProjectIssueView, ProjectRowView,
    ProjectRunView, ProjectStatusView, ProjectView, ProjectsView,
};

use super::views::{People, nav};
use super::{PageResult, form_errors, invalid, see_other};
use crate::domain::{Assignee, IssueFilter, Project, ProjectStatus, UsageFilter};
use crate::http::extract::WsMember;
use crate::http::form::Form;
use crate::service::projects::{self as svc, ProjectInput, ProjectSummary};
use crate::state::AppState;

/// Issues listed on a project's page (the rest are on the board, filtered to it).
const ISSUES_SHOWN: i64 = 50;
/// Runs listed on a project's page, newest first.
const RUNS_SHOWN: usize = 20;

pub(super) fn router() -> Router<AppState> {
    Router::new()
        .route("/w/{slug}/projects", get(list).post(create))
        .route("/w/{slug}/projects/{key}", get(show).post(save))
        .route("/w/{slug}/projects/{key}/delete", post(delete))
}

/// The project form as sent.
#[derive(Debug, Clone, Default, serde::Deserialize)]
#[serde(default)]
struct ProjectForm {
    key: String,
    name: String,
    description: String,
    lead: String,
    status: String,
    target_date: String,
    /// Only owners and admins see these fields; a form without them leaves them as they are.
    repo_path: Option<String>,
    check_command: Option<String>,
}

impl ProjectForm {
    fn input(&self) -> ProjectInput {
        ProjectInput {
            key: Some(self.key.clone()),
            name: Some(self.name.clone()),
            description: Some(self.description.clone()),
            lead: Some(self.lead.clone()),
            status: Some(self.status.clone()).filter(|s| !s.is_empty()),
            target_date: Some(self.target_date.clone()),
            repo_path: self.repo_path.clone(),
            check_command: self.check_command.clone(),
            check_timeout_secs: None,
        }
    }
}

fn lead_options(people: &People, selected: &str) -> Vec<OptionView> {
    std::iter::once(OptionView {
        value: String::new(),
        label: "Nobody".into(),
        selected: selected.is_empty(),
    })
    .chain(people.members.iter().map(|m| {
        let value = format!("user:{}", m.user.id);
        OptionView {
            selected: value == selected,
            value,
            label: m.user.display_name.clone(),
        }
    }))
    .collect()
}

fn status_options(selected: &str) -> Vec<OptionView> {
    ProjectStatus::ALL
        .iter()
        .map(|s| OptionView {
            value: s.as_str().into(),
            label: s.as_str().into(),
            selected: s.as_str() == selected,
        })
        .collect()
}

/// The form filled with `project` (or empty for a new one).
fn form_of(project: Option<&Project>, people: &People, can_manage: bool) -> ProjectFormView {
    let form = project.map_or_else(
        || ProjectForm {
            status: ProjectStatus::Planned.as_str().into(),
            ..ProjectForm::default()
        },
        |p| ProjectForm {
            key: p.key.to_string(),
            name: p.name.as_str().into(),
            description: p.description.clone(),
            lead: p.lead.map(|u| format!("user:{u}")).unwrap_or_default(),
            status: p.status.as_str().into(),
            target_date: p.target_date.map(|d| d.to_string()).unwrap_or_default(),
            repo_path: p.repo_path.clone(),
            check_command: p.check.as_ref().map(|c| c.command.clone()),
        },
    );
    form_view(&form, people, can_manage, FormErrors::new())
}

fn form_view(
    form: &ProjectForm,
    people: &People,
    can_manage: bool,
    errors: FormErrors,
) -> ProjectFormView {
    ProjectFormView {
        key: form.key.clone(),
        name: form.name.clone(),
        description: form.description.clone(),
        lead: lead_options(people, &form.lead),
        status: status_options(&form.status),
        target_date: form.target_date.clone(),
        repo_path: form.repo_path.clone().unwrap_or_default(),
        check_command: form.check_command.clone().unwrap_or_default(),
        can_manage,
        errors,
    }
}

fn row(slug: &str, s: &ProjectSummary, people: &People) -> ProjectRowView {
    let (p, stats) = (&s.project, &s.stats);
    let (done, total) = stats.progress();
    ProjectRowView {
        key: p.key.to_string(),
        name: p.name.as_str().into(),
        status: p.status.as_str().into(),
        lead: people.assignee(p.lead.map(Assignee::User)),
        target_date: p.target_date.map(|d| d.to_string()).unwrap_or_default(),
        progress: format!("{done}/{total} done"),
        percent: if total > 0 { done * 100 / total } else { 0 },
        runs: stats.runs,
        cost: stats.usage.cost_label(None).0,
        repo: p.repo_path.clone(),
        url: format!("/w/{slug}/projects/{}", p.key),
    }
}

async fn list_view(state: &AppState, member: &WsMember) -> PageResult<ProjectsView> {
    let caller = &member.caller;
    let people = People::load(state, caller).await?;
    let slug = caller.ws.slug.to_string();
    let projects = svc::list(state, caller).await?;
    Ok(ProjectsView {
        nav: nav(caller, &member.csrf, NavItem::Projects),
        projects: projects.iter().map(|p| row(&slug, p, &people)).collect(),
        form: form_of(None, &people, caller.role.can_manage()),
    })
}

async fn list(State(state): State<AppState>, member: WsMember) -> PageResult {
    let v = list_view(&state, &member).await?;
    Ok(muster_web::pages::projects(&v).into_response())
}

async fn create(
    State(state): State<AppState>,
    member: WsMember,
    Form(form): Form<ProjectForm>,
) -> PageResult {
    match svc::create(&state, &member.caller, &form.input()).await {
        Ok(p) => Ok(see_other(&format!(
            "/w/{}/projects/{}",
            member.caller.ws.slug, p.key
        ))),
        Err(e) => {
            let errors = form_errors(e)?;
            let mut v = list_view(&state, &member).await?;
            let people = People::load(&state, &member.caller).await?;
            v.form = form_view(&form, &people, member.caller.role.can_manage(), errors);
            Ok(invalid(muster_web::pages::projects(&v)))
        }
    }
}

/// `?saved=1` after an edit.
#[derive(Debug, serde::Deserialize)]
struct ShowQuery {
    saved: Option<String>,
}

async fn page_view(
    state: &AppState,
    member: &WsMember,
    key: &crate::domain::ProjectKey,
) -> PageResult<ProjectView> {
    let caller = &member.caller;
    let slug = caller.ws.slug.to_string();
    let summary = svc::get(state, caller, key).await?;
    let people = People::load(state, caller).await?;
    let p = &summary.project;
    let board = format!("/w/{slug}?project={}", p.key);
    let filter = IssueFilter {
        project: Some(p.id),
        limit: Some(ISSUES_SHOWN + 1),
        ..IssueFilter::default()
    };
    let mut issues = state.store.list_issues(caller.ws.id, &filter).await?;
    let more = issues.len() as i64 > ISSUES_SHOWN;
    issues.truncate(ISSUES_SHOWN as usize);
    let now = chrono::Utc::now();
    let runs = state
        .store
        .usage_runs(
            caller.ws.id,
            &UsageFilter {
                from: p.created_at.min(caller.ws.created_at),
                to: now + chrono::TimeDelta::minutes(1),
                agent: None,
                issue: None,
                project: Some(p.id),
                parent: None,
            },
        )
        .await?;
    Ok(ProjectView {
        nav: nav(caller, &member.csrf, NavItem::Projects),
        row: row(&slug, &summary, &people),
        description_html: crate::markdown::to_safe_html(&p.description),
        check: p.check.as_ref().map(|c| c.command.clone()),
        by_status: summary
            .stats
            .by_status
            .iter()
            .map(|(status, count)| ProjectStatusView {
                status: status.as_str().into(),
                count: *count,
                url: format!("{board}&status={status}"),
            })
            .collect(),
        issues: issues
            .iter()
            .map(|i| ProjectIssueView {
                key: i.key.to_string(),
                title: i.title.as_str().into(),
                status: i.status.as_str().into(),
                assignee: people.assignee(i.assignee),
                url: format!("/w/{slug}/issues/{}", i.key),
            })
            .collect(),
        more_issues: more.then(|| board.clone()),
        runs: runs
            .iter()
            .rev()
            .take(RUNS_SHOWN)
            .map(|r| ProjectRunView {
                issue_key: r.issue_key.clone(),
                agent: r.agent_name.clone(),
                status: r.status.as_str().into(),
                cost: r.usage.cost_label(Some(r.kind)).0,
                when: r.created_at.format("%Y-%m-%d %H:%M").to_string(),
                url: format!("/w/{slug}/runs/{}", r.run_id),
            })
            .collect(),
        tokens: format!(
            "{} tokens",
            super::runs::thousands(summary.stats.usage.tokens())
        ),
        board_url: board,
        form: form_of(Some(p), &people, caller.role.can_manage()),
        saved: false,
        can_delete: caller.role.can_manage(),
    })
}

async fn show(
    State(state): State<AppState>,
    member: WsMember,
    Path((_, key)): Path<(String, String)>,
    Query(q): Query<ShowQuery>,
) -> PageResult {
    let mut v = page_view(&state, &member, &svc::parse_key(&key)?).await?;
    v.saved = q.saved.is_some();
    Ok(muster_web::pages::project(&v).into_response())
}

async fn save(
    State(state): State<AppState>,
    member: WsMember,
    Path((_, key)): Path<(String, String)>,
    Form(form): Form<ProjectForm>,
) -> PageResult {
    let key = svc::parse_key(&key)?;
    match svc::update(&state, &member.caller, &key, &form.input()).await {
        Ok(p) => Ok(see_other(&format!(
            "/w/{}/projects/{}?saved=1",
            member.caller.ws.slug, p.key
        ))),
        Err(e) => {
            let errors = form_errors(e)?;
            let mut v = page_view(&state, &member, &key).await?;
            let people = People::load(&state, &member.caller).await?;
            v.form = form_view(&form, &people, member.caller.role.can_manage(), errors);
            Ok(invalid(muster_web::pages::project(&v)))
        }
    }
}

async fn delete(
    State(state): State<AppState>,
    member: WsMember,
    Path((_, key)): Path<(String, String)>,
    Form(_form): Form<ProjectForm>,
) -> PageResult {
    svc::delete(&state, &member.caller, &svc::parse_key(&key)?).await?;
    Ok(see_other(&format!("/w/{}/projects", member.caller.ws.slug)))
}
