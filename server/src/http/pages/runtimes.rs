//! The Runtimes page: detected agent CLIs with versions, reasons, install hints and a re-detect button.

use axum::Router;
use axum::extract::State;
use axum::response::IntoResponse;
use axum::routing::{get, post};
use muster_agents::DetectionStatus;
use muster_web::views::{NavItem, RuntimeRowView, RuntimesView};

use super::views::nav;
use super::{PageResult, see_other};
use crate::app::AppState;
use crate::http::extract::{UiForm, WsMember};
use crate::service::runtimes::{install_hint, label};

pub(super) fn router() -> Router<AppState> {
    Router::new()
        .route("/w/{slug}/runtimes", get(show))
        .route("/w/{slug}/runtimes/detect", post(redetect))
}

async fn show(State(state): State<AppState>, member: WsMember) -> PageResult {
    let (at, found) = state.runtimes.get().await;
    let view = RuntimesView {
        nav: nav(&member.caller, &member.csrf, NavItem::Runtimes),
        runtimes: found
            .iter()
            .map(|d| RuntimeRowView {
                kind: d.kind.to_string(),
                label: label(d.kind).to_owned(),
                status: d.status.as_str().to_owned(),
                path: d.path.as_ref().map(|p| p.display().to_string()),
                version: d.version.clone(),
                reason: d.reason.clone(),
                install_hint: matches!(
                    d.status,
                    DetectionStatus::NotInstalled | DetectionStatus::TooOld
                )
                .then(|| install_hint(d.kind))
                .flatten()
                .map(str::to_owned),
            })
            .collect(),
        detected_at: Some(at),
        redetect_url: format!("/w/{}/runtimes/detect", member.caller.ws.slug),
    };
    Ok(muster_web::pages::runtimes(&view).into_response())
}

async fn redetect(State(state): State<AppState>, member: WsMember, form: UiForm) -> PageResult {
    let _ = form;
    state.runtimes.detect().await;
    Ok(see_other(&format!("/w/{}/runtimes", member.caller.ws.slug)))
}
