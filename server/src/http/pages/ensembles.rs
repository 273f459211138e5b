//! An issue's ensemble pages: compare the candidates side by side (`GET …/ensemble`), assign the issue to
//! an ensemble from its page (`POST …/ensemble`), and choose a candidate (`POST …/ensemble/choose`).

use axum::Router;
use axum::extract::{Path, Query, State};
use axum::response::IntoResponse;
use axum::routing::{get, post};
use muster_web::views::{
    BudgetPartView, CandidateColumnView, DiffFileView, EnsemblePageView, FormErrors, NavItem,
    RecommendationView, ReviewStateView,
};
use serde::Deserialize;

use super::inbox::nav_with_inbox;
use super::runs::thousands;
use super::{PageResult, form_errors, see_other};
use crate::domain::EnsembleRun;
use crate::http::extract::WsMember;
use crate::http::form::Form;
use crate::service::ensembles::{self as svc, Comparison};
use crate::service::issues::parse_key;
use crate::state::AppState;

pub(super) fn router() -> Router<AppState> {
    Router::new()
        .route("/w/{slug}/issues/{key}/ensemble", get(show).post(assign))
        .route("/w/{slug}/issues/{key}/ensemble/choose", post(choose))
}

#[derive(Debug, Deserialize)]
struct ShowQuery {
    number: Option<i32>,
}

fn money(usd: f64) -> String {
    format!("${usd:.4}")
}

async fn page_view(
    state: &AppState,
    member: &WsMember,
    key: &str,
    number: Option<i32>,
) -> crate::http::Result<EnsemblePageView> {
    let caller = &member.caller;
    let key = parse_key(key)?;
    let (er, c) = svc::compare(state, caller, &key, number).await?;
    let issue = state.store.get_issue(caller.ws.id, &key).await?;
    let slug = caller.ws.slug.to_string();
    let issue_url = format!("/w/{slug}/issues/{key}");
    let others = state
        .store
        .list_ensemble_runs(issue.id)
        .await?
        .into_iter()
        .filter(|e| e.number != er.number)
        .map(|e| {
            (
                format!("{} r{}", e.name, e.number),
                format!("{issue_url}/ensemble?number={}", e.number),
            )
        })
        .collect();
    let people = super::views::People::load(state, caller).await?;
    let names: Vec<&str> = c.candidates.iter().map(|v| v.agent.as_str()).collect();
    let colors = people.side_by_side(&names);
    let mut candidates = Vec::with_capacity(c.candidates.len());
    for (v, color) in c.candidates.iter().zip(&colors) {
        let details = svc::candidate_details(state, crate::domain::RunId(v.run_id)).await?;
        candidates.push(column(&slug, color.clone(), v, &c, details));
    }
    let all_ended = c.candidates.iter().all(|v| {
        v.status
            .parse::<crate::domain::RunStatus>()
            .is_ok_and(crate::domain::RunStatus::is_terminal)
    });
    let live = matches!(c.status.as_str(), "running" | "reviewing");
    let review_run_url = er.review_run_id.map(|r| format!("/w/{slug}/runs/{r}"));
    Ok(EnsemblePageView {
        nav: nav_with_inbox(state, member, NavItem::Board).await?,
        issue_key: key.to_string(),
        issue_title: issue.title.as_str().to_owned(),
        self_url: match number {
            Some(n) => format!("{issue_url}/ensemble?number={n}"),
            None => format!("{issue_url}/ensemble"),
        },
        issue_url,
        ensemble: c.ensemble.clone(),
        number: c.number,
        status: c.status.clone(),
        live,
        early_stop: c.early_stop.clone(),
        check: c.check.clone(),
        base: match (&c.base_branch, &c.base_commit) {
            (Some(b), Some(commit)) => Some(format!("{b} @ {}", &commit[..commit.len().min(10)])),
            (None, Some(commit)) => Some(commit[..commit.len().min(10)].to_owned()),
            _ => None,
        },
        spent_label: spent_label(&c),
        budget_parts: budget_parts(&c, &colors),
        stop_reason: c.stop_reason.clone(),
        single_agent: c.single_agent_estimate_usd.map(money),
        review: review_state(&er, &c, review_run_url),
        recommendation: c.recommendation.as_ref().map(|r| RecommendationView {
            agent: r.agent.clone(),
            why: r.why.clone(),
            decided_by: r.decided_by.clone(),
        }),
        candidates,
        choose_url: (c.chosen.is_none() && all_ended && caller.run.is_none())
            .then(|| format!("/w/{slug}/issues/{key}/ensemble/choose")),
        can_merge: er.base_branch.is_some()
            && caller
                .ws
                .repo_path
                .as_deref()
                .is_some_and(|p| std::path::Path::new(p.trim()).is_dir()),
        merged_commit: c.merged_commit.clone(),
        others,
        errors: FormErrors::new(),
    })
}

