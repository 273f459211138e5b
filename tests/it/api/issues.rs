//! `/api/v1/issues`: create, list with filters, show with comments and activity, edit, move, comment.

use serde_json::{Value, json};

use super::{Env, api_cases, field, titles};

api_cases!(
    issue_lifecycle,
    issue_list_filters,
    move_reorders_columns,
    issue_list_is_grouped_by_column,
    comments,
);

fn kinds(detail: &Value) -> Vec<String> {
    field(&detail["activity"], "kind")
}

/// Create → list → show → edit → move → assign → comment, checking the JSON and the activity trail.
async fn issue_lifecycle(t: &Env) {
    let api = &t.member.api;
    let created = api
        .post(
            "/api/v1/issues",
            json!({"title": "  Fix the login  ", "body": "It *breaks*.", "priority": "high",
                   "labels": ["bug", "auth", "bug"]}),
        )
        .await
        .expect(201);
    assert_eq!(created["key"], "ALP-1");
    assert_eq!(created["title"], "Fix the login", "titles are trimmed");
    assert_eq!(created["body"], "It *breaks*.");
    assert_eq!(created["status"], "todo", "the default status");
    assert_eq!(created["priority"], "high");
    assert_eq!(
        created["labels"],
        json!(["auth", "bug"]),
        "labels are sorted and deduplicated"
    );
    assert_eq!(created["assignee"], Value::Null);
    assert!(uuid::Uuid::parse_str(created["id"].as_str().unwrap()).is_ok());
    assert!(created["created_at"].is_string() && created["updated_at"].is_string());

    let second = api
        .post(
            "/api/v1/issues",
            json!({"title": "Second", "status": "todo"}),
        )
        .await
        .expect(201);
    assert_eq!(
        (second["key"].as_str(), second["status"].as_str()),
        (Some("ALP-2"), Some("todo"))
    );
    assert_eq!(second["priority"], "none");

    let list = api.get("/api/v1/issues").await.expect(200);
    assert_eq!(field(&list["issues"], "key"), ["ALP-1", "ALP-2"]);
    assert_eq!(list["next_after"], Value::Null, "the only page");

    let shown = api.get("/api/v1/issues/alp-1").await.expect(200);
    assert_eq!(shown["key"], "ALP-1", "keys are case-insensitive");
    assert_eq!(shown["title"], "Fix the login");
    assert_eq!(kinds(&shown), ["created"]);
    assert_eq!(shown["activity"][0]["actor"]["type"], "user");
    assert_eq!(shown["activity"][0]["actor"]["name"], "member");
    assert_eq!(shown["activity"][0]["detail"]["status"], "todo");
    assert_eq!(shown["comments"], json!([]));
    assert_eq!(shown["comments_next_after"], Value::Null);

    // Edit: only the fields sent change.
    let edited = api
        .patch(
            "/api/v1/issues/ALP-1",
            json!({"title": "Fix the login form", "priority": "urgent"}),
        )
        .await
        .expect(200);
    assert_eq!(edited["title"], "Fix the login form");
    assert_eq!(edited["priority"], "urgent");
    assert_eq!(edited["body"], "It *breaks*.");
    assert_eq!(edited["labels"], json!(["auth", "bug"]));

    // A status move and an assignment appear in the activity, attributed to the caller.
    let moved = api
        .post(
            "/api/v1/issues/ALP-1/move",
            json!({"status": "in_progress"}),
        )
        .await
        .expect(200);
    assert_eq!(moved["status"], "in_progress");
    let assigned = t
        .owner
        .api
        .patch(
            "/api/v1/issues/ALP-1",
            json!({"assignee": "admin@alpha.test"}),
        )
        .await
        .expect(200);
    assert_eq!(assigned["assignee"]["type"], "user");
    assert_eq!(assigned["assignee"]["id"], t.admin.id.to_string());
    assert_eq!(assigned["assignee"]["name"], "admin");

    let detail = api.get("/api/v1/issues/ALP-1").await.expect(200);
    assert_eq!(
        kinds(&detail),
        ["created", "title", "priority", "status", "assignee"]
    );
    let activity = detail["activity"].as_array().unwrap();
    assert_eq!(
        activity[3]["detail"],
        json!({"from": "todo", "to": "in_progress"})
    );
    assert_eq!(activity[3]["actor"]["id"], t.member.id.to_string());
    assert_eq!(activity[4]["detail"]["from"], Value::Null);
    assert_eq!(activity[4]["detail"]["to"]["id"], t.admin.id.to_string());
    assert_eq!(activity[4]["actor"]["id"], t.owner.id.to_string());

    // A status change by PATCH is a move too; unassigning with "" is recorded.
    let done = api
        .patch(
            "/api/v1/issues/ALP-1",
            json!({"status": "done", "assignee": ""}),
        )
        .await
        .expect(200);
    assert_eq!(
        (done["status"].as_str(), &done["assignee"]),
        (Some("done"), &Value::Null)
    );
    let detail = api.get("/api/v1/issues/ALP-1").await.expect(200);
    assert_eq!(
        kinds(&detail),
        [
            "created", "title", "priority", "status", "assignee", "assignee", "status"
        ]
    );

    // Comments, oldest first, in both the comment list and the detail.
    let c = api
        .post(
            "/api/v1/issues/ALP-1/comments",
            json!({"body": "Fixed in **main**."}),
        )
        .await
        .expect(201);
    assert_eq!(c["body"], "Fixed in **main**.");
    assert_eq!(
        c["author"],
        json!({"type": "user", "id": t.member.id.to_string(), "name": "member"})
    );
    assert_eq!(c["run_id"], Value::Null);
    t.owner
        .api
        .post("/api/v1/issues/ALP-1/comments", json!({"body": "Thanks"}))
        .await
        .expect(201);
    let page = api.get("/api/v1/issues/ALP-1/comments").await.expect(200);
    assert_eq!(page["next_after"], Value::Null, "the only page");
    let list = &page["comments"];
    assert_eq!(field(list, "body"), ["Fixed in **main**.", "Thanks"]);
    assert_eq!(list[0]["id"], c["id"]);
    let detail = api.get("/api/v1/issues/ALP-1").await.expect(200);
    assert_eq!(&detail["comments"], list);
    assert_eq!(detail["comments_next_after"], Value::Null);
}

