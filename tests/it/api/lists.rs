//! `POST /api/v1/issues/batch` and `/api/v1/views`: a batch changes every issue it names through the
//! single-edit path (an agent assigned gets a run), and each refusal (an unknown key, a bad value, a
//! parent cycle, too many keys, a run's token) names what is wrong and changes nothing. Saved views are
//! created, listed, refused twice and deleted.

use muster::domain::{IssueKey, RuntimeKind};
use muster_tests::seed;
use serde_json::{Value, json};

use super::deletes::run_token;
use super::{Env, api_cases};

api_cases!(
    a_batch_changes_every_issue_through_the_single_edit_path,
    a_refused_batch_names_the_problem_and_changes_nothing,
    a_run_token_may_not_batch,
    saved_views_are_created_listed_and_deleted,
);

async fn new_issues(t: &Env, n: usize) -> Vec<String> {
    let mut keys = Vec::new();
    for i in 0..n {
        let made = t
            .member
            .api
            .post(
                "/api/v1/issues",
                json!({ "title": format!("Issue {i}"), "status": "backlog", "labels": ["old"] }),
            )
            .await
            .expect(201);
        keys.push(made["key"].as_str().unwrap().to_owned());
    }
    keys
}

async fn show(t: &Env, key: &str) -> Value {
    t.member
        .api
        .get(&format!("/api/v1/issues/{key}"))
        .await
        .expect(200)
}

async fn a_batch_changes_every_issue_through_the_single_edit_path(t: &Env) {
    let keys = new_issues(t, 4).await;
    let api = &t.member.api;
    let done = api
        .post(
            "/api/v1/issues/batch",
            json!({ "keys": [&keys[1], &keys[2], &keys[3]],
                    "set": { "status": "todo", "priority": "high", "parent": &keys[0] },
                    "add_labels": ["triaged"], "remove_labels": ["old"] }),
        )
        .await
        .expect(200);
    let issues = done["issues"].as_array().unwrap();
    assert_eq!(issues.len(), 3);
    for (issue, key) in issues.iter().zip(&keys[1..]) {
        assert_eq!(issue["key"], key.as_str());
        assert_eq!(issue["status"], "todo");
        assert_eq!(issue["priority"], "high");
        assert_eq!(issue["labels"], json!(["triaged"]));
    }
    let plan = api
        .get(&format!("/api/v1/issues/{}/plan", keys[0]))
        .await
        .expect(200);
    assert_eq!(plan["progress"]["total"], 3);
    // The first issue was not named: untouched.
    let first = show(t, &keys[0]).await;
    assert_eq!(first["status"], "backlog");
    assert_eq!(first["labels"], json!(["old"]));

    // Assigning an agent to issues in todo queues a run for each, as a single edit would.
    let agent = seed::agent(&t.app.store, t.ws.id, "batcher", RuntimeKind::Custom).await;
    api.post(
        "/api/v1/issues/batch",
        json!({ "keys": [&keys[1], &keys[2]], "set": { "assignee": "batcher" } }),
    )
    .await
    .expect(200);
    for key in &keys[1..3] {
        let issue = t
            .app
            .store
            .get_issue(t.ws.id, &IssueKey::parse(key).unwrap())
            .await
            .unwrap();
        let runs = t.app.store.list_runs_for_issue(issue.id).await.unwrap();
        assert_eq!(runs.len(), 1, "{key}: {runs:?}");
        assert_eq!(runs[0].agent_id, agent.id);
    }
    // Nobody again, and the parent cleared.
    let cleared = api
        .post(
            "/api/v1/issues/batch",
            json!({ "keys": [&keys[3]], "set": { "assignee": "none", "parent": "none" } }),
        )
        .await
        .expect(200);
    assert_eq!(cleared["issues"][0]["assignee"], Value::Null);
    let plan = api
        .get(&format!("/api/v1/issues/{}/plan", keys[0]))
        .await
        .expect(200);
    assert_eq!(plan["progress"]["total"], 2);

    // Delete: the owner may; the issues are gone.
    let deleted = t
        .owner
        .api
        .post(
            "/api/v1/issues/batch",
            json!({ "keys": [&keys[3]], "delete": true }),
        )
        .await
        .expect(200);
    assert_eq!(deleted["deleted"], json!([&keys[3]]));
    api.get(&format!("/api/v1/issues/{}", keys[3]))
        .await
        .expect(404);
}

