//! The issue list: pages in any sort and grouping, read after a keyset cursor, the size of each group,
//! and saved views.
//!
//! A page's order is `crate::domain::list`'s rule: (group rank, group id, sort key, number), groups
//! ascending and the rest in the chosen direction. Ungrouped, each sort has an index (migration
//! `0020_saved_views`) whose order the page reads from the cursor on: no offset, no sort of the whole
//! list, the same cost deep in the list as at its top. Grouped, the database sorts the filtered rows.

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use super::Result;
use crate::domain::list::{GroupKey, IssueGrouping, IssueOrder, ListCursor, SavedView, ViewName};
use crate::domain::{Issue, IssueFilter, UserId, WorkspaceId};

/// The list use-cases.
#[async_trait]
pub trait ListStore: Send + Sync {
    /// Up to `limit` issues of `ws` matching `filter` (its `after` and `limit` aside), in `order`, after
    /// `after` (from the top when `None`).
    async fn list_issue_page(
        &self,
        ws: WorkspaceId,
        filter: &IssueFilter,
        order: &IssueOrder,
        after: Option<&ListCursor>,
        limit: i64,
    ) -> Result<Vec<Issue>>;
    /// How many issues match `filter` (its `after` and `limit` aside) in each group of `grouping`, in
    /// list order; groups with none are left out (ungrouped: one count, of everything).
    async fn count_issue_groups(
        &self,
        ws: WorkspaceId,
        filter: &IssueFilter,
        grouping: IssueGrouping,
    ) -> Result<Vec<(GroupKey, i64)>>;
    /// Saves a view; `Conflict(saved_view_pkey)` when `ws` has one of that name.
    async fn create_saved_view(
        &self,
        ws: WorkspaceId,
        name: &ViewName,
        query: &str,
        by: Option<UserId>,
    ) -> Result<SavedView>;
    /// The saved views of `ws`, by name.
    async fn list_saved_views(&self, ws: WorkspaceId) -> Result<Vec<SavedView>>;
    /// Deletes a saved view; `NotFound` when `ws` has none of that name.
    async fn delete_saved_view(&self, ws: WorkspaceId, name: &ViewName) -> Result<()>;
}

/// A priority's rank (urgent first), as `domain::list::priority_rank`; the same expression as the index.
pub(super) const PRIORITY_RANK: &str = "case i.priority when 'urgent' then 0 when 'high' then 1 \
     when 'medium' then 2 when 'low' then 3 else 4 end";

/// What a backend writes differently for the list.
pub(super) trait ListDialect {
    /// The title as it sorts: by bytes on both backends.
    const TITLE_SORT: &'static str;
}

impl ListDialect for super::sqlite::SqliteStore {
    // SQLite compares text by bytes (`binary`) unless told otherwise.
    const TITLE_SORT: &'static str = "i.title";
}

impl ListDialect for super::postgres::PgStore {
    const TITLE_SORT: &'static str = "i.title collate \"C\"";
}

/// A grouping's order expressions on `issue i`: its rank and, for assignee and parent, the id.
pub(super) fn group_exprs(g: IssueGrouping) -> Option<(&'static str, Option<&'static str>)> {
    match g {
        IssueGrouping::None => None,
        IssueGrouping::Status => Some((super::issues::COLUMN_RANK, None)),
        IssueGrouping::Priority => Some((PRIORITY_RANK, None)),
        IssueGrouping::Assignee => Some((
            "case when i.assignee_user_id is not null then 0 \
             when i.assignee_agent_id is not null then 1 else 2 end",
            Some("coalesce(i.assignee_user_id, i.assignee_agent_id)"),
        )),
        IssueGrouping::Parent => Some((
            "case when i.parent_issue_id is null then 1 else 0 end",
            Some("i.parent_issue_id"),
        )),
        IssueGrouping::Project => Some((
            "case when i.project_id is null then 1 else 0 end",
            Some("i.project_id"),
        )),
    }
}

