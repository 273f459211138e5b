//! The inbox: what needs a person, who can see each item, and who has read it.

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use super::Result;
use crate::domain::{
    CommentId, InboxItem, InboxItemId, InboxKind, IssueId, NewInboxItem, RunId, UserId, WorkspaceId,
};

/// An inbox item with when the reader read it (`None`: unread).
#[derive(Debug, Clone, PartialEq)]
pub struct InboxEntry {
    pub item: InboxItem,
    pub read_at: Option<DateTime<Utc>>,
}

/// The inbox use-cases.
#[async_trait]
pub trait InboxStore: Send + Sync {
    /// Records something that needs a person; an item whose kind
    /// [supersedes earlier ones](crate::domain::InboxKind::supersedes_earlier) resolves, in the same
    /// transaction, the open items of its kind about its issue for the same people.
    async fn create_inbox_item(&self, new: &NewInboxItem) -> Result<InboxItem>;
    /// Open items for a user (their own and those addressed to everyone), newest first.
    async fn list_inbox(&self, ws: WorkspaceId, user: UserId) -> Result<Vec<InboxItem>>;
    /// Like [`InboxStore::list_inbox`], with when `user` read each item (only unread ones if `unread_only`).
    async fn list_inbox_with_read(
        &self,
        ws: WorkspaceId,
        user: UserId,
        unread_only: bool,
    ) -> Result<Vec<InboxEntry>>;
    /// Marks one open item of `ws` that `user` can see as read by them (again is a no-op); `NotFound`
    /// for an item they cannot see.
    async fn mark_inbox_read(
        &self,
        ws: WorkspaceId,
        user: UserId,
        item: crate::domain::InboxItemId,
        at: DateTime<Utc>,
    ) -> Result<()>;
    /// Marks every open item `user` can see in `ws` as read; returns how many were unread.
    async fn mark_all_inbox_read(
        &self,
        ws: WorkspaceId,
        user: UserId,
        at: DateTime<Utc>,
    ) -> Result<u64>;
    /// How many open items `user` can see in `ws` and has not read.
    async fn count_unread_inbox(&self, ws: WorkspaceId, user: UserId) -> Result<i64>;
}

#[derive(sqlx::FromRow)]
pub(super) struct InboxRow {
    inbox_item_id: InboxItemId,
    workspace_id: WorkspaceId,
    user_id: Option<UserId>,
    kind: InboxKind,
    issue_id: Option<IssueId>,
    run_id: Option<RunId>,
    comment_id: Option<CommentId>,
    message: String,
    created_at: DateTime<Utc>,
    resolved_at: Option<DateTime<Utc>>,
}

impl From<InboxRow> for InboxItem {
    fn from(r: InboxRow) -> Self {
        InboxItem {
            id: r.inbox_item_id,
            workspace_id: r.workspace_id,
            user_id: r.user_id,
            kind: r.kind,
            issue_id: r.issue_id,
            run_id: r.run_id,
            comment_id: r.comment_id,
            message: r.message,
            created_at: r.created_at,
            resolved_at: r.resolved_at,
        }
    }
}

/// An inbox item with the reader's `inbox_read.read_at`.
#[derive(sqlx::FromRow)]
pub(super) struct InboxReadRow {
    #[sqlx(flatten)]
    item: InboxRow,
    read_at: Option<DateTime<Utc>>,
}

impl From<InboxReadRow> for InboxEntry {
    fn from(r: InboxReadRow) -> Self {
        InboxEntry {
            item: r.item.into(),
            read_at: r.read_at,
        }
    }
}

macro_rules! inbox_cols { () => {
    "inbox_item_id, workspace_id, user_id, kind, issue_id, run_id, comment_id, message, created_at, resolved_at"
} }
pub(super) use inbox_cols;

/// Which inbox items (aliased `i`) user `$2` sees: their own, and the workspace-wide ones made since they
/// joined (a new member's inbox does not open full of the past).
macro_rules! inbox_visible { () => {
    "(i.user_id = $2 or (i.user_id is null and i.created_at >= \
     (select m.created_at from member m where m.workspace_id = i.workspace_id and m.user_id = $2)))"
} }
pub(super) use inbox_visible;

