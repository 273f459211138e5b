//! `/api/v1/agents` env secrets: sealed at rest, write-only, kept by edits that omit them.

use muster::domain::AgentName;
use serde_json::json;

use super::{Env, api_cases};

api_cases!(agent_secrets_are_write_only);

/// Secret env values are sealed at rest, never returned (value null) and kept by edits that omit them;
/// a secret without a value is refused on create.
async fn agent_secrets_are_write_only(t: &Env) {
    let api = &t.owner.api;
    let secret = "sk-live-very-secret-value";
    let created = api
        .post(
            "/api/v1/agents",
            json!({"name": "coder", "kind": "codex",
                   "env": [{"key": "API_KEY", "value": secret, "secret": true}, {"key": "REGION", "value": "eu"}]}),
        )
        .await
        .expect(201);
    let env = json!([
        {"key": "API_KEY", "value": null, "secret": true},
        {"key": "REGION", "value": "eu", "secret": false},
    ]);
    assert_eq!(created["env"], env);
    let shown = api.get("/api/v1/agents/coder").await;
    assert!(!format!("{}", shown.body).contains(secret));
    assert_eq!(shown.expect(200)["env"], env);
    let list = api.get("/api/v1/agents").await.expect(200);
    assert!(!list.to_string().contains(secret) && !list.to_string().contains("sealed:"));

    // At rest, the value is sealed and opens to the plaintext.
    let boxed = muster::secrets::SecretBox::load_or_create(&t.app.data_dir).unwrap();
    let stored = || async {
        let agent = t
            .app
            .store
            .get_agent_by_name(t.ws.id, &AgentName::parse("coder").unwrap())
            .await
            .unwrap();
        agent
            .profile
            .env
            .iter()
            .find(|v| v.key == "API_KEY")
            .unwrap()
            .value
            .clone()
    };
    let sealed = stored().await;
    assert!(sealed.starts_with("sealed:") && !sealed.contains(secret));
    assert_eq!(boxed.open(&sealed).unwrap(), secret);

    // An edit without env, and one listing the secret without a value, keep it.
    let edited = api
        .patch("/api/v1/agents/coder", json!({"model": "o4"}))
        .await
        .expect(200);
    assert_eq!(
        (edited["model"].as_str(), &edited["env"]),
        (Some("o4"), &env)
    );
    assert_eq!(stored().await, sealed);
    let edited = api
        .patch(
            "/api/v1/agents/coder",
            json!({"env": [{"key": "API_KEY", "secret": true}, {"key": "REGION", "value": "us"}]}),
        )
        .await
        .expect(200);
    assert_eq!(edited["env"][1]["value"], "us");
    assert_eq!(
        edited["env"][0],
        json!({"key": "API_KEY", "value": null, "secret": true})
    );
    assert_eq!(boxed.open(&stored().await).unwrap(), secret);
    // A new value replaces it.
    api.patch(
        "/api/v1/agents/coder",
        json!({"env": [{"key": "API_KEY", "value": "rotated", "secret": true}]}),
    )
    .await
    .expect(200);
    assert_eq!(boxed.open(&stored().await).unwrap(), "rotated");
    // A variable turned secret without a value has nothing to keep.
    api.patch(
        "/api/v1/agents/coder",
        json!({"env": [{"key": "API_KEY", "secret": true}, {"key": "REGION", "secret": true}]}),
    )
    .await
    .error_contains(422, "env", "REGION is secret and needs a value");
    assert_eq!(
        boxed.open(&stored().await).unwrap(),
        "rotated",
        "a refused edit keeps the secret"
    );

    for value in [json!(null), json!("")] {
        api.post(
            "/api/v1/agents",
            json!({"name": "leaky", "kind": "claude", "env": [{"key": "TOKEN", "value": value, "secret": true}]}),
        )
        .await
        .error_contains(422, "env", "TOKEN is secret and needs a value");
    }
    api.get("/api/v1/agents/leaky").await.error(404, "resource");
}
