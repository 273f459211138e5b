//! The Ensembles pages: the workspace's ensembles, which any member reads, and the form with which owners
//! and admins define, change and delete one. Running an issue through an ensemble and comparing its
//! candidates are in `ensembles.rs`.

use axum::Router;
use axum::extract::{Path, State};
use axum::response::IntoResponse;
use axum::routing::{get, post};
use muster_web::views::{
    EnsembleFormView, EnsembleListView, EnsembleRowView, FormErrors, MemberChoiceView, NavItem,
    OptionView,
};

use super::runs::thousands;
use super::views::{People, nav};
use super::{PageResult, form_errors, invalid, see_other};
use crate::domain::{Actor, EarlyStop, Ensemble};
use crate::http::extract::WsMember;
use crate::http::form::{Form, NoFields};
use crate::service::Problems;
use crate::service::ensembles::{self as svc, EnsembleInput};
use crate::state::AppState;

pub(super) fn router() -> Router<AppState> {
    Router::new()
        .route("/w/{slug}/ensembles", get(list).post(create))
        .route("/w/{slug}/ensembles/new", get(new))
        .route("/w/{slug}/ensembles/{name}", post(update))
        .route("/w/{slug}/ensembles/{name}/edit", get(edit))
        .route("/w/{slug}/ensembles/{name}/delete", post(delete))
}

fn base(member: &WsMember) -> String {
    format!("/w/{}", member.caller.ws.slug)
}

/// The workspace's agents, for avatars, member checkboxes and the reviewer picker.
async fn people(state: &AppState, member: &WsMember) -> PageResult<People> {
    Ok(People::new(
        Vec::new(),
        state.store.list_agents(member.caller.ws.id).await?,
    ))
}

/// "$3.00", or "$0.1667" when cents would hide what a candidate gets.
fn money(usd: f64) -> String {
    if ((usd * 100.0).round() - usd * 100.0).abs() < 1e-6 {
        format!("${usd:.2}")
    } else {
        format!("${usd:.4}")
    }
}

/// "$3.00 · 200,000 tokens", or `None` when there is no limit.
fn amount(usd: Option<f64>, tokens: Option<i64>) -> Option<String> {
    let parts: Vec<String> = usd
        .map(money)
        .into_iter()
        .chain(tokens.map(|t| format!("{} tokens", thousands(t))))
        .collect();
    (!parts.is_empty()).then(|| parts.join(" · "))
}

fn early_stop_label(policy: EarlyStop) -> String {
    match policy {
        EarlyStop::All => "all finish".to_owned(),
        EarlyStop::FirstGreen => "first green".to_owned(),
        EarlyStop::Quorum(k) => format!("quorum {k}"),
    }
}

fn row(member: &WsMember, people: &People, e: &Ensemble) -> EnsembleRowView {
    let s = &e.settings;
    let name = e.name.as_str();
    let each = s.candidate_budget();
    let share = match s.share {
        Some(share) => format!("{}% share", (share * 1000.0).round() / 10.0),
        None => "equal share".to_owned(),
    };
    EnsembleRowView {
        name: name.to_owned(),
        members: s
            .members
            .iter()
            .map(|m| people.person(Actor::Agent(*m)))
            .collect(),
        check: s.check.as_ref().map(|c| c.command.clone()),
        check_timeout: s
            .check
            .as_ref()
            .map(|c| format!("stopped after {} s", c.timeout_secs)),
        early_stop: early_stop_label(s.early_stop),
        reviewer: s.reviewer.map(|r| people.person(Actor::Agent(r))),
        budget: amount(s.budget.usd, s.budget.tokens),
        per_candidate: amount(each.usd, each.tokens),
        share,
        edit_url: member
            .caller
            .role
            .can_manage()
            .then(|| format!("{}/ensembles/{name}/edit", base(member))),
    }
}

async fn list(State(state): State<AppState>, member: WsMember) -> PageResult {
    let all = svc::list(&state, &member.caller).await?;
    let people = people(&state, &member).await?;
    let view = EnsembleListView {
        nav: nav(&member.caller, &member.csrf, NavItem::Ensembles),
        ensembles: all.iter().map(|e| row(&member, &people, e)).collect(),
        can_manage: member.caller.role.can_manage(),
    };
    Ok(muster_web::pages::ensembles(&view).into_response())
}

