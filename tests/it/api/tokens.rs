//! `/api/v1/tokens`: a caller's own API tokens, shown once, listed without secrets, revoked for good.

use serde_json::json;

use super::{Env, api_cases, field};

api_cases!(token_lifecycle, token_validation_and_ownership);

/// Create (secret shown once) → use → list (no secret; prefix; last use) → revoke → refused.
async fn token_lifecycle(t: &Env) {
    let api = &t.member.api;
    let listed = api.get("/api/v1/tokens").await.expect(200);
    assert_eq!(field(&listed, "name"), ["test"]);

    let created = api
        .post("/api/v1/tokens", json!({"name": "  ci  "}))
        .await
        .expect(201);
    assert_eq!(created["name"], "ci");
    let secret = created["token"].as_str().unwrap().to_owned();
    assert!(secret.starts_with("mst_") && secret.len() == 68, "{secret}");
    let id = created["id"].as_str().unwrap().to_owned();

    let ci = t.bearer(&secret);
    let me = ci.get("/api/v1/me").await.expect(200);
    assert_eq!(
        (me["email"].as_str(), me["workspace"].as_str()),
        (Some("member@alpha.test"), Some("alpha"))
    );

    let listed = api.get("/api/v1/tokens").await;
    assert!(
        !listed.body.to_string().contains(&secret),
        "the secret is never listed"
    );
    let listed = listed.expect(200);
    assert_eq!(field(&listed, "name"), ["ci", "test"], "newest first");
    let ci_row = &listed[0];
    assert_eq!(ci_row["id"], id);
    assert_eq!(ci_row["prefix"], &secret[..12]);
    assert!(ci_row.get("token").is_none());
    assert!(
        ci_row["last_used_at"].is_string(),
        "its use was noted: {ci_row}"
    );
    assert_eq!(ci_row["revoked_at"], serde_json::Value::Null);

    // Tokens are per person: others do not see them.
    let admins = t.admin.api.get("/api/v1/tokens").await.expect(200);
    assert_eq!(field(&admins, "name"), ["test"]);

    // A token may revoke itself.
    ci.delete(&format!("/api/v1/tokens/{id}")).await.expect(204);
    ci.get("/api/v1/me").await.error(401, "auth");
    let listed = api.get("/api/v1/tokens").await.expect(200);
    assert_eq!(
        field(&listed, "name"),
        ["ci", "test"],
        "revoked tokens stay listed"
    );
    assert!(listed[0]["revoked_at"].is_string());
    assert_eq!(listed[1]["revoked_at"], serde_json::Value::Null);
    api.delete(&format!("/api/v1/tokens/{id}"))
        .await
        .error(404, "resource");
    api.get("/api/v1/me").await.expect(200);
}

/// Names must be 1–100 characters; nobody can see or revoke someone else's token, nor one from
/// another workspace.
async fn token_validation_and_ownership(t: &Env) {
    let api = &t.owner.api;
    for name in [json!(""), json!("   "), json!("n".repeat(101))] {
        api.post("/api/v1/tokens", json!({"name": name}))
            .await
            .error_contains(422, "name", "must be 1 to 100 characters");
    }
    api.post("/api/v1/tokens", json!({}))
        .await
        .rejected(422, "missing field `name`");
    api.post("/api/v1/tokens", json!({"name": "n".repeat(100)}))
        .await
        .expect(201);
    assert_eq!(
        api.get("/api/v1/tokens")
            .await
            .expect(200)
            .as_array()
            .unwrap()
            .len(),
        2
    );

    let members = t
        .member
        .api
        .post("/api/v1/tokens", json!({"name": "mine"}))
        .await
        .expect(201);
    let path = format!("/api/v1/tokens/{}", members["id"].as_str().unwrap());
    api.delete(&path).await.error(404, "resource");
    t.admin.api.delete(&path).await.error(404, "resource");
    api.delete("/api/v1/tokens/not-a-uuid")
        .await
        .error(404, "resource");
    api.delete(&format!("/api/v1/tokens/{}", uuid::Uuid::now_v7()))
        .await
        .error(404, "resource");
    t.bearer(members["token"].as_str().unwrap())
        .get("/api/v1/me")
        .await
        .expect(200);

    let (_, beta) = t.other_workspace().await;
    let betas = beta
        .api
        .post("/api/v1/tokens", json!({"name": "beta"}))
        .await
        .expect(201);
    api.delete(&format!("/api/v1/tokens/{}", betas["id"].as_str().unwrap()))
        .await
        .error(404, "resource");
    let me = t
        .bearer(betas["token"].as_str().unwrap())
        .get("/api/v1/me")
        .await
        .expect(200);
    assert_eq!(me["workspace"], "beta");
}
