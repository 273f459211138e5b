//! An issue's conversation as one timeline, oldest first: comments, each run of an agent as one entry,
//! status changes and the other changes of the activity trail. The issue page, the API
//! (`GET /api/v1/issues/{key}/thread`) and `muster issue thread` all read it from here.
//!
//! Invariants:
//! - a run's summary (the comment its agent's success posted, `run_id` set and the run's summary as its
//!   text) is shown inside the run's entry and never again as a comment; other comments an agent wrote
//!   during its run stay comments;
//! - live runs (queued, claimed, running) are entries too, with why a queued one waits;
//! - entries at the same instant keep the order activity, comments, runs (a status change recorded with
//!   the comment that caused it reads before the run it queued).

use std::collections::HashMap;

use chrono::{DateTime, Utc};

use super::{Caller, Result};
use crate::domain::{
    Activity, ActivityKind, Actor, Comment, CommentId, Issue, IssueKey, IssueStatus, Run,
    RunStatus, RunTrigger,
};
use crate::engine::Engine;

/// An issue and its timeline.
#[derive(Debug, Clone)]
pub struct Thread {
    pub issue: Issue,
    /// Oldest first.
    pub entries: Vec<Entry>,
}

/// One entry of the timeline.
#[derive(Debug, Clone)]
pub enum Entry {
    /// A comment by a person, an agent or Muster.
    Comment(Comment),
    /// One run of an agent, with its summary.
    Run(Box<RunEntry>),
    /// The issue moved from one status to another.
    Status(StatusChange),
    /// Any other change of the activity trail: created, assigned, renamed, re-prioritised, relabelled,
    /// description edited.
    Change(Activity),
}

impl Entry {
    /// When it happened: a run's entry stands where the run was queued.
    pub fn at(&self) -> DateTime<Utc> {
        match self {
            Entry::Comment(c) => c.created_at,
            Entry::Run(r) => r.run.created_at,
            Entry::Status(s) => s.at,
            Entry::Change(a) => a.at,
        }
    }
}

/// A run as the timeline shows it.
#[derive(Debug, Clone)]
pub struct RunEntry {
    pub run: Run,
    /// The comment that carries the run's summary (see the module's invariants).
    pub summary: Option<Comment>,
    /// Who wrote the comment that queued the run (a reply or a mention), while that comment exists.
    pub trigger_author: Option<Actor>,
    /// Why a queued run waits ("waiting for a runner: none is online"), when no runner could take it.
    pub waiting: Option<String>,
}

impl RunEntry {
    /// Queued, claimed or running: the agent is (about to be) at work.
    pub fn is_live(&self) -> bool {
        !self.run.status.is_terminal()
    }

    /// Seconds from start to end (to now while it runs); `None` before it started.
    pub fn duration_secs(&self) -> Option<i64> {
        let start = self.run.started_at?;
        let end = self.run.finished_at.unwrap_or_else(Utc::now);
        Some((end - start).num_seconds().max(0))
    }
}

/// A status change from the activity trail.
#[derive(Debug, Clone, PartialEq)]
pub struct StatusChange {
    pub actor: Actor,
    pub from: IssueStatus,
    pub to: IssueStatus,
    pub at: DateTime<Utc>,
}

/// The timeline of issue `key`. A run's token reads only its own issue.
pub async fn load(state: &Engine, caller: &Caller, key: &IssueKey) -> Result<Thread> {
    let issue = state.store.get_issue(caller.ws.id, key).await?;
    if let Some(scope) = &caller.run
        && scope.issue_id != issue.id
    {
        return Err(scope.refusal());
    }
    let comments = state.store.list_comments(issue.id).await?;
    let runs = state.store.list_runs_for_issue(issue.id).await?;
    let activity = state.store.list_activity(issue.id).await?;
    let mut entries = build(comments, runs, activity);
    explain_waits(state, caller, &mut entries).await?;
    Ok(Thread { issue, entries })
}

/// Says why each queued run waits, reading the workspace's runners and agents once (and not at all when
/// nothing is queued).
async fn explain_waits(state: &Engine, caller: &Caller, entries: &mut [Entry]) -> Result<()> {
    let queued = |e: &Entry| matches!(e, Entry::Run(r) if r.run.status == RunStatus::Queued);
    if !entries.iter().any(queued) {
        return Ok(());
    }
    let candidates = super::runners::candidates(state, caller.ws.id).await?;
    let agents = state.store.list_agents(caller.ws.id).await?;
    for entry in entries {
        if let Entry::Run(r) = entry
            && let Some(agent) = agents.iter().find(|a| a.id == r.run.agent_id)
        {
            r.waiting = super::runners::run_waiting_reason(&candidates, &r.run, agent);
        }
    }
    Ok(())
}

/// Folds an issue's comments, runs and activity (each oldest first) into one timeline: summaries go
/// into their runs, status changes become [`StatusChange`]s.
pub fn build(comments: Vec<Comment>, runs: Vec<Run>, activity: Vec<Activity>) -> Vec<Entry> {
    let summaries = summaries(&comments, &runs);
    let authors: HashMap<CommentId, Actor> = comments.iter().map(|c| (c.id, c.author)).collect();
    let mut entries: Vec<Entry> = activity.into_iter().map(change).collect();
    entries.extend(
        comments
            .into_iter()
            .filter(|c| !summaries.values().any(|s| s.id == c.id))
            .map(Entry::Comment),
    );
    let mut summaries = summaries;
    entries.extend(runs.into_iter().map(|run| {
        let trigger_author = match run.trigger {
            RunTrigger::Comment | RunTrigger::Mention => run
                .trigger_comment_id
                .and_then(|c| authors.get(&c).copied()),
            RunTrigger::Assignment | RunTrigger::Retry => None,
        };
        Entry::Run(Box::new(RunEntry {
            summary: summaries.remove(&run.id),
            run,
            trigger_author,
            waiting: None,
        }))
    }));
    // Stable: entries at the same instant keep the order they were added in.
    entries.sort_by_key(Entry::at);
    entries
}

/// Each run's summary comment: the last comment of its agent with the run's id and its summary as text.
fn summaries(comments: &[Comment], runs: &[Run]) -> HashMap<crate::domain::RunId, Comment> {
    runs.iter()
        .filter_map(|run| {
            let summary = run.summary.as_deref()?;
            let comment = comments.iter().rev().find(|c| {
                c.run_id == Some(run.id)
                    && c.author == Actor::Agent(run.agent_id)
                    && c.body == summary
            })?;
            Some((run.id, comment.clone()))
        })
        .collect()
}

/// An activity line as an entry: a readable status change, or any other change.
fn change(a: Activity) -> Entry {
    let status = |v: &serde_json::Value| v.as_str().and_then(|s| s.parse::<IssueStatus>().ok());
    if a.kind == ActivityKind::Status
        && let (Some(from), Some(to)) = (status(&a.detail["from"]), status(&a.detail["to"]))
    {
        return Entry::Status(StatusChange {
            actor: a.actor,
            from,
            to,
            at: a.at,
        });
    }
    Entry::Change(a)
}

#[cfg(test)]
mod tests;
