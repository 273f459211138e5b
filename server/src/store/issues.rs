//! Issues, their comments and their activity trail: the board's rows, its filters and ordering.

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use sqlx::types::Json;

use super::Result;
use crate::domain::{
    Activity, ActivityId, ActivityKind, Actor, AgentId, Assignee, Comment, CommentAuthor,
    CommentId, Issue, IssueFilter, IssueId, IssueKey, IssuePatch, IssuePrefix, IssueStatus,
    IssueTitle, Label, NewComment, NewIssue, Priority, ProjectId, RunId, UserId, WorkspaceId,
};

/// The issue use-cases: issues, comments and the activity trail.
#[async_trait]
pub trait IssueStore: Send + Sync {
    /// Creates an issue with the workspace's next number, at the bottom of its column, and records who
    /// created it (`created_by`, else Muster) in the activity trail.
    async fn create_issue(&self, ws: WorkspaceId, new: &NewIssue) -> Result<Issue>;
    /// An issue by key, only within `ws` (a key from another workspace is `NotFound`).
    async fn get_issue(&self, ws: WorkspaceId, key: &IssueKey) -> Result<Issue>;
    /// An issue by id.
    async fn get_issue_by_id(&self, id: IssueId) -> Result<Issue>;
    /// Issues matching `filter`, by status column then position (then number), after `filter.after` and
    /// at most `filter.limit` of them.
    async fn list_issues(&self, ws: WorkspaceId, filter: &IssueFilter) -> Result<Vec<Issue>>;
    /// How many issues match `filter` (its `limit` aside) in each status, in column order; statuses
    /// with none are left out. With `filter.after`, only those after the cursor are counted.
    async fn count_issues(
        &self,
        ws: WorkspaceId,
        filter: &IssueFilter,
    ) -> Result<Vec<(IssueStatus, i64)>>;
    /// Every label used on an issue of `ws`, once each, sorted.
    async fn list_issue_labels(&self, ws: WorkspaceId) -> Result<Vec<Label>>;
    /// Changes the fields set in `patch`, recording one activity line per field that really changed.
    async fn update_issue(
        &self,
        ws: WorkspaceId,
        key: &IssueKey,
        patch: &IssuePatch,
        actor: Actor,
    ) -> Result<Issue>;
    /// Moves an issue to `status` at `index` in that column (the end when `None` or past it): to the end it
    /// goes after the last; elsewhere the column is renumbered densely (only changed rows written). A status
    /// change is recorded in the activity trail.
    async fn move_issue(
        &self,
        ws: WorkspaceId,
        key: &IssueKey,
        status: IssueStatus,
        index: Option<usize>,
        actor: Actor,
    ) -> Result<Issue> {
        self.move_issue_when(ws, key, None, status, index, actor)
            .await?
            .ok_or(super::Error::NotFound)
    }
    /// [`IssueStore::move_issue`], only while the issue's status is one of `only_from` (when given): read
    /// and moved in one transaction, so a move made meanwhile (an agent marking its issue done as its
    /// run starts) is never overwritten. `Ok(None)`, nothing written, when it is in another status.
    async fn move_issue_when(
        &self,
        ws: WorkspaceId,
        key: &IssueKey,
        only_from: Option<&[IssueStatus]>,
        status: IssueStatus,
        index: Option<usize>,
        actor: Actor,
    ) -> Result<Option<Issue>>;
    /// Adds a comment.
    async fn add_comment(&self, issue: IssueId, new: &NewComment) -> Result<Comment>;
    /// An issue's comments, oldest first.
    async fn list_comments(&self, issue: IssueId) -> Result<Vec<Comment>>;
    /// Up to `limit` of an issue's comments, oldest first, after the comment `after` (from the first when
    /// `None`). `NotFound` when `after` is not a comment of this issue.
    async fn list_comments_page(
        &self,
        issue: IssueId,
        after: Option<CommentId>,
        limit: i64,
    ) -> Result<Vec<Comment>>;
    /// One comment of an issue (`NotFound` when it is not a comment of that issue).
    async fn get_comment(&self, issue: IssueId, id: CommentId) -> Result<Comment>;
    /// Replaces a comment's body and stamps `edited_at` (`NotFound` when it is not a comment of that issue).
    async fn edit_comment(&self, issue: IssueId, id: CommentId, body: &str) -> Result<Comment>;
    /// Deletes a comment (`NotFound` when it is not a comment of that issue).
    async fn delete_comment(&self, issue: IssueId, id: CommentId) -> Result<()>;
    /// Deletes an issue and, with it, its comments, activity, runs (with their logs and tokens) and inbox
    /// items; sub-issues lose their parent. Refused (`run_live`) while one of its runs is claimed or
    /// running: stop those first. Returns the issue as it was.
    async fn delete_issue(&self, ws: WorkspaceId, key: &IssueKey) -> Result<Issue>;
    /// An issue's activity trail, oldest first.
    async fn list_activity(&self, issue: IssueId) -> Result<Vec<Activity>>;
}

