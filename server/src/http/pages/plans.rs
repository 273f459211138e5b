//! Planning on the pages: the issue page's Plan panel (`#issue-plan`: parent, sub-issues with their
//! progress, relations, the blockers its agent waits on) and its forms, "Make sub-issue" on a comment,
//! and the board's and run page's "waiting on ACM-2".
//!
//! Every form calls the same service as the API (`service::plans`, `service::issues::create`) and is
//! answered `303 See Other` to the issue page, or the issue page again with the refusal beside the form
//! that was sent (422): a cycle refused names the cycle.

use std::collections::HashMap;

use axum::Router;
use axum::extract::{Path, State};
use axum::routing::post;
use muster_web::views::{
    CardPlanView, FormErrors, IssuePlanView, PlanChildView, PlanFormsView, PlanGroupView,
    PlanIssueView, PlanRelationView, ThreadEntryView,
};

use super::views::People;
use super::{PageResult, form_errors, invalid, see_other};
use crate::domain::{Issue, IssueBrief, IssueId, IssueKey, IssueTitle, LinkKind, Run, RunStatus};
use crate::http::extract::WsMember;
use crate::http::form::{Form, NoFields};
use crate::service::Caller;
use crate::service::issues::{self as issues_svc, IssueInput, parse_key};
use crate::service::plans::{self as svc, RelationInput};
use crate::state::AppState;

pub(super) fn router() -> Router<AppState> {
    let at = |tail: &str| format!("/w/{{slug}}/issues/{{key}}/{tail}");
    Router::new()
        .route(&at("plan/parent"), post(set_parent))
        .route(&at("plan/children"), post(add_child))
        .route(&at("plan/fan-in"), post(set_fan_in))
        .route(&at("plan/relations"), post(relate))
        .route(&at("plan/relations/{kind}/{other}/remove"), post(unrelate))
        .route(&at("comments/{id}/sub-issue"), post(from_comment))
}

/// The panel's groups, in the order it shows them, with their typed kind (the remove URL's).
const GROUPS: [(LinkKind, &str, &str); 5] = [
    (LinkKind::BlockedBy, "blocked_by", "Blocked by"),
    (LinkKind::Blocks, "blocks", "Blocks"),
    (LinkKind::RelatesTo, "relates_to", "Relates to"),
    (LinkKind::DuplicateOf, "duplicate_of", "Duplicate of"),
    (LinkKind::DuplicatedBy, "duplicated_by", "Duplicated by"),
];

fn brief_view(slug: &str, b: &IssueBrief) -> PlanIssueView {
    PlanIssueView {
        key: b.key.to_string(),
        title: b.title.as_str().to_owned(),
        status: b.status.to_string(),
        url: format!("/w/{slug}/issues/{}", b.key),
    }
}

/// "2/5 done": done of the sub-issues not cancelled.
/// "Their runs: 5 runs · $1.2300 · 42000 tokens · 1h 05m of agent time", or `None` before any run.
fn rollup_text(r: &crate::service::plans::Rollup) -> Option<String> {
    if r.runs == 0 {
        return None;
    }
    let (cost, _) = r.usage.cost_label(None);
    let start = chrono::DateTime::UNIX_EPOCH;
    let time = super::runs::duration(start, start + chrono::TimeDelta::seconds(r.work_secs));
    let runs = if r.runs == 1 {
        "1 run".to_owned()
    } else {
        format!("{} runs", r.runs)
    };
    Some(format!(
        "Their runs: {runs} · {cost} · {} tokens · {time} of agent time",
        r.usage.tokens()
    ))
}

fn progress_text(p: &crate::domain::ChildProgress) -> String {
    format!("{}/{} done", p.done, p.total - p.cancelled)
}

