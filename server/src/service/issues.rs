//! Issues and comments: create, edit, move, assign, comment, delete.

use serde::Deserialize;

use super::{Caller, Error, Problems, Result, announce};
use crate::domain::{
    Assignee, Comment, Issue, IssueKey, IssuePatch, IssueStatus, IssueTitle, Label, NewComment,
    NewIssue, Priority, ValidationError,
};
use crate::engine::Engine;
use crate::redact::Redactor;

/// Raw issue fields as typed by a person or sent by a program. `None` leaves a field unset (create) or
/// unchanged (edit).
#[derive(Debug, Clone, Default, Deserialize, utoipa::ToSchema)]
pub struct IssueInput {
    /// 1–500 characters, not blank.
    #[schema(min_length = 1, max_length = 500, pattern = r"\S")]
    pub title: Option<String>,
    /// Markdown, at most 1 MiB.
    pub body: Option<String>,
    /// On create, todo when left out (`IssueStatus::NEW_ISSUE_DEFAULT`).
    #[schema(value_type = Option<IssueStatus>)]
    pub status: Option<String>,
    #[schema(value_type = Option<Priority>)]
    pub priority: Option<String>,
    /// An agent name, a member's email or name, `agent:<id>`, `user:<id>`, or "" / `none` for nobody.
    pub assignee: Option<String>,
    /// At most 20, each 1–50 characters without `,`.
    #[schema(max_items = 20)]
    pub labels: Option<Vec<String>>,
    /// The parent issue's key (a sub-issue); "" or `none` clears it. Cycles are refused.
    #[schema(example = "ACM-1")]
    pub parent: Option<String>,
    /// Wake the assigned agent once, with a digest, when every sub-issue is done or cancelled.
    pub wake_on_children: Option<bool>,
    /// The project's key (its runs work in the project's repository); "" or `none` takes it out. A
    /// sub-issue created without one is put in its parent's project.
    #[schema(example = "WEB")]
    pub project: Option<String>,
}

fn labels(raw: &[String]) -> std::result::Result<Vec<Label>, ValidationError> {
    Label::parse_list(&raw.join(","))
}

/// Creates an issue from raw input.
pub async fn create(state: &Engine, caller: &Caller, input: &IssueInput) -> Result<Issue> {
    if let Some(scope) = &caller.run {
        // An agent breaks its own issue down, never files work elsewhere or sets other agents going.
        let own = input
            .parent
            .as_deref()
            .and_then(|p| IssueKey::parse(p.trim()).ok())
            .is_some_and(|k| k == scope.issue_key);
        let assigned = input
            .assignee
            .as_deref()
            .is_some_and(|a| !matches!(a.trim(), "" | "none"));
        if !own || assigned || input.wake_on_children.is_some() || input.project.is_some() {
            return Err(scope.refusal_saying(&format!(
                "it may file unassigned sub-issues of it (\"parent\": \"{}\")",
                scope.issue_key
            )));
        }
    }
    let mut problems = Problems::default();
    let title = problems.take(IssueTitle::parse(
        input.title.as_deref().unwrap_or_default(),
    ));
    let status = match input.status.as_deref() {
        Some(s) => problems.take(s.parse()),
        None => Some(IssueStatus::NEW_ISSUE_DEFAULT),
    };
    let priority = match input.priority.as_deref() {
        Some(s) => problems.take(s.parse()),
        None => Some(Priority::None),
    };
    let labels = problems.take(labels(input.labels.as_deref().unwrap_or_default()));
    let assignee = match input.assignee.as_deref() {
        Some(raw) => problems.take(resolve_assignee(state, caller, raw).await?),
        None => Some(None),
    };
    let body = input.body.clone().unwrap_or_default();
    if let Err(e) = crate::domain::issue_body_ok(&body) {
        problems.take::<()>(Err(e));
    }
    let parent = match input.parent.as_deref().map(str::trim) {
        None | Some("" | "none") => None,
        Some(raw) => problems.take(super::plans::typed_issue(state, caller, "parent", raw).await?),
    };
    let project = match input.project.as_deref() {
        Some(raw) => problems
            .take(super::projects::typed_project(state, caller, raw).await?)
            .flatten(),
        // A sub-issue is part of its parent's project.
        None => parent.as_ref().and_then(|p| p.project),
    };
    problems.finish()?;
    let (Some(title), Some(status), Some(priority), Some(labels), Some(assignee)) =
        (title, status, priority, labels, assignee)
    else {
        return Err(Error::invalid([("form", "invalid input".to_owned())]));
    };
    let new = NewIssue {
        title,
        body,
        status,
        priority,
        assignee,
        labels,
        parent: parent.as_ref().map(|p| p.id),
        project,
        created_by: Some(caller.user.id),
    };
    let issue = state.store.create_issue(caller.ws.id, &new).await?;
    if input.wake_on_children == Some(true) {
        state.store.set_fan_in(issue.id, true).await?;
    }
    if let Some(parent) = &parent {
        announce(state, caller, &parent.key);
    }
    queue_run_if_due(state, None, &issue).await;
    crate::engine::triggers::issue_created(state, caller.writer(), &issue).await;
    announce(state, caller, &issue.key);
    Ok(issue)
}

