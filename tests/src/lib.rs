#![forbid(unsafe_code)]
//! Shared support for Muster's integration tests: a fresh database per test on either backend, and a
//! real server on an ephemeral port.
//!
//! Database policy: Postgres tests use `MUSTER_TEST_PG_URL` (default
//! `postgres://postgres@127.0.0.1:5432/postgres`). Each test gets `muster_test_<uuid>`, dropped afterwards
//! unless `MUSTER_TEST_KEEP_DB` is set.
//!
//! Optional parts ([`Part`]: PostgreSQL, Chromium, the agent CLIs, the local model). A test that needs one
//! is marked `#[ignore = "<Part::reason()>"]`, so that a plain `cargo test` counts it as *ignored*, with the
//! reason, instead of passing without running; `cargo test -- --include-ignored` (what `.ci/run` does)
//! runs it. When it runs and the part is missing, it fails under `MUSTER_REQUIRE_<PART>=1`, else it skips
//! with a `!!! SKIPPING` line written past the test harness's capture, so it is seen. Each helper that
//! finds a part ([`TestDb::new`] on Postgres, `Browser::start`, [`agent_cli`], `LocalLlama::start`) checks
//! through [`needs`] that its test carries the mark, and fails the test when it does not: a new test
//! cannot forget it.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use muster::config::Config;
use muster::runner::executor::RunTiming;
use muster::state::AppState;
use muster::store::{self, DatabaseUrl, PoolOptions, Store};
use tokio_util::sync::CancellationToken;

pub mod bench;
pub mod browser;
pub mod cli;
pub mod engine;
pub mod ensemble;
pub mod forge;
pub mod model_server;
pub mod seed;

/// Reads a test-harness setting. Tests never set variables; they only read what CI exported.
#[allow(clippy::disallowed_methods)] // the harness's only window on the environment
pub fn env_setting(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.is_empty())
}

fn flag(name: &str) -> bool {
    env_setting(name).is_some_and(|v| v != "0")
}

/// An optional part that some tests need and a laptop may lack.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Part {
    /// A PostgreSQL server at `MUSTER_TEST_PG_URL`.
    Postgres,
    /// Debian's `chromium` and `chromedriver`.
    Browser,
    /// The pinned npm builds of claude, codex and opencode (`MUSTER_AGENT_CLIS_DIR`).
    AgentClis,
    /// The local model's venv: llama.cpp's server and SmolLM2 (`MUSTER_LOCAL_LLAMA_DIR`).
    LocalModel,
}

impl Part {
    /// The exact `#[ignore = "…"]` text of a test that needs this part (attributes take only literals,
    /// so tests repeat it; [`needs`] checks that the mark is there).
    pub const fn reason(self) -> &'static str {
        match self {
            Part::Postgres => "needs PostgreSQL (MUSTER_TEST_PG_URL); run with --include-ignored",
            Part::Browser => "needs Chromium and chromedriver; run with --include-ignored",
            Part::AgentClis => {
                "needs the agent CLIs (MUSTER_AGENT_CLIS_DIR, installed by .ci/run); run with --include-ignored"
            }
            Part::LocalModel => {
                "needs the local model (MUSTER_LOCAL_LLAMA_DIR, installed by .ci/run); run with --include-ignored"
            }
        }
    }

    /// The variable that turns this part's absence into a failure.
    pub const fn require_var(self) -> &'static str {
        match self {
            Part::Postgres => "MUSTER_REQUIRE_PG",
            Part::Browser => "MUSTER_REQUIRE_BROWSER",
            Part::AgentClis => "MUSTER_REQUIRE_AGENT_CLIS",
            Part::LocalModel => "MUSTER_REQUIRE_LOCAL_LLAMA",
        }
    }

    /// Whether the part's absence is a failure here.
    pub fn required(self) -> bool {
        flag(self.require_var())
    }
}

