//! `/api/v1/usage`, `/api/v1/usage/caps`, `/api/v1/agents/{name}/cap` and `/api/v1/rates`: who may read
//! and change what, and precise refusals. Exact totals over real runs are in `tests/it/usage.rs`.

use reqwest::Method;
use serde_json::{Value, json};

use super::{Env, api_cases};

api_cases!(usage_report_reading, caps_setting, rate_table_setting);

/// Anyone in the workspace reads usage; an empty period has zero totals and every day; bad periods
/// and groupings name what is accepted.
async fn usage_report_reading(t: &Env) {
    let week = t.member.api.get("/api/v1/usage").await.expect(200);
    assert_eq!(week["by"], "agent");
    assert_eq!(week["total"]["runs"], 0);
    assert_eq!(week["total"]["cost"], "$0.0000");
    assert_eq!(week["days"].as_array().unwrap().len(), 7, "{week}");
    assert_eq!(week["groups"], json!([]));
    let today = t
        .member
        .api
        .get("/api/v1/usage?since=today&by=model")
        .await
        .expect(200);
    assert_eq!(today["days"].as_array().unwrap().len(), 1, "{today}");
    for (query, status, field, says) in [
        ("since=fortnight", 422, "since", "is not a period"),
        ("by=colour", 422, "by", "colour"),
        ("since=7d&until=2001-01-01", 422, "until", "must be after"),
        ("agent=nobody", 404, "agent", "is not an agent"),
    ] {
        let reply = t.owner.api.get(&format!("/api/v1/usage?{query}")).await;
        reply.error_contains(status, field, says);
    }
}

/// Owners and admins set caps; members read them; a cap must be a positive amount.
async fn caps_setting(t: &Env) {
    t.owner
        .api
        .post("/api/v1/agents", json!({"name": "coder", "kind": "claude"}))
        .await
        .expect(201);
    let caps = t.member.api.get("/api/v1/usage/caps").await.expect(200);
    assert_eq!(caps["workspace"]["usd"], Value::Null);
    assert_eq!(caps["agents"][0]["agent"], "coder");
    assert_eq!(caps["agents"][0]["used"], 0.0);
    let path = "/api/v1/usage/caps";
    let body = json!({"usd": 50, "tokens": 2_000_000});
    t.member
        .api
        .json(Method::PUT, path, &body)
        .await
        .expect(403);
    let set = t.admin.api.json(Method::PUT, path, &body).await.expect(200);
    assert_eq!(set["workspace"]["usd"], 50.0);
    assert_eq!(set["workspace"]["tokens"], 2_000_000);
    let agent = t
        .owner
        .api
        .json(
            Method::PUT,
            "/api/v1/agents/coder/cap",
            &json!({"usd": 5.5}),
        )
        .await
        .expect(200);
    assert_eq!(agent["agents"][0]["usd"], 5.5);
    assert_eq!(agent["agents"][0]["tokens"], Value::Null);
    t.owner
        .api
        .json(
            Method::PUT,
            "/api/v1/agents/coder/cap",
            &json!({"tokens": -3}),
        )
        .await
        .error_contains(422, "tokens", "is not a whole number of tokens");
    // JSON Schema's `integer` includes integral floats, as the document promises.
    let whole = t
        .owner
        .api
        .json(
            Method::PUT,
            "/api/v1/agents/coder/cap",
            &json!({"tokens": 39_916_801.0}),
        )
        .await
        .expect(200);
    assert_eq!(whole["agents"][0]["tokens"], 39_916_801);
    t.owner
        .api
        .json(Method::PUT, "/api/v1/agents/nobody/cap", &json!({"usd": 1}))
        .await
        .expect(404);
    t.owner
        .api
        .json(Method::PUT, path, &json!({"dollars": 1}))
        .await
        .expect(422);
    // serde would read an array as the fields in order; the body must be an object.
    t.owner
        .api
        .json(Method::PUT, path, &json!([5, null]))
        .await
        .error_contains(422, "body", "the body must be a JSON object, not an array");
    // A cap of 0 is reached before anything is spent: used in full, a finite figure.
    let zero = t
        .owner
        .api
        .json(Method::PUT, path, &json!({"tokens": 0}))
        .await
        .expect(200);
    assert_eq!(zero["workspace"]["used"], 1.0);
    // Cleared.
    let cleared = t
        .owner
        .api
        .json(Method::PUT, path, &json!({}))
        .await
        .expect(200);
    assert_eq!(cleared["workspace"]["usd"], Value::Null);
}

/// The built-in table until the workspace has its own; owners and admins replace it or go back.
async fn rate_table_setting(t: &Env) {
    let built_in = t.member.api.get("/api/v1/rates").await.expect(200);
    assert_eq!(built_in["custom"], false);
    assert_eq!(built_in["rates"]["gpt-5"]["output"], 10.0);
    let body = json!({"rates": {"house-llm": {"input": 2.0, "output": 6.0, "cached": 0.5}}});
    t.member
        .api
        .json(Method::PUT, "/api/v1/rates", &body)
        .await
        .expect(403);
    let own = t
        .admin
        .api
        .json(Method::PUT, "/api/v1/rates", &body)
        .await
        .expect(200);
    assert_eq!(own["custom"], true);
    assert_eq!(own["rates"], body["rates"].clone());
    let read = t.member.api.get("/api/v1/rates").await.expect(200);
    assert_eq!(read, own);
    t.owner
        .api
        .json(
            Method::PUT,
            "/api/v1/rates",
            &json!({"rates": {"m": {"input": -1, "output": 1}}}),
        )
        .await
        .error_contains(422, "rates", "\"m\": prices must be amounts");
    let back = t
        .owner
        .api
        .json(Method::PUT, "/api/v1/rates", &json!({"rates": null}))
        .await
        .expect(200);
    assert_eq!(back["custom"], false);

    // The page: everyone sees the table; a bad edit keeps the text and says what is wrong.
    let page = t
        .member
        .api
        .send(Method::GET, "/w/alpha/usage/rates", None)
        .await;
    assert_eq!(page.status, 200);
    let html = page.body.as_str().unwrap_or_default();
    assert!(html.contains("<code>gpt-5</code>"), "{html}");
    assert!(!html.contains("Save rates"), "members do not edit: {html}");
    let page = t
        .owner
        .api
        .send(Method::GET, "/w/alpha/usage/rates", None)
        .await;
    assert!(
        page.body
            .as_str()
            .unwrap_or_default()
            .contains("Save rates")
    );
}
