//! Webhook deliveries as each forge sends them: [`send_hook`] signs and posts a payload the way `kind`
//! does (with `muster::forge::hooks::outgoing_headers`, the inverse of the server's `verify` and
//! `parse`), and one builder per event Muster acts on makes the payload, with the field names the parser
//! reads. [`event_for`] names the event header value a builder's payload goes with.
//!
//! Where a forge has no such event the builder sends the nearest one: a GitLab review that is not an
//! approval is a note; a Gitea line comment is a review comment (Gitea's webhooks do not say which line);
//! Gitea checks are Actions `workflow_job`s (the only Gitea check that names its job for the log).

use anyhow::{Context as _, Result};
use muster::domain::{ForgeKind, ReviewVerdict};
use muster::forge::hooks::outgoing_headers;
use serde_json::{Value, json};

/// Posts `body` to `url` signed with `secret` the way `kind` does; `event` is the event header's
/// value (GitHub/Gitea `X-*-Event`, GitLab `X-Gitlab-Event` like "Pipeline Hook") and `delivery` the
/// delivery id. Returns the HTTP status.
pub async fn send_hook(
    kind: ForgeKind,
    url: &str,
    secret: &str,
    event: &str,
    delivery: &str,
    body: &Value,
) -> Result<u16> {
    let bytes = serde_json::to_vec(body).context("serialize the delivery")?;
    let mut request = reqwest::Client::new().post(url);
    for (name, value) in outgoing_headers(kind, secret, event, delivery, &bytes) {
        request = request.header(name, value);
    }
    let response = request
        .body(bytes)
        .send()
        .await
        .with_context(|| format!("deliver {event} to {url}"))?;
    Ok(response.status().as_u16())
}

/// The event header value that goes with a payload made by this module's builders.
pub fn event_for(kind: ForgeKind, payload: &Value) -> &'static str {
    let has = |key: &str| payload.get(key).is_some();
    match kind {
        ForgeKind::Gitlab => match payload["object_kind"].as_str() {
            Some("pipeline") => "Pipeline Hook",
            Some("build") => "Job Hook",
            Some("note") => "Note Hook",
            Some("merge_request") => "Merge Request Hook",
            _ => "System Hook",
        },
        ForgeKind::Gitea if has("review") => match payload["review"]["type"].as_str() {
            Some("pull_request_review_approved") => "pull_request_approved",
            Some("pull_request_review_rejected") => "pull_request_rejected",
            _ => "pull_request_comment",
        },
        ForgeKind::Github if has("review") => "pull_request_review",
        _ if has("check_run") => "check_run",
        _ if has("workflow_job") => "workflow_job",
        _ if has("context") => "status",
        _ if has("comment") && has("pull_request") => "pull_request_review_comment",
        _ if has("comment") => "issue_comment",
        _ if has("pull_request") => "pull_request",
        _ => "ping",
    }
}

fn repository(kind: ForgeKind, repo: &str) -> Value {
    match kind {
        ForgeKind::Gitlab => json!({
            "id": 1, "path_with_namespace": repo, "web_url": format!("https://gitlab.example/{repo}")
        }),
        _ => json!({"id": 1, "full_name": repo}),
    }
}

/// A check (CI job) on `pull`'s head that passed or failed.
#[allow(clippy::too_many_arguments)] // the builders' arguments plus the outcome
fn check(
    kind: ForgeKind,
    repo: &str,
    pull: i64,
    branch: &str,
    sha: &str,
    name: &str,
    job: i64,
    passed: bool,
) -> Value {
    let repo_value = repository(kind, repo);
    match kind {
        ForgeKind::Github => json!({
            "action": "completed",
            "check_run": {
                "id": job, "name": name, "status": "completed",
                "conclusion": if passed { "success" } else { "failure" }, "head_sha": sha,
                "html_url": format!("https://github.com/{repo}/runs/{job}"),
                "check_suite": {"head_branch": branch, "head_sha": sha},
                "pull_requests": [{"number": pull, "head": {"ref": branch, "sha": sha}}]
            },
            "repository": repo_value
        }),
        ForgeKind::Gitlab => json!({
            "object_kind": "pipeline",
            "object_attributes": {
                "id": job + 1000, "ref": branch, "tag": false, "sha": sha,
                "status": if passed { "success" } else { "failed" },
                "url": format!("https://gitlab.example/{repo}/-/pipelines/{}", job + 1000)
            },
            "merge_request": {"iid": pull, "source_branch": branch},
            "builds": [{"id": job, "name": name, "stage": "test", "status": if passed { "success" } else { "failed" }}],
            "project": repo_value
        }),
        ForgeKind::Gitea => json!({
            "action": "completed",
            "workflow_job": {
                "id": job, "name": name, "status": "completed",
                "conclusion": if passed { "success" } else { "failure" }, "head_sha": sha,
                "head_branch": branch, "html_url": format!("https://gitea.example/{repo}/actions/runs/1/jobs/0")
            },
            "repository": repo_value
        }),
    }
}

