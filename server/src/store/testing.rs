//! Database administration that is not a use-case: applying migrations, and the scratch databases the
//! test suite creates and drops. Kept here because only `store/` may run SQL.

use std::time::{Duration, Instant};

use anyhow::Context as _;
use sqlx::migrate::{MigrateError, Migrator};
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqliteSynchronous};
use sqlx::{Connection as _, PgConnection, SqliteConnection};

use super::DatabaseUrl;
use crate::domain::{
    ActivityId, ActivityKind, AgentId, IssueId, IssueStatus, NewIssue, NewRunEvent, RunId,
    WorkspaceId,
};

/// Applies `migrator`, turning sqlx's errors into ones that say what to do.
pub(super) async fn run_migrator<'a, A>(migrator: Migrator, conn: A) -> anyhow::Result<()>
where
    A: sqlx::Acquire<'a>,
    <A::Connection as std::ops::Deref>::Target: sqlx::migrate::Migrate,
{
    let result = migrator.run(conn).await;
    explain_migration(&migrator, result)
}

/// [`run_migrator`] on one PostgreSQL connection. `Migrator::run` over `&mut PgConnection` makes a
/// future that cannot be proven `Send` for every lifetime (sqlx's generic `Acquire`), so a server started
/// in a spawned task would not compile; `run_direct` is what `run` calls once it holds the connection,
/// public for exactly this reason (pinned by Cargo.lock).
pub(super) async fn run_migrator_on(
    migrator: Migrator,
    conn: &mut PgConnection,
) -> anyhow::Result<()> {
    let result = migrator.run_direct(None, conn, false).await;
    explain_migration(&migrator, result)
}

/// sqlx's migration errors as ones that say what to do.
fn explain_migration(migrator: &Migrator, result: Result<(), MigrateError>) -> anyhow::Result<()> {
    let known = migrator.iter().map(|m| m.version).max().unwrap_or(0);
    match result {
        Ok(()) => Ok(()),
        Err(MigrateError::VersionMissing(version)) => Err(anyhow::anyhow!(
            "the database has migration {version}, newer than this muster binary knows (latest {known}); \
             it was upgraded by a newer muster: run that version, or upgrade this one"
        )),
        Err(MigrateError::VersionMismatch(version)) => Err(anyhow::anyhow!(
            "migration {version} in the database differs from the one in this binary; the database was \
             migrated by a different build of muster"
        )),
        Err(e) => Err(anyhow::Error::new(e).context("cannot apply database migrations")),
    }
}

/// Creates the database `name` through the server at `admin_url` (a URL naming an existing database).
/// `name` must be a plain identifier (`[a-z0-9_]`), as the test harness generates.
pub async fn create_postgres_database(admin_url: &str, name: &str) -> anyhow::Result<()> {
    anyhow::ensure!(is_identifier(name), "bad database name {name:?}");
    let mut conn = PgConnection::connect(admin_url)
        .await
        .with_context(|| "cannot connect to the PostgreSQL admin database".to_owned())?;
    let sql = format!("create database {name}");
    sqlx::raw_sql(sqlx::AssertSqlSafe(sql))
        .execute(&mut conn)
        .await?;
    conn.close().await?;
    Ok(())
}

/// Drops the database `name`, disconnecting any sessions still on it.
pub async fn drop_postgres_database(admin_url: &str, name: &str) -> anyhow::Result<()> {
    anyhow::ensure!(is_identifier(name), "bad database name {name:?}");
    let mut conn = PgConnection::connect(admin_url).await?;
    let sql = format!("drop database if exists {name} with (force)");
    sqlx::raw_sql(sqlx::AssertSqlSafe(sql))
        .execute(&mut conn)
        .await?;
    conn.close().await?;
    Ok(())
}