/// The issue page's Plan panel, and the other issues it shows (a change to any of them re-renders it
/// on the issue's socket).
pub(super) async fn issue_plan(
    state: &AppState,
    caller: &Caller,
    csrf: &str,
    issue: &Issue,
) -> crate::http::Result<(IssuePlanView, Vec<IssueKey>)> {
    let plan = svc::plan_of(state, issue).await?;
    let people = People::load(state, caller).await?;
    let slug = caller.ws.slug.as_str();
    let url = format!("/w/{slug}/issues/{}", issue.key);
    let editable = caller.run.is_none();
    let groups = GROUPS
        .iter()
        .filter_map(|&(link, kind, label)| {
            let relations: Vec<PlanRelationView> = plan
                .links
                .iter()
                .filter(|l| l.link == link)
                .map(|l| PlanRelationView {
                    issue: brief_view(slug, &l.other),
                    holds: (link == LinkKind::BlockedBy).then_some(!l.met),
                    until_merged: l.until == crate::domain::BlockUntil::Merged,
                    stacked: l.stacked,
                    remove_url: editable
                        .then(|| format!("{url}/plan/relations/{kind}/{}/remove", l.other.key)),
                })
                .collect();
            (!relations.is_empty()).then(|| PlanGroupView {
                kind: kind.to_owned(),
                label: label.to_owned(),
                relations,
            })
        })
        .collect();
    let related: Vec<IssueKey> = plan
        .parent
        .iter()
        .map(|p| p.key.clone())
        .chain(plan.children.iter().map(|c| c.key.clone()))
        .chain(plan.links.iter().map(|l| l.other.key.clone()))
        .collect();
    let planner = super::plan_review::planner_view(state, caller, &people, issue).await?;
    let view = IssuePlanView {
        key: issue.key.to_string(),
        parent: plan.parent.as_ref().map(|p| brief_view(slug, p)),
        children: plan
            .children
            .iter()
            .map(|c| PlanChildView {
                issue: PlanIssueView {
                    key: c.key.to_string(),
                    title: c.title.as_str().to_owned(),
                    status: c.status.to_string(),
                    url: format!("/w/{slug}/issues/{}", c.key),
                },
                assignee: people.assignee(c.assignee),
            })
            .collect(),
        percent: plan.progress.percent(),
        progress: progress_text(&plan.progress),
        rollup: rollup_text(&plan.rollup),
        groups,
        waiting_on: plan.waiting_on.iter().map(|b| b.key.to_string()).collect(),
        fan_in: plan.fan_in,
        editable,
        forms: PlanFormsView::default(),
        errors: FormErrors::new(),
        csrf: csrf.to_owned(),
        // A plan run at work: its proposal shows up here as it arrives.
        live_url: (!related.is_empty() || planner.planning.is_some())
            .then(|| format!("{url}/live")),
        planner,
        url,
    };
    Ok((view, related))
}

/// The issue page again (422) with the panel's refusal and what was typed.
pub(super) async fn refused(
    state: &AppState,
    member: &WsMember,
    key: &IssueKey,
    errors: FormErrors,
    forms: PlanFormsView,
) -> PageResult {
    let issue = state.store.get_issue(member.caller.ws.id, key).await?;
    let mut view = super::issue::page_view(state, member, &issue).await?;
    view.plan.errors = errors;
    view.plan.forms = forms;
    // No socket on a refusal: its first frame would swap the panel back without the message.
    view.plan.live_url = None;
    view.pulls.live_url = None;
    Ok(invalid(muster_web::pages::issue(&view)))
}

/// After a change: the issue page at its panel, or the refusal.
async fn answer(
    state: &AppState,
    member: &WsMember,
    key: &IssueKey,
    done: crate::service::Result<()>,
    forms: PlanFormsView,
) -> PageResult {
    match done {
        Ok(()) => Ok(see_other(&format!(
            "/w/{}/issues/{key}#issue-plan",
            member.caller.ws.slug
        ))),
        Err(e) => refused(state, member, key, form_errors(e)?, forms).await,
    }
}

/// The parent form: a key, or "" to clear it.
#[derive(Debug, Default, serde::Deserialize)]
#[serde(default)]
struct ParentForm {
    parent: String,
}

async fn set_parent(
    State(state): State<AppState>,
    member: WsMember,
    Path((_, key)): Path<(String, String)>,
    Form(form): Form<ParentForm>,
) -> PageResult {
    let key = parse_key(&key)?;
    let done = svc::set_parent(&state, &member.caller, &key, &form.parent)
        .await
        .map(|_| ());
    let forms = PlanFormsView {
        parent: form.parent,
        ..PlanFormsView::default()
    };
    answer(&state, &member, &key, done, forms).await
}

/// The "+ Sub-issue" form: a title.
#[derive(Debug, Default, serde::Deserialize)]
#[serde(default)]
struct ChildForm {
    title: String,
}

async fn add_child(
    State(state): State<AppState>,
    member: WsMember,
    Path((_, key)): Path<(String, String)>,
    Form(form): Form<ChildForm>,
) -> PageResult {
    let key = parse_key(&key)?;
    let input = IssueInput {
        title: Some(form.title.clone()),
        parent: Some(key.to_string()),
        ..IssueInput::default()
    };
    let done = issues_svc::create(&state, &member.caller, &input)
        .await
        .map(|_| ());
    let forms = PlanFormsView {
        child_title: form.title,
        ..PlanFormsView::default()
    };
    answer(&state, &member, &key, done, forms).await
}

