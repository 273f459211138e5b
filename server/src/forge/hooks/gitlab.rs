//! GitLab's webhook payloads (`X-Gitlab-Event`, and each payload's `object_kind`).

use serde::Deserialize;

use super::{CheckState, ForgeEvent, HookError, LogRef, ReviewVerdict, ignored, read};

/// The name of a pipeline's own check (its jobs' checks carry the jobs' names).
pub const PIPELINE_CHECK: &str = "pipeline";

#[derive(Deserialize, Default)]
struct Project {
    #[serde(default)]
    path_with_namespace: String,
    #[serde(default)]
    web_url: Option<String>,
}

#[derive(Deserialize, Default)]
struct User {
    #[serde(default)]
    username: String,
}

#[derive(Deserialize)]
struct Envelope {
    #[serde(default)]
    object_kind: String,
    #[serde(default)]
    project: Option<Project>,
}

#[derive(Deserialize)]
struct Iid {
    iid: i64,
}

#[derive(Deserialize)]
struct PipelineEvent {
    object_attributes: Pipeline,
    #[serde(default)]
    merge_request: Option<Iid>,
    #[serde(default)]
    builds: Vec<Build>,
}

#[derive(Deserialize)]
struct Pipeline {
    #[serde(rename = "ref")]
    branch: String,
    #[serde(default)]
    tag: bool,
    sha: String,
    status: String,
    #[serde(default)]
    url: Option<String>,
}

#[derive(Deserialize)]
struct Build {
    id: i64,
    name: String,
    status: String,
}

#[derive(Deserialize)]
struct JobEvent {
    #[serde(rename = "ref")]
    branch: String,
    #[serde(default)]
    tag: bool,
    sha: String,
    build_id: i64,
    build_name: String,
    build_status: String,
    #[serde(default)]
    repository: Option<Repository>,
}

#[derive(Deserialize)]
struct Repository {
    #[serde(default)]
    homepage: Option<String>,
}

#[derive(Deserialize)]
struct NoteEvent {
    #[serde(default)]
    user: User,
    object_attributes: Note,
    #[serde(default)]
    merge_request: Option<Iid>,
}

#[derive(Deserialize)]
struct Note {
    note: String,
    noteable_type: String,
    #[serde(default)]
    system: bool,
    #[serde(default)]
    position: Option<Position>,
}

#[derive(Deserialize)]
struct Position {
    #[serde(default)]
    new_path: Option<String>,
    #[serde(default)]
    new_line: Option<i64>,
    #[serde(default)]
    old_path: Option<String>,
    #[serde(default)]
    old_line: Option<i64>,
}

#[derive(Deserialize)]
struct MergeRequestEvent {
    #[serde(default)]
    user: User,
    object_attributes: MergeRequest,
}

#[derive(Deserialize)]
struct MergeRequest {
    iid: i64,
    #[serde(default)]
    action: Option<String>,
    #[serde(default)]
    last_commit: Option<Commit>,
}

#[derive(Deserialize)]
struct Commit {
    id: String,
}

/// A pipeline's or job's state from its status.
fn check_state(status: &str) -> CheckState {
    match status {
        "success" | "skipped" => CheckState::Success,
        "failed" | "canceled" | "canceling" => CheckState::Failure,
        _ => CheckState::Pending,
    }
}

/// The repository's name and the events of one delivery.
pub(super) fn parse(event: &str, body: &[u8]) -> Result<(String, Vec<ForgeEvent>), HookError> {
    let envelope: Envelope = read(body)?;
    let project = envelope.project.unwrap_or_default();
    let kind = match (event, envelope.object_kind.as_str()) {
        ("Pipeline Hook", _) | (_, "pipeline") => "pipeline",
        ("Job Hook", _) | (_, "build") => "build",
        ("Note Hook", _) | (_, "note") => "note",
        ("Merge Request Hook", _) | (_, "merge_request") => "merge_request",
        _ => "",
    };
    let events = match kind {
        "pipeline" => pipeline(read(body)?, &project),
        "build" => job(read(body)?, &project),
        "note" => note(read(body)?),
        "merge_request" => merge_request(read(body)?),
        _ => ignored(event, &envelope.object_kind),
    };
    Ok((project.path_with_namespace, events))
}

