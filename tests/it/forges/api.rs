//! Connecting a workspace to a forge through the API: what is refused and why, what the token can do,
//! settings, removal, and who may.

use muster::domain::*;
use muster_tests::Backend;
use muster_tests::engine::*;
use muster_tests::forge::ScriptedForge;
use serde_json::{Value, json};

use super::*;

both_backends!(
    connecting_checks_the_token_and_the_repository_and_hides_the_secrets,
    only_owners_and_admins_manage_connections,
    settings_change_and_identity_fields_are_refused
);

async fn post(env: &Env, body: Value) -> (u16, Value) {
    let (status, text) = env
        .call(reqwest::Method::POST, "/api/v1/forges", Some(body))
        .await;
    (
        status,
        serde_json::from_str(&text).unwrap_or(Value::String(text)),
    )
}

async fn connecting_checks_the_token_and_the_repository_and_hides_the_secrets(backend: Backend) {
    let Some(env) = Env::start(backend).await else {
        return;
    };
    // Before any connection, opening a pull request says how to connect.
    let (status, text) = env
        .call(
            reqwest::Method::POST,
            "/api/v1/issues/MUS-1/pull-request",
            Some(json!({})),
        )
        .await;
    assert!(status == 404 || status == 409, "{status} {text}");

    let forge = ScriptedForge::start(ForgeKind::Github, REPO, TOKEN)
        .await
        .unwrap();
    // Everything missing: each field says what it needs.
    let (status, body) = post(&env, json!({})).await;
    assert_eq!(status, 422, "{body}");
    for field in ["kind", "repo", "token"] {
        assert!(body["errors"][field].is_array(), "{field}: {body}");
    }
    // Bad values, each named.
    let (status, body) = post(
        &env,
        json!({ "kind": "bitbucket", "api_url": "ftp://x", "repo": "justone", "token": "a b" }),
    )
    .await;
    assert_eq!(status, 422, "{body}");
    for field in ["kind", "api_url", "repo", "token"] {
        assert!(body["errors"][field].is_array(), "{field}: {body}");
    }
    let (status, body) = post(
        &env,
        json!({ "kind": "gitea", "repo": REPO, "token": TOKEN }),
    )
    .await;
    assert_eq!(status, 422);
    assert!(
        body["errors"]["api_url"][0]
            .as_str()
            .unwrap()
            .contains("required for Gitea"),
        "{body}"
    );
    // A token the forge refuses.
    let (status, body) = post(
        &env,
        json!({ "kind": "github", "api_url": forge.api_url(), "repo": REPO, "token": "wrong-token" }),
    )
    .await;
    assert_eq!(status, 422, "{body}");
    assert!(
        body["errors"]["token"][0]
            .as_str()
            .unwrap()
            .starts_with("GitHub says:"),
        "{body}"
    );
    // A workspace whose repository is another one.
    env.store
        .set_workspace_repo(env.ws.id, Some("https://elsewhere.example/other/repo.git"))
        .await
        .unwrap();
    let good =
        json!({ "kind": "github", "api_url": forge.api_url(), "repo": REPO, "token": TOKEN });
    let (status, body) = post(&env, good.clone()).await;
    assert_eq!(status, 422, "{body}");
    let why = body["errors"]["repo"][0].as_str().unwrap();
    assert!(
        why.contains(&forge.clone_url()) && why.contains("elsewhere.example"),
        "{why}"
    );
    assert!(
        env.store
            .list_forge_connections(env.ws.id)
            .await
            .unwrap()
            .is_empty()
    );

    // A workspace without a repository gets the project's.
    env.store.set_workspace_repo(env.ws.id, None).await.unwrap();
    let (status, made) = post(&env, good.clone()).await;
    assert_eq!(status, 201, "{made}");
    assert_eq!(made["access"]["can_push"], true, "{made}");
    assert_eq!(made["connection"]["max_rounds"], 3);
    assert_eq!(made["connection"]["auto_open"], false);
    let secret = made["webhook_secret"].as_str().unwrap();
    assert!(secret.len() >= 16);
    let ws = env.store.get_workspace(env.ws.id).await.unwrap();
    assert_eq!(ws.repo_path.as_deref(), Some(forge.clone_url().as_str()));
    // Sealed at rest, shown nowhere after.
    let stored = env
        .store
        .list_forge_connections(env.ws.id)
        .await
        .unwrap()
        .remove(0);
    assert!(!stored.token_sealed.contains(TOKEN) && !stored.webhook_secret_sealed.contains(secret));
    let listed = env.page("/api/v1/forges").await;
    assert!(
        !listed.contains(TOKEN) && !listed.contains(secret),
        "{listed}"
    );
    // Once per workspace.
    let (status, body) = post(&env, good).await;
    assert_eq!(status, 409, "{body}");
    // Test: what the token can do, asked again; a read-only token says it cannot push.
    let id = made["connection"]["id"].as_str().unwrap();
    let (status, text) = env
        .call(
            reqwest::Method::POST,
            &format!("/api/v1/forges/{id}/test"),
            None,
        )
        .await;
    assert_eq!(status, 200, "{text}");
    assert!(text.contains("\"can_push\":true"), "{text}");
    forge.set_token_scopes(false);
    let (_, text) = env
        .call(
            reqwest::Method::POST,
            &format!("/api/v1/forges/{id}/test"),
            None,
        )
        .await;
    assert!(text.contains("\"can_push\":false"), "{text}");
    // The API calls carried the token; git was never asked for anything by the server here.
    assert!(
        forge
            .requests()
            .iter()
            .all(|r| !r.path.starts_with("/git/")),
        "connecting touched the repository"
    );
}

