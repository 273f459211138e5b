//! `/api/v1/agents`: profiles with defaults, validation per field, unique names, write-only secrets,
//! and who may delete.

use muster::domain::{AgentName, IssueTitle, NewIssue, NewRun};
use serde_json::{Value, json};

use super::{Env, api_cases, field};

api_cases!(
    agent_lifecycle,
    agent_name_conflicts,
    agent_field_validation,
    every_agent_field_error_in_one_answer,
    agent_delete_rules,
);

/// A 422 lists every invalid field, a bad name or kind included: no fixing one mistake per round trip.
async fn every_agent_field_error_in_one_answer(t: &Env) {
    let api = &t.admin.api;
    let reply = api
        .post(
            "/api/v1/agents",
            json!({"name": "bad name", "kind": "gpt", "color": "red", "max_concurrent_runs": 99,
                   "stall_timeout_secs": 5, "base_url": "ftp://models"}),
        )
        .await;
    let fields: Vec<&String> = reply.body["errors"].as_object().unwrap().keys().collect();
    assert_eq!(
        fields,
        [
            "base_url",
            "color",
            "kind",
            "max_concurrent_runs",
            "name",
            "stall_timeout_secs"
        ],
        "{}",
        reply.body
    );
    reply.error_contains(422, "name", "may contain only letters");
    reply.error_contains(422, "kind", "unknown kind \"gpt\"");
    reply.error_contains(422, "max_concurrent_runs", "must be between 1 and 32");
    // A missing name and kind are two more entries of the same answer.
    let reply = api.post("/api/v1/agents", json!({"max_retries": 11})).await;
    for f in ["name", "kind", "max_retries"] {
        reply.error(422, f);
    }
    assert_eq!(api.get("/api/v1/agents").await.expect(200), json!([]));
    // The same on edit.
    api.post("/api/v1/agents", json!({"name": "a", "kind": "claude"}))
        .await
        .expect(201);
    let reply = api
        .patch(
            "/api/v1/agents/a",
            json!({"name": "no way", "kind": "nope", "max_retries": 99}),
        )
        .await;
    for f in ["name", "kind", "max_retries"] {
        reply.error(422, f);
    }
}

/// Create with defaults (an admin) → list → show → edit (a member, the fields that are theirs; an admin
/// clears a budget and renames) → delete.
async fn agent_lifecycle(t: &Env) {
    let api = &t.member.api;
    let coder = t
        .admin
        .api
        .post("/api/v1/agents", json!({"name": "coder", "kind": "claude"}))
        .await
        .expect(201);
    assert!(uuid::Uuid::parse_str(coder["id"].as_str().unwrap()).is_ok());
    let defaults = json!({
        "name": "coder", "color": "#6d5dfc", "kind": "claude", "model": null, "instructions": "",
        "env": [], "extra_args": [], "permission_mode": "workspace_write", "max_concurrent_runs": 1,
        "stall_timeout_secs": 600, "max_retries": 2, "budget_usd": null, "budget_tokens": null,
        "command": null, "base_url": null,
    });
    for (k, v) in defaults.as_object().unwrap() {
        assert_eq!(&coder[k], v, "default {k}");
    }
    let full = t
        .admin
        .api
        .post(
            "/api/v1/agents",
            json!({"name": "reviewer.2", "color": " #A1B2C3 ", "kind": "custom", "model": " gpt-x ",
                   "instructions": "Review carefully.", "extra_args": ["--fast", " ", " -v "],
                   "permission_mode": "read_only", "max_concurrent_runs": 3, "stall_timeout_secs": 60,
                   "max_retries": 0, "budget_usd": 2.5, "budget_tokens": 100000,
                   "command": "my-agent --json", "base_url": "http://127.0.0.1:8080",
                   "env": [{"key": "MODE", "value": "strict"}]}),
        )
        .await
        .expect(201);
    let expected = json!({
        "name": "reviewer.2", "color": "#a1b2c3", "kind": "custom", "model": "gpt-x",
        "instructions": "Review carefully.", "extra_args": ["--fast", "-v"], "permission_mode": "read_only",
        "max_concurrent_runs": 3, "stall_timeout_secs": 60, "max_retries": 0, "budget_usd": 2.5,
        "budget_tokens": 100000, "command": "my-agent --json", "base_url": "http://127.0.0.1:8080",
        "env": [{"key": "MODE", "value": "strict", "secret": false}],
    });
    for (k, v) in expected.as_object().unwrap() {
        assert_eq!(&full[k], v, "field {k}");
    }

    let list = api.get("/api/v1/agents").await.expect(200);
    assert_eq!(field(&list, "name"), ["coder", "reviewer.2"]);
    let shown = api.get("/api/v1/agents/reviewer.2").await.expect(200);
    assert_eq!(shown, full);
    api.get("/api/v1/agents/nobody")
        .await
        .error(404, "resource");
    api.get("/api/v1/agents/not%20a%20name")
        .await
        .error(404, "resource");

    // Edit: absent fields stay; 0 clears a budget (an admin's: a member may only lower one).
    let edited = t
        .admin
        .api
        .patch(
            "/api/v1/agents/reviewer.2",
            json!({"max_retries": 5, "budget_usd": 0, "instructions": ""}),
        )
        .await
        .expect(200);
    assert_eq!(edited["max_retries"], 5);
    assert_eq!(edited["budget_usd"], Value::Null);
    assert_eq!(edited["instructions"], "");
    assert_eq!(edited["budget_tokens"], 100000);
    assert_eq!(edited["command"], "my-agent --json");
    assert_eq!(edited["id"], full["id"]);
    api.patch("/api/v1/agents/nobody", json!({"max_retries": 1}))
        .await
        .error(404, "resource");

    // Rename (an admin's): the new name works, the old one is gone, assignments follow the agent.
    api.post(
        "/api/v1/issues",
        json!({"title": "Review me", "assignee": "coder"}),
    )
    .await
    .expect(201);
    let renamed = t
        .admin
        .api
        .patch("/api/v1/agents/coder", json!({"name": "writer"}))
        .await
        .expect(200);
    assert_eq!(
        (renamed["name"].as_str(), &renamed["id"]),
        (Some("writer"), &coder["id"])
    );
    api.get("/api/v1/agents/coder").await.error(404, "resource");
    let issue = api.get("/api/v1/issues/ALP-1").await.expect(200);
    assert_eq!(
        issue["assignee"],
        json!({"type": "agent", "id": coder["id"], "name": "writer"})
    );

    // Delete (an admin): 204, then 404.
    t.admin
        .api
        .delete("/api/v1/agents/reviewer.2")
        .await
        .expect(204);
    api.get("/api/v1/agents/reviewer.2")
        .await
        .error(404, "resource");
    t.admin
        .api
        .delete("/api/v1/agents/reviewer.2")
        .await
        .error(404, "resource");
    assert_eq!(
        field(&api.get("/api/v1/agents").await.expect(200), "name"),
        ["writer"]
    );
}