/// Checks that the running test is marked `#[ignore = "<part.reason()>"]`, and fails it otherwise: every
/// helper that finds an optional part calls it first. The running test is known by its thread's name
/// (libtest names each test's thread after it); the marked tests by asking this test binary itself
/// (`--list --ignored`, once). Code that runs outside a test's own thread is not checked.
#[track_caller]
pub fn needs(part: Part) {
    let Some(name) = std::thread::current().name().map(str::to_owned) else {
        return;
    };
    let Some(listed) = &*LISTED_TESTS else {
        return;
    };
    if listed.all.contains(&name) && !listed.ignored.contains(&name) {
        panic!(
            "test `{name}` needs an optional part but is not marked: add\n    #[ignore = \"{}\"]\n\
             above it, so that `cargo test` without the part counts it as ignored instead of passed \
             (`.ci/run` runs it with --include-ignored)",
            part.reason()
        );
    }
}

/// The part is missing: fails under its `MUSTER_REQUIRE_*`, else writes `!!! SKIPPING {what}: {why}` and
/// `hint` straight to stderr, past the test harness's capture (which holds only `print!`/`eprintln!`
/// output), so that a person sees what did not run.
#[track_caller]
pub fn skip(part: Part, what: &str, why: &str, hint: &str) {
    if part.required() {
        panic!("{}=1 but {why}; {hint}", part.require_var());
    }
    use std::io::Write as _;
    let message = format!(
        "\n!!! SKIPPING {what}: {why}.\n!!! {hint}; set {}=1 to make this a failure.\n",
        part.require_var()
    );
    // Ignored: a test's skip note is not worth failing it over.
    let _ = std::io::stderr().write_all(message.as_bytes());
}

/// The names of this binary's tests, all and ignored.
struct ListedTests {
    all: std::collections::HashSet<String>,
    ignored: std::collections::HashSet<String>,
}

static LISTED_TESTS: std::sync::LazyLock<Option<ListedTests>> = std::sync::LazyLock::new(|| {
    let exe = std::env::current_exe().ok()?;
    let list = |extra: &[&str]| -> Option<std::collections::HashSet<String>> {
        let out = std::process::Command::new(&exe)
            .args(["--list", "--format", "terse"])
            .args(extra)
            .stdin(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .output()
            .ok()?;
        let text = String::from_utf8(out.stdout).ok()?;
        out.status.success().then(|| {
            text.lines()
                .filter_map(|l| l.strip_suffix(": test"))
                .map(str::to_owned)
                .collect()
        })
    };
    Some(ListedTests {
        all: list(&[])?,
        ignored: list(&["--ignored"])?,
    })
});

/// The Postgres server the tests use.
pub fn pg_admin_url() -> String {
    env_setting("MUSTER_TEST_PG_URL")
        .unwrap_or_else(|| "postgres://postgres@127.0.0.1:5432/postgres".to_owned())
}

/// Which backend a test runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    Sqlite,
    Postgres,
}

/// A fresh, empty database for one test, removed when dropped.
pub struct TestDb {
    /// The URL to hand to `store::connect` or `Config`.
    pub url: DatabaseUrl,
    /// A data directory for the test (holds the SQLite file, when SQLite).
    pub dir: tempfile::TempDir,
    pg_name: Option<String>,
}

impl TestDb {
    /// A new database on `backend`, or `None` (after a loud message) when Postgres is unavailable and not
    /// required. Panics when `MUSTER_REQUIRE_PG=1` and Postgres cannot be reached, and on Postgres when the
    /// test is not marked with [`Part::Postgres`]'s reason (see [`needs`]).
    pub async fn new(backend: Backend) -> Option<TestDb> {
        if backend == Backend::Postgres {
            needs(Part::Postgres);
        }
        let dir = tempfile::tempdir().expect("create a temp dir");
        match backend {
            Backend::Sqlite => Some(TestDb {
                url: DatabaseUrl::Sqlite(dir.path().join("muster.db")),
                dir,
                pg_name: None,
            }),
            Backend::Postgres => {
                let admin = pg_admin_url();
                let name = format!("muster_test_{}", uuid::Uuid::new_v4().simple());
                if let Err(e) = store::testing::create_postgres_database(&admin, &name).await {
                    let url = DatabaseUrl::parse(&admin)
                        .map(|u| u.redacted())
                        .unwrap_or(admin);
                    skip(
                        Part::Postgres,
                        "a PostgreSQL test",
                        &format!("PostgreSQL at {url} is unusable ({e:#})"),
                        "Start PostgreSQL or set MUSTER_TEST_PG_URL",
                    );
                    return None;
                }
                let url = DatabaseUrl::Postgres(replace_database(&admin, &name));
                Some(TestDb {
                    url,
                    dir,
                    pg_name: Some(name),
                })
            }
        }
    }