/// A check named `name` on `pull` (head `branch` at `sha`) failed in CI job `job`.
pub fn check_failed(
    kind: ForgeKind,
    repo: &str,
    pull: i64,
    branch: &str,
    sha: &str,
    name: &str,
    job: i64,
) -> Value {
    check(kind, repo, pull, branch, sha, name, job, false)
}

/// A check named `name` on `pull` (head `branch` at `sha`) passed in CI job `job`.
pub fn check_passed(
    kind: ForgeKind,
    repo: &str,
    pull: i64,
    branch: &str,
    sha: &str,
    name: &str,
    job: i64,
) -> Value {
    check(kind, repo, pull, branch, sha, name, job, true)
}

/// `author` reviewed `pull` with `verdict` and `body`.
pub fn review(
    kind: ForgeKind,
    repo: &str,
    pull: i64,
    author: &str,
    verdict: ReviewVerdict,
    body: &str,
) -> Value {
    match kind {
        ForgeKind::Github => json!({
            "action": "submitted",
            "review": {"id": 1, "user": {"login": author}, "body": body, "state": verdict.as_str()},
            "pull_request": {"number": pull},
            "repository": repository(kind, repo)
        }),
        ForgeKind::Gitlab if verdict == ReviewVerdict::Approved => json!({
            "object_kind": "merge_request",
            "user": {"username": author},
            "object_attributes": {"iid": pull, "action": "approved", "state": "opened"},
            "project": repository(kind, repo)
        }),
        ForgeKind::Gitlab => pr_comment(kind, repo, pull, author, body),
        ForgeKind::Gitea => {
            let kind_name = match verdict {
                ReviewVerdict::Approved => "pull_request_review_approved",
                ReviewVerdict::ChangesRequested => "pull_request_review_rejected",
                ReviewVerdict::Commented => "pull_request_review_comment",
            };
            json!({
                "action": "reviewed", "number": pull,
                "pull_request": {"number": pull},
                "review": {"type": kind_name, "content": body},
                "sender": {"login": author},
                "repository": repository(kind, repo)
            })
        }
    }
}

/// `author` commented `body` on line `line` of `path` in `pull`'s diff.
pub fn line_comment(
    kind: ForgeKind,
    repo: &str,
    pull: i64,
    author: &str,
    path: &str,
    line: i64,
    body: &str,
) -> Value {
    match kind {
        ForgeKind::Github => json!({
            "action": "created",
            "comment": {"id": 1, "path": path, "line": line, "body": body, "user": {"login": author}},
            "pull_request": {"number": pull},
            "repository": repository(kind, repo)
        }),
        ForgeKind::Gitlab => note(
            repo,
            pull,
            author,
            body,
            &json!({"new_path": path, "new_line": line}),
        ),
        ForgeKind::Gitea => review(kind, repo, pull, author, ReviewVerdict::Commented, body),
    }
}

/// `author` commented `body` on `pull`'s conversation.
pub fn pr_comment(kind: ForgeKind, repo: &str, pull: i64, author: &str, body: &str) -> Value {
    match kind {
        ForgeKind::Github => json!({
            "action": "created",
            "issue": {"number": pull, "pull_request": {"url": format!("https://api.github.com/repos/{repo}/pulls/{pull}")}},
            "comment": {"id": 2, "body": body, "user": {"login": author}},
            "repository": repository(kind, repo)
        }),
        ForgeKind::Gitlab => note(repo, pull, author, body, &Value::Null),
        ForgeKind::Gitea => json!({
            "action": "created", "is_pull": true,
            "issue": {"number": pull},
            "comment": {"id": 2, "body": body, "user": {"login": author}},
            "repository": repository(kind, repo)
        }),
    }
}

fn note(repo: &str, pull: i64, author: &str, body: &str, position: &Value) -> Value {
    json!({
        "object_kind": "note",
        "user": {"username": author},
        "object_attributes": {"note": body, "noteable_type": "MergeRequest", "system": false, "position": position},
        "merge_request": {"iid": pull},
        "project": repository(ForgeKind::Gitlab, repo)
    })
}

/// `pull` was closed, by a merge when `merged`.
pub fn closed(kind: ForgeKind, repo: &str, pull: i64, merged: bool) -> Value {
    match kind {
        ForgeKind::Gitlab => json!({
            "object_kind": "merge_request",
            "user": {"username": "maintainer"},
            "object_attributes": {"iid": pull, "action": if merged { "merge" } else { "close" },
                "state": if merged { "merged" } else { "closed" }},
            "project": repository(kind, repo)
        }),
        ForgeKind::Github | ForgeKind::Gitea => json!({
            "action": "closed", "number": pull,
            "pull_request": {"number": pull, "state": "closed", "merged": merged, "head": {"sha": ""}},
            "repository": repository(kind, repo)
        }),
    }
}
