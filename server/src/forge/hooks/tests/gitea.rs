use serde_json::json;

use super::*;

const GT: ForgeKind = ForgeKind::Gitea;
const SHA: &str = "e2ea8e8b1c5bc0d4f1fd4b2e7b1e3d3a0f1c2b3a";

fn pull_request(merged: bool) -> Value {
    json!({"id": 30, "number": 5, "title": "WIP: fix", "state": if merged { "closed" } else { "open" },
        "merged": merged, "head": {"ref": "muster/fix-1", "sha": SHA}, "base": {"ref": "main"}})
}

#[test]
fn a_status_and_a_workflow_job_are_checks() {
    let status = json!({
        "id": 3, "sha": SHA, "context": "ci/woodpecker", "state": "failure",
        "target_url": "https://ci.example/acme/app/12", "description": "failed",
        "branches": [{"name": "muster/fix-1"}], "repository": repository(), "sender": {"login": "ci"}
    });
    assert_eq!(
        one(GT, "status", &status),
        check(
            &[],
            Some("muster/fix-1"),
            SHA,
            "ci/woodpecker",
            CheckState::Failure,
            Some("https://ci.example/acme/app/12"),
            LogRef::None
        )
    );
    let job = json!({
        "action": "completed",
        "workflow_job": {"id": 77, "run_id": 12, "name": "test", "status": "completed", "conclusion": "failure",
            "head_sha": SHA, "head_branch": "muster/fix-1", "html_url": "https://gitea.example/acme/app/actions/runs/12/jobs/0"},
        "repository": repository()
    });
    assert_eq!(
        one(GT, "workflow_job", &job),
        check(
            &[],
            Some("muster/fix-1"),
            SHA,
            "test",
            CheckState::Failure,
            Some("https://gitea.example/acme/app/actions/runs/12/jobs/0"),
            LogRef::GiteaJob(77)
        )
    );
}

#[test]
fn a_closed_pull_request_says_whether_it_was_merged() {
    let payload = |action: &str, merged| {
        json!({
            "action": action, "number": 5, "pull_request": pull_request(merged), "repository": repository(),
            "sender": {"login": "alice"}
        })
    };
    assert_eq!(
        one(GT, "pull_request", &payload("closed", true)),
        ForgeEvent::Closed {
            pull: 5,
            merged: true
        }
    );
    assert_eq!(
        one(GT, "pull_request", &payload("closed", false)),
        ForgeEvent::Closed {
            pull: 5,
            merged: false
        }
    );
    assert_eq!(
        one(GT, "pull_request", &payload("synchronized", false)),
        ForgeEvent::Updated {
            pull: 5,
            head_sha: Some(SHA.into())
        }
    );
}

#[test]
fn reviews_take_their_verdict_from_the_event() {
    let payload = |kind: &str, content: &str| {
        json!({
            "action": "reviewed", "number": 5, "pull_request": pull_request(false),
            "repository": repository(), "sender": {"login": "carol"},
            "review": {"type": kind, "content": content}
        })
    };
    let cases = [
        (
            "pull_request_approved",
            "pull_request_review_approved",
            ReviewVerdict::Approved,
        ),
        (
            "pull_request_rejected",
            "pull_request_review_rejected",
            ReviewVerdict::ChangesRequested,
        ),
        (
            "pull_request_comment",
            "pull_request_review_comment",
            ReviewVerdict::Commented,
        ),
    ];
    for (event, kind, verdict) in cases {
        let expected = ForgeEvent::Review {
            pull: 5,
            author: "carol".into(),
            verdict,
            body: "Needs tests.".into(),
        };
        assert_eq!(
            one(GT, event, &payload(kind, "Needs tests.")),
            expected,
            "{event}"
        );
        // The long form in the event header (X-Gitea-Event-Type) reads the same.
        assert_eq!(
            one(GT, kind, &payload(kind, "Needs tests.")),
            expected,
            "{kind}"
        );
    }
}

#[test]
fn comments_count_only_on_pull_requests() {
    let payload = |is_pull: bool| {
        json!({
            "action": "created", "issue": {"id": 9, "number": 5, "title": "fix"},
            "comment": {"id": 40, "body": "@muster also update the docs", "user": {"login": "dave"}},
            "repository": repository(), "sender": {"login": "dave"}, "is_pull": is_pull
        })
    };
    assert_eq!(
        one(GT, "issue_comment", &payload(true)),
        ForgeEvent::Comment {
            pull: 5,
            author: "dave".into(),
            body: "@muster also update the docs".into(),
            path: None,
            line: None
        }
    );
    assert!(matches!(
        one(GT, "issue_comment", &payload(false)),
        ForgeEvent::Ignored { .. }
    ));
}