    /// Connects and migrates a store on this database.
    pub async fn store(&self) -> Arc<dyn Store> {
        store::connect(
            &self.url,
            PoolOptions {
                max_connections: 10,
                acquire_timeout: Duration::from_secs(10),
            },
        )
        .await
        .expect("connect and migrate the test database")
    }

    /// A server configuration on this database, listening on an ephemeral loopback port, without the
    /// embedded runner.
    pub fn config(&self) -> Config {
        let mut config = Config::for_data_dir(self.dir.path().join("data"));
        config.database_url = self.url.clone();
        // Runs keep their folders outside the data folder, as in production.
        config.runs_dir = self.dir.path().join("runs");
        // Agents start through the `muster` binary's sandbox exec step (the test executable has none).
        config.self_exe = muster_bin();
        // Tests that are not about runs must not have agents acting on their issues behind their back;
        // run tests switch the embedded runner back on.
        config.embedded_runner = false;
        config
    }

    /// The Postgres database name, if this is Postgres.
    pub fn pg_name(&self) -> Option<&str> {
        self.pg_name.as_deref()
    }
}

impl Drop for TestDb {
    fn drop(&mut self) {
        let Some(name) = self.pg_name.take() else {
            return;
        };
        if flag("MUSTER_TEST_KEEP_DB") {
            eprintln!("keeping test database {name}");
            return;
        }
        // Drop runs inside the test's runtime; do the async cleanup on a thread of its own.
        let admin = pg_admin_url();
        let cleanup = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("runtime");
            rt.block_on(store::testing::drop_postgres_database(&admin, &name))
        });
        if let Ok(Err(e)) = cleanup.join() {
            eprintln!("could not drop a test database: {e:#}");
        }
    }
}

/// `url` with its database name replaced by `name`.
pub fn replace_database(url: &str, name: &str) -> String {
    let (base, query) = url
        .split_once('?')
        .map_or((url, None), |(b, q)| (b, Some(q)));
    let base = match base.rfind('/') {
        Some(i) if base[..i].contains("://") && i > base.find("://").unwrap_or(0) + 2 => &base[..i],
        _ => base,
    };
    match query {
        Some(q) => format!("{base}/{name}?{q}"),
        None => format!("{base}/{name}"),
    }
}

/// The `muster` binary of this build, beside the test executable's `deps` folder: `it` is a test of the
/// `muster` package, so `cargo test` builds that binary before it runs (`CARGO_BIN_EXE_muster`; a test
/// in `it` checks that both name one file). Runs start every agent through its `sandbox-exec` step.
pub fn muster_bin() -> PathBuf {
    let exe = std::env::current_exe().expect("the test executable's path");
    let mut dir = exe.parent().expect("a folder").to_path_buf();
    if dir.ends_with("deps") {
        dir.pop();
    }
    dir.join("muster")
}

/// A running server on an ephemeral port.
pub struct TestApp {
    /// Where it listens.
    pub addr: SocketAddr,
    /// An HTTP client.
    pub client: reqwest::Client,
    /// The server's store.
    pub store: Arc<dyn Store>,
    /// The server's state (its store, hub, secrets, …).
    pub state: AppState,
    /// Cancel to shut the server down.
    pub shutdown: CancellationToken,
    /// The server task; resolves after shutdown.
    pub handle: tokio::task::JoinHandle<anyhow::Result<()>>,
    /// Where the server keeps its files.
    pub data_dir: PathBuf,
    /// The first-run setup link, when the database had no account.
    pub setup_url: Option<String>,
}

