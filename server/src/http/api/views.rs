//! What the API returns: stable JSON shapes, separate from store rows.

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use serde::Serialize;

use crate::domain::{
    Activity, Actor, AgentId, ApiToken, Assignee, Comment, Issue, Member, RuntimeKind, UserId,
    WorkspaceId,
};
use crate::http::Result;
use crate::service::Caller;
use crate::state::AppState;

/// Display names of a workspace's agents and members, to name assignees and authors.
#[derive(Debug, Default, Clone)]
pub struct Names {
    pub agents: HashMap<AgentId, (String, String)>,
    /// Each agent's runtime and model, for run costs and failure texts.
    pub runtimes: HashMap<AgentId, (RuntimeKind, Option<String>)>,
    pub users: HashMap<UserId, String>,
    /// Each project's key.
    pub projects: HashMap<crate::domain::ProjectId, String>,
}

impl Names {
    /// Loads every agent and member of `ws`.
    pub async fn load(state: &AppState, ws: WorkspaceId) -> Result<Self> {
        let agents = state.store.list_agents(ws).await?;
        let members = state.store.list_members(ws).await?;
        let projects = state.store.list_projects(ws).await?;
        Ok(Names {
            projects: projects
                .into_iter()
                .map(|p| (p.id, p.key.to_string()))
                .collect(),
            runtimes: agents
                .iter()
                .map(|a| (a.id, (a.profile.kind, a.profile.model.clone())))
                .collect(),
            agents: agents
                .into_iter()
                .map(|a| (a.id, (a.profile.name.as_str().to_owned(), a.profile.color)))
                .collect(),
            users: members
                .into_iter()
                .map(|m| (m.user.id, m.user.display_name))
                .collect(),
        })
    }

    /// The name of whoever an actor is.
    pub fn actor(&self, actor: Actor) -> PersonRef {
        match actor {
            Actor::User(id) => PersonRef {
                kind: "user",
                id: Some(id.0),
                name: self
                    .users
                    .get(&id)
                    .cloned()
                    .unwrap_or_else(|| "former member".into()),
            },
            Actor::Agent(id) => PersonRef {
                kind: "agent",
                id: Some(id.0),
                name: self
                    .agents
                    .get(&id)
                    .map_or_else(|| "deleted agent".into(), |a| a.0.clone()),
            },
            Actor::System => PersonRef {
                kind: "system",
                id: None,
                name: "Muster".into(),
            },
        }
    }

    /// The assignee reference of an issue.
    pub fn assignee(&self, a: Option<Assignee>) -> Option<PersonRef> {
        a.map(|a| match a {
            Assignee::User(u) => self.actor(Actor::User(u)),
            Assignee::Agent(g) => self.actor(Actor::Agent(g)),
        })
    }
}

/// A person, agent or Muster itself.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct PersonRef {
    /// user, agent or system.
    #[serde(rename = "type")]
    pub kind: &'static str,
    pub id: Option<uuid::Uuid>,
    pub name: String,
}

/// An issue.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct IssueView {
    pub id: uuid::Uuid,
    #[schema(example = "MUS-42")]
    pub key: String,
    pub title: String,
    pub body: String,
    pub status: String,
    pub priority: String,
    pub assignee: Option<PersonRef>,
    pub labels: Vec<String>,
    /// Its project's key (its runs work in that project's repository).
    #[schema(example = "WEB")]
    pub project: Option<String>,
    pub position: i64,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

impl IssueView {
    /// Maps an issue, naming its assignee.
    pub fn new(issue: &Issue, names: &Names) -> Self {
        IssueView {
            id: issue.id.0,
            key: issue.key.to_string(),
            title: issue.title.as_str().to_owned(),
            body: issue.body.clone(),
            status: issue.status.to_string(),
            priority: issue.priority.to_string(),
            assignee: names.assignee(issue.assignee),
            labels: issue.labels.iter().map(|l| l.as_str().to_owned()).collect(),
            project: issue.project.and_then(|p| names.projects.get(&p).cloned()),
            position: issue.position,
            created_at: issue.created_at,
            updated_at: issue.updated_at,
        }
    }
}

