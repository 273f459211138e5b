//! Which agent runtimes this machine has: detected once in the background at start, cached with the time
//! of detection, and re-detected on request — so pages never wait on a slow `--version`.
//!
//! Local models are scanned separately ([`RuntimeCache::local_models`]): the explicitly configured servers
//! (agent profiles' base URLs, `MUSTER_LLAMA_URL`, `OLLAMA_HOST`, `LLAMA_API_BASE`), then the usual loopback
//! ports, each probe with a short timeout, plus the llama.cpp / Ollama binaries on `PATH` with versions.

use std::path::PathBuf;
use std::sync::Arc;

use chrono::{DateTime, Utc};
use muster_agents::{Detection, RuntimeKind};
use muster_llama::probe::{self, Candidate, ModelServer};
use serde::Serialize;
use tokio::sync::RwLock;

use crate::app::AppState;
use crate::domain::{AgentKind, WorkspaceId};

/// The kinds probed: the three CLIs and local llama.cpp binaries (custom commands are per agent).
pub const PROBED: [RuntimeKind; 4] = [
    RuntimeKind::Claude,
    RuntimeKind::Codex,
    RuntimeKind::Opencode,
    RuntimeKind::Llama,
];

/// When a detection ran, and what it found.
pub type Detected = (DateTime<Utc>, Vec<Detection>);

/// The last detection, shared by the pages and API.
#[derive(Clone, Default)]
pub struct RuntimeCache {
    last: Arc<RwLock<Option<Detected>>>,
    overrides: Arc<Vec<(RuntimeKind, PathBuf)>>,
    local: Arc<RwLock<Option<LocalModels>>>,
}

/// What the last local-model scan found, and when.
#[derive(Debug, Clone, Serialize)]
pub struct LocalModels {
    /// When the scan ran.
    pub detected_at: DateTime<Utc>,
    /// Model servers: every explicit one, and default ports where a model server answered.
    pub servers: Vec<ModelServer>,
    /// The llama.cpp / Ollama / llamafile binaries found on `PATH`, with versions.
    pub binaries: Vec<Detection>,
}

/// Scans for local model servers (`explicit` first, as `(source, url)`, then the default loopback ports)
/// and local runtime binaries, concurrently.
pub async fn scan_local(explicit: &[(String, String)]) -> LocalModels {
    let mut candidates: Vec<Candidate> = explicit
        .iter()
        .map(|(source, url)| Candidate::explicit(url, source))
        .collect();
    candidates.extend(probe::default_candidates());
    let (servers, binaries) = tokio::join!(
        probe::scan(candidates, probe::PROBE_TIMEOUT),
        muster_agents::llama::detect_binaries()
    );
    LocalModels {
        detected_at: Utc::now(),
        servers,
        binaries,
    }
}

/// The explicit local-model URLs for a workspace: the server's configured ones, then the base URLs of its
/// `llama` agents.
pub async fn local_model_urls(state: &AppState, ws: WorkspaceId) -> Vec<(String, String)> {
    let mut urls = state.config.llama_urls.clone();
    if let Ok(agents) = state.store.list_agents(ws).await {
        urls.extend(agents.into_iter().filter_map(|a| {
            let url = a.profile.base_url.filter(|u| !u.trim().is_empty())?;
            (a.profile.kind == AgentKind::Llama)
                .then(|| (format!("agent {}", a.profile.name.as_str()), url))
        }));
    }
    urls
}

impl RuntimeCache {
    /// A cache that probes `overrides` instead of `PATH` for the kinds they name.
    pub fn new(overrides: Vec<(RuntimeKind, PathBuf)>) -> Self {
        RuntimeCache {
            last: Arc::default(),
            overrides: Arc::new(overrides),
            local: Arc::default(),
        }
    }

    /// Probes every kind concurrently and stores the result.
    pub async fn detect(&self) -> Detected {
        let probes = PROBED.map(|kind| {
            let path = self
                .overrides
                .iter()
                .find(|(k, _)| *k == kind)
                .map(|(_, p)| p.clone());
            async move { muster_agents::detect(kind, path.as_deref()).await }
        });
        let [a, b, c, d] = probes;
        let (a, b, c, d) = tokio::join!(a, b, c, d);
        let found = (Utc::now(), vec![a, b, c, d]);
        *self.last.write().await = Some(found.clone());
        found
    }

    /// The cached detection, detecting now if there is none yet.
    pub async fn get(&self) -> Detected {
        if let Some(found) = self.last.read().await.clone() {
            return found;
        }
        self.detect().await
    }

    /// The cached local-model scan, scanning `explicit` and the default ports now if there is none yet.
    pub async fn local_models(&self, explicit: &[(String, String)]) -> LocalModels {
        if let Some(found) = self.local.read().await.clone() {
            return found;
        }
        self.scan_local_models(explicit).await
    }

    /// Scans for local models now and caches the result.
    pub async fn scan_local_models(&self, explicit: &[(String, String)]) -> LocalModels {
        let found = scan_local(explicit).await;
        *self.local.write().await = Some(found.clone());
        found
    }
}

/// The human name of a runtime kind.
pub fn label(kind: RuntimeKind) -> &'static str {
    match kind {
        RuntimeKind::Claude => "Claude Code",
        RuntimeKind::Codex => "Codex",
        RuntimeKind::Opencode => "OpenCode",
        RuntimeKind::Llama => "Local Llama (llama.cpp)",
        RuntimeKind::Custom => "Custom command",
    }
}

/// How to install the version Muster is tested with.
pub fn install_hint(kind: RuntimeKind) -> Option<&'static str> {
    match kind {
        RuntimeKind::Claude => Some("npm install -g @anthropic-ai/claude-code@2.1.197"),
        RuntimeKind::Codex => Some("npm install -g @openai/codex@0.171.0"),
        RuntimeKind::Opencode => Some("npm install -g opencode-ai@1.18.33"),
        RuntimeKind::Llama => {
            Some("install llama.cpp (llama-server) or Ollama, or: pip install xllamacpp")
        }
        RuntimeKind::Custom => None,
    }
}