/// A WebSocket to a test server.
pub type Socket =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

impl TestApp {
    /// Opens a WebSocket on `path`, sending `headers` (`("cookie", …)`, `("authorization", …)`,
    /// `("origin", …)`); the handshake's error when the server refuses it.
    pub async fn socket(
        &self,
        path: &str,
        headers: &[(&str, &str)],
    ) -> Result<Socket, tokio_tungstenite::tungstenite::Error> {
        use tokio_tungstenite::tungstenite::client::IntoClientRequest as _;
        use tokio_tungstenite::tungstenite::http::HeaderName;
        let mut request = format!("ws://{}{path}", self.addr)
            .into_client_request()
            .expect("a WebSocket request");
        for (name, value) in headers {
            let name = HeaderName::from_bytes(name.as_bytes()).expect("a header name");
            let value = value.parse().expect("a header value");
            request.headers_mut().insert(name, value);
        }
        tokio_tungstenite::connect_async(request)
            .await
            .map(|(socket, _)| socket)
    }

    /// `http://addr/path`.
    pub fn url(&self, path: &str) -> String {
        format!("http://{}{}", self.addr, path)
    }

    /// GET `path`.
    pub async fn get(&self, path: &str) -> reqwest::Response {
        self.client
            .get(self.url(path))
            .send()
            .await
            .expect("request")
    }
}

impl TestApp {
    /// Signs `email` in through the login form with `http` (which must not follow redirects), as a
    /// browser would; returns the session cookie pair (`muster_session=…`). The answer must be a redirect
    /// that sets an `HttpOnly`, `SameSite=Lax` cookie.
    pub async fn sign_in_cookie(
        &self,
        http: &reqwest::Client,
        email: &str,
        password: &str,
    ) -> String {
        let res = http
            .post(self.url("/login"))
            .form(&[("email", email), ("password", password), ("next", "")])
            .send()
            .await
            .expect("post the sign-in form");
        assert_eq!(
            res.status(),
            reqwest::StatusCode::SEE_OTHER,
            "{email} signs in: a redirect"
        );
        let set_cookie = res.headers()["set-cookie"]
            .to_str()
            .expect("a readable Set-Cookie")
            .to_owned();
        assert!(
            set_cookie.contains("HttpOnly") && set_cookie.contains("SameSite=Lax"),
            "{set_cookie}"
        );
        set_cookie
            .split(';')
            .next()
            .expect("a cookie pair")
            .to_owned()
    }

    /// Signs `email` in through the login form and reads the CSRF token off the workspace's board at
    /// `/w/{workspace}`: a browser-like [`Session`].
    pub async fn sign_in(&self, email: &str, password: &str, workspace: &str) -> Session {
        let http = no_redirects();
        let cookie = self.sign_in_cookie(&http, email, password).await;
        let mut session = Session {
            http,
            cookie,
            csrf: String::new(),
        };
        let board = session.page(self, &format!("/w/{workspace}")).await;
        session.csrf = board
            .split(r#"<meta name="csrf-token" content=""#)
            .nth(1)
            .and_then(|rest| rest.split('"').next())
            .expect("the page carries its CSRF token")
            .to_owned();
        session
    }
}

/// An HTTP client that does not follow redirects, so that tests see them.
pub fn no_redirects() -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .expect("an HTTP client")
}

/// A signed-in browser-like client: its session cookie and the CSRF token its pages carry.
pub struct Session {
    /// A client that does not follow redirects.
    pub http: reqwest::Client,
    /// The `muster_session=…` cookie pair.
    pub cookie: String,
    /// The CSRF token of the session's pages.
    pub csrf: String,
}

impl Session {
    /// `GET path` with the session cookie.
    pub async fn get(&self, app: &TestApp, path: &str) -> reqwest::Response {
        self.send(self.http.get(app.url(path))).await
    }

    /// `GET path` as htmx asks (`HX-Request: true`), with the session cookie.
    pub async fn hx_get(&self, app: &TestApp, path: &str) -> reqwest::Response {
        self.send(self.http.get(app.url(path)).header("HX-Request", "true"))
            .await
    }

