//! Ensembles: saved ensembles, and ensemble runs (candidates queued together, a blind review, a person's
//! choice). The run insert the candidates use is `runs.rs`'s `insert_run!`.

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use sqlx::types::Json;

use super::Result;
use crate::domain::{
    Ensemble, EnsembleId, EnsembleName, EnsembleRun, EnsembleRunId, EnsembleSettings,
    EnsembleStatus, IssueId, NewEnsembleRun, NewRun, ReviewOutcome, Run, RunId, UserId,
    WorkspaceId,
};

/// The ensemble use-cases.
#[async_trait]
pub trait EnsembleStore: Send + Sync {
    /// Creates an ensemble (`ensemble_workspace_name_key` on a duplicate name); the caller validated
    /// `settings` and that its agents are the workspace's.
    async fn create_ensemble(
        &self,
        ws: WorkspaceId,
        name: &EnsembleName,
        settings: &EnsembleSettings,
    ) -> Result<Ensemble>;
    /// An ensemble by name within `ws`.
    async fn get_ensemble_by_name(&self, ws: WorkspaceId, name: &EnsembleName) -> Result<Ensemble>;
    /// A workspace's ensembles, by name.
    async fn list_ensembles(&self, ws: WorkspaceId) -> Result<Vec<Ensemble>>;
    /// Replaces an ensemble's name and settings (runs under way keep their snapshot).
    async fn update_ensemble(
        &self,
        ws: WorkspaceId,
        id: EnsembleId,
        name: &EnsembleName,
        settings: &EnsembleSettings,
    ) -> Result<Ensemble>;
    /// Deletes an ensemble; its runs stay, with their snapshot.
    async fn delete_ensemble(&self, ws: WorkspaceId, id: EnsembleId) -> Result<()>;
    /// Creates an ensemble run numbered after the issue's previous ones and queues `candidates` as its
    /// runs, atomically (`run_one_active_key` when a member already has a live run on the issue: then
    /// nothing is written).
    async fn create_ensemble_run(
        &self,
        new: &NewEnsembleRun,
        candidates: &[NewRun],
    ) -> Result<(EnsembleRun, Vec<Run>)>;
    /// An ensemble run by id.
    async fn get_ensemble_run(&self, id: EnsembleRunId) -> Result<EnsembleRun>;
    /// An issue's ensemble runs, by number.
    async fn list_ensemble_runs(&self, issue: IssueId) -> Result<Vec<EnsembleRun>>;
    /// The latest ensemble run of every issue of `ws` that has one (the board's indicators).
    async fn latest_ensemble_runs(&self, ws: WorkspaceId) -> Result<Vec<EnsembleRun>>;
    /// The runs of an ensemble run (its candidates and its reviewer), oldest first.
    async fn list_ensemble_members_runs(&self, id: EnsembleRunId) -> Result<Vec<Run>>;
    /// Records why candidates were stopped early, unless a reason is already recorded; `false` then.
    async fn note_ensemble_stop(&self, id: EnsembleRunId, reason: &str) -> Result<bool>;
    /// Queues the blind review and marks the ensemble run `reviewing` with the labels the reviewer sees,
    /// atomically; only from `running` (`ensemble_run_status` otherwise: another replica started it).
    async fn start_ensemble_review(
        &self,
        id: EnsembleRunId,
        review: &NewRun,
        labels: &[(char, RunId)],
    ) -> Result<Run>;
    /// Marks a running or reviewing ensemble run `decided` with the review's outcome, if any; `None`
    /// when it was already decided or chosen (nothing changed).
    async fn decide_ensemble_run(
        &self,
        id: EnsembleRunId,
        review: Option<&ReviewOutcome>,
    ) -> Result<Option<EnsembleRun>>;
    /// Records the person's choice (and the merge commit, when merged): `ensemble_run_chosen` when a
    /// candidate was already chosen or `run` is not one of its runs.
    async fn choose_ensemble_candidate(
        &self,
        id: EnsembleRunId,
        run: RunId,
        by: UserId,
        merged_commit: Option<&str>,
    ) -> Result<EnsembleRun>;
}