/// The list filters: status (comma-separated), assignee, label, priority and text; bad filter values
/// are 422 naming the accepted values.
async fn issue_list_filters(t: &Env) {
    let api = &t.owner.api;
    api.post("/api/v1/agents", json!({"name": "coder", "kind": "claude"}))
        .await
        .expect(201);
    for issue in [
        json!({"title": "Crash on save", "status": "todo", "priority": "urgent", "labels": ["bug"], "assignee": "coder"}),
        json!({"title": "Dark mode", "status": "backlog", "priority": "low", "labels": ["ui"], "body": "make it night"}),
        json!({"title": "Typo", "status": "done", "labels": ["bug", "ui"], "assignee": "Member"}),
    ] {
        api.post("/api/v1/issues", issue).await.expect(201);
    }
    let q = |query: &'static str| async move {
        titles(
            &api.get(&format!("/api/v1/issues?{query}"))
                .await
                .expect(200)["issues"],
        )
    };
    assert_eq!(q("").await.len(), 3);
    assert_eq!(q("status=todo,done").await, ["Crash on save", "Typo"]);
    assert_eq!(q("status=backlog").await, ["Dark mode"]);
    assert_eq!(q("status=").await.len(), 3, "an empty filter is no filter");
    assert_eq!(q("assignee=coder").await, ["Crash on save"]);
    assert_eq!(q("assignee=member%40alpha.test").await, ["Typo"]);
    assert_eq!(q("label=ui").await, ["Dark mode", "Typo"]);
    assert_eq!(q("priority=urgent").await, ["Crash on save"]);
    assert_eq!(q("q=night").await, ["Dark mode"], "text matches the body");
    assert_eq!(q("q=typo").await, ["Typo"]);
    assert_eq!(q("label=bug&status=done").await, ["Typo"]);

    let bad = api.get("/api/v1/issues?status=todo,nope").await;
    bad.error_contains(
        422,
        "status",
        "expected one of: backlog, todo, in_progress, in_review, done, blocked, cancelled",
    );
    api.get("/api/v1/issues?priority=asap")
        .await
        .error_contains(
            422,
            "priority",
            "expected one of: none, urgent, high, medium, low",
        );
    api.get("/api/v1/issues?assignee=nobody-here")
        .await
        .error_contains(422, "assignee", "no agent or member called \"nobody-here\"");
}

