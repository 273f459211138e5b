//! A scripted forge: a loopback stand-in for the GitHub, GitLab or Gitea/Forgejo API (one kind per
//! instance) and for its git smart-HTTP service, so the forge clients, the engine and the CLI can be
//! driven end to end offline.
//!
//! - The API answers only what Muster's clients call ([`api`]), in each forge's shape, and only with
//!   the one token it was started with, in the header that forge reads; anything else is 401.
//! - Git runs for real: `/git/<owner>/<name>.git/…` is `git http-backend` as a CGI ([`git`]). Fetch is
//!   anonymous; a push needs HTTP Basic auth whose password is the token (any user name).
//! - Tests change the forge's own state ([`ScriptedForge::merge`], [`ScriptedForge::close`],
//!   [`ScriptedForge::set_job_log`]) and read what it saw ([`ScriptedForge::requests`],
//!   [`ScriptedForge::pushes`], [`ScriptedForge::pulls`]).
//! - Webhooks out: [`send_hook`] and the payload builders in [`hooks`].

use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

use anyhow::{Context as _, Result};
use axum::Router;
use muster::domain::{ForgeKind, PrState};
use tokio_util::sync::CancellationToken;

mod api;
mod git;
pub mod hooks;

pub use hooks::{
    check_failed, check_passed, closed, event_for, line_comment, pr_comment, review, send_hook,
};

/// The largest request body (a pushed pack) the forge takes.
const PUSH_LIMIT: usize = 256 << 20;

/// One pull request (merge request) on the scripted forge.
#[derive(Debug, Clone, PartialEq)]
pub struct ScriptedPull {
    /// Its number (GitLab: iid).
    pub number: i64,
    /// The title as sent (with any `Draft: `/`WIP: ` prefix).
    pub title: String,
    pub body: String,
    pub head: String,
    pub base: String,
    pub draft: bool,
    pub state: PrState,
    /// Comment bodies, in order.
    pub comments: Vec<String>,
    /// The head branch's commit when it was opened.
    pub head_sha: String,
}

/// One request the forge received.
#[derive(Debug, Clone)]
pub struct Recorded {
    pub method: String,
    /// Path and query, as sent.
    pub path: String,
    /// Headers (lowercase names; values lossily decoded).
    pub headers: Vec<(String, String)>,
    /// The status it answered with.
    pub status: u16,
}

impl Recorded {
    /// The value of header `name` (lowercase), if sent.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
}

/// The forge's state, shared with its handlers.
pub(crate) struct State {
    pub(crate) kind: ForgeKind,
    /// `owner/name`.
    pub(crate) repo: String,
    pub(crate) token: String,
    /// Whether the token may push and open pull requests.
    pub(crate) can_push: bool,
    pub(crate) pulls: Vec<ScriptedPull>,
    pub(crate) job_logs: HashMap<i64, String>,
    pub(crate) requests: Vec<Recorded>,
    pub(crate) pushes: Vec<(String, String)>,
}

/// What every handler needs: the state and where things are.
#[derive(Clone)]
pub(crate) struct Ctx {
    pub(crate) state: Arc<Mutex<State>>,
    /// `http://127.0.0.1:<port>`.
    pub(crate) base: String,
    /// `GIT_PROJECT_ROOT`: holds `<owner>/<name>.git`.
    pub(crate) git_root: PathBuf,
}

impl Ctx {
    pub(crate) fn lock(&self) -> MutexGuard<'_, State> {
        self.state
            .lock()
            .expect("the scripted forge's state is never poisoned")
    }

    pub(crate) fn repo_dir(&self) -> PathBuf {
        let repo = self.lock().repo.clone();
        self.git_root.join(format!("{repo}.git"))
    }

    pub(crate) fn clone_url(&self) -> String {
        let repo = self.lock().repo.clone();
        format!("{}/git/{repo}.git", self.base)
    }

    pub(crate) fn web_url(&self) -> String {
        let repo = self.lock().repo.clone();
        format!("{}/{repo}", self.base)
    }
}

/// The scripted forge, serving until dropped.
pub struct ScriptedForge {
    kind: ForgeKind,
    addr: SocketAddr,
    ctx: Ctx,
    shutdown: CancellationToken,
    /// Holds the bare repository (removed on drop).
    _dir: tempfile::TempDir,
}