/// A duplicate name is 409 on `name` (create and rename); the refused rename changes nothing.
async fn agent_name_conflicts(t: &Env) {
    let api = &t.admin.api;
    for name in ["coder", "reviewer"] {
        api.post("/api/v1/agents", json!({"name": name, "kind": "claude"}))
            .await
            .expect(201);
    }
    api.post("/api/v1/agents", json!({"name": "coder", "kind": "codex"}))
        .await
        .error_contains(409, "name", "another agent already has this name");
    let list = api.get("/api/v1/agents").await.expect(200);
    assert_eq!(field(&list, "name"), ["coder", "reviewer"]);
    assert_eq!(list[0]["kind"], "claude");

    api.patch(
        "/api/v1/agents/reviewer",
        json!({"name": "coder", "max_retries": 7}),
    )
    .await
    .error_contains(409, "name", "another agent already has this name");
    let old = api.get("/api/v1/agents/reviewer").await.expect(200);
    assert_eq!(old["max_retries"], 2, "the refused rename changed nothing");
    assert_eq!(
        api.get("/api/v1/agents/coder").await.expect(200)["kind"],
        "claude"
    );
    // Renaming to its own name is not a conflict; another workspace may reuse a name.
    api.patch("/api/v1/agents/reviewer", json!({"name": "reviewer"}))
        .await
        .expect(200);
    let (_, beta) = t.other_workspace().await;
    beta.api
        .post("/api/v1/agents", json!({"name": "coder", "kind": "llama"}))
        .await
        .expect(201);
    assert_eq!(
        api.get("/api/v1/agents/coder").await.expect(200)["kind"],
        "claude"
    );
}

