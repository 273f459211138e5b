use serde_json::json;

use super::*;

const GL: ForgeKind = ForgeKind::Gitlab;
const SHA: &str = "bcbb5ec396a2c0f828686f14fac9b80b780504f2";

fn project() -> Value {
    json!({"id": 15, "name": "app", "path_with_namespace": "acme/app", "web_url": "https://gitlab.example/acme/app"})
}

fn pipeline(status: &str, builds: &Value) -> Value {
    json!({
        "object_kind": "pipeline",
        "object_attributes": {"id": 31, "iid": 3, "ref": "muster/fix-1", "tag": false, "sha": SHA,
            "status": status, "url": "https://gitlab.example/acme/app/-/pipelines/31"},
        "merge_request": {"id": 1, "iid": 4, "source_branch": "muster/fix-1", "target_branch": "main"},
        "user": {"username": "root"},
        "project": project(),
        "builds": builds
    })
}

#[test]
fn a_pipeline_is_a_check_and_one_per_job() {
    let builds = json!([
        {"id": 380, "stage": "build", "name": "build", "status": "success"},
        {"id": 381, "stage": "test", "name": "test", "status": "failed"},
        {"id": 382, "stage": "test", "name": "lint", "status": "failed"}
    ]);
    let events = deliver(GL, "Pipeline Hook", &pipeline("failed", &builds));
    let pipeline_url = Some("https://gitlab.example/acme/app/-/pipelines/31");
    assert_eq!(
        events,
        vec![
            check(
                &[4],
                Some("muster/fix-1"),
                SHA,
                "pipeline",
                CheckState::Failure,
                pipeline_url,
                LogRef::GitlabJob(381)
            ),
            check(
                &[4],
                Some("muster/fix-1"),
                SHA,
                "build",
                CheckState::Success,
                Some("https://gitlab.example/acme/app/-/jobs/380"),
                LogRef::GitlabJob(380)
            ),
            check(
                &[4],
                Some("muster/fix-1"),
                SHA,
                "test",
                CheckState::Failure,
                Some("https://gitlab.example/acme/app/-/jobs/381"),
                LogRef::GitlabJob(381)
            ),
            check(
                &[4],
                Some("muster/fix-1"),
                SHA,
                "lint",
                CheckState::Failure,
                Some("https://gitlab.example/acme/app/-/jobs/382"),
                LogRef::GitlabJob(382)
            ),
        ]
    );
    assert_eq!(
        deliver(GL, "Pipeline Hook", &pipeline("running", &json!([]))),
        vec![check(
            &[4],
            Some("muster/fix-1"),
            SHA,
            "pipeline",
            CheckState::Pending,
            pipeline_url,
            LogRef::None
        )]
    );
    assert_eq!(
        deliver(GL, "Pipeline Hook", &pipeline("success", &json!([]))),
        vec![check(
            &[4],
            Some("muster/fix-1"),
            SHA,
            "pipeline",
            CheckState::Success,
            pipeline_url,
            LogRef::None
        )]
    );
}

#[test]
fn a_job_is_a_check_on_its_branch() {
    let payload = json!({
        "object_kind": "build", "ref": "muster/fix-1", "tag": false, "before_sha": "0000", "sha": SHA,
        "build_id": 1977, "build_name": "test", "build_stage": "test", "build_status": "failed",
        "project_id": 15, "project_name": "acme / app", "project": project(),
        "repository": {"name": "app", "homepage": "https://gitlab.example/acme/app"}
    });
    assert_eq!(
        one(GL, "Job Hook", &payload),
        check(
            &[],
            Some("muster/fix-1"),
            SHA,
            "test",
            CheckState::Failure,
            Some("https://gitlab.example/acme/app/-/jobs/1977"),
            LogRef::GitlabJob(1977)
        )
    );
}

#[test]
fn notes_on_merge_requests_are_comments() {
    let note = |position: Value| {
        json!({
            "object_kind": "note", "event_type": "note",
            "user": {"id": 1, "username": "alice", "name": "Alice"},
            "project": project(),
            "object_attributes": {"id": 1244, "note": "Rename this.", "noteable_type": "MergeRequest",
                "system": false, "position": position, "type": if position.is_null() { Value::Null } else { json!("DiffNote") }},
            "merge_request": {"id": 7, "iid": 4, "source_branch": "muster/fix-1"}
        })
    };
    assert_eq!(
        one(
            GL,
            "Note Hook",
            &note(
                json!({"new_path": "src/lib.rs", "new_line": 12, "old_path": "src/lib.rs", "old_line": null})
            )
        ),
        ForgeEvent::Comment {
            pull: 4,
            author: "alice".into(),
            body: "Rename this.".into(),
            path: Some("src/lib.rs".into()),
            line: Some(12)
        }
    );
    assert_eq!(
        one(GL, "Note Hook", &note(Value::Null)),
        ForgeEvent::Comment {
            pull: 4,
            author: "alice".into(),
            body: "Rename this.".into(),
            path: None,
            line: None
        }
    );
    let on_issue = json!({
        "object_kind": "note", "user": {"username": "alice"}, "project": project(),
        "object_attributes": {"note": "hi", "noteable_type": "Issue"}, "issue": {"iid": 2}
    });
    assert!(matches!(
        one(GL, "Note Hook", &on_issue),
        ForgeEvent::Ignored { .. }
    ));
}

#[test]
fn merge_request_actions_close_review_or_refresh() {
    let payload = |action: &str| {
        json!({
            "object_kind": "merge_request", "event_type": "merge_request",
            "user": {"username": "bob"}, "project": project(),
            "object_attributes": {"iid": 4, "action": action, "state": "opened",
                "source_branch": "muster/fix-1", "last_commit": {"id": SHA}}
        })
    };
    assert_eq!(
        one(GL, "Merge Request Hook", &payload("merge")),
        ForgeEvent::Closed {
            pull: 4,
            merged: true
        }
    );
    assert_eq!(
        one(GL, "Merge Request Hook", &payload("close")),
        ForgeEvent::Closed {
            pull: 4,
            merged: false
        }
    );
    assert_eq!(
        one(GL, "Merge Request Hook", &payload("approved")),
        ForgeEvent::Review {
            pull: 4,
            author: "bob".into(),
            verdict: ReviewVerdict::Approved,
            body: String::new()
        }
    );
    assert_eq!(
        one(GL, "Merge Request Hook", &payload("unapproved")),
        ForgeEvent::Review {
            pull: 4,
            author: "bob".into(),
            verdict: ReviewVerdict::Commented,
            body: String::new()
        }
    );
    for action in ["open", "reopen", "update"] {
        assert_eq!(
            one(GL, "Merge Request Hook", &payload(action)),
            ForgeEvent::Updated {
                pull: 4,
                head_sha: Some(SHA.into())
            }
        );
    }
}
