//! Members and API token pages.

use axum::Router;
use axum::extract::{Path, State};
use axum::response::IntoResponse;
use axum::routing::{get, post};
use muster_web::views::{
    FormErrors, MemberRowView, MembersView, NavItem, OptionView, PendingInvitationView,
    TokenRowView, TokensView,
};

use super::views::{People, nav};
use super::{PageResult, form_errors, invalid, see_other};
use crate::domain::{Actor, Role};
use crate::http::extract::WsMember;
use crate::http::form::{Form, NameForm, NoFields};
use crate::service::invitations;
use crate::service::members::{self as svc, MemberInput};
use crate::service::tokens;
use crate::state::AppState;

pub(super) fn router() -> Router<AppState> {
    Router::new()
        .route("/w/{slug}/members", get(list).post(add))
        .route("/w/{slug}/members/{user_id}/role", post(set_role))
        .route("/w/{slug}/members/{user_id}/remove", post(remove))
        .route(
            "/w/{slug}/members/invitations/{id}/revoke",
            post(revoke_invitation),
        )
        .route("/w/{slug}/tokens", get(token_list).post(create_token))
        .route("/w/{slug}/tokens/{id}/revoke", post(revoke_token))
}

fn role_options(selected: &str) -> Vec<OptionView> {
    Role::ALL
        .iter()
        .map(|r| OptionView {
            value: r.as_str().into(),
            label: r.as_str().into(),
            selected: r.as_str() == selected,
        })
        .collect()
}

async fn members_view(state: &AppState, member: &WsMember) -> crate::http::Result<MembersView> {
    let people = People::load(state, &member.caller).await?;
    let slug = &member.caller.ws.slug;
    Ok(MembersView {
        nav: nav(&member.caller, &member.csrf, NavItem::Members),
        members: people
            .members
            .iter()
            .map(|m| MemberRowView {
                person: people.person(Actor::User(m.user.id)),
                email: m.user.email.as_str().to_owned(),
                role: m.role.to_string(),
                role_url: format!("/w/{slug}/members/{}/role", m.user.id),
                remove_url: format!("/w/{slug}/members/{}/remove", m.user.id),
                is_self: m.user.id == member.caller.user.id,
            })
            .collect(),
        invitations: if member.caller.role.can_manage() {
            invitations::list(state, &member.caller)
                .await?
                .iter()
                .map(|i| PendingInvitationView {
                    email: i.user.email.as_str().to_owned(),
                    name: i.user.display_name.clone(),
                    role: i.role.to_string(),
                    expires_at: i.expires_at,
                    revoke_url: format!("/w/{slug}/members/invitations/{}/revoke", i.id),
                })
                .collect()
        } else {
            Vec::new()
        },
        can_manage: member.caller.role.can_manage(),
        email: String::new(),
        name: String::new(),
        role: role_options("member"),
        errors: FormErrors::new(),
    })
}

async fn list(State(state): State<AppState>, member: WsMember) -> PageResult {
    Ok(muster_web::pages::members(&members_view(&state, &member).await?).into_response())
}

/// A person added by an owner or admin.
#[derive(Debug, Default, serde::Deserialize)]
#[serde(default)]
struct AddForm {
    email: String,
    name: String,
    password: String,
    role: String,
}

/// A member's new role.
#[derive(Debug, Default, serde::Deserialize)]
#[serde(default)]
struct RoleForm {
    role: String,
}

async fn add(
    State(state): State<AppState>,
    member: WsMember,
    Form(form): Form<AddForm>,
) -> PageResult {
    let input = MemberInput {
        email: form.email,
        name: Some(form.name),
        password: Some(form.password),
        role: Some(form.role),
    };
    match svc::add(&state, &member.caller, &input).await {
        Ok(_) => Ok(see_other(&format!("/w/{}/members", member.caller.ws.slug))),
        Err(e) => {
            let mut view = members_view(&state, &member).await?;
            view.errors = form_errors(e)?;
            view.email = input.email;
            view.name = input.name.unwrap_or_default();
            view.role = role_options(input.role.as_deref().unwrap_or_default());
            Ok(invalid(muster_web::pages::members(&view)))
        }
    }
}

