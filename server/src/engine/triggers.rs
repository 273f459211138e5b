//! What a comment sets off: a person's reply that mentions nobody queues a follow-up run of the issue's
//! agent, and an `@agent-name` mention queues that agent on the issue (without changing the assignee),
//! under the loop guard; a comment addressed only to people wakes no agent
//! ([`crate::domain::woken_by_comment`]).
//!
//! Invariants:
//! - a comment is never lost: it goes into the agent's queued run (its comment set), or is kept pending
//!   while the agent has a live run on the issue and handed to the follow-up queued when that run ends
//!   ([`run_ended`]), or starts a new run;
//! - an agent's own comments never trigger itself, and Muster's never trigger anything;
//! - a run queued by an agent's comment carries the mentioning run's chain depth + 1; one past the
//!   workspace's `mention_depth_limit`, or past `agent_runs_per_issue_per_hour` agent-triggered runs on
//!   the issue in the last hour, is refused with a Muster comment and an inbox item.
//!
//! Errors are logged, not returned: the comment itself was recorded.
//!
//! The service calls these after it recorded a comment or an issue; the engine calls [`run_ended`]
//! when it recorded a run's end. Nothing here calls the service.

use chrono::Utc;

use crate::domain::{
    AgentId, Assignee, Comment, CommentAuthor, CommentId, InboxKind, Issue, Mentionable, Mentioned,
    NewInboxItem, NewRun, Run, RunId, RunStatus, RunTrigger, UserId, WorkspaceId, woken_by_comment,
};
use crate::engine::Engine;
use crate::store;

/// Who wrote a comment or created an issue: a person, or an agent through its run's token (whose run
/// gives the depth of the chain a mention extends).
#[derive(Debug, Clone, Copy)]
pub struct Writer {
    /// The person (for a run's token: the person the token acts for).
    pub user: UserId,
    /// The run whose token wrote it, and that run's agent.
    pub run: Option<(RunId, AgentId)>,
}

/// How many times a follow-up re-reads the agent's runs when they change under it (a run claimed or
/// queued meanwhile) before giving up and keeping the comment pending.
const ATTEMPTS: usize = 3;

/// A comment was added (`service::issues::comment`): queue what it triggers.
pub async fn comment_added(state: &Engine, writer: Writer, issue: &Issue, comment: &Comment) {
    if let Err(e) = on_comment(state, writer, issue, comment).await {
        tracing::warn!(error = %e, issue = %issue.key, "cannot queue what a comment triggers");
    }
    let about = Mention {
        author: comment.author,
        text: &comment.body,
        comment: Some(comment),
    };
    if let Err(e) = people_mentioned(state, issue, &about).await {
        tracing::warn!(error = %e, issue = %issue.key, "cannot tell the people a comment mentions");
    }
}

/// A text that may mention people: a comment, or an issue's body at creation.
struct Mention<'a> {
    author: CommentAuthor,
    text: &'a str,
    comment: Option<&'a Comment>,
}

/// Gives each member a text mentions an inbox item linking to it ("reviewer mentioned you on ACM-7:
/// <first line>"); writers mentioning themselves, and Muster's own notes, notify no one.
async fn people_mentioned(state: &Engine, issue: &Issue, about: &Mention<'_>) -> store::Result<()> {
    let writer = match about.author {
        CommentAuthor::System => return Ok(()),
        CommentAuthor::User(id) => state.store.get_user(id).await?.display_name,
        CommentAuthor::Agent(id) => state
            .store
            .get_agent(issue.workspace_id, id)
            .await?
            .profile
            .name
            .as_str()
            .to_owned(),
    };
    let names = mentionable(state, issue.workspace_id).await?;
    for mentioned in names.in_text(about.text) {
        let Mentioned::Person(user, _) = mentioned else {
            continue;
        };
        if about.author == CommentAuthor::User(user) {
            continue;
        }
        let item = NewInboxItem {
            workspace_id: issue.workspace_id,
            user_id: Some(user),
            kind: InboxKind::Mentioned,
            issue_id: Some(issue.id),
            run_id: about.comment.and_then(|c| c.run_id),
            comment_id: about.comment.map(|c| c.id),
            message: format!(
                "{writer} mentioned you on {}: {}",
                issue.key,
                first_line(about.text)
            ),
        };
        state.store.create_inbox_item(&item).await?;
    }
    Ok(())
}