/// Gathers the planner's statistics of the PostgreSQL database at `url` (`ANALYZE`), as autovacuum does
/// within a minute or so of a large change: lets a benchmark measure a bulk-filled table as it will be
/// read in steady state, not only in the moments after the fill.
pub async fn analyze_postgres(url: &str) -> anyhow::Result<()> {
    let mut conn = PgConnection::connect(url).await?;
    sqlx::raw_sql("analyze").execute(&mut conn).await?;
    conn.close().await?;
    Ok(())
}

/// Records a migration version this binary does not know, as a newer `muster` would have: lets tests
/// check that such a database is refused.
pub async fn forge_future_migration(url: &DatabaseUrl, version: i64) -> anyhow::Result<()> {
    const SQL: &str = "insert into _sqlx_migrations (version, description, success, checksum, execution_time) \
                       values ($1, 'from the future', true, $2, 0)";
    let checksum = vec![0_u8; 48];
    match url {
        DatabaseUrl::Postgres(raw) => {
            let mut conn = PgConnection::connect(raw).await?;
            sqlx::query(SQL)
                .bind(version)
                .bind(checksum)
                .execute(&mut conn)
                .await?;
            conn.close().await?;
        }
        DatabaseUrl::Sqlite(path) => {
            let mut conn =
                SqliteConnection::connect_with(&SqliteConnectOptions::new().filename(path)).await?;
            sqlx::query(SQL)
                .bind(version)
                .bind(checksum)
                .execute(&mut conn)
                .await?;
            conn.close().await?;
        }
    }
    Ok(())
}

/// The ingest benchmark's baseline: inserts `events` of `run` into the real `run_event` table of the
/// migrated database at `url`, as multi-row inserts of `batch` rows, one transaction per batch, on one
/// connection (SQLite with the store's WAL and `synchronous = normal`). Returns the time the inserts
/// took, connecting excluded.
pub async fn bare_insert_run_events(
    url: &DatabaseUrl,
    run: RunId,
    events: &[NewRunEvent],
    batch: usize,
) -> anyhow::Result<Duration> {
    anyhow::ensure!(batch > 0, "a batch holds at least one row");
    macro_rules! insert_batches {
        ($db:ty, $conn:ident) => {{
            let started = Instant::now();
            for chunk in events.chunks(batch) {
                let mut tx = $conn.begin().await?;
                let mut qb = sqlx::QueryBuilder::<$db>::new(
                    "insert into run_event (run_id, seq, at, kind, payload) ",
                );
                qb.push_values(chunk, |mut row, e| {
                    row.push_bind(run)
                        .push_bind(e.seq)
                        .push_bind(e.at)
                        .push_bind(e.kind.clone())
                        .push_bind(sqlx::types::Json(e.payload.clone()));
                });
                qb.build().execute(&mut *tx).await?;
                tx.commit().await?;
            }
            let took = started.elapsed();
            $conn.close().await?;
            Ok(took)
        }};
    }
    match url {
        DatabaseUrl::Postgres(raw) => {
            let mut conn = PgConnection::connect(raw).await?;
            insert_batches!(sqlx::Postgres, conn)
        }
        DatabaseUrl::Sqlite(path) => {
            let options = SqliteConnectOptions::new()
                .filename(path)
                .journal_mode(SqliteJournalMode::Wal)
                .synchronous(SqliteSynchronous::Normal);
            let mut conn = SqliteConnection::connect_with(&options).await?;
            insert_batches!(sqlx::Sqlite, conn)
        }
    }
}