/// A comment.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct CommentView {
    pub id: uuid::Uuid,
    pub author: PersonRef,
    pub body: String,
    pub run_id: Option<uuid::Uuid>,
    pub created_at: DateTime<Utc>,
    /// When its author last edited it; null if never.
    pub edited_at: Option<DateTime<Utc>>,
}

impl CommentView {
    /// Maps a comment.
    pub fn new(c: &Comment, names: &Names) -> Self {
        CommentView {
            id: c.id.0,
            author: names.actor(c.author),
            body: c.body.clone(),
            run_id: c.run_id.map(|r| r.0),
            created_at: c.created_at,
            edited_at: c.edited_at,
        }
    }
}

/// A line of the activity trail.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct ActivityView {
    pub actor: PersonRef,
    /// created, status, assignee, title, priority, labels, body.
    pub kind: String,
    pub detail: serde_json::Value,
    pub at: DateTime<Utc>,
}

/// An issue with its comments and activity.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct IssueDetail {
    #[serde(flatten)]
    pub issue: IssueView,
    /// The first comments, oldest first (at most 50).
    pub comments: Vec<CommentView>,
    /// When more comments follow: pass as `after` to `GET /api/v1/issues/{key}/comments` for the rest.
    pub comments_next_after: Option<String>,
    pub activity: Vec<ActivityView>,
    /// Each agent's line of work on the issue: its branch, the commit its last committed run left it
    /// at, and its latest run.
    pub lines: Vec<WorkLineView>,
    /// Its parent, sub-issues and relations.
    pub plan: PlanView,
}

/// Another issue, as a plan names it.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct IssueRefView {
    #[schema(example = "ACM-2")]
    pub key: String,
    pub title: String,
    pub status: String,
}

impl From<&crate::domain::IssueBrief> for IssueRefView {
    fn from(b: &crate::domain::IssueBrief) -> Self {
        IssueRefView {
            key: b.key.to_string(),
            title: b.title.as_str().to_owned(),
            status: b.status.to_string(),
        }
    }
}

/// A sub-issue.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct ChildView {
    #[serde(flatten)]
    pub issue: IssueRefView,
    pub assignee: Option<PersonRef>,
}

/// How far the sub-issues are.
#[derive(Debug, Clone, Default, Serialize, utoipa::ToSchema)]
pub struct ProgressView {
    pub total: i64,
    pub done: i64,
    pub cancelled: i64,
    /// Done of those not cancelled, 0–100.
    pub percent: i64,
}

impl From<&crate::domain::ChildProgress> for ProgressView {
    fn from(p: &crate::domain::ChildProgress) -> Self {
        ProgressView {
            total: p.total,
            done: p.done,
            cancelled: p.cancelled,
            percent: p.percent(),
        }
    }
}

/// A relation, read from the issue it is shown on.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct RelationView {
    /// `blocks`, `blocked_by`, `relates_to`, `duplicate_of` or `duplicated_by`.
    #[schema(example = "blocked_by")]
    pub relation: crate::domain::LinkKind,
    pub issue: IssueRefView,
    /// For blocks: `done`, or `merged` (done with a merged pull request).
    pub until: String,
    /// For blocks: the blocked issue's first run starts from the blocker's delivered commit.
    pub stacked: bool,
    /// For blocked_by: the blocker no longer holds.
    pub met: bool,
}

/// An issue's place in the plan.
#[derive(Debug, Clone, Default, Serialize, utoipa::ToSchema)]
pub struct PlanView {
    pub parent: Option<IssueRefView>,
    /// Sub-issues, by number.
    pub children: Vec<ChildView>,
    pub progress: ProgressView,
    pub relations: Vec<RelationView>,
    /// The keys of the blockers that still hold: its agent's queued run waits on them.
    #[schema(example = json!(["ACM-2"]))]
    pub waiting_on: Vec<String>,
    /// Its assigned agent is woken once, with a digest, when every sub-issue has ended.
    pub wake_on_children: bool,
    /// What its sub-issues' runs did.
    pub rollup: RollupView,
}

