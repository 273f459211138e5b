//! Agent profile pages: the list, the create/edit form, delete.

use axum::Router;
use axum::extract::{Path, State};
use axum::response::IntoResponse;
use axum::routing::{get, post};
use muster_web::views::{
    AgentFormView, AgentListView, AgentRowView, EnvVarView, NavItem, OptionView,
};

use super::views::{People, nav};
use super::{PageResult, form_errors, invalid, see_other};
use crate::domain::{Actor, Agent, NewAgent, PermissionMode, RuntimeKind};
use crate::http::Error;
use crate::http::extract::WsMember;
use crate::http::form::{Form, NoFields};
use crate::redact::without_credentials;
use crate::service::agents::{self as svc, AgentInput};
use crate::state::AppState;

mod form;
use form::AgentForm;

pub(super) fn router() -> Router<AppState> {
    Router::new()
        .route("/w/{slug}/agents", get(list).post(create))
        .route("/w/{slug}/agents/new", get(new))
        .route("/w/{slug}/agents/{name}", get(show).post(update))
        .route("/w/{slug}/agents/{name}/delete", post(delete))
}

fn budget_text(a: &NewAgent) -> String {
    match (a.budget.usd, a.budget.tokens) {
        (None, None) => "no budget".into(),
        (Some(u), None) => format!("${u:.2} per run"),
        (None, Some(t)) => format!("{t} tokens per run"),
        (Some(u), Some(t)) => format!("${u:.2} / {t} tokens per run"),
    }
}

async fn list(State(state): State<AppState>, member: WsMember) -> PageResult {
    let agents = state.store.list_agents(member.caller.ws.id).await?;
    let slug = member.caller.ws.slug.to_string();
    let people = People::new(Vec::new(), agents.clone());
    let view = AgentListView {
        nav: nav(&member.caller, &member.csrf, NavItem::Agents),
        agents: agents
            .iter()
            .map(|a| AgentRowView {
                name: a.profile.name.as_str().to_owned(),
                avatar: people.person(Actor::Agent(a.id)),
                kind_label: a.profile.kind.label().to_owned(),
                model: a.profile.model.clone(),
                url: format!("/w/{slug}/agents/{}", a.profile.name.as_str()),
                max_concurrent_runs: a.profile.max_concurrent_runs,
                budget: budget_text(&a.profile),
            })
            .collect(),
        can_manage: member.caller.role.can_manage(),
    };
    Ok(muster_web::pages::agents(&view).into_response())
}

fn options<T: Copy + PartialEq>(
    all: &[T],
    name: impl Fn(T) -> &'static str,
    label: impl Fn(T) -> &'static str,
    selected: &str,
) -> Vec<OptionView> {
    all.iter()
        .map(|v| OptionView {
            value: name(*v).into(),
            label: label(*v).into(),
            selected: name(*v) == selected,
        })
        .collect()
}

