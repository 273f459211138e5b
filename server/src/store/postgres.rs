//! The PostgreSQL backend, for teams: several replicas share one database.
//!
//! Claims use `select … for no key update skip locked` so replicas never wait on each other's candidate run, then
//! lock the agent row so two claimers cannot both pass its max-concurrent-runs check.

use std::time::Duration;

use anyhow::Context as _;
use chrono::{DateTime, Utc};
use sqlx::Connection as _;
use sqlx::postgres::{PgConnectOptions, PgConnection, PgPool, PgPoolOptions, PgSslMode};

use super::common::*;
use super::rows::*;
use super::run_log::lease_outcome;
use super::runs::{push_claim_scope, take_run};
use super::{Backend, Error, PoolOptions, Result};
use crate::domain::*;

/// Oldest PostgreSQL we run on (`server_version_num`).
const MIN_PG_VERSION: i32 = 130_000;

/// Notifications waiting for the relay before the listener waits for it.
const LISTEN_BUFFER: usize = 1024;

/// How often a claim retries after losing an agent's last free slot to another claimer.
const CLAIM_ATTEMPTS: usize = 8;

pub(super) struct PgStore {
    pool: PgPool,
}

impl PgStore {
    const BACKEND: Backend = Backend::Postgres;
    const LABEL_FILTER_OPEN: &'static str = " and i.labels @> jsonb_build_array(";
    const LABEL_FILTER_CLOSE: &'static str = "::text)";
    /// Every label used on an issue of workspace `$1`, once each.
    const DISTINCT_LABELS: &'static str = "select distinct l.value from issue i cross join jsonb_array_elements_text(i.labels) as l(value) where i.workspace_id = $1";
    /// An agent bound to no runner, or to the bound runner name that follows.
    const BOUND_OPEN: &'static str =
        " and (jsonb_array_length(a.runner_names) = 0 or a.runner_names @> jsonb_build_array(";
    const BOUND_CLOSE: &'static str = "::text))";

    /// Connects, checks the server's version and applies the migrations on one direct connection (the
    /// pool would only report a timeout, not why it failed), then opens the pool lazily: start-up sets up
    /// one connection before the first request, not three.
    pub(super) async fn connect(url: &str, options: PoolOptions) -> anyhow::Result<Self> {
        let redacted = super::DatabaseUrl::Postgres(url.to_owned()).redacted();
        let mut connect: PgConnectOptions = url
            .parse()
            .with_context(|| format!("invalid PostgreSQL URL {redacted}"))?;
        if loopback_without_sslmode(url, connect.get_host()) {
            // TLS to this machine protects nothing and costs a handshake per connection (~100 ms measured
            // with `prefer` against a server that has TLS on); a URL naming sslmode keeps its choice.
            connect = connect.ssl_mode(PgSslMode::Disable);
        }
        let fix = "check that it is running and that --database-url / MUSTER_DATABASE_URL is right";
        let mut first = tokio::time::timeout(
            options.acquire_timeout,
            PgConnection::connect_with(&connect),
        )
        .await
        .map_err(|_| {
            anyhow::anyhow!(
                "cannot connect to PostgreSQL at {redacted}: no answer within {:?}; {fix}",
                options.acquire_timeout
            )
        })?
        .map_err(|e| match missing_database(&e) {
            Some(message) => anyhow::anyhow!(
                "cannot connect to PostgreSQL at {redacted}: {message}; create it (`createdb {}`, or \
                 `create database \"{}\";` in psql) or name an existing one in --database-url / \
                 MUSTER_DATABASE_URL",
                connect.get_database().unwrap_or("muster"),
                connect.get_database().unwrap_or("muster"),
            ),
            None => anyhow::anyhow!("cannot connect to PostgreSQL at {redacted}: {e}; {fix}"),
        })?;
        let version = sqlx::query_scalar::<_, String>("show server_version_num")
            .fetch_one(&mut first)
            .await
            .context("cannot read the PostgreSQL server version")?;
        let version: i32 = version.parse().context("unexpected server_version_num")?;
        anyhow::ensure!(
            version >= MIN_PG_VERSION,
            "PostgreSQL {version} at {redacted} is too old: Muster needs 13 or newer"
        );
        super::testing::run_migrator_on(sqlx::migrate!("../migrations/postgres"), &mut first)
            .await?;
        first.close().await.ok();
        let pool = PgPoolOptions::new()
            .max_connections(options.max_connections)
            .acquire_timeout(options.acquire_timeout)
            .connect_lazy_with(connect);
        Ok(Self { pool })
    }