#[derive(sqlx::FromRow)]
pub(super) struct IssueRow {
    issue_id: IssueId,
    workspace_id: WorkspaceId,
    issue_prefix: IssuePrefix,
    number: i64,
    title: IssueTitle,
    body: String,
    status: IssueStatus,
    priority: Priority,
    assignee_user_id: Option<UserId>,
    assignee_agent_id: Option<AgentId>,
    labels: Json<Vec<Label>>,
    parent_issue_id: Option<IssueId>,
    project_id: Option<ProjectId>,
    position: i64,
    created_by: Option<UserId>,
    created_at: DateTime<Utc>,
    updated_at: DateTime<Utc>,
}

impl From<IssueRow> for Issue {
    fn from(r: IssueRow) -> Self {
        let assignee = match (r.assignee_user_id, r.assignee_agent_id) {
            (Some(u), _) => Some(Assignee::User(u)),
            (None, Some(a)) => Some(Assignee::Agent(a)),
            (None, None) => None,
        };
        Issue {
            id: r.issue_id,
            workspace_id: r.workspace_id,
            key: IssueKey {
                prefix: r.issue_prefix,
                number: r.number,
            },
            title: r.title,
            body: r.body,
            status: r.status,
            priority: r.priority,
            assignee,
            labels: r.labels.0,
            parent: r.parent_issue_id,
            project: r.project_id,
            position: r.position,
            created_by: r.created_by,
            created_at: r.created_at,
            updated_at: r.updated_at,
        }
    }
}

/// Splits an assignee into the two nullable columns.
pub(super) fn assignee_columns(a: Option<Assignee>) -> (Option<UserId>, Option<AgentId>) {
    match a {
        Some(Assignee::User(u)) => (Some(u), None),
        Some(Assignee::Agent(g)) => (None, Some(g)),
        None => (None, None),
    }
}

#[derive(sqlx::FromRow)]
pub(super) struct CommentRow {
    comment_id: CommentId,
    issue_id: IssueId,
    author_user_id: Option<UserId>,
    author_agent_id: Option<AgentId>,
    body: String,
    run_id: Option<RunId>,
    created_at: DateTime<Utc>,
    edited_at: Option<DateTime<Utc>>,
}

impl From<CommentRow> for Comment {
    fn from(r: CommentRow) -> Self {
        let author = author(r.author_user_id, r.author_agent_id);
        Comment {
            id: r.comment_id,
            issue_id: r.issue_id,
            author,
            body: r.body,
            run_id: r.run_id,
            created_at: r.created_at,
            edited_at: r.edited_at,
        }
    }
}

#[derive(sqlx::FromRow)]
pub(super) struct ActivityRow {
    issue_activity_id: ActivityId,
    issue_id: IssueId,
    actor_user_id: Option<UserId>,
    actor_agent_id: Option<AgentId>,
    kind: ActivityKind,
    detail: Json<serde_json::Value>,
    created_at: DateTime<Utc>,
}