/// The form filled from a stored profile (secret values never included).
fn form_from_profile(member: &WsMember, agent: Option<&Agent>, p: &NewAgent) -> AgentFormView {
    let slug = &member.caller.ws.slug;
    let opt = |v: Option<String>| v.unwrap_or_default();
    AgentFormView {
        nav: nav(&member.caller, &member.csrf, NavItem::Agents),
        is_new: agent.is_none(),
        action: agent.map_or_else(
            || format!("/w/{slug}/agents"),
            |a| format!("/w/{slug}/agents/{}", a.profile.name.as_str()),
        ),
        delete_url: agent
            .filter(|_| member.caller.role.can_manage())
            .map(|a| format!("/w/{slug}/agents/{}/delete", a.profile.name.as_str())),
        can_edit: true,
        can_manage_runtime: svc::may_manage_runtime(&member.caller),
        name: if agent.is_some() {
            p.name.as_str().to_owned()
        } else {
            String::new()
        },
        color: p.color.clone(),
        kind: options(
            &RuntimeKind::ALL,
            RuntimeKind::as_str,
            RuntimeKind::label,
            p.kind.as_str(),
        ),
        model: opt(p.model.clone()),
        instructions: p.instructions.clone(),
        env: p
            .env
            .iter()
            .map(|v| EnvVarView {
                key: v.key.clone(),
                value: if v.secret {
                    String::new()
                } else {
                    v.value.clone()
                },
                secret: v.secret,
                has_value: !v.value.is_empty(),
                kept: String::new(),
            })
            .collect(),
        extra_args: p.extra_args.join("\n"),
        runners: p.runners.join(", "),
        egress_hosts: p
            .egress_hosts
            .iter()
            .map(|h| h.as_str())
            .collect::<Vec<_>>()
            .join("\n"),
        network: network_options(p.no_network),
        permission_mode: options(
            &PermissionMode::ALL,
            PermissionMode::as_str,
            PermissionMode::label,
            p.permission_mode.as_str(),
        ),
        max_concurrent_runs: p.max_concurrent_runs.to_string(),
        stall_timeout_secs: p.stall_timeout_secs.to_string(),
        max_retries: p.max_retries.to_string(),
        budget_usd: p.budget.usd.map(|u| u.to_string()).unwrap_or_default(),
        budget_tokens: p.budget.tokens.map(|t| t.to_string()).unwrap_or_default(),
        command: opt(p.command.clone()),
        // Credentials in the URL are for the owners and admins who edit it; members see it without them.
        base_url: p
            .base_url
            .as_deref()
            .map(|url| {
                if member.caller.role.can_manage() {
                    url.to_owned()
                } else {
                    without_credentials(url)
                }
            })
            .unwrap_or_default(),
        errors: Default::default(),
        runtime_warning: None,
    }
}

/// "Codex is not installed: …" when the agent's runtime is unusable here, so a person sees it on the
/// profile instead of when a run fails. From the detections the Runtimes page shows: the CLI's for the
/// CLI kinds, the model-server scan for `llama` agents (Muster runs their loop itself; they need a
/// server, not a binary).
async fn runtime_warning(state: &AppState, member: &WsMember, agent: &Agent) -> Option<String> {
    if agent.profile.kind.is_local_model() {
        return llama_warning(state, member, agent.profile.base_url.as_deref()).await;
    }
    let kind = agent.profile.kind;
    let (_, found) = state.runtimes.get().await;
    let d = found.iter().find(|d| d.kind == kind)?;
    let status = match d.status {
        muster_agents::DetectionStatus::Found => return unreachable_warning(agent).await,
        muster_agents::DetectionStatus::NotInstalled => "is not installed",
        muster_agents::DetectionStatus::TooOld => "is too old",
        muster_agents::DetectionStatus::Broken => "does not work",
    };
    let reason = d
        .reason
        .as_deref()
        .map(|r| format!(": {r}"))
        .unwrap_or_default();
    Some(format!(
        "{} {status} on this server{reason}. See the Runtimes page.",
        kind.label()
    ))
}

/// How long the agent page waits for the agent's model server to accept a connection.
const PAGE_PROBE_TIMEOUT: std::time::Duration = std::time::Duration::from_millis(1500);

/// "Nothing accepts connections at …" when the agent's base URL (the field, or its CLI's own variable in
/// its env) points where nothing listens: its runs would fail at start, so the profile says so now.
async fn unreachable_warning(agent: &Agent) -> Option<String> {
    let url = crate::service::runtimes::base_url_of(agent)?;
    let why = muster_llama::probe::accepts_connections(&url, PAGE_PROBE_TIMEOUT)
        .await
        .err()?;
    Some(format!(
        "Nothing accepts connections at {why}, the agent's base URL: its runs will fail at start until \
         the model server is up there, or the Base URL is changed."
    ))
}