/// The ingest benchmark's PostgreSQL baseline: the same rows as [`bare_insert_run_events`] through one
/// `COPY … FROM STDIN` (text format). Returns the time the copy took, connecting excluded.
pub async fn bare_copy_run_events(
    url: &DatabaseUrl,
    run: RunId,
    events: &[NewRunEvent],
) -> anyhow::Result<Duration> {
    use std::fmt::Write as _;
    let DatabaseUrl::Postgres(raw) = url else {
        anyhow::bail!("COPY is PostgreSQL's");
    };
    let mut conn = PgConnection::connect(raw).await?;
    let started = Instant::now();
    let mut data = String::with_capacity(events.len() * 128);
    for e in events {
        // Text format: tab-separated, backslash escapes (JSON text has no raw tab or newline).
        let payload = e.payload.to_string().replace('\\', "\\\\");
        let kind = e.kind.replace('\\', "\\\\");
        writeln!(
            data,
            "{run}\t{}\t{}\t{kind}\t{payload}",
            e.seq,
            e.at.to_rfc3339()
        )?;
    }
    let mut copy = conn
        .copy_in_raw("copy run_event (run_id, seq, at, kind, payload) from stdin")
        .await?;
    copy.send(data.into_bytes()).await?;
    let rows = copy.finish().await?;
    let took = started.elapsed();
    anyhow::ensure!(
        rows == events.len() as u64,
        "COPY stored {rows} of {} rows",
        events.len()
    );
    conn.close().await?;
    Ok(took)
}

/// The board benchmark's fixture: `issues` in workspace `ws` as [`super::IssueStore::create_issue`] makes
/// them (the next numbers of the workspace's counter, positions 1024 apart after the last of their
/// status, a `created` activity line each), but in one transaction of multi-row inserts: 10,000 issues
/// in a second or two, where one transaction each takes minutes on PostgreSQL.
pub async fn create_issues_in_bulk(
    url: &DatabaseUrl,
    ws: WorkspaceId,
    issues: &[NewIssue],
) -> anyhow::Result<()> {
    const CHUNK: usize = 500;
    let count = i64::try_from(issues.len())?;
    macro_rules! bulk {
        ($db:ty, $conn:ident) => {{
            let mut tx = $conn.begin().await?;
            let last = sqlx::query_scalar::<$db, i64>(
                "update workspace set issue_counter = issue_counter + $1 where workspace_id = $2 returning issue_counter",
            )
            .bind(count)
            .bind(ws)
            .fetch_one(&mut *tx)
            .await?;
            let mut positions: Vec<(IssueStatus, i64)> = Vec::new();
            let mut rows = Vec::with_capacity(issues.len());
            for (i, new) in issues.iter().enumerate() {
                let at = match positions.iter().position(|(s, _)| *s == new.status) {
                    Some(at) => at,
                    None => {
                        let max = sqlx::query_scalar::<$db, i64>(
                            "select coalesce(max(position), 0) from issue where workspace_id = $1 and status = $2",
                        )
                        .bind(ws)
                        .bind(new.status)
                        .fetch_one(&mut *tx)
                        .await?;
                        positions.push((new.status, max));
                        positions.len() - 1
                    }
                };
                positions[at].1 += 1024;
                let number = last - count + 1 + i64::try_from(i)?;
                rows.push((IssueId::new(), number, positions[at].1, new));
            }
            let now = chrono::Utc::now();
            for chunk in rows.chunks(CHUNK) {
                let mut qb = sqlx::QueryBuilder::<$db>::new(
                    "insert into issue (issue_id, workspace_id, number, title, body, status, priority, \
                     assignee_user_id, assignee_agent_id, labels, parent_issue_id, position, created_by, \
                     created_at, updated_at) ",
                );
                qb.push_values(chunk, |mut row, (id, number, position, new)| {
                    let (user, agent) = super::issues::assignee_columns(new.assignee);
                    row.push_bind(*id)
                        .push_bind(ws)
                        .push_bind(*number)
                        .push_bind(&new.title)
                        .push_bind(&new.body)
                        .push_bind(new.status)
                        .push_bind(new.priority)
                        .push_bind(user)
                        .push_bind(agent)
                        .push_bind(sqlx::types::Json(&new.labels))
                        .push_bind(new.parent)
                        .push_bind(*position)
                        .push_bind(new.created_by)
                        .push_bind(now)
                        .push_bind(now);
                });
                qb.build().execute(&mut *tx).await?;
                let mut qb = sqlx::QueryBuilder::<$db>::new(
                    "insert into issue_activity (issue_activity_id, issue_id, actor_user_id, actor_agent_id, \
                     kind, detail, created_at) ",
                );
                qb.push_values(chunk, |mut row, (id, _, _, new)| {
                    row.push_bind(ActivityId::new())
                        .push_bind(*id)
                        .push_bind(new.created_by)
                        .push_bind(None::<AgentId>)
                        .push_bind(ActivityKind::Created)
                        .push_bind(sqlx::types::Json(serde_json::json!({ "status": new.status })))
                        .push_bind(now);
                });
                qb.build().execute(&mut *tx).await?;
            }
            tx.commit().await?;
            $conn.close().await?;
            Ok(())
        }};
    }
    match url {
        DatabaseUrl::Postgres(raw) => {
            let mut conn = PgConnection::connect(raw).await?;
            bulk!(sqlx::Postgres, conn)
        }
        DatabaseUrl::Sqlite(path) => {
            let options = SqliteConnectOptions::new()
                .filename(path)
                .journal_mode(SqliteJournalMode::Wal)
                .synchronous(SqliteSynchronous::Normal);
            let mut conn = SqliteConnection::connect_with(&options).await?;
            bulk!(sqlx::Sqlite, conn)
        }
    }
}

