//! Skill pages: list, view, write/edit with preview, upload an archive, import a server folder, export,
//! delete; and the skills section of an agent's page (attach, switch, detach).

use axum::Router;
use axum::extract::{Multipart, Path, State};
use axum::response::IntoResponse;
use axum::routing::{get, post};
use maud::{Markup, html};
use muster_web::views::{
    AgentSkillRowView, AgentSkillsView, FormErrors, NavItem, OptionView, SkillFormView,
    SkillListView, SkillPageView, SkillPreviewView, SkillRowView,
};

use super::views::nav;
use super::{PageResult, form_errors, invalid, see_other};
use crate::http::Error;
use crate::http::extract::{HxRequest, WsMember};
use crate::http::form::{Form, NoFields};
use crate::service::skills::{self as svc, SkillInput, SkillView};
use crate::skills::archive::MAX_ARCHIVE_BYTES;
use crate::state::AppState;

pub(super) fn router() -> Router<AppState> {
    Router::new()
        .route("/w/{slug}/skills", get(list).post(create))
        .route("/w/{slug}/skills/new", get(new))
        .route("/w/{slug}/skills/preview", post(preview))
        .route(
            "/w/{slug}/skills/upload",
            post(upload).layer(axum::extract::DefaultBodyLimit::max(
                MAX_ARCHIVE_BYTES + 64 * 1024,
            )),
        )
        .route("/w/{slug}/skills/import-path", post(import_path))
        .route("/w/{slug}/skills/{skill}", get(show).post(update))
        .route("/w/{slug}/skills/{skill}/edit", get(edit))
        .route("/w/{slug}/skills/{skill}/export", get(export))
        .route("/w/{slug}/skills/{skill}/delete", post(delete))
        .route(
            "/w/{slug}/agents/{name}/skills",
            get(agent_section).post(attach),
        )
        .route(
            "/w/{slug}/agents/{name}/skills/{skill}/toggle",
            post(toggle),
        )
        .route(
            "/w/{slug}/agents/{name}/skills/{skill}/detach",
            post(detach),
        )
}

fn base(member: &WsMember) -> String {
    format!("/w/{}", member.caller.ws.slug)
}

fn row(member: &WsMember, s: &SkillView) -> SkillRowView {
    SkillRowView {
        slug: s.slug.clone(),
        description: s.description.clone(),
        source: s.source.clone(),
        url: format!("{}/skills/{}", base(member), s.slug),
        agents: s.agents.clone(),
    }
}

/// Which of the list page's two forms failed.
enum Failed {
    None,
    Upload(FormErrors),
    Import(FormErrors),
}

async fn list_view(
    state: &AppState,
    member: &WsMember,
    failed: Failed,
    path: String,
) -> PageResult<Markup> {
    let skills = svc::list(state, &member.caller).await?;
    let (upload_errors, import_errors) = match failed {
        Failed::None => Default::default(),
        Failed::Upload(e) => (e, FormErrors::new()),
        Failed::Import(e) => (FormErrors::new(), e),
    };
    Ok(muster_web::pages::skills(&SkillListView {
        nav: nav(&member.caller, &member.csrf, NavItem::Skills),
        skills: skills.iter().map(|s| row(member, s)).collect(),
        can_import_path: member.caller.role.can_manage(),
        upload_errors,
        import_errors,
        import_path: path,
    }))
}

async fn list(State(state): State<AppState>, member: WsMember) -> PageResult {
    Ok(list_view(&state, &member, Failed::None, String::new())
        .await?
        .into_response())
}

const TEMPLATE: &str = "---\nname: my-skill\ndescription: What this skill does and when an agent should use it.\n---\n\n# My skill\n\n1. First step.\n2. Second step.\n";

fn form_view(
    member: &WsMember,
    slug: Option<&str>,
    text: &str,
    errors: FormErrors,
) -> SkillFormView {
    let base = base(member);
    SkillFormView {
        nav: nav(&member.caller, &member.csrf, NavItem::Skills),
        is_new: slug.is_none(),
        action: slug.map_or_else(
            || format!("{base}/skills"),
            |s| format!("{base}/skills/{s}"),
        ),
        preview_url: format!("{base}/skills/preview"),
        skill_md: text.to_owned(),
        errors,
    }
}

async fn new(member: WsMember) -> PageResult {
    Ok(
        muster_web::pages::skill_form(&form_view(&member, None, TEMPLATE, FormErrors::new()))
            .into_response(),
    )
}

/// A SKILL.md as typed into the page's text area.
#[derive(Debug, Default, serde::Deserialize)]
#[serde(default)]
struct SkillForm {
    skill_md: String,
}

impl SkillForm {
    /// The input the service takes, with the browser's CRLF line ends made LF.
    fn input(&self) -> SkillInput {
        SkillInput {
            skill_md: self.skill_md.replace("\r\n", "\n"),
            files: None,
        }
    }
}

