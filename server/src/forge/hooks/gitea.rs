//! Gitea's and Forgejo's webhook payloads (`X-Gitea-Event` / `X-Forgejo-Event`). Review events arrive
//! as `pull_request_approved`, `pull_request_rejected` and `pull_request_comment` (the event header
//! names the short form, `X-Gitea-Event-Type` the long `pull_request_review_*`); both are read.

use serde::Deserialize;

use super::shaped::{self, Envelope, User};

use super::{ForgeEvent, HookError, LogRef, ReviewVerdict, ignored, read};

#[derive(Deserialize)]
struct PullRequestEvent {
    pull_request: PullRequest,
    #[serde(default)]
    sender: User,
    #[serde(default)]
    review: Option<Review>,
}

#[derive(Deserialize)]
struct PullRequest {
    number: i64,
    #[serde(default)]
    merged: bool,
    #[serde(default)]
    head: Option<Head>,
}

#[derive(Deserialize)]
struct Head {
    #[serde(default)]
    sha: Option<String>,
}

#[derive(Deserialize)]
struct Review {
    #[serde(default, rename = "type")]
    kind: String,
    #[serde(default)]
    content: String,
}

#[derive(Deserialize)]
struct IssueCommentEvent {
    issue: Issue,
    comment: Comment,
    #[serde(default)]
    is_pull: bool,
}

#[derive(Deserialize)]
struct Issue {
    number: i64,
}

#[derive(Deserialize)]
struct Comment {
    body: String,
    #[serde(default)]
    user: User,
}

/// The repository's name and the events of one delivery.
pub(super) fn parse(event: &str, body: &[u8]) -> Result<(String, Vec<ForgeEvent>), HookError> {
    let envelope: Envelope = read(body)?;
    let repo = envelope.repository.unwrap_or_default().full_name;
    let action = envelope.action.as_str();
    let events = match (event, action) {
        ("status", _) => vec![shaped::status(body)?],
        ("workflow_job", _) => vec![shaped::job(body, LogRef::GiteaJob)?],
        ("pull_request", "closed") => {
            let pr = read::<PullRequestEvent>(body)?.pull_request;
            vec![ForgeEvent::Closed {
                pull: pr.number,
                merged: pr.merged,
            }]
        }
        ("pull_request", "opened" | "reopened" | "edited" | "synchronized") => {
            let pr = read::<PullRequestEvent>(body)?.pull_request;
            vec![ForgeEvent::Updated {
                pull: pr.number,
                head_sha: pr.head.and_then(|h| h.sha),
            }]
        }
        (
            "pull_request_approved"
            | "pull_request_review_approved"
            | "pull_request_rejected"
            | "pull_request_review_rejected"
            | "pull_request_comment"
            | "pull_request_review_comment",
            _,
        ) => review(event, read(body)?),
        ("issue_comment", "created") => {
            let event: IssueCommentEvent = read(body)?;
            if event.is_pull {
                vec![ForgeEvent::Comment {
                    pull: event.issue.number,
                    author: event.comment.user.login,
                    body: event.comment.body,
                    path: None,
                    line: None,
                }]
            } else {
                ignored("issue_comment", "on an issue")
            }
        }
        (event, action) => ignored(event, action),
    };
    Ok((repo, events))
}

fn review(event: &str, payload: PullRequestEvent) -> Vec<ForgeEvent> {
    let review = payload.review.unwrap_or(Review {
        kind: String::new(),
        content: String::new(),
    });
    // The event names the verdict; the review's type says the same in its long form.
    let name = if review.kind.is_empty() {
        event
    } else {
        &review.kind
    };
    let verdict = if name.ends_with("approved") {
        ReviewVerdict::Approved
    } else if name.ends_with("rejected") {
        ReviewVerdict::ChangesRequested
    } else {
        ReviewVerdict::Commented
    };
    vec![ForgeEvent::Review {
        pull: payload.pull_request.number,
        author: payload.sender.login,
        verdict,
        body: review.content,
    }]
}
