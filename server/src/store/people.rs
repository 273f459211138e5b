//! Workspaces, users, members and invitations: who exists, who belongs where with which role, and the
//! workspace's own settings (repository, loop-guard limits, egress allow-list, check command).

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use sqlx::types::Json;

use super::Result;
use super::rows::UserRow;
use crate::domain::{
    CHECK_TIMEOUT_DEFAULT_SECS, CheckSpec, Email, HostPattern, Invitation, InvitationId,
    IssuePrefix, Member, NewInvitation, NewUser, NewWorkspace, Role, Slug, User, UserId, Workspace,
    WorkspaceId,
};

/// The people use-cases: workspaces and their settings, users, memberships, invitations.
#[async_trait]
pub trait PeopleStore: Send + Sync {
    /// Creates a workspace with `owner` as its first owner, atomically.
    async fn create_workspace(&self, new: &NewWorkspace, owner: UserId) -> Result<Workspace>;
    /// A workspace by id.
    async fn get_workspace(&self, id: WorkspaceId) -> Result<Workspace>;
    /// A workspace by slug.
    async fn get_workspace_by_slug(&self, slug: &Slug) -> Result<Workspace>;
    /// Every workspace, oldest first (start-up tasks such as seeding built-in skills).
    async fn list_workspaces(&self) -> Result<Vec<Workspace>>;
    /// The workspaces a user belongs to, with their role, oldest first.
    async fn list_workspaces_for_user(&self, user: UserId) -> Result<Vec<(Workspace, Role)>>;
    /// Sets or clears the local repository that runs get worktrees of.
    async fn set_workspace_repo(&self, id: WorkspaceId, repo: Option<&str>) -> Result<Workspace>;
    /// Sets the loop guard's limits (the caller validates their ranges).
    async fn set_workspace_limits(
        &self,
        id: WorkspaceId,
        mention_depth_limit: i32,
        agent_runs_per_issue_per_hour: i32,
    ) -> Result<Workspace>;
    /// Replaces the workspace's default egress allow-list (every agent's runs may reach these hosts unless
    /// the agent has no network).
    async fn set_workspace_egress(
        &self,
        id: WorkspaceId,
        hosts: &[HostPattern],
    ) -> Result<Workspace>;
    /// Sets or clears the workspace's check command (what ensembles run unless they name their own).
    async fn set_workspace_check(
        &self,
        id: WorkspaceId,
        check: Option<&CheckSpec>,
    ) -> Result<Workspace>;
    /// Creates a user.
    async fn create_user(&self, new: &NewUser) -> Result<User>;
    /// A user by id.
    async fn get_user(&self, id: UserId) -> Result<User>;
    /// A user by email.
    async fn get_user_by_email(&self, email: &Email) -> Result<User>;
    /// How many users exist (0 means first-run setup is pending).
    async fn count_users(&self) -> Result<i64>;
    /// Creates a user and, in the same transaction, a workspace they own (first-run setup).
    async fn create_owner_and_workspace(
        &self,
        user: &NewUser,
        ws: &NewWorkspace,
    ) -> Result<(User, Workspace)>;
    /// Creates a user and adds them to `ws` with `role`, atomically.
    async fn add_new_member(&self, ws: WorkspaceId, user: &NewUser, role: Role) -> Result<Member>;
    /// Adds a member with a role.
    async fn add_member(&self, ws: WorkspaceId, user: UserId, role: Role) -> Result<Member>;
    /// One membership.
    async fn get_member(&self, ws: WorkspaceId, user: UserId) -> Result<Member>;
    /// All members, oldest first.
    async fn list_members(&self, ws: WorkspaceId) -> Result<Vec<Member>>;
    /// Changes a role; refuses (`last_owner`) to leave the workspace without an owner.
    async fn set_member_role(&self, ws: WorkspaceId, user: UserId, role: Role) -> Result<Member>;
    /// Removes a member; refuses (`last_owner`) to remove the last owner.
    async fn remove_member(&self, ws: WorkspaceId, user: UserId) -> Result<()>;
    /// Invites an existing account, or refreshes (role, inviter, expiry) its pending invitation;
    /// `member_pkey` when it is already a member.
    async fn create_invitation(&self, new: &NewInvitation) -> Result<Invitation>;
    /// A workspace's invitations still pending at `now`, oldest first.
    async fn list_invitations(
        &self,
        ws: WorkspaceId,
        now: DateTime<Utc>,
    ) -> Result<Vec<Invitation>>;
    /// The invitations addressed to `user` still pending at `now`, oldest first.
    async fn list_invitations_for_user(
        &self,
        user: UserId,
        now: DateTime<Utc>,
    ) -> Result<Vec<Invitation>>;
    /// Accepts `user`'s own pending invitation: the membership is created and the invitation removed,
    /// atomically. `NotFound` when it is not `user`'s, has expired by `now`, or does not exist.
    async fn accept_invitation(
        &self,
        id: InvitationId,
        user: UserId,
        now: DateTime<Utc>,
    ) -> Result<Member>;
    /// Declines `user`'s own invitation (`NotFound` when it is not theirs).
    async fn decline_invitation(&self, id: InvitationId, user: UserId) -> Result<()>;
    /// Revokes an invitation of workspace `ws` (`NotFound` when it is not that workspace's).
    async fn revoke_invitation(&self, ws: WorkspaceId, id: InvitationId) -> Result<()>;
}