/// A sort's key expression on `issue i` (`None`: the number alone).
pub(super) fn sort_expr(
    sort: crate::domain::list::IssueSort,
    title: &'static str,
) -> Option<&'static str> {
    use crate::domain::list::IssueSort;
    match sort {
        IssueSort::Updated => Some("i.updated_at"),
        IssueSort::Created => Some("i.created_at"),
        IssueSort::Priority => Some(PRIORITY_RANK),
        IssueSort::Status => Some(super::issues::COLUMN_RANK),
        IssueSort::Title => Some(title),
        IssueSort::Key => None,
    }
}

#[derive(sqlx::FromRow)]
pub(super) struct SavedViewRow {
    workspace_id: WorkspaceId,
    name: String,
    query: String,
    created_by: Option<UserId>,
    created_at: DateTime<Utc>,
}

impl TryFrom<SavedViewRow> for SavedView {
    type Error = super::Error;
    fn try_from(r: SavedViewRow) -> Result<Self> {
        Ok(SavedView {
            workspace_id: r.workspace_id,
            name: ViewName::parse(&r.name).map_err(|e| {
                super::Error::Other(anyhow::anyhow!(
                    "stored view name {:?}: {}",
                    r.name,
                    e.message
                ))
            })?,
            query: r.query,
            created_by: r.created_by,
            created_at: r.created_at,
        })
    }
}

/// Binds one sort value of a cursor.
macro_rules! push_sort_value {
    ($qb:ident, $value:expr) => {
        match $value {
            SortValue::Time(t) => {
                $qb.push_bind(*t);
            }
            SortValue::Rank(r) => {
                $qb.push_bind(*r);
            }
            SortValue::Text(s) => {
                $qb.push_bind(s.clone());
            }
            SortValue::Number => {
                $qb.push_bind(0_i64);
            }
        }
    };
}
pub(super) use push_sort_value;