/// `move` places an issue at an index in a column (the end when absent or past it), positions stay in
/// board order, and an unknown status is 422 with nothing moved.
async fn move_reorders_columns(t: &Env) {
    let api = &t.owner.api;
    for title in ["one", "two", "three"] {
        api.post("/api/v1/issues", json!({"title": title, "status": "todo"}))
            .await
            .expect(201);
    }
    let todo =
        || async { titles(&api.get("/api/v1/issues?status=todo").await.expect(200)["issues"]) };
    assert_eq!(todo().await, ["one", "two", "three"]);
    let moved = api
        .post(
            "/api/v1/issues/ALP-3/move",
            json!({"status": "todo", "index": 0}),
        )
        .await
        .expect(200);
    assert_eq!(moved["status"], "todo");
    assert_eq!(todo().await, ["three", "one", "two"]);
    api.post(
        "/api/v1/issues/ALP-3/move",
        json!({"status": "todo", "index": 99}),
    )
    .await
    .expect(200);
    assert_eq!(todo().await, ["one", "two", "three"]);
    api.post("/api/v1/issues/ALP-1/move", json!({"status": "in_review"}))
        .await
        .expect(200);
    assert_eq!(todo().await, ["two", "three"]);
    let list = api.get("/api/v1/issues?status=todo").await.expect(200);
    let positions: Vec<i64> = list["issues"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["position"].as_i64().unwrap())
        .collect();
    assert!(
        positions.windows(2).all(|w| w[0] < w[1]),
        "positions follow board order: {positions:?}"
    );

    api.post("/api/v1/issues/ALP-2/move", json!({"status": "shipped"}))
        .await
        .error_contains(422, "status", "unknown status \"shipped\"; expected one of: backlog, todo, in_progress, in_review, done, blocked, cancelled");
    api.post("/api/v1/issues/ALP-2/move", json!({"index": 0}))
        .await
        .rejected(422, "missing field `status`");
    api.post(
        "/api/v1/issues/ALP-2/move",
        json!({"status": "done", "index": -1}),
    )
    .await
    .rejected(422, "index: -1 is out of range");
    assert_eq!(
        todo().await,
        ["two", "three"],
        "refused moves moved nothing"
    );
    let two = api.get("/api/v1/issues/ALP-2").await.expect(200);
    assert_eq!(kinds(&two), ["created"]);
}

/// Comments: empty or whitespace bodies are 422 and not stored; bodies are kept verbatim.
async fn comments(t: &Env) {
    let api = &t.member.api;
    api.post("/api/v1/issues", json!({"title": "Talk"}))
        .await
        .expect(201);
    for body in [json!({"body": ""}), json!({"body": "  \n "})] {
        api.post("/api/v1/issues/ALP-1/comments", body)
            .await
            .error_contains(422, "body", "must not be empty");
    }
    api.post(
        "/api/v1/issues/ALP-1/comments",
        json!({"body": "c".repeat(1024 * 1024 + 1)}),
    )
    .await
    .error_contains(422, "body", "must be at most 1048576 bytes");
    api.post("/api/v1/issues/ALP-1/comments", json!({}))
        .await
        .rejected(422, "missing field `body`");
    assert_eq!(
        api.get("/api/v1/issues/ALP-1/comments").await.expect(200),
        json!({"comments": [], "next_after": null})
    );
    let body = "  line one\n\n<script>alert(1)</script>  ";
    let c = api
        .post("/api/v1/issues/ALP-1/comments", json!({"body": body}))
        .await
        .expect(201);
    assert_eq!(c["body"], body);
    let list = &api.get("/api/v1/issues/ALP-1/comments").await.expect(200)["comments"];
    assert_eq!(field(list, "body"), [body]);
    assert_eq!(list[0]["author"]["name"], "member");
}

/// The list is in board order: by status column (backlog, todo, … cancelled), then position.
async fn issue_list_is_grouped_by_column(t: &Env) {
    let api = &t.owner.api;
    for (title, status) in [
        ("A", "todo"),
        ("B", "backlog"),
        ("C", "done"),
        ("D", "backlog"),
        ("E", "todo"),
    ] {
        api.post("/api/v1/issues", json!({"title": title, "status": status}))
            .await
            .expect(201);
    }
    assert_eq!(t.issue_titles().await, ["B", "D", "A", "E", "C"]);
}
