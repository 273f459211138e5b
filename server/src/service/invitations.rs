//! Invitations: an existing account joins a workspace only with its consent. Adding a member by the email
//! of an existing account creates a pending invitation; the invited person accepts or declines it; owners
//! and admins list and revoke pending ones. An invitation expires after [`INVITATION_TTL`].

use chrono::Utc;
use serde::Serialize;

use super::{Caller, Error, Result};
use crate::domain::{Invitation, InvitationId, Member, NewInvitation, Role, User};
use crate::engine::Engine;

/// How long an invitation waits for an answer.
pub const INVITATION_TTL: chrono::TimeDelta = chrono::TimeDelta::days(14);

/// Invites an existing account (the caller has already been checked as a manager allowed to grant `role`).
pub(super) async fn invite(
    state: &Engine,
    caller: &Caller,
    user: &User,
    role: Role,
) -> Result<Invitation> {
    let new = NewInvitation {
        workspace_id: caller.ws.id,
        user_id: user.id,
        role,
        invited_by: caller.user.id,
        expires_at: Utc::now() + INVITATION_TTL,
    };
    Ok(state.store.create_invitation(&new).await?)
}

/// The workspace's pending invitations (owners and admins).
pub async fn list(state: &Engine, caller: &Caller) -> Result<Vec<Invitation>> {
    caller.require_manager()?;
    Ok(state
        .store
        .list_invitations(caller.ws.id, Utc::now())
        .await?)
}

/// Revokes a pending invitation of the caller's workspace (owners and admins).
pub async fn revoke(state: &Engine, caller: &Caller, id: &str) -> Result<()> {
    caller.require_manager()?;
    Ok(state
        .store
        .revoke_invitation(caller.ws.id, parse_id(id)?)
        .await?)
}

/// The invitations waiting for `user`'s answer.
pub async fn mine(state: &Engine, user: &User) -> Result<Vec<Invitation>> {
    Ok(state
        .store
        .list_invitations_for_user(user.id, Utc::now())
        .await?)
}

/// Accepts one of `user`'s own invitations: only now does the membership exist. Someone else's (or an
/// expired) invitation is 404.
pub async fn accept(state: &Engine, user: &User, id: &str) -> Result<Member> {
    Ok(state
        .store
        .accept_invitation(parse_id(id)?, user.id, Utc::now())
        .await?)
}

/// Declines one of `user`'s own invitations.
pub async fn decline(state: &Engine, user: &User, id: &str) -> Result<()> {
    Ok(state
        .store
        .decline_invitation(parse_id(id)?, user.id)
        .await?)
}

fn parse_id(raw: &str) -> Result<InvitationId> {
    raw.parse().map_err(|_| Error::NotFound)
}

/// An invitation as the API shows it, to the invited person and to the workspace's managers.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct InvitationView {
    pub id: uuid::Uuid,
    /// The workspace's slug.
    pub workspace: String,
    pub workspace_name: String,
    /// The invited account.
    pub email: String,
    pub name: String,
    /// The role given on acceptance.
    pub role: String,
    /// The inviter's display name.
    pub invited_by: Option<String>,
    pub created_at: chrono::DateTime<Utc>,
    pub expires_at: chrono::DateTime<Utc>,
}

impl From<&Invitation> for InvitationView {
    fn from(i: &Invitation) -> Self {
        InvitationView {
            id: i.id.0,
            workspace: i.workspace_slug.to_string(),
            workspace_name: i.workspace_name.clone(),
            email: i.user.email.as_str().to_owned(),
            name: i.user.display_name.clone(),
            role: i.role.to_string(),
            invited_by: i.invited_by_name.clone(),
            created_at: i.created_at,
            expires_at: i.expires_at,
        }
    }
}
