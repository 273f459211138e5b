//! Views of planning: the issue page's Plan panel (parent, sub-issues with their progress, relations, the
//! blockers its agent waits on) and the board card's sub-issue and blocker marks.

use super::{FormErrors, Nav, PersonView};

/// Another issue as the plan shows it: its key (linked), title and status.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PlanIssueView {
    /// `ACM-2`.
    pub key: String,
    pub title: String,
    /// The stored status name (`in_progress`), for its pill.
    pub status: String,
    /// Its issue page.
    pub url: String,
}

/// A sub-issue: the issue and who works on it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlanChildView {
    pub issue: PlanIssueView,
    pub assignee: Option<PersonView>,
}

/// One relation as it reads from the page's issue, with the form that removes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlanRelationView {
    pub issue: PlanIssueView,
    /// For blocked-by: "holds" or "met"; `None` for the other kinds.
    pub holds: Option<bool>,
    /// For blocks and blocked-by: the blocker holds until it is done with a merged pull request.
    pub until_merged: bool,
    /// For blocks and blocked-by: the blocked issue's first run starts from the blocker's branch.
    pub stacked: bool,
    /// POST here (with `_csrf`) to remove it; `None` when the viewer may not.
    pub remove_url: Option<String>,
}

/// Relations of one kind ("Blocked by"), in the panel's order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlanGroupView {
    /// `blocked_by`, `blocks`, `relates_to`, `duplicate_of`, `duplicated_by` (its CSS class).
    pub kind: String,
    /// "Blocked by".
    pub label: String,
    pub relations: Vec<PlanRelationView>,
}

/// What the panel's forms were sent with, kept when one was refused.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PlanFormsView {
    /// The parent key typed.
    pub parent: String,
    /// The sub-issue title typed.
    pub child_title: String,
    /// The relation form: kind, key, until (`done`/`merged`), stacked.
    pub kind: String,
    pub issue: String,
    pub until: String,
    pub stacked: bool,
}

/// The issue page's Plan panel (`#issue-plan`), also pushed alone over the issue's socket.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct IssuePlanView {
    /// The issue's key (for texts) and page URL; the forms POST under `{url}/plan/…`.
    pub key: String,
    pub url: String,
    pub parent: Option<PlanIssueView>,
    /// Sub-issues, by number.
    pub children: Vec<PlanChildView>,
    /// Done of those not cancelled, 0–100, and "2/5 done" (cancelled ones left out).
    pub percent: i64,
    pub progress: String,
    /// What the sub-issues' runs did ("Their runs: 5 runs · $1.2300 · 42000 tokens · 1h 05m of agent
    /// time"); `None` before any.
    pub rollup: Option<String>,
    /// Relations grouped by kind; empty groups left out.
    pub groups: Vec<PlanGroupView>,
    /// The keys of the blockers still holding: its agent starts when they are done.
    pub waiting_on: Vec<String>,
    /// "Wake the assignee when every sub-issue has ended".
    pub fan_in: bool,
    /// The viewer may change the plan (no run token).
    pub editable: bool,
    /// What was typed, and why a form was refused (fields `parent`, `title`, `kind`, `issue`, `until`, `form`).
    pub forms: PlanFormsView,
    pub errors: FormErrors,
    pub csrf: String,
    /// The issue's socket (`ws-connect`), when the plan has anything that may change under it.
    pub live_url: Option<String>,
    /// "Plan with agent": the form, a plan run at work, a proposal waiting for review.
    pub planner: PlannerView,
}

/// The Plan panel's planner part.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PlannerView {
    /// The workspace's agents (names), for "Plan with agent".
    pub agents: Vec<String>,
    /// A plan run at work: its agent's name and the run's page.
    pub planning: Option<(String, String)>,
    /// A proposal waiting for review: "planner proposed 4 sub-issues" and the review page's URL.
    pub pending: Option<(String, String)>,
}

/// One proposed sub-issue on the review page, as proposed or as last typed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReviewItemView {
    pub reference: String,
    pub title: String,
    pub description: String,
    pub acceptance: String,
    /// The agent's name, or "" for none.
    pub agent: String,
    /// The refs it waits on, comma-separated.
    pub blocked_by: String,
    /// How deep it sits in the tree (0: waits on nothing), for its indent.
    pub depth: usize,
    /// Left out of the approval (typed so on a refused form).
    pub dropped: bool,
    /// Once approved: the issue it became (key, URL).
    pub created: Option<(String, String)>,
}

/// `GET /w/{slug}/issues/{key}/plan`: the latest proposal for an issue as an editable tree.
#[derive(Debug, Clone, Default)]
pub struct PlanReviewView {
    pub nav: Nav,
    pub issue_key: String,
    pub issue_title: String,
    pub issue_url: String,
    /// pending, approved or discarded; `None` when the issue has no proposal.
    pub status: Option<String>,
    /// Who proposed it, and when ("2 minutes ago").
    pub agent: String,
    pub proposed: String,
    pub summary: String,
    pub items: Vec<ReviewItemView>,
    /// The workspace's agents (names), for each item's picker.
    pub agents: Vec<String>,
    /// Assign each sub-issue to its agent on approval (as last typed).
    pub assign: bool,
    /// POST targets (with `_csrf`).
    pub approve_url: String,
    pub discard_url: String,
    /// Why an approval was refused: `items[2].title` and the like, or `proposal`.
    pub errors: FormErrors,
}

/// A board card's planning marks.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CardPlanView {
    /// "2/5": sub-issues done of those not cancelled; `None` without sub-issues.
    pub children: Option<String>,
    /// Whether every counted sub-issue is done.
    pub children_done: bool,
    /// The unmet blockers' keys.
    pub blocked_by: Vec<String>,
}