#[derive(sqlx::FromRow)]
pub(super) struct WorkspaceRow {
    workspace_id: WorkspaceId,
    name: String,
    slug: Slug,
    issue_prefix: IssuePrefix,
    issue_counter: i64,
    repo_path: Option<String>,
    created_at: DateTime<Utc>,
    mention_depth_limit: i32,
    agent_runs_per_issue_per_hour: i32,
    check_command: Option<String>,
    check_timeout_secs: i32,
    egress_hosts: Json<Vec<HostPattern>>,
}

impl From<WorkspaceRow> for Workspace {
    fn from(r: WorkspaceRow) -> Self {
        Workspace {
            id: r.workspace_id,
            name: r.name,
            slug: r.slug,
            issue_prefix: r.issue_prefix,
            issue_counter: r.issue_counter,
            repo_path: r.repo_path,
            created_at: r.created_at,
            mention_depth_limit: r.mention_depth_limit,
            agent_runs_per_issue_per_hour: r.agent_runs_per_issue_per_hour,
            check: r.check_command.map(|command| CheckSpec {
                command,
                timeout_secs: u64::try_from(r.check_timeout_secs)
                    .unwrap_or(CHECK_TIMEOUT_DEFAULT_SECS),
            }),
            egress_hosts: r.egress_hosts.0,
        }
    }
}

#[derive(sqlx::FromRow)]
pub(super) struct WorkspaceRoleRow {
    #[sqlx(flatten)]
    workspace: WorkspaceRow,
    role: Role,
}

impl From<WorkspaceRoleRow> for (Workspace, Role) {
    fn from(r: WorkspaceRoleRow) -> Self {
        (r.workspace.into(), r.role)
    }
}

#[derive(sqlx::FromRow)]
pub(super) struct MemberRow {
    workspace_id: WorkspaceId,
    role: Role,
    joined_at: DateTime<Utc>,
    #[sqlx(flatten)]
    user: UserRow,
}

impl From<MemberRow> for Member {
    fn from(r: MemberRow) -> Self {
        Member {
            workspace_id: r.workspace_id,
            user: r.user.into(),
            role: r.role,
            joined_at: r.joined_at,
        }
    }
}

#[derive(sqlx::FromRow)]
pub(super) struct InvitationRow {
    invitation_id: InvitationId,
    workspace_id: WorkspaceId,
    workspace_name: String,
    workspace_slug: Slug,
    role: Role,
    invited_by: Option<UserId>,
    invited_by_name: Option<String>,
    invited_at: DateTime<Utc>,
    expires_at: DateTime<Utc>,
    #[sqlx(flatten)]
    user: UserRow,
}

impl From<InvitationRow> for Invitation {
    fn from(r: InvitationRow) -> Self {
        Invitation {
            id: r.invitation_id,
            workspace_id: r.workspace_id,
            workspace_name: r.workspace_name,
            workspace_slug: r.workspace_slug,
            user: r.user.into(),
            role: r.role,
            invited_by: r.invited_by,
            invited_by_name: r.invited_by_name,
            created_at: r.invited_at,
            expires_at: r.expires_at,
        }
    }
}