/// The sums of a parent's sub-issues' runs.
#[derive(Debug, Clone, Default, Serialize, utoipa::ToSchema)]
pub struct RollupView {
    pub runs: i64,
    /// US dollars (the priced part when `cost_unknown`).
    pub cost_usd: f64,
    pub cost_unknown: bool,
    pub tokens: i64,
    /// Seconds agents worked on them (a live run counts until now).
    pub work_seconds: i64,
}

impl From<&crate::service::plans::Rollup> for RollupView {
    fn from(r: &crate::service::plans::Rollup) -> Self {
        RollupView {
            runs: r.runs,
            cost_usd: r.usage.cost_usd,
            cost_unknown: r.usage.cost_unknown,
            tokens: r.usage.tokens(),
            work_seconds: r.work_secs,
        }
    }
}

impl PlanView {
    /// Maps a plan, naming the children's assignees.
    pub fn new(plan: &crate::service::plans::Plan, names: &Names) -> Self {
        PlanView {
            parent: plan.parent.as_ref().map(Into::into),
            children: plan
                .children
                .iter()
                .map(|c| ChildView {
                    issue: IssueRefView {
                        key: c.key.to_string(),
                        title: c.title.as_str().to_owned(),
                        status: c.status.to_string(),
                    },
                    assignee: names.assignee(c.assignee),
                })
                .collect(),
            progress: (&plan.progress).into(),
            relations: plan
                .links
                .iter()
                .map(|l| RelationView {
                    relation: l.link,
                    issue: (&l.other).into(),
                    until: l.until.to_string(),
                    stacked: l.stacked,
                    met: l.met,
                })
                .collect(),
            waiting_on: plan.waiting_on.iter().map(|b| b.key.to_string()).collect(),
            wake_on_children: plan.fan_in,
            rollup: (&plan.rollup).into(),
        }
    }
}

/// One agent's line of work on an issue.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct WorkLineView {
    /// The agent's name.
    pub agent: String,
    #[schema(example = "muster/ACM-8-codex-coder")]
    pub branch: String,
    /// `None` until a run of the line has committed.
    pub commit: Option<String>,
    pub run_id: String,
}

impl WorkLineView {
    /// Each line of work among an issue's runs.
    pub fn of(runs: &[crate::domain::Run], names: &Names) -> Vec<Self> {
        crate::domain::work_lines(runs)
            .into_iter()
            .map(|l| WorkLineView {
                agent: names.actor(Actor::Agent(l.agent_id)).name,
                branch: l.branch,
                commit: l.commit,
                run_id: l.run_id.to_string(),
            })
            .collect()
    }
}

impl IssueDetail {
    /// Maps an issue page's worth of data.
    pub fn new(issue: &Issue, comments: &[Comment], activity: &[Activity], names: &Names) -> Self {
        IssueDetail {
            issue: IssueView::new(issue, names),
            comments: comments
                .iter()
                .map(|c| CommentView::new(c, names))
                .collect(),
            comments_next_after: None,
            activity: activity
                .iter()
                .map(|a| ActivityView {
                    actor: names.actor(a.actor),
                    kind: a.kind.to_string(),
                    detail: a.detail.clone(),
                    at: a.at,
                })
                .collect(),
            lines: Vec::new(),
            plan: PlanView::default(),
        }
    }
}

/// A member.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct MemberView {
    pub user_id: uuid::Uuid,
    /// Absent when a run's token asks: an agent needs people's names, not their addresses.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub email: Option<String>,
    pub name: String,
    pub role: String,
    pub joined_at: DateTime<Utc>,
}

impl From<&Member> for MemberView {
    fn from(m: &Member) -> Self {
        MemberView {
            user_id: m.user.id.0,
            email: Some(m.user.email.as_str().to_owned()),
            name: m.user.display_name.clone(),
            role: m.role.to_string(),
            joined_at: m.joined_at,
        }
    }
}

impl MemberView {
    /// A member as `caller` may see them: without the email for a run's token.
    pub fn for_caller(m: &Member, caller: &Caller) -> Self {
        let mut view = MemberView::from(m);
        if caller.run.is_some() {
            view.email = None;
        }
        view
    }
}