/// The form's fields as text: from a stored ensemble, or as the person sent them (the form's body).
#[derive(Debug, Default, serde::Deserialize)]
#[serde(default)]
struct Typed {
    name: String,
    members: Vec<String>,
    check: String,
    check_timeout: String,
    /// `all`, `first_green` or `quorum`.
    early_stop: String,
    quorum: String,
    reviewer: String,
    budget_usd: String,
    budget_tokens: String,
    share: String,
}

impl Typed {
    fn of(e: &Ensemble, people: &People) -> Self {
        let s = &e.settings;
        let name_of = |id| {
            people
                .agents
                .iter()
                .find(|a| a.id == id)
                .map(|a| a.profile.name.as_str().to_owned())
        };
        let (early_stop, quorum) = match s.early_stop {
            EarlyStop::All => ("all", String::new()),
            EarlyStop::FirstGreen => ("first_green", String::new()),
            EarlyStop::Quorum(k) => ("quorum", k.to_string()),
        };
        let text = |v: Option<String>| v.unwrap_or_default();
        Typed {
            name: e.name.as_str().to_owned(),
            members: s.members.iter().filter_map(|m| name_of(*m)).collect(),
            check: text(s.check.as_ref().map(|c| c.command.clone())),
            check_timeout: text(s.check.as_ref().map(|c| c.timeout_secs.to_string())),
            early_stop: early_stop.to_owned(),
            quorum,
            reviewer: text(s.reviewer.and_then(name_of)),
            budget_usd: text(s.budget.usd.map(|u| u.to_string())),
            budget_tokens: text(s.budget.tokens.map(|t| t.to_string())),
            share: text(s.share.map(|f| f.to_string())),
        }
    }
}

const EARLY_STOPS: &[(&str, &str)] = &[
    ("all", "All finish"),
    ("first_green", "First green"),
    ("quorum", "Quorum of K"),
];

/// The form for a new ensemble (`stored` `None`) or for the one stored under `stored`.
fn form_view(
    member: &WsMember,
    people: &People,
    stored: Option<&str>,
    typed: Typed,
    errors: FormErrors,
) -> EnsembleFormView {
    let base = base(member);
    let option = |value: &str, label: &str, selected: &str| OptionView {
        value: value.to_owned(),
        label: label.to_owned(),
        selected: value == selected,
    };
    let agent_names = people.agents.iter().map(|a| a.profile.name.as_str());
    EnsembleFormView {
        nav: nav(&member.caller, &member.csrf, NavItem::Ensembles),
        is_new: stored.is_none(),
        title: stored.unwrap_or("New ensemble").to_owned(),
        action: stored.map_or_else(
            || format!("{base}/ensembles"),
            |n| format!("{base}/ensembles/{n}"),
        ),
        delete_url: stored.map(|n| format!("{base}/ensembles/{n}/delete")),
        agents: people
            .agents
            .iter()
            .map(|a| MemberChoiceView {
                name: a.profile.name.as_str().to_owned(),
                avatar: people.person(Actor::Agent(a.id)),
                checked: typed.members.iter().any(|m| m == a.profile.name.as_str()),
            })
            .collect(),
        early_stop: EARLY_STOPS
            .iter()
            .map(|(v, l)| option(v, l, &typed.early_stop))
            .collect(),
        reviewer: std::iter::once(option("", "None", &typed.reviewer))
            .chain(agent_names.map(|n| option(n, n, &typed.reviewer)))
            .collect(),
        name: typed.name,
        check: typed.check,
        check_timeout: typed.check_timeout,
        quorum: typed.quorum,
        budget_usd: typed.budget_usd,
        budget_tokens: typed.budget_tokens,
        share: typed.share,
        errors,
    }
}