/// The first non-blank line of `text`, cut to 200 characters.
fn first_line(text: &str) -> String {
    let line = text.lines().map(str::trim).find(|l| !l.is_empty());
    let line = line.unwrap_or_default();
    let cut: String = line.chars().take(200).collect();
    if cut.len() < line.len() {
        format!("{cut}…")
    } else {
        cut
    }
}

async fn on_comment(
    state: &Engine,
    by: Writer,
    issue: &Issue,
    comment: &Comment,
) -> store::Result<()> {
    // The depth a run queued by this comment has: a person starts a chain, an agent's run extends its own.
    let (writer, depth) = match (&comment.author, by.run) {
        (CommentAuthor::System, _) => return Ok(()),
        (CommentAuthor::User(_), _) => (None, 0),
        (CommentAuthor::Agent(agent), Some((run, _))) => {
            let run = state.store.get_run(run).await?;
            (Some(*agent), run.chain_depth + 1)
        }
        (CommentAuthor::Agent(agent), None) => (Some(*agent), 1),
    };
    let mentions_of = mentionable(state, issue.workspace_id).await?;
    let mentions = mentions_of.in_text(&comment.body);
    // Only a person's comment answers the assignee; an agent's wakes only the agents it mentions.
    let assignee = match issue.assignee {
        Some(Assignee::Agent(agent)) if writer.is_none() && issue.status.takes_replies() => {
            Some(agent)
        }
        _ => None,
    };
    for agent in woken_by_comment(&mentions, assignee) {
        if Some(agent) == writer {
            continue;
        }
        let trigger = if Some(agent) == assignee {
            RunTrigger::Comment
        } else {
            RunTrigger::Mention
        };
        follow_up(state, issue, agent, comment.id, trigger, depth).await?;
    }
    Ok(())
}

/// An issue was created: the agents its body mentions are queued on it (a person's mention: depth 0;
/// through a run's token, the run's depth + 1).
pub async fn issue_created(state: &Engine, by: Writer, issue: &Issue) {
    let queued = async {
        let (writer, depth) = match by.run {
            Some((run, agent)) => (Some(agent), state.store.get_run(run).await?.chain_depth + 1),
            None => (None, 0),
        };
        let assignee = match issue.assignee {
            Some(Assignee::Agent(a)) if issue.status.starts_runs() => Some(a),
            _ => None,
        };
        for agent in mentioned_agents(state, issue, &issue.body).await? {
            // The assignee is already queued by the assignment.
            if Some(agent) == writer || Some(agent) == assignee {
                continue;
            }
            queue_new(state, issue, agent, None, RunTrigger::Mention, depth, &[]).await?;
        }
        Ok::<_, store::Error>(())
    };
    if let Err(e) = queued.await {
        tracing::warn!(error = %e, issue = %issue.key, "cannot queue the agents an issue mentions");
    }
    let about = Mention {
        author: match by.run {
            Some((_, agent)) => CommentAuthor::Agent(agent),
            None => CommentAuthor::User(by.user),
        },
        text: &issue.body,
        comment: None,
    };
    if let Err(e) = people_mentioned(state, issue, &about).await {
        tracing::warn!(error = %e, issue = %issue.key, "cannot tell the people an issue mentions");
    }
}

/// A run ended (recorded as such): the comments kept for its agent on its issue meanwhile are answered
/// by a follow-up, which continues this run.
pub async fn run_ended(state: &Engine, run: &Run) {
    let queued = async {
        let pending = state
            .store
            .take_pending_comments(run.issue_id, run.agent_id)
            .await?;
        if pending.is_empty() {
            return Ok(());
        }
        let issue = state.store.get_issue_by_id(run.issue_id).await?;
        queue_pending(state, &issue, run.agent_id, &pending).await
    };
    if let Err(e) = queued.await {
        tracing::warn!(error = %e, run.id = %run.id, "cannot queue the follow-up of pending comments");
    }
}