/// An API token (never the secret).
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct TokenView {
    pub id: uuid::Uuid,
    pub name: String,
    pub prefix: String,
    pub created_at: DateTime<Utc>,
    pub last_used_at: Option<DateTime<Utc>>,
    pub revoked_at: Option<DateTime<Utc>>,
}

impl From<&ApiToken> for TokenView {
    fn from(t: &ApiToken) -> Self {
        TokenView {
            id: t.id.0,
            name: t.name.clone(),
            prefix: t.prefix.clone(),
            created_at: t.created_at,
            last_used_at: t.last_used_at,
            revoked_at: t.revoked_at,
        }
    }
}

/// The caller.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct MeView {
    pub user_id: uuid::Uuid,
    /// Absent for a run's token: it acts as its agent, not as the person who holds it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub email: Option<String>,
    pub name: String,
    pub role: String,
    pub workspace: String,
    pub workspace_name: String,
    pub issue_prefix: String,
}

impl From<&Caller> for MeView {
    fn from(c: &Caller) -> Self {
        MeView {
            user_id: c.user.id.0,
            email: c.run.is_none().then(|| c.user.email.as_str().to_owned()),
            name: c.user.display_name.clone(),
            role: c.role.to_string(),
            workspace: c.ws.slug.to_string(),
            workspace_name: c.ws.name.clone(),
            issue_prefix: c.ws.issue_prefix.as_str().to_owned(),
        }
    }
}

/// A run: one attempt of one agent on one issue.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct RunView {
    pub id: uuid::Uuid,
    /// The issue's key.
    #[schema(example = "MUS-42")]
    pub issue: String,
    pub issue_id: uuid::Uuid,
    /// The agent's name ("deleted agent" if it is gone).
    pub agent: String,
    pub agent_id: uuid::Uuid,
    /// queued, claimed, running, succeeded, failed, cancelled, timed_out, interrupted.
    pub status: String,
    /// Whether the run is flagged as stalled (no output for the agent's stall timeout).
    pub stalled: bool,
    pub attempt: i32,
    /// What queued it: assignment, comment (a person's reply), mention (`@agent` in a comment or an
    /// issue's text) or retry.
    #[schema(example = "comment")]
    pub trigger: String,
    /// `work`, or `plan`: a plan run proposes sub-issues for review and changes nothing.
    #[schema(example = "work")]
    pub purpose: String,
    /// The comment that queued it (a reply or a mention), while that comment exists.
    pub trigger_comment_id: Option<uuid::Uuid>,
    /// The agent's previous run on the issue, which this one follows up (or retries).
    pub previous_run_id: Option<uuid::Uuid>,
    /// How many agent-to-agent mentions led to it (0: a person or an assignment started it).
    pub chain_depth: i32,
    /// auth, rate_limit, server, network, config, missing_cli, runner_lost, over_budget, stalled,
    /// timeout, exit, event_cap, sandbox.
    pub failure_reason: Option<String>,
    pub exit_code: Option<i32>,
    pub input_tokens: i64,
    pub output_tokens: i64,
    pub cache_read_tokens: i64,
    pub cache_write_tokens: i64,
    /// The priced part of the cost (all of it unless `cost_unknown`).
    pub cost_usd: f64,
    /// Some tokens had no price (no cost from the CLI, no rate for the model): the cost is unknown.
    pub cost_unknown: bool,
    /// Part of the cost was priced by Muster from the rate table (the CLI reported tokens, no cost).
    pub cost_estimated: bool,
    /// The cost as people read it: "$0.0421", "$0.0421 · estimated", "unpriced", or "$0 · local" for
    /// a local model.
    #[schema(example = "$0.0421")]
    pub cost: String,
    /// Why the run did not succeed and what to do, in words ("Claude Code's API key was refused by the
    /// provider (401): check the agent's ANTHROPIC_API_KEY secret").
    pub failure_message: Option<String>,
    /// The decisive error message the CLI reported, when it failed with one.
    pub failure_detail: Option<String>,
    pub summary: Option<String>,
    pub diff_stat: Option<String>,
    /// The branch of the run's line of work (`muster/<KEY>-<agent>`).
    pub branch: Option<String>,
    /// The commit the run started from.
    pub base_commit: Option<String>,
    /// The commit the run's work became on its branch: what is compared, pushed and merged.
    pub head_commit: Option<String>,
    /// The runner that took it (its id; a list leaves its name out).
    pub runner_id: Option<uuid::Uuid>,
    /// The runner's name: in a single run's view (`GET /api/v1/runs/{id}`), null in lists.
    pub runner: Option<String>,
    pub session_id: Option<String>,
    pub created_at: DateTime<Utc>,
    pub started_at: Option<DateTime<Utc>>,
    pub finished_at: Option<DateTime<Utc>>,
    pub stalled_at: Option<DateTime<Utc>>,
}