/// A folder on the server to import.
#[derive(Debug, Default, serde::Deserialize)]
#[serde(default)]
struct ImportForm {
    path: String,
}

/// A skill to attach (by name) and whether runs get it: the switch sends `true` or `false`, the attach
/// form's box `true` or nothing.
#[derive(Debug, Default, serde::Deserialize)]
#[serde(default)]
struct AttachForm {
    skill: String,
    enabled: String,
}

async fn create(
    State(state): State<AppState>,
    member: WsMember,
    Form(form): Form<SkillForm>,
) -> PageResult {
    let input = form.input();
    match svc::create(&state, &member.caller, &input).await {
        Ok(skill) => Ok(see_other(&format!(
            "{}/skills/{}",
            base(&member),
            skill.slug.as_str()
        ))),
        Err(e) => {
            let view = form_view(&member, None, &input.skill_md, form_errors(e)?);
            Ok(invalid(muster_web::pages::skill_form(&view)))
        }
    }
}

async fn show(
    State(state): State<AppState>,
    member: WsMember,
    Path((_, skill)): Path<(String, String)>,
) -> PageResult {
    let s = svc::show(&state, &member.caller, &skill).await?;
    let base = base(&member);
    let view = SkillPageView {
        nav: nav(&member.caller, &member.csrf, NavItem::Skills),
        row: row(&member, &s),
        safe_html: crate::markdown::to_safe_html(crate::skills::parse::instructions(&s.body)),
        files: s
            .files
            .iter()
            .map(|f| (f.path.clone(), f.content.clone()))
            .collect(),
        content_hash: s.content_hash.clone(),
        edit_url: format!("{base}/skills/{}/edit", s.slug),
        export_url: format!("{base}/skills/{}/export", s.slug),
        delete_url: member
            .caller
            .role
            .can_manage()
            .then(|| format!("{base}/skills/{}/delete", s.slug)),
    };
    Ok(muster_web::pages::skill(&view).into_response())
}

async fn edit(
    State(state): State<AppState>,
    member: WsMember,
    Path((_, skill)): Path<(String, String)>,
) -> PageResult {
    let s = svc::get(&state, &member.caller, &skill).await?;
    let view = form_view(&member, Some(s.slug.as_str()), &s.body, FormErrors::new());
    Ok(muster_web::pages::skill_form(&view).into_response())
}

async fn update(
    State(state): State<AppState>,
    member: WsMember,
    Path((_, skill)): Path<(String, String)>,
    Form(form): Form<SkillForm>,
) -> PageResult {
    let input = form.input();
    match svc::update(&state, &member.caller, &skill, &input).await {
        Ok(s) => Ok(see_other(&format!(
            "{}/skills/{}",
            base(&member),
            s.slug.as_str()
        ))),
        Err(e) => {
            let view = form_view(&member, Some(&skill), &input.skill_md, form_errors(e)?);
            Ok(invalid(muster_web::pages::skill_form(&view)))
        }
    }
}

async fn preview(member: WsMember, Form(form): Form<SkillForm>) -> PageResult {
    let _ = member;
    let (safe_html, problems) = svc::preview(&form.input().skill_md);
    Ok(muster_web::pages::skill_preview(&SkillPreviewView {
        problems,
        safe_html,
    })
    .into_response())
}

/// An upload (`path` is `None`) or import that failed: the list again, with the messages in that form.
async fn failed(
    state: &AppState,
    member: &WsMember,
    e: impl Into<Error>,
    path: Option<String>,
) -> PageResult {
    let errors = form_errors(e)?;
    let (which, path) = match path {
        None => (Failed::Upload(errors), String::new()),
        Some(path) => (Failed::Import(errors), path),
    };
    Ok(invalid(list_view(state, member, which, path).await?))
}

async fn upload(
    State(state): State<AppState>,
    member: WsMember,
    mut multipart: Multipart,
) -> PageResult {
    let mut csrf = String::new();
    let mut archive: Option<Vec<u8>> = None;
    let bad = |m: String| Error::Rejected(axum::http::StatusCode::BAD_REQUEST, "upload", m);
    while let Some(field) = multipart
        .next_field()
        .await
        .map_err(|e| bad(e.body_text()))?
    {
        match field.name() {
            Some("_csrf") => csrf = field.text().await.map_err(|e| bad(e.body_text()))?,
            Some("archive") => {
                archive = Some(
                    field
                        .bytes()
                        .await
                        .map_err(|e| bad(e.body_text()))?
                        .to_vec(),
                )
            }
            _ => {}
        }
    }
    if !crate::auth::constant_time_eq(&csrf, &member.csrf) {
        return Err(Error::CsrfMismatch.into());
    }
    let result = match archive.filter(|a| !a.is_empty()) {
        Some(bytes) => svc::import_archive(&state, &member.caller, &bytes)
            .await
            .map_err(Error::from),
        None => Err(Error::invalid([(
            "archive",
            "choose a .zip or .skill file".to_owned(),
        )])),
    };
    match result {
        Ok(s) => Ok(see_other(&format!(
            "{}/skills/{}",
            base(&member),
            s.slug.as_str()
        ))),
        Err(e) => failed(&state, &member, e, None).await,
    }
}

