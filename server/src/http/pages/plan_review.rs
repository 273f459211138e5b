//! The planner on the pages: "Plan with agent" on the issue page's Plan panel, and the review page
//! (`/w/{slug}/issues/{key}/plan`) where a person edits an agent's proposed tree and approves it in one
//! step or discards it. Each form calls the same service as the API (`service::proposals`); a refused
//! approval shows the page again as typed, each problem naming its item.

use axum::Router;
use axum::extract::{Path, State};
use axum::routing::{get, post};
use muster_web::views::{
    FormErrors, NavItem, PlanFormsView, PlanReviewView, PlannerView, ReviewItemView,
};

use super::views::{People, nav};
use super::{PageResult, form_errors, see_other};
use crate::domain::{
    Issue, IssueStatus, Proposal, ProposalStatus, ProposedIssue, RunPurpose, check_tree,
};
use crate::http::extract::WsMember;
use crate::http::form::{Form, NoFields};
use crate::service::Caller;
use crate::service::issues::parse_key;
use crate::service::proposals::{self as svc, ApprovalInput, PlanRequest};
use crate::state::AppState;

pub(super) fn router() -> Router<AppState> {
    let at = |tail: &str| format!("/w/{{slug}}/issues/{{key}}/{tail}");
    Router::new()
        .route(&at("plan"), get(review))
        .route(&at("plan/agent"), post(plan_with))
        .route(&at("plan/{id}/approve"), post(approve))
        .route(&at("plan/{id}/discard"), post(discard))
}

/// The Plan panel's planner part: the agents to ask, a plan run at work, a proposal to review.
pub(super) async fn planner_view(
    state: &AppState,
    caller: &Caller,
    people: &People,
    issue: &Issue,
) -> crate::http::Result<PlannerView> {
    let slug = caller.ws.slug.as_str();
    let name = |id| {
        people.agents.iter().find(|a| a.id == id).map_or_else(
            || "deleted agent".to_owned(),
            |a| a.profile.name.as_str().to_owned(),
        )
    };
    let runs = state.store.list_runs_for_issue(issue.id).await?;
    let planning = runs
        .iter()
        .rev()
        .find(|r| r.purpose == RunPurpose::Plan && !r.status.is_terminal())
        .map(|r| (name(r.agent_id), format!("/w/{slug}/runs/{}", r.id)));
    let proposals = state.store.list_proposals(issue.id).await?;
    let pending = proposals
        .first()
        .filter(|p| p.status == ProposalStatus::Pending)
        .map(|p| {
            let n = p.items.len();
            (
                format!(
                    "{} proposed {n} sub-issue{}",
                    p.agent_id.map_or_else(|| "An agent".to_owned(), name),
                    if n == 1 { "" } else { "s" }
                ),
                format!("/w/{slug}/issues/{}/plan", issue.key),
            )
        });
    // A closed issue is not planned (reopen it first): no form.
    let open = !matches!(issue.status, IssueStatus::Done | IssueStatus::Cancelled);
    Ok(PlannerView {
        agents: people
            .agents
            .iter()
            .filter(|_| open)
            .map(|a| a.profile.name.as_str().to_owned())
            .collect(),
        planning,
        pending,
    })
}

async fn plan_with(
    State(state): State<AppState>,
    member: WsMember,
    Path((_, key)): Path<(String, String)>,
    Form(form): Form<PlanRequest>,
) -> PageResult {
    let key = parse_key(&key)?;
    match svc::request_plan(&state, &member.caller, &key, &form).await {
        Ok(_) => Ok(see_other(&format!(
            "/w/{}/issues/{key}#issue-plan",
            member.caller.ws.slug
        ))),
        Err(e) => {
            super::plans::refused(
                &state,
                &member,
                &key,
                form_errors(e)?,
                PlanFormsView::default(),
            )
            .await
        }
    }
}

