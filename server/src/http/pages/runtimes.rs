//! The Runtimes page: detected agent CLIs with versions, reasons, install hints, the local model servers and
//! binaries, and a re-detect button (owners and admins). Both detections are cached; only the button (or
//! the first visit) probes, and a press within 10 s of the last shows the cached result with a note.

use axum::Router;
use axum::extract::State;
use axum::response::IntoResponse;
use axum::routing::{get, post};
use muster_agents::{Detection, DetectionStatus};
use muster_llama::probe::{DEFAULT_PORTS, ModelServer};
use muster_web::views::{ModelServerRowView, NavItem, RuntimeRowView, RuntimesView};

use super::views::nav;
use super::{PageResult, see_other};
use crate::http::extract::WsMember;
use crate::http::form::{Form, NoFields};
use crate::runtimes::{Detected, LocalModels, REDETECT_EVERY, TooSoon};
use crate::service::runtimes as svc;
use crate::state::AppState;
use muster_agents::detect::install_hint;

pub(super) fn router() -> Router<AppState> {
    Router::new()
        .route("/w/{slug}/runtimes", get(show))
        .route("/w/{slug}/runtimes/detect", post(redetect))
}

async fn show(State(state): State<AppState>, member: WsMember) -> PageResult {
    let (found, local) = svc::cached(&state, member.caller.ws.id).await;
    Ok(render(&state, &member, found, &local, None))
}

fn render(
    state: &AppState,
    member: &WsMember,
    (at, found): Detected,
    local: &LocalModels,
    note: Option<String>,
) -> axum::response::Response {
    let ports: Vec<String> = DEFAULT_PORTS.iter().map(|(p, _)| p.to_string()).collect();
    let sandbox = crate::sandbox::mode(&state.config);
    let view = RuntimesView {
        nav: nav(&member.caller, &member.csrf, NavItem::Runtimes),
        sandboxed: matches!(sandbox, crate::sandbox::Mode::Sandboxed { .. }),
        sandbox: sandbox.describe(),
        runtimes: found.iter().map(|d| served_llama(d, local)).collect(),
        detected_at: Some(at),
        redetect_url: format!("/w/{}/runtimes/detect", member.caller.ws.slug),
        model_servers: local.servers.iter().map(server_row).collect(),
        probed_ports: ports.join(", "),
        local_binaries: local.binaries.iter().map(runtime_row).collect(),
        can_redetect: member.caller.role.can_manage(),
        note,
    };
    muster_web::pages::runtimes(&view).into_response()
}

fn runtime_row(d: &Detection) -> RuntimeRowView {
    RuntimeRowView {
        kind: d.kind.to_string(),
        label: d.kind.label().to_owned(),
        status: d.status.as_str().to_owned(),
        path: d.path.as_ref().map(|p| p.display().to_string()),
        version: d.version.clone(),
        reason: d.reason.clone(),
        install_hint: matches!(
            d.status,
            DetectionStatus::NotInstalled | DetectionStatus::TooOld
        )
        .then(|| install_hint(d.kind))
        .flatten(),
    }
}

/// The local-Llama row when no llama.cpp binary is on PATH but a model server answers: its agents run
/// (Muster's loop needs a server, not a binary), so the row says ready instead of "Not installed".
fn served_llama(d: &Detection, local: &LocalModels) -> RuntimeRowView {
    let mut row = runtime_row(d);
    if !d.kind.is_local_model() || d.status == DetectionStatus::Found {
        return row;
    }
    if let Some(ready) = local
        .servers
        .iter()
        .find(|s| s.status == muster_llama::ServerStatus::Ready)
    {
        row.status = "served".to_owned();
        row.reason = Some(format!(
            "the model server at {} answers (see Local models below); llama-server on PATH is only needed \
             to start one on this machine",
            ready.url
        ));
        row.install_hint = None;
    }
    row
}

fn server_row(s: &ModelServer) -> ModelServerRowView {
    let mut details = Vec::new();
    if let Some(n) = s.context_size {
        details.push(format!("context {n} tokens"));
    }
    if let Some(tools) = s.supports_tools {
        details.push(format!("tools: {}", if tools { "yes" } else { "no" }));
    }
    ModelServerRowView {
        url: s.url.clone(),
        kind: s.kind.map(|k| k.as_str().to_owned()).unwrap_or_default(),
        status: s.status.as_str().to_owned(),
        models: s.models.clone(),
        version: s.version.clone(),
        source: s.source.clone(),
        details: (!details.is_empty()).then(|| details.join(" · ")),
        reason: s.reason.clone(),
    }
}

async fn redetect(
    State(state): State<AppState>,
    member: WsMember,
    _form: Form<NoFields>,
) -> PageResult {
    match svc::redetect(&state, &member.caller).await? {
        Ok(_) => Ok(see_other(&format!("/w/{}/runtimes", member.caller.ws.slug))),
        Err(TooSoon(wait)) => {
            let (found, local) = svc::cached(&state, member.caller.ws.id).await;
            let note = format!(
                "Re-detected less than {} s ago: this is the last result. Try again in {} s.",
                REDETECT_EVERY.as_secs(),
                wait.as_secs().max(1)
            );
            Ok(render(&state, &member, found, &local, Some(note)))
        }
    }
}
