//! The composition root: builds the server from its parts (store migrated before the listener binds,
//! [`AppState`], router, embedded runners) and runs it with a graceful shutdown deadline. Nothing else
//! imports this module but the CLI's `serve` and the tests that start a server.

use anyhow::Context as _;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use crate::config::Config;
pub use crate::state::AppState;
use crate::store;

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
    pub fn set_run_timing(&mut self, timing: crate::runner::executor::RunTiming) {
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
    crate::host::prepare_data_dir(&config.data_dir)?;
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
        signal = crate::host::shutdown_signal() => tracing::info!(signal, "shutting down"),
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