    async fn begin_write(&self) -> Result<sqlx::Transaction<'static, sqlx::Postgres>> {
        Ok(self.pool.begin().await?)
    }

    /// Inserts run events (of any runs), ignoring those already stored: one statement over column
    /// arrays (`unnest`), whatever the number of rows, so its plan is prepared once and a large group
    /// commit costs one round trip.
    async fn insert_event_rows(
        tx: &mut sqlx::Transaction<'static, sqlx::Postgres>,
        rows: &[(RunId, &NewRunEvent)],
    ) -> Result<()> {
        if rows.is_empty() {
            return Ok(());
        }
        let columns = EventColumns::of(rows);
        sqlx::query(
            "insert into run_event (run_id, seq, at, kind, payload) \
             select * from unnest($1::uuid[], $2::int8[], $3::timestamptz[], $4::text[], $5::jsonb[]) \
             on conflict (run_id, seq) do nothing",
        )
        .bind(columns.runs)
        .bind(columns.seqs)
        .bind(columns.ats)
        .bind(columns.kinds)
        .bind(columns.payloads)
        .execute(&mut **tx)
        .await?;
        Ok(())
    }

    /// [`super::RunLogStore::append_leased_events`] (checked, not empty) as one statement, so a group commit is
    /// one round trip: the runs' rows are read `for share` (a claim, a finish or an interruption waits
    /// until the events are committed, and one that committed first is seen), the events of the runs still
    /// held under their epoch are inserted, and each run's highest seq is read by one index seek (the
    /// statement does not see its own inserts, hence `greatest` with theirs).
    async fn append_leased_rows(
        &self,
        batches: &[super::LeasedEvents<'_>],
    ) -> Result<Vec<Result<Seq>>> {
        let batch_runs: Vec<uuid::Uuid> = batches.iter().map(|b| b.run.0).collect();
        let epochs: Vec<i64> = batches.iter().map(|b| b.epoch).collect();
        let rows: Vec<(RunId, &NewRunEvent)> = batches
            .iter()
            .flat_map(|b| b.events.iter().map(|e| (b.run, e)))
            .collect();
        let columns = EventColumns::of(&rows);
        let found = sqlx::query_as::<sqlx::Postgres, (RunId, Option<RunStatus>, Option<i64>, Option<i64>)>(
            "with batch as (select * from unnest($1::uuid[], $2::int8[]) as b(run_id, epoch)), \
             live as (select run_id, status, lease_epoch from run where run_id = any($1::uuid[]) for share), \
             held as (select b.run_id from batch b join live l on l.run_id = b.run_id \
                      where l.status in ('claimed', 'running') and l.lease_epoch = b.epoch), \
             ins as (insert into run_event (run_id, seq, at, kind, payload) \
                     select * from unnest($3::uuid[], $4::int8[], $5::timestamptz[], $6::text[], $7::jsonb[]) \
                       as e(run_id, seq, at, kind, payload) \
                     where e.run_id in (select run_id from held) \
                     on conflict (run_id, seq) do nothing returning run_id, seq) \
             select b.run_id, l.status, l.lease_epoch, greatest( \
                 (select e.seq from run_event e where e.run_id = b.run_id order by e.seq desc limit 1), \
                 (select max(i.seq) from ins i where i.run_id = b.run_id)) \
             from batch b left join live l on l.run_id = b.run_id",
        )
        .bind(batch_runs)
        .bind(epochs)
        .bind(columns.runs)
        .bind(columns.seqs)
        .bind(columns.ats)
        .bind(columns.kinds)
        .bind(columns.payloads)
        .fetch_all(&self.pool)
        .await?;
        Ok(batches
            .iter()
            .map(|batch| {
                let row = found.iter().find(|(run, ..)| *run == batch.run);
                let live = row.and_then(|(_, status, held, _)| Some(((*status)?, (*held)?)));
                lease_outcome(live, batch.epoch).map(|()| row.and_then(|r| r.3).unwrap_or(0))
            })
            .collect())
    }

    async fn ping_impl(&self) -> Result<()> {
        sqlx::query("select 1").execute(&self.pool).await?;
        Ok(())
    }

    async fn migrate_impl(&self) -> anyhow::Result<()> {
        super::testing::run_migrator(sqlx::migrate!("../migrations/postgres"), &self.pool).await
    }

    async fn close_impl(&self) {
        self.pool.close().await;
    }

    async fn notify_impl(&self, message: &str) -> Result<()> {
        sqlx::query("select pg_notify($1, $2)")
            .bind(super::NOTIFY_CHANNEL)
            .bind(message)
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    /// A dedicated listening connection (not from the pool's budget), forwarded by a task until the
    /// receiver is dropped; `PgListener::recv` reconnects after a lost connection.
    async fn listen_impl(&self) -> anyhow::Result<Option<tokio::sync::mpsc::Receiver<String>>> {
        let mut listener = sqlx::postgres::PgListener::connect_with(&self.pool)
            .await
            .context("cannot open the LISTEN connection")?;
        listener
            .listen(super::NOTIFY_CHANNEL)
            .await
            .context("cannot LISTEN for other replicas")?;
        let (tx, rx) = tokio::sync::mpsc::channel(LISTEN_BUFFER);
        // The listener holds one of the pool's connections: give it back as soon as the pool is being
        // closed, or `close()` would wait for it forever.
        let pool = self.pool.clone();
        tokio::spawn(async move {
            let mut closing = std::pin::pin!(pool.close_event());
            loop {
                let note = tokio::select! {
                    () = tx.closed() => return,
                    () = &mut closing => return,
                    note = listener.recv() => note,
                };
                match note {
                    Ok(note) => {
                        if tx.send(note.payload().to_owned()).await.is_err() {
                            return;
                        }
                    }
                    Err(e) => {
                        tracing::warn!(error = %e, "the LISTEN connection failed; reconnecting");
                        tokio::time::sleep(Duration::from_secs(1)).await;
                    }
                }
            }
        });
        Ok(Some(rx))
    }

    async fn claim(
        &self,
        runner: RunnerId,
        scope: &super::ClaimScope,
        now: DateTime<Utc>,
        lease_until: DateTime<Utc>,
    ) -> Result<Option<Run>> {
        for _ in 0..CLAIM_ATTEMPTS {
            let mut tx = self.pool.begin().await?;
            let mut qb = sqlx::QueryBuilder::<sqlx::Postgres>::new(
                "select r.run_id, r.agent_id, a.max_concurrent_runs from run r join agent a on a.agent_id = r.agent_id \
                 where r.status = 'queued' and (r.not_before is null or r.not_before <= ",
            );
            qb.push_bind(now).push(
                ") and (select count(*) from run x where x.agent_id = r.agent_id \
                 and x.status in ('claimed', 'running')) < a.max_concurrent_runs",
            );
            push_claim_scope!(qb, scope, Self::BOUND_OPEN, Self::BOUND_CLOSE);
            // `for no key update`, the strength the claim's own update takes: it does not conflict with
            // the key-share lock that a row referencing the run (its plan-run note, an inbox item, a
            // follow-up's answered comments) holds while that row's transaction is open. `for update`
            // did, and `skip locked` then passed over a run just queued, which waited for the idle tick.
            qb.push(" order by r.created_at, r.run_id limit 1 for no key update of r skip locked");
            let candidate = qb
                .build_query_as::<(RunId, AgentId, i32)>()
                .fetch_optional(&mut *tx)
                .await?;
            let Some((run, agent, max)) = candidate else {
                return Ok(None);
            };
            // Serialise claims per agent, then count again with a fresh snapshot.
            // Also `no key update`: new runs and comments naming the agent take key-share locks on it.
            sqlx::query("select 1 from agent where agent_id = $1 for no key update")
                .bind(agent)
                .execute(&mut *tx)
                .await?;
            let active = sqlx::query_scalar::<_, i64>(
                "select count(*) from run where agent_id = $1 and status in ('claimed', 'running')",
            )
            .bind(agent)
            .fetch_one(&mut *tx)
            .await?;
            if active >= i64::from(max) {
                tx.rollback().await?;
                tokio::time::sleep(Duration::from_millis(5)).await;
                continue;
            }
            let row = take_run!(sqlx::Postgres, tx, run, runner, now, lease_until);
            tx.commit().await?;
            return Ok(Some(row.into()));
        }
        Ok(None)
    }
}

impl_store!(PgStore, sqlx::Postgres);

/// The server's own words when the database named in the URL does not exist (SQLSTATE 3D000), without
/// the source position PostgreSQL adds ("at line 948" of its C file), which helps no one here.
fn missing_database(e: &sqlx::Error) -> Option<String> {
    let db = e.as_database_error()?;
    (db.code().as_deref() == Some("3D000")).then(|| db.message().to_owned())
}

/// Whether the server is on this machine (a loopback address, `localhost` or a Unix socket folder) and
/// the URL leaves the TLS mode to the default.
fn loopback_without_sslmode(url: &str, host: &str) -> bool {
    let names_mode = url
        .split_once('?')
        .is_some_and(|(_, query)| query.split('&').any(|kv| kv.starts_with("sslmode=")));
    let host = host.trim_start_matches('[').trim_end_matches(']');
    let local = host.starts_with('/')
        || host.eq_ignore_ascii_case("localhost")
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback());
    local && !names_mode
}

