//! Planning: relations between issues, the sub-issue tree, and the parents woken once their children
//! have ended.
//!
//! A blocks edge holds its blocked issue's queued runs: the run claim adds [`UNBLOCKED`] to its
//! conditions, so the database itself decides, at claim time, that no blocker is open. A run therefore
//! starts exactly once, at the first claim after its last blocker is met, and never before.

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use super::Result;
use crate::domain::{
    Actor, BlockUntil, Blocker, ChildProgress, Cycle, Issue, IssueBrief, IssueId, IssueLink,
    IssuePrefix, IssueStatus, IssueTitle, LinkKind, NewRelation, RelationKind, WorkspaceId,
};

/// Whether a run of issue `b` is claimed or running (a condition).
macro_rules! working {
    ($alias:literal) => {
        concat!(
            "exists (select 1 from run q where q.issue_id = ",
            $alias,
            ".issue_id and q.status in ('claimed', 'running'))"
        )
    };
}
pub(super) use working;

/// The claim's condition (on `run r`) that its issue has no unmet blocker: every blocks edge into it comes
/// from an issue that is done, has no claimed or running run (its work is delivered when its run ends)
/// and, for `until_state = 'merged'`, has a merged pull request. The same rule as [`Blocker::met`]. A
/// plan run is not held: planning a blocked issue changes nothing the blockers deliver.
pub(super) const UNBLOCKED: &str = concat!(
    " and (r.purpose = 'plan' or not exists (select 1 from issue_relation d \
     join issue b on b.issue_id = d.from_issue_id \
     where d.to_issue_id = r.issue_id and d.kind = 'blocks' and (b.status <> 'done' or ",
    working!("b"),
    " or (d.until_state = 'merged' and not exists (select 1 from pull_request p \
     where p.issue_id = b.issue_id and p.state = 'merged')))))"
);

/// The planning use-cases.
#[async_trait]
pub trait PlanStore: Send + Sync {
    /// Records an edge between two issues of `ws`, in one transaction. `Ok(Err(cycle))` (nothing written)
    /// when a blocks edge would close a cycle of blocks edges; `Conflict(issue_relation_pkey)` when the
    /// same edge exists (for relates, in either direction); `NotFound` when an issue is not in `ws`.
    async fn add_relation(
        &self,
        ws: WorkspaceId,
        new: &NewRelation,
    ) -> Result<std::result::Result<(), Cycle>>;
    /// Removes the edge `from` `kind` `to` (relates: in either direction); `NotFound` when there is none.
    async fn remove_relation(
        &self,
        ws: WorkspaceId,
        from: IssueId,
        to: IssueId,
        kind: RelationKind,
    ) -> Result<()>;
    /// Every edge of an issue, as it reads from that issue, oldest first.
    async fn list_links(&self, issue: IssueId) -> Result<Vec<IssueLink>>;
    /// The blockers of each of `issues` (met or not), by blocked issue then blocker number.
    async fn blockers_of(&self, issues: &[IssueId]) -> Result<Vec<Blocker>>;
    /// Sets or clears an issue's parent (both in `ws`). `Ok(Err(cycle))` (nothing written) when the
    /// parent is the issue or one of its descendants. A new parent's fan-in is armed again.
    async fn set_parent(
        &self,
        ws: WorkspaceId,
        issue: IssueId,
        parent: Option<IssueId>,
        actor: Actor,
    ) -> Result<std::result::Result<Issue, Cycle>>;
    /// An issue's children, by number.
    async fn list_children(&self, parent: IssueId) -> Result<Vec<Issue>>;
    /// How far the children of each of `parents` are (parents without children left out).
    async fn child_progress(&self, parents: &[IssueId]) -> Result<Vec<(IssueId, ChildProgress)>>;
    /// Turns "wake the assignee when every child has ended" on (armed) or off for an issue.
    async fn set_fan_in(&self, issue: IssueId, on: bool) -> Result<()>;
    /// Whether an issue wakes its assignee when its children end.
    async fn fan_in(&self, issue: IssueId) -> Result<bool>;
    /// Takes a parent's fan-in: `true` exactly once while it is armed and every child (at least one) is
    /// done or cancelled; it stays taken until a child is added or reopened.
    async fn take_fan_in(&self, parent: IssueId) -> Result<bool>;
    /// Armed parents whose children have all ended: fan-ins a crash may have left untaken.
    async fn fan_ins_due(&self, limit: i64) -> Result<Vec<IssueId>>;
}