/// Parses the form into the service's input; what does not parse (a number, K of a quorum) becomes a
/// field problem returned beside it, so the service reports it with its own in one 422. A check timeout
/// without a check command is dropped: it would time nothing.
fn ensemble_input(form: &Typed) -> (EnsembleInput, Problems) {
    let mut problems = Problems::default();
    let check = form.check.trim().to_owned();
    let check_timeout_secs = match form.check_timeout.trim() {
        "" => None,
        _ if check.is_empty() => None,
        raw => raw
            .parse::<u64>()
            .map_err(|_| problems.add("check_timeout", "must be a whole number of seconds"))
            .ok(),
    };
    let early_stop = match form.early_stop.trim() {
        "" => None,
        "quorum" => match form.quorum.trim().parse::<u8>() {
            Ok(k) if (1..=8).contains(&k) => Some(format!("quorum {k}")),
            _ => {
                problems.add("quorum", "K must be a whole number from 1 to 8");
                None
            }
        },
        other => Some(other.to_owned()),
    };
    let budget_usd = match form.budget_usd.trim().trim_start_matches('$') {
        "" => Some(0.0),
        raw => raw
            .parse::<f64>()
            .map_err(|_| problems.add("budget_usd", "must be an amount like 2.50"))
            .ok(),
    };
    let budget_tokens = match form.budget_tokens.replace([',', '_', ' '], "").as_str() {
        "" => Some(0),
        raw => raw
            .parse::<i64>()
            .map_err(|_| problems.add("budget_tokens", "must be a whole number of tokens"))
            .ok(),
    };
    let share = match form.share.trim() {
        "" => Some(0.0),
        raw => match raw.strip_suffix('%') {
            Some(pct) => pct.trim().parse::<f64>().map(|p| p / 100.0),
            None => raw.parse::<f64>(),
        }
        .map_err(|_| problems.add("share", "must be a fraction like 0.5 (or a percentage)"))
        .ok(),
    };
    let input = EnsembleInput {
        name: Some(form.name.clone()),
        members: Some(form.members.clone()),
        check: Some(check),
        check_timeout_secs,
        early_stop,
        reviewer: Some(form.reviewer.clone()),
        budget_usd,
        budget_tokens,
        share,
    };
    (input, problems)
}

async fn new(State(state): State<AppState>, member: WsMember) -> PageResult {
    member.caller.require_manager()?;
    let people = people(&state, &member).await?;
    let typed = Typed {
        early_stop: "all".to_owned(),
        ..Typed::default()
    };
    let view = form_view(&member, &people, None, typed, FormErrors::new());
    Ok(muster_web::pages::ensemble_form(&view).into_response())
}

async fn create(
    State(state): State<AppState>,
    member: WsMember,
    Form(form): Form<Typed>,
) -> PageResult {
    let (input, problems) = ensemble_input(&form);
    match svc::create_checked(&state, &member.caller, &input, problems).await {
        Ok(_) => Ok(see_other(&format!("{}/ensembles", base(&member)))),
        Err(e) => {
            let errors = form_errors(e)?;
            let people = people(&state, &member).await?;
            let view = form_view(&member, &people, None, form, errors);
            Ok(invalid(muster_web::pages::ensemble_form(&view)))
        }
    }
}

async fn edit(
    State(state): State<AppState>,
    member: WsMember,
    Path((_, name)): Path<(String, String)>,
) -> PageResult {
    member.caller.require_manager()?;
    let found = svc::by_name(&state, &member.caller, &name).await?;
    let people = people(&state, &member).await?;
    let typed = Typed::of(&found, &people);
    let view = form_view(
        &member,
        &people,
        Some(found.name.as_str()),
        typed,
        FormErrors::new(),
    );
    Ok(muster_web::pages::ensemble_form(&view).into_response())
}

async fn update(
    State(state): State<AppState>,
    member: WsMember,
    Path((_, name)): Path<(String, String)>,
    Form(form): Form<Typed>,
) -> PageResult {
    let (input, problems) = ensemble_input(&form);
    match svc::update_checked(&state, &member.caller, &name, &input, problems).await {
        Ok(_) => Ok(see_other(&format!("{}/ensembles", base(&member)))),
        Err(e) => {
            let errors = form_errors(e)?;
            let people = people(&state, &member).await?;
            let view = form_view(&member, &people, Some(&name), form, errors);
            Ok(invalid(muster_web::pages::ensemble_form(&view)))
        }
    }
}

async fn delete(
    State(state): State<AppState>,
    member: WsMember,
    Path((_, name)): Path<(String, String)>,
    _form: Form<NoFields>,
) -> PageResult {
    svc::delete(&state, &member.caller, &name).await?;
    Ok(see_other(&format!("{}/ensembles", base(&member))))
}

#[cfg(test)]
mod tests;