async fn only_owners_and_admins_manage_connections(backend: Backend) {
    let Some(env) = Env::start(backend).await else {
        return;
    };
    let (_forge, id, _secret) = connected(&env, ForgeKind::Github, json!({})).await;
    let person = muster_tests::seed::person("dev@acme.test", "Dev");
    let member = muster_tests::seed::member(&env.store, env.ws.id, person, Role::Member).await;
    let token =
        muster_tests::mint_token(env.store.as_ref(), env.ws.id, member.user.id, "dev").await;
    let client = reqwest::Client::new();
    for (method, path) in [
        (reqwest::Method::GET, "/api/v1/forges".to_owned()),
        (reqwest::Method::POST, "/api/v1/forges".to_owned()),
        (reqwest::Method::GET, format!("/api/v1/forges/{id}")),
        (reqwest::Method::POST, format!("/api/v1/forges/{id}/test")),
        (reqwest::Method::DELETE, format!("/api/v1/forges/{id}")),
    ] {
        let resp = client
            .request(method.clone(), env.url(&path))
            .bearer_auth(&token)
            .json(&json!({}))
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), 403, "{method} {path}");
    }
    // A member may read the pull requests.
    let resp = client
        .get(env.url("/api/v1/pull-requests"))
        .bearer_auth(&token)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    assert_eq!(
        env.store
            .list_forge_connections(env.ws.id)
            .await
            .unwrap()
            .len(),
        1
    );
}

async fn settings_change_and_identity_fields_are_refused(backend: Backend) {
    let Some(env) = Env::start(backend).await else {
        return;
    };
    let (_forge, id, _secret) =
        connected(&env, ForgeKind::Gitlab, json!({ "max_rounds": 4 })).await;
    let path = format!("/api/v1/forges/{id}");
    let (status, text) = env
        .call(
            reqwest::Method::PATCH,
            &path,
            Some(json!({ "auto_open": true, "max_rounds": 5, "on_close": "cancelled" })),
        )
        .await;
    assert_eq!(status, 200, "{text}");
    let now: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(
        (
            now["auto_open"].as_bool(),
            now["max_rounds"].as_i64(),
            now["on_close"].as_str()
        ),
        (Some(true), Some(5), Some("cancelled"))
    );
    let (status, text) = env
        .call(
            reqwest::Method::PATCH,
            &path,
            Some(json!({ "max_rounds": 0, "on_close": "later", "token": "x", "repo": "a/b" })),
        )
        .await;
    assert_eq!(status, 422, "{text}");
    let body: Value = serde_json::from_str(&text).unwrap();
    for field in ["max_rounds", "on_close", "token", "repo"] {
        assert!(body["errors"][field].is_array(), "{field}: {body}");
    }
    let stored = env
        .store
        .list_forge_connections(env.ws.id)
        .await
        .unwrap()
        .remove(0);
    assert_eq!(
        (stored.max_rounds, stored.on_close),
        (5, OnClose::Cancelled),
        "nothing half-applied"
    );
    let (status, _) = env.call(reqwest::Method::DELETE, &path, None).await;
    assert_eq!(status, 204);
    let (status, _) = env.call(reqwest::Method::GET, &path, None).await;
    assert_eq!(status, 404);
}
