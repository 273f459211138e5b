//! Editing and deleting comments. A comment is its author's: only they may change its text (an agent,
//! through its run's token, only its own comments); owners and admins may also delete any comment, and
//! nobody edits what Muster itself wrote.

use super::{Caller, Error, Result, announce};
use crate::domain::{Comment, CommentAuthor, CommentId, Issue, IssueKey, NewComment};
use crate::engine::Engine;
use crate::redact::Redactor;

/// Parses a comment id from a URL; a malformed one is as unknown as a missing one.
pub fn parse_id(raw: &str, key: &IssueKey) -> Result<CommentId> {
    raw.trim().parse().map_err(|_| not_found(raw, key))
}

fn not_found(id: impl std::fmt::Display, key: &IssueKey) -> Error {
    Error::Unknown {
        field: "comment",
        message: format!("{id} is not a comment on {key} (it may have been deleted)"),
    }
}

/// The issue and its comment `id`, or a 404 that names both.
async fn load(
    state: &Engine,
    caller: &Caller,
    key: &IssueKey,
    id: CommentId,
) -> Result<(Issue, Comment)> {
    let issue = state.store.get_issue(caller.ws.id, key).await?;
    match state.store.get_comment(issue.id, id).await {
        Ok(c) => Ok((issue, c)),
        Err(crate::store::Error::NotFound) => Err(not_found(id, key)),
        Err(e) => Err(e.into()),
    }
}

/// Whether the caller wrote `comment`: the person, or (with a run's token) the run's agent.
pub fn is_author(caller: &Caller, comment: &Comment) -> bool {
    comment.author != CommentAuthor::System && comment.author == caller.actor()
}

/// Whether the caller may delete `comment`: its author, or an owner or admin (not through a run's token).
pub fn may_delete(caller: &Caller, comment: &Comment) -> bool {
    is_author(caller, comment) || (caller.run.is_none() && caller.role.can_manage())
}

fn forbidden(message: &str) -> Error {
    Error::refused("comment", message)
}

/// Replaces the text of one of the caller's own comments; it then shows as edited.
pub async fn edit(
    state: &Engine,
    caller: &Caller,
    key: &IssueKey,
    id: CommentId,
    body: &str,
) -> Result<Comment> {
    let (issue, comment) = load(state, caller, key, id).await?;
    if !is_author(caller, &comment) {
        return Err(forbidden(if caller.run.is_some() {
            "an agent may edit only its own comments"
        } else {
            "only its author may edit this comment"
        }));
    }
    let body = match &caller.run {
        Some(scope) => {
            // As when it commented: the agent's secrets and its token never reach the issue.
            let agent = state.store.get_agent(caller.ws.id, scope.agent_id).await?;
            Redactor::for_agent(&state.secrets, &agent, Some(&scope.token.0)).text(body)
        }
        None => body.to_owned(),
    };
    let checked = NewComment::parse(caller.actor(), &body)?;
    let edited = match state.store.edit_comment(issue.id, id, &checked.body).await {
        Err(crate::store::Error::NotFound) => return Err(not_found(id, key)),
        other => other?,
    };
    announce(state, caller, key);
    Ok(edited)
}

/// Deletes a comment: the caller's own, or any as an owner or admin.
pub async fn delete(state: &Engine, caller: &Caller, key: &IssueKey, id: CommentId) -> Result<()> {
    let (issue, comment) = load(state, caller, key, id).await?;
    if !may_delete(caller, &comment) {
        return Err(forbidden(if caller.run.is_some() {
            "an agent may delete only its own comments"
        } else {
            "only its author or an owner or admin may delete this comment"
        }));
    }
    match state.store.delete_comment(issue.id, id).await {
        Err(crate::store::Error::NotFound) => return Err(not_found(id, key)),
        other => other?,
    }
    tracing::info!(issue = %key, comment.id = %id, by = ?caller.actor(), "comment deleted");
    announce(state, caller, key);
    Ok(())
}