/// The fan-in checkbox: a hidden `false` and, when ticked, `true` after it.
#[derive(Debug, Default, serde::Deserialize)]
#[serde(default)]
struct FanInForm {
    on: Vec<String>,
}

async fn set_fan_in(
    State(state): State<AppState>,
    member: WsMember,
    Path((_, key)): Path<(String, String)>,
    Form(form): Form<FanInForm>,
) -> PageResult {
    let key = parse_key(&key)?;
    let on = form.on.iter().any(|v| matches!(v.as_str(), "true" | "on"));
    let done = svc::set_fan_in(&state, &member.caller, &key, on).await;
    answer(&state, &member, &key, done, PlanFormsView::default()).await
}

/// The relation form.
#[derive(Debug, Default, serde::Deserialize)]
#[serde(default)]
struct RelationForm {
    kind: String,
    issue: String,
    until: String,
    stacked: Option<String>,
}

async fn relate(
    State(state): State<AppState>,
    member: WsMember,
    Path((_, key)): Path<(String, String)>,
    Form(form): Form<RelationForm>,
) -> PageResult {
    let key = parse_key(&key)?;
    let blocks = matches!(form.kind.as_str(), "blocked_by" | "blocks");
    let stacked = form.stacked.is_some();
    // The until and stacked fields are only for blocks: the select always sends a value, so other kinds
    // leave it out rather than be refused for the form's default.
    let input = RelationInput {
        kind: form.kind.clone(),
        issue: form.issue.clone(),
        until: blocks.then(|| form.until.clone()),
        stacked: blocks.then_some(stacked),
    };
    let done = svc::relate(&state, &member.caller, &key, &input)
        .await
        .map(|_| ());
    let forms = PlanFormsView {
        kind: form.kind,
        issue: form.issue,
        until: form.until,
        stacked,
        ..PlanFormsView::default()
    };
    answer(&state, &member, &key, done, forms).await
}

async fn unrelate(
    State(state): State<AppState>,
    member: WsMember,
    Path((_, key, kind, other)): Path<(String, String, String, String)>,
    _form: Form<NoFields>,
) -> PageResult {
    let key = parse_key(&key)?;
    // "Duplicated by" is the other issue's "duplicate of": removed from its side, answered from this one.
    let done = if kind == "duplicated_by" {
        let other = parse_key(&other)?;
        svc::unrelate(
            &state,
            &member.caller,
            &other,
            "duplicate_of",
            &key.to_string(),
        )
        .await
    } else {
        svc::unrelate(&state, &member.caller, &key, &kind, &other).await
    };
    answer(&state, &member, &key, done, PlanFormsView::default()).await
}

/// A sub-issue made from a comment: titled with its first line, its body linking the comment.
fn from_comment_input(parent: &IssueKey, link: &str, body: &str) -> IssueInput {
    let first = body
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or_default()
        .trim_start_matches('#')
        .trim();
    let title: String = first.chars().take(IssueTitle::MAX_LEN).collect();
    IssueInput {
        title: Some(title),
        body: Some(format!("From a comment on {parent}: {link}\n\n{body}")),
        parent: Some(parent.to_string()),
        ..IssueInput::default()
    }
}

/// "Make sub-issue" on a comment: the new sub-issue's page.
async fn from_comment(
    State(state): State<AppState>,
    member: WsMember,
    Path((_, key, id)): Path<(String, String, String)>,
    _form: Form<NoFields>,
) -> PageResult {
    let key = parse_key(&key)?;
    let issue = state.store.get_issue(member.caller.ws.id, &key).await?;
    let id = crate::service::comments::parse_id(&id, &key)?;
    let comment = state.store.get_comment(issue.id, id).await?;
    let base = state
        .config
        .public_url
        .as_deref()
        .unwrap_or_default()
        .trim_end_matches('/');
    let slug = member.caller.ws.slug.as_str();
    let link = format!("{base}/w/{slug}/issues/{key}#comment-{id}");
    let input = from_comment_input(&key, &link, &comment.body);
    match issues_svc::create(&state, &member.caller, &input).await {
        Ok(child) => Ok(see_other(&format!("/w/{slug}/issues/{}", child.key))),
        Err(e) => {
            let errors = form_errors(e)?;
            refused(&state, &member, &key, errors, PlanFormsView::default()).await
        }
    }
}

