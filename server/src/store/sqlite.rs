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
use super::run_log::{LAST_SEQ, lease_outcome};
use super::runs::{push_claim_scope, take_run};
use super::{Backend, Error, PoolOptions, Result};
use crate::domain::*;

/// How long a writer waits for the write lock before giving up.
const BUSY_TIMEOUT: Duration = Duration::from_secs(10);

pub(super) struct SqliteStore {
    pool: SqlitePool,
    path: std::path::PathBuf,
}

impl SqliteStore {
    const BACKEND: Backend = Backend::Sqlite;
    const LABEL_FILTER_OPEN: &'static str =
        " and exists (select 1 from json_each(i.labels) where json_each.value = ";
    const LABEL_FILTER_CLOSE: &'static str = ")";
    /// Every label used on an issue of workspace `$1`, once each.
    const DISTINCT_LABELS: &'static str =
        "select distinct j.value from issue i, json_each(i.labels) j where i.workspace_id = $1";
    /// An agent bound to no runner, or to the bound runner name that follows.
    const BOUND_OPEN: &'static str = " and (json_array_length(a.runner_names) = 0 or exists \
         (select 1 from json_each(a.runner_names) where json_each.value = ";
    const BOUND_CLOSE: &'static str = "))";

    pub(super) async fn connect(path: &Path, options: PoolOptions) -> anyhow::Result<Self> {
        private_files(path)?;
        let connect = SqliteConnectOptions::new()
            .filename(path)
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            .synchronous(SqliteSynchronous::Normal)
            .foreign_keys(true)
            .busy_timeout(BUSY_TIMEOUT);
        // The first connection switches a new file to WAL, which SQLite may refuse at once ("database
        // is locked", its busy timeout not consulted) while another process does the same: processes
        // opening the database take turns, as they do to migrate. Without the lock (a folder that does
        // not exist, say) SQLite's own error says what is wrong.
        let lock = Self::lock_beside(path).await.ok();
        let pool = SqlitePoolOptions::new()
            .max_connections(options.max_connections)
            .acquire_timeout(options.acquire_timeout)
            .connect_with(connect)
            .await;
        drop(lock);
        let pool = pool.with_context(|| {
                format!(
                    "cannot open the SQLite database {}; check that its folder exists and is writable, or choose another with --data-dir",
                    path.display()
                )
            })?;
        Ok(Self {
            pool,
            path: path.to_path_buf(),
        })
    }

