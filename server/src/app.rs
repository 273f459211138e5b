//! Building and running the server: data directory, store (migrated before the listener binds), router,
//! graceful shutdown with a deadline.

use std::path::Path;
use std::sync::{Arc, Mutex};

use anyhow::Context as _;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use crate::config::Config;
use crate::engine::Engine;
use crate::store::{self, Store};

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

/// A server that is ready to accept connections: the store is migrated and the listener is bound.
pub struct Application {
    listener: TcpListener,
    state: AppState,
}

impl Application {
    /// The address actually bound (useful with port 0).
    pub fn local_addr(&self) -> std::io::Result<std::net::SocketAddr> {
        self.listener.local_addr()
    }

    /// The shared state, for tests that want the store.
    pub fn state(&self) -> &AppState {
        &self.state
    }

    /// Replaces the run engine's clocks (tests shorten them instead of sleeping). Call before
    /// [`Application::run_until_stopped`].
    pub fn set_run_timing(&mut self, timing: crate::supervisor::RunTiming) {
        self.state.engine.runs = crate::engine::Runs::with_timing(timing);
    }

    /// Serves, with the embedded runner, until `shutdown` is cancelled; then lets in-flight requests
    /// finish and stops the runner (its live runs end `interrupted`).
    pub async fn run_until_stopped(self, shutdown: CancellationToken) -> anyhow::Result<()> {
        let router = crate::http::router(self.state.clone());
        let sockets = self.state.shutdown.clone();
        let runner_stop = CancellationToken::new();
        if let Err(e) = crate::engine::relay::start(&self.state.engine, sockets.clone()).await {
            tracing::warn!(error = %e, "cannot listen for other replicas; wake-ups stay local");
        }
        // Every replica sweeps runs whose runner vanished, runner or not.
        let sweep = tokio::spawn(crate::engine::sweep::run(
            self.state.engine.clone(),
            runner_stop.clone(),
        ));
        let runner = self.state.config.embedded_runner.then(|| {
            tokio::spawn(crate::runner::local::run(
                self.state.engine.clone(),
                runner_stop.clone(),
            ))
        });
        // The peer address reaches handlers as `ConnectInfo`: sign-in limits are per client address.
        let router = router.into_make_service_with_connect_info::<std::net::SocketAddr>();
        let served = axum::serve(self.listener, router)
            .with_graceful_shutdown(async move {
                shutdown.cancelled().await;
                sockets.cancel();
            })
            .await
            .context("the HTTP server failed");
        runner_stop.cancel();
        if let Some(Err(e)) = match runner {
            Some(task) => Some(task.await),
            None => None,
        } {
            tracing::error!(error = %e, "the embedded runner panicked");
        }
        let _ = sweep.await;
        self.state.store.close().await;
        served
    }
}

/// Prepares the data directory, connects and migrates the store, then binds the listener, in that order.
pub async fn build(config: Config) -> anyhow::Result<Application> {
    prepare_data_dir(&config.data_dir)?;
    let store = store::connect(&config.database_url, config.pool).await?;
    let listener = TcpListener::bind(config.addr).await.map_err(|e| {
        let hint = match e.kind() {
            std::io::ErrorKind::AddrInUse => {
                "another program (perhaps another muster) is using it; "
            }
            std::io::ErrorKind::PermissionDenied => "ports below 1024 need privileges; ",
            _ => "",
        };
        anyhow::anyhow!(
            "cannot listen on {}: {e}; {hint}choose another address with --addr or MUSTER_ADDR",
            config.addr
        )
    })?;
    let mut state = AppState::new(store, config).await?;
    // Built-in skills into every workspace (new ones, and updates of copies nobody edited).
    if let Err(e) = crate::skills::builtin::seed_all(state.store.as_ref()).await {
        tracing::warn!(error = %e, "cannot seed the built-in skills");
    }
    state.engine.bound_addr = listener.local_addr().ok();
    // Detect agent CLIs in the background, so the first Runtimes page does not wait for it.
    let runtimes = state.runtimes.clone();
    tokio::spawn(async move {
        runtimes.detect().await;
    });
    Ok(Application { listener, state })
}

/// Creates the data directory if needed (mode 0700: it holds the key and, on SQLite, the database),
/// tightens an existing one that others may read, and checks that it is writable.
pub fn prepare_data_dir(dir: &Path) -> anyhow::Result<()> {
    use std::os::unix::fs::{DirBuilderExt as _, PermissionsExt as _};
    let fix = "choose a writable one with --data-dir or MUSTER_DATA_DIR";
    let cannot_create = |e: std::io::Error| {
        anyhow::anyhow!("cannot create data directory {}: {e}; {fix}", dir.display())
    };
    if let Some(parent) = dir.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent).map_err(cannot_create)?;
    }
    match std::fs::DirBuilder::new().mode(0o700).create(dir) {
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        other => other.map_err(cannot_create)?,
    }
    let mode = std::fs::metadata(dir)
        .map_err(cannot_create)?
        .permissions()
        .mode()
        & 0o777;
    if mode & 0o077 != 0 {
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700)).map_err(|e| {
            anyhow::anyhow!(
                "cannot make data directory {} private (0700): {e}",
                dir.display()
            )
        })?;
        tracing::warn!(dir = %dir.display(), was = format!("{mode:o}"), "data directory was open to other users; now 0700");
    }
    let probe = dir.join(".muster-write-check");
    std::fs::write(&probe, b"ok").map_err(|e| {
        anyhow::anyhow!(
            "data directory {} is not writable: {e}; {fix}",
            dir.display()
        )
    })?;
    let _ = std::fs::remove_file(probe);
    Ok(())
}

/// Runs `muster serve`: builds the app, serves, and on SIGINT/SIGTERM stops accepting, gives in-flight
/// requests `shutdown_timeout` to finish, and returns.
pub async fn serve(config: Config) -> anyhow::Result<()> {
    let deadline = config.shutdown_timeout;
    let database = config.database_url.redacted();
    let app = build(config).await?;
    let addr = app.local_addr().context("cannot read the bound address")?;
    tracing::info!(%addr, %database, version = env!("CARGO_PKG_VERSION"), "muster is listening");
    if let Some(url) = app.state().setup_url(addr) {
        // On stdout, alone on its line, so a person (or a script) sees it without reading the logs.
        println!("Open {url} to create the owner account and your workspace.");
    }
    let shutdown = CancellationToken::new();
    let server = tokio::spawn(app.run_until_stopped(shutdown.clone()));
    tokio::pin!(server);
    tokio::select! {
        finished = &mut server => return finished.context("the server task panicked")?,
        signal = shutdown_signal() => tracing::info!(signal, "shutting down"),
    }
    shutdown.cancel();
    match tokio::time::timeout(deadline, &mut server).await {
        Ok(finished) => finished.context("the server task panicked")?,
        Err(_) => {
            tracing::warn!(
                timeout_secs = deadline.as_secs(),
                "requests still running at the shutdown deadline; stopping anyway"
            );
            server.abort();
            Ok(())
        }
    }
}

pub(crate) async fn shutdown_signal() -> &'static str {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => "SIGINT",
        () = terminate => "SIGTERM",
    }
}
