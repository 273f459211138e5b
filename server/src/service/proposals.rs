//! The planner: a person asks an agent to plan an issue (a plan run); the run proposes a tree of
//! sub-issues through its token; a person reviews it, edits it (drop, rename, re-assign, re-wire) and
//! approves it in one step, which creates every sub-issue and dependency at once and can assign them,
//! so their agents start in dependency order.
//!
//! Who may do what: only a live plan run's token proposes, and only for its own issue; only people ask
//! for a plan, approve or discard (a run's token never does).

use serde::Deserialize;

use super::{Caller, Error, Result, announce};
use crate::domain::{
    AgentId, InboxKind, Issue, IssueKey, IssueStatus, NewInboxItem, NewProposal, NewRun,
    PlannedIssue, Proposal, ProposalId, ProposalStatus, ProposedIssue, Run, RunPurpose, RunStatus,
    check_tree,
};
use crate::engine::Engine;

/// `{"agent": "planner"}`: the agent that plans.
#[derive(Debug, Clone, Default, Deserialize, utoipa::ToSchema)]
pub struct PlanRequest {
    /// An agent's name.
    #[schema(example = "planner")]
    pub agent: Option<String>,
}

/// A plan run's proposal.
#[derive(Debug, Clone, Default, Deserialize, utoipa::ToSchema)]
pub struct ProposalInput {
    /// The plan in a sentence or two (at most 4096 bytes).
    pub summary: Option<String>,
    /// 1–50 proposed sub-issues.
    pub items: Option<Vec<ProposedIssue>>,
}

/// An approval: the tree as the person left it.
#[derive(Debug, Clone, Default, Deserialize, utoipa::ToSchema)]
pub struct ApprovalInput {
    /// The tree as edited (items dropped, renamed, re-assigned, re-wired); left out, as proposed.
    pub items: Option<Vec<ProposedIssue>>,
    /// Assign each sub-issue to its agent, so each starts once its blockers are done (default true);
    /// false creates them unassigned.
    pub assign: Option<bool>,
}

/// Parses a proposal id from a URL or the command line (a malformed one is simply not found).
pub fn parse_id(raw: &str) -> Result<ProposalId> {
    raw.trim().parse().map_err(|_| Error::NotFound)
}

fn people_only(caller: &Caller, what: &str) -> Result<()> {
    if caller.run.is_some() {
        return Err(Error::refused(
            "token",
            format!("a run's token may not {what}: a person does"),
        ));
    }
    Ok(())
}

/// Queues a plan run of `request.agent` on `key`: it reads the code and proposes sub-issues, changing
/// nothing. `Conflict` when that agent already has a live run on the issue.
pub async fn request_plan(
    state: &Engine,
    caller: &Caller,
    key: &IssueKey,
    request: &PlanRequest,
) -> Result<Run> {
    people_only(caller, "ask for a plan")?;
    let issue = state.store.get_issue(caller.ws.id, key).await?;
    let raw = request.agent.as_deref().unwrap_or_default().trim();
    if raw.is_empty() {
        return Err(Error::invalid([(
            "agent",
            "name the agent that plans".to_owned(),
        )]));
    }
    let agent = agent_named(state, caller, raw)
        .await?
        .ok_or_else(|| Error::invalid([("agent", format!("no agent called {raw:?}"))]))?;
    if matches!(issue.status, IssueStatus::Done | IssueStatus::Cancelled) {
        return Err(Error::invalid([(
            "issue",
            format!("{} is {}: reopen it to plan it", issue.key, issue.status),
        )]));
    }
    let new = NewRun {
        purpose: RunPurpose::Plan,
        ..NewRun::assignment(caller.ws.id, issue.id, agent)
    };
    let Some(run) = state.queue_run(&new, &[]).await? else {
        return Err(Error::conflict(
            "agent",
            format!("{raw} already has a live run on {}", issue.key),
        ));
    };
    state
        .note_on_issue(
            issue.id,
            Some(run.id),
            &format!(
                "{} asked {raw} to plan {}: its proposal will be shown for review here.",
                caller.user.display_name, issue.key
            ),
        )
        .await?;
    announce(state, caller, &issue.key);
    Ok(run)
}

