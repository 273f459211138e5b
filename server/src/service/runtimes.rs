//! Which agent runtimes this machine has: detected once in the background at start, cached with the time
//! of detection, and re-detected on request — so pages never wait on a slow `--version`.

use std::path::PathBuf;
use std::sync::Arc;

use chrono::{DateTime, Utc};
use muster_agents::{Detection, RuntimeKind};
use tokio::sync::RwLock;

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
}

impl RuntimeCache {
    /// A cache that probes `overrides` instead of `PATH` for the kinds they name.
    pub fn new(overrides: Vec<(RuntimeKind, PathBuf)>) -> Self {
        RuntimeCache {
            last: Arc::default(),
            overrides: Arc::new(overrides),
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