macro_rules! member_select {
    () => {
        concat!(
            "select m.workspace_id, m.role, m.created_at as joined_at, ",
            user_cols!(),
            " from member m join app_user u on u.user_id = m.user_id"
        )
    };
}
pub(super) use member_select;

macro_rules! invitation_select {
    () => {
        concat!(
            "select i.invitation_id, i.workspace_id, w.name as workspace_name, w.slug as workspace_slug, i.role, ",
            "i.invited_by, b.display_name as invited_by_name, i.created_at as invited_at, i.expires_at, ",
            user_cols!(),
            " from invitation i join workspace w on w.workspace_id = i.workspace_id ",
            "join app_user u on u.user_id = i.user_id left join app_user b on b.user_id = i.invited_by"
        )
    };
}
pub(super) use invitation_select;

/// Refuses (`last_owner`) a change that would take away `user`'s ownership when they are the only owner.
macro_rules! guard_last_owner {
    ($db:ty, $tx:ident, $ws:expr, $user:expr, $takes_ownership:expr) => {{
        lock_workspace!($db, $tx, $ws);
        let role = sqlx::query_scalar::<$db, Role>(
            "select role from member where workspace_id = $1 and user_id = $2",
        )
        .bind($ws)
        .bind($user)
        .fetch_one(&mut *$tx)
        .await?;
        if role == Role::Owner && $takes_ownership {
            let owners = sqlx::query_scalar::<$db, i64>(
                "select count(*) from member where workspace_id = $1 and role = 'owner'",
            )
            .bind($ws)
            .fetch_one(&mut *$tx)
            .await?;
            if owners <= 1 {
                return Err(Error::conflict("last_owner"));
            }
        }
    }};
}
pub(super) use guard_last_owner;

