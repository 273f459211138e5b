//! Planning: sub-issues, relations between issues, and the parent's fan-in, as people and programs
//! change them. A run's token may change none of it.

use serde::Deserialize;

use super::{Caller, Error, Result, announce};
use crate::domain::{
    BlockUntil, Blocker, ChildProgress, Cycle, Issue, IssueBrief, IssueKey, IssueLink, LinkKind,
    NewRelation, RelationKind, ValidationError,
};
use crate::engine::Engine;

/// A relation as read from the issue it is added on: what `kind` accepts.
#[derive(Debug, Clone, Copy, serde::Serialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum TypedRelation {
    BlockedBy,
    Blocks,
    RelatesTo,
    DuplicateOf,
}

/// A relation to add, as typed: `{"kind": "blocked_by", "issue": "ACM-2"}` reads "this issue is
/// blocked by ACM-2".
#[derive(Debug, Clone, Default, Deserialize, utoipa::ToSchema)]
pub struct RelationInput {
    /// `blocked_by`, `blocks`, `relates_to` or `duplicate_of`.
    #[schema(value_type = TypedRelation, example = "blocked_by")]
    pub kind: String,
    /// The other issue's key.
    #[schema(pattern = r"^[A-Za-z]{2,10}-0*[1-9][0-9]{0,17}$", example = "ACM-2")]
    pub issue: String,
    /// For blocks: `done` (default) — the blocker holds until it is done; `merged` — until it is done
    /// with a merged pull request.
    #[schema(value_type = Option<BlockUntil>)]
    pub until: Option<String>,
    /// For blocks: the blocked issue's first run starts from the blocker's delivered commit.
    pub stacked: Option<bool>,
}

/// What an issue's plan shows: its parent, children with their progress, relations, the blockers still
/// holding it, and whether its agent is woken when the children end.
#[derive(Debug, Clone)]
pub struct Plan {
    pub parent: Option<IssueBrief>,
    pub children: Vec<Issue>,
    pub progress: ChildProgress,
    pub links: Vec<IssueLink>,
    /// The blockers not met yet: a queued run of the issue waits on these.
    pub waiting_on: Vec<IssueBrief>,
    pub fan_in: bool,
    /// What its sub-issues' runs did: how many, what they used and cost, and the agents' time.
    pub rollup: Rollup,
}

/// The sums of a parent's sub-issues' runs.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Rollup {
    pub runs: i64,
    pub usage: crate::domain::Usage,
    /// Seconds agents worked (each run from its start to its end, or to now while it runs).
    pub work_secs: i64,
}

/// The sums of the runs on `parent`'s sub-issues.
async fn rollup_of(state: &Engine, parent: &Issue) -> Result<Rollup> {
    let now = chrono::Utc::now();
    let filter = crate::domain::UsageFilter {
        from: chrono::DateTime::UNIX_EPOCH,
        to: now + chrono::TimeDelta::minutes(1),
        agent: None,
        issue: None,
        project: None,
        parent: Some(parent.id),
    };
    let runs = state.store.usage_runs(parent.workspace_id, &filter).await?;
    let mut out = Rollup::default();
    for r in &runs {
        out.runs += 1;
        out.usage += &r.usage;
        if let Some(start) = r.started_at {
            out.work_secs += (r.finished_at.unwrap_or(now) - start).num_seconds().max(0);
        }
    }
    Ok(out)
}

/// A relation kind as typed, read from the typed issue's side: (the stored kind, whether the typed issue
/// is the edge's `from`).
fn typed_kind(raw: &str) -> Result<(RelationKind, bool)> {
    Ok(match raw.trim() {
        "blocked_by" | "blocked-by" => (RelationKind::Blocks, false),
        "blocks" => (RelationKind::Blocks, true),
        "relates_to" | "relates-to" | "relates" => (RelationKind::Relates, true),
        "duplicate_of" | "duplicate-of" | "duplicates" => (RelationKind::Duplicates, true),
        other => {
            return Err(Error::invalid([(
                "kind",
                format!(
                    "unknown relation {other:?}: use blocked_by, blocks, relates_to or duplicate_of"
                ),
            )]));
        }
    })
}