/// Why a `llama` agent cannot run here, from the workspace's model-server scan (the Runtimes page's):
/// its base URL's server is not ready, or (without one) no server is. A base URL the cached scan has not
/// seen yet (an agent made or changed since) is scanned now, as the Runtimes page's re-detect would (and
/// as often at most); until then nothing is claimed.
async fn llama_warning(
    state: &AppState,
    member: &WsMember,
    base_url: Option<&str>,
) -> Option<String> {
    use crate::service::runtimes as rt;
    use muster_llama::{ModelServer, ServerStatus};

    let ws = member.caller.ws.id;
    let (_, mut local) = rt::cached(state, ws).await;
    let Some(url) = base_url.map(str::trim).filter(|u| !u.is_empty()) else {
        if local
            .servers
            .iter()
            .any(|s| s.status == ServerStatus::Ready)
        {
            return None;
        }
        return Some(
            "No local model server is ready: give the agent a base URL, set MUSTER_LLAMA_URL, or start \
             llama-server or Ollama on its usual port. See the Runtimes page."
                .to_owned(),
        );
    };
    let root = muster_llama::without_credentials(&muster_llama::server_root(url));
    let find = |servers: &[ModelServer]| servers.iter().find(|s| s.url == root).cloned();
    let server = match find(&local.servers) {
        Some(s) => s,
        // At most once per re-detect interval, as the Runtimes page's button.
        None if state.runtimes.claim_redetect(ws).is_ok() => {
            local = state
                .runtimes
                .scan_local_models(ws, &rt::local_model_urls(state, ws).await)
                .await;
            find(&local.servers)?
        }
        None => return None,
    };
    if server.status == ServerStatus::Ready {
        return None;
    }
    let reason = server
        .reason
        .as_deref()
        .map(|r| format!(": {r}"))
        .unwrap_or_default();
    Some(format!(
        "The agent's model server {root} is {}{reason}. See the Runtimes page.",
        server.status.as_str()
    ))
}

/// Keeps a secret typed into a form that came back with errors, without ever showing it: the page gets
/// it sealed (the server's key; bound to this workspace and person, so a sealed value from anywhere else
/// opens to nothing) in a hidden field, and the next submission opens it where the field is left empty.
struct Keeper<'a> {
    secrets: &'a crate::secrets::SecretBox,
    context: String,
}

impl<'a> Keeper<'a> {
    fn new(state: &'a AppState, member: &WsMember) -> Self {
        Keeper {
            secrets: &state.secrets,
            context: format!(
                "agent-form-kept:{}:{}:",
                member.caller.ws.id, member.caller.user.id
            ),
        }
    }

    /// `value` sealed for this form; "" if it cannot be (it is then typed again).
    fn keep(&self, value: &str) -> String {
        self.secrets
            .seal(&format!("{}{value}", self.context))
            .unwrap_or_default()
    }

    /// What [`Keeper::keep`] sealed for this workspace and person, if `sealed` is that.
    fn open(&self, sealed: &str) -> Option<String> {
        let plain = self.secrets.open(sealed.trim()).ok()?;
        plain.strip_prefix(&self.context).map(str::to_owned)
    }
}

/// The form as submitted, for re-rendering with errors: secret values never shown, those typed kept
/// sealed ([`Keeper`]).
fn form_from_input(
    member: &WsMember,
    agent: Option<&Agent>,
    form: &AgentForm,
    keeper: &Keeper<'_>,
) -> AgentFormView {
    let defaults = NewAgent::default();
    let mut view = form_from_profile(member, agent, agent.map_or(&defaults, |a| &a.profile));
    let text = |v: &Option<String>| v.clone().unwrap_or_default();
    // A field the form did not send (disabled for a member) shows what is stored.
    if let Some(name) = &form.name {
        view.name.clone_from(name);
    }
    view.color.clone_from(&form.color);
    view.kind = options(
        &RuntimeKind::ALL,
        RuntimeKind::as_str,
        RuntimeKind::label,
        &form.kind,
    );
    if let Some(model) = &form.model {
        view.model.clone_from(model);
    }
    view.instructions.clone_from(&form.instructions);
    view.env = form
        .env_rows(keeper)
        .into_iter()
        .map(|e| {
            let typed = e.value.filter(|v| !v.is_empty());
            EnvVarView {
                has_value: e.secret && agent.is_some(),
                kept: match &typed {
                    Some(v) if e.secret => keeper.keep(v),
                    _ => String::new(),
                },
                value: if e.secret {
                    String::new()
                } else {
                    typed.unwrap_or_default()
                },
                key: e.key,
                secret: e.secret,
            }
        })
        .collect();
    view.extra_args = text(&form.extra_args);
    view.runners = text(&form.runners);
    view.egress_hosts = text(&form.egress_hosts);
    view.network = network_options(form.network.as_deref() == Some("none"));
    view.permission_mode = options(
        &PermissionMode::ALL,
        PermissionMode::as_str,
        PermissionMode::label,
        &form.permission_mode,
    );
    view.max_concurrent_runs = form.max_concurrent_runs.text().to_owned();
    if form.stall_timeout_secs.sent() {
        view.stall_timeout_secs = form.stall_timeout_secs.text().to_owned();
    }
    view.max_retries = form.max_retries.text().to_owned();
    view.budget_usd = form.budget_usd.text().to_owned();
    view.budget_tokens = form.budget_tokens.text().to_owned();
    view.command = text(&form.command);
    view.base_url = text(&form.base_url);
    view
}