impl From<ActivityRow> for Activity {
    fn from(r: ActivityRow) -> Self {
        Activity {
            id: r.issue_activity_id,
            issue_id: r.issue_id,
            actor: author(r.actor_user_id, r.actor_agent_id),
            kind: r.kind,
            detail: r.detail.0,
            at: r.created_at,
        }
    }
}

/// Who did it, from the two nullable actor columns.
pub(super) fn author(user: Option<UserId>, agent: Option<AgentId>) -> CommentAuthor {
    match (user, agent) {
        (Some(u), _) => CommentAuthor::User(u),
        (None, Some(a)) => CommentAuthor::Agent(a),
        (None, None) => CommentAuthor::System,
    }
}

/// Splits an actor into the two nullable columns.
pub(super) fn actor_columns(actor: CommentAuthor) -> (Option<UserId>, Option<AgentId>) {
    match actor {
        CommentAuthor::User(u) => (Some(u), None),
        CommentAuthor::Agent(a) => (None, Some(a)),
        CommentAuthor::System => (None, None),
    }
}

/// Gap between neighbouring issues in a column.
pub(super) const POSITION_STEP: i64 = 1024;

/// The issue list's order by column: the board's column order, as `IssueCursor::column_rank`.
pub(super) const COLUMN_RANK: &str = concat!(
    "case i.status when 'backlog' then 0 when 'todo' then 1 when 'in_progress' then 2 ",
    "when 'in_review' then 3 when 'done' then 4 when 'blocked' then 5 else 6 end"
);

/// A `like` pattern matching what begins with `text`, case-insensitively (for issue keys: `acm-1` finds
/// `ACM-1` and `ACM-12`).
pub(super) fn key_prefix_pattern(text: &str) -> String {
    format!("{}%", like_escaped(text))
}