async fn import_path(
    State(state): State<AppState>,
    member: WsMember,
    Form(form): Form<ImportForm>,
) -> PageResult {
    let path = form.path;
    match svc::import_folder(&state, &member.caller, &path).await {
        Ok(s) => Ok(see_other(&format!(
            "{}/skills/{}",
            base(&member),
            s.slug.as_str()
        ))),
        Err(e) => failed(&state, &member, e, Some(path)).await,
    }
}

async fn export(
    State(state): State<AppState>,
    member: WsMember,
    Path((_, skill)): Path<(String, String)>,
) -> PageResult {
    let (name, bytes) = svc::export(&state, &member.caller, &skill).await?;
    Ok(crate::http::api::zip_response(&name, bytes))
}

async fn delete(
    State(state): State<AppState>,
    member: WsMember,
    Path((_, skill)): Path<(String, String)>,
    _form: Form<NoFields>,
) -> PageResult {
    svc::delete(&state, &member.caller, &skill).await?;
    Ok(see_other(&format!("{}/skills", base(&member))))
}

/// The agent's skills section (a fragment for htmx, a small page without it).
async fn section(state: &AppState, member: &WsMember, agent: &str, hx: bool) -> PageResult {
    let attached = svc::of_agent(state, &member.caller, agent).await?;
    let all = state.store.list_skills(member.caller.ws.id).await?;
    let base = base(member);
    let view = AgentSkillsView {
        csrf: member.csrf.clone(),
        base_url: format!("{base}/agents/{agent}/skills"),
        attached: attached
            .iter()
            .map(|a| AgentSkillRowView {
                slug: a.skill.slug.as_str().to_owned(),
                description: a.skill.description.clone(),
                enabled: a.enabled,
                url: format!("{base}/skills/{}", a.skill.slug.as_str()),
            })
            .collect(),
        available: all
            .iter()
            .filter(|s| !attached.iter().any(|a| a.skill.id == s.id))
            .map(|s| OptionView {
                value: s.slug.as_str().to_owned(),
                label: s.slug.as_str().to_owned(),
                selected: false,
            })
            .collect(),
        skills_url: format!("{base}/skills"),
    };
    let fragment = muster_web::partials::agent_skills::agent_skills(&view);
    if hx {
        return Ok(fragment.into_response());
    }
    let body = html! {
        p { a href={ (base) "/agents/" (agent) } { "Back to " (agent) } }
        (fragment)
    };
    Ok(muster_web::layout::page(
        &format!("Skills of {agent}"),
        Some(&nav(&member.caller, &member.csrf, NavItem::Agents)),
        body,
    )
    .into_response())
}

/// After a change: the fragment for htmx, else back to the agent's page.
async fn changed(state: &AppState, member: &WsMember, agent: &str, hx: bool) -> PageResult {
    if hx {
        section(state, member, agent, true).await
    } else {
        Ok(see_other(&format!("{}/agents/{agent}", base(member))))
    }
}

async fn agent_section(
    State(state): State<AppState>,
    member: WsMember,
    HxRequest(hx): HxRequest,
    Path((_, name)): Path<(String, String)>,
) -> PageResult {
    section(&state, &member, &name, hx).await
}

async fn attach(
    State(state): State<AppState>,
    member: WsMember,
    HxRequest(hx): HxRequest,
    Path((_, name)): Path<(String, String)>,
    Form(form): Form<AttachForm>,
) -> PageResult {
    let enabled = form.enabled == "true";
    svc::attach(&state, &member.caller, &name, &form.skill, enabled).await?;
    changed(&state, &member, &name, hx).await
}

async fn toggle(
    State(state): State<AppState>,
    member: WsMember,
    HxRequest(hx): HxRequest,
    Path((_, name, skill)): Path<(String, String, String)>,
    Form(form): Form<AttachForm>,
) -> PageResult {
    let enabled = form.enabled == "true";
    svc::attach(&state, &member.caller, &name, &skill, enabled).await?;
    changed(&state, &member, &name, hx).await
}

async fn detach(
    State(state): State<AppState>,
    member: WsMember,
    HxRequest(hx): HxRequest,
    Path((_, name, skill)): Path<(String, String, String)>,
    _form: Form<NoFields>,
) -> PageResult {
    svc::detach(&state, &member.caller, &name, &skill).await?;
    changed(&state, &member, &name, hx).await
}
