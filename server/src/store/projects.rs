//! Projects: a workspace's issues grouped under a name, with their own repository and check command,
//! and how far each is (issues by status, runs, spend).

use async_trait::async_trait;
use chrono::{DateTime, NaiveDate, Utc};

use super::Result;
use crate::domain::{
    CHECK_TIMEOUT_DEFAULT_SECS, CheckSpec, IssueStatus, NewProject, Project, ProjectId, ProjectKey,
    ProjectName, ProjectPatch, ProjectStats, ProjectStatus, Usage, UserId, WorkspaceId,
};

/// The project use-cases.
#[async_trait]
pub trait ProjectStore: Send + Sync {
    /// Creates a project; `Conflict(project_key_key | project_name_key)` when the key or the name is
    /// taken in the workspace.
    async fn create_project(&self, ws: WorkspaceId, new: &NewProject) -> Result<Project>;
    /// Changes the fields a patch sets (same conflicts as create); `NotFound` when it is not in `ws`.
    async fn update_project(
        &self,
        ws: WorkspaceId,
        id: ProjectId,
        patch: &ProjectPatch,
    ) -> Result<Project>;
    /// Deletes a project; its issues stay, in no project.
    async fn delete_project(&self, ws: WorkspaceId, id: ProjectId) -> Result<()>;
    /// A workspace's projects: active ones first, then by name.
    async fn list_projects(&self, ws: WorkspaceId) -> Result<Vec<Project>>;
    /// A project by key.
    async fn get_project(&self, ws: WorkspaceId, key: &ProjectKey) -> Result<Project>;
    /// A project by id (any workspace).
    async fn get_project_by_id(&self, id: ProjectId) -> Result<Project>;
    /// Each of `ws`'s projects' issues by status, runs and spend (projects without issues left out).
    async fn project_stats(&self, ws: WorkspaceId) -> Result<Vec<(ProjectId, ProjectStats)>>;
}

macro_rules! project_cols {
    () => {
        "project_id, workspace_id, key, name, description, lead_user_id, status, target_date, repo_path, \
         check_command, check_timeout_secs, created_by, created_at, updated_at"
    };
}
pub(super) use project_cols;

#[derive(sqlx::FromRow)]
pub(super) struct ProjectRow {
    project_id: ProjectId,
    workspace_id: WorkspaceId,
    key: ProjectKey,
    name: ProjectName,
    description: String,
    lead_user_id: Option<UserId>,
    status: ProjectStatus,
    target_date: Option<NaiveDate>,
    repo_path: Option<String>,
    check_command: Option<String>,
    check_timeout_secs: Option<i32>,
    created_by: Option<UserId>,
    created_at: DateTime<Utc>,
    updated_at: DateTime<Utc>,
}

impl From<ProjectRow> for Project {
    fn from(r: ProjectRow) -> Self {
        Project {
            id: r.project_id,
            workspace_id: r.workspace_id,
            key: r.key,
            name: r.name,
            description: r.description,
            lead: r.lead_user_id,
            status: r.status,
            target_date: r.target_date,
            repo_path: r.repo_path,
            check: r.check_command.map(|command| CheckSpec {
                command,
                timeout_secs: r
                    .check_timeout_secs
                    .and_then(|s| u64::try_from(s).ok())
                    .unwrap_or(CHECK_TIMEOUT_DEFAULT_SECS),
            }),
            created_by: r.created_by,
            created_at: r.created_at,
            updated_at: r.updated_at,
        }
    }
}

#[derive(sqlx::FromRow)]
pub(super) struct SpendByProject {
    project_id: ProjectId,
    runs: i64,
    input_tokens: i64,
    output_tokens: i64,
    cache_read_tokens: i64,
    cache_write_tokens: i64,
    cost_usd: f64,
    unknown_runs: i64,
}