/// The review page's rows for `items`: indented by depth when the tree checks, flat when it does not
/// (a refused edit may hold a cycle).
fn rows(
    items: &[ProposedIssue],
    dropped: &[String],
    created: &[(String, String)],
) -> Vec<ReviewItemView> {
    let depths = check_tree(items)
        .map(|t| t.depths())
        .unwrap_or_else(|_| vec![0; items.len()]);
    items
        .iter()
        .enumerate()
        .map(|(i, item)| ReviewItemView {
            reference: item.reference.clone(),
            title: item.title.clone(),
            description: item.description.clone(),
            acceptance: item.acceptance.clone(),
            agent: item.agent_name().unwrap_or_default().to_owned(),
            blocked_by: item.blocked_by.join(", "),
            depth: depths[i],
            dropped: dropped.contains(&item.reference),
            created: created.get(i).cloned(),
        })
        .collect()
}

async fn review_view(
    state: &AppState,
    member: &WsMember,
    issue: &Issue,
    proposal: Option<&Proposal>,
) -> crate::http::Result<PlanReviewView> {
    let caller = &member.caller;
    let slug = caller.ws.slug.as_str();
    let issue_url = format!("/w/{slug}/issues/{}", issue.key);
    let people = People::load(state, caller).await?;
    let mut view = PlanReviewView {
        nav: nav(caller, &member.csrf, NavItem::Board),
        issue_key: issue.key.to_string(),
        issue_title: issue.title.as_str().to_owned(),
        agents: people
            .agents
            .iter()
            .map(|a| a.profile.name.as_str().to_owned())
            .collect(),
        assign: true,
        ..PlanReviewView::default()
    };
    if let Some(p) = proposal {
        // A sub-issue deleted since links back to the planned issue.
        let created: Vec<(String, String)> = svc::created_issues(state, p)
            .await?
            .iter()
            .map(|made| match made {
                Some(made) => (
                    made.key.to_string(),
                    format!("/w/{slug}/issues/{}", made.key),
                ),
                None => ("deleted".to_owned(), issue_url.clone()),
            })
            .collect();
        view.status = Some(p.status.to_string());
        view.agent = p
            .agent_id
            .and_then(|id| people.agents.iter().find(|a| a.id == id))
            .map_or_else(
                || "An agent".to_owned(),
                |a| a.profile.name.as_str().to_owned(),
            );
        view.proposed = format!(
            "Proposed {}",
            super::runners::ago(p.created_at, chrono::Utc::now())
        );
        view.summary = p.summary.clone();
        view.items = rows(&p.items, &[], &created);
        view.approve_url = format!("{issue_url}/plan/{}/approve", p.id);
        view.discard_url = format!("{issue_url}/plan/{}/discard", p.id);
    }
    view.issue_url = issue_url;
    Ok(view)
}

async fn review(
    State(state): State<AppState>,
    member: WsMember,
    Path((_, key)): Path<(String, String)>,
) -> PageResult {
    let key = parse_key(&key)?;
    let (issue, proposals) = svc::of_issue(&state, &member.caller, &key).await?;
    let view = review_view(&state, &member, &issue, proposals.first()).await?;
    Ok(axum::response::IntoResponse::into_response(
        muster_web::pages::plan_review(&view),
    ))
}

/// The review form: one value of each field per row, in the rows' order, and the refs left out.
#[derive(Debug, Default, serde::Deserialize)]
#[serde(default)]
struct ReviewForm {
    #[serde(rename = "ref")]
    reference: Vec<String>,
    title: Vec<String>,
    description: Vec<String>,
    acceptance: Vec<String>,
    agent: Vec<String>,
    blocked_by: Vec<String>,
    drop: Vec<String>,
    /// A hidden `false` and, when ticked, `true` after it.
    assign: Vec<String>,
}

impl ReviewForm {
    /// Every row as typed (dropped ones too, to show them again on a refusal).
    fn rows(&self) -> Vec<ProposedIssue> {
        let at = |v: &[String], i: usize| v.get(i).cloned().unwrap_or_default();
        (0..self.reference.len())
            .map(|i| ProposedIssue {
                reference: at(&self.reference, i),
                title: at(&self.title, i),
                description: at(&self.description, i),
                acceptance: at(&self.acceptance, i),
                agent: Some(at(&self.agent, i)).filter(|a| !a.trim().is_empty()),
                blocked_by: at(&self.blocked_by, i)
                    .split(',')
                    .map(str::trim)
                    .filter(|r| !r.is_empty())
                    .map(str::to_owned)
                    .collect(),
            })
            .collect()
    }