fn no_run_token(caller: &Caller) -> Result<()> {
    if caller.run.is_some() {
        return Err(Error::refused(
            "token",
            "a run's token may not change the issue tree or its relations",
        ));
    }
    Ok(())
}

/// An issue of the caller's workspace by typed key, or the problem naming `field` (for a form that
/// gathers every field's problems).
pub(super) async fn typed_issue(
    state: &Engine,
    caller: &Caller,
    field: &'static str,
    raw: &str,
) -> Result<std::result::Result<Issue, ValidationError>> {
    let unknown = || {
        ValidationError::new(
            field,
            format!("no issue {:?} in this workspace", raw.trim()),
        )
    };
    let Ok(key) = IssueKey::parse(raw.trim()) else {
        return Ok(Err(unknown()));
    };
    match state.store.get_issue(caller.ws.id, &key).await {
        Ok(issue) => Ok(Ok(issue)),
        Err(crate::store::Error::NotFound) => Ok(Err(unknown())),
        Err(e) => Err(e.into()),
    }
}

/// [`typed_issue`], its problem as a 422.
async fn other_issue(
    state: &Engine,
    caller: &Caller,
    field: &'static str,
    raw: &str,
) -> Result<Issue> {
    Ok(typed_issue(state, caller, field, raw).await??)
}

fn cycle_error(field: &str, cycle: &Cycle) -> Error {
    Error::invalid([(field, format!("that would make a cycle: {cycle}"))])
}

/// Adds a relation between `key` and another issue; returns the issue's relations.
pub async fn relate(
    state: &Engine,
    caller: &Caller,
    key: &IssueKey,
    input: &RelationInput,
) -> Result<Vec<IssueLink>> {
    no_run_token(caller)?;
    let issue = state.store.get_issue(caller.ws.id, key).await?;
    let (kind, outgoing) = typed_kind(&input.kind)?;
    let other = other_issue(state, caller, "issue", &input.issue).await?;
    let until = match input
        .until
        .as_deref()
        .map(str::trim)
        .filter(|s| !s.is_empty())
    {
        Some(raw) => raw.parse::<BlockUntil>()?,
        None => BlockUntil::Done,
    };
    let stacked = input.stacked.unwrap_or(false);
    if kind != RelationKind::Blocks && (until != BlockUntil::Done || stacked) {
        return Err(Error::invalid([(
            "until",
            "until and stacked are for blocks and blocked_by only".to_owned(),
        )]));
    }
    let (from, to) = if outgoing {
        (issue.id, other.id)
    } else {
        (other.id, issue.id)
    };
    let new = NewRelation {
        from,
        to,
        kind,
        until,
        stacked,
        created_by: Some(caller.user.id),
    };
    match state.store.add_relation(caller.ws.id, &new).await {
        Ok(Ok(())) => {}
        Ok(Err(cycle)) => return Err(cycle_error("issue", &cycle)),
        Err(crate::store::Error::Conflict { constraint })
            if constraint == "issue_relation_pkey" =>
        {
            return Err(Error::conflict(
                "issue",
                format!(
                    "{} already {} {}",
                    issue.key,
                    LinkKind::of(kind, outgoing).label(),
                    other.key
                ),
            ));
        }
        Err(e) => return Err(e.into()),
    }
    tracing::info!(issue = %issue.key, other = %other.key, %kind, "relation added");
    announce(state, caller, &issue.key);
    announce(state, caller, &other.key);
    Ok(state.store.list_links(issue.id).await?)
}