/// Writes `impl PeopleStore for $store` on database `$db`; `impl_store!` expands it once per backend.
macro_rules! impl_people_store {
    ($store:ty, $db:ty) => {
        const _: () = {
            use $crate::domain::*;
            use $crate::store::common::*;
            use $crate::store::people::*;
            use $crate::store::rows::*;
            use $crate::store::{Error, Result};

            #[async_trait::async_trait]
            impl PeopleStore for $store {
                async fn create_workspace(&self, new: &NewWorkspace, owner: UserId) -> Result<Workspace> {
                    let (id, now) = (WorkspaceId::new(), now());
                    let mut tx = self.begin_write().await?;
                    let row = sqlx::query_as::<$db, WorkspaceRow>(concat!(
                        "insert into workspace (workspace_id, name, slug, issue_prefix, issue_counter, created_at) ",
                        "values ($1, $2, $3, $4, 0, $5) returning ", ws_cols!(bare)))
                        .bind(id).bind(&new.name).bind(&new.slug).bind(&new.issue_prefix).bind(now)
                        .fetch_one(&mut *tx).await?;
                    sqlx::query::<$db>("insert into member (workspace_id, user_id, role, created_at) values ($1, $2, $3, $4)")
                        .bind(id).bind(owner).bind(Role::Owner).bind(now)
                        .execute(&mut *tx).await?;
                    tx.commit().await?;
                    Ok(row.into())
                }

                async fn get_workspace(&self, id: WorkspaceId) -> Result<Workspace> {
                    let row = sqlx::query_as::<$db, WorkspaceRow>(concat!("select ", ws_cols!(), " from workspace w where w.workspace_id = $1"))
                        .bind(id).fetch_one(&self.pool).await?;
                    Ok(row.into())
                }

                async fn get_workspace_by_slug(&self, slug: &Slug) -> Result<Workspace> {
                    let row = sqlx::query_as::<$db, WorkspaceRow>(concat!("select ", ws_cols!(), " from workspace w where w.slug = $1"))
                        .bind(slug).fetch_one(&self.pool).await?;
                    Ok(row.into())
                }

                async fn list_workspaces(&self) -> Result<Vec<Workspace>> {
                    let rows = sqlx::query_as::<$db, WorkspaceRow>(concat!("select ", ws_cols!(), " from workspace w order by w.created_at, w.workspace_id"))
                        .fetch_all(&self.pool).await?;
                    Ok(rows.into_iter().map(Into::into).collect())
                }

                async fn list_workspaces_for_user(&self, user: UserId) -> Result<Vec<(Workspace, Role)>> {
                    let rows = sqlx::query_as::<$db, WorkspaceRoleRow>(concat!(
                        "select ", ws_cols!(), ", m.role from workspace w join member m on m.workspace_id = w.workspace_id ",
                        "where m.user_id = $1 order by w.created_at, w.workspace_id"))
                        .bind(user).fetch_all(&self.pool).await?;
                    Ok(rows.into_iter().map(Into::into).collect())
                }

                async fn set_workspace_repo(&self, id: WorkspaceId, repo: Option<&str>) -> Result<Workspace> {
                    let row = sqlx::query_as::<$db, WorkspaceRow>(concat!(
                        "update workspace set repo_path = $2 where workspace_id = $1 returning ", ws_cols!(bare)))
                        .bind(id).bind(repo).fetch_one(&self.pool).await?;
                    Ok(row.into())
                }

                async fn set_workspace_limits(&self, id: WorkspaceId, mention_depth_limit: i32, agent_runs_per_issue_per_hour: i32) -> Result<Workspace> {
                    let row = sqlx::query_as::<$db, WorkspaceRow>(concat!(
                        "update workspace set mention_depth_limit = $2, agent_runs_per_issue_per_hour = $3 ",
                        "where workspace_id = $1 returning ", ws_cols!(bare)))
                        .bind(id).bind(mention_depth_limit).bind(agent_runs_per_issue_per_hour)
                        .fetch_one(&self.pool).await?;
                    Ok(row.into())
                }

                async fn set_workspace_egress(&self, id: WorkspaceId, hosts: &[HostPattern]) -> Result<Workspace> {
                    let row = sqlx::query_as::<$db, WorkspaceRow>(concat!(
                        "update workspace set egress_hosts = $2 where workspace_id = $1 returning ", ws_cols!(bare)))
                        .bind(id).bind(sqlx::types::Json(hosts))
                        .fetch_one(&self.pool).await?;
                    Ok(row.into())
                }

                async fn set_workspace_check(&self, id: WorkspaceId, check: Option<&CheckSpec>) -> Result<Workspace> {
                    let timeout = check.map_or(CHECK_TIMEOUT_DEFAULT_SECS, |c| c.timeout_secs);
                    let row = sqlx::query_as::<$db, WorkspaceRow>(concat!(
                        "update workspace set check_command = $2, check_timeout_secs = $3 ",
                        "where workspace_id = $1 returning ", ws_cols!(bare)))
                        .bind(id).bind(check.map(|c| c.command.as_str()))
                        .bind(i32::try_from(timeout).unwrap_or(i32::MAX))
                        .fetch_one(&self.pool).await?;
                    Ok(row.into())
                }

                async fn create_user(&self, new: &NewUser) -> Result<User> {
                    let row = sqlx::query_as::<$db, UserRow>(concat!(
                        "insert into app_user (user_id, email, display_name, password_hash, created_at) ",
                        "values ($1, $2, $3, $4, $5) returning ", user_cols!(bare)))
                        .bind(UserId::new()).bind(&new.email).bind(&new.display_name).bind(&new.password_hash).bind(now())
                        .fetch_one(&self.pool).await?;
                    Ok(row.into())
                }

                async fn get_user(&self, id: UserId) -> Result<User> {
                    let row = sqlx::query_as::<$db, UserRow>(concat!("select ", user_cols!(), " from app_user u where u.user_id = $1"))
                        .bind(id).fetch_one(&self.pool).await?;
                    Ok(row.into())
                }

                async fn get_user_by_email(&self, email: &Email) -> Result<User> {
                    let row = sqlx::query_as::<$db, UserRow>(concat!("select ", user_cols!(), " from app_user u where u.email = $1"))
                        .bind(email).fetch_one(&self.pool).await?;
                    Ok(row.into())
                }

                async fn count_users(&self) -> Result<i64> {
                    Ok(sqlx::query_scalar::<$db, i64>("select count(*) from app_user").fetch_one(&self.pool).await?)
                }

                async fn create_owner_and_workspace(&self, user: &NewUser, new: &NewWorkspace) -> Result<(User, Workspace)> {
                    let (user_id, ws_id, now) = (UserId::new(), WorkspaceId::new(), now());
                    let mut tx = self.begin_write().await?;
                    let user = sqlx::query_as::<$db, UserRow>(concat!(
                        "insert into app_user (user_id, email, display_name, password_hash, created_at) ",
                        "values ($1, $2, $3, $4, $5) returning ", user_cols!(bare)))
                        .bind(user_id).bind(&user.email).bind(&user.display_name).bind(&user.password_hash).bind(now)
                        .fetch_one(&mut *tx).await?;
                    let ws = sqlx::query_as::<$db, WorkspaceRow>(concat!(
                        "insert into workspace (workspace_id, name, slug, issue_prefix, issue_counter, created_at) ",
                        "values ($1, $2, $3, $4, 0, $5) returning ", ws_cols!(bare)))
                        .bind(ws_id).bind(&new.name).bind(&new.slug).bind(&new.issue_prefix).bind(now)
                        .fetch_one(&mut *tx).await?;
                    sqlx::query::<$db>("insert into member (workspace_id, user_id, role, created_at) values ($1, $2, $3, $4)")
                        .bind(ws_id).bind(user_id).bind(Role::Owner).bind(now)
                        .execute(&mut *tx).await?;
                    tx.commit().await?;
                    Ok((user.into(), ws.into()))
                }

                async fn add_new_member(&self, ws: WorkspaceId, user: &NewUser, role: Role) -> Result<Member> {
                    let (user_id, now) = (UserId::new(), now());
                    let mut tx = self.begin_write().await?;
                    sqlx::query::<$db>("insert into app_user (user_id, email, display_name, password_hash, created_at) values ($1, $2, $3, $4, $5)")
                        .bind(user_id).bind(&user.email).bind(&user.display_name).bind(&user.password_hash).bind(now)
                        .execute(&mut *tx).await?;
                    sqlx::query::<$db>("insert into member (workspace_id, user_id, role, created_at) values ($1, $2, $3, $4)")
                        .bind(ws).bind(user_id).bind(role).bind(now)
                        .execute(&mut *tx).await?;
                    tx.commit().await?;
                    self.get_member(ws, user_id).await
                }

                async fn add_member(&self, ws: WorkspaceId, user: UserId, role: Role) -> Result<Member> {
                    sqlx::query::<$db>("insert into member (workspace_id, user_id, role, created_at) values ($1, $2, $3, $4)")
                        .bind(ws).bind(user).bind(role).bind(now())
                        .execute(&self.pool).await?;
                    self.get_member(ws, user).await
                }

                async fn get_member(&self, ws: WorkspaceId, user: UserId) -> Result<Member> {
                    let row = sqlx::query_as::<$db, MemberRow>(concat!(member_select!(), " where m.workspace_id = $1 and m.user_id = $2"))
                        .bind(ws).bind(user).fetch_one(&self.pool).await?;
                    Ok(row.into())
                }

                async fn list_members(&self, ws: WorkspaceId) -> Result<Vec<Member>> {
                    let rows = sqlx::query_as::<$db, MemberRow>(concat!(member_select!(), " where m.workspace_id = $1 order by m.created_at, u.email"))
                        .bind(ws).fetch_all(&self.pool).await?;
                    Ok(rows.into_iter().map(Into::into).collect())
                }

                async fn set_member_role(&self, ws: WorkspaceId, user: UserId, role: Role) -> Result<Member> {
                    let mut tx = self.begin_write().await?;
                    guard_last_owner!($db, tx, ws, user, role != Role::Owner);
                    let done = sqlx::query::<$db>("update member set role = $3 where workspace_id = $1 and user_id = $2")
                        .bind(ws).bind(user).bind(role).execute(&mut *tx).await?;
                    if done.rows_affected() == 0 { return Err(Error::NotFound); }
                    tx.commit().await?;
                    self.get_member(ws, user).await
                }

                async fn remove_member(&self, ws: WorkspaceId, user: UserId) -> Result<()> {
                    let mut tx = self.begin_write().await?;
                    guard_last_owner!($db, tx, ws, user, true);
                    let done = sqlx::query::<$db>("delete from member where workspace_id = $1 and user_id = $2")
                        .bind(ws).bind(user).execute(&mut *tx).await?;
                    if done.rows_affected() == 0 { return Err(Error::NotFound); }
                    tx.commit().await?;
                    Ok(())
                }

                async fn create_invitation(&self, new: &NewInvitation) -> Result<Invitation> {
                    let mut tx = self.begin_write().await?;
                    let member = sqlx::query_scalar::<$db, UserId>("select user_id from member where workspace_id = $1 and user_id = $2")
                        .bind(new.workspace_id).bind(new.user_id).fetch_optional(&mut *tx).await?;
                    if member.is_some() { return Err(Error::conflict("member_pkey")); }
                    sqlx::query::<$db>(
                        "insert into invitation (invitation_id, workspace_id, user_id, role, invited_by, created_at, expires_at) \
                         values ($1, $2, $3, $4, $5, $6, $7) on conflict (workspace_id, user_id) do update set \
                         role = excluded.role, invited_by = excluded.invited_by, created_at = excluded.created_at, \
                         expires_at = excluded.expires_at")
                        .bind(InvitationId::new()).bind(new.workspace_id).bind(new.user_id).bind(new.role)
                        .bind(new.invited_by).bind(now()).bind(micros(new.expires_at))
                        .execute(&mut *tx).await?;
                    let row = sqlx::query_as::<$db, InvitationRow>(concat!(invitation_select!(), " where i.workspace_id = $1 and i.user_id = $2"))
                        .bind(new.workspace_id).bind(new.user_id).fetch_one(&mut *tx).await?;
                    tx.commit().await?;
                    Ok(row.into())
                }

                async fn list_invitations(&self, ws: WorkspaceId, now: DateTime<Utc>) -> Result<Vec<Invitation>> {
                    let rows = sqlx::query_as::<$db, InvitationRow>(concat!(invitation_select!(),
                        " where i.workspace_id = $1 and i.expires_at > $2 order by i.created_at, i.invitation_id"))
                        .bind(ws).bind(now).fetch_all(&self.pool).await?;
                    Ok(rows.into_iter().map(Into::into).collect())
                }

                async fn list_invitations_for_user(&self, user: UserId, now: DateTime<Utc>) -> Result<Vec<Invitation>> {
                    let rows = sqlx::query_as::<$db, InvitationRow>(concat!(invitation_select!(),
                        " where i.user_id = $1 and i.expires_at > $2 order by i.created_at, i.invitation_id"))
                        .bind(user).bind(now).fetch_all(&self.pool).await?;
                    Ok(rows.into_iter().map(Into::into).collect())
                }

                async fn accept_invitation(&self, id: InvitationId, user: UserId, now: DateTime<Utc>) -> Result<Member> {
                    let mut tx = self.begin_write().await?;
                    let found = sqlx::query_as::<$db, (WorkspaceId, Role)>(
                        "delete from invitation where invitation_id = $1 and user_id = $2 and expires_at > $3 returning workspace_id, role")
                        .bind(id).bind(user).bind(now).fetch_optional(&mut *tx).await?;
                    let Some((ws, role)) = found else { return Err(Error::NotFound) };
                    sqlx::query::<$db>("insert into member (workspace_id, user_id, role, created_at) values ($1, $2, $3, $4) \
                         on conflict (workspace_id, user_id) do nothing")
                        .bind(ws).bind(user).bind(role).bind(micros(now))
                        .execute(&mut *tx).await?;
                    tx.commit().await?;
                    self.get_member(ws, user).await
                }

                async fn decline_invitation(&self, id: InvitationId, user: UserId) -> Result<()> {
                    let done = sqlx::query::<$db>("delete from invitation where invitation_id = $1 and user_id = $2")
                        .bind(id).bind(user).execute(&self.pool).await?;
                    if done.rows_affected() == 0 { return Err(Error::NotFound); }
                    Ok(())
                }

                async fn revoke_invitation(&self, ws: WorkspaceId, id: InvitationId) -> Result<()> {
                    let done = sqlx::query::<$db>("delete from invitation where invitation_id = $1 and workspace_id = $2")
                        .bind(id).bind(ws).execute(&self.pool).await?;
                    if done.rows_affected() == 0 { return Err(Error::NotFound); }
                    Ok(())
                }
            }
        };
    };
}
pub(super) use impl_people_store;