/// Each bad field is a 422 on that field, with every problem in one reply; nothing is created.
async fn agent_field_validation(t: &Env) {
    let api = &t.admin.api;
    let ok = json!({"name": "a", "kind": "claude"});
    let with = |k: &str, v: Value| {
        let mut o = ok.clone();
        o[k] = v;
        o
    };
    let cases: Vec<(Value, &str, &str)> = vec![
        (json!({"kind": "claude"}), "name", "must not be empty"),
        (with("name", json!("")), "name", "must not be empty"),
        (
            with("name", json!("bad name")),
            "name",
            "may contain only letters, digits, '-', '_' and '.'",
        ),
        (
            with("name", json!("n".repeat(65))),
            "name",
            "must be at most 64 characters",
        ),
        (
            json!({"name": "a"}),
            "kind",
            "choose claude, codex, opencode, llama or custom",
        ),
        (
            with("kind", json!("gpt")),
            "kind",
            "unknown kind \"gpt\"; expected one of: claude, codex, opencode, llama, custom",
        ),
        (
            with("color", json!("red")),
            "color",
            "must be a colour like #6d5dfc",
        ),
        (
            with("permission_mode", json!("yolo")),
            "permission_mode",
            "expected one of: read_only, workspace_write, bypass",
        ),
        (
            with("max_concurrent_runs", json!(0)),
            "max_concurrent_runs",
            "must be between 1 and 32",
        ),
        (
            with("max_concurrent_runs", json!(33)),
            "max_concurrent_runs",
            "must be between 1 and 32",
        ),
        (
            with("stall_timeout_secs", json!(9)),
            "stall_timeout_secs",
            "must be between 10 and 86400 seconds",
        ),
        (
            with("max_retries", json!(11)),
            "max_retries",
            "must be between 0 and 10",
        ),
        (
            with("budget_usd", json!(-1.0)),
            "budget_usd",
            "must be a positive amount",
        ),
        (
            with("budget_tokens", json!(-5)),
            "budget_tokens",
            "must be a positive number",
        ),
        (
            with("kind", json!("custom")),
            "command",
            "a custom agent needs a command",
        ),
        (
            with("base_url", json!("ftp://models")),
            "base_url",
            "must start with http:// or https://",
        ),
        (
            with("env", json!([{"key": "1BAD", "value": "x"}])),
            "env",
            "\"1BAD\" is not a valid variable name",
        ),
        (
            with(
                "env",
                json!([{"key": "A", "value": "1"}, {"key": "A", "value": "2"}]),
            ),
            "env",
            "A is set twice",
        ),
    ];
    for (input, field, message) in cases {
        api.post("/api/v1/agents", input.clone())
            .await
            .error_contains(422, field, message);
    }
    api.post("/api/v1/agents", with("max_retries", json!("three")))
        .await
        .rejected(
            422,
            "max_retries: invalid type: string \"three\", expected a JSON number",
        );
    let reply = api
        .post(
            "/api/v1/agents",
            json!({"name": "a", "kind": "claude", "color": "x", "max_retries": 99, "base_url": "x"}),
        )
        .await;
    for f in ["color", "max_retries", "base_url"] {
        reply.error(422, f);
    }
    assert_eq!(api.get("/api/v1/agents").await.expect(200), json!([]));

    // The same rules on edit; a refused edit changes nothing.
    api.post("/api/v1/agents", ok.clone()).await.expect(201);
    api.patch(
        "/api/v1/agents/a",
        json!({"max_retries": 4, "color": "blue"}),
    )
    .await
    .error_contains(422, "color", "must be a colour");
    api.patch("/api/v1/agents/a", json!({"name": "no way"}))
        .await
        .error(422, "name");
    api.patch("/api/v1/agents/a", json!({"kind": "custom"}))
        .await
        .error(422, "command");
    let a = api.get("/api/v1/agents/a").await.expect(200);
    assert_eq!(
        (
            a["max_retries"].as_i64(),
            a["color"].as_str(),
            a["kind"].as_str()
        ),
        (Some(2), Some("#6d5dfc"), Some("claude"))
    );
}

/// Only owners and admins delete agents (403 for a member); an agent with runs is kept (409 on `name`).
async fn agent_delete_rules(t: &Env) {
    for name in ["coder", "busy"] {
        t.owner
            .api
            .post("/api/v1/agents", json!({"name": name, "kind": "claude"}))
            .await
            .expect(201);
    }
    t.member
        .api
        .delete("/api/v1/agents/coder")
        .await
        .error_contains(403, "auth", "not allowed");
    t.member
        .api
        .delete("/api/v1/agents/nobody")
        .await
        .error(403, "auth");
    t.member.api.get("/api/v1/agents/coder").await.expect(200);

    let store = &t.app.store;
    let busy = store
        .get_agent_by_name(t.ws.id, &AgentName::parse("busy").unwrap())
        .await
        .unwrap();
    let issue = store
        .create_issue(t.ws.id, &NewIssue::new(IssueTitle::parse("Work").unwrap()))
        .await
        .unwrap();
    store
        .create_run(&NewRun::assignment(t.ws.id, issue.id, busy.id))
        .await
        .unwrap();
    t.owner
        .api
        .delete("/api/v1/agents/busy")
        .await
        .error_contains(409, "name", "this agent has runs");
    t.owner.api.get("/api/v1/agents/busy").await.expect(200);

    t.owner.api.delete("/api/v1/agents/coder").await.expect(204);
    t.owner
        .api
        .delete("/api/v1/agents/coder")
        .await
        .error(404, "resource");
    assert_eq!(
        field(&t.owner.api.get("/api/v1/agents").await.expect(200), "name"),
        ["busy"]
    );
}