#[derive(sqlx::FromRow)]
pub(super) struct BriefRow {
    issue_id: IssueId,
    issue_prefix: IssuePrefix,
    number: i64,
    title: IssueTitle,
    status: IssueStatus,
}

impl From<BriefRow> for IssueBrief {
    fn from(r: BriefRow) -> Self {
        IssueBrief {
            id: r.issue_id,
            key: crate::domain::IssueKey {
                prefix: r.issue_prefix,
                number: r.number,
            },
            title: r.title,
            status: r.status,
        }
    }
}

#[derive(sqlx::FromRow)]
pub(super) struct LinkRow {
    kind: RelationKind,
    outgoing: bool,
    #[sqlx(flatten)]
    other: BriefRow,
    until_state: BlockUntil,
    stacked: bool,
    merged: bool,
    working: bool,
    created_at: DateTime<Utc>,
}

impl From<LinkRow> for IssueLink {
    fn from(r: LinkRow) -> Self {
        let other: IssueBrief = r.other.into();
        let link = LinkKind::of(r.kind, r.outgoing);
        // Only a blocked-by row is about the other issue as a blocker.
        let met =
            link == LinkKind::BlockedBy && r.until_state.met_by(other.status, r.merged, r.working);
        IssueLink {
            link,
            other,
            until: r.until_state,
            stacked: r.stacked,
            met,
            created_at: r.created_at,
        }
    }
}

#[derive(sqlx::FromRow)]
pub(super) struct BlockerRow {
    blocked: IssueId,
    #[sqlx(flatten)]
    blocker: BriefRow,
    until_state: BlockUntil,
    stacked: bool,
    merged: bool,
    working: bool,
}

impl From<BlockerRow> for Blocker {
    fn from(r: BlockerRow) -> Self {
        Blocker {
            blocked: r.blocked,
            blocker: r.blocker.into(),
            until: r.until_state,
            stacked: r.stacked,
            merged: r.merged,
            working: r.working,
        }
    }
}

/// The path `start ⇝ goal` over `edges` (from, to), breadth first: the ids along it, both ends included.
pub(super) fn path(edges: &[(IssueId, IssueId)], start: IssueId, goal: IssueId) -> Vec<IssueId> {
    let mut came_from = std::collections::HashMap::new();
    let mut queue = std::collections::VecDeque::from([start]);
    came_from.insert(start, start);
    while let Some(at) = queue.pop_front() {
        if at == goal {
            break;
        }
        for (_, next) in edges.iter().filter(|(from, _)| *from == at) {
            if !came_from.contains_key(next) {
                came_from.insert(*next, at);
                queue.push_back(*next);
            }
        }
    }
    let mut out = vec![goal];
    let mut at = goal;
    while at != start {
        match came_from.get(&at) {
            Some(prev) => {
                at = *prev;
                out.push(at);
            }
            None => return vec![start, goal],
        }
    }
    out.reverse();
    out
}

macro_rules! brief_cols {
    ($alias:literal) => {
        concat!(
            $alias,
            ".issue_id, w.issue_prefix, ",
            $alias,
            ".number, ",
            $alias,
            ".title, ",
            $alias,
            ".status"
        )
    };
}
pub(super) use brief_cols;

/// Whether a pull request of issue `b` was merged.
macro_rules! merged_of {
    ($alias:literal) => {
        concat!(
            "exists (select 1 from pull_request p where p.issue_id = ",
            $alias,
            ".issue_id and p.state = 'merged') as merged"
        )
    };
}
pub(super) use merged_of;