#[derive(sqlx::FromRow)]
pub(super) struct EnsembleRow {
    ensemble_id: EnsembleId,
    workspace_id: WorkspaceId,
    name: EnsembleName,
    settings: Json<EnsembleSettings>,
    created_at: DateTime<Utc>,
    updated_at: DateTime<Utc>,
}

impl From<EnsembleRow> for Ensemble {
    fn from(r: EnsembleRow) -> Self {
        Ensemble {
            id: r.ensemble_id,
            workspace_id: r.workspace_id,
            name: r.name,
            settings: r.settings.0,
            created_at: r.created_at,
            updated_at: r.updated_at,
        }
    }
}

#[derive(sqlx::FromRow)]
pub(super) struct EnsembleRunRow {
    ensemble_run_id: EnsembleRunId,
    workspace_id: WorkspaceId,
    issue_id: IssueId,
    ensemble_id: Option<EnsembleId>,
    name: String,
    number: i32,
    settings: Json<EnsembleSettings>,
    base_commit: Option<String>,
    base_branch: Option<String>,
    status: EnsembleStatus,
    stop_reason: Option<String>,
    review_run_id: Option<RunId>,
    review_labels: Option<Json<Vec<(char, RunId)>>>,
    review: Option<Json<ReviewOutcome>>,
    chosen_run_id: Option<RunId>,
    chosen_by: Option<UserId>,
    merged_commit: Option<String>,
    created_at: DateTime<Utc>,
    decided_at: Option<DateTime<Utc>>,
}

impl From<EnsembleRunRow> for EnsembleRun {
    fn from(r: EnsembleRunRow) -> Self {
        EnsembleRun {
            id: r.ensemble_run_id,
            workspace_id: r.workspace_id,
            issue_id: r.issue_id,
            ensemble_id: r.ensemble_id,
            name: r.name,
            number: r.number,
            settings: r.settings.0,
            base_commit: r.base_commit,
            base_branch: r.base_branch,
            status: r.status,
            stop_reason: r.stop_reason,
            review_run_id: r.review_run_id,
            review_labels: r.review_labels.map(|l| l.0).unwrap_or_default(),
            review: r.review.map(|r| r.0),
            chosen_run_id: r.chosen_run_id,
            chosen_by: r.chosen_by,
            merged_commit: r.merged_commit,
            created_at: r.created_at,
            decided_at: r.decided_at,
        }
    }
}

macro_rules! ensemble_cols {
    () => {
        "ensemble_id, workspace_id, name, settings, created_at, updated_at"
    };
}
pub(super) use ensemble_cols;

macro_rules! ensemble_run_cols { () => {
    "ensemble_run_id, workspace_id, issue_id, ensemble_id, name, number, settings, base_commit, base_branch, \
     status, stop_reason, review_run_id, review_labels, review, chosen_run_id, chosen_by, merged_commit, \
     created_at, decided_at"
} }
pub(super) use ensemble_run_cols;