/// Parses a key from the URL or command line.
pub fn parse_key(raw: &str) -> Result<IssueKey> {
    IssueKey::parse(raw).map_err(|_| Error::NotFound)
}

/// Edits the fields present in `input`; a status change is a move to the end of the new column.
pub async fn update(
    state: &Engine,
    caller: &Caller,
    key: &IssueKey,
    input: &IssueInput,
) -> Result<Issue> {
    let current = state.store.get_issue(caller.ws.id, key).await?;
    if caller.run.is_some()
        && (input.title.is_some()
            || input.body.is_some()
            || input.priority.is_some()
            || input.labels.is_some()
            || input.assignee.is_some()
            || input.parent.is_some()
            || input.wake_on_children.is_some()
            || input.project.is_some())
    {
        return Err(Error::refused(
            "token",
            "a run's token may only change its issue's status (and comment on it)",
        ));
    }
    let mut problems = Problems::default();
    let mut patch = IssuePatch::default();
    if let Some(t) = &input.title {
        patch.title = problems.take(IssueTitle::parse(t));
    }
    if let Some(b) = &input.body
        && problems.take(crate::domain::issue_body_ok(b)).is_some()
    {
        patch.body = Some(b.clone());
    }
    if let Some(p) = input.priority.as_deref() {
        patch.priority = problems.take(p.parse());
    }
    if let Some(l) = &input.labels {
        patch.labels = problems.take(labels(l));
    }
    if let Some(a) = input.assignee.as_deref() {
        patch.assignee = problems.take(resolve_assignee(state, caller, a).await?);
    }
    if let Some(raw) = input.project.as_deref() {
        patch.project = problems.take(super::projects::typed_project(state, caller, raw).await?);
    }
    let status: Option<IssueStatus> = input
        .status
        .as_deref()
        .and_then(|s| problems.take(s.parse()));
    problems.finish()?;
    // The parent first: a cycle it would make is refused before any other field is written.
    if let Some(raw) = &input.parent {
        super::plans::set_parent(state, caller, key, raw).await?;
    }
    let actor = caller.actor();
    let mut issue = state
        .store
        .update_issue(caller.ws.id, key, &patch, actor)
        .await?;
    if let Some(status) = status.filter(|s| *s != current.status) {
        issue = state
            .store
            .move_issue(caller.ws.id, key, status, None, actor)
            .await?;
        crate::engine::plan::issue_moved(state, &issue).await;
    }
    if let Some(on) = input.wake_on_children {
        super::plans::set_fan_in(state, caller, key, on).await?;
    }
    cancel_runs_if_unwanted(state, caller, &current, &issue).await;
    queue_run_if_due(state, Some(&current), &issue).await;
    announce(state, caller, key);
    Ok(issue)
}

/// A short digest of an issue's description: what a page that shows it sends back with a change made on
/// it, so a description changed since is noticed ([`set_task`]).
pub fn body_digest(body: &str) -> String {
    use sha2::Digest as _;
    let hash = sha2::Sha256::digest(body.as_bytes());
    hash.iter().take(12).map(|b| format!("{b:02x}")).collect()
}

/// Ticks (`done`) or clears task-list box `index` (0-based, in the description's order) of the issue's
/// description, as an edit of it by the caller. `seen` is the [`body_digest`] of the description the caller
/// saw: when it changed since, nothing is written and the answer is a conflict (the box the caller meant
/// may be another one now).
pub async fn set_task(
    state: &Engine,
    caller: &Caller,
    key: &IssueKey,
    index: usize,
    done: bool,
    seen: &str,
) -> Result<Issue> {
    let current = state.store.get_issue(caller.ws.id, key).await?;
    if body_digest(&current.body) != seen.trim() {
        return Err(Error::conflict(
            "body",
            "the description changed since this page showed it; reload the page and tick the box again",
        ));
    }
    let Some(body) = crate::markdown::toggle_task(&current.body, index, done) else {
        return Err(Error::invalid([(
            "task",
            format!("the description has no task-list box number {}", index + 1),
        )]));
    };
    let input = IssueInput {
        body: Some(body),
        ..IssueInput::default()
    };
    update(state, caller, key, &input).await
}