    /// The rows kept: the dropped ones left out, and so out of every other row's blockers.
    fn kept(&self) -> Vec<ProposedIssue> {
        self.rows()
            .into_iter()
            .filter(|r| !self.drop.contains(&r.reference))
            .map(|mut r| {
                r.blocked_by.retain(|b| !self.drop.contains(b));
                r
            })
            .collect()
    }
}

async fn approve(
    State(state): State<AppState>,
    member: WsMember,
    Path((_, key, id)): Path<(String, String, String)>,
    Form(form): Form<ReviewForm>,
) -> PageResult {
    let key = parse_key(&key)?;
    let id = svc::parse_id(&id)?;
    let assign = form
        .assign
        .iter()
        .any(|v| matches!(v.as_str(), "true" | "on"));
    let input = ApprovalInput {
        items: Some(form.kept()),
        assign: Some(assign),
    };
    match svc::approve(&state, &member.caller, id, &input).await {
        Ok(_) => Ok(see_other(&format!(
            "/w/{}/issues/{key}#issue-plan",
            member.caller.ws.slug
        ))),
        Err(e) => {
            let mut errors: FormErrors = form_errors(e)?;
            // The service numbers the kept rows; the page shows every row, dropped ones too.
            let kept: Vec<usize> = form
                .rows()
                .iter()
                .enumerate()
                .filter(|(_, r)| !form.drop.contains(&r.reference))
                .map(|(i, _)| i)
                .collect();
            errors = errors
                .into_iter()
                .map(|(field, m)| (renumber(&field, &kept), m))
                .collect();
            let proposal = svc::get(&state, &member.caller, id).await?;
            let issue = state.store.get_issue_by_id(proposal.issue_id).await?;
            let mut view = review_view(&state, &member, &issue, Some(&proposal)).await?;
            if proposal.status == ProposalStatus::Pending {
                view.items = rows(&form.rows(), &form.drop, &[]);
                view.assign = assign;
            }
            view.errors = errors;
            Ok(super::invalid(muster_web::pages::plan_review(&view)))
        }
    }
}

/// `items[k].field` of the kept rows as `items[i].field` of all rows.
fn renumber(field: &str, kept: &[usize]) -> String {
    let Some(rest) = field.strip_prefix("items[") else {
        return field.to_owned();
    };
    match rest.split_once(']') {
        Some((n, tail)) => match n.parse::<usize>().ok().and_then(|k| kept.get(k)) {
            Some(i) => format!("items[{i}]{tail}"),
            None => field.to_owned(),
        },
        None => field.to_owned(),
    }
}

async fn discard(
    State(state): State<AppState>,
    member: WsMember,
    Path((_, key, id)): Path<(String, String, String)>,
    _form: Form<NoFields>,
) -> PageResult {
    let key = parse_key(&key)?;
    svc::discard(&state, &member.caller, svc::parse_id(&id)?).await?;
    Ok(see_other(&format!(
        "/w/{}/issues/{key}#issue-plan",
        member.caller.ws.slug
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dropped_rows_leave_the_tree_and_errors_follow_their_row() {
        let form = ReviewForm {
            reference: vec!["a".into(), "b".into(), "c".into()],
            title: vec!["A".into(), "B".into(), "C".into()],
            description: vec![String::new(); 3],
            acceptance: vec![String::new(); 3],
            agent: vec!["coder".into(), String::new(), "none".into()],
            blocked_by: vec![String::new(), "a".into(), "a, b".into()],
            drop: vec!["b".into()],
            assign: vec!["false".into(), "true".into()],
        };
        let kept = form.kept();
        assert_eq!(kept.len(), 2);
        assert_eq!(kept[1].reference, "c");
        assert_eq!(kept[1].blocked_by, vec!["a".to_owned()]);
        assert_eq!(kept[0].agent.as_deref(), Some("coder"));
        assert_eq!(renumber("items[1].title", &[0, 2]), "items[2].title");
        assert_eq!(renumber("items", &[0, 2]), "items");
    }
}