/// Run events as column arrays, for `unnest`.
struct EventColumns<'a> {
    runs: Vec<uuid::Uuid>,
    seqs: Vec<i64>,
    ats: Vec<DateTime<Utc>>,
    kinds: Vec<&'a str>,
    payloads: Vec<sqlx::types::Json<&'a serde_json::Value>>,
}

impl<'a> EventColumns<'a> {
    fn of(rows: &[(RunId, &'a NewRunEvent)]) -> Self {
        Self {
            runs: rows.iter().map(|(run, _)| run.0).collect(),
            seqs: rows.iter().map(|(_, e)| e.seq).collect(),
            ats: rows.iter().map(|(_, e)| e.at).collect(),
            kinds: rows.iter().map(|(_, e)| e.kind.as_str()).collect(),
            payloads: rows
                .iter()
                .map(|(_, e)| sqlx::types::Json(&e.payload))
                .collect(),
        }
    }
}

#[cfg(test)]
mod loopback_tests {
    use super::loopback_without_sslmode as local;

    #[test]
    fn only_a_local_server_without_a_chosen_mode_skips_tls() {
        assert!(local("postgres://u@127.0.0.1:5432/db", "127.0.0.1"));
        assert!(local("postgres://u@localhost/db", "localhost"));
        assert!(local("postgres://u@[::1]/db", "::1"));
        assert!(local(
            "postgres:///db?host=/run/postgresql",
            "/run/postgresql"
        ));
        assert!(!local(
            "postgres://u@127.0.0.1/db?sslmode=require",
            "127.0.0.1"
        ));
        assert!(!local("postgres://u@db.internal/db", "db.internal"));
        assert!(!local("postgres://u@10.0.0.5/db", "10.0.0.5"));
    }
}