    async fn begin_write(&self) -> Result<sqlx::Transaction<'static, sqlx::Sqlite>> {
        Ok(self.pool.begin_with("BEGIN IMMEDIATE").await?)
    }

    /// Inserts run events (of any runs), ignoring those already stored: multi-row inserts of
    /// [`super::common::APPEND_CHUNK`] rows, one prepared statement per chunk size.
    async fn insert_event_rows(
        tx: &mut sqlx::Transaction<'static, sqlx::Sqlite>,
        rows: &[(RunId, &NewRunEvent)],
    ) -> Result<()> {
        for chunk in rows.chunks(super::common::APPEND_CHUNK) {
            let mut qb = sqlx::QueryBuilder::<sqlx::Sqlite>::new(
                "insert into run_event (run_id, seq, at, kind, payload) ",
            );
            qb.push_values(chunk, |mut row, (run, e)| {
                row.push_bind(*run)
                    .push_bind(e.seq)
                    .push_bind(e.at)
                    .push_bind(e.kind.as_str())
                    .push_bind(sqlx::types::Json(&e.payload));
            });
            qb.push(" on conflict (run_id, seq) do nothing");
            qb.build().execute(&mut **tx).await?;
        }
        Ok(())
    }

    /// [`super::RunLogStore::append_leased_events`] (checked, not empty): the write lock `BEGIN IMMEDIATE` takes
    /// keeps a claim, a finish or an interruption from committing between the lease check and the insert.
    async fn append_leased_rows(
        &self,
        batches: &[super::LeasedEvents<'_>],
    ) -> Result<Vec<Result<Seq>>> {
        let mut tx = self.begin_write().await?;
        let mut qb = sqlx::QueryBuilder::<sqlx::Sqlite>::new(
            "select run_id, status, lease_epoch from run where run_id in (",
        );
        let mut ids = qb.separated(", ");
        for batch in batches {
            ids.push_bind(batch.run);
        }
        qb.push(")");
        let live = qb
            .build_query_as::<(RunId, RunStatus, i64)>()
            .fetch_all(&mut *tx)
            .await?;
        let outcomes: Vec<Result<()>> = batches
            .iter()
            .map(|batch| {
                let found = live.iter().find(|(run, ..)| *run == batch.run);
                lease_outcome(found.map(|(_, status, held)| (*status, *held)), batch.epoch)
            })
            .collect();
        let rows: Vec<_> = batches
            .iter()
            .zip(&outcomes)
            .filter(|(_, o)| o.is_ok())
            .flat_map(|(b, _)| b.events.iter().map(|e| (b.run, e)))
            .collect();
        Self::insert_event_rows(&mut tx, &rows).await?;
        let mut results = Vec::with_capacity(batches.len());
        for (batch, outcome) in batches.iter().zip(outcomes) {
            results.push(match outcome {
                // One index seek per run: `max(seq) … group by run_id` scanned every event of the run
                // at every commit (measured: a run at 1,000 lines/s cost the server a whole core).
                Ok(()) => Ok(sqlx::query_scalar::<sqlx::Sqlite, i64>(LAST_SEQ)
                    .bind(batch.run)
                    .fetch_one(&mut *tx)
                    .await?),
                Err(e) => Err(e),
            });
        }
        tx.commit().await?;
        Ok(results)
    }

    async fn ping_impl(&self) -> Result<()> {
        sqlx::query("select 1").execute(&self.pool).await?;
        Ok(())
    }

    /// SQLite's migrator takes no lock of its own, so two processes starting on a new file at once (a
    /// server and `muster admin bootstrap`) would both create the tables. An advisory lock on a file beside
    /// the database serialises them; the second one then finds the migrations applied.
    async fn migrate_impl(&self) -> anyhow::Result<()> {
        let lock = Self::lock_beside(&self.path).await?;
        let result =
            super::testing::run_migrator(sqlx::migrate!("../migrations/sqlite"), &self.pool).await;
        drop(lock);
        result
    }

    /// An exclusive advisory lock on a file beside the database (`<name>.migrate-lock`), held until the
    /// file is dropped: what processes opening or migrating the same database take turns on.
    async fn lock_beside(db: &Path) -> anyhow::Result<std::fs::File> {
        let lock_path = db.with_extension("migrate-lock");
        tokio::task::spawn_blocking(move || -> anyhow::Result<std::fs::File> {
            let file = std::fs::OpenOptions::new()
                .create(true)
                .truncate(false)
                .write(true)
                .open(&lock_path)
                .with_context(|| format!("cannot open {}", lock_path.display()))?;
            file.lock()
                .with_context(|| format!("cannot lock {}", lock_path.display()))?;
            Ok(file)
        })
        .await
        .context("the database lock task failed")?
    }

    async fn close_impl(&self) {
        self.pool.close().await;
    }

    /// One process is the only replica: in-process wake-ups are enough.
    async fn notify_impl(&self, _message: &str) -> Result<()> {
        Ok(())
    }

    async fn listen_impl(&self) -> anyhow::Result<Option<tokio::sync::mpsc::Receiver<String>>> {
        Ok(None)
    }

    async fn claim(
        &self,
        runner: RunnerId,
        scope: &super::ClaimScope,
        now: DateTime<Utc>,
        lease_until: DateTime<Utc>,
    ) -> Result<Option<Run>> {
        let mut tx = self.begin_write().await?;
        let mut qb = sqlx::QueryBuilder::<sqlx::Sqlite>::new(
            "select r.run_id from run r join agent a on a.agent_id = r.agent_id \
             where r.status = 'queued' and (r.not_before is null or r.not_before <= ",
        );
        qb.push_bind(now).push(
            ") and (select count(*) from run x where x.agent_id = r.agent_id \
             and x.status in ('claimed', 'running')) < a.max_concurrent_runs",
        );
        push_claim_scope!(qb, scope, Self::BOUND_OPEN, Self::BOUND_CLOSE);
        qb.push(" order by r.created_at, r.run_id limit 1");
        let candidate = qb
            .build_query_scalar::<RunId>()
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

/// Creates the database file 0600 before SQLite does (SQLite would make it 0644; its `-wal` and `-shm`
/// files then take the database's mode), and tightens an existing database and its `-wal`/`-shm` that
/// others may read, with a log line.
fn private_files(path: &Path) -> anyhow::Result<()> {
    use std::os::unix::fs::{OpenOptionsExt as _, PermissionsExt as _};
    let created = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path);
    match created {
        Ok(_) => return Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        // A missing folder: let SQLite say so, with the hint it carries.
        Err(_) => return Ok(()),
    }
    for suffix in ["", "-wal", "-shm"] {
        let file = std::path::PathBuf::from(format!("{}{suffix}", path.display()));
        let Ok(meta) = std::fs::metadata(&file) else {
            continue;
        };
        let mode = meta.permissions().mode() & 0o777;
        if mode & 0o077 != 0 {
            std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600))
                .with_context(|| format!("cannot make {} private (0600)", file.display()))?;
            tracing::warn!(file = %file.display(), was = format!("{mode:o}"), "database file was open to other users; now 0600");
        }
    }
    Ok(())
}