async fn a_refused_batch_names_the_problem_and_changes_nothing(t: &Env) {
    let keys = new_issues(t, 3).await;
    let api = &t.member.api;
    let unchanged = |v: &Value| {
        assert_eq!(v["status"], "backlog", "{v}");
        assert_eq!(v["priority"], "none", "{v}");
        assert_eq!(v["plan"]["parent"], Value::Null, "{v}");
    };
    // An unknown key among good ones: named, and the good ones are left as they were.
    api.post(
        "/api/v1/issues/batch",
        json!({ "keys": [&keys[0], "ALP-999", &keys[1]], "set": { "status": "done" } }),
    )
    .await
    .error_contains(422, "keys", "ALP-999 is not an issue of this workspace");
    api.post(
        "/api/v1/issues/batch",
        json!({ "keys": ["nonsense"], "set": { "status": "done" } }),
    )
    .await
    .error_contains(422, "keys", "\"nonsense\" is not an issue key");
    // A bad value.
    api.post(
        "/api/v1/issues/batch",
        json!({ "keys": [&keys[0]], "set": { "status": "finished", "priority": "high" } }),
    )
    .await
    .error_contains(422, "status", "unknown status \"finished\"");
    api.post(
        "/api/v1/issues/batch",
        json!({ "keys": [&keys[0]], "set": { "assignee": "nobody-by-that-name" } }),
    )
    .await
    .error(422, "assignee");
    // A parent that would make a cycle: keys[0] under keys[1], then keys[1] (with others) under keys[0].
    api.patch(
        &format!("/api/v1/issues/{}", keys[0]),
        json!({ "parent": &keys[1] }),
    )
    .await
    .expect(200);
    api.post(
        "/api/v1/issues/batch",
        json!({ "keys": [&keys[2], &keys[1]], "set": { "parent": &keys[0], "priority": "low" } }),
    )
    .await
    .error_contains(
        422,
        "parent",
        &format!("cycle: {} → {} → {}", keys[1], keys[0], keys[1]),
    );
    // An issue as its own parent.
    api.post(
        "/api/v1/issues/batch",
        json!({ "keys": [&keys[2]], "set": { "parent": &keys[2] } }),
    )
    .await
    .error_contains(422, "parent", "cycle");
    // Too many keys, none, or nothing to do; an unknown field.
    let many: Vec<String> = (1..=501).map(|n| format!("ALP-{n}")).collect();
    api.post(
        "/api/v1/issues/batch",
        json!({ "keys": many, "set": { "status": "done" } }),
    )
    .await
    .error_contains(422, "keys", "at most 500 issues per batch (got 501)");
    api.post(
        "/api/v1/issues/batch",
        json!({ "keys": [], "set": { "status": "done" } }),
    )
    .await
    .error(422, "keys");
    api.post("/api/v1/issues/batch", json!({ "keys": [&keys[2]] }))
        .await
        .error_contains(422, "set", "nothing to change");
    api.post(
        "/api/v1/issues/batch",
        json!({ "keys": [&keys[2]], "delete": true, "set": { "status": "done" } }),
    )
    .await
    .error(422, "delete");
    // A member may not delete what someone else created: refused, nothing deleted.
    let owners = t
        .owner
        .api
        .post("/api/v1/issues", json!({ "title": "The owner's" }))
        .await
        .expect(201);
    let owners = owners["key"].as_str().unwrap();
    api.post(
        "/api/v1/issues/batch",
        json!({ "keys": [&keys[2], owners], "delete": true }),
    )
    .await
    .error_contains(403, "keys", "nothing was deleted");
    show(t, &keys[2]).await;
    // Through all of it, nothing changed (keys[0] has only the parent set by hand above).
    for key in &keys[1..] {
        unchanged(&show(t, key).await);
    }
    let first = show(t, &keys[0]).await;
    assert_eq!(
        (&first["status"], &first["priority"]),
        (&json!("backlog"), &json!("none"))
    );
}

/// The attack: an agent with its run's token tries to move every issue of the workspace at once (or to
/// delete them). The batch route is not a run token's: 403, and nothing moves.
async fn a_run_token_may_not_batch(t: &Env) {
    let keys = new_issues(t, 2).await;
    let agent = t.bearer(&run_token(t, &keys[0], "rogue").await);
    agent
        .post(
            "/api/v1/issues/batch",
            json!({ "keys": [&keys[0], &keys[1]], "set": { "status": "done" } }),
        )
        .await
        .error(403, "token");
    agent
        .post(
            "/api/v1/issues/batch",
            json!({ "keys": [&keys[0]], "set": { "status": "in_review" } }),
        )
        .await
        .error(403, "token");
    agent
        .post(
            "/api/v1/issues/batch",
            json!({ "keys": [&keys[1]], "delete": true }),
        )
        .await
        .error(403, "token");
    agent.get("/api/v1/views").await.error(403, "token");
    agent
        .post("/api/v1/views", json!({ "name": "mine", "query": "" }))
        .await
        .error(403, "token");
    for key in &keys {
        assert_eq!(show(t, key).await["status"], "backlog");
    }
}

async fn saved_views_are_created_listed_and_deleted(t: &Env) {
    let api = &t.member.api;
    let made = api
        .post(
            "/api/v1/views",
            json!({ "name": "Urgent by assignee", "query": "?group=assignee&priority=urgent&after=x" }),
        )
        .await
        .expect(201);
    // Kept in its normal form, without `after`.
    assert_eq!(made["query"], "priority=urgent&group=assignee");
    assert_eq!(
        made["url"],
        format!("/w/{}/list?priority=urgent&group=assignee", t.ws.slug)
    );
    api.post(
        "/api/v1/views",
        json!({ "name": "Urgent by assignee", "query": "sort=title" }),
    )
    .await
    .error_contains(409, "name", "exists already");
    api.post(
        "/api/v1/views",
        json!({ "name": "Odd", "query": "sort=size&group=planet" }),
    )
    .await
    .error_contains(422, "query", "unknown sort \"size\"");
    api.post("/api/v1/views", json!({ "name": " ", "query": "" }))
        .await
        .error(422, "name");
    t.owner
        .api
        .post(
            "/api/v1/views",
            json!({ "name": "A to Z", "query": "sort=title&dir=asc" }),
        )
        .await
        .expect(201);
    let listed = api.get("/api/v1/views").await.expect(200);
    let names: Vec<&str> = listed["views"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["A to Z", "Urgent by assignee"]);
    // A member may not delete the owner's view; their own, yes; then it is gone.
    api.delete("/api/v1/views/A%20to%20Z")
        .await
        .error(403, "name");
    api.delete("/api/v1/views/Urgent%20by%20assignee")
        .await
        .expect(204);
    api.delete("/api/v1/views/Urgent%20by%20assignee")
        .await
        .expect(404);
    let listed = api.get("/api/v1/views").await.expect(200);
    assert_eq!(listed["views"].as_array().unwrap().len(), 1);
}