impl ScriptedForge {
    /// Starts it; `kind` picks which forge's API shape it serves. `repo` is `owner/name`; `token` is the
    /// only token it accepts (API and git push). The repository starts with one commit on `main`.
    pub async fn start(kind: ForgeKind, repo: &str, token: &str) -> Result<ScriptedForge> {
        anyhow::ensure!(
            repo.split('/').count() == 2,
            "the scripted forge serves owner/name repositories, not {repo:?}"
        );
        let dir = tempfile::tempdir().context("create the scripted forge's dir")?;
        let git_root = dir.path().join("repos");
        git::init(&git_root, repo, dir.path()).context("create the scripted repository")?;
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .context("bind the scripted forge")?;
        let addr = listener.local_addr().context("scripted forge address")?;
        let ctx = Ctx {
            state: Arc::new(Mutex::new(State {
                kind,
                repo: repo.to_owned(),
                token: token.to_owned(),
                can_push: true,
                pulls: Vec::new(),
                job_logs: HashMap::new(),
                requests: Vec::new(),
                pushes: Vec::new(),
            })),
            base: format!("http://{addr}"),
            git_root,
        };
        let app = Router::new()
            .fallback(api::handle)
            // Pushes carry packs; the default 2 MB limit would refuse a real one.
            .layer(axum::extract::DefaultBodyLimit::max(PUSH_LIMIT))
            .with_state(ctx.clone());
        let shutdown = crate::model_server::serve(listener, app, "scripted forge");
        Ok(ScriptedForge {
            kind,
            addr,
            ctx,
            shutdown,
            _dir: dir,
        })
    }

    /// Which forge it plays.
    pub fn kind(&self) -> ForgeKind {
        self.kind
    }

    /// The API root: GitHub `…/api/v3` (the Enterprise shape), GitLab `…/api/v4`, Gitea `…/api/v1`.
    pub fn api_url(&self) -> String {
        format!("http://{}{}", self.addr, api::prefix(self.kind))
    }

    /// `http://127.0.0.1:<port>/git/<owner>/<name>.git`, what its API reports as the clone URL.
    pub fn clone_url(&self) -> String {
        self.ctx.clone_url()
    }

    /// The bare repository on disk.
    pub fn repo_dir(&self) -> PathBuf {
        self.ctx.repo_dir()
    }

    /// Every pull request, by number.
    pub fn pulls(&self) -> Vec<ScriptedPull> {
        self.ctx.lock().pulls.clone()
    }

    /// `false`: the token becomes read-only (the API says it cannot push; pushes and opening pull
    /// requests are refused with 403). `true` restores it.
    pub fn set_token_scopes(&self, push: bool) {
        self.ctx.lock().can_push = push;
    }

    /// Merges pull request `number` (its state as the API then reports it).
    pub fn merge(&self, number: i64) {
        self.set_state(number, PrState::Merged);
    }

    /// Closes pull request `number` without merging.
    pub fn close(&self, number: i64) {
        self.set_state(number, PrState::Closed);
    }

    fn set_state(&self, number: i64, state: PrState) {
        let mut s = self.ctx.lock();
        let pull = s
            .pulls
            .iter_mut()
            .find(|p| p.number == number)
            .unwrap_or_else(|| panic!("the scripted forge has no pull request {number}"));
        pull.state = state;
    }

    /// The log the forge serves for CI job `job`.
    pub fn set_job_log(&self, job: i64, text: &str) {
        self.ctx.lock().job_logs.insert(job, text.to_owned());
    }

    /// Every request received so far, in order (API and git).
    pub fn requests(&self) -> Vec<Recorded> {
        self.ctx.lock().requests.clone()
    }

    /// Refs updated by git pushes, in order: (ref, new sha).
    pub fn pushes(&self) -> Vec<(String, String)> {
        self.ctx.lock().pushes.clone()
    }

    /// Stops serving.
    pub fn stop(&self) {
        self.shutdown.cancel();
    }
}

impl Drop for ScriptedForge {
    fn drop(&mut self) {
        self.shutdown.cancel();
    }
}

/// The branch's commit in the bare repository at `dir`, if it has the branch.
pub(crate) fn branch_sha(dir: &Path, branch: &str) -> Option<String> {
    let out = std::process::Command::new("git")
        .args(["rev-parse", "--verify", "--quiet"])
        .arg(format!("refs/heads/{branch}^{{commit}}"))
        .current_dir(dir)
        .output()
        .ok()?;
    let sha = String::from_utf8(out.stdout).ok()?.trim().to_owned();
    (out.status.success() && !sha.is_empty()).then_some(sha)
}
