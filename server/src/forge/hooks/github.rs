//! GitHub's webhook payloads (`X-GitHub-Event`).

use serde::Deserialize;

use super::shaped::{self, Envelope, User};

use super::{ForgeEvent, HookError, LogRef, ignored, read, verdict};

#[derive(Deserialize)]
struct CheckRunEvent {
    check_run: CheckRun,
}

#[derive(Deserialize)]
struct CheckRun {
    id: i64,
    name: String,
    status: String,
    #[serde(default)]
    conclusion: Option<String>,
    head_sha: String,
    #[serde(default)]
    html_url: Option<String>,
    #[serde(default)]
    pull_requests: Vec<Number>,
    #[serde(default)]
    check_suite: Option<CheckSuite>,
}

#[derive(Deserialize)]
struct Number {
    number: i64,
}

#[derive(Deserialize)]
struct CheckSuite {
    #[serde(default)]
    head_branch: Option<String>,
}

#[derive(Deserialize)]
struct ReviewEvent {
    review: Review,
    pull_request: Number,
}

#[derive(Deserialize)]
struct Review {
    state: String,
    #[serde(default)]
    body: Option<String>,
    #[serde(default)]
    user: User,
}

#[derive(Deserialize)]
struct ReviewCommentEvent {
    comment: Comment,
    pull_request: Number,
}

#[derive(Deserialize)]
struct Comment {
    body: String,
    #[serde(default)]
    user: User,
    #[serde(default)]
    path: Option<String>,
    #[serde(default)]
    line: Option<i64>,
    #[serde(default)]
    original_line: Option<i64>,
}

#[derive(Deserialize)]
struct IssueCommentEvent {
    issue: Issue,
    comment: Comment,
}

#[derive(Deserialize)]
struct Issue {
    number: i64,
    /// Present only when the issue is a pull request.
    #[serde(default)]
    pull_request: Option<serde::de::IgnoredAny>,
}

#[derive(Deserialize)]
struct PullRequestEvent {
    pull_request: PullRequest,
}

#[derive(Deserialize)]
struct PullRequest {
    number: i64,
    #[serde(default)]
    merged: bool,
    head: Head,
}

#[derive(Deserialize)]
struct Head {
    sha: String,
}

/// The repository's name and the events of one delivery.
pub(super) fn parse(event: &str, body: &[u8]) -> Result<(String, Vec<ForgeEvent>), HookError> {
    let envelope: Envelope = read(body)?;
    let repo = envelope.repository.unwrap_or_default().full_name;
    let action = envelope.action.as_str();
    let events = match (event, action) {
        ("check_run", _) => {
            let run = read::<CheckRunEvent>(body)?.check_run;
            vec![ForgeEvent::Check {
                pulls: run.pull_requests.iter().map(|p| p.number).collect(),
                branch: run.check_suite.and_then(|s| s.head_branch),
                head_sha: run.head_sha,
                state: shaped::check_state(&run.status, run.conclusion.as_deref()),
                name: run.name,
                url: run.html_url,
                log: LogRef::GithubJob(run.id),
            }]
        }
        ("workflow_job", _) => vec![shaped::job(body, LogRef::GithubJob)?],
        ("status", _) => vec![shaped::status(body)?],
        ("pull_request_review", "submitted") => {
            let event: ReviewEvent = read(body)?;
            match verdict(&event.review.state) {
                Some(verdict) => vec![ForgeEvent::Review {
                    pull: event.pull_request.number,
                    author: event.review.user.login,
                    verdict,
                    body: event.review.body.unwrap_or_default(),
                }],
                None => ignored("pull_request_review", &event.review.state),
            }
        }
        ("pull_request_review_comment", "created") => {
            let event: ReviewCommentEvent = read(body)?;
            let c = event.comment;
            vec![ForgeEvent::Comment {
                pull: event.pull_request.number,
                author: c.user.login,
                body: c.body,
                path: c.path,
                line: c.line.or(c.original_line),
            }]
        }
        ("issue_comment", "created") => {
            let event: IssueCommentEvent = read(body)?;
            if event.issue.pull_request.is_none() {
                ignored("issue_comment", "on an issue")
            } else {
                vec![ForgeEvent::Comment {
                    pull: event.issue.number,
                    author: event.comment.user.login,
                    body: event.comment.body,
                    path: None,
                    line: None,
                }]
            }
        }
        ("pull_request", "closed") => {
            let pr = read::<PullRequestEvent>(body)?.pull_request;
            vec![ForgeEvent::Closed {
                pull: pr.number,
                merged: pr.merged,
            }]
        }
        (
            "pull_request",
            "opened" | "reopened" | "synchronize" | "edited" | "ready_for_review"
            | "converted_to_draft",
        ) => {
            let pr = read::<PullRequestEvent>(body)?.pull_request;
            vec![ForgeEvent::Updated {
                pull: pr.number,
                head_sha: Some(pr.head.sha),
            }]
        }
        (event, action) => ignored(event, action),
    };
    Ok((repo, events))
}
