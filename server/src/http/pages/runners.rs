//! The Runners page: the runners any member sees, and the runner tokens owners and admins create
//! (shown once) and revoke.

use axum::Router;
use axum::extract::{Path, State};
use axum::response::IntoResponse;
use axum::routing::{get, post};
use chrono::{DateTime, Utc};
use muster_web::views::{FormErrors, NavItem, RunnerRowView, RunnersView, TokenRowView};

use super::views::nav;
use super::{PageResult, form_errors, invalid, see_other};
use crate::http::extract::WsMember;
use crate::http::form::{Form, NameForm, NoFields};
use crate::service::runners::{self as svc, RunnerStatus};
use crate::state::AppState;

pub(super) fn router() -> Router<AppState> {
    Router::new()
        .route("/w/{slug}/runners", get(show))
        .route("/w/{slug}/runners/tokens", post(create_token))
        .route("/w/{slug}/runners/tokens/{id}/revoke", post(revoke_token))
}

/// "4 s ago", "3 min ago", "2 h ago", "5 d ago": how long since a heartbeat, at a glance.
pub(super) fn ago(at: DateTime<Utc>, now: DateTime<Utc>) -> String {
    let secs = (now - at).num_seconds().max(0);
    match secs {
        0..60 => format!("{secs} s ago"),
        60..3600 => format!("{} min ago", secs / 60),
        3600..86400 => format!("{} h ago", secs / 3600),
        _ => format!("{} d ago", secs / 86400),
    }
}

async fn runner_row(
    state: &AppState,
    slug: &str,
    s: &RunnerStatus,
    now: DateTime<Utc>,
) -> RunnerRowView {
    let mut live_runs = Vec::with_capacity(s.live_runs.len());
    for run in &s.live_runs {
        // The issue key reads better than a run id; a run whose issue cannot be read keeps its id.
        let label = match state.store.get_issue_by_id(run.issue_id).await {
            Ok(issue) => issue.key.to_string(),
            Err(_) => run.id.to_string(),
        };
        live_runs.push((format!("/w/{slug}/runs/{}", run.id), label));
    }
    RunnerRowView {
        name: s.runner.name.clone(),
        online: s.online,
        embedded: s.embedded(),
        revoked: s.runner.revoked,
        version: s.runner.version.clone(),
        clis: s
            .reported
            .runtimes
            .iter()
            .map(|r| match &r.version {
                Some(v) => format!("{} {v}", r.kind),
                None => r.kind.clone(),
            })
            .collect(),
        local_models: s
            .reported
            .local_models
            .iter()
            .map(|m| {
                if m.models.is_empty() {
                    m.url.clone()
                } else {
                    format!("{} ({})", m.url, m.models.join(", "))
                }
            })
            .collect(),
        live_runs,
        last_heartbeat_at: s.runner.last_heartbeat_at,
        last_heartbeat_ago: ago(s.runner.last_heartbeat_at, now),
    }
}

async fn runners_view(state: &AppState, member: &WsMember) -> crate::http::Result<RunnersView> {
    let caller = &member.caller;
    let slug = caller.ws.slug.to_string();
    let now = Utc::now();
    let mut runners = Vec::new();
    for s in svc::list(state, caller).await? {
        runners.push(runner_row(state, &slug, &s, now).await);
    }
    let can_manage = caller.run.is_none() && caller.role.can_manage();
    let tokens = if can_manage {
        svc::list_tokens(state, caller)
            .await?
            .iter()
            .map(|t| TokenRowView {
                name: t.name.clone(),
                prefix: t.prefix.clone(),
                created_at: t.created_at,
                last_used_at: t.last_used_at,
                revoked: t.is_revoked(),
                revoke_url: format!("/w/{slug}/runners/tokens/{}/revoke", t.id),
            })
            .collect()
    } else {
        Vec::new()
    };
    Ok(RunnersView {
        nav: nav(caller, &member.csrf, NavItem::Runners),
        runners,
        can_manage,
        tokens,
        new_token: None,
        server_url: state.api_url(),
        name: String::new(),
        errors: FormErrors::new(),
    })
}

async fn show(State(state): State<AppState>, member: WsMember) -> PageResult {
    Ok(muster_web::pages::runners(&runners_view(&state, &member).await?).into_response())
}

/// Creates a runner token and shows it once, on this response (never stored, never shown again).
async fn create_token(
    State(state): State<AppState>,
    member: WsMember,
    Form(form): Form<NameForm>,
) -> PageResult {
    match svc::create_token(&state, &member.caller, &form.name).await {
        Ok(created) => {
            let mut view = runners_view(&state, &member).await?;
            view.new_token = Some(created.token);
            Ok((
                [(axum::http::header::CACHE_CONTROL, "no-store")],
                muster_web::pages::runners(&view),
            )
                .into_response())
        }
        Err(e) => {
            let errors = form_errors(e)?;
            let mut view = runners_view(&state, &member).await?;
            view.errors = errors;
            view.name = form.name;
            Ok(invalid(muster_web::pages::runners(&view)))
        }
    }
}

async fn revoke_token(
    State(state): State<AppState>,
    member: WsMember,
    Path((_, id)): Path<(String, String)>,
    _form: Form<NoFields>,
) -> PageResult {
    svc::revoke_token(&state, &member.caller, &id).await?;
    Ok(see_other(&format!("/w/{}/runners", member.caller.ws.slug)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn heartbeats_read_at_a_glance() {
        let now = Utc::now();
        let before = |s| now - chrono::TimeDelta::seconds(s);
        assert_eq!(ago(before(4), now), "4 s ago");
        assert_eq!(ago(now + chrono::TimeDelta::seconds(2), now), "0 s ago");
        assert_eq!(ago(before(185), now), "3 min ago");
        assert_eq!(ago(before(7200), now), "2 h ago");
        assert_eq!(ago(before(3 * 86400), now), "3 d ago");
    }
}
