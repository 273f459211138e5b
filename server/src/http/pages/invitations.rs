//! `/invitations`: the signed-in person's invitations, in no workspace (they may have none yet). Only
//! they can join or decline; an agent's run token is refused.

use axum::Router;
use axum::extract::{Path, State};
use axum::response::IntoResponse;
use axum::routing::{get, post};
use muster_web::views::{InvitationRowView, InvitationsView};

use super::{PageResult, see_other};
use crate::domain::User;
use crate::http::Error;
use crate::http::extract::CurrentUser;
use crate::http::form::{Form, NoFields};
use crate::service::invitations as svc;
use crate::state::AppState;

pub(super) fn router() -> Router<AppState> {
    Router::new()
        .route("/invitations", get(list))
        .route("/invitations/{id}/accept", post(accept))
        .route("/invitations/{id}/decline", post(decline))
}

/// The person behind the request; a run's token never answers an invitation.
fn person(current: CurrentUser) -> Result<User, Error> {
    if current.token.as_ref().is_some_and(|t| t.run_id.is_some()) {
        return Err(Error::Forbidden);
    }
    Ok(current.user)
}

async fn list(State(state): State<AppState>, current: CurrentUser) -> PageResult {
    let csrf = current.csrf();
    let user = person(current)?;
    let mine = svc::mine(&state, &user).await?;
    let home = state.store.list_workspaces_for_user(user.id).await?;
    let view = InvitationsView {
        csrf,
        user_name: user.display_name.clone(),
        invitations: mine
            .iter()
            .map(|i| InvitationRowView {
                workspace_name: i.workspace_name.clone(),
                role: i.role.to_string(),
                invited_by: i.invited_by_name.clone(),
                expires_at: i.expires_at,
                accept_url: format!("/invitations/{}/accept", i.id),
                decline_url: format!("/invitations/{}/decline", i.id),
            })
            .collect(),
        home_url: home.first().map(|(ws, _)| format!("/w/{}", ws.slug)),
    };
    Ok(muster_web::pages::invitations(&view).into_response())
}

/// Joins the workspace and opens its board.
async fn accept(
    State(state): State<AppState>,
    current: CurrentUser,
    Path(id): Path<String>,
    _form: Form<NoFields>,
) -> PageResult {
    let user = person(current)?;
    let member = svc::accept(&state, &user, &id).await?;
    let ws = state.store.get_workspace(member.workspace_id).await?;
    Ok(see_other(&format!("/w/{}", ws.slug)))
}

async fn decline(
    State(state): State<AppState>,
    current: CurrentUser,
    Path(id): Path<String>,
    _form: Form<NoFields>,
) -> PageResult {
    let user = person(current)?;
    svc::decline(&state, &user, &id).await?;
    Ok(see_other("/invitations"))
}