/// Writes `impl ListStore for $store` on database `$db`; `impl_store!` expands it once per backend.
macro_rules! impl_lists_store {
    ($store:ty, $db:ty) => {
        const _: () = {
            use $crate::domain::list::*;
            use $crate::domain::*;
            use $crate::store::issues::*;
            use $crate::store::lists::*;
            use $crate::store::rows::*;
            use $crate::store::{Error, Result};

            #[async_trait::async_trait]
            impl ListStore for $store {
                async fn list_issue_page(
                    &self,
                    ws: WorkspaceId,
                    filter: &IssueFilter,
                    order: &IssueOrder,
                    after: Option<&ListCursor>,
                    limit: i64,
                ) -> Result<Vec<Issue>> {
                    let filter = IssueFilter { after: None, limit: None, ..filter.clone() };
                    let group = group_exprs(order.group);
                    let sort = sort_expr(order.sort, <Self as ListDialect>::TITLE_SORT);
                    let (op, dir) = match order.dir {
                        SortDir::Asc => (" > ", " asc"),
                        SortDir::Desc => (" < ", " desc"),
                    };
                    // The query up to its filter, for one or two reads.
                    macro_rules! filtered {
                        () => {{
                            let mut qb = sqlx::QueryBuilder::<$db>::new(concat!(issue_select!(), " where i.workspace_id = "));
                            qb.push_bind(ws);
                            push_issue_filter!(qb, &filter, Self::LABEL_FILTER_OPEN, Self::LABEL_FILTER_CLOSE);
                            qb
                        }};
                    }
                    if let (Some(c), None, Some(expr), SortValue::Rank(_)) =
                        (after, group, sort, after.map(|c| &c.sort).unwrap_or(&SortValue::Number))
                    {
                        // A rank sort (priority, status): its index is on an expression, which SQLite
                        // seeks by equality or a range but not by a row comparison. So two reads, each a
                        // seek on (workspace, rank, number): the rest of the cursor's rank after its
                        // number, then the ranks after it.
                        let mut qb = filtered!();
                        qb.push(" and ").push(expr).push(" = ");
                        push_sort_value!(qb, &c.sort);
                        qb.push(" and i.number").push(op).push_bind(c.number)
                            .push(" order by i.number").push(dir).push(" limit ").push_bind(limit);
                        let mut rows = qb.build_query_as::<IssueRow>().fetch_all(&self.pool).await?;
                        let rest = limit - i64::try_from(rows.len()).unwrap_or(limit);
                        if rest > 0 {
                            let mut qb = filtered!();
                            qb.push(" and ").push(expr).push(op);
                            push_sort_value!(qb, &c.sort);
                            qb.push(" order by ").push(expr).push(dir).push(", i.number").push(dir)
                                .push(" limit ").push_bind(rest);
                            rows.extend(qb.build_query_as::<IssueRow>().fetch_all(&self.pool).await?);
                        }
                        return Ok(rows.into_iter().map(Into::into).collect());
                    }
                    let mut qb = filtered!();
                    if let Some(c) = after {
                        // After the cursor within its group, or in a later group.
                        qb.push(" and (");
                        if let Some((rank, id)) = group {
                            qb.push(rank).push(" > ").push_bind(c.group.rank)
                                .push(" or (").push(rank).push(" = ").push_bind(c.group.rank).push(" and ");
                            if let (Some(id), Some(at)) = (id, c.group.id) {
                                qb.push("(").push(id).push(" > ").push_bind(IssueId(at))
                                    .push(" or (").push(id).push(" = ").push_bind(IssueId(at)).push(" and ");
                            }
                        }
                        match sort {
                            Some(expr) => {
                                qb.push("(").push(expr).push(", i.number)").push(op).push("(");
                                push_sort_value!(qb, &c.sort);
                                qb.push(", ").push_bind(c.number).push(")");
                            }
                            None => {
                                qb.push("i.number").push(op).push_bind(c.number);
                            }
                        }
                        if let Some((_, id)) = group {
                            if id.is_some() && c.group.id.is_some() {
                                qb.push("))");
                            }
                            qb.push(")");
                        }
                        qb.push(")");
                    }
                    qb.push(" order by ");
                    if let Some((rank, id)) = group {
                        qb.push(rank).push(", ");
                        if let Some(id) = id {
                            qb.push(id).push(", ");
                        }
                    }
                    if let Some(expr) = sort {
                        qb.push(expr).push(dir).push(", ");
                    }
                    qb.push("i.number").push(dir).push(" limit ").push_bind(limit);
                    let rows = qb.build_query_as::<IssueRow>().fetch_all(&self.pool).await?;
                    Ok(rows.into_iter().map(Into::into).collect())
                }

                async fn count_issue_groups(
                    &self,
                    ws: WorkspaceId,
                    filter: &IssueFilter,
                    grouping: IssueGrouping,
                ) -> Result<Vec<(GroupKey, i64)>> {
                    let filter = IssueFilter { after: None, limit: None, ..filter.clone() };
                    let columns = match grouping {
                        IssueGrouping::None => "select count(*)",
                        IssueGrouping::Status => "select i.status, count(*)",
                        IssueGrouping::Priority => "select i.priority, count(*)",
                        IssueGrouping::Assignee => "select i.assignee_user_id, i.assignee_agent_id, count(*)",
                        IssueGrouping::Parent => "select i.parent_issue_id, count(*)",
                        IssueGrouping::Project => "select i.project_id, count(*)",
                    };
                    let mut qb = sqlx::QueryBuilder::<$db>::new(columns);
                    qb.push(" from issue i join workspace w on w.workspace_id = i.workspace_id where i.workspace_id = ");
                    qb.push_bind(ws);
                    push_issue_filter!(qb, &filter, Self::LABEL_FILTER_OPEN, Self::LABEL_FILTER_CLOSE);
                    let mut counts: Vec<(GroupKey, i64)> = match grouping {
                        IssueGrouping::None => {
                            let n = qb.build_query_scalar::<i64>().fetch_one(&self.pool).await?;
                            vec![(GroupKey::All, n)]
                        }
                        IssueGrouping::Status => {
                            qb.push(" group by i.status");
                            qb.build_query_as::<(IssueStatus, i64)>().fetch_all(&self.pool).await?
                                .into_iter().map(|(s, n)| (GroupKey::Status(s), n)).collect()
                        }
                        IssueGrouping::Priority => {
                            qb.push(" group by i.priority");
                            qb.build_query_as::<(Priority, i64)>().fetch_all(&self.pool).await?
                                .into_iter().map(|(p, n)| (GroupKey::Priority(p), n)).collect()
                        }
                        IssueGrouping::Assignee => {
                            qb.push(" group by i.assignee_user_id, i.assignee_agent_id");
                            qb.build_query_as::<(Option<UserId>, Option<AgentId>, i64)>().fetch_all(&self.pool).await?
                                .into_iter()
                                .map(|(u, a, n)| {
                                    let who = match (u, a) {
                                        (Some(u), _) => Some(Assignee::User(u)),
                                        (None, Some(a)) => Some(Assignee::Agent(a)),
                                        (None, None) => None,
                                    };
                                    (GroupKey::Assignee(who), n)
                                })
                                .collect()
                        }
                        IssueGrouping::Parent => {
                            qb.push(" group by i.parent_issue_id");
                            qb.build_query_as::<(Option<IssueId>, i64)>().fetch_all(&self.pool).await?
                                .into_iter().map(|(p, n)| (GroupKey::Parent(p), n)).collect()
                        }
                        IssueGrouping::Project => {
                            qb.push(" group by i.project_id");
                            qb.build_query_as::<(Option<ProjectId>, i64)>().fetch_all(&self.pool).await?
                                .into_iter().map(|(p, n)| (GroupKey::Project(p), n)).collect()
                        }
                    };
                    counts.sort_by_key(|(k, _)| k.value());
                    Ok(counts)
                }

                async fn create_saved_view(
                    &self,
                    ws: WorkspaceId,
                    name: &ViewName,
                    query: &str,
                    by: Option<UserId>,
                ) -> Result<SavedView> {
                    let row = sqlx::query_as::<$db, SavedViewRow>(
                        "insert into saved_view (workspace_id, name, query, created_by, created_at) \
                         values ($1, $2, $3, $4, $5) \
                         returning workspace_id, name, query, created_by, created_at")
                        .bind(ws).bind(name.as_str()).bind(query).bind(by).bind(now())
                        .fetch_one(&self.pool).await?;
                    row.try_into()
                }

                async fn list_saved_views(&self, ws: WorkspaceId) -> Result<Vec<SavedView>> {
                    let rows = sqlx::query_as::<$db, SavedViewRow>(
                        "select workspace_id, name, query, created_by, created_at from saved_view \
                         where workspace_id = $1")
                        .bind(ws).fetch_all(&self.pool).await?;
                    let mut views = rows.into_iter().map(SavedView::try_from).collect::<Result<Vec<_>>>()?;
                    // Sorted here, so both backends give the same order whatever their collation.
                    views.sort_by(|a, b| a.name.as_str().cmp(b.name.as_str()));
                    Ok(views)
                }

                async fn delete_saved_view(&self, ws: WorkspaceId, name: &ViewName) -> Result<()> {
                    let done = sqlx::query::<$db>("delete from saved_view where workspace_id = $1 and name = $2")
                        .bind(ws).bind(name.as_str()).execute(&self.pool).await?;
                    if done.rows_affected() == 0 {
                        return Err(Error::NotFound);
                    }
                    Ok(())
                }
            }
        };
    };
}
pub(super) use impl_lists_store;