/// The agent form's network choices.
fn network_options(no_network: bool) -> Vec<OptionView> {
    [
        ("allow_list", "Allowed hosts"),
        ("none", "None (model endpoint only)"),
    ]
    .into_iter()
    .map(|(value, label)| OptionView {
        value: value.into(),
        label: label.into(),
        selected: (value == "none") == no_network,
    })
    .collect()
}

async fn new(member: WsMember) -> PageResult {
    if !svc::may_manage_runtime(&member.caller) {
        return Err(Error::not_allowed([(
            "role",
            "only owners and admins may create agents".to_owned(),
        )])
        .into());
    }
    let defaults = NewAgent::default();
    Ok(muster_web::pages::agent_form(&form_from_profile(&member, None, &defaults)).into_response())
}

async fn create(
    State(state): State<AppState>,
    member: WsMember,
    Form(form): Form<AgentForm>,
) -> PageResult {
    let keeper = Keeper::new(&state, &member);
    let (input, problems) = form.input(&keeper);
    let result = svc::create_checked(&state, &member.caller, &input, problems).await;
    match result {
        Ok(agent) => Ok(see_other(&format!(
            "/w/{}/agents/{}",
            member.caller.ws.slug,
            agent.profile.name.as_str()
        ))),
        Err(e) => {
            let mut view = form_from_input(&member, None, &form, &keeper);
            view.errors = form_errors(e)?;
            Ok(invalid(muster_web::pages::agent_form(&view)))
        }
    }
}

async fn show(
    State(state): State<AppState>,
    member: WsMember,
    Path((_, name)): Path<(String, String)>,
) -> PageResult {
    let agent = svc::by_name(&state, &member.caller, &name).await?;
    let mut view = form_from_profile(&member, Some(&agent), &agent.profile);
    view.runtime_warning = runtime_warning(&state, &member, &agent).await;
    Ok(muster_web::pages::agent_form(&view).into_response())
}

async fn update(
    State(state): State<AppState>,
    member: WsMember,
    Path((_, name)): Path<(String, String)>,
    Form(form): Form<AgentForm>,
) -> PageResult {
    let agent = svc::by_name(&state, &member.caller, &name).await?;
    let keeper = Keeper::new(&state, &member);
    let (mut input, problems) = form.input(&keeper);
    keep_hidden_credentials(&member, &agent, &mut input);
    let result = svc::update_checked(&state, &member.caller, &name, &input, problems).await;
    match result {
        Ok(updated) => Ok(see_other(&format!(
            "/w/{}/agents/{}",
            member.caller.ws.slug,
            updated.profile.name.as_str()
        ))),
        Err(e) => {
            let mut view = form_from_input(&member, Some(&agent), &form, &keeper);
            view.errors = form_errors(e)?;
            Ok(invalid(muster_web::pages::agent_form(&view)))
        }
    }
}

/// A member's form shows the base URL without its credentials; sent back as shown, it is unchanged.
fn keep_hidden_credentials(member: &WsMember, agent: &Agent, input: &mut AgentInput) {
    if member.caller.role.can_manage() {
        return;
    }
    if let Some(stored) = agent.profile.base_url.as_deref()
        && input.base_url.as_deref() == Some(without_credentials(stored).as_str())
    {
        input.base_url = Some(stored.to_owned());
    }
}

async fn delete(
    State(state): State<AppState>,
    member: WsMember,
    Path((_, name)): Path<(String, String)>,
    _form: Form<NoFields>,
) -> PageResult {
    svc::delete(&state, &member.caller, &name).await?;
    Ok(see_other(&format!("/w/{}/agents", member.caller.ws.slug)))
}