/// The workspace's agents named by `@name` mentions in `text` (unknown names are plain text).
async fn mentioned_agents(
    state: &Engine,
    issue: &Issue,
    text: &str,
) -> store::Result<Vec<AgentId>> {
    let names = mentionable(state, issue.workspace_id).await?;
    Ok(names
        .in_text(text)
        .into_iter()
        .filter_map(|m| match m {
            Mentioned::Agent(id, _) => Some(id),
            Mentioned::Person(..) => None,
        })
        .collect())
}

/// The names a workspace answers to: its agents' names and its members' handles ([`Mentionable`]).
pub async fn mentionable(state: &Engine, ws: WorkspaceId) -> store::Result<Mentionable> {
    let agents = state.store.list_agents(ws).await?;
    let members = state.store.list_members(ws).await?;
    Ok(Mentionable::new(
        agents.iter().map(|a| (a.id, a.profile.name.as_str())),
        members.iter().map(|m| (m.user.id, m.user.email.as_str())),
    ))
}

/// Hands a comment Muster wrote for `agent` (a forge's report on its pull request) to it, like a
/// person's reply: see [`follow_up`].
pub(crate) async fn hand_over(
    state: &Engine,
    issue: &Issue,
    agent: AgentId,
    comment: CommentId,
    trigger: RunTrigger,
) -> store::Result<()> {
    follow_up(state, issue, agent, comment, trigger, 0).await
}

/// Hands `comment` to `agent` on `issue`: into its queued run's set, kept pending while it has a live
/// run, or in a new run (under the loop guard).
async fn follow_up(
    state: &Engine,
    issue: &Issue,
    agent: AgentId,
    comment: CommentId,
    trigger: RunTrigger,
    depth: i32,
) -> store::Result<()> {
    for _ in 0..ATTEMPTS {
        let last = state.store.last_run_of_agent(issue.id, agent).await?;
        match &last {
            Some(run) if run.status == RunStatus::Queued => {
                if state.store.add_run_comment(run.id, comment).await? {
                    tracing::info!(run.id = %run.id, comment.id = %comment, "comment folded into the queued run");
                    return Ok(());
                }
                // Claimed meanwhile: look again.
            }
            Some(run) if run.status.is_active() => {
                state
                    .store
                    .add_pending_comment(issue.id, agent, comment, depth)
                    .await?;
                // The run may have ended between the look and the insert, its end finding nothing
                // pending: then this comment's follow-up is queued here.
                if state.store.get_run(run.id).await?.status.is_terminal() {
                    let pending = state.store.take_pending_comments(issue.id, agent).await?;
                    queue_pending(state, issue, agent, &pending).await?;
                }
                return Ok(());
            }
            _ => match queue_new(state, issue, agent, Some(comment), trigger, depth, &[]).await? {
                Queued::Run | Queued::Refused => return Ok(()),
                // Another run was queued meanwhile: fold into it.
                Queued::Busy => {}
            },
        }
    }
    // The agent's runs kept changing: keep the comment for the end of its next run rather than drop it.
    state
        .store
        .add_pending_comment(issue.id, agent, comment, depth)
        .await
}

