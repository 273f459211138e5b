//! The real `muster` binary, as a newcomer runs it: `muster serve` answers health checks on SQLite and on
//! PostgreSQL and stops cleanly on SIGTERM; bad configuration is one line on stderr and exit code 1.
//!
//! They run the built binary ([`muster_tests::muster_bin`]), which cargo builds before these tests.

use std::io::{Read as _, Write as _};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use muster_tests::{Backend, TestDb};

const STARTUP_DEADLINE: Duration = Duration::from_secs(60);

fn free_addr() -> SocketAddr {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
}

/// A bare HTTP/1.1 GET; returns the status code and body, or `None` while nothing listens.
fn get(addr: SocketAddr, path: &str) -> Option<(u16, String)> {
    let mut stream = TcpStream::connect_timeout(&addr, Duration::from_secs(1)).ok()?;
    stream.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )
    .ok()?;
    let mut response = String::new();
    stream.read_to_string(&mut response).ok()?;
    let status = response.split(' ').nth(1)?.parse().ok()?;
    let body = response
        .split("\r\n\r\n")
        .nth(1)
        .unwrap_or_default()
        .to_owned();
    Some((status, body))
}

/// Polls `/healthz` until it answers or the deadline passes (no fixed sleeps).
fn wait_until_up(addr: SocketAddr, child: &mut Child) {
    let started = Instant::now();
    while started.elapsed() < STARTUP_DEADLINE {
        if let Some(status) = child.try_wait().unwrap() {
            panic!("muster serve exited early with {status}");
        }
        if get(addr, "/healthz").is_some() {
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("muster serve did not answer within {STARTUP_DEADLINE:?}");
}

fn terminate(child: Child) -> Output {
    let pid = child.id().to_string();
    assert!(
        Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .unwrap()
            .success()
    );
    child.wait_with_output().unwrap()
}

fn serve_and_check(db: &TestDb, expected_backend: &str) {
    let addr = free_addr();
    let data_dir = db.dir.path().join("data");
    let mut child = Command::new(muster_tests::muster_bin())
        .args(["serve", "--addr", &addr.to_string(), "--log-format", "json"])
        .arg("--data-dir")
        .arg(&data_dir)
        .env(
            "MUSTER_DATABASE_URL",
            match &db.url {
                muster::store::DatabaseUrl::Sqlite(path) => format!("sqlite://{}", path.display()),
                muster::store::DatabaseUrl::Postgres(url) => url.clone(),
            },
        )
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_until_up(addr, &mut child);
    let (status, body) = get(addr, "/healthz").unwrap();
    assert_eq!(status, 200, "{body}");
    let (status, body) = get(addr, "/readyz").unwrap();
    assert_eq!(status, 200, "{body}");
    assert!(
        body.contains(&format!("\"database\":\"{expected_backend}\"")),
        "{body}"
    );

    let output = terminate(child);
    assert!(
        output.status.success(),
        "SIGTERM is a clean stop: {:?}",
        output.status
    );
    let logs = String::from_utf8_lossy(&output.stderr);
    let lines: Vec<serde_json::Value> = logs
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let messages: Vec<_> = lines
        .iter()
        .filter_map(|l| l["fields"]["message"].as_str())
        .collect();
    assert!(
        messages.contains(&"muster is listening") && messages.contains(&"shutting down"),
        "{logs}"
    );
    assert!(!logs.contains("password"), "no secrets in logs");
}

#[test]
fn serve_on_the_embedded_sqlite_database() {
    let db = tokio::runtime::Runtime::new()
        .unwrap()
        .block_on(TestDb::new(Backend::Sqlite))
        .unwrap();
    serve_and_check(&db, "sqlite");
    assert!(
        db.dir.path().join("muster.db").exists(),
        "the database file is created on first start"
    );
}

#[test]
#[ignore = "needs PostgreSQL (MUSTER_TEST_PG_URL); run with --include-ignored"]
fn serve_on_postgres() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let Some(db) = rt.block_on(TestDb::new(Backend::Postgres)) else {
        return;
    };
    serve_and_check(&db, "postgres");
    drop(db);
}

fn run(args: &[&str]) -> Output {
    Command::new(muster_tests::muster_bin())
        .args(args)
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

/// Exit code 1 and exactly one line on stderr, starting `error: `.
fn assert_one_line_error(output: &Output, expected: &str) {
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "one line: {stderr}");
    assert!(stderr.starts_with("error: "), "{stderr}");
    assert!(
        stderr.contains(expected),
        "expected {expected:?} in {stderr}"
    );
    assert!(!stderr.contains("panicked"), "{stderr}");
}

#[test]
fn bad_configuration_is_one_clear_line() {
    // A data dir Muster creates itself (0700): an existing one open to others adds a warning line.
    let dir = tempfile::tempdir().unwrap();
    let data_dir = dir.path().join("data");
    let data = data_dir.to_str().unwrap();
    assert_one_line_error(
        &run(&[
            "serve",
            "--data-dir",
            data,
            "--database-url",
            "mysql://root@localhost/muster",
        ]),
        "unsupported database URL scheme \"mysql\": use sqlite://PATH (embedded, the default) or postgres://USER@HOST/DB",
    );
    let closed = free_addr();
    assert_one_line_error(
        &run(&[
            "migrate",
            "--data-dir",
            data,
            "--database-url",
            &format!("postgres://postgres@{closed}/muster"),
        ]),
        "Connection refused",
    );
    let taken = TcpListener::bind("127.0.0.1:0").unwrap();
    assert_one_line_error(
        &run(&[
            "serve",
            "--data-dir",
            data,
            "--addr",
            &taken.local_addr().unwrap().to_string(),
        ]),
        "choose another address with --addr or MUSTER_ADDR",
    );
}

#[test]
fn usage_errors_exit_2_and_version_prints() {
    let output = run(&["serve", "--addr", "not-an-address"]);
    assert_eq!(output.status.code(), Some(2));
    let version = run(&["--version"]);
    assert!(version.status.success());
    assert_eq!(
        String::from_utf8_lossy(&version.stdout).trim(),
        format!("muster {}", env!("CARGO_PKG_VERSION"))
    );
    let help = run(&["serve", "--help"]);
    let help = String::from_utf8_lossy(&help.stdout);
    for var in [
        "MUSTER_ADDR",
        "MUSTER_DATA_DIR",
        "MUSTER_DATABASE_URL",
        "MUSTER_LOG_FORMAT",
    ] {
        assert!(help.contains(var), "--help documents {var}");
    }
}

#[test]
fn migrate_creates_the_database_and_exits() {
    let dir = tempfile::tempdir().unwrap();
    let output = run(&["migrate", "--data-dir", dir.path().to_str().unwrap()]);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(dir.path().join("muster.db").exists());
    // Idempotent.
    assert!(
        run(&["migrate", "--data-dir", dir.path().to_str().unwrap()])
            .status
            .success()
    );
}

/// Issue 27: a log redirected to a file or a pipe is plain text, without colour escapes (a person at a
/// terminal still gets colours).
#[test]
fn a_redirected_text_log_has_no_colour_escapes() {
    let dir = tempfile::tempdir().unwrap();
    let addr = free_addr();
    let mut child = Command::new(muster_tests::muster_bin())
        .args(["serve", "--addr", &addr.to_string()])
        .arg("--data-dir")
        .arg(dir.path())
        .env_remove("NO_COLOR")
        .env_remove("MUSTER_DATABASE_URL")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_until_up(addr, &mut child);
    let output = terminate(child);
    let logs = String::from_utf8_lossy(&output.stderr);
    assert!(logs.contains("muster is listening"), "{logs}");
    assert!(
        !logs.contains('\u{1b}'),
        "colour escapes in a piped log: {logs:?}"
    );
}