/// The pipeline's own check (its log: the first failed job's), then one check per job the payload
/// lists, each with its own log: a job that failed and then passed turns green by its own name.
fn pipeline(event: PipelineEvent, project: &Project) -> Vec<ForgeEvent> {
    let p = event.object_attributes;
    if p.tag {
        return ignored("Pipeline Hook", "for a tag");
    }
    let pulls: Vec<i64> = event.merge_request.iter().map(|mr| mr.iid).collect();
    let check = |name: String, state, url, log| ForgeEvent::Check {
        pulls: pulls.clone(),
        branch: Some(p.branch.clone()),
        head_sha: p.sha.clone(),
        name,
        state,
        url,
        log,
    };
    let first_failed = event
        .builds
        .iter()
        .find(|b| check_state(&b.status) == CheckState::Failure)
        .map_or(LogRef::None, |b| LogRef::GitlabJob(b.id));
    let mut events = vec![check(
        PIPELINE_CHECK.to_owned(),
        check_state(&p.status),
        p.url.clone(),
        first_failed,
    )];
    events.extend(event.builds.iter().map(|b| {
        check(
            b.name.clone(),
            check_state(&b.status),
            job_url(project.web_url.as_deref(), b.id),
            LogRef::GitlabJob(b.id),
        )
    }));
    events
}

fn job(event: JobEvent, project: &Project) -> Vec<ForgeEvent> {
    if event.tag {
        return ignored("Job Hook", "for a tag");
    }
    let home = project.web_url.as_deref().or_else(|| {
        event
            .repository
            .as_ref()
            .and_then(|r| r.homepage.as_deref())
    });
    vec![ForgeEvent::Check {
        pulls: Vec::new(),
        branch: Some(event.branch),
        head_sha: event.sha,
        state: check_state(&event.build_status),
        name: event.build_name,
        url: job_url(home, event.build_id),
        log: LogRef::GitlabJob(event.build_id),
    }]
}

fn job_url(project_url: Option<&str>, job: i64) -> Option<String> {
    project_url.map(|home| format!("{}/-/jobs/{job}", home.trim_end_matches('/')))
}

fn note(event: NoteEvent) -> Vec<ForgeEvent> {
    let note = event.object_attributes;
    let Some(mr) = event
        .merge_request
        .filter(|_| note.noteable_type == "MergeRequest")
    else {
        return ignored("Note Hook", &note.noteable_type);
    };
    if note.system {
        return ignored("Note Hook", "system note");
    }
    let (path, line) = match note.position {
        Some(p) => (p.new_path.or(p.old_path), p.new_line.or(p.old_line)),
        None => (None, None),
    };
    vec![ForgeEvent::Comment {
        pull: mr.iid,
        author: event.user.username,
        body: note.note,
        path,
        line,
    }]
}

fn merge_request(event: MergeRequestEvent) -> Vec<ForgeEvent> {
    let mr = event.object_attributes;
    let action = mr.action.unwrap_or_default();
    let review = |verdict| {
        vec![ForgeEvent::Review {
            pull: mr.iid,
            author: event.user.username.clone(),
            verdict,
            body: String::new(),
        }]
    };
    match action.as_str() {
        "merge" => vec![ForgeEvent::Closed {
            pull: mr.iid,
            merged: true,
        }],
        "close" => vec![ForgeEvent::Closed {
            pull: mr.iid,
            merged: false,
        }],
        "approved" | "approval" => review(ReviewVerdict::Approved),
        // A withdrawn approval: the reviewer's latest word is no longer a yes.
        "unapproved" | "unapproval" => review(ReviewVerdict::Commented),
        "open" | "reopen" | "update" => vec![ForgeEvent::Updated {
            pull: mr.iid,
            head_sha: mr.last_commit.map(|c| c.id),
        }],
        other => ignored("Merge Request Hook", other),
    }
}
