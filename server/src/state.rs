//! What every request handler can reach: [`AppState`], the run engine and what only the web side needs.

use std::sync::{Arc, Mutex};

use tokio_util::sync::CancellationToken;

use crate::config::Config;
use crate::engine::Engine;
use crate::store::Store;

/// What every handler can reach: the run engine, and what only the web side needs. Cheap to clone;
/// derefs to the [`Engine`], so `state.store` and friends read as before.
#[derive(Clone)]
pub struct AppState {
    /// The run engine's context (store, hub, config, secrets, runtimes, live runs).
    pub engine: Engine,
    /// The one-time first-run setup token, while no account exists.
    pub setup_token: Arc<Mutex<Option<String>>>,
    /// Cancelled when the server shuts down, so long-lived connections (WebSockets) end.
    pub shutdown: CancellationToken,
    /// Sign-in rate limits (per client address, per account).
    pub login_throttle: Arc<crate::throttle::LoginThrottle>,
    /// Open live connections: capped per person, ended at sign-out and removal from a workspace.
    pub live: crate::live::LiveConnections,
}

impl std::ops::Deref for AppState {
    type Target = Engine;

    fn deref(&self) -> &Engine {
        &self.engine
    }
}

impl AppState {
    /// Builds the state around a store; creates the first-run setup token when there is no account yet.
    pub async fn new(store: Arc<dyn Store>, config: Config) -> anyhow::Result<Self> {
        let setup_token = if store.count_users().await? == 0 {
            Some(crate::auth::new_secret("setup").secret)
        } else {
            None
        };
        crate::auth::warm_up().await;
        let engine = Engine::new(store, config)?;
        Ok(AppState {
            login_throttle: Arc::new(crate::throttle::LoginThrottle::new(
                engine.config.login_limits,
            )),
            live: engine.live.clone(),
            engine,
            setup_token: Arc::new(Mutex::new(setup_token)),
            shutdown: CancellationToken::new(),
        })
    }

    /// The first-run setup link, while setup is pending.
    pub fn setup_url(&self, addr: std::net::SocketAddr) -> Option<String> {
        let token = self
            .setup_token
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()?;
        let base = self
            .config
            .public_url
            .clone()
            .unwrap_or_else(|| format!("http://{addr}"));
        Some(format!(
            "{}/setup?token={token}",
            base.trim_end_matches('/')
        ))
    }
}
