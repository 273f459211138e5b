//! The run engine's context: what queueing, cancelling, claiming, supervising and finishing runs need —
//! the store, the hub, the configuration, the secret box, the detected runtimes and the live runs — and
//! nothing of HTTP. `AppState` owns one (and derefs to it); the engine never reaches back.

use std::net::SocketAddr;
use std::sync::Arc;

use crate::config::Config;
use crate::hub::Hub;
use crate::runtimes::RuntimeCache;
use crate::secrets::SecretBox;
use crate::store::Store;
use crate::supervisor::Runs;

/// The run engine's handles. Cheap to clone.
#[derive(Clone)]
pub struct Engine {
    /// The database, behind the one storage trait.
    pub store: Arc<dyn Store>,
    /// The configuration the server started with.
    pub config: Arc<Config>,
    /// Live updates to browsers (and, through the relay, to other replicas).
    pub hub: Hub,
    /// Seals agent secrets at rest.
    pub secrets: Arc<SecretBox>,
    /// Detected agent runtimes, cached.
    pub runtimes: RuntimeCache,
    /// The runner's wake-up, live runs' cancel tokens, the engine's clocks.
    pub runs: Runs,
    /// The address the HTTP listener is bound to (set once bound); runs reach the API here when no
    /// public URL is configured.
    pub bound_addr: Option<SocketAddr>,
}

impl Engine {
    /// The engine around `store`, with the secret box kept in the configured data directory.
    pub fn new(store: Arc<dyn Store>, config: Config) -> anyhow::Result<Self> {
        let secrets = SecretBox::load_or_create(&config.data_dir)?;
        let runtimes = RuntimeCache::new(config.runtime_paths.clone());
        Ok(Self {
            store,
            config: Arc::new(config),
            hub: Hub::default(),
            secrets: Arc::new(secrets),
            runtimes,
            runs: Runs::default(),
            bound_addr: None,
        })
    }

    /// The URL agents and other programs reach this server at: the public URL when configured, else the
    /// bound address (a wildcard address becomes loopback).
    pub fn api_url(&self) -> Option<String> {
        if let Some(url) = &self.config.public_url {
            return Some(url.trim_end_matches('/').to_owned());
        }
        let mut addr = self.bound_addr?;
        if addr.ip().is_unspecified() {
            addr.set_ip(match addr {
                SocketAddr::V4(_) => std::net::Ipv4Addr::LOCALHOST.into(),
                SocketAddr::V6(_) => std::net::Ipv6Addr::LOCALHOST.into(),
            });
        }
        Some(format!("http://{addr}"))
    }

    /// A runner token was revoked: the runners connected with it must stop taking and running work at
    /// once (their runs are then handled like a lost runner's). Called after the store revoked it.
    pub async fn runner_token_revoked(&self, token: crate::domain::RunnerTokenId) {
        // lead: disconnect the sessions of this token
        let _ = token;
    }
}
