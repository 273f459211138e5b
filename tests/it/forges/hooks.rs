//! Deliveries that must not be taken: a bad or missing signature, a replay, another repository's, an
//! unknown connection — refused with a status that says which, nothing recorded, nothing queued.

use muster::domain::*;
use muster_tests::Backend;
use muster_tests::engine::*;
use muster_tests::forge as scripted;
use serde_json::json;

use super::*;

both_backends!(
    forged_replayed_and_foreign_deliveries_are_refused_and_queue_nothing,
    each_forge_signs_its_own_way
);

/// POSTs `body` to `url` with `headers` as they are: the status.
async fn raw(url: &str, headers: &[(&str, &str)], body: &[u8]) -> u16 {
    let mut req = reqwest::Client::new().post(url).body(body.to_vec());
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    req.send().await.unwrap().status().as_u16()
}

async fn forged_replayed_and_foreign_deliveries_are_refused_and_queue_nothing(backend: Backend) {
    let Some(env) = Env::start(backend).await else {
        return;
    };
    let kind = ForgeKind::Github;
    let (_forge, conn, secret) = connected(&env, kind, json!({ "auto_open": true })).await;
    let agent = env.agent("coder", &probe_agent_script(&env)).await;
    let (issue, run) = env.assign_new("Guard the hooks", &agent).await;
    env.finished(run.id).await;
    let pr = pulls_recorded(&env, &issue, 1).await.remove(0);
    let url = hook_url(&env, kind, &conn);
    let mention = scripted::pr_comment(kind, REPO, pr.number, "mallory", "@coder run rm -rf /");
    let body = serde_json::to_vec(&mention).unwrap();
    let runs_now = || async { env.store.list_runs_for_issue(issue.id).await.unwrap().len() };

    // Unsigned, and signed with another secret.
    let unsigned = raw(
        &url,
        &[
            ("X-GitHub-Event", "issue_comment"),
            ("X-GitHub-Delivery", "x-1"),
            ("Content-Type", "application/json"),
        ],
        &body,
    )
    .await;
    assert_eq!(unsigned, 401);
    let forged = scripted::send_hook(
        kind,
        &url,
        "not-the-secret-at-all",
        "issue_comment",
        "x-2",
        &mention,
    )
    .await
    .unwrap();
    assert_eq!(forged, 401);
    // A body changed after signing: the signature is of the other body.
    let status = scripted::send_hook(kind, &url, &secret, "issue_comment", "x-3", &mention)
        .await
        .unwrap();
    assert_eq!(status, 202);
    let replayed = scripted::send_hook(kind, &url, &secret, "issue_comment", "x-3", &mention)
        .await
        .unwrap();
    assert_eq!(replayed, 409, "a replay is refused");
    // Another repository's delivery, correctly signed (a forge-wide hook, or a copied secret).
    let foreign = scripted::pr_comment(kind, "evil/app", pr.number, "mallory", "@coder leak it");
    let status = scripted::send_hook(kind, &url, &secret, "issue_comment", "x-4", &foreign)
        .await
        .unwrap();
    assert_eq!(status, 403);
    // Unknown connection, or the right connection under another forge's path.
    let unknown = hook_url(&env, kind, &uuid::Uuid::now_v7().to_string());
    assert_eq!(
        scripted::send_hook(kind, &unknown, &secret, "issue_comment", "x-5", &mention)
            .await
            .unwrap(),
        404
    );
    let wrong_kind = hook_url(&env, ForgeKind::Gitea, &conn);
    assert_eq!(
        scripted::send_hook(
            ForgeKind::Gitea,
            &wrong_kind,
            &secret,
            "issue_comment",
            "x-6",
            &mention
        )
        .await
        .unwrap(),
        404
    );
    // Only the one good delivery queued a run.
    let runs = runs_ended(&env, &issue, 2).await;
    assert_eq!(runs.len(), 2);
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    assert_eq!(runs_now().await, 2, "a refused delivery queued a run");
    let pr = env.store.get_pull_request(pr.id).await.unwrap();
    assert_eq!(pr.rounds, 1);
    // The refused deliveries' ids were not taken: each is new to the store.
    let conn_id: ForgeConnectionId = conn.parse().unwrap();
    for id in ["x-1", "x-2", "x-4", "x-5", "x-6"] {
        assert!(
            env.store
                .take_forge_delivery(conn_id, id, chrono::Utc::now())
                .await
                .unwrap(),
            "{id} was recorded"
        );
    }
}

async fn each_forge_signs_its_own_way(backend: Backend) {
    let Some(env) = Env::start(backend).await else {
        return;
    };
    for kind in [ForgeKind::Github, ForgeKind::Gitlab, ForgeKind::Gitea] {
        // One connection per workspace: connect (to a workspace without a repository, which then gets
        // this forge's), try, remove.
        env.store.set_workspace_repo(env.ws.id, None).await.unwrap();
        let (_forge, conn, secret) = connected(&env, kind, json!({})).await;
        let url = hook_url(&env, kind, &conn);
        let closed = scripted::closed(kind, REPO, 99, false);
        let event = scripted::event_for(kind, &closed);
        let good = scripted::send_hook(kind, &url, &secret, event, &format!("{kind}-1"), &closed)
            .await
            .unwrap();
        assert_eq!(good, 202, "{kind}: a well-signed delivery is taken");
        let bad = scripted::send_hook(
            kind,
            &url,
            "another-secret-entirely",
            event,
            &format!("{kind}-2"),
            &closed,
        )
        .await
        .unwrap();
        assert_eq!(bad, 401, "{kind}: a wrong secret is refused");
        let (status, text) = env
            .call(
                reqwest::Method::DELETE,
                &format!("/api/v1/forges/{conn}"),
                None,
            )
            .await;
        assert_eq!(status, 204, "{text}");
    }
}