/// `text` lower-cased, with `like`'s `%`, `_` and `\` escaped by `\`.
fn like_escaped(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    for c in text.to_lowercase().chars() {
        if matches!(c, '%' | '_' | '\\') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// The activity lines a patch produces against the issue as it was: one per field that really changes.
pub(super) fn patch_activity(
    old: &Issue,
    patch: &IssuePatch,
) -> Vec<(ActivityKind, serde_json::Value)> {
    use serde_json::json;
    let mut out = Vec::new();
    if let Some(title) = patch.title.as_ref().filter(|t| **t != old.title) {
        out.push((
            ActivityKind::Title,
            json!({ "from": old.title, "to": title }),
        ));
    }
    if let Some(priority) = patch.priority.filter(|p| *p != old.priority) {
        out.push((
            ActivityKind::Priority,
            json!({ "from": old.priority, "to": priority }),
        ));
    }
    if let Some(assignee) = patch.assignee.filter(|a| *a != old.assignee) {
        out.push((
            ActivityKind::Assignee,
            json!({ "from": old.assignee, "to": assignee }),
        ));
    }
    if let Some(labels) = patch.labels.as_ref().filter(|l| **l != old.labels) {
        out.push((
            ActivityKind::Labels,
            json!({ "from": old.labels, "to": labels }),
        ));
    }
    if patch.body.as_ref().is_some_and(|b| *b != old.body) {
        out.push((ActivityKind::Body, json!({})));
    }
    if let Some(project) = patch.project.filter(|p| *p != old.project) {
        out.push((
            ActivityKind::Project,
            json!({ "from": old.project, "to": project }),
        ));
    }
    out
}

macro_rules! issue_select { () => { concat!(
    "select i.issue_id, i.workspace_id, w.issue_prefix, i.number, i.title, i.body, i.status, i.priority, ",
    "i.assignee_user_id, i.assignee_agent_id, i.labels, i.parent_issue_id, i.project_id, i.position, i.created_by, ",
    "i.created_at, i.updated_at from issue i join workspace w on w.workspace_id = i.workspace_id"
) } }
pub(super) use issue_select;

macro_rules! comment_cols {
    () => {
        "comment_id, issue_id, author_user_id, author_agent_id, body, run_id, created_at, edited_at"
    };
}
pub(super) use comment_cols;

/// The position after the last issue of a column.
macro_rules! next_position {
    ($db:ty, $tx:ident, $ws:expr, $status:expr) => {
        sqlx::query_scalar::<$db, i64>(
            "select coalesce(max(position), 0) + 1024 from issue where workspace_id = $1 and status = $2")
            .bind($ws).bind($status).fetch_one(&mut *$tx).await?
    };
}
pub(super) use next_position;

/// The `and …` conditions of an `IssueFilter` (all but `limit`) on `issue i join workspace w`, shared by
/// the list and its counts so both always agree.
macro_rules! push_issue_filter {
    ($qb:ident, $filter:expr, $label_open:expr, $label_close:expr) => {{
        let filter: &IssueFilter = $filter;
        if !filter.statuses.is_empty() {
            $qb.push(" and i.status in (");
            let mut list = $qb.separated(", ");
            for status in &filter.statuses {
                list.push_bind(*status);
            }
            list.push_unseparated(")");
        }
        match filter.assignee {
            Some(Assignee::User(u)) => {
                $qb.push(" and i.assignee_user_id = ").push_bind(u);
            }
            Some(Assignee::Agent(a)) => {
                $qb.push(" and i.assignee_agent_id = ").push_bind(a);
            }
            None => {}
        }
        if let Some(priority) = filter.priority {
            $qb.push(" and i.priority = ").push_bind(priority);
        }
        if let Some(project) = filter.project {
            $qb.push(" and i.project_id = ").push_bind(project);
        }
        if let Some(label) = &filter.label {
            $qb.push($label_open)
                .push_bind(label.as_str().to_owned())
                .push($label_close);
        }
        if let Some(text) = filter.text.as_deref().map(str::trim).filter(|t| !t.is_empty()) {
            $crate::store::search::push_text_filter!($qb, text);
        }
        match (filter.after, filter.statuses.as_slice()) {
            // Within the cursor's own column, a plain (position, number) comparison the index serves.
            (Some(after), [only]) if *only == after.status => {
                $qb.push(" and (i.position, i.number) > (")
                    .push_bind(after.position)
                    .push(", ")
                    .push_bind(after.number)
                    .push(")");
            }
            (Some(after), _) => {
                $qb.push(" and (")
                    .push(COLUMN_RANK)
                    .push(", i.position, i.number) > (")
                    .push_bind(after.column_rank())
                    .push(", ")
                    .push_bind(after.position)
                    .push(", ")
                    .push_bind(after.number)
                    .push(")");
            }
            (None, _) => {}
        }
    }};
}
pub(super) use push_issue_filter;

/// Records one activity line inside the surrounding transaction.
macro_rules! insert_activity {
    ($db:ty, $tx:ident, $issue:expr, $actor:expr, $kind:expr, $detail:expr, $at:expr) => {{
        let (user, agent) = actor_columns($actor);
        sqlx::query::<$db>(
            "insert into issue_activity (issue_activity_id, issue_id, actor_user_id, actor_agent_id, kind, detail, created_at) \
             values ($1, $2, $3, $4, $5, $6, $7)")
            .bind(ActivityId::new()).bind($issue).bind(user).bind(agent).bind($kind)
            .bind(sqlx::types::Json(&$detail)).bind($at)
            .execute(&mut *$tx).await?;
    }};
}
pub(super) use insert_activity;

/// Writes `impl IssueStore for $store` on database `$db`; `impl_store!` expands it once per backend.
macro_rules! impl_issues_store {
    ($store:ty, $db:ty) => {
        const _: () = {
            use $crate::domain::*;
            use $crate::store::common::*;
            use $crate::store::issues::*;
            use $crate::store::rows::*;
            use $crate::store::{Error, Result};

            impl $store {
                /// Inserts `new` in `tx` (see [`IssueStore::create_issue`]): the workspace's next number, the
                /// end of its column, the parent's fan-in armed again, the created line in the trail.
                pub(crate) async fn insert_issue(
                    txn: &mut sqlx::Transaction<'static, $db>,
                    ws: WorkspaceId,
                    new: &NewIssue,
                ) -> Result<IssueId> {
                    let tx = &mut **txn;
                    let (id, now) = (IssueId::new(), now());
                    let (user, agent) = assignee_columns(new.assignee);
                    // The counter row lock also serialises concurrent creates in one workspace.
                    let number = sqlx::query_scalar::<$db, i64>(
                        "update workspace set issue_counter = issue_counter + 1 where workspace_id = $1 returning issue_counter")
                        .bind(ws).fetch_one(&mut *tx).await?;
                    let position = next_position!($db, tx, ws, new.status);
                    sqlx::query::<$db>(concat!(
                        "insert into issue (issue_id, workspace_id, number, title, body, status, priority, assignee_user_id, ",
                        "assignee_agent_id, labels, parent_issue_id, position, created_by, created_at, updated_at, project_id) ",
                        "values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $14, $15)"))
                        .bind(id).bind(ws).bind(number).bind(&new.title).bind(&new.body).bind(new.status)
                        .bind(new.priority).bind(user).bind(agent).bind(sqlx::types::Json(&new.labels))
                        .bind(new.parent).bind(position).bind(new.created_by).bind(now).bind(new.project)
                        .execute(&mut *tx).await?;
                    if let Some(parent) = new.parent {
                        // A new child: the parent's agent is woken again once it ends too.
                        sqlx::query::<$db>("update issue_fan_in set woken = $2 where issue_id = $1")
                            .bind(parent).bind(false).execute(&mut *tx).await?;
                    }
                    let actor = new.created_by.map_or(Actor::System, Actor::User);
                    insert_activity!($db, tx, id, actor, ActivityKind::Created, serde_json::json!({ "status": new.status }), now);
                    Ok(id)
                }
            }

            #[async_trait::async_trait]
            impl IssueStore for $store {
                async fn create_issue(&self, ws: WorkspaceId, new: &NewIssue) -> Result<Issue> {
                    let mut tx = self.begin_write().await?;
                    let id = Self::insert_issue(&mut tx, ws, new).await?;
                    tx.commit().await?;
                    self.get_issue_by_id(id).await
                }

                async fn get_issue(&self, ws: WorkspaceId, key: &IssueKey) -> Result<Issue> {
                    let row = sqlx::query_as::<$db, IssueRow>(concat!(issue_select!(),
                        " where i.workspace_id = $1 and i.number = $2 and w.issue_prefix = $3"))
                        .bind(ws).bind(key.number).bind(&key.prefix).fetch_one(&self.pool).await?;
                    Ok(row.into())
                }

                async fn get_issue_by_id(&self, id: IssueId) -> Result<Issue> {
                    let row = sqlx::query_as::<$db, IssueRow>(concat!(issue_select!(), " where i.issue_id = $1"))
                        .bind(id).fetch_one(&self.pool).await?;
                    Ok(row.into())
                }

                async fn list_issues(&self, ws: WorkspaceId, filter: &IssueFilter) -> Result<Vec<Issue>> {
                    let mut qb = sqlx::QueryBuilder::<$db>::new(concat!(issue_select!(), " where i.workspace_id = "));
                    qb.push_bind(ws);
                    push_issue_filter!(qb, filter, Self::LABEL_FILTER_OPEN, Self::LABEL_FILTER_CLOSE);
                    if let [_] = filter.statuses.as_slice() {
                        // One column: its index (workspace, status, position) gives the order as it reads.
                        qb.push(" order by i.position, i.number");
                    } else {
                        qb.push(" order by ").push(COLUMN_RANK).push(", i.position, i.number");
                    }
                    if let Some(limit) = filter.limit { qb.push(" limit ").push_bind(limit); }
                    let rows = qb.build_query_as::<IssueRow>().fetch_all(&self.pool).await?;
                    Ok(rows.into_iter().map(Into::into).collect())
                }

                async fn count_issues(&self, ws: WorkspaceId, filter: &IssueFilter) -> Result<Vec<(IssueStatus, i64)>> {
                    let mut qb = sqlx::QueryBuilder::<$db>::new(concat!(
                        "select i.status, count(*) from issue i join workspace w on w.workspace_id = i.workspace_id ",
                        "where i.workspace_id = "));
                    qb.push_bind(ws);
                    push_issue_filter!(qb, filter, Self::LABEL_FILTER_OPEN, Self::LABEL_FILTER_CLOSE);
                    qb.push(" group by i.status");
                    let counts = qb.build_query_as::<(IssueStatus, i64)>().fetch_all(&self.pool).await?;
                    Ok(IssueStatus::ALL.iter().filter_map(|s| counts.iter().find(|(c, _)| c == s).copied()).collect())
                }

                async fn list_issue_labels(&self, ws: WorkspaceId) -> Result<Vec<Label>> {
                    let mut labels = sqlx::query_scalar::<$db, String>(Self::DISTINCT_LABELS)
                        .bind(ws).fetch_all(&self.pool).await?;
                    // Sorted here, so both backends give the same order whatever their collation.
                    labels.sort();
                    labels.dedup();
                    labels.iter().map(|l| Label::parse(l).map_err(|e| Error::Other(anyhow::anyhow!("stored label {l:?}: {}", e.message)))).collect()
                }

                async fn update_issue(&self, ws: WorkspaceId, key: &IssueKey, patch: &IssuePatch, actor: Actor) -> Result<Issue> {
                    let mut tx = self.begin_write().await?;
                    let old: Issue = sqlx::query_as::<$db, IssueRow>(concat!(issue_select!(),
                        " where i.workspace_id = $1 and i.number = $2 and w.issue_prefix = $3"))
                        .bind(ws).bind(key.number).bind(&key.prefix).fetch_one(&mut *tx).await?.into();
                    let (user, agent) = assignee_columns(patch.assignee.flatten());
                    let now = now();
                    sqlx::query::<$db>(concat!(
                        "update issue set title = coalesce($2, title), body = coalesce($3, body), ",
                        "priority = coalesce($4, priority), labels = coalesce($5, labels), ",
                        "assignee_user_id = case when $6 then $7 else assignee_user_id end, ",
                        "assignee_agent_id = case when $6 then $8 else assignee_agent_id end, updated_at = $9, ",
                        "project_id = case when $10 then $11 else project_id end where issue_id = $1"))
                        .bind(old.id).bind(patch.title.as_ref()).bind(patch.body.as_deref()).bind(patch.priority)
                        .bind(patch.labels.as_ref().map(sqlx::types::Json)).bind(patch.assignee.is_some())
                        .bind(user).bind(agent).bind(now).bind(patch.project.is_some()).bind(patch.project.flatten())
                        .execute(&mut *tx).await?;
                    for (kind, detail) in patch_activity(&old, patch) {
                        insert_activity!($db, tx, old.id, actor, kind, detail, now);
                    }
                    tx.commit().await?;
                    self.get_issue_by_id(old.id).await
                }

                async fn move_issue_when(&self, ws: WorkspaceId, key: &IssueKey, only_from: Option<&[IssueStatus]>, status: IssueStatus, index: Option<usize>, actor: Actor) -> Result<Option<Issue>> {
                    let mut tx = self.begin_write().await?;
                    lock_workspace!($db, tx, ws);
                    let (id, from) = sqlx::query_as::<$db, (IssueId, IssueStatus)>(
                        "select i.issue_id, i.status from issue i join workspace w on w.workspace_id = i.workspace_id \
                         where i.workspace_id = $1 and i.number = $2 and w.issue_prefix = $3")
                        .bind(ws).bind(key.number).bind(&key.prefix).fetch_one(&mut *tx).await?;
                    if only_from.is_some_and(|only| !only.contains(&from)) {
                        // Said, not left to the drop: the workspace lock goes with the rollback.
                        tx.rollback().await?;
                        return Ok(None);
                    }
                    if from != status {
                        let detail = serde_json::json!({ "from": from, "to": status });
                        insert_activity!($db, tx, id, actor, ActivityKind::Status, detail, now());
                    }
                    let column = sqlx::query_as::<$db, (IssueId, i64)>(
                        "select issue_id, position from issue where workspace_id = $1 and status = $2 and issue_id <> $3 \
                         order by position, number")
                        .bind(ws).bind(status).bind(id).fetch_all(&mut *tx).await?;
                    let at = index.unwrap_or(column.len()).min(column.len());
                    sqlx::query::<$db>("update issue set status = $2, updated_at = $3 where issue_id = $1")
                        .bind(id).bind(status).bind(now()).execute(&mut *tx).await?;
                    if !matches!(status, IssueStatus::Done | IssueStatus::Cancelled) {
                        // A child reopened: its parent's agent is woken again once it ends.
                        sqlx::query::<$db>(
                            "update issue_fan_in set woken = $2 where woken = $3 \
                             and issue_id = (select parent_issue_id from issue where issue_id = $1)")
                            .bind(id).bind(false).bind(true).execute(&mut *tx).await?;
                    }
                    if at == column.len() {
                        // To the end: after the last, nothing else moves (a move to done in a column of
                        // thousands is one statement, not one per issue).
                        let last = column.last().map_or(0, |(_, p)| *p);
                        sqlx::query::<$db>("update issue set position = $2 where issue_id = $1")
                            .bind(id).bind(last + POSITION_STEP).execute(&mut *tx).await?;
                    } else {
                        let mut order: Vec<(IssueId, Option<i64>)> =
                            column.into_iter().map(|(i, p)| (i, Some(p))).collect();
                        order.insert(at, (id, None));
                        // Dense again; only the rows whose position changes are written.
                        for (i, (issue, was)) in (1_i64..).zip(&order) {
                            let want = i * POSITION_STEP;
                            if *was != Some(want) {
                                sqlx::query::<$db>("update issue set position = $2 where issue_id = $1")
                                    .bind(issue).bind(want).execute(&mut *tx).await?;
                            }
                        }
                    }
                    tx.commit().await?;
                    self.get_issue_by_id(id).await.map(Some)
                }

                async fn add_comment(&self, issue: IssueId, new: &NewComment) -> Result<Comment> {
                    let (user, agent) = actor_columns(new.author);
                    let row = sqlx::query_as::<$db, CommentRow>(concat!(
                        "insert into comment (comment_id, issue_id, author_user_id, author_agent_id, body, run_id, created_at) ",
                        "values ($1, $2, $3, $4, $5, $6, $7) returning ", comment_cols!()))
                        .bind(CommentId::new()).bind(issue).bind(user).bind(agent).bind(&new.body).bind(new.run_id).bind(now())
                        .fetch_one(&self.pool).await?;
                    Ok(row.into())
                }

                async fn list_comments(&self, issue: IssueId) -> Result<Vec<Comment>> {
                    let rows = sqlx::query_as::<$db, CommentRow>(concat!(
                        "select ", comment_cols!(), " from comment where issue_id = $1 order by created_at, comment_id"))
                        .bind(issue).fetch_all(&self.pool).await?;
                    Ok(rows.into_iter().map(Into::into).collect())
                }

                async fn list_comments_page(&self, issue: IssueId, after: Option<CommentId>, limit: i64) -> Result<Vec<Comment>> {
                    let rows = match after {
                        None => sqlx::query_as::<$db, CommentRow>(concat!(
                            "select ", comment_cols!(), " from comment where issue_id = $1 ",
                            "order by created_at, comment_id limit $2"))
                            .bind(issue).bind(limit).fetch_all(&self.pool).await?,
                        Some(after) => {
                            // A cursor must be a comment of this issue; compared with its stored values.
                            sqlx::query_scalar::<$db, CommentId>(
                                "select comment_id from comment where comment_id = $1 and issue_id = $2")
                                .bind(after).bind(issue).fetch_one(&self.pool).await?;
                            sqlx::query_as::<$db, CommentRow>(concat!(
                                "select ", comment_cols!(), " from comment where issue_id = $1 and (created_at, comment_id) > ",
                                "(select created_at, comment_id from comment where comment_id = $2) ",
                                "order by created_at, comment_id limit $3"))
                                .bind(issue).bind(after).bind(limit).fetch_all(&self.pool).await?
                        }
                    };
                    Ok(rows.into_iter().map(Into::into).collect())
                }

                async fn get_comment(&self, issue: IssueId, id: CommentId) -> Result<Comment> {
                    let row = sqlx::query_as::<$db, CommentRow>(concat!(
                        "select ", comment_cols!(), " from comment where comment_id = $1 and issue_id = $2"))
                        .bind(id).bind(issue).fetch_one(&self.pool).await?;
                    Ok(row.into())
                }

                async fn edit_comment(&self, issue: IssueId, id: CommentId, body: &str) -> Result<Comment> {
                    let row = sqlx::query_as::<$db, CommentRow>(concat!(
                        "update comment set body = $3, edited_at = $4 where comment_id = $1 and issue_id = $2 returning ",
                        comment_cols!()))
                        .bind(id).bind(issue).bind(body).bind(now()).fetch_one(&self.pool).await?;
                    Ok(row.into())
                }

                async fn delete_comment(&self, issue: IssueId, id: CommentId) -> Result<()> {
                    let done = sqlx::query::<$db>("delete from comment where comment_id = $1 and issue_id = $2")
                        .bind(id).bind(issue).execute(&self.pool).await?;
                    if done.rows_affected() == 0 { return Err(Error::NotFound); }
                    Ok(())
                }

                async fn delete_issue(&self, ws: WorkspaceId, key: &IssueKey) -> Result<Issue> {
                    let mut tx = self.begin_write().await?;
                    lock_workspace!($db, tx, ws);
                    let issue: Issue = sqlx::query_as::<$db, IssueRow>(concat!(issue_select!(),
                        " where i.workspace_id = $1 and i.number = $2 and w.issue_prefix = $3"))
                        .bind(ws).bind(key.number).bind(&key.prefix).fetch_one(&mut *tx).await?.into();
                    let live = sqlx::query_scalar::<$db, i64>(
                        "select count(*) from run where issue_id = $1 and status in ('claimed', 'running')")
                        .bind(issue.id).fetch_one(&mut *tx).await?;
                    if live > 0 { return Err(Error::conflict("run_live")); }
                    // Everything else that refers to the issue goes with it (`on delete cascade` / `set null`).
                    sqlx::query::<$db>("delete from issue where issue_id = $1").bind(issue.id).execute(&mut *tx).await?;
                    tx.commit().await?;
                    Ok(issue)
                }

                async fn list_activity(&self, issue: IssueId) -> Result<Vec<Activity>> {
                    let rows = sqlx::query_as::<$db, ActivityRow>(
                        "select issue_activity_id, issue_id, actor_user_id, actor_agent_id, kind, detail, created_at \
                         from issue_activity where issue_id = $1 order by created_at, issue_activity_id")
                        .bind(issue).fetch_all(&self.pool).await?;
                    Ok(rows.into_iter().map(Into::into).collect())
                }
            }
        };
    };
}
pub(super) use impl_issues_store;
