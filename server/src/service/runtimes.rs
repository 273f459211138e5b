//! The Runtimes use-cases: what a workspace's member sees of the detected agent runtimes, and re-detecting
//! on request. Re-detecting spawns processes and sends requests, so it is for owners and admins, at most
//! once per [`crate::runtimes::REDETECT_EVERY`] per workspace; the cache itself is [`crate::runtimes`].

use crate::domain::{Agent, WorkspaceId};
use crate::engine::Engine;
use crate::runtimes::{Detected, LocalModels, TooSoon};
use crate::service::{Caller, Result};

/// The explicit local-model URLs for a workspace: the server's configured ones, then the base URLs of its
/// `llama` agents.
pub async fn local_model_urls(state: &Engine, ws: WorkspaceId) -> Vec<(String, String)> {
    let mut urls = state.config.llama_urls.clone();
    if let Ok(agents) = state.store.list_agents(ws).await {
        urls.extend(agents.into_iter().filter_map(|a| {
            let url = base_url_of(&a)?;
            (a.profile.kind.is_local_model())
                .then(|| (format!("agent {}", a.profile.name.as_str()), url))
        }));
    }
    urls
}

/// The model server an agent's profile points at, as a person can see it: the Base URL field, or the
/// base-URL variable of its CLI in its env (not a secret one: those stay sealed here).
pub fn base_url_of(agent: &Agent) -> Option<String> {
    let from_env = || {
        let env: Vec<(String, String)> = agent
            .profile
            .env
            .iter()
            .filter(|v| !v.secret)
            .map(|v| (v.key.clone(), v.value.clone()))
            .collect();
        let kind = agent.profile.kind;
        kind.base_urls_in(&env)
            .first()
            .map(|(_, u)| (*u).to_owned())
    };
    agent
        .profile
        .base_url
        .clone()
        .filter(|u| !u.trim().is_empty())
        .or_else(from_env)
}

/// What a workspace's member sees: the cached CLI detection and the workspace's cached local-model scan
/// (each made now if there is none yet).
pub async fn cached(state: &Engine, ws: WorkspaceId) -> (Detected, LocalModels) {
    let urls = local_model_urls(state, ws).await;
    tokio::join!(state.runtimes.get(), state.runtimes.local_models(ws, &urls))
}

/// Detects again for the caller's workspace: owners and admins only (403 otherwise), and `Ok(Err)` when
/// the workspace re-detected less than [`crate::runtimes::REDETECT_EVERY`] ago.
pub async fn redetect(
    state: &Engine,
    caller: &Caller,
) -> Result<std::result::Result<(Detected, LocalModels), TooSoon>> {
    caller.require_manager()?;
    if let Err(wait) = state.runtimes.claim_redetect(caller.ws.id) {
        return Ok(Err(wait));
    }
    let urls = local_model_urls(state, caller.ws.id).await;
    Ok(Ok(tokio::join!(
        state.runtimes.redetect_machine(),
        state.runtimes.scan_local_models(caller.ws.id, &urls)
    )))
}