/// Folds the per-status counts and per-project spend into one entry per project, in `counts`' order.
pub(super) fn stats(
    counts: Vec<(ProjectId, IssueStatus, i64)>,
    spend: Vec<SpendByProject>,
) -> Vec<(ProjectId, ProjectStats)> {
    let mut out: Vec<(ProjectId, ProjectStats)> = Vec::new();
    for (project, status, n) in counts {
        match out.iter_mut().find(|(p, _)| *p == project) {
            Some((_, s)) => s.by_status.push((status, n)),
            None => out.push((
                project,
                ProjectStats {
                    by_status: vec![(status, n)],
                    ..ProjectStats::default()
                },
            )),
        }
    }
    for (_, s) in &mut out {
        s.by_status.sort_by_key(|(status, _)| {
            IssueStatus::ALL
                .iter()
                .position(|x| x == status)
                .unwrap_or(usize::MAX)
        });
    }
    for row in spend {
        if let Some((_, s)) = out.iter_mut().find(|(p, _)| *p == row.project_id) {
            s.runs = row.runs;
            s.usage = Usage {
                input_tokens: row.input_tokens,
                output_tokens: row.output_tokens,
                cache_read_tokens: row.cache_read_tokens,
                cache_write_tokens: row.cache_write_tokens,
                cost_usd: row.cost_usd,
                cost_unknown: row.unknown_runs > 0,
                cost_estimated: false,
            };
        }
    }
    out
}