async fn agent_named(state: &Engine, caller: &Caller, raw: &str) -> Result<Option<AgentId>> {
    match super::agents::by_name(state, caller, raw).await {
        Ok(agent) => Ok(Some(agent.id)),
        Err(Error::NotFound) => Ok(None),
        Err(e) => Err(e),
    }
}

/// The agents the items name (`None` for an item naming none), or a problem per unknown name.
async fn agents_of(
    state: &Engine,
    caller: &Caller,
    items: &[ProposedIssue],
) -> Result<Vec<Option<AgentId>>> {
    let mut agents = Vec::with_capacity(items.len());
    let mut problems = Vec::new();
    for (i, item) in items.iter().enumerate() {
        match item.agent_name() {
            None => agents.push(None),
            Some(name) => match agent_named(state, caller, name).await? {
                Some(id) => agents.push(Some(id)),
                None => {
                    problems.push((
                        format!("items[{i}].agent"),
                        format!("no agent called {name:?}"),
                    ));
                    agents.push(None);
                }
            },
        }
    }
    if problems.is_empty() {
        Ok(agents)
    } else {
        Err(tree_problems(&problems))
    }
}

/// Problems named by item (`items[2].agent`) as one 422.
fn tree_problems(problems: &[(String, String)]) -> Error {
    Error::invalid(problems.iter().map(|(f, m)| (f.as_str(), m.clone())))
}

/// Records a plan run's proposal for its own issue (it replaces the issue's pending one) and tells the
/// thread and the issue's creator that a plan waits for review.
pub async fn propose(
    state: &Engine,
    caller: &Caller,
    key: &IssueKey,
    input: &ProposalInput,
) -> Result<Proposal> {
    let Some(scope) = &caller.run else {
        return Err(Error::refused(
            "token",
            "a plan is proposed by an agent's plan run; ask for one with POST /api/v1/issues/{key}/plan, \
             or edit its proposal before approving it",
        ));
    };
    let run = state.store.get_run(scope.run_id).await?;
    if &scope.issue_key != key
        || scope.in_ensemble
        || run.purpose != RunPurpose::Plan
        || !matches!(run.status, RunStatus::Claimed | RunStatus::Running)
    {
        return Err(scope.refusal_saying(&format!(
            "only a live plan run may propose a plan, and only of its own issue ({})",
            scope.issue_key
        )));
    }
    let summary = input.summary.clone().unwrap_or_default();
    if summary.len() > crate::domain::proposal::SUMMARY_MAX_BYTES {
        return Err(Error::invalid([(
            "summary",
            format!(
                "is {} bytes; at most {} are kept",
                summary.len(),
                crate::domain::proposal::SUMMARY_MAX_BYTES
            ),
        )]));
    }
    let Some(items) = &input.items else {
        return Err(Error::invalid([(
            "items",
            "send the proposed sub-issues as \"items\"".to_owned(),
        )]));
    };
    check_tree(items).map_err(|p| tree_problems(&p))?;
    agents_of(state, caller, items).await?;
    let issue = state.store.get_issue_by_id(run.issue_id).await?;
    let proposal = state
        .store
        .create_proposal(&NewProposal {
            workspace_id: caller.ws.id,
            issue_id: issue.id,
            run_id: Some(run.id),
            agent_id: Some(run.agent_id),
            summary: summary.trim().to_owned(),
            items: items.clone(),
        })
        .await?;
    let agent = state.store.get_agent(caller.ws.id, run.agent_id).await?;
    let message = format!(
        "{} proposed a plan of {} sub-issue{} for {}: review it at /w/{}/issues/{}/plan",
        agent.profile.name.as_str(),
        items.len(),
        if items.len() == 1 { "" } else { "s" },
        issue.key,
        caller.ws.slug.as_str(),
        issue.key
    );
    state
        .note_on_issue(issue.id, Some(run.id), &message)
        .await?;
    state
        .store
        .create_inbox_item(&NewInboxItem {
            workspace_id: caller.ws.id,
            user_id: issue.created_by,
            kind: InboxKind::AwaitingReview,
            issue_id: Some(issue.id),
            run_id: Some(run.id),
            comment_id: None,
            message,
        })
        .await?;
    announce(state, caller, &issue.key);
    Ok(proposal)
}

/// An issue and its proposals, newest first.
pub async fn of_issue(
    state: &Engine,
    caller: &Caller,
    key: &IssueKey,
) -> Result<(Issue, Vec<Proposal>)> {
    let issue = state.store.get_issue(caller.ws.id, key).await?;
    let proposals = state.store.list_proposals(issue.id).await?;
    Ok((issue, proposals))
}

