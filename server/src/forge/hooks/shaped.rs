//! What Gitea and Forgejo send in GitHub's shape: the envelope (`action`, `repository.full_name`), a
//! user's `login`, commit statuses (`status`) and Actions jobs (`workflow_job`). Each forge's module
//! reads these through here; only the log a job points at differs.

use serde::Deserialize;

use super::{CheckState, ForgeEvent, HookError, LogRef, read};

#[derive(Deserialize, Default)]
pub(super) struct Repository {
    pub full_name: String,
}

#[derive(Deserialize, Default)]
pub(super) struct User {
    #[serde(default)]
    pub login: String,
}

/// The fields every event shares.
#[derive(Deserialize)]
pub(super) struct Envelope {
    #[serde(default)]
    pub action: String,
    #[serde(default)]
    pub repository: Option<Repository>,
}

#[derive(Deserialize)]
struct StatusEvent {
    sha: String,
    state: String,
    context: String,
    #[serde(default)]
    target_url: Option<String>,
    #[serde(default)]
    branches: Vec<Named>,
}

#[derive(Deserialize)]
struct Named {
    name: String,
}

#[derive(Deserialize)]
struct WorkflowJobEvent {
    workflow_job: WorkflowJob,
}

#[derive(Deserialize)]
struct WorkflowJob {
    id: i64,
    name: String,
    status: String,
    #[serde(default)]
    conclusion: Option<String>,
    head_sha: String,
    #[serde(default)]
    head_branch: Option<String>,
    #[serde(default)]
    html_url: Option<String>,
}

/// A check run's or job's state from its status and conclusion: pending until completed; then a
/// success, neutral or skipped conclusion passes and any other fails.
pub(super) fn check_state(status: &str, conclusion: Option<&str>) -> CheckState {
    match (status, conclusion) {
        ("completed", Some("success" | "neutral" | "skipped")) => CheckState::Success,
        ("completed", Some(_)) => CheckState::Failure,
        _ => CheckState::Pending,
    }
}

/// A commit status (`status` event): a check named by its context, with no log to read.
pub(super) fn status(body: &[u8]) -> Result<ForgeEvent, HookError> {
    let status: StatusEvent = read(body)?;
    let state = match status.state.as_str() {
        "success" | "warning" | "skipped" => CheckState::Success,
        "failure" | "error" => CheckState::Failure,
        _ => CheckState::Pending,
    };
    Ok(ForgeEvent::Check {
        pulls: Vec::new(),
        branch: status.branches.into_iter().next().map(|b| b.name),
        head_sha: status.sha,
        name: status.context,
        state,
        url: status.target_url,
        log: LogRef::None,
    })
}

/// An Actions job (`workflow_job` event), whose log `log` names by the job's id.
pub(super) fn job(body: &[u8], log: fn(i64) -> LogRef) -> Result<ForgeEvent, HookError> {
    let job = read::<WorkflowJobEvent>(body)?.workflow_job;
    Ok(ForgeEvent::Check {
        pulls: Vec::new(),
        branch: job.head_branch,
        head_sha: job.head_sha,
        state: check_state(&job.status, job.conclusion.as_deref()),
        name: job.name,
        url: job.html_url,
        log: log(job.id),
    })
}