/// Test data for past days (issue 15): moves run `run` of the database at `url` so it was queued at
/// `created_at`, shifting its start and end by as much, so its duration stays what the engine measured.
/// Only the timestamps change; the run itself went through the normal engine.
pub async fn move_run_to(
    url: &DatabaseUrl,
    run: RunId,
    created_at: chrono::DateTime<chrono::Utc>,
) -> anyhow::Result<()> {
    type Times = (
        chrono::DateTime<chrono::Utc>,
        Option<chrono::DateTime<chrono::Utc>>,
        Option<chrono::DateTime<chrono::Utc>>,
    );
    macro_rules! shift {
        ($db:ty, $conn:ident) => {{
            let (old, started, finished) = sqlx::query_as::<$db, Times>(
                "select created_at, started_at, finished_at from run where run_id = $1",
            )
            .bind(run)
            .fetch_one(&mut $conn)
            .await
            .context("no such run")?;
            let by = created_at - old;
            sqlx::query::<$db>(
                "update run set created_at = $2, started_at = $3, finished_at = $4 where run_id = $1",
            )
            .bind(run)
            .bind(created_at)
            .bind(started.map(|t| t + by))
            .bind(finished.map(|t| t + by))
            .execute(&mut $conn)
            .await?;
            $conn.close().await?;
            Ok(())
        }};
    }
    match url {
        DatabaseUrl::Postgres(raw) => {
            let mut conn = PgConnection::connect(raw).await?;
            shift!(sqlx::Postgres, conn)
        }
        DatabaseUrl::Sqlite(path) => {
            let mut conn =
                SqliteConnection::connect_with(&SqliteConnectOptions::new().filename(path)).await?;
            shift!(sqlx::Sqlite, conn)
        }
    }
}

fn is_identifier(name: &str) -> bool {
    !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
}

/// An open PostgreSQL transaction holding a key-share lock on a run, as a transaction inserting a row
/// that references the run (a comment, an inbox item) holds one until it ends. Dropped, it rolls back.
pub struct KeyShareLock {
    _conn: PgConnection,
}

/// Takes a key-share lock on `run` in a transaction of its own, kept open until the lock is dropped.
pub async fn key_share_lock_on_run(url: &str, run: RunId) -> anyhow::Result<KeyShareLock> {
    let mut conn = PgConnection::connect(url).await?;
    sqlx::raw_sql("begin").execute(&mut conn).await?;
    sqlx::query("select 1 from run where run_id = $1 for key share")
        .bind(run)
        .execute(&mut conn)
        .await?;
    Ok(KeyShareLock { _conn: conn })
}
