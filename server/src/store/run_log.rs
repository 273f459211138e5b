//! The run log: a run's events, stored idempotently by seq (under the claim's lease when a runner sends
//! them, several runs per group commit) and read back in order or as a tail.

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use sqlx::types::Json;

use super::{Error, Result};
use crate::domain::{NewRunEvent, RunEvent, RunId, RunStatus, Seq};

/// One run's events for [`RunLogStore::append_leased_events`], under the epoch of the claim that sends them.
#[derive(Debug, Clone, Copy)]
pub struct LeasedEvents<'a> {
    pub run: RunId,
    pub epoch: i64,
    pub events: &'a [NewRunEvent],
}

/// The run log use-cases: appending and reading run events.
#[async_trait]
pub trait RunLogStore: Send + Sync {
    /// Stores events idempotently on `(run_id, seq)` (a resent event is ignored) and returns the highest
    /// seq now stored for the run.
    async fn append_run_events(&self, run: RunId, events: &[NewRunEvent]) -> Result<Seq>;
    /// Like [`RunLogStore::append_run_events`], but only while the run is claimed or running at `epoch`,
    /// checked in the same transaction as the insert: `run_lease` (and nothing written) otherwise.
    async fn append_leased_run_events(
        &self,
        run: RunId,
        epoch: i64,
        events: &[NewRunEvent],
    ) -> Result<Seq>;
    /// [`RunLogStore::append_leased_run_events`] for several runs in one transaction (a group commit): per
    /// batch, in order, the highest seq now stored for its run, or `run_lease` / `NotFound` when that
    /// run is not live under its epoch (nothing of it written; the others are). An error of the whole
    /// call writes nothing.
    async fn append_leased_events(&self, batches: &[LeasedEvents<'_>]) -> Result<Vec<Result<Seq>>>;
    /// Up to `limit` events with `seq > after`, in order.
    async fn run_events_since(&self, run: RunId, after: Seq, limit: i64) -> Result<Vec<RunEvent>>;
    /// The last `limit` events of a run, in order (a log's tail).
    async fn run_events_tail(&self, run: RunId, limit: i64) -> Result<Vec<RunEvent>>;
    /// The last event of `kind` a run stored, if any.
    async fn last_run_event_of_kind(&self, run: RunId, kind: &str) -> Result<Option<RunEvent>>;
}

#[derive(sqlx::FromRow)]
pub(super) struct RunEventRow {
    run_id: RunId,
    seq: i64,
    at: DateTime<Utc>,
    kind: String,
    payload: Json<serde_json::Value>,
}

impl From<RunEventRow> for RunEvent {
    fn from(r: RunEventRow) -> Self {
        RunEvent {
            run_id: r.run_id,
            seq: r.seq,
            at: r.at,
            kind: r.kind,
            payload: r.payload.0,
        }
    }
}

/// A run's highest stored seq (0 before any): one index seek.
pub(super) const LAST_SEQ: &str = "select coalesce(max(seq), 0) from run_event where run_id = $1";

/// Whether a batch of events may be stored for a run found as `live` (its status and lease epoch, `None`
/// when there is no such run) by a runner holding it at `epoch`.
pub(super) fn lease_outcome(live: Option<(RunStatus, i64)>, epoch: i64) -> super::Result<()> {
    match live {
        None => Err(Error::NotFound),
        Some((status, held)) if !status.is_active() || held != epoch => {
            Err(Error::conflict("run_lease"))
        }
        Some(_) => Ok(()),
    }
}

/// Refuses events numbered below 1 (seq 0 is the cursor "before all").
pub(super) fn check_seqs(events: &[crate::domain::NewRunEvent]) -> super::Result<()> {
    match events.iter().find(|e| e.seq < 1) {
        Some(bad) => {
            Err(anyhow::anyhow!("run event seq must be at least 1, got {}", bad.seq).into())
        }
        None => Ok(()),
    }
}

/// Writes `impl RunLogStore for $store` on database `$db`; `impl_store!` expands it once per backend.
macro_rules! impl_run_log_store {
    ($store:ty, $db:ty) => {
        const _: () = {
            use $crate::domain::*;
            use $crate::store::run_log::*;
            use $crate::store::{Error, Result};

            #[async_trait::async_trait]
            impl RunLogStore for $store {
                async fn append_run_events(&self, run: RunId, events: &[NewRunEvent]) -> Result<Seq> {
                    check_seqs(events)?;
                    let mut tx = self.begin_write().await?;
                    sqlx::query_scalar::<$db, RunId>("select run_id from run where run_id = $1")
                        .bind(run).fetch_one(&mut *tx).await?;
                    let rows: Vec<_> = events.iter().map(|e| (run, e)).collect();
                    Self::insert_event_rows(&mut tx, &rows).await?;
                    let last = sqlx::query_scalar::<$db, i64>(LAST_SEQ)
                        .bind(run).fetch_one(&mut *tx).await?;
                    tx.commit().await?;
                    Ok(last)
                }

                async fn append_leased_run_events(&self, run: RunId, epoch: i64, events: &[NewRunEvent]) -> Result<Seq> {
                    let batch = $crate::store::LeasedEvents { run, epoch, events };
                    self.append_leased_events(&[batch]).await?
                        .pop()
                        .unwrap_or(Err(Error::NotFound))
                }

                async fn append_leased_events(&self, batches: &[$crate::store::LeasedEvents<'_>]) -> Result<Vec<Result<Seq>>> {
                    for batch in batches {
                        check_seqs(batch.events)?;
                    }
                    if batches.is_empty() {
                        return Ok(Vec::new());
                    }
                    self.append_leased_rows(batches).await
                }

                async fn run_events_since(&self, run: RunId, after: Seq, limit: i64) -> Result<Vec<RunEvent>> {
                    let rows = sqlx::query_as::<$db, RunEventRow>(
                        "select run_id, seq, at, kind, payload from run_event where run_id = $1 and seq > $2 order by seq limit $3")
                        .bind(run).bind(after).bind(limit).fetch_all(&self.pool).await?;
                    Ok(rows.into_iter().map(Into::into).collect())
                }

                async fn run_events_tail(&self, run: RunId, limit: i64) -> Result<Vec<RunEvent>> {
                    let rows = sqlx::query_as::<$db, RunEventRow>(
                        "select run_id, seq, at, kind, payload from run_event where run_id = $1 \
                         order by seq desc limit $2")
                        .bind(run).bind(limit).fetch_all(&self.pool).await?;
                    let mut events: Vec<RunEvent> = rows.into_iter().map(Into::into).collect();
                    events.reverse();
                    Ok(events)
                }

                async fn last_run_event_of_kind(&self, run: RunId, kind: &str) -> Result<Option<RunEvent>> {
                    let row = sqlx::query_as::<$db, RunEventRow>(
                        "select run_id, seq, at, kind, payload from run_event where run_id = $1 and kind = $2 \
                         order by seq desc limit 1")
                        .bind(run).bind(kind).fetch_optional(&self.pool).await?;
                    Ok(row.map(Into::into))
                }
            }
        };
    };
}
pub(super) use impl_run_log_store;
