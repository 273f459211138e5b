//! Muster as a process of its own: a prepared database (owner, workspace, API token, browser session),
//! the server spawned on it (`<bench executable> serve …`), its CPU time and memory from `/proc`, and the
//! API calls the scenarios make.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::{Child, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail, ensure};
use muster::domain::{Email, NewSession, NewUser, NewWorkspace, UserId, WorkspaceId};
use muster::store::Store;
use serde_json::{Value, json};

use crate::{Backend, TestDb};

/// The workspace's slug in every scenario.
pub const SLUG: &str = "bench";
/// How long a server gets to answer `/readyz`.
const READY_DEADLINE: Duration = Duration::from_secs(60);

/// A migrated database with an owner, a workspace, an API token and a browser session, before any
/// server runs on it.
pub struct Prepared {
    /// The database (dropped with it).
    pub db: TestDb,
    /// A store on it, for fixtures (closed before the server starts).
    pub store: Arc<dyn Store>,
    pub workspace: WorkspaceId,
    pub owner: UserId,
    /// The owner's API token.
    pub token: String,
    /// The owner's session cookie (`muster_session=…`).
    pub cookie: String,
}

impl Prepared {
    /// A fresh database on `backend`; `None` when PostgreSQL is unavailable and not required.
    pub async fn new(backend: Backend) -> anyhow::Result<Option<Prepared>> {
        let Some(db) = TestDb::new(backend).await else {
            return Ok(None);
        };
        let store = db.store().await;
        let (owner, ws) = store
            .create_owner_and_workspace(
                &NewUser {
                    email: Email::parse("bench@muster.test")?,
                    display_name: "Bench".into(),
                    password_hash: muster::auth::hash_password("bench-password-1")?,
                },
                &NewWorkspace::parse("Bench", SLUG, "BEN")?,
            )
            .await?;
        let token = crate::mint_token(store.as_ref(), ws.id, owner.id, "bench").await;
        let session = muster::auth::new_secret("ses");
        store
            .create_session(&NewSession {
                user_id: owner.id,
                token_hash: session.hash,
                expires_at: chrono::Utc::now() + chrono::Duration::days(1),
            })
            .await?;
        Ok(Some(Prepared {
            db,
            store,
            workspace: ws.id,
            owner: owner.id,
            token,
            cookie: format!(
                "{}={}",
                muster::http::extract::SESSION_COOKIE,
                session.secret
            ),
        }))
    }

    /// Closes the fixture store and starts the server.
    pub async fn serve(self, options: ServerOptions) -> anyhow::Result<World> {
        self.store.close().await;
        let server = Server::start(&self.db, &options).await?;
        Ok(World {
            http: reqwest::Client::builder()
                .pool_max_idle_per_host(64)
                .build()?,
            server,
            db: self.db,
            token: self.token,
            cookie: self.cookie,
            workspace: self.workspace,
            owner: self.owner,
        })
    }
}

/// How the server is started.
#[derive(Debug, Clone)]
pub struct ServerOptions {
    /// Run agents in the server (the embedded runner).
    pub embedded_runner: bool,
    /// The executable to start as `… serve` (default: this one, which a bench makes a server).
    pub exe: Option<PathBuf>,
    /// More arguments for `serve`.
    pub args: Vec<String>,
}

impl Default for ServerOptions {
    fn default() -> Self {
        Self {
            embedded_runner: true,
            exe: None,
            args: Vec::new(),
        }
    }
}

/// A `muster serve` process.
pub struct Server {
    child: Child,
    /// Its process id.
    pub pid: u32,
    /// Where it listens.
    pub addr: SocketAddr,
    /// From spawn to the first `200` of `/readyz`.
    pub ready_in: Duration,
    log: PathBuf,
}

