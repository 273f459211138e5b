//! Which agent runtimes this machine has: detected once in the background at start, cached with the time
//! of detection, and re-detected on request — so pages never wait on a slow `--version`.
//!
//! Local models are scanned separately ([`RuntimeCache::local_models`]): the explicitly configured servers
//! (agent profiles' base URLs, `MUSTER_LLAMA_URL`, `OLLAMA_HOST`, `LLAMA_API_BASE`), then the usual loopback
//! ports, each probe with a short timeout, plus the llama.cpp / Ollama binaries on `PATH` with versions.
//!
//! Invariants: the CLI detection is the machine's and shared by every workspace; a local-model scan
//! includes one workspace's agents' base URLs and is cached, and shown, for that workspace only. The
//! machine's CLIs are probed again at most once per [`REDETECT_EVERY`] overall, and each workspace may
//! claim a re-detect at most that often ([`RuntimeCache::claim_redetect`]).
//!
//! This sits below `service` (which adds who may re-detect) so the engine, the runner and the CLI use
//! the same cache without the HTTP layer.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};
use muster_agents::{Detection, RuntimeKind};
use muster_llama::probe::{self, Candidate, ModelServer};
use serde::Serialize;
use tokio::sync::RwLock;

use crate::domain::WorkspaceId;

/// The shortest time between two re-detections of one workspace (and between two probes of the CLIs).
pub const REDETECT_EVERY: Duration = Duration::from_secs(10);

/// When a detection ran, and what it found.
pub type Detected = (DateTime<Utc>, Vec<Detection>);

/// A re-detect asked for too soon after the last one: how long until the next is allowed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TooSoon(pub Duration);

/// The last detections, shared by the pages and API: the machine's CLIs, and each workspace's local-model
/// scan.
#[derive(Clone, Default)]
pub struct RuntimeCache {
    last: Arc<RwLock<Option<Detected>>>,
    overrides: Arc<Vec<(RuntimeKind, PathBuf)>>,
    /// One scan per workspace: it probes (and shows) that workspace's agents' base URLs.
    local: Arc<RwLock<HashMap<WorkspaceId, LocalModels>>>,
    /// When each workspace last re-detected (entries older than [`REDETECT_EVERY`] are dropped).
    redetected: Arc<Mutex<HashMap<WorkspaceId, Instant>>>,
    /// When a re-detect last probed the CLIs.
    machine_redetected: Arc<Mutex<Option<Instant>>>,
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

impl RuntimeCache {
    /// A cache that probes `overrides` instead of `PATH` for the kinds they name.
    pub fn new(overrides: Vec<(RuntimeKind, PathBuf)>) -> Self {
        RuntimeCache {
            overrides: Arc::new(overrides),
            ..RuntimeCache::default()
        }
    }

    /// Records a re-detect of `ws` now, unless it had one less than [`REDETECT_EVERY`] ago.
    pub fn claim_redetect(&self, ws: WorkspaceId) -> Result<(), TooSoon> {
        let now = Instant::now();
        let mut last = self
            .redetected
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        last.retain(|_, at| now.duration_since(*at) < REDETECT_EVERY);
        if let Some(at) = last.get(&ws) {
            return Err(TooSoon(
                REDETECT_EVERY.saturating_sub(now.duration_since(*at)),
            ));
        }
        last.insert(ws, now);
        Ok(())
    }

    /// Detects the CLIs again, unless a re-detect (of any workspace) did less than [`REDETECT_EVERY`] ago:
    /// however many workspaces re-detect, the CLIs are started at most that often.
    pub async fn redetect_machine(&self) -> Detected {
        let fresh = {
            let mut last = self
                .machine_redetected
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            let fresh = last.is_some_and(|at| at.elapsed() < REDETECT_EVERY);
            if !fresh {
                *last = Some(Instant::now());
            }
            fresh
        };
        if fresh {
            return self.get().await;
        }
        self.detect().await
    }

