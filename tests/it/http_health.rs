//! `/healthz` and `/readyz` on a real server, on both backends.

use muster_tests::{Backend, TestDb, spawn_app};
use serde_json::Value;

async fn health_on(backend: Backend, expected: &str) {
    let Some(db) = TestDb::new(backend).await else {
        return;
    };
    let app = spawn_app(db.config()).await;
    if backend == Backend::Sqlite {
        assert!(
            db.dir.path().join("muster.db-wal").exists(),
            "SQLite runs in WAL mode"
        );
    }

    let live = app.get("/healthz").await;
    assert_eq!(live.status(), 200);
    assert!(
        live.headers().contains_key("x-request-id"),
        "every response carries a request id"
    );
    assert_eq!(live.json::<Value>().await.unwrap()["status"], "ok");

    let ready = app.get("/readyz").await;
    assert_eq!(ready.status(), 200);
    let body: Value = ready.json().await.unwrap();
    assert_eq!(
        (body["status"].as_str(), body["database"].as_str()),
        (Some("ready"), Some(expected))
    );

    // When the database goes away, liveness stays up and readiness says so.
    app.store.close().await;
    let not_ready = app.get("/readyz").await;
    assert_eq!(not_ready.status(), 503);
    assert_eq!(
        not_ready.json::<Value>().await.unwrap()["status"],
        "unavailable"
    );
    assert_eq!(app.get("/healthz").await.status(), 200);

    let missing = app.get("/nope").await;
    assert_eq!(missing.status(), 404);

    app.shutdown.cancel();
    app.handle.await.unwrap().unwrap();
}

#[tokio::test]
async fn sqlite_health_and_readiness() {
    health_on(Backend::Sqlite, "sqlite").await;
}

#[tokio::test]
#[ignore = "needs PostgreSQL (MUSTER_TEST_PG_URL); run with --include-ignored"]
async fn postgres_health_and_readiness() {
    health_on(Backend::Postgres, "postgres").await;
}