impl RunView {
    /// Maps a run, naming its issue (`issue_key`) and agent.
    pub fn new(run: &crate::domain::Run, issue_key: &str, names: &Names) -> Self {
        let runtime = names.runtimes.get(&run.agent_id);
        let kind = runtime.map(|(kind, _)| *kind);
        let model = runtime.and_then(|(_, model)| model.as_deref());
        let failure = crate::domain::failure::FailureFacts::of(
            run,
            kind.unwrap_or(RuntimeKind::Custom),
            model,
        )
        .map(|facts| crate::domain::failure::explain(&facts).sentence());
        RunView {
            cost: run.usage.cost_label(kind).0,
            cost_unknown: run.usage.cost_unknown,
            cost_estimated: run.usage.cost_estimated,
            failure_message: failure,
            failure_detail: run.failure_detail.clone(),
            id: run.id.0,
            issue: issue_key.to_owned(),
            issue_id: run.issue_id.0,
            agent: names.actor(Actor::Agent(run.agent_id)).name,
            agent_id: run.agent_id.0,
            status: run.status.to_string(),
            stalled: run.stalled_at.is_some(),
            attempt: run.attempt,
            trigger: run.trigger.to_string(),
            purpose: run.purpose.to_string(),
            trigger_comment_id: run.trigger_comment_id.map(|c| c.0),
            previous_run_id: run.previous_run_id.map(|r| r.0),
            chain_depth: run.chain_depth,
            failure_reason: run.failure_reason.map(|r| r.to_string()),
            exit_code: run.exit_code,
            input_tokens: run.usage.input_tokens,
            output_tokens: run.usage.output_tokens,
            cache_read_tokens: run.usage.cache_read_tokens,
            cache_write_tokens: run.usage.cache_write_tokens,
            cost_usd: run.usage.cost_usd,
            summary: run.summary.clone(),
            diff_stat: run.diff_stat.clone(),
            branch: run.branch.clone(),
            base_commit: run.base_commit.clone(),
            head_commit: run.head_commit.clone(),
            runner_id: run.runner_id.map(|r| r.0),
            runner: None,
            session_id: run.session_id.clone(),
            created_at: run.created_at,
            started_at: run.started_at,
            finished_at: run.finished_at,
            stalled_at: run.stalled_at,
        }
    }
}

/// One event of a run's log.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct RunEventView {
    pub run_id: uuid::Uuid,
    /// Position in the log, from 1; pass the last one you have as `after` to resume.
    pub seq: i64,
    pub at: DateTime<Utc>,
    /// started, text, thinking, tool_call, tool_result, command, file_change, usage, error, finished,
    /// raw, stderr or status.
    pub kind: String,
    /// The event's fields, by kind (e.g. `{"text": …}`, `{"name": …, "input": …}`).
    #[schema(value_type = Object)]
    pub payload: serde_json::Value,
}

impl From<&crate::domain::RunEvent> for RunEventView {
    fn from(e: &crate::domain::RunEvent) -> Self {
        RunEventView {
            run_id: e.run_id.0,
            seq: e.seq,
            at: e.at,
            kind: e.kind.clone(),
            payload: e.payload.clone(),
        }
    }
}