    /// Probes every kind concurrently and stores the result.
    pub async fn detect(&self) -> Detected {
        let probes = RuntimeKind::ALL
            .into_iter()
            .filter(|kind| kind.is_detected())
            .map(|kind| {
                let path = self
                    .overrides
                    .iter()
                    .find(|(k, _)| *k == kind)
                    .map(|(_, p)| p.clone());
                async move { muster_agents::detect(kind, path.as_deref()).await }
            });
        let found = (Utc::now(), futures_util::future::join_all(probes).await);
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

    /// The cached local-model scan of `ws`, scanning `explicit` (the workspace's URLs) and the default
    /// ports now if there is none yet.
    pub async fn local_models(
        &self,
        ws: WorkspaceId,
        explicit: &[(String, String)],
    ) -> LocalModels {
        if let Some(found) = self.local.read().await.get(&ws).cloned() {
            return found;
        }
        self.scan_local_models(ws, explicit).await
    }

    /// Scans for `ws`'s local models now and caches the result for `ws` alone.
    pub async fn scan_local_models(
        &self,
        ws: WorkspaceId,
        explicit: &[(String, String)],
    ) -> LocalModels {
        let found = scan_local(explicit).await;
        self.local.write().await.insert(ws, found.clone());
        found
    }
}

/// Where the agent CLIs are, when not on `PATH` (or to pin one build).
#[derive(Debug, Clone, Default, clap::Args)]
#[command(next_help_heading = "Agent CLIs")]
pub struct RuntimePaths {
    /// Path of the Claude Code binary [default: `claude` on PATH].
    #[arg(long, env = "MUSTER_CLAUDE_PATH", global = true)]
    pub claude_path: Option<PathBuf>,
    /// Path of the Codex binary [default: `codex` on PATH].
    #[arg(long, env = "MUSTER_CODEX_PATH", global = true)]
    pub codex_path: Option<PathBuf>,
    /// Path of the OpenCode binary [default: `opencode` on PATH].
    #[arg(long, env = "MUSTER_OPENCODE_PATH", global = true)]
    pub opencode_path: Option<PathBuf>,
    /// Path of a llama.cpp / Ollama / llamafile binary [default: the first found on PATH].
    #[arg(long, env = "MUSTER_LLAMA_PATH", global = true)]
    pub llama_path: Option<PathBuf>,
    /// URL of a local OpenAI-compatible model server (llama-server, Ollama, vLLM, …), probed before the usual
    /// loopback ports and used by `llama` agents without a base URL of their own.
    #[arg(long, env = "MUSTER_LLAMA_URL", global = true)]
    pub llama_url: Option<String>,
    /// Ollama's address as Ollama reads it (e.g. 127.0.0.1:11434 or http://host:11434).
    #[arg(long, env = "OLLAMA_HOST", global = true)]
    pub ollama_host: Option<String>,
    /// An OpenAI-compatible API base of a local server (e.g. http://127.0.0.1:8080/v1).
    #[arg(long, env = "LLAMA_API_BASE", global = true)]
    pub llama_api_base: Option<String>,
}

impl RuntimePaths {
    /// The explicitly configured local model servers, as `(source, url)`.
    pub fn llama_urls(&self) -> Vec<(String, String)> {
        let mut urls = Vec::new();
        if let Some(url) = self.llama_url.as_deref().filter(|u| !u.trim().is_empty()) {
            urls.push(("MUSTER_LLAMA_URL".to_owned(), url.trim().to_owned()));
        }
        if let Some(host) = self.ollama_host.as_deref().filter(|u| !u.trim().is_empty()) {
            urls.push((
                "OLLAMA_HOST".to_owned(),
                muster_llama::probe::ollama_host_url(host),
            ));
        }
        if let Some(url) = self
            .llama_api_base
            .as_deref()
            .filter(|u| !u.trim().is_empty())
        {
            urls.push(("LLAMA_API_BASE".to_owned(), url.trim().to_owned()));
        }
        urls
    }

    /// The overrides that are set, by runtime kind.
    pub fn overrides(&self) -> Vec<(muster_agents::RuntimeKind, PathBuf)> {
        use muster_agents::RuntimeKind as K;
        [
            (K::Claude, &self.claude_path),
            (K::Codex, &self.codex_path),
            (K::Opencode, &self.opencode_path),
            (K::Llama, &self.llama_path),
        ]
        .into_iter()
        .filter_map(|(k, p)| p.clone().map(|p| (k, p)))
        .collect()
    }
}