fn spent_label(c: &Comparison) -> String {
    let mut label = money(c.spent_usd);
    if let Some(b) = c.budget_usd {
        label.push_str(&format!(" of {}", money(b)));
    }
    label.push_str(&format!(" · {} tokens", thousands(c.spent_tokens)));
    if let Some(t) = c.budget_tokens {
        label.push_str(&format!(" of {}", thousands(t)));
    }
    if c.review_cost_usd > 0.0 {
        label.push_str(&format!(" (review {})", money(c.review_cost_usd)));
    }
    label
}

/// The bar: each candidate's share of the budget (of the spend when there is no budget).
fn budget_parts(c: &Comparison, colors: &[String]) -> Vec<BudgetPartView> {
    let by_usd = c.budget_usd.is_some() || c.budget_tokens.is_none();
    let whole = match (c.budget_usd, c.budget_tokens) {
        (Some(b), _) => b.max(c.spent_usd),
        (None, Some(t)) => (t.max(c.spent_tokens)) as f64,
        (None, None) if c.spent_usd > 0.0 => c.spent_usd,
        (None, None) => return Vec::new(),
    };
    c.candidates
        .iter()
        .zip(colors)
        .map(|(v, color)| BudgetPartView {
            agent: v.agent.clone(),
            fraction: if whole > 0.0 {
                (if by_usd { v.cost_usd } else { v.tokens as f64 }) / whole
            } else {
                0.0
            },
            label: if by_usd {
                v.cost_label.clone()
            } else {
                format!("{} tokens", thousands(v.tokens))
            },
            color: color.clone(),
        })
        .collect()
}

fn review_state(
    er: &EnsembleRun,
    c: &Comparison,
    review_run_url: Option<String>,
) -> ReviewStateView {
    let state = match (c.review.as_str(), c.status.as_str()) {
        ("none", "reviewing") => "pending",
        ("none", "running") => "waiting",
        (s, _) => s,
    };
    ReviewStateView {
        state: state.to_owned(),
        message: c.review_error.clone(),
        // The label the reviewer judged, and (now that it is over) whose it was.
        best_label: c.review_best.as_ref().map(|label| {
            match c
                .candidates
                .iter()
                .find(|v| v.review_label.as_deref() == Some(label.as_str()))
            {
                Some(v) => format!("{label} ({})", v.agent),
                None => label.clone(),
            }
        }),
        review_run_url: review_run_url.filter(|_| er.review_run_id.is_some()),
    }
}

