//! `/api/v1/runner-tokens` (owners and admins; the secret shown once, never listed; revoked for good)
//! and `/api/v1/runners` (any member: online or not, what each reported, its live runs).

use chrono::{TimeDelta, Utc};
use muster::domain::RunnerName;
use serde_json::json;

use super::{Env, api_cases, field};

api_cases!(
    runner_token_lifecycle,
    runner_token_roles_and_validation,
    runners_list_what_they_reported,
    agent_runner_binding
);

/// Create (secret once) → list (no secret) → the runner it registers shows revoked after a revoke →
/// revoking again keeps it revoked; another workspace's token is 404.
async fn runner_token_lifecycle(t: &Env) {
    let api = &t.admin.api;
    assert_eq!(
        api.get("/api/v1/runner-tokens").await.expect(200),
        json!([])
    );
    let created = api
        .post("/api/v1/runner-tokens", json!({"name": "  gpu box  "}))
        .await
        .expect(201);
    assert_eq!(created["name"], "gpu box");
    let secret = created["token"].as_str().unwrap().to_owned();
    assert!(secret.starts_with("mrt_"), "{secret}");
    let id = created["id"].as_str().unwrap().to_owned();

    let listed = t.owner.api.get("/api/v1/runner-tokens").await;
    assert!(
        !listed.body.to_string().contains(&secret),
        "the secret is never listed"
    );
    let listed = listed.expect(200);
    assert_eq!(field(&listed, "name"), ["gpu box"]);
    assert_eq!(listed[0]["prefix"], &secret[..12]);
    assert!(listed[0].get("token").is_none());
    assert_eq!(listed[0]["revoked_at"], serde_json::Value::Null);
    assert!(
        !t.owner
            .api
            .get("/api/v1/runners")
            .await
            .body
            .to_string()
            .contains(&secret)
    );

    // The runner that registers with it is listed, and marked once the token is revoked.
    let token = t.app.store.list_runner_tokens(t.ws.id).await.unwrap()[0].clone();
    t.app
        .store
        .register_remote_runner(
            &token,
            &RunnerName::parse("gpu-box").unwrap(),
            "0.9.0",
            &json!({}),
            Utc::now(),
        )
        .await
        .unwrap();
    let runners = t.member.api.get("/api/v1/runners").await.expect(200);
    assert_eq!(runners[0]["revoked"], false);

    let (_, beta) = t.other_workspace().await;
    beta.api
        .delete(&format!("/api/v1/runner-tokens/{id}"))
        .await
        .error(404, "resource");
    api.delete("/api/v1/runner-tokens/not-a-uuid")
        .await
        .error(404, "resource");
    api.delete(&format!("/api/v1/runner-tokens/{}", uuid::Uuid::new_v4()))
        .await
        .error(404, "resource");

    api.delete(&format!("/api/v1/runner-tokens/{id}"))
        .await
        .expect(204);
    let listed = api.get("/api/v1/runner-tokens").await.expect(200);
    let revoked_at = listed[0]["revoked_at"].clone();
    assert!(revoked_at.is_string(), "revoked tokens stay listed");
    let runners = t.member.api.get("/api/v1/runners").await.expect(200);
    assert_eq!(field(&runners, "name"), ["gpu-box"]);
    assert_eq!(
        (&runners[0]["revoked"], &runners[0]["online"]),
        (&json!(true), &json!(false))
    );

    api.delete(&format!("/api/v1/runner-tokens/{id}"))
        .await
        .expect(204);
    let again = api.get("/api/v1/runner-tokens").await.expect(200);
    assert_eq!(
        again[0]["revoked_at"], revoked_at,
        "the first revocation stands"
    );
}

/// Members may see runners but not tokens; names are 1–64 characters.
async fn runner_token_roles_and_validation(t: &Env) {
    let member = &t.member.api;
    member
        .get("/api/v1/runner-tokens")
        .await
        .error_contains(403, "auth", "not allowed");
    member
        .post("/api/v1/runner-tokens", json!({"name": "mine"}))
        .await
        .error(403, "auth");
    let created = t
        .owner
        .api
        .post("/api/v1/runner-tokens", json!({"name": "n".repeat(64)}))
        .await
        .expect(201);
    member
        .delete(&format!(
            "/api/v1/runner-tokens/{}",
            created["id"].as_str().unwrap()
        ))
        .await
        .error(403, "auth");
    member.get("/api/v1/runners").await.expect(200);

    let api = &t.owner.api;
    for (name, got) in [
        (json!(""), 0),
        (json!("   "), 0),
        (json!("n".repeat(65)), 65),
    ] {
        api.post("/api/v1/runner-tokens", json!({"name": name}))
            .await
            .error_contains(
                422,
                "name",
                &format!("must be 1 to 64 characters (got {got})"),
            );
    }
    api.post("/api/v1/runner-tokens", json!({}))
        .await
        .rejected(422, "missing field `name`");
    let listed = api.get("/api/v1/runner-tokens").await.expect(200);
    assert_eq!(
        listed.as_array().unwrap().len(),
        1,
        "refused ones are not stored"
    );
}

