//! `/api/v1/forges`, `/api/v1/pull-requests` and the two "open pull request" routes, each answering as
//! documented (the loop itself, against a scripted forge, is in `forges::`).

use muster::domain::ForgeKind;
use muster_tests::forge::ScriptedForge;
use serde_json::json;

use super::{Env, api_cases};

api_cases!(forge_routes_answer_as_documented);

async fn forge_routes_answer_as_documented(t: &Env) {
    let forge = ScriptedForge::start(ForgeKind::Github, "acme/app", "tok-0123456789abcdef")
        .await
        .unwrap();
    let connect = json!({ "kind": "github", "api_url": forge.api_url(), "repo": "acme/app",
                          "token": "tok-0123456789abcdef" });
    t.member
        .api
        .post("/api/v1/forges", connect.clone())
        .await
        .error(403, "auth");
    let made = t
        .admin
        .api
        .post("/api/v1/forges", connect)
        .await
        .expect(201);
    let id = made["connection"]["id"].as_str().unwrap().to_owned();
    assert_eq!(made["connection"]["kind"], "github");
    assert!(made["webhook_secret"].as_str().unwrap().len() >= 16);
    assert_eq!(
        made["connection"]["webhook_path"],
        format!("/hooks/github/{id}")
    );

    let listed = t.owner.api.get("/api/v1/forges").await.expect(200);
    assert_eq!(listed[0]["id"], id.as_str());
    t.member.api.get("/api/v1/forges").await.error(403, "auth");
    let one = t
        .owner
        .api
        .get(&format!("/api/v1/forges/{id}"))
        .await
        .expect(200);
    assert_eq!(one["repo"], "acme/app");
    t.owner
        .api
        .get("/api/v1/forges/not-a-uuid")
        .await
        .expect(404);
    let changed = t
        .owner
        .api
        .patch(&format!("/api/v1/forges/{id}"), json!({ "max_rounds": 7 }))
        .await
        .expect(200);
    assert_eq!(changed["max_rounds"], 7);
    let access = t
        .owner
        .api
        .post(&format!("/api/v1/forges/{id}/test"), json!({}))
        .await
        .expect(200);
    assert_eq!(access["can_open_prs"], true, "{access}");

    // Pull requests: none yet; opening one needs delivered work.
    let pulls = t.member.api.get("/api/v1/pull-requests").await.expect(200);
    assert_eq!(pulls, json!([]));
    t.member
        .api
        .get(&format!("/api/v1/pull-requests/{}", uuid::Uuid::now_v7()))
        .await
        .expect(404);
    t.member
        .api
        .get("/api/v1/pull-requests?issue=ALP-99")
        .await
        .expect(404);
    // A query it cannot read is our JSON error, like every other route's.
    t.member
        .api
        .get("/api/v1/pull-requests?issue=ALP-1&issue=ALP-2")
        .await
        .rejected(400, "issue");
    t.member
        .api
        .post(
            &format!("/api/v1/runs/{}/pull-request", uuid::Uuid::now_v7()),
            json!({}),
        )
        .await
        .expect(404);
    let issue = t
        .member
        .api
        .post("/api/v1/issues", json!({ "title": "Not started" }))
        .await
        .expect(201);
    let key = issue["key"].as_str().unwrap();
    let why = t
        .member
        .api
        .post(&format!("/api/v1/issues/{key}/pull-request"), json!({}))
        .await
        .error(409, "run");
    assert!(why[0].contains("no run on"), "{why:?}");

    t.member
        .api
        .delete(&format!("/api/v1/forges/{id}"))
        .await
        .error(403, "auth");
    t.owner
        .api
        .delete(&format!("/api/v1/forges/{id}"))
        .await
        .expect(204);
    t.owner
        .api
        .get(&format!("/api/v1/forges/{id}"))
        .await
        .expect(404);
    // Without a connection, opening says how to connect.
    let why = t
        .member
        .api
        .post(&format!("/api/v1/issues/{key}/pull-request"), json!({}))
        .await
        .error(409, "forge");
    assert!(why[0].contains("Settings"), "{why:?}");
}