fn column(
    slug: &str,
    color: String,
    v: &svc::CandidateView,
    c: &Comparison,
    details: svc::CandidateDetails,
) -> CandidateColumnView {
    let (gate, gate_label) = match &v.check {
        None => ("none", "not checked".to_owned()),
        Some(check) => {
            let counts = match (check.passed, check.total) {
                (Some(p), Some(t)) => format!(", {p}/{t} passed"),
                _ => String::new(),
            };
            let secs = check.duration_ms as f64 / 1000.0;
            if v.green {
                ("pass", format!("passed{counts} in {secs:.1} s"))
            } else if check.timed_out {
                ("timed_out", format!("timed out after {secs:.0} s"))
            } else if let Some(e) = &check.error {
                ("error", format!("not run: {e}"))
            } else {
                (
                    "fail",
                    format!(
                        "failed (exit {}){counts} in {secs:.1} s",
                        check
                            .exit_code
                            .map_or_else(|| "?".to_owned(), |c| c.to_string())
                    ),
                )
            }
        }
    };
    CandidateColumnView {
        agent: v.agent.clone(),
        runtime: v.runtime.clone(),
        color,
        status: v.status.clone(),
        failure: v.failure_reason.as_ref().map(|r| {
            format!(
                "{r}{}",
                v.summary
                    .as_deref()
                    .map(|s| format!(": {s}"))
                    .unwrap_or_default()
            )
        }),
        run_url: format!("/w/{slug}/runs/{}", v.run_id),
        branch: v.branch.clone(),
        gate: gate.to_owned(),
        gate_label,
        check_tail: details.check_tail,
        diff_stat: v.diff_stat.clone(),
        files: details
            .files
            .into_iter()
            .map(|(path, patch)| DiffFileView { path, patch })
            .collect(),
        tokens: thousands(v.tokens),
        cost: v.cost_label.clone(),
        duration: v.duration_secs.map(|s| format!("{s} s")),
        review_label: v.review_label.clone(),
        review_score: v.review_score,
        review_reasons: v.review_reasons.clone(),
        log_tail: details.log_tail,
        recommended: c
            .recommendation
            .as_ref()
            .is_some_and(|r| r.run_id == v.run_id),
        chosen: v.chosen,
        choose_value: v.run_id.to_string(),
    }
}

async fn show(
    State(state): State<AppState>,
    member: WsMember,
    Path((_, key)): Path<(String, String)>,
    Query(q): Query<ShowQuery>,
) -> PageResult {
    let view = page_view(&state, &member, &key, q.number).await?;
    Ok(muster_web::pages::ensemble(&view).into_response())
}

/// Assigns the issue to the ensemble named in the form, then shows the comparison.
async fn assign(
    State(state): State<AppState>,
    member: WsMember,
    Path((slug, key)): Path<(String, String)>,
    Form(form): Form<AssignForm>,
) -> PageResult {
    let parsed = parse_key(&key)?;
    match svc::assign(&state, &member.caller, &parsed, &form.ensemble).await {
        Ok(_) => Ok(see_other(&format!("/w/{slug}/issues/{key}/ensemble"))),
        Err(e) => {
            let errors = form_errors(e)?;
            let message = errors
                .values()
                .flatten()
                .cloned()
                .collect::<Vec<_>>()
                .join("; ");
            Err(
                crate::http::Error::from(crate::service::Error::invalid([("ensemble", message)]))
                    .into(),
            )
        }
    }
}

/// Records the choice (and merges when asked), then shows the comparison; a refusal is shown on it.
async fn choose(
    State(state): State<AppState>,
    member: WsMember,
    Path((slug, key)): Path<(String, String)>,
    Form(form): Form<ChooseForm>,
) -> PageResult {
    let parsed = parse_key(&key)?;
    let merge = !form.merge.is_empty();
    match svc::choose(&state, &member.caller, &parsed, &form.candidate, merge).await {
        Ok(_) => Ok(see_other(&format!("/w/{slug}/issues/{key}/ensemble"))),
        Err(e) => {
            let errors = form_errors(e)?;
            let mut view = page_view(&state, &member, &key, None).await?;
            view.errors = errors;
            Ok(super::invalid(muster_web::pages::ensemble(&view)))
        }
    }
}

/// Runs an issue through the ensemble named `ensemble`.
#[derive(Debug, Default, serde::Deserialize)]
#[serde(default)]
struct AssignForm {
    ensemble: String,
}

/// The candidate a person chose, and whether to merge it (any value) or only pick it.
#[derive(Debug, Default, serde::Deserialize)]
#[serde(default)]
struct ChooseForm {
    candidate: String,
    merge: String,
}