/// Removes the relation of `kind` (as typed) between `key` and `other`.
pub async fn unrelate(
    state: &Engine,
    caller: &Caller,
    key: &IssueKey,
    kind: &str,
    other: &str,
) -> Result<()> {
    no_run_token(caller)?;
    let issue = state.store.get_issue(caller.ws.id, key).await?;
    let (kind, outgoing) = typed_kind(kind)?;
    // The other issue is in the path here: unknown is not found, as for `{key}`.
    let other = state
        .store
        .get_issue(
            caller.ws.id,
            &IssueKey::parse(other.trim()).map_err(|_| Error::NotFound)?,
        )
        .await?;
    let (from, to) = if outgoing {
        (issue.id, other.id)
    } else {
        (other.id, issue.id)
    };
    state
        .store
        .remove_relation(caller.ws.id, from, to, kind)
        .await?;
    // A blocker removed may free a waiting run.
    state.runs.wake();
    announce(state, caller, &issue.key);
    announce(state, caller, &other.key);
    Ok(())
}

/// Sets (a key) or clears ("" or `none`) an issue's parent.
pub async fn set_parent(
    state: &Engine,
    caller: &Caller,
    key: &IssueKey,
    raw: &str,
) -> Result<Issue> {
    no_run_token(caller)?;
    let issue = state.store.get_issue(caller.ws.id, key).await?;
    let parent = match raw.trim() {
        "" | "none" => None,
        typed => Some(other_issue(state, caller, "parent", typed).await?),
    };
    let updated = state
        .store
        .set_parent(
            caller.ws.id,
            issue.id,
            parent.as_ref().map(|p| p.id),
            caller.actor(),
        )
        .await;
    let updated = match updated {
        Ok(Ok(issue)) => issue,
        Ok(Err(cycle)) => return Err(cycle_error("parent", &cycle)),
        Err(crate::store::Error::Conflict { constraint }) if constraint == "issue_tree_depth" => {
            return Err(Error::invalid([(
                "parent",
                format!(
                    "the tree would be deeper than {} levels",
                    crate::domain::MAX_TREE_DEPTH
                ),
            )]));
        }
        Err(e) => return Err(e.into()),
    };
    announce(state, caller, key);
    if let Some(parent) = &parent {
        announce(state, caller, &parent.key);
        // A child added under a parent whose other children all ended is not "all ended" any more; one
        // added already ended makes it so.
        if let Err(e) = crate::engine::plan::fan_in(state, parent.id).await {
            tracing::warn!(error = %e, "cannot wake the parent's agent");
        }
    }
    Ok(updated)
}

/// Turns the parent's fan-in on or off ("wake the assignee when every child has ended").
pub async fn set_fan_in(state: &Engine, caller: &Caller, key: &IssueKey, on: bool) -> Result<()> {
    no_run_token(caller)?;
    let issue = state.store.get_issue(caller.ws.id, key).await?;
    state.store.set_fan_in(issue.id, on).await?;
    if on {
        // Its children may all have ended already.
        crate::engine::plan::fan_in(state, issue.id).await?;
    }
    announce(state, caller, key);
    Ok(())
}

/// An issue's plan.
pub async fn plan_of(state: &Engine, issue: &Issue) -> Result<Plan> {
    let parent = match issue.parent {
        Some(id) => {
            let p = state.store.get_issue_by_id(id).await?;
            Some(IssueBrief {
                id: p.id,
                key: p.key,
                title: p.title,
                status: p.status,
            })
        }
        None => None,
    };
    let children = state.store.list_children(issue.id).await?;
    let progress = state
        .store
        .child_progress(&[issue.id])
        .await?
        .into_iter()
        .next()
        .map(|(_, p)| p)
        .unwrap_or_default();
    let links = state.store.list_links(issue.id).await?;
    let waiting_on = unmet(&state.store.blockers_of(&[issue.id]).await?)
        .map(|b| b.blocker.clone())
        .collect();
    let rollup = if progress.total > 0 {
        rollup_of(state, issue).await?
    } else {
        Rollup::default()
    };
    Ok(Plan {
        parent,
        children,
        progress,
        links,
        waiting_on,
        fan_in: state.store.fan_in(issue.id).await?,
        rollup,
    })
}

/// The blockers that still hold.
pub fn unmet(blockers: &[Blocker]) -> impl Iterator<Item = &Blocker> {
    blockers.iter().filter(|b| !b.met())
}