/// A runner's report (CLIs with versions, local model servers, max runs) and heartbeat come back as
/// online or offline; another workspace's runners are not listed.
async fn runners_list_what_they_reported(t: &Env) {
    let store = &t.app.store;
    let created = t
        .owner
        .api
        .post("/api/v1/runner-tokens", json!({"name": "lab"}))
        .await
        .expect(201);
    let token = store.list_runner_tokens(t.ws.id).await.unwrap()[0].clone();
    assert_eq!(token.id.0.to_string(), created["id"]);
    let detected = json!({
        "runtimes": [{"kind": "claude", "version": "2.1.0", "path": "/usr/bin/claude"}],
        "local_models": [{"url": "http://127.0.0.1:8080", "models": ["qwen"]}],
        "max_runs": 4
    });
    let now = Utc::now();
    let fresh = store
        .register_remote_runner(
            &token,
            &RunnerName::parse("fresh").unwrap(),
            "1.2.3",
            &detected,
            now,
        )
        .await
        .unwrap();
    store.runner_heartbeat(fresh.id, now).await.unwrap();
    let stale = store
        .register_remote_runner(
            &token,
            &RunnerName::parse("stale").unwrap(),
            "1.2.0",
            &json!({}),
            now - TimeDelta::seconds(120),
        )
        .await
        .unwrap();
    store
        .runner_heartbeat(stale.id, now - TimeDelta::seconds(31))
        .await
        .unwrap();

    let (beta_ws, _) = t.other_workspace().await;
    let beta_token = store
        .create_runner_token(&muster::domain::NewRunnerToken {
            workspace_id: beta_ws.id,
            name: "beta".into(),
            prefix: "mrt_beta".into(),
            token_hash: "beta-hash".into(),
            created_by: t.owner.id,
        })
        .await;
    // The owner of alpha is not beta's member; the store does not care who created it.
    let beta_token = beta_token.unwrap();
    store
        .register_remote_runner(
            &beta_token,
            &RunnerName::parse("beta-box").unwrap(),
            "1",
            &json!({}),
            now,
        )
        .await
        .unwrap();

    let runners = t.member.api.get("/api/v1/runners").await.expect(200);
    assert_eq!(
        field(&runners, "name"),
        ["fresh", "stale"],
        "most recent first, alpha's only"
    );
    let r = &runners[0];
    assert_eq!(r["id"], fresh.id.0.to_string());
    assert_eq!(
        (&r["online"], &r["embedded"], &r["revoked"]),
        (&json!(true), &json!(false), &json!(false))
    );
    assert_eq!(r["version"], "1.2.3");
    assert_eq!(
        r["runtimes"],
        json!([{"kind": "claude", "version": "2.1.0", "path": "/usr/bin/claude"}])
    );
    assert_eq!(
        r["local_models"],
        json!([{"url": "http://127.0.0.1:8080", "models": ["qwen"]}])
    );
    assert_eq!(r["max_runs"], 4);
    assert_eq!(r["live_runs"], json!([]));
    let s = &runners[1];
    assert_eq!(
        s["online"], false,
        "31 s without a heartbeat is offline: {s}"
    );
    assert_eq!((&s["runtimes"], &s["max_runs"]), (&json!([]), &json!(null)));
}

/// An agent's `runners`: set on create, shown, replaced and cleared on update by owners and admins;
/// refused precisely when a name is bad or repeated, and for members.
async fn agent_runner_binding(t: &Env) {
    let api = &t.owner.api;
    let created = api
        .post(
            "/api/v1/agents",
            json!({"name": "gpu-coder", "kind": "claude", "runners": [" gpu-box ", "mac.mini"]}),
        )
        .await
        .expect(201);
    assert_eq!(
        created["runners"],
        json!(["gpu-box", "mac.mini"]),
        "trimmed"
    );
    let shown = api.get("/api/v1/agents/gpu-coder").await.expect(200);
    assert_eq!(shown["runners"], json!(["gpu-box", "mac.mini"]));

    let refused = api
        .patch(
            "/api/v1/agents/gpu-coder",
            json!({"runners": ["bad name", "gpu-box", "gpu-box"]}),
        )
        .await
        .error(422, "runners");
    assert_eq!(
        refused,
        [
            "runner name \"bad name\" may contain only letters, digits, '-', '_' and '.' (found ' ')",
            "runner \"gpu-box\" is listed twice"
        ]
    );
    t.member
        .api
        .patch("/api/v1/agents/gpu-coder", json!({"runners": ["gpu-box"]}))
        .await
        .error_contains(
            403,
            "runners",
            "only owners and admins may change the runners it runs on",
        );
    // The model is an owner's or admin's too (a member may only lower a budget).
    t.member
        .api
        .patch("/api/v1/agents/gpu-coder", json!({"model": "opus"}))
        .await
        .error_contains(403, "model", "only owners and admins may change the model");

    let updated = api
        .patch("/api/v1/agents/gpu-coder", json!({"runners": ["gpu-box"]}))
        .await
        .expect(200);
    assert_eq!(updated["runners"], json!(["gpu-box"]));
    let cleared = api
        .patch("/api/v1/agents/gpu-coder", json!({"runners": []}))
        .await
        .expect(200);
    assert_eq!(cleared["runners"], json!([]), "empty: any runner");
}