/// Moves an issue to `status` at `index` in that column.
pub async fn move_to(
    state: &Engine,
    caller: &Caller,
    key: &IssueKey,
    status: &str,
    index: Option<usize>,
) -> Result<Issue> {
    let status: IssueStatus = status.parse()?;
    let before = state.store.get_issue(caller.ws.id, key).await?;
    let issue = state
        .store
        .move_issue(caller.ws.id, key, status, index, caller.actor())
        .await?;
    if issue.status != before.status {
        crate::engine::plan::issue_moved(state, &issue).await;
    }
    cancel_runs_if_unwanted(state, caller, &before, &issue).await;
    queue_run_if_due(state, Some(&before), &issue).await;
    announce(state, caller, key);
    Ok(issue)
}

/// Queues a run when the issue has just become an agent's work: an agent was assigned while it is in
/// todo or in progress, or it moved there with an agent assigned (e.g. out of backlog). An agent that
/// already has a live run on it gets no second one. A queueing error is logged, not returned: the
/// issue change itself succeeded.
pub(super) async fn queue_run_if_due(state: &Engine, before: Option<&Issue>, after: &Issue) {
    let Some(Assignee::Agent(agent)) = after.assignee else {
        return;
    };
    let was_due = before.is_some_and(|b| b.assignee == after.assignee && b.status.starts_runs());
    if !after.status.starts_runs() || was_due {
        return;
    }
    if let Err(e) = state.queue(after, agent).await {
        tracing::warn!(error = %e, issue = %after.key, "cannot queue a run");
    }
}

/// Cancels the live runs of an agent that should no longer work on the issue: it was unassigned (or
/// replaced), or a person parked the issue (backlog) or closed it (done, cancelled). An agent moving its
/// own issue with its run's token cancels nothing. Errors are logged: the issue change itself succeeded.
async fn cancel_runs_if_unwanted(state: &Engine, caller: &Caller, before: &Issue, after: &Issue) {
    let Some(Assignee::Agent(agent)) = before.assignee else {
        return;
    };
    let unassigned = after.assignee != before.assignee;
    let parked = caller.run.is_none()
        && after.status != before.status
        && matches!(
            after.status,
            IssueStatus::Backlog | IssueStatus::Done | IssueStatus::Cancelled
        );
    if !unassigned && !parked {
        return;
    }
    let runs = match state.store.list_runs_for_issue(after.id).await {
        Ok(runs) => runs,
        Err(e) => {
            tracing::warn!(error = %e, issue = %after.key, "cannot list the issue's runs to cancel");
            return;
        }
    };
    for run in runs
        .into_iter()
        .filter(|r| r.agent_id == agent && !r.status.is_terminal())
    {
        tracing::info!(run.id = %run.id, issue = %after.key, unassigned, "cancelling a run no longer wanted");
        if let Err(e) = state.cancel(run.id).await {
            tracing::warn!(error = %e, run.id = %run.id, "cannot cancel the run");
        }
    }
}

/// Whether the caller may delete `issue`: an owner or admin, or the person who created it. A run's
/// token never may.
pub fn may_delete(caller: &Caller, issue: &Issue) -> bool {
    caller.run.is_none() && (caller.role.can_manage() || issue.created_by == Some(caller.user.id))
}

/// Deletes an issue with its comments, activity and runs (their logs included). Its live runs are
/// cancelled first and awaited (up to the stop graces): a run's work is on its branch, and its record
/// means nothing without the issue, so the runs go with it rather than blocking the delete. Returns the
/// deleted issue.
pub async fn delete(state: &Engine, caller: &Caller, key: &IssueKey) -> Result<Issue> {
    let issue = state.store.get_issue(caller.ws.id, key).await?;
    if !may_delete(caller, &issue) {
        return Err(Error::refused(
            "issue",
            format!("only owners, admins and the person who created {key} may delete it"),
        ));
    }
    stop_runs(state, &issue).await?;
    let lines = crate::domain::work_lines(&state.store.list_runs_for_issue(issue.id).await?);
    let deleted = match state.store.delete_issue(caller.ws.id, key).await {
        Err(crate::store::Error::Conflict { constraint }) if constraint == "run_live" => {
            return Err(Error::conflict(
                "issue",
                format!("{key} has a run that is still stopping; try again in a moment"),
            ));
        }
        other => other?,
    };
    tracing::info!(issue = %key, title = %deleted.title.as_str(), by = ?caller.actor(), "issue deleted");
    prune_lines(caller, &lines).await;
    announce(state, caller, key);
    Ok(deleted)
}

