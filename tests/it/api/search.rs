//! `GET /api/v1/issues/search`: hits best first with where they matched and a snippet, 422 with a precise
//! message for a query it cannot search, and a run's token searching its own workspace only.

use serde_json::{Value, json};

use super::{Env, api_cases, field};

api_cases!(issue_search, run_tokens_search_their_own_workspace);

/// The keys of a search answer, in order.
fn hit_keys(found: &Value) -> Vec<String> {
    field(&found["hits"], "key")
}

async fn issue_search(t: &Env) {
    let api = &t.member.api;
    for (title, body) in [
        ("Parser crash on empty input", ""),
        ("Flaky build", "the parser may crash when idle"),
        ("Release notes", ""),
    ] {
        api.post("/api/v1/issues", json!({"title": title, "body": body}))
            .await
            .expect(201);
    }
    api.post(
        "/api/v1/issues/ALP-3/comments",
        json!({"body": "Saw a parser crash here too"}),
    )
    .await
    .expect(201);
    let found = api
        .get("/api/v1/issues/search?q=pars%20CRASH")
        .await
        .expect(200);
    assert_eq!(hit_keys(&found), ["ALP-1", "ALP-2", "ALP-3"]);
    assert_eq!(
        field(&found["hits"], "matched_in"),
        ["title", "body", "comment"]
    );
    let first = &found["hits"][0];
    assert_eq!(first["title"], "Parser crash on empty input");
    assert_eq!(first["status"], "todo");
    assert_eq!(first["score"], 3);
    assert_eq!(
        found["hits"][1]["snippet"],
        "the parser may crash when idle"
    );
    assert_eq!(found["hits"][2]["snippet"], "Saw a parser crash here too");
    // A key first; the limit and the statuses narrow.
    let found = api.get("/api/v1/issues/search?q=alp-2").await.expect(200);
    assert_eq!(hit_keys(&found)[0], "ALP-2");
    assert_eq!(found["hits"][0]["matched_in"], "key");
    let found = api
        .get("/api/v1/issues/search?q=parser&limit=1")
        .await
        .expect(200);
    assert_eq!(hit_keys(&found), ["ALP-1"]);
    let found = api
        .get("/api/v1/issues/search?q=parser&status=done,in_review")
        .await
        .expect(200);
    assert_eq!(hit_keys(&found), Vec::<String>::new());
    // Hostile text is words, never syntax.
    let found = api
        .get("/api/v1/issues/search?q=%22parser%22%20AND%20%27%3B%20drop%20table%20issue%3B--")
        .await
        .expect(200);
    assert_eq!(hit_keys(&found), Vec::<String>::new());
    // What cannot be searched is refused, with the parameter named.
    for (query, param, message) in [
        ("", "q", "must not be empty"),
        ("q=%20%20", "q", "must not be empty"),
        (
            "q=%22*-%22",
            "q",
            "must contain a letter or a digit to search for",
        ),
        ("q=x&limit=0", "limit", "must be between 1 and 100 (got 0)"),
        (
            "q=x&limit=many",
            "limit",
            "must be a whole number from 1 to 100, got \"many\"",
        ),
        ("q=x&status=later", "status", "later"),
    ] {
        let reply = api.get(&format!("/api/v1/issues/search?{query}")).await;
        reply.error_contains(422, param, message);
    }
    let long = "a".repeat(201);
    api.get(&format!("/api/v1/issues/search?q={long}"))
        .await
        .error_contains(422, "q", "must be at most 200 characters (got 201)");
}

/// A run's token may search (agents search before they create an issue), in its own workspace only.
async fn run_tokens_search_their_own_workspace(t: &Env) {
    t.owner
        .api
        .post("/api/v1/issues", json!({"title": "Our plan"}))
        .await
        .expect(201);
    let (_beta, beta_owner) = t.other_workspace().await;
    let found = beta_owner
        .api
        .get("/api/v1/issues/search?q=secret%20plan")
        .await
        .expect(200);
    assert_eq!(hit_keys(&found), ["BET-1"]);
    let token = super::deletes::run_token(t, "ALP-1", "coder").await;
    let agent = t.bearer(&token);
    let found = agent.get("/api/v1/issues/search?q=plan").await.expect(200);
    assert_eq!(hit_keys(&found), ["ALP-1"], "never BET-1");
    let found = agent
        .get("/api/v1/issues/search?q=secret")
        .await
        .expect(200);
    assert_eq!(hit_keys(&found), Vec::<String>::new());
    // Naming the other workspace is refused, as for every route.
    let resp = t
        .app
        .client
        .get(t.app.url("/api/v1/issues/search?q=secret"))
        .bearer_auth(&token)
        .header("x-muster-workspace", "beta")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 403);
    let body: Value = resp.json().await.unwrap();
    assert!(
        body["errors"]["token"][0]
            .as_str()
            .is_some_and(|m| m.contains("cannot act in another one")),
        "{body}"
    );
}