impl Server {
    /// Spawns `<this executable> serve` on `db` (data and runs folders in its temp dir) and waits until
    /// `/readyz` answers 200.
    pub async fn start(db: &TestDb, options: &ServerOptions) -> anyhow::Result<Server> {
        // A free port: bound, read and released (the server binds it again at once).
        let addr = std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()?;
        let exe = match &options.exe {
            Some(exe) => exe.clone(),
            None => std::env::current_exe()?,
        };
        let base = db.dir.path();
        let log = base.join(format!("server-{}.log", addr.port()));
        let log_file = std::fs::File::create(&log)?;
        let mut cmd = std::process::Command::new(exe);
        cmd.arg("serve")
            .arg("--addr")
            .arg(addr.to_string())
            .arg("--data-dir")
            .arg(base.join("data"))
            // In the environment: a URL with a password is refused on the command line.
            .env("MUSTER_DATABASE_URL", database_url(&db.url))
            .arg("--runs-dir")
            .arg(base.join("runs"))
            // 500 viewers are one person's 500 connections here.
            .args(["--live-connections-per-user", "100000"])
            .args(["--max-events-per-run", "10000000"])
            .stdin(Stdio::null())
            .stdout(log_file.try_clone()?)
            .stderr(log_file);
        if !options.embedded_runner {
            cmd.arg("--no-runner");
        }
        cmd.args(&options.args);
        let spawned = Instant::now();
        let child = cmd.spawn().context("spawn the server")?;
        let mut server = Server {
            pid: child.id(),
            child,
            addr,
            ready_in: Duration::ZERO,
            log,
        };
        let http = reqwest::Client::new();
        let url = format!("http://{addr}/readyz");
        loop {
            if let Ok(r) = http.get(&url).send().await
                && r.status() == reqwest::StatusCode::OK
            {
                server.ready_in = spawned.elapsed();
                return Ok(server);
            }
            if let Some(status) = server.child.try_wait()? {
                bail!(
                    "the server exited ({status}) before it was ready:\n{}",
                    server.log_tail()
                );
            }
            if spawned.elapsed() > READY_DEADLINE {
                bail!(
                    "the server was not ready within {READY_DEADLINE:?}:\n{}",
                    server.log_tail()
                );
            }
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
    }

    /// The last lines of the server's log.
    pub fn log_tail(&self) -> String {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(30)..].join("\n")
    }

    /// CPU time (user + system) the server has used so far.
    pub fn cpu(&self) -> anyhow::Result<Duration> {
        let stat = std::fs::read_to_string(format!("/proc/{}/stat", self.pid))?;
        // Fields after the `(comm)`: state is field 3; utime and stime are fields 14 and 15.
        let rest = stat
            .rsplit_once(')')
            .map(|(_, r)| r)
            .context("a /proc stat line")?;
        let fields: Vec<&str> = rest.split_whitespace().collect();
        let ticks: u64 = fields[11].parse::<u64>()? + fields[12].parse::<u64>()?;
        Ok(Duration::from_secs_f64(ticks as f64 / clock_ticks() as f64))
    }

    /// Resident memory now and at its peak, in MiB.
    pub fn rss(&self) -> anyhow::Result<(f64, f64)> {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.pid))?;
        let field = |name: &str| -> anyhow::Result<f64> {
            let line = status
                .lines()
                .find(|l| l.starts_with(name))
                .with_context(|| format!("{name} in /proc status"))?;
            let kb: f64 = line
                .split_whitespace()
                .nth(1)
                .context("a kB value")?
                .parse()?;
            Ok(kb / 1024.0)
        };
        Ok((field("VmRSS:")?, field("VmHWM:")?))
    }

    /// Fails when the server has exited.
    pub fn check_alive(&mut self) -> anyhow::Result<()> {
        if let Some(status) = self.child.try_wait()? {
            bail!("the server exited ({status}):\n{}", self.log_tail());
        }
        Ok(())
    }

    /// SIGTERM, then SIGKILL after 10 s; always reaped.
    pub fn stop(&mut self) {
        if self.child.try_wait().ok().flatten().is_some() {
            return;
        }
        let _ = std::process::Command::new("kill")
            .args(["-TERM", &self.pid.to_string()])
            .status();
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if self.child.try_wait().ok().flatten().is_some() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop();
    }
}

/// The URL as `MUSTER_DATABASE_URL` takes it (with the password, unlike `redacted`).
fn database_url(url: &muster::store::DatabaseUrl) -> String {
    match url {
        muster::store::DatabaseUrl::Sqlite(path) => format!("sqlite://{}", path.display()),
        muster::store::DatabaseUrl::Postgres(raw) => raw.clone(),
    }
}

/// The kernel's clock ticks per second (`getconf CLK_TCK`; 100 when it cannot say).
fn clock_ticks() -> u64 {
    static TICKS: std::sync::LazyLock<u64> = std::sync::LazyLock::new(|| {
        std::process::Command::new("getconf")
            .arg("CLK_TCK")
            .output()
            .ok()
            .and_then(|o| String::from_utf8(o.stdout).ok())
            .and_then(|s| s.trim().parse().ok())
            .unwrap_or(100)
    });
    *TICKS
}