/// Deletes the branches of a deleted issue's lines of work in the workspace's local repository, each only
/// while it still points at the commit its last run recorded: a branch someone moved or made stays.
async fn prune_lines(caller: &Caller, lines: &[crate::domain::WorkLine]) {
    let Some(repo) = caller
        .ws
        .repo_path
        .as_deref()
        .map(str::trim)
        .map(std::path::Path::new)
        .filter(|p| p.is_dir())
    else {
        return;
    };
    for line in lines {
        let Some(commit) = &line.commit else { continue };
        match crate::runner::executor::git::prune_branch(repo, &line.branch, commit).await {
            Ok(true) => tracing::info!(branch = %line.branch, "pruned a deleted issue's branch"),
            Ok(false) => {
                tracing::info!(branch = %line.branch, "left a deleted issue's branch someone moved")
            }
            Err(e) => {
                tracing::warn!(error = %e, branch = %line.branch, "cannot prune a deleted issue's branch")
            }
        }
    }
}

/// Cancels the issue's live runs and waits until each has finished and its supervisor let go, for at
/// most both stop graces and a lease (a run held by another replica stops when that replica hears).
async fn stop_runs(state: &Engine, issue: &Issue) -> Result<()> {
    let timing = state.runs.timing();
    let deadline =
        tokio::time::Instant::now() + timing.int_grace + timing.term_grace + timing.lease;
    let mut cancelled = std::collections::HashSet::new();
    loop {
        let live: Vec<_> = state
            .store
            .list_runs_for_issue(issue.id)
            .await?
            .into_iter()
            .filter(|r| !r.status.is_terminal() || state.runs.holds(r.id))
            .collect();
        if live.is_empty() || tokio::time::Instant::now() >= deadline {
            return Ok(());
        }
        for run in &live {
            if cancelled.insert(run.id) {
                tracing::info!(run.id = %run.id, issue = %issue.key, "cancelling a run of an issue being deleted");
                state.cancel(run.id).await?;
            }
        }
        tokio::time::sleep(STOP_POLL).await;
    }
}

/// How often a delete looks again at runs it is waiting for.
const STOP_POLL: std::time::Duration = std::time::Duration::from_millis(100);

/// Adds a comment by the caller.
pub async fn comment(
    state: &Engine,
    caller: &Caller,
    key: &IssueKey,
    body: &str,
) -> Result<Comment> {
    let issue = state.store.get_issue(caller.ws.id, key).await?;
    let body = match &caller.run {
        Some(scope) => {
            // An agent writes with its run's token: its secrets and that token never reach the issue.
            let agent = state.store.get_agent(caller.ws.id, scope.agent_id).await?;
            Redactor::for_agent(&state.secrets, &agent, Some(&scope.token.0)).text(body)
        }
        None => body.to_owned(),
    };
    let mut new = NewComment::parse(caller.actor(), &body)?;
    new.run_id = caller.run.as_ref().map(|scope| scope.run_id);
    let comment = state.store.add_comment(issue.id, &new).await?;
    crate::engine::triggers::comment_added(state, caller.writer(), &issue, &comment).await;
    announce(state, caller, key);
    Ok(comment)
}

/// Resolves an assignee as typed: "" is nobody; `agent:<id>` / `user:<id>` as the picker sends them; else
/// an agent name, then a member's email or display name (case-insensitive).
pub async fn resolve_assignee(
    state: &Engine,
    caller: &Caller,
    raw: &str,
) -> Result<std::result::Result<Option<Assignee>, ValidationError>> {
    let raw = raw.trim();
    if raw.is_empty() || raw == "none" {
        return Ok(Ok(None));
    }
    let unknown = || {
        Ok(Err(ValidationError::new(
            "assignee",
            format!("no agent or member called {raw:?} in this workspace"),
        )))
    };
    if let Some(id) = raw.strip_prefix("agent:") {
        let Ok(id) = id.parse() else { return unknown() };
        return match state.store.get_agent(caller.ws.id, id).await {
            Ok(a) => Ok(Ok(Some(Assignee::Agent(a.id)))),
            Err(crate::store::Error::NotFound) => unknown(),
            Err(e) => Err(e.into()),
        };
    }
    let members = state.store.list_members(caller.ws.id).await?;
    if let Some(id) = raw.strip_prefix("user:") {
        return match members.iter().find(|m| m.user.id.to_string() == id) {
            Some(m) => Ok(Ok(Some(Assignee::User(m.user.id)))),
            None => unknown(),
        };
    }
    if let Ok(name) = crate::domain::AgentName::parse(raw) {
        match state.store.get_agent_by_name(caller.ws.id, &name).await {
            Ok(a) => return Ok(Ok(Some(Assignee::Agent(a.id)))),
            Err(crate::store::Error::NotFound) => {}
            Err(e) => return Err(e.into()),
        }
    }
    let lower = raw.to_lowercase();
    match members
        .iter()
        .find(|m| m.user.email.as_str() == lower || m.user.display_name.to_lowercase() == lower)
    {
        Some(m) => Ok(Ok(Some(Assignee::User(m.user.id)))),
        None => unknown(),
    }
}