/// The planning marks of a page of board cards: one read of the sub-issues' progress and one of the
/// blockers, for every card of the page at once.
pub(super) struct CardPlans {
    progress: HashMap<IssueId, crate::domain::ChildProgress>,
    unmet: HashMap<IssueId, Vec<String>>,
}

impl CardPlans {
    pub(super) async fn load(state: &AppState, issues: &[Issue]) -> crate::http::Result<Self> {
        let ids: Vec<IssueId> = issues.iter().map(|i| i.id).collect();
        if ids.is_empty() {
            return Ok(CardPlans {
                progress: HashMap::new(),
                unmet: HashMap::new(),
            });
        }
        let progress = state
            .store
            .child_progress(&ids)
            .await?
            .into_iter()
            .collect();
        Ok(CardPlans {
            progress,
            unmet: unmet_by_issue(&state.store.blockers_of(&ids).await?),
        })
    }

    /// The card's marks; "blocked by" only when its latest run is not queued (a queued run says
    /// "waiting on" in its pill instead, see [`CardPlans::waiting`]).
    pub(super) fn card(&self, issue: IssueId, run: Option<&Run>) -> CardPlanView {
        let p = self.progress.get(&issue);
        let queued = run.is_some_and(|r| r.status == RunStatus::Queued);
        CardPlanView {
            children: p.map(|p| format!("{}/{}", p.done, p.total - p.cancelled)),
            children_done: p.is_some_and(crate::domain::ChildProgress::all_ended),
            blocked_by: match self.unmet.get(&issue) {
                Some(keys) if !queued => keys.clone(),
                _ => Vec::new(),
            },
        }
    }

    /// "waiting on ACM-2" for a queued run held by blockers.
    pub(super) fn waiting(&self, issue: IssueId, run: Option<&Run>) -> Option<String> {
        run.filter(|r| r.status == RunStatus::Queued)?;
        self.unmet.get(&issue).map(|keys| waiting_on(keys))
    }
}

/// "waiting on ACM-2, ACM-3".
pub(super) fn waiting_on(keys: &[String]) -> String {
    format!("waiting on {}", keys.join(", "))
}

/// The issue page's queued runs say "waiting on ACM-2" while blockers hold them (not "starting soon").
pub(super) fn mark_waiting(thread: &mut [ThreadEntryView], blockers: &[String]) {
    if blockers.is_empty() {
        return;
    }
    for entry in thread {
        if let ThreadEntryView::Run(r) = entry
            && r.status == "queued"
        {
            r.waiting = Some(waiting_on(blockers));
        }
    }
}

/// The unmet blockers' keys of each blocked issue.
fn unmet_by_issue(blockers: &[crate::domain::Blocker]) -> HashMap<IssueId, Vec<String>> {
    let mut out: HashMap<IssueId, Vec<String>> = HashMap::new();
    for b in svc::unmet(blockers) {
        out.entry(b.blocked)
            .or_default()
            .push(b.blocker.key.to_string());
    }
    out
}

/// The run page's "waiting on ACM-2" for a queued run held by its issue's blockers.
pub(super) async fn run_waiting(
    state: &AppState,
    run: &Run,
) -> crate::http::Result<Option<String>> {
    if run.status != RunStatus::Queued {
        return Ok(None);
    }
    let unmet = unmet_by_issue(&state.store.blockers_of(&[run.issue_id]).await?);
    Ok(unmet.get(&run.issue_id).map(|keys| waiting_on(keys)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_comment_titles_its_sub_issue_with_its_first_line() {
        let parent = IssueKey::parse("ACM-1").unwrap();
        let input = from_comment_input(
            &parent,
            "/w/acme/issues/ACM-1#comment-7",
            "\n## Split the parser  \nthen more",
        );
        assert_eq!(input.title.as_deref(), Some("Split the parser"));
        assert_eq!(
            input.body.as_deref(),
            Some(
                "From a comment on ACM-1: /w/acme/issues/ACM-1#comment-7\n\n\n## Split the parser  \nthen more"
            )
        );
        assert_eq!(input.parent.as_deref(), Some("ACM-1"));
        let long = "x".repeat(700);
        let input = from_comment_input(&parent, "l", &long);
        assert_eq!(input.title.unwrap().chars().count(), IssueTitle::MAX_LEN);
    }
}
