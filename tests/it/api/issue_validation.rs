//! `/api/v1/issues` input validation: 422 per field with precise messages, and nothing half-written.

use serde_json::{Value, json};

use super::{Env, api_cases, field};

api_cases!(issue_create_validation, issue_update_validation);

fn kinds(detail: &Value) -> Vec<String> {
    field(&detail["activity"], "kind")
}

/// Bad input on create is 422 per field with precise messages, and nothing is half-written.
async fn issue_create_validation(t: &Env) {
    let api = &t.member.api;
    let bad: [(Value, &str, &str); 9] = [
        (json!({}), "title", "must not be empty"),
        (json!({"title": ""}), "title", "must not be empty"),
        (json!({"title": "   "}), "title", "must not be empty"),
        (
            json!({"title": "x".repeat(501)}),
            "title",
            "must be at most 500 characters (got 501)",
        ),
        (
            json!({"title": "ok", "status": "doing"}),
            "status",
            "unknown status \"doing\"; expected one of: backlog, todo, in_progress, in_review, done, blocked, cancelled",
        ),
        (
            json!({"title": "ok", "priority": "p0"}),
            "priority",
            "unknown priority \"p0\"; expected one of: none, urgent, high, medium, low",
        ),
        (
            json!({"title": "ok", "assignee": "ghost"}),
            "assignee",
            "no agent or member called \"ghost\"",
        ),
        (
            json!({"title": "ok", "labels": (1..=21).map(|i| format!("l{i}")).collect::<Vec<_>>()}),
            "labels",
            "at most 20 labels per issue",
        ),
        (
            json!({"title": "ok", "body": "b".repeat(1024 * 1024 + 1)}),
            "body",
            "must be at most 1048576 bytes",
        ),
    ];
    for (input, field, message) in bad {
        let reply = api.post("/api/v1/issues", input.clone()).await;
        reply.error_contains(422, field, message);
    }
    // Every problem is reported at once.
    let reply = api
        .post(
            "/api/v1/issues",
            json!({"title": "", "status": "x", "priority": "y"}),
        )
        .await;
    for f in ["title", "status", "priority"] {
        reply.error(422, f);
    }
    assert!(t.issue_titles().await.is_empty(), "no issue was created");

    // An empty status is not a status (the document lists only real ones); leaving it out means todo.
    api.post("/api/v1/issues", json!({"title": "y", "status": ""}))
        .await
        .error(422, "status");

    // The next good issue still gets number 1: no number was used up.
    let ok = api
        .post("/api/v1/issues", json!({"title": "x".repeat(500)}))
        .await
        .expect(201);
    assert_eq!(
        (ok["key"].as_str(), ok["status"].as_str()),
        (Some("ALP-1"), Some("todo"))
    );
}

/// Bad input on edit is 422 and leaves every field as it was, even the valid ones sent alongside.
async fn issue_update_validation(t: &Env) {
    let api = &t.member.api;
    api.post(
        "/api/v1/issues",
        json!({"title": "Original", "priority": "low"}),
    )
    .await
    .expect(201);
    let bad: [(Value, &str, &str); 6] = [
        (
            json!({"title": "", "priority": "high"}),
            "title",
            "must not be empty",
        ),
        (
            json!({"title": "New", "priority": "p1"}),
            "priority",
            "expected one of: none, urgent, high, medium, low",
        ),
        (
            json!({"title": "New", "status": "wip"}),
            "status",
            "expected one of: backlog, todo",
        ),
        (
            json!({"title": "New", "status": ""}),
            "status",
            "unknown status \"\"",
        ),
        (
            json!({"title": "New", "assignee": "ghost"}),
            "assignee",
            "ghost",
        ),
        (
            json!({"title": "New", "labels": ["x".repeat(51)]}),
            "labels",
            "at most 50 characters",
        ),
    ];
    for (input, field, message) in bad {
        api.patch("/api/v1/issues/ALP-1", input)
            .await
            .error_contains(422, field, message);
    }
    let issue = api.get("/api/v1/issues/ALP-1").await.expect(200);
    assert_eq!(
        (
            issue["title"].as_str(),
            issue["priority"].as_str(),
            issue["status"].as_str()
        ),
        (Some("Original"), Some("low"), Some("todo"))
    );
    assert_eq!(kinds(&issue), ["created"], "no activity from refused edits");
    // An empty patch changes nothing and records nothing.
    let same = api
        .patch("/api/v1/issues/ALP-1", json!({}))
        .await
        .expect(200);
    assert_eq!(same["title"], "Original");
    let issue = api.get("/api/v1/issues/ALP-1").await.expect(200);
    assert_eq!(kinds(&issue), ["created"]);
}
