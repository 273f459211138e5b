//! The planner's proposals: trees of sub-issues a plan run proposed for an issue, and their approval —
//! every sub-issue and dependency of a tree written in one transaction, or none of them.

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use sqlx::types::Json;

use super::Result;
use crate::domain::{
    AgentId, Issue, IssueId, NewProposal, PlannedIssue, Proposal, ProposalId, ProposalStatus,
    ProposedIssue, RunId, UserId, WorkspaceId,
};

/// The proposal use-cases.
#[async_trait]
pub trait ProposalStore: Send + Sync {
    /// Records a pending proposal for its issue; the issue's pending one, if any, is discarded in the
    /// same transaction (at most one waits for review).
    async fn create_proposal(&self, new: &NewProposal) -> Result<Proposal>;
    /// A proposal of `ws` (`NotFound` for another workspace's).
    async fn get_proposal(&self, ws: WorkspaceId, id: ProposalId) -> Result<Proposal>;
    /// An issue's proposals, newest first.
    async fn list_proposals(&self, issue: IssueId) -> Result<Vec<Proposal>>;
    /// Discards a pending proposal; `Conflict(plan_proposal_status)` when it was already decided.
    async fn discard_proposal(
        &self,
        ws: WorkspaceId,
        id: ProposalId,
        by: UserId,
    ) -> Result<Proposal>;
    /// Approves a pending proposal as edited (`items`, stored in place of what was proposed) and creates
    /// `planned` under the proposal's issue, in this order, in one transaction: each a `todo` sub-issue
    /// in the issue's project, assigned as planned, blocked by the planned issues its `blocked_by` names
    /// (indexes of earlier ones). `Conflict(plan_proposal_status)` when it was already decided; on any
    /// error nothing is written. Returns the proposal and the issues made, in order.
    async fn approve_proposal(
        &self,
        ws: WorkspaceId,
        id: ProposalId,
        items: &[ProposedIssue],
        planned: &[PlannedIssue],
        by: UserId,
    ) -> Result<(Proposal, Vec<Issue>)>;
}

macro_rules! proposal_cols {
    () => {
        "proposal_id, workspace_id, issue_id, run_id, agent_id, status, summary, items, created, \
         created_at, decided_at, decided_by"
    };
}
pub(super) use proposal_cols;

#[derive(sqlx::FromRow)]
pub(super) struct ProposalRow {
    proposal_id: ProposalId,
    workspace_id: WorkspaceId,
    issue_id: IssueId,
    run_id: Option<RunId>,
    agent_id: Option<AgentId>,
    status: ProposalStatus,
    summary: String,
    items: Json<Vec<ProposedIssue>>,
    created: Json<Vec<IssueId>>,
    created_at: DateTime<Utc>,
    decided_at: Option<DateTime<Utc>>,
    decided_by: Option<UserId>,
}

impl From<ProposalRow> for Proposal {
    fn from(r: ProposalRow) -> Self {
        Proposal {
            id: r.proposal_id,
            workspace_id: r.workspace_id,
            issue_id: r.issue_id,
            run_id: r.run_id,
            agent_id: r.agent_id,
            status: r.status,
            summary: r.summary,
            items: r.items.0,
            created: r.created.0,
            created_at: r.created_at,
            decided_at: r.decided_at,
            decided_by: r.decided_by,
        }
    }
}