/// The issues approval made of `proposal`, in its items' order; `None` for one deleted since.
pub async fn created_issues(state: &Engine, proposal: &Proposal) -> Result<Vec<Option<Issue>>> {
    let mut made = Vec::with_capacity(proposal.created.len());
    for id in &proposal.created {
        made.push(match state.store.get_issue_by_id(*id).await {
            Ok(issue) => Some(issue),
            Err(crate::store::Error::NotFound) => None,
            Err(e) => return Err(e.into()),
        });
    }
    Ok(made)
}

/// One proposal of the caller's workspace.
pub async fn get(state: &Engine, caller: &Caller, id: ProposalId) -> Result<Proposal> {
    Ok(state.store.get_proposal(caller.ws.id, id).await?)
}

/// Approves a pending proposal as edited: every sub-issue and dependency is created in one step (or
/// none, on any error), blockers first; with `assign` (the default) each is assigned to its agent, whose
/// run starts once the sub-issue's blockers are done. Returns the proposal and the issues made.
pub async fn approve(
    state: &Engine,
    caller: &Caller,
    id: ProposalId,
    input: &ApprovalInput,
) -> Result<(Proposal, Vec<Issue>)> {
    people_only(caller, "approve a plan")?;
    let proposal = state.store.get_proposal(caller.ws.id, id).await?;
    if proposal.status != ProposalStatus::Pending {
        return Err(Error::conflict(
            "proposal",
            format!("was already {}", proposal.status),
        ));
    }
    let items = input.items.as_ref().unwrap_or(&proposal.items);
    let tree = check_tree(items).map_err(|p| tree_problems(&p))?;
    let agents = agents_of(state, caller, items).await?;
    let assign = input.assign.unwrap_or(true);
    // In creation order: each item's blockers as positions in that order.
    let position: std::collections::HashMap<usize, usize> = tree
        .order
        .iter()
        .enumerate()
        .map(|(at, &i)| (i, at))
        .collect();
    let mut planned = Vec::with_capacity(items.len());
    let mut approved = Vec::with_capacity(items.len());
    for &i in &tree.order {
        let item = &items[i];
        planned.push(PlannedIssue {
            title: tree.titles[i].clone(),
            body: item.body(),
            assignee: if assign { agents[i] } else { None },
            blocked_by: tree.blockers[i].iter().map(|b| position[b]).collect(),
        });
        approved.push(ProposedIssue {
            reference: item.reference.trim().to_owned(),
            blocked_by: item
                .blocked_by
                .iter()
                .map(|b| b.trim().to_owned())
                .collect(),
            ..item.clone()
        });
    }
    let (proposal, issues) = state
        .store
        .approve_proposal(caller.ws.id, id, &approved, &planned, caller.user.id)
        .await?;
    let parent = state.store.get_issue_by_id(proposal.issue_id).await?;
    let keys: Vec<String> = issues.iter().map(|i| i.key.to_string()).collect();
    state
        .note_on_issue(
            parent.id,
            proposal.run_id,
            &format!(
                "{} approved the plan: {} sub-issue{} ({}){}.",
                caller.user.display_name,
                issues.len(),
                if issues.len() == 1 { "" } else { "s" },
                keys.join(", "),
                if assign && issues.iter().any(|i| i.assignee.is_some()) {
                    ", assigned; each agent starts once its blockers are done"
                } else {
                    ", unassigned"
                }
            ),
        )
        .await?;
    for issue in &issues {
        super::issues::queue_run_if_due(state, None, issue).await;
        crate::engine::triggers::issue_created(state, caller.writer(), issue).await;
        announce(state, caller, &issue.key);
    }
    announce(state, caller, &parent.key);
    Ok((proposal, issues))
}

/// Discards a pending proposal (nothing is created).
pub async fn discard(state: &Engine, caller: &Caller, id: ProposalId) -> Result<Proposal> {
    people_only(caller, "discard a plan")?;
    let proposal = state
        .store
        .discard_proposal(caller.ws.id, id, caller.user.id)
        .await?;
    let issue = state.store.get_issue_by_id(proposal.issue_id).await?;
    announce(state, caller, &issue.key);
    Ok(proposal)
}