    /// `GET path`, which must answer 200: the page's HTML.
    pub async fn page(&self, app: &TestApp, path: &str) -> String {
        let res = self.get(app, path).await;
        assert_eq!(res.status(), reqwest::StatusCode::OK, "GET {path}");
        res.text().await.expect("the page's text")
    }

    /// Posts `form` to `path` with the session cookie (the form carries its own `_csrf`, or not).
    pub async fn post(
        &self,
        app: &TestApp,
        path: &str,
        form: &[(&str, &str)],
    ) -> reqwest::Response {
        self.send(self.http.post(app.url(path)).form(form)).await
    }

    /// [`Session::post`] as htmx sends it (`HX-Request: true`).
    pub async fn hx_post(
        &self,
        app: &TestApp,
        path: &str,
        form: &[(&str, &str)],
    ) -> reqwest::Response {
        self.send(
            self.http
                .post(app.url(path))
                .form(form)
                .header("HX-Request", "true"),
        )
        .await
    }

    async fn send(&self, request: reqwest::RequestBuilder) -> reqwest::Response {
        request
            .header("cookie", &self.cookie)
            .send()
            .await
            .expect("send the request")
    }
}

/// Builds the app (migrating first, then binding `127.0.0.1:0`) and serves it in the background.
pub async fn spawn_app(config: Config) -> TestApp {
    AppBuilder::new(config).spawn().await
}

/// A test server to start: its configuration (usually [`TestDb::config`]) and its run clocks.
pub struct AppBuilder {
    config: Config,
    timing: Option<RunTiming>,
}

impl AppBuilder {
    /// A server with `config` and the production run clocks.
    pub fn new(config: Config) -> AppBuilder {
        AppBuilder {
            config,
            timing: None,
        }
    }

    /// Runs its agents through the embedded runner (off in [`TestDb::config`]).
    pub fn embedded_runner(mut self) -> AppBuilder {
        self.config.embedded_runner = true;
        self
    }

    /// Changes the configuration.
    pub fn configure(mut self, change: impl FnOnce(&mut Config)) -> AppBuilder {
        change(&mut self.config);
        self
    }

    /// The run clocks (ticks, graces, stall detection) of its embedded runner.
    pub fn timing(mut self, timing: RunTiming) -> AppBuilder {
        self.timing = Some(timing);
        self
    }

    /// Builds the app (migrating first, then binding `127.0.0.1:0`) and serves it in the background.
    pub async fn spawn(self) -> TestApp {
        init_tracing();
        let data_dir = self.config.data_dir.clone();
        let mut app = muster::app::build(self.config)
            .await
            .expect("build the app");
        if let Some(timing) = self.timing {
            app.set_run_timing(timing);
        }
        let addr = app.local_addr().expect("bound address");
        let state = app.state().clone();
        let setup_url = state.setup_url(addr);
        let shutdown = CancellationToken::new();
        let handle = tokio::spawn(app.run_until_stopped(shutdown.clone()));
        TestApp {
            addr,
            client: reqwest::Client::new(),
            store: state.store.clone(),
            state,
            shutdown,
            handle,
            data_dir,
            setup_url,
        }
    }
}

/// Logs to the test output when `TEST_LOG` is set.
pub fn init_tracing() {
    static INIT: std::sync::LazyLock<()> = std::sync::LazyLock::new(|| {
        if flag("TEST_LOG") {
            muster::telemetry::init(muster::telemetry::LogFormat::Text);
        }
    });
    *INIT
}

/// Mints a personal API token for `user` in `ws` straight in the store (as `muster token create` would)
/// and returns its secret, for tests that drive the API or the CLI as that person.
pub async fn mint_token(
    store: &dyn Store,
    ws: muster::domain::WorkspaceId,
    user: muster::domain::UserId,
    name: &str,
) -> String {
    let secret = muster::auth::new_secret(muster::auth::API_TOKEN_KIND);
    store
        .create_api_token(&muster::domain::NewApiToken {
            workspace_id: ws,
            user_id: user,
            name: name.to_owned(),
            prefix: secret.prefix,
            token_hash: secret.hash,
            run_id: None,
        })
        .await
        .expect("store the API token");
    secret.secret
}