/// Queues the follow-up answering comments kept pending (oldest first, with their depths): its depth
/// is the deepest of theirs, so waiting never resets the loop guard.
async fn queue_pending(
    state: &Engine,
    issue: &Issue,
    agent: AgentId,
    pending: &[(CommentId, i32)],
) -> store::Result<()> {
    let Some((first, _)) = pending.first() else {
        return Ok(());
    };
    let depth = pending.iter().map(|(_, d)| *d).max().unwrap_or(0);
    let trigger = if depth > 0 {
        RunTrigger::Mention
    } else {
        RunTrigger::Comment
    };
    let rest: Vec<CommentId> = pending.iter().skip(1).map(|(c, _)| *c).collect();
    if let Queued::Busy =
        queue_new(state, issue, agent, Some(*first), trigger, depth, &rest).await?
    {
        // Another run was queued meanwhile: fold them into it, or keep them for its end.
        let last = state.store.last_run_of_agent(issue.id, agent).await?;
        for (comment, depth) in pending {
            let folded = match &last {
                Some(run) => state.store.add_run_comment(run.id, *comment).await?,
                None => false,
            };
            if !folded {
                state
                    .store
                    .add_pending_comment(issue.id, agent, *comment, *depth)
                    .await?;
            }
        }
    }
    Ok(())
}

/// Why the loop guard refuses a run at `depth` on `issue`, if it does.
async fn refusal(state: &Engine, issue: &Issue, depth: i32) -> store::Result<Option<String>> {
    if depth == 0 {
        return Ok(None);
    }
    let ws = state.store.get_workspace(issue.workspace_id).await?;
    if depth > ws.mention_depth_limit {
        return Ok(Some(format!(
            "a chain of agents mentioning agents reached depth {depth}, past this workspace's limit of {}",
            ws.mention_depth_limit
        )));
    }
    let since = Utc::now() - chrono::Duration::hours(1);
    let recent = state
        .store
        .count_agent_triggered_runs(issue.id, since)
        .await?;
    if recent >= i64::from(ws.agent_runs_per_issue_per_hour) {
        return Ok(Some(format!(
            "{recent} runs triggered by agents on this issue in the last hour reached this workspace's cap of {}",
            ws.agent_runs_per_issue_per_hour
        )));
    }
    Ok(None)
}

/// What [`queue_new`] did.
enum Queued {
    Run,
    /// The loop guard refused it (and said so on the issue).
    Refused,
    /// The agent already has a live run on the issue.
    Busy,
}

/// Queues a new run of `agent` on `issue` continuing its last one, unless the loop guard refuses it.
async fn queue_new(
    state: &Engine,
    issue: &Issue,
    agent: AgentId,
    comment: Option<CommentId>,
    trigger: RunTrigger,
    depth: i32,
    more: &[CommentId],
) -> store::Result<Queued> {
    if let Some(why) = refusal(state, issue, depth).await? {
        refuse(state, issue, agent, &why).await?;
        return Ok(Queued::Refused);
    }
    let previous = state.store.last_run_of_agent(issue.id, agent).await?;
    let new = NewRun {
        trigger,
        trigger_comment_id: comment,
        previous_run_id: previous.map(|r| r.id),
        ensemble_run_id: None,
        chain_depth: depth,
        ..NewRun::assignment(issue.workspace_id, issue.id, agent)
    };
    Ok(match state.queue_run(&new, more).await? {
        Some(run) => {
            tracing::info!(run.id = %run.id, %trigger, depth, issue = %issue.key, "follow-up queued");
            Queued::Run
        }
        None => Queued::Busy,
    })
}

/// Records a refusal where people see it: a Muster comment on the issue and an inbox item for its
/// creator (everyone in the workspace when no person created it).
async fn refuse(state: &Engine, issue: &Issue, agent: AgentId, why: &str) -> store::Result<()> {
    let name = match state.store.get_agent(issue.workspace_id, agent).await {
        Ok(a) => a.profile.name.as_str().to_owned(),
        Err(_) => "an agent".to_owned(),
    };
    let message = format!(
        "Loop guard: Muster did not start {name} on {}: {why}.",
        issue.key
    );
    tracing::warn!(issue = %issue.key, agent = %name, "{message}");
    state.note_on_issue(issue.id, None, &message).await?;
    let item = NewInboxItem {
        workspace_id: issue.workspace_id,
        user_id: issue.created_by,
        kind: InboxKind::LoopGuard,
        issue_id: Some(issue.id),
        run_id: None,
        comment_id: None,
        message,
    };
    state.store.create_inbox_item(&item).await.map(drop)
}