async fn set_role(
    State(state): State<AppState>,
    member: WsMember,
    Path((_, user_id)): Path<(String, String)>,
    Form(form): Form<RoleForm>,
) -> PageResult {
    let user = svc::parse_user_id(&user_id)?;
    match svc::set_role(&state, &member.caller, user, &form.role).await {
        Ok(_) => Ok(see_other(&format!("/w/{}/members", member.caller.ws.slug))),
        Err(e) => {
            let mut view = members_view(&state, &member).await?;
            view.errors = form_errors(e)?;
            Ok(invalid(muster_web::pages::members(&view)))
        }
    }
}

async fn remove(
    State(state): State<AppState>,
    member: WsMember,
    Path((_, user_id)): Path<(String, String)>,
    _form: Form<NoFields>,
) -> PageResult {
    let user = svc::parse_user_id(&user_id)?;
    match svc::remove(&state, &state.live, &member.caller, user).await {
        Ok(()) => Ok(see_other(&format!("/w/{}/members", member.caller.ws.slug))),
        Err(e) => {
            let mut view = members_view(&state, &member).await?;
            view.errors = form_errors(e)?;
            Ok(invalid(muster_web::pages::members(&view)))
        }
    }
}

async fn revoke_invitation(
    State(state): State<AppState>,
    member: WsMember,
    Path((_, id)): Path<(String, String)>,
    _form: Form<NoFields>,
) -> PageResult {
    invitations::revoke(&state, &member.caller, &id).await?;
    Ok(see_other(&format!("/w/{}/members", member.caller.ws.slug)))
}

async fn tokens_view(state: &AppState, member: &WsMember) -> crate::http::Result<TokensView> {
    let slug = &member.caller.ws.slug;
    let list = tokens::list(state, &member.caller).await?;
    Ok(TokensView {
        nav: nav(&member.caller, &member.csrf, NavItem::Tokens),
        tokens: list
            .iter()
            .map(|t| TokenRowView {
                name: t.name.clone(),
                prefix: t.prefix.clone(),
                created_at: t.created_at,
                last_used_at: t.last_used_at,
                revoked: t.revoked_at.is_some(),
                revoke_url: format!("/w/{slug}/tokens/{}/revoke", t.id),
            })
            .collect(),
        new_token: None,
        name: String::new(),
        errors: FormErrors::new(),
    })
}

async fn token_list(State(state): State<AppState>, member: WsMember) -> PageResult {
    Ok(muster_web::pages::tokens(&tokens_view(&state, &member).await?).into_response())
}

/// Creates a token and shows it once, on this response (never stored, never shown again).
async fn create_token(
    State(state): State<AppState>,
    member: WsMember,
    Form(form): Form<NameForm>,
) -> PageResult {
    match tokens::create(&state, &member.caller, &form.name).await {
        Ok(created) => {
            let mut view = tokens_view(&state, &member).await?;
            view.new_token = Some(created.token);
            Ok((
                [(axum::http::header::CACHE_CONTROL, "no-store")],
                muster_web::pages::tokens(&view),
            )
                .into_response())
        }
        Err(e) => {
            let mut view = tokens_view(&state, &member).await?;
            view.errors = form_errors(e)?;
            view.name = form.name;
            Ok(invalid(muster_web::pages::tokens(&view)))
        }
    }
}

async fn revoke_token(
    State(state): State<AppState>,
    member: WsMember,
    Path((_, id)): Path<(String, String)>,
    _form: Form<NoFields>,
) -> PageResult {
    tokens::revoke(&state, &member.caller, &id).await?;
    Ok(see_other(&format!("/w/{}/tokens", member.caller.ws.slug)))
}