/// Sends `request` and reads its answer's JSON body, whatever the status: for a test that only needs
/// the body.
pub async fn json_of(request: reqwest::RequestBuilder) -> serde_json::Value {
    let res = request.send().await.expect("send the request");
    res.json().await.expect("a JSON body")
}

/// Runs `git` with `args` in `dir`, asserting that it succeeds; returns its stdout.
pub fn git(dir: &std::path::Path, args: &[&str]) -> String {
    let out = std::process::Command::new("git")
        .args(args)
        .current_dir(dir)
        .output()
        .expect("run git");
    assert!(out.status.success(), "git {args:?}: {out:?}");
    String::from_utf8(out.stdout).expect("git prints UTF-8")
}

/// A git repository at `<dir>/<name>` with one commit of `which.txt` saying `name`: an agent's worktree
/// tells which repository it came from.
pub fn repo_named(dir: &std::path::Path, name: &str) -> std::path::PathBuf {
    let repo = dir.join(name);
    std::fs::create_dir_all(&repo).expect("create the repository");
    git(&repo, &["init", "-q", "-b", "main"]);
    std::fs::write(repo.join("which.txt"), format!("{name}\n")).expect("write which.txt");
    git_commit_all(&repo, "first");
    repo
}

/// Stages everything in the repository at `dir` and commits it with `message`, as a test identity.
pub fn git_commit_all(dir: &std::path::Path, message: &str) {
    git(dir, &["add", "-A"]);
    git(
        dir,
        &[
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@t",
            "commit",
            "-qm",
            message,
        ],
    );
}

/// Makes `dir` (created if missing) a git repository on `main` whose one commit holds a `README.md`.
pub fn demo_repo(dir: &std::path::Path) {
    std::fs::create_dir_all(dir).expect("create the repository's folder");
    git(dir, &["init", "-q", "-b", "main"]);
    std::fs::write(dir.join("README.md"), "# Demo\n").expect("write the README");
    git_commit_all(dir, "first");
}

/// The pinned npm build of an agent CLI (`claude`, `codex`, `opencode`): looked up in
/// `MUSTER_AGENT_CLIS_DIR`, then `$HOME/.cache/muster-agent-clis/node_modules/.bin` (where `.ci/run`
/// installs them). `None`, after a loud message, when it is missing — a failure instead under
/// `MUSTER_REQUIRE_AGENT_CLIS=1`.
#[track_caller]
pub fn agent_cli(name: &str, test: &str) -> Option<PathBuf> {
    needs(Part::AgentClis);
    let mut dirs: Vec<PathBuf> = Vec::new();
    dirs.extend(env_setting("MUSTER_AGENT_CLIS_DIR").map(PathBuf::from));
    dirs.extend(
        env_setting("HOME")
            .map(|h| PathBuf::from(h).join(".cache/muster-agent-clis/node_modules/.bin")),
    );
    let found = dirs.iter().map(|d| d.join(name)).find(|p| p.is_file());
    if found.is_none() {
        skip(
            Part::AgentClis,
            test,
            &format!(
                "`{name}` is not installed (looked in MUSTER_AGENT_CLIS_DIR and ~/.cache/muster-agent-clis)"
            ),
            "Install the pinned CLIs with .ci/run (step \"Agent CLIs\") or set MUSTER_AGENT_CLIS_DIR",
        );
    }
    found
}

#[cfg(test)]
mod tests {
    #[test]
    fn replaces_the_database_name() {
        assert_eq!(
            super::replace_database("postgres://u@h:5432/postgres", "x"),
            "postgres://u@h:5432/x"
        );
        assert_eq!(
            super::replace_database("postgres://u@h/postgres?sslmode=disable", "x"),
            "postgres://u@h/x?sslmode=disable"
        );
        assert_eq!(
            super::replace_database("postgres://u@h", "x"),
            "postgres://u@h/x"
        );
    }
}
