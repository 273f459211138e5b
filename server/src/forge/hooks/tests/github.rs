use serde_json::json;

use super::*;

const GH: ForgeKind = ForgeKind::Github;
const SHA: &str = "6dcb09b5b57875f334f61aebed695e2e4193db5e";

#[test]
fn a_completed_check_run_names_its_pull_requests_and_job() {
    let payload = |status: &str, conclusion: Value| {
        json!({
            "action": if status == "completed" { "completed" } else { "created" },
            "check_run": {
                "id": 4242, "name": "test", "status": status, "conclusion": conclusion,
                "head_sha": SHA, "html_url": "https://github.com/acme/app/runs/4242",
                "check_suite": {"id": 5, "head_branch": "muster/fix-1", "head_sha": SHA},
                "pull_requests": [{"number": 7, "head": {"ref": "muster/fix-1", "sha": SHA}}]
            },
            "repository": repository(),
            "sender": {"login": "github-actions[bot]"}
        })
    };
    let expect = |state| {
        check(
            &[7],
            Some("muster/fix-1"),
            SHA,
            "test",
            state,
            Some("https://github.com/acme/app/runs/4242"),
            LogRef::GithubJob(4242),
        )
    };
    for (conclusion, state) in [
        ("failure", CheckState::Failure),
        ("timed_out", CheckState::Failure),
        ("cancelled", CheckState::Failure),
        ("action_required", CheckState::Failure),
        ("success", CheckState::Success),
        ("neutral", CheckState::Success),
        ("skipped", CheckState::Success),
    ] {
        assert_eq!(
            one(GH, "check_run", &payload("completed", json!(conclusion))),
            expect(state),
            "{conclusion}"
        );
    }
    assert_eq!(
        one(GH, "check_run", &payload("in_progress", Value::Null)),
        expect(CheckState::Pending)
    );
}

#[test]
fn a_status_names_its_context_and_branches() {
    let payload = json!({
        "id": 1, "sha": SHA, "name": "acme/app", "target_url": "https://ci.example/b/1",
        "context": "ci/jenkins", "description": "Build failed", "state": "error",
        "branches": [{"name": "muster/fix-1", "commit": {"sha": SHA}}],
        "repository": repository()
    });
    assert_eq!(
        one(GH, "status", &payload),
        check(
            &[],
            Some("muster/fix-1"),
            SHA,
            "ci/jenkins",
            CheckState::Failure,
            Some("https://ci.example/b/1"),
            LogRef::None
        )
    );
}

#[test]
fn a_workflow_job_is_a_check_with_its_log() {
    let payload = json!({
        "action": "completed",
        "workflow_job": {
            "id": 99, "run_id": 9, "name": "clippy", "status": "completed", "conclusion": "failure",
            "head_sha": SHA, "head_branch": "muster/fix-1", "html_url": "https://github.com/acme/app/actions/runs/9/job/99"
        },
        "repository": repository()
    });
    assert_eq!(
        one(GH, "workflow_job", &payload),
        check(
            &[],
            Some("muster/fix-1"),
            SHA,
            "clippy",
            CheckState::Failure,
            Some("https://github.com/acme/app/actions/runs/9/job/99"),
            LogRef::GithubJob(99)
        )
    );
}

#[test]
fn reviews_and_comments_name_their_author() {
    let review = json!({
        "action": "submitted",
        "review": {"id": 80, "user": {"login": "octocat"}, "body": "Please rename x.", "state": "changes_requested"},
        "pull_request": {"number": 7, "head": {"ref": "muster/fix-1", "sha": SHA}},
        "repository": repository()
    });
    assert_eq!(
        one(GH, "pull_request_review", &review),
        ForgeEvent::Review {
            pull: 7,
            author: "octocat".into(),
            verdict: ReviewVerdict::ChangesRequested,
            body: "Please rename x.".into()
        }
    );
    let line = json!({
        "action": "created",
        "comment": {"id": 1, "path": "src/lib.rs", "line": 12, "original_line": 10, "body": "off by one", "user": {"login": "octocat"}},
        "pull_request": {"number": 7},
        "repository": repository()
    });
    assert_eq!(
        one(GH, "pull_request_review_comment", &line),
        ForgeEvent::Comment {
            pull: 7,
            author: "octocat".into(),
            body: "off by one".into(),
            path: Some("src/lib.rs".into()),
            line: Some(12)
        }
    );
    let on_pull = json!({
        "action": "created",
        "issue": {"number": 7, "pull_request": {"url": "https://api.github.com/repos/acme/app/pulls/7"}},
        "comment": {"id": 2, "body": "@muster please add a test", "user": {"login": "octocat"}},
        "repository": repository()
    });
    assert_eq!(
        one(GH, "issue_comment", &on_pull),
        ForgeEvent::Comment {
            pull: 7,
            author: "octocat".into(),
            body: "@muster please add a test".into(),
            path: None,
            line: None
        }
    );
    let on_issue = json!({
        "action": "created", "issue": {"number": 8},
        "comment": {"id": 3, "body": "hi", "user": {"login": "octocat"}}, "repository": repository()
    });
    assert!(matches!(
        one(GH, "issue_comment", &on_issue),
        ForgeEvent::Ignored { .. }
    ));
}

#[test]
fn pull_request_actions_close_or_refresh() {
    let payload = |action: &str, merged: bool| {
        json!({
            "action": action, "number": 7,
            "pull_request": {"number": 7, "state": "closed", "merged": merged, "head": {"ref": "muster/fix-1", "sha": SHA}},
            "repository": repository()
        })
    };
    assert_eq!(
        one(GH, "pull_request", &payload("closed", true)),
        ForgeEvent::Closed {
            pull: 7,
            merged: true
        }
    );
    assert_eq!(
        one(GH, "pull_request", &payload("closed", false)),
        ForgeEvent::Closed {
            pull: 7,
            merged: false
        }
    );
    for action in [
        "opened",
        "reopened",
        "synchronize",
        "edited",
        "ready_for_review",
    ] {
        assert_eq!(
            one(GH, "pull_request", &payload(action, false)),
            ForgeEvent::Updated {
                pull: 7,
                head_sha: Some(SHA.into())
            },
            "{action}"
        );
    }
    assert_eq!(
        one(GH, "pull_request", &payload("labeled", false)),
        ForgeEvent::Ignored {
            what: "pull_request labeled".into()
        }
    );
    assert_eq!(
        one(
            GH,
            "ping",
            &json!({"zen": "Design for failure.", "repository": repository()})
        ),
        ForgeEvent::Ignored {
            what: "ping".into()
        }
    );
}