/// Writes `impl PlanStore for $store` on database `$db`; `impl_store!` expands it once per backend.
macro_rules! impl_plans_store {
    ($store:ty, $db:ty) => {
        const _: () = {
            use $crate::domain::*;
            use $crate::store::common::*;
            use $crate::store::issues::*;
            use $crate::store::plans::*;
            use $crate::store::rows::*;
            use $crate::store::{Error, Result};

            impl $store {
                /// The keys of `ids` (all in one workspace), in the order given.
                async fn keys_of(
                    tx: &mut sqlx::Transaction<'static, $db>,
                    ids: &[IssueId],
                ) -> Result<Vec<IssueKey>> {
                    let mut keys = Vec::with_capacity(ids.len());
                    for id in ids {
                        let (prefix, number) = sqlx::query_as::<$db, (IssuePrefix, i64)>(
                            "select w.issue_prefix, i.number from issue i join workspace w on w.workspace_id = i.workspace_id \
                             where i.issue_id = $1")
                            .bind(id).fetch_one(&mut **tx).await?;
                        keys.push(IssueKey { prefix, number });
                    }
                    Ok(keys)
                }

                /// `NotFound` unless every one of `ids` is an issue of `ws`.
                async fn all_in(
                    tx: &mut sqlx::Transaction<'static, $db>,
                    ws: WorkspaceId,
                    ids: &[IssueId],
                ) -> Result<()> {
                    for id in ids {
                        sqlx::query_scalar::<$db, IssueId>(
                            "select issue_id from issue where issue_id = $1 and workspace_id = $2")
                            .bind(id).bind(ws).fetch_one(&mut **tx).await?;
                    }
                    Ok(())
                }
            }

            #[async_trait::async_trait]
            impl PlanStore for $store {
                async fn add_relation(
                    &self,
                    ws: WorkspaceId,
                    new: &NewRelation,
                ) -> Result<std::result::Result<(), Cycle>> {
                    if new.from == new.to {
                        let mut tx = self.begin_write().await?;
                        Self::all_in(&mut tx, ws, &[new.from]).await?;
                        let keys = Self::keys_of(&mut tx, &[new.from, new.from]).await?;
                        return Ok(Err(Cycle(keys)));
                    }
                    let mut tx = self.begin_write().await?;
                    // Serialises edge changes in a workspace, so two edges added at once cannot close a
                    // cycle that neither saw.
                    lock_workspace!($db, tx, ws);
                    Self::all_in(&mut tx, ws, &[new.from, new.to]).await?;
                    if new.kind == RelationKind::Blocks {
                        // A cycle: `to` already leads to `from` through blocks edges.
                        let closes = sqlx::query_scalar::<$db, i64>(
                            "with recursive reach(id) as ( \
                               select to_issue_id from issue_relation where from_issue_id = $1 and kind = 'blocks' \
                               union \
                               select e.to_issue_id from issue_relation e join reach r on e.from_issue_id = r.id \
                               where e.kind = 'blocks') \
                             select count(*) from reach where id = $2")
                            .bind(new.to).bind(new.from).fetch_one(&mut *tx).await?;
                        if closes > 0 {
                            let edges = sqlx::query_as::<$db, (IssueId, IssueId)>(
                                "select from_issue_id, to_issue_id from issue_relation \
                                 where workspace_id = $1 and kind = 'blocks'")
                                .bind(ws).fetch_all(&mut *tx).await?;
                            let mut around = vec![new.from];
                            around.extend(path(&edges, new.to, new.from));
                            let keys = Self::keys_of(&mut tx, &around).await?;
                            return Ok(Err(Cycle(keys)));
                        }
                    }
                    if new.kind == RelationKind::Relates {
                        let reverse = sqlx::query_scalar::<$db, i64>(
                            "select count(*) from issue_relation where from_issue_id = $1 and to_issue_id = $2 \
                             and kind = 'relates'")
                            .bind(new.to).bind(new.from).fetch_one(&mut *tx).await?;
                        if reverse > 0 {
                            return Err(Error::conflict("issue_relation_pkey"));
                        }
                    }
                    sqlx::query::<$db>(
                        "insert into issue_relation (workspace_id, from_issue_id, to_issue_id, kind, until_state, \
                         stacked, created_by, created_at) values ($1, $2, $3, $4, $5, $6, $7, $8)")
                        .bind(ws).bind(new.from).bind(new.to).bind(new.kind).bind(new.until)
                        .bind(new.stacked).bind(new.created_by).bind(now())
                        .execute(&mut *tx).await?;
                    tx.commit().await?;
                    Ok(Ok(()))
                }

                async fn remove_relation(
                    &self,
                    ws: WorkspaceId,
                    from: IssueId,
                    to: IssueId,
                    kind: RelationKind,
                ) -> Result<()> {
                    let symmetric = kind == RelationKind::Relates;
                    let done = sqlx::query::<$db>(
                        "delete from issue_relation where workspace_id = $1 and kind = $4 \
                         and ((from_issue_id = $2 and to_issue_id = $3) or ($5 and from_issue_id = $3 and to_issue_id = $2))")
                        .bind(ws).bind(from).bind(to).bind(kind).bind(symmetric)
                        .execute(&self.pool).await?;
                    if done.rows_affected() == 0 {
                        return Err(Error::NotFound);
                    }
                    Ok(())
                }

                async fn list_links(&self, issue: IssueId) -> Result<Vec<IssueLink>> {
                    let rows = sqlx::query_as::<$db, LinkRow>(concat!(
                        "select d.kind, d.from_issue_id = $1 as outgoing, ", brief_cols!("o"), ", d.until_state, \
                         d.stacked, ", merged_of!("o"), ", ", working!("o"), " as working, d.created_at from issue_relation d \
                         join issue o on o.issue_id = (case when d.from_issue_id = $1 then d.to_issue_id else d.from_issue_id end) \
                         join workspace w on w.workspace_id = o.workspace_id \
                         where d.from_issue_id = $1 or d.to_issue_id = $1 order by d.created_at, o.number"))
                        .bind(issue).fetch_all(&self.pool).await?;
                    Ok(rows.into_iter().map(Into::into).collect())
                }

                async fn blockers_of(&self, issues: &[IssueId]) -> Result<Vec<Blocker>> {
                    if issues.is_empty() {
                        return Ok(Vec::new());
                    }
                    let mut qb = sqlx::QueryBuilder::<$db>::new(concat!(
                        "select d.to_issue_id as blocked, ", brief_cols!("b"), ", d.until_state, d.stacked, ",
                        merged_of!("b"), ", ", working!("b"), " as working from issue_relation d join issue b on b.issue_id = d.from_issue_id \
                         join workspace w on w.workspace_id = b.workspace_id \
                         where d.kind = 'blocks' and d.to_issue_id in ("));
                    let mut list = qb.separated(", ");
                    for id in issues {
                        list.push_bind(*id);
                    }
                    qb.push(") order by d.to_issue_id, b.number");
                    let rows = qb.build_query_as::<BlockerRow>().fetch_all(&self.pool).await?;
                    Ok(rows.into_iter().map(Into::into).collect())
                }

                async fn set_parent(
                    &self,
                    ws: WorkspaceId,
                    issue: IssueId,
                    parent: Option<IssueId>,
                    _actor: Actor,
                ) -> Result<std::result::Result<Issue, Cycle>> {
                    let mut tx = self.begin_write().await?;
                    lock_workspace!($db, tx, ws);
                    Self::all_in(&mut tx, ws, &[issue]).await?;
                    if let Some(parent) = parent {
                        Self::all_in(&mut tx, ws, &[parent]).await?;
                        // The new parent's ancestors, nearest first: the issue among them (or as the parent
                        // itself) would make it its own ancestor.
                        let ancestors = sqlx::query_scalar::<$db, IssueId>(
                            "with recursive up(id, depth) as ( \
                               select parent_issue_id, 1 from issue where issue_id = $1 and parent_issue_id is not null \
                               union all \
                               select i.parent_issue_id, u.depth + 1 from issue i join up u on i.issue_id = u.id \
                               where i.parent_issue_id is not null and u.depth < $2) \
                             select id from up order by depth")
                            .bind(parent).bind(MAX_TREE_DEPTH as i64).fetch_all(&mut *tx).await?;
                        let mut chain = vec![issue, parent];
                        if parent != issue {
                            match ancestors.iter().position(|a| *a == issue) {
                                Some(at) => chain.extend(&ancestors[..=at]),
                                None => chain.clear(),
                            }
                        }
                        if !chain.is_empty() {
                            // Read as "ACM-1 → under ACM-3 → under ACM-1".
                            let keys = Self::keys_of(&mut tx, &chain).await?;
                            return Ok(Err(Cycle(keys)));
                        }
                        if ancestors.len() >= MAX_TREE_DEPTH {
                            return Err(Error::conflict("issue_tree_depth"));
                        }
                    }
                    let previous = sqlx::query_scalar::<$db, Option<IssueId>>(
                        "select parent_issue_id from issue where issue_id = $1")
                        .bind(issue).fetch_one(&mut *tx).await?;
                    sqlx::query::<$db>("update issue set parent_issue_id = $2, updated_at = $3 where issue_id = $1")
                        .bind(issue).bind(parent).bind(now()).execute(&mut *tx).await?;
                    if let Some(parent) = parent.filter(|p| Some(*p) != previous) {
                        // A new child: the parent's agent is woken again when it ends too.
                        sqlx::query::<$db>("update issue_fan_in set woken = $2 where issue_id = $1")
                            .bind(parent).bind(false).execute(&mut *tx).await?;
                    }
                    tx.commit().await?;
                    Ok(Ok(self.get_issue_by_id(issue).await?))
                }

                async fn list_children(&self, parent: IssueId) -> Result<Vec<Issue>> {
                    let rows = sqlx::query_as::<$db, IssueRow>(concat!(issue_select!(),
                        " where i.parent_issue_id = $1 order by i.number"))
                        .bind(parent).fetch_all(&self.pool).await?;
                    Ok(rows.into_iter().map(Into::into).collect())
                }

                async fn child_progress(&self, parents: &[IssueId]) -> Result<Vec<(IssueId, ChildProgress)>> {
                    if parents.is_empty() {
                        return Ok(Vec::new());
                    }
                    let mut qb = sqlx::QueryBuilder::<$db>::new(
                        "select parent_issue_id, count(*), \
                         coalesce(sum(case when status = 'done' then 1 else 0 end), 0), \
                         coalesce(sum(case when status = 'cancelled' then 1 else 0 end), 0) \
                         from issue where parent_issue_id in (");
                    let mut list = qb.separated(", ");
                    for id in parents {
                        list.push_bind(*id);
                    }
                    qb.push(") group by parent_issue_id");
                    let rows = qb.build_query_as::<(IssueId, i64, i64, i64)>().fetch_all(&self.pool).await?;
                    Ok(rows
                        .into_iter()
                        .map(|(id, total, done, cancelled)| (id, ChildProgress { total, done, cancelled }))
                        .collect())
                }

                async fn set_fan_in(&self, issue: IssueId, on: bool) -> Result<()> {
                    if on {
                        sqlx::query::<$db>(
                            "insert into issue_fan_in (issue_id, woken, created_at) values ($1, $2, $3) \
                             on conflict (issue_id) do nothing")
                            .bind(issue).bind(false).bind(now()).execute(&self.pool).await?;
                    } else {
                        sqlx::query::<$db>("delete from issue_fan_in where issue_id = $1")
                            .bind(issue).execute(&self.pool).await?;
                    }
                    Ok(())
                }

                async fn fan_in(&self, issue: IssueId) -> Result<bool> {
                    let n = sqlx::query_scalar::<$db, i64>("select count(*) from issue_fan_in where issue_id = $1")
                        .bind(issue).fetch_one(&self.pool).await?;
                    Ok(n > 0)
                }

                async fn take_fan_in(&self, parent: IssueId) -> Result<bool> {
                    let done = sqlx::query::<$db>(concat!(
                        "update issue_fan_in set woken = $2 where issue_id = $1 and woken = $3 \
                         and exists (select 1 from issue c where c.parent_issue_id = $1) \
                         and not exists (select 1 from issue c where c.parent_issue_id = $1 \
                           and (c.status not in ('done', 'cancelled') or ", working!("c"), "))"))
                        .bind(parent).bind(true).bind(false).execute(&self.pool).await?;
                    Ok(done.rows_affected() == 1)
                }

                async fn fan_ins_due(&self, limit: i64) -> Result<Vec<IssueId>> {
                    let ids = sqlx::query_scalar::<$db, IssueId>(concat!(
                        "select f.issue_id from issue_fan_in f where f.woken = $1 \
                         and exists (select 1 from issue c where c.parent_issue_id = f.issue_id) \
                         and not exists (select 1 from issue c where c.parent_issue_id = f.issue_id \
                           and (c.status not in ('done', 'cancelled') or ", working!("c"), ")) \
                         order by f.created_at limit $2"))
                        .bind(false).bind(limit).fetch_all(&self.pool).await?;
                    Ok(ids)
                }
            }
        };
    };
}
pub(super) use impl_plans_store;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_path_is_found_breadth_first() {
        let [a, b, c, d] = [(); 4].map(|()| IssueId::new());
        let edges = [(a, b), (b, c), (a, d), (d, c)];
        assert_eq!(path(&edges, a, c).len(), 3);
        assert_eq!(path(&edges, a, a), vec![a]);
        assert_eq!(path(&edges, c, a), vec![c, a], "no path: just the ends");
    }
}
