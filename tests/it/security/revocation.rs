//! Issue 26, finding 8: revoking an API token left its open event streams delivering. Now the run's event
//! stream, the board socket and the run page socket opened with a token end as soon as it is revoked, and
//! the token is refused from then on; the owner's other token carries on. On PostgreSQL they are open on a
//! second replica, so the revocation reaches them through the replicas' relay. (A revoked runner token
//! already disconnects its runners: `tests/it/runners.rs`.)

use muster_tests::{Backend, TestApp, spawn_app};
use reqwest::StatusCode;
use serde_json::{Value, json};

use super::sessions::{Socket, Team, socket_ends, stays_open, stream_ends};

both_backends!(revoking_a_token_ends_its_streams_and_sockets_at_once);

/// Opens the WebSocket at `path` on `app` with `bearer`.
async fn socket(app: &TestApp, path: &str, bearer: &str) -> Socket {
    app.socket(path, &[("authorization", bearer)])
        .await
        .unwrap()
}

async fn revoking_a_token_ends_its_streams_and_sockets_at_once(backend: Backend) {
    let Some(t) = Team::start(backend, |_| {}).await else {
        return;
    };
    let admin = t.token(&t.acme, &t.ada).await;
    let api = reqwest::Client::new();
    let created: Value = muster_tests::json_of(
        api.post(t.app.url("/api/v1/tokens"))
            .bearer_auth(&admin)
            .json(&json!({ "name": "laptop" })),
    )
    .await;
    let (id, token) = (
        created["id"].as_str().unwrap(),
        created["token"].as_str().unwrap(),
    );
    let bearer = format!("Bearer {token}");

    // PostgreSQL: the viewer is on another replica of the same database.
    let replica = match backend {
        Backend::Postgres => {
            let mut config = t.db.config();
            config.data_dir = t.db.dir.path().join("replica-data");
            Some(spawn_app(config).await)
        }
        Backend::Sqlite => None,
    };
    let viewer = replica.as_ref().unwrap_or(&t.app);
    let events = api
        .get(viewer.url(&format!("/api/v1/runs/{}/events/stream", t.run.id)))
        .header("authorization", &bearer)
        .send()
        .await
        .unwrap();
    assert_eq!(events.status(), StatusCode::OK);
    let mut board = socket(viewer, "/w/acme/live", &bearer).await;
    let mut run_page = socket(viewer, &format!("/w/acme/runs/{}/live", t.run.id), &bearer).await;
    let mut admins_board = socket(viewer, "/w/acme/live", &format!("Bearer {admin}")).await;
    assert!(
        stays_open(&mut board).await,
        "open while the token is valid"
    );

    let revoked = api
        .delete(t.app.url(&format!("/api/v1/tokens/{id}")))
        .bearer_auth(&admin)
        .send()
        .await
        .unwrap();
    assert_eq!(revoked.status(), StatusCode::NO_CONTENT);

    assert_eq!(socket_ends(&mut board).await, Some(1008));
    assert_eq!(socket_ends(&mut run_page).await, Some(1008));
    stream_ends(events).await;
    for app in [&t.app, viewer] {
        let me = api
            .get(app.url("/api/v1/me"))
            .header("authorization", &bearer)
            .send()
            .await
            .unwrap();
        assert_eq!(me.status(), StatusCode::UNAUTHORIZED);
    }
    // The owner's other token and its socket are untouched.
    assert!(stays_open(&mut admins_board).await);
    let me = api
        .get(viewer.url("/api/v1/me"))
        .bearer_auth(&admin)
        .send()
        .await
        .unwrap();
    assert_eq!(me.status(), StatusCode::OK);
}