/// A running server with its database and the owner's credentials.
pub struct World {
    pub server: Server,
    pub db: TestDb,
    pub http: reqwest::Client,
    pub token: String,
    pub cookie: String,
    pub workspace: WorkspaceId,
    pub owner: UserId,
}

impl World {
    /// `http://addr{path}`.
    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.server.addr)
    }

    /// An API call as the owner; fails unless the status is `want`. Returns the JSON body.
    pub async fn api(
        &self,
        method: reqwest::Method,
        path: &str,
        body: Option<Value>,
        want: u16,
    ) -> anyhow::Result<Value> {
        let mut req = self
            .http
            .request(method.clone(), self.url(path))
            .bearer_auth(&self.token);
        if let Some(body) = body {
            req = req.json(&body);
        }
        let resp = req.send().await?;
        let status = resp.status().as_u16();
        let text = resp.text().await?;
        ensure!(status == want, "{method} {path}: {status} {text}");
        Ok(serde_json::from_str(&text).unwrap_or(Value::Null))
    }

    /// Creates a custom agent running `command` (no retries, `max_runs` at once).
    pub async fn custom_agent(
        &self,
        name: &str,
        command: &str,
        max_runs: u32,
    ) -> anyhow::Result<()> {
        let body = json!({
            "name": name, "kind": "custom", "command": command,
            "max_retries": 0, "max_concurrent_runs": max_runs,
        });
        self.api(reqwest::Method::POST, "/api/v1/agents", Some(body), 201)
            .await?;
        Ok(())
    }

    /// Files a todo issue assigned to `agent` (which queues a run); returns its key.
    pub async fn assign(&self, title: &str, agent: &str) -> anyhow::Result<String> {
        let body = json!({ "title": title, "status": "todo", "assignee": agent });
        let issue = self
            .api(reqwest::Method::POST, "/api/v1/issues", Some(body), 201)
            .await?;
        issue["key"]
            .as_str()
            .map(str::to_owned)
            .context("the new issue's key")
    }

    /// The id of the issue's first run, once it exists.
    pub async fn run_of(&self, key: &str) -> anyhow::Result<String> {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let runs = self
                .api(
                    reqwest::Method::GET,
                    &format!("/api/v1/issues/{key}/runs"),
                    None,
                    200,
                )
                .await?;
            if let Some(id) = runs.get(0).and_then(|r| r["id"].as_str()) {
                return Ok(id.to_owned());
            }
            ensure!(Instant::now() < deadline, "no run for {key} within 30 s");
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }

    /// The run's JSON once it ended (polled every `every`); fails unless it succeeded.
    pub async fn wait_run_end(
        &self,
        run: &str,
        deadline: Duration,
        every: Duration,
    ) -> anyhow::Result<Value> {
        let view = self.wait_run_settled(run, deadline, every).await?;
        ensure!(
            view["status"] == "succeeded",
            "run {run} ended {}: {view}",
            view["status"]
        );
        Ok(view)
    }

    /// The run's JSON once it ended, however it ended (polled every `every`).
    pub async fn wait_run_settled(
        &self,
        run: &str,
        deadline: Duration,
        every: Duration,
    ) -> anyhow::Result<Value> {
        let until = Instant::now() + deadline;
        loop {
            let view = self
                .api(
                    reqwest::Method::GET,
                    &format!("/api/v1/runs/{run}"),
                    None,
                    200,
                )
                .await?;
            if !matches!(
                view["status"].as_str(),
                Some("queued" | "claimed" | "running")
            ) {
                return Ok(view);
            }
            ensure!(
                Instant::now() < until,
                "run {run} still {} after {deadline:?}",
                view["status"]
            );
            tokio::time::sleep(every).await;
        }
    }
}

/// Unix micros of the `MBS <micros>` start line among a run's events.
pub async fn writer_start(world: &World, run: &str) -> anyhow::Result<u64> {
    let events = world
        .api(
            reqwest::Method::GET,
            &format!("/api/v1/runs/{run}/events?after=0&limit=50"),
            None,
            200,
        )
        .await?;
    let text = events.to_string();
    let at = text
        .find("MBS ")
        .context("no MBS line among the run's events")?;
    text[at + 4..]
        .split(|c: char| !c.is_ascii_digit())
        .next()
        .and_then(|s| s.parse().ok())
        .context("a number after MBS")
}