/// Writes `impl EnsembleStore for $store` on database `$db`; `impl_store!` expands it once per backend.
macro_rules! impl_ensembles_store {
    ($store:ty, $db:ty) => {
        const _: () = {
            use $crate::domain::*;
            use $crate::store::common::*;
            use $crate::store::ensembles::*;
            use $crate::store::rows::*;
            use $crate::store::runs::*;
            use $crate::store::{Error, Result};

            #[async_trait::async_trait]
            impl EnsembleStore for $store {
                async fn create_ensemble(&self, ws: WorkspaceId, name: &EnsembleName, settings: &EnsembleSettings) -> Result<Ensemble> {
                    let at = now();
                    let row = sqlx::query_as::<$db, EnsembleRow>(concat!(
                        "insert into ensemble (ensemble_id, workspace_id, name, settings, created_at, updated_at) ",
                        "values ($1, $2, $3, $4, $5, $5) returning ", ensemble_cols!()))
                        .bind(EnsembleId::new()).bind(ws).bind(name.as_str()).bind(sqlx::types::Json(settings)).bind(at)
                        .fetch_one(&self.pool).await?;
                    Ok(row.into())
                }

                async fn get_ensemble_by_name(&self, ws: WorkspaceId, name: &EnsembleName) -> Result<Ensemble> {
                    let row = sqlx::query_as::<$db, EnsembleRow>(concat!(
                        "select ", ensemble_cols!(), " from ensemble where workspace_id = $1 and name = $2"))
                        .bind(ws).bind(name.as_str()).fetch_one(&self.pool).await?;
                    Ok(row.into())
                }

                async fn list_ensembles(&self, ws: WorkspaceId) -> Result<Vec<Ensemble>> {
                    let rows = sqlx::query_as::<$db, EnsembleRow>(concat!(
                        "select ", ensemble_cols!(), " from ensemble where workspace_id = $1 order by name"))
                        .bind(ws).fetch_all(&self.pool).await?;
                    Ok(rows.into_iter().map(Into::into).collect())
                }

                async fn update_ensemble(&self, ws: WorkspaceId, id: EnsembleId, name: &EnsembleName, settings: &EnsembleSettings) -> Result<Ensemble> {
                    let row = sqlx::query_as::<$db, EnsembleRow>(concat!(
                        "update ensemble set name = $3, settings = $4, updated_at = $5 ",
                        "where ensemble_id = $1 and workspace_id = $2 returning ", ensemble_cols!()))
                        .bind(id).bind(ws).bind(name.as_str()).bind(sqlx::types::Json(settings)).bind(now())
                        .fetch_one(&self.pool).await?;
                    Ok(row.into())
                }

                async fn delete_ensemble(&self, ws: WorkspaceId, id: EnsembleId) -> Result<()> {
                    let done = sqlx::query::<$db>("delete from ensemble where ensemble_id = $1 and workspace_id = $2")
                        .bind(id).bind(ws).execute(&self.pool).await?;
                    if done.rows_affected() == 0 { return Err(Error::NotFound); }
                    Ok(())
                }

                async fn create_ensemble_run(&self, new: &NewEnsembleRun, candidates: &[NewRun]) -> Result<(EnsembleRun, Vec<Run>)> {
                    let (id, mut tx) = (EnsembleRunId::new(), self.begin_write().await?);
                    let number = sqlx::query_scalar::<$db, i32>(
                        "select cast(coalesce(max(number), 0) + 1 as integer) from ensemble_run where issue_id = $1")
                        .bind(new.issue_id).fetch_one(&mut *tx).await?;
                    let row = sqlx::query_as::<$db, EnsembleRunRow>(concat!(
                        "insert into ensemble_run (ensemble_run_id, workspace_id, issue_id, ensemble_id, name, number, settings, ",
                        "base_commit, base_branch, status, created_at) values ($1, $2, $3, $4, $5, $6, $7, $8, $9, 'running', $10) ",
                        "returning ", ensemble_run_cols!()))
                        .bind(id).bind(new.workspace_id).bind(new.issue_id).bind(new.ensemble_id).bind(&new.name).bind(number)
                        .bind(sqlx::types::Json(&new.settings)).bind(new.base_commit.as_deref()).bind(new.base_branch.as_deref())
                        .bind(now())
                        .fetch_one(&mut *tx).await?;
                    let mut runs = Vec::with_capacity(candidates.len());
                    for candidate in candidates {
                        let candidate = NewRun { ensemble_run_id: Some(id), ..candidate.clone() };
                        let run = insert_run!($db, &mut *tx, RunId::new(), candidate)?;
                        runs.push(run.into());
                    }
                    tx.commit().await?;
                    Ok((row.into(), runs))
                }

                async fn get_ensemble_run(&self, id: EnsembleRunId) -> Result<EnsembleRun> {
                    let row = sqlx::query_as::<$db, EnsembleRunRow>(concat!(
                        "select ", ensemble_run_cols!(), " from ensemble_run where ensemble_run_id = $1"))
                        .bind(id).fetch_one(&self.pool).await?;
                    Ok(row.into())
                }

                async fn list_ensemble_runs(&self, issue: IssueId) -> Result<Vec<EnsembleRun>> {
                    let rows = sqlx::query_as::<$db, EnsembleRunRow>(concat!(
                        "select ", ensemble_run_cols!(), " from ensemble_run where issue_id = $1 order by number"))
                        .bind(issue).fetch_all(&self.pool).await?;
                    Ok(rows.into_iter().map(Into::into).collect())
                }

                async fn latest_ensemble_runs(&self, ws: WorkspaceId) -> Result<Vec<EnsembleRun>> {
                    let rows = sqlx::query_as::<$db, EnsembleRunRow>(concat!(
                        "select ", ensemble_run_cols!(), " from ensemble_run e where e.workspace_id = $1 and not exists (",
                        "select 1 from ensemble_run n where n.issue_id = e.issue_id and n.number > e.number) ",
                        "order by e.created_at"))
                        .bind(ws).fetch_all(&self.pool).await?;
                    Ok(rows.into_iter().map(Into::into).collect())
                }

                async fn list_ensemble_members_runs(&self, id: EnsembleRunId) -> Result<Vec<Run>> {
                    let rows = sqlx::query_as::<$db, RunRow>(concat!("select ", run_cols!(), " from run ",
                        "where ensemble_run_id = $1 order by created_at, run_id"))
                        .bind(id).fetch_all(&self.pool).await?;
                    Ok(rows.into_iter().map(Into::into).collect())
                }

                async fn note_ensemble_stop(&self, id: EnsembleRunId, reason: &str) -> Result<bool> {
                    let done = sqlx::query::<$db>(
                        "update ensemble_run set stop_reason = $2 where ensemble_run_id = $1 and stop_reason is null")
                        .bind(id).bind(reason).execute(&self.pool).await?;
                    Ok(done.rows_affected() > 0)
                }

                async fn start_ensemble_review(&self, id: EnsembleRunId, review: &NewRun, labels: &[(char, RunId)]) -> Result<Run> {
                    let mut tx = self.begin_write().await?;
                    let status = sqlx::query_scalar::<$db, EnsembleStatus>(
                        "select status from ensemble_run where ensemble_run_id = $1")
                        .bind(id).fetch_one(&mut *tx).await?;
                    if status != EnsembleStatus::Running {
                        return Err(Error::conflict("ensemble_run_status"));
                    }
                    let run_id = RunId::new();
                    let review = NewRun { ensemble_run_id: Some(id), ..review.clone() };
                    let run: Run = insert_run!($db, &mut *tx, run_id, review)?.into();
                    let done = sqlx::query::<$db>(
                        "update ensemble_run set status = 'reviewing', review_run_id = $2, review_labels = $3 \
                         where ensemble_run_id = $1 and status = 'running'")
                        .bind(id).bind(run_id).bind(sqlx::types::Json(labels)).execute(&mut *tx).await?;
                    if done.rows_affected() == 0 {
                        return Err(Error::conflict("ensemble_run_status"));
                    }
                    tx.commit().await?;
                    Ok(run)
                }

                async fn decide_ensemble_run(&self, id: EnsembleRunId, review: Option<&ReviewOutcome>) -> Result<Option<EnsembleRun>> {
                    let row = sqlx::query_as::<$db, EnsembleRunRow>(concat!(
                        "update ensemble_run set status = 'decided', review = coalesce($2, review), decided_at = $3 ",
                        "where ensemble_run_id = $1 and status in ('running', 'reviewing') returning ", ensemble_run_cols!()))
                        .bind(id).bind(review.map(sqlx::types::Json)).bind(now())
                        .fetch_optional(&self.pool).await?;
                    Ok(row.map(Into::into))
                }

                async fn choose_ensemble_candidate(&self, id: EnsembleRunId, run: RunId, by: UserId, merged_commit: Option<&str>) -> Result<EnsembleRun> {
                    let row = sqlx::query_as::<$db, EnsembleRunRow>(concat!(
                        "update ensemble_run set status = 'chosen', chosen_run_id = $2, chosen_by = $3, merged_commit = $4, ",
                        "decided_at = coalesce(decided_at, $5) where ensemble_run_id = $1 and status <> 'chosen' ",
                        "and exists (select 1 from run where run_id = $2 and ensemble_run_id = $1) returning ", ensemble_run_cols!()))
                        .bind(id).bind(run).bind(by).bind(merged_commit).bind(now())
                        .fetch_optional(&self.pool).await?;
                    match row {
                        Some(row) => Ok(row.into()),
                        None => {
                            EnsembleStore::get_ensemble_run(self, id).await?;
                            Err(Error::conflict("ensemble_run_chosen"))
                        }
                    }
                }
            }
        };
    };
}
pub(super) use impl_ensembles_store;