/// Writes `impl InboxStore for $store` on database `$db`; `impl_store!` expands it once per backend.
macro_rules! impl_inbox_store {
    ($store:ty, $db:ty) => {
        const _: () = {
            use $crate::domain::*;
            use $crate::store::Result;
            use $crate::store::inbox::*;
            use $crate::store::rows::*;

            #[async_trait::async_trait]
            impl InboxStore for $store {
                async fn create_inbox_item(&self, new: &NewInboxItem) -> Result<InboxItem> {
                    let at = now();
                    let mut tx = self.begin_write().await?;
                    if let Some(issue) = new.issue_id.filter(|_| new.kind.supersedes_earlier()) {
                        sqlx::query::<$db>(
                            "update inbox_item set resolved_at = $1 where workspace_id = $2 and issue_id = $3 \
                             and kind = $4 and (user_id = $5 or (user_id is null and $5 is null)) and resolved_at is null")
                            .bind(at).bind(new.workspace_id).bind(issue).bind(new.kind).bind(new.user_id)
                            .execute(&mut *tx).await?;
                    }
                    let row = sqlx::query_as::<$db, InboxRow>(concat!(
                        "insert into inbox_item (inbox_item_id, workspace_id, user_id, kind, issue_id, run_id, comment_id, message, created_at) ",
                        "values ($1, $2, $3, $4, $5, $6, $7, $8, $9) returning ", inbox_cols!()))
                        .bind(InboxItemId::new()).bind(new.workspace_id).bind(new.user_id).bind(new.kind)
                        .bind(new.issue_id).bind(new.run_id).bind(new.comment_id).bind(&new.message).bind(at)
                        .fetch_one(&mut *tx).await?;
                    tx.commit().await?;
                    Ok(row.into())
                }

                async fn list_inbox(&self, ws: WorkspaceId, user: UserId) -> Result<Vec<InboxItem>> {
                    let rows = sqlx::query_as::<$db, InboxRow>(concat!(
                        "select ", inbox_cols!(), " from inbox_item i where i.workspace_id = $1 and ", inbox_visible!(),
                        " and i.resolved_at is null order by i.created_at desc, i.inbox_item_id desc"))
                        .bind(ws).bind(user).fetch_all(&self.pool).await?;
                    Ok(rows.into_iter().map(Into::into).collect())
                }

                async fn list_inbox_with_read(&self, ws: WorkspaceId, user: UserId, unread_only: bool) -> Result<Vec<$crate::store::InboxEntry>> {
                    let rows = sqlx::query_as::<$db, InboxReadRow>(concat!(
                        "select i.inbox_item_id, i.workspace_id, i.user_id, i.kind, i.issue_id, i.run_id, i.comment_id, i.message, i.created_at, ",
                        "i.resolved_at, r.read_at from inbox_item i ",
                        "left join inbox_read r on r.inbox_item_id = i.inbox_item_id and r.user_id = $2 ",
                        "where i.workspace_id = $1 and ", inbox_visible!(), " and i.resolved_at is null ",
                        "and ($3 = 0 or r.read_at is null) order by i.created_at desc, i.inbox_item_id desc"))
                        .bind(ws).bind(user).bind(i32::from(unread_only)).fetch_all(&self.pool).await?;
                    Ok(rows.into_iter().map(Into::into).collect())
                }

                async fn mark_inbox_read(&self, ws: WorkspaceId, user: UserId, item: InboxItemId, at: DateTime<Utc>) -> Result<()> {
                    let visible = sqlx::query_scalar::<$db, InboxItemId>(concat!(
                        "select i.inbox_item_id from inbox_item i where i.workspace_id = $1 and ", inbox_visible!(),
                        " and i.inbox_item_id = $3 and i.resolved_at is null"))
                        .bind(ws).bind(user).bind(item).fetch_optional(&self.pool).await?;
                    if visible.is_none() { return Err(Error::NotFound); }
                    sqlx::query::<$db>(
                        "insert into inbox_read (inbox_item_id, user_id, read_at) values ($1, $2, $3) \
                         on conflict (inbox_item_id, user_id) do nothing")
                        .bind(item).bind(user).bind(at).execute(&self.pool).await?;
                    Ok(())
                }

                async fn mark_all_inbox_read(&self, ws: WorkspaceId, user: UserId, at: DateTime<Utc>) -> Result<u64> {
                    let done = sqlx::query::<$db>(
                        concat!("insert into inbox_read (inbox_item_id, user_id, read_at) \
                         select i.inbox_item_id, $2, $3 from inbox_item i where i.workspace_id = $1 and ",
                         inbox_visible!(), " and i.resolved_at is null \
                         on conflict (inbox_item_id, user_id) do nothing"))
                        .bind(ws).bind(user).bind(at).execute(&self.pool).await?;
                    Ok(done.rows_affected())
                }

                async fn count_unread_inbox(&self, ws: WorkspaceId, user: UserId) -> Result<i64> {
                    let n = sqlx::query_scalar::<$db, i64>(
                        concat!("select count(*) from inbox_item i where i.workspace_id = $1 and ", inbox_visible!(),
                         " and i.resolved_at is null \
                         and not exists (select 1 from inbox_read r where r.inbox_item_id = i.inbox_item_id and r.user_id = $2)"))
                        .bind(ws).bind(user).fetch_one(&self.pool).await?;
                    Ok(n)
                }
            }
        };
    };
}
pub(super) use impl_inbox_store;
