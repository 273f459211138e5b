//! Start-up failures: each is one clear error naming the problem and the fix, never a panic.

use std::net::TcpListener;

use muster::config::Config;
use muster::store::DatabaseUrl;
use muster_tests::{Backend, TestDb};

async fn build_error(config: Config) -> String {
    match muster::app::build(config).await {
        Ok(_) => panic!("the app should not start"),
        Err(e) => format!("{e:#}"),
    }
}

#[tokio::test]
async fn a_port_in_use_is_named_with_the_fix() {
    let taken = TcpListener::bind("127.0.0.1:0").unwrap();
    let dir = tempfile::tempdir().unwrap();
    let mut config = Config::for_data_dir(dir.path().to_path_buf());
    config.addr = taken.local_addr().unwrap();
    let e = build_error(config).await;
    assert!(
        e.starts_with(&format!(
            "cannot listen on {}: ",
            taken.local_addr().unwrap()
        )),
        "{e}"
    );
    assert!(
        e.ends_with("choose another address with --addr or MUSTER_ADDR"),
        "{e}"
    );
    // The database was still created and migrated before the bind failed.
    assert!(dir.path().join("muster.db").exists());
}

#[tokio::test]
async fn an_unwritable_data_dir_is_named_with_the_fix() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("a-file");
    std::fs::write(&file, "not a directory").unwrap();
    let e = build_error(Config::for_data_dir(file.join("data"))).await;
    assert!(
        e.starts_with(&format!(
            "cannot create data directory {}",
            file.join("data").display()
        )),
        "{e}"
    );
    assert!(
        e.ends_with("choose a writable one with --data-dir or MUSTER_DATA_DIR"),
        "{e}"
    );
}

#[tokio::test]
async fn an_unreachable_postgres_is_named_with_the_fix() {
    let dir = tempfile::tempdir().unwrap();
    let unused = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let mut config = Config::for_data_dir(dir.path().to_path_buf());
    config.database_url =
        DatabaseUrl::parse(&format!("postgres://muster:hunter2@{unused}/muster")).unwrap();
    let e = build_error(config).await;
    assert!(
        e.starts_with(&format!(
            "cannot connect to PostgreSQL at postgres://muster:***@{unused}/muster: "
        )),
        "{e}"
    );
    assert!(e.contains("Connection refused"), "{e}");
    assert!(!e.contains("hunter2"), "the password never appears: {e}");
}

#[tokio::test]
#[ignore = "needs PostgreSQL (MUSTER_TEST_PG_URL); run with --include-ignored"]
async fn a_missing_postgres_database_is_named_with_the_fix() {
    // Only to learn that the server is there (or skip loudly).
    let Some(_db) = TestDb::new(Backend::Postgres).await else {
        return;
    };
    let admin = muster_tests::pg_admin_url();
    let (server, _) = admin.rsplit_once('/').unwrap();
    let dir = tempfile::tempdir().unwrap();
    let mut config = Config::for_data_dir(dir.path().to_path_buf());
    config.database_url = DatabaseUrl::parse(&format!("{server}/muster_no_such_database")).unwrap();
    let e = build_error(config).await;
    assert!(
        e.contains(r#"database "muster_no_such_database" does not exist"#),
        "{e}"
    );
    assert!(e.contains("createdb muster_no_such_database"), "{e}");
    assert!(
        !e.contains(" line "),
        "no position in PostgreSQL's C source: {e}"
    );
}

async fn refuses_a_database_from_a_newer_muster(backend: Backend) {
    let Some(db) = TestDb::new(backend).await else {
        return;
    };
    db.store().await.close().await;
    muster::store::testing::forge_future_migration(&db.url, 9_999)
        .await
        .unwrap();
    let e = build_error(db.config()).await;
    assert!(
        e.contains("the database has migration 9999, newer than this muster binary knows (latest ")
            && e.ends_with("run that version, or upgrade this one"),
        "{e}"
    );
}

both_backends!(runtime (); refuses_a_database_from_a_newer_muster);

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn processes_starting_together_on_a_new_sqlite_file_both_migrate() {
    let dir = tempfile::tempdir().unwrap();
    let url = DatabaseUrl::Sqlite(dir.path().join("muster.db"));
    let starts: Vec<_> = (0..4)
        .map(|_| {
            let url = url.clone();
            tokio::spawn(async move {
                muster::store::connect(&url, muster::store::PoolOptions::default()).await
            })
        })
        .collect();
    for start in starts {
        let store = start
            .await
            .unwrap()
            .expect("every process migrates or finds the schema migrated");
        store.ping().await.unwrap();
        store.close().await;
    }
}

#[tokio::test]
async fn the_setup_link_dies_once_an_account_exists() {
    let Some(db) = TestDb::new(Backend::Sqlite).await else {
        return;
    };
    let app = muster_tests::spawn_app(db.config()).await;
    let link = app
        .setup_url
        .clone()
        .expect("a fresh database offers setup");
    assert_eq!(app.client.get(&link).send().await.unwrap().status(), 200);
    // An account made behind the server's back (as `muster admin bootstrap` does).
    app.store
        .create_user(&muster::domain::NewUser {
            email: muster::domain::Email::parse("ada@example.com").unwrap(),
            display_name: "Ada".into(),
            password_hash: "x".into(),
        })
        .await
        .unwrap();
    let used = app.client.get(&link).send().await.unwrap();
    assert_eq!(used.status(), 410, "setup is done for good");
    assert!(used.text().await.unwrap().contains("already used"));
}