/// Writes `impl ProjectStore for $store` on database `$db`; `impl_store!` expands it once per backend.
macro_rules! impl_projects_store {
    ($store:ty, $db:ty) => {
        const _: () = {
            use $crate::domain::*;
            use $crate::store::projects::{ProjectRow, ProjectStore, SpendByProject, project_cols, stats};
            use $crate::store::rows::now;
            use $crate::store::{Error, Result};

            #[async_trait::async_trait]
            impl ProjectStore for $store {
                async fn create_project(&self, ws: WorkspaceId, new: &NewProject) -> Result<Project> {
                    let (id, now) = (ProjectId::new(), now());
                    let row = sqlx::query_as::<$db, ProjectRow>(concat!(
                        "insert into project (project_id, workspace_id, key, name, description, lead_user_id, status, \
                         target_date, repo_path, check_command, check_timeout_secs, created_by, created_at, updated_at) \
                         values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $13) returning ", project_cols!()))
                        .bind(id).bind(ws).bind(&new.key).bind(&new.name).bind(&new.description).bind(new.lead)
                        .bind(new.status).bind(new.target_date).bind(new.repo_path.as_deref())
                        .bind(new.check.as_ref().map(|c| c.command.as_str()))
                        .bind(new.check.as_ref().map(|c| i32::try_from(c.timeout_secs).unwrap_or(i32::MAX)))
                        .bind(new.created_by).bind(now)
                        .fetch_one(&self.pool).await?;
                    Ok(row.into())
                }

                async fn update_project(&self, ws: WorkspaceId, id: ProjectId, patch: &ProjectPatch) -> Result<Project> {
                    let check = patch.check.as_ref().map(|c| c.as_ref());
                    let row = sqlx::query_as::<$db, ProjectRow>(concat!(
                        "update project set key = coalesce($3, key), name = coalesce($4, name), \
                         description = coalesce($5, description), \
                         lead_user_id = case when $6 then $7 else lead_user_id end, \
                         status = coalesce($8, status), \
                         target_date = case when $9 then $10 else target_date end, \
                         repo_path = case when $11 then $12 else repo_path end, \
                         check_command = case when $13 then $14 else check_command end, \
                         check_timeout_secs = case when $13 then $15 else check_timeout_secs end, \
                         updated_at = $16 where workspace_id = $1 and project_id = $2 returning ", project_cols!()))
                        .bind(ws).bind(id).bind(patch.key.as_ref()).bind(patch.name.as_ref())
                        .bind(patch.description.as_deref())
                        .bind(patch.lead.is_some()).bind(patch.lead.flatten())
                        .bind(patch.status)
                        .bind(patch.target_date.is_some()).bind(patch.target_date.flatten())
                        .bind(patch.repo_path.is_some()).bind(patch.repo_path.clone().flatten())
                        .bind(check.is_some()).bind(check.flatten().map(|c| c.command.as_str()))
                        .bind(check.flatten().map(|c| i32::try_from(c.timeout_secs).unwrap_or(i32::MAX)))
                        .bind(now())
                        .fetch_optional(&self.pool).await?;
                    row.map(Into::into).ok_or(Error::NotFound)
                }

                async fn delete_project(&self, ws: WorkspaceId, id: ProjectId) -> Result<()> {
                    let mut tx = self.begin_write().await?;
                    // Its issues stay, in no project (also what the foreign key does; said here so both
                    // backends agree whatever their foreign-key settings).
                    sqlx::query::<$db>("update issue set project_id = null where workspace_id = $1 and project_id = $2")
                        .bind(ws).bind(id).execute(&mut *tx).await?;
                    let done = sqlx::query::<$db>("delete from project where workspace_id = $1 and project_id = $2")
                        .bind(ws).bind(id).execute(&mut *tx).await?;
                    if done.rows_affected() == 0 {
                        return Err(Error::NotFound);
                    }
                    tx.commit().await?;
                    Ok(())
                }

                async fn list_projects(&self, ws: WorkspaceId) -> Result<Vec<Project>> {
                    let rows = sqlx::query_as::<$db, ProjectRow>(concat!(
                        "select ", project_cols!(), " from project where workspace_id = $1 \
                         order by case status when 'active' then 0 when 'planned' then 1 when 'paused' then 2 \
                         when 'completed' then 3 else 4 end, lower(name)"))
                        .bind(ws).fetch_all(&self.pool).await?;
                    Ok(rows.into_iter().map(Into::into).collect())
                }

                async fn get_project(&self, ws: WorkspaceId, key: &ProjectKey) -> Result<Project> {
                    let row = sqlx::query_as::<$db, ProjectRow>(concat!(
                        "select ", project_cols!(), " from project where workspace_id = $1 and key = $2"))
                        .bind(ws).bind(key).fetch_one(&self.pool).await?;
                    Ok(row.into())
                }

                async fn get_project_by_id(&self, id: ProjectId) -> Result<Project> {
                    let row = sqlx::query_as::<$db, ProjectRow>(concat!(
                        "select ", project_cols!(), " from project where project_id = $1"))
                        .bind(id).fetch_one(&self.pool).await?;
                    Ok(row.into())
                }

                async fn project_stats(&self, ws: WorkspaceId) -> Result<Vec<(ProjectId, ProjectStats)>> {
                    let counts = sqlx::query_as::<$db, (ProjectId, IssueStatus, i64)>(
                        "select project_id, status, count(*) from issue \
                         where workspace_id = $1 and project_id is not null group by project_id, status")
                        .bind(ws).fetch_all(&self.pool).await?;
                    let spend = sqlx::query_as::<$db, SpendByProject>(
                        "select i.project_id, count(*) as runs, \
                         cast(coalesce(sum(r.input_tokens), 0) as bigint) as input_tokens, \
                         cast(coalesce(sum(r.output_tokens), 0) as bigint) as output_tokens, \
                         cast(coalesce(sum(r.cache_read_tokens), 0) as bigint) as cache_read_tokens, \
                         cast(coalesce(sum(r.cache_write_tokens), 0) as bigint) as cache_write_tokens, \
                         coalesce(sum(r.cost_usd), 0.0) as cost_usd, \
                         cast(coalesce(sum(case when r.cost_unknown then 1 else 0 end), 0) as bigint) as unknown_runs \
                         from run r join issue i on i.issue_id = r.issue_id \
                         where i.workspace_id = $1 and i.project_id is not null group by i.project_id")
                        .bind(ws).fetch_all(&self.pool).await?;
                    Ok(stats(counts, spend))
                }
            }
        };
    };
}
pub(super) use impl_projects_store;
