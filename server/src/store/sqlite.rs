//! The SQLite backend: the embedded default, one file in the data directory, WAL mode.
//!
//! SQLite has one writer at a time. Every multi-statement write starts with `BEGIN IMMEDIATE`, which takes
//! the write lock up front (waiting up to the busy timeout) instead of failing when a read transaction
//! tries to upgrade; that also makes a claim's read-then-update atomic, so no run is claimed twice.

use std::path::Path;
use std::time::Duration;

use anyhow::Context as _;
use chrono::{DateTime, Utc};
use sqlx::sqlite::{
    SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions, SqliteSynchronous,
};

use super::common::*;
use super::rows::*;
use super::{Backend, Error, PoolOptions, Result};
use crate::domain::*;

/// How long a writer waits for the write lock before giving up.
const BUSY_TIMEOUT: Duration = Duration::from_secs(10);

pub(super) struct SqliteStore {
    pool: SqlitePool,
}

impl SqliteStore {
    const BACKEND: Backend = Backend::Sqlite;
    const LABEL_FILTER_OPEN: &'static str =
        " and exists (select 1 from json_each(i.labels) where json_each.value = ";
    const LABEL_FILTER_CLOSE: &'static str = ")";

    pub(super) async fn connect(path: &Path, options: PoolOptions) -> anyhow::Result<Self> {
        let connect = SqliteConnectOptions::new()
            .filename(path)
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            .synchronous(SqliteSynchronous::Normal)
            .foreign_keys(true)
            .busy_timeout(BUSY_TIMEOUT);
        let pool = SqlitePoolOptions::new()
            .max_connections(options.max_connections)
            .acquire_timeout(options.acquire_timeout)
            .connect_with(connect)
            .await
            .with_context(|| {
                format!(
                    "cannot open the SQLite database {}; check that its folder exists and is writable, or choose another with --data-dir",
                    path.display()
                )
            })?;
        Ok(Self { pool })
    }

    async fn begin_write(&self) -> Result<sqlx::Transaction<'static, sqlx::Sqlite>> {
        Ok(self.pool.begin_with("BEGIN IMMEDIATE").await?)
    }

    async fn ping_impl(&self) -> Result<()> {
        sqlx::query("select 1").execute(&self.pool).await?;
        Ok(())
    }

    async fn migrate_impl(&self) -> anyhow::Result<()> {
        super::testing::run_migrator(sqlx::migrate!("../migrations/sqlite"), &self.pool).await
    }

    async fn close_impl(&self) {
        self.pool.close().await;
    }

    async fn claim(
        &self,
        runner: RunnerId,
        now: DateTime<Utc>,
        lease_until: DateTime<Utc>,
    ) -> Result<Option<Run>> {
        let mut tx = self.begin_write().await?;
        let candidate = sqlx::query_scalar::<_, RunId>(
            "select r.run_id from run r join agent a on a.agent_id = r.agent_id \
             where r.status = 'queued' and (r.not_before is null or r.not_before <= $1) \
             and (select count(*) from run x where x.agent_id = r.agent_id and x.status in ('claimed', 'running')) \
                 < a.max_concurrent_runs \
             order by r.created_at, r.run_id limit 1",
        )
        .bind(now)
        .fetch_optional(&mut *tx)
        .await?;
        let Some(run) = candidate else {
            return Ok(None);
        };
        let row = take_run!(sqlx::Sqlite, tx, run, runner, now, lease_until);
        tx.commit().await?;
        Ok(Some(row.into()))
    }
}

impl_store!(SqliteStore, sqlx::Sqlite);