/// Writes `impl ProposalStore for $store` on database `$db`; `impl_store!` expands it once per backend.
macro_rules! impl_proposals_store {
    ($store:ty, $db:ty) => {
        const _: () = {
            use $crate::domain::*;
            use $crate::store::issues::IssueStore;
            use $crate::store::proposals::{ProposalRow, ProposalStore, proposal_cols};
            use $crate::store::rows::now;
            use $crate::store::{Error, Result};

            impl $store {
                /// `Conflict(plan_proposal_status)` when the proposal exists in `ws` (so it was decided
                /// already), else `NotFound`.
                async fn undecidable(
                    tx: &mut sqlx::Transaction<'static, $db>,
                    ws: WorkspaceId,
                    id: ProposalId,
                ) -> Error {
                    let found = sqlx::query_scalar::<$db, ProposalId>(
                        "select proposal_id from plan_proposal where workspace_id = $1 and proposal_id = $2")
                        .bind(ws).bind(id).fetch_optional(&mut **tx).await;
                    match found {
                        Ok(Some(_)) => Error::conflict("plan_proposal_status"),
                        Ok(None) => Error::NotFound,
                        Err(e) => e.into(),
                    }
                }
            }

            #[async_trait::async_trait]
            impl ProposalStore for $store {
                async fn create_proposal(&self, new: &NewProposal) -> Result<Proposal> {
                    let (id, now) = (ProposalId::new(), now());
                    let mut tx = self.begin_write().await?;
                    sqlx::query::<$db>(
                        "update plan_proposal set status = 'discarded', decided_at = $2 \
                         where issue_id = $1 and status = 'pending'")
                        .bind(new.issue_id).bind(now).execute(&mut *tx).await?;
                    let row = sqlx::query_as::<$db, ProposalRow>(concat!(
                        "insert into plan_proposal (proposal_id, workspace_id, issue_id, run_id, agent_id, status, \
                         summary, items, created_at) values ($1, $2, $3, $4, $5, 'pending', $6, $7, $8) returning ",
                        proposal_cols!()))
                        .bind(id).bind(new.workspace_id).bind(new.issue_id).bind(new.run_id).bind(new.agent_id)
                        .bind(&new.summary).bind(sqlx::types::Json(&new.items)).bind(now)
                        .fetch_one(&mut *tx).await?;
                    tx.commit().await?;
                    Ok(row.into())
                }

                async fn get_proposal(&self, ws: WorkspaceId, id: ProposalId) -> Result<Proposal> {
                    let row = sqlx::query_as::<$db, ProposalRow>(concat!(
                        "select ", proposal_cols!(), " from plan_proposal where workspace_id = $1 and proposal_id = $2"))
                        .bind(ws).bind(id).fetch_one(&self.pool).await?;
                    Ok(row.into())
                }

                async fn list_proposals(&self, issue: IssueId) -> Result<Vec<Proposal>> {
                    let rows = sqlx::query_as::<$db, ProposalRow>(concat!(
                        "select ", proposal_cols!(), " from plan_proposal where issue_id = $1 \
                         order by created_at desc, proposal_id desc"))
                        .bind(issue).fetch_all(&self.pool).await?;
                    Ok(rows.into_iter().map(Into::into).collect())
                }

                async fn discard_proposal(&self, ws: WorkspaceId, id: ProposalId, by: UserId) -> Result<Proposal> {
                    let mut tx = self.begin_write().await?;
                    let row = sqlx::query_as::<$db, ProposalRow>(concat!(
                        "update plan_proposal set status = 'discarded', decided_at = $3, decided_by = $4 \
                         where workspace_id = $1 and proposal_id = $2 and status = 'pending' returning ",
                        proposal_cols!()))
                        .bind(ws).bind(id).bind(now()).bind(by)
                        .fetch_optional(&mut *tx).await?;
                    let Some(row) = row else {
                        return Err(Self::undecidable(&mut tx, ws, id).await);
                    };
                    tx.commit().await?;
                    Ok(row.into())
                }

                async fn approve_proposal(
                    &self,
                    ws: WorkspaceId,
                    id: ProposalId,
                    items: &[ProposedIssue],
                    planned: &[PlannedIssue],
                    by: UserId,
                ) -> Result<(Proposal, Vec<Issue>)> {
                    let now = now();
                    let mut tx = self.begin_write().await?;
                    // Decided first: of two approvals at once, the second finds it decided.
                    let decided = sqlx::query_as::<$db, (IssueId,)>(
                        "update plan_proposal set status = 'approved', decided_at = $3, decided_by = $4, items = $5 \
                         where workspace_id = $1 and proposal_id = $2 and status = 'pending' returning issue_id")
                        .bind(ws).bind(id).bind(now).bind(by).bind(sqlx::types::Json(items))
                        .fetch_optional(&mut *tx).await?;
                    let Some((parent,)) = decided else {
                        return Err(Self::undecidable(&mut tx, ws, id).await);
                    };
                    // The sub-issues are part of the planned issue's project, as any sub-issue is.
                    let project = sqlx::query_scalar::<$db, Option<ProjectId>>(
                        "select project_id from issue where issue_id = $1")
                        .bind(parent).fetch_one(&mut *tx).await?;
                    let mut ids: Vec<IssueId> = Vec::with_capacity(planned.len());
                    for plan in planned {
                        let new = NewIssue {
                            body: plan.body.clone(),
                            status: IssueStatus::Todo,
                            assignee: plan.assignee.map(Assignee::Agent),
                            parent: Some(parent),
                            project,
                            created_by: Some(by),
                            ..NewIssue::new(plan.title.clone())
                        };
                        let issue = Self::insert_issue(&mut tx, ws, &new).await?;
                        for &blocker in &plan.blocked_by {
                            let Some(&from) = ids.get(blocker) else {
                                return Err(Error::conflict("plan_proposal_order"));
                            };
                            sqlx::query::<$db>(
                                "insert into issue_relation (workspace_id, from_issue_id, to_issue_id, kind, until_state, \
                                 stacked, created_by, created_at) values ($1, $2, $3, 'blocks', 'done', $4, $5, $6)")
                                .bind(ws).bind(from).bind(issue).bind(false).bind(by).bind(now)
                                .execute(&mut *tx).await?;
                        }
                        ids.push(issue);
                    }
                    let row = sqlx::query_as::<$db, ProposalRow>(concat!(
                        "update plan_proposal set created = $2 where proposal_id = $1 returning ", proposal_cols!()))
                        .bind(id).bind(sqlx::types::Json(&ids)).fetch_one(&mut *tx).await?;
                    tx.commit().await?;
                    let mut issues = Vec::with_capacity(ids.len());
                    for id in ids {
                        issues.push(self.get_issue_by_id(id).await?);
                    }
                    Ok((row.into(), issues))
                }
            }
        };
    };
}
pub(super) use impl_proposals_store;
