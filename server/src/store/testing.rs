//! Database administration that is not a use-case: applying migrations, and the scratch databases the
//! test suite creates and drops. Kept here because only `store/` may run SQL.

use anyhow::Context as _;
use sqlx::migrate::{MigrateError, Migrator};
use sqlx::sqlite::SqliteConnectOptions;
use sqlx::{Connection as _, PgConnection, SqliteConnection};

use super::DatabaseUrl;

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

fn is_identifier(name: &str) -> bool {
    !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
}
