//! Preparing a claimed run: its work directory (a git worktree when the workspace has a repository), HOME
//! and TMPDIR under `<runs_dir>/<run_id>/` (outside the data folder), the brief, the run's token (`MUSTER_URL`, `MUSTER_TOKEN`,
//! `MUSTER_ISSUE` let the agent use `muster issue …` on its issue), the [`RunSpec`] built from the agent
//! profile (secrets opened here and nowhere else), and the launch spec, which starts the agent through the
//! sandbox's exec step (`crate::sandbox`) unless the operator allowed unsandboxed agents on a kernel that
//! cannot sandbox them.

use std::os::unix::fs::MetadataExt as _;
use std::path::{Path, PathBuf};

use muster_agents::{
    Adapter, CustomAdapter, CustomFormat, LaunchSpec, PermissionMode, RunSpec, RuntimeKind,
};

use super::brief;
use super::git::{self, Worktree};
use crate::domain::{Agent, AgentKind, Comment, FailureReason, Issue, NewApiToken, Role, Run};
use crate::engine::Engine;

/// A run ready to spawn.
pub(super) struct Prepared {
    pub launch: LaunchSpec,
    pub adapter: Box<dyn Adapter>,
    /// Plain values of the agent's secret variables, its base URL's credentials and the run's token: what
    /// the run's redactor hides.
    pub secrets: Vec<String>,
    pub workdir: PathBuf,
    /// The run's git worktree, when the workspace has a repository.
    pub worktree: Option<Worktree>,
    /// The agent's enabled skills as written for this run; dropping it removes them.
    #[expect(
        dead_code,
        reason = "held until the run ends for its Drop, which removes the skills"
    )]
    pub skills: crate::skills::Materialized,
    /// The `sandbox` event's payload (the mode, and the rules and ports when sandboxed).
    pub sandbox: serde_json::Value,
    /// Where the CLI logs each model request's usage, when its stdout does not (Codex).
    pub usage_log: Option<PathBuf>,
}

/// Why a run could not be prepared; `reason` decides retries (never for config problems).
#[derive(Debug)]
pub(super) struct PrepareError {
    pub reason: FailureReason,
    pub message: String,
}

impl PrepareError {
    fn config(message: impl Into<String>) -> Self {
        Self {
            reason: FailureReason::Config,
            message: message.into(),
        }
    }
}

/// The folder under the runs folder where this runner keeps its mirrors of repositories given as git URLs.
const MIRRORS_DIR: &str = "repos";

/// A child's environment variables, in order.
type EnvVars = Vec<(String, String)>;

/// Where a run keeps its files.
pub(super) fn run_dir(state: &Engine, run: &Run) -> PathBuf {
    state.config.runs_dir.join(run.id.to_string())
}

/// The branch a run works on: `muster/<KEY>-r<attempt>`.
pub(super) fn branch_name(issue: &Issue, run: &Run) -> String {
    format!("muster/{}-r{}", issue.key, run.attempt)
}

/// Creates the work directory (a git worktree when the workspace has a repository), writes the brief,
/// creates the run's token and builds the launch spec. A worktree made here is discarded again if a
/// later step fails.
pub(super) async fn prepare(
    state: &Engine,
    run: &Run,
    issue: &Issue,
    comments: &[Comment],
    agent: &Agent,
) -> Result<Prepared, PrepareError> {
    let dir = run_dir(state, run);
    for sub in ["home", "tmp"] {
        let path = dir.join(sub);
        tokio::fs::create_dir_all(&path)
            .await
            .map_err(|e| PrepareError::config(format!("cannot create {}: {e}", path.display())))?;
    }
    let worktree = work_dir(state, run, issue, agent, &dir).await?;
    match finish_prepare(state, run, issue, comments, agent, worktree.clone()).await {
        Ok(prepared) => Ok(prepared),
        Err(e) => {
            if let Some(tree) = &worktree {
                git::discard(tree).await;
            }
            Err(e)
        }
    }
}

async fn finish_prepare(
    state: &Engine,
    run: &Run,
    issue: &Issue,
    comments: &[Comment],
    agent: &Agent,
    worktree: Option<Worktree>,
) -> Result<Prepared, PrepareError> {
    let dir = run_dir(state, run);
    let (workdir, home) = (dir.join("work"), dir.join("home"));
    let p = &agent.profile;
    if let Some(problem) = crate::service::agents::model_problem(p) {
        // Saved before the rule: refuse to start rather than run an agent that can do nothing.
        return Err(PrepareError::config(format!(
            "the agent's model is not set: {problem}; set it on the agent's page"
        )));
    }
    // The repository's own context file, if any, is kept and the brief added after it.
    let tracked = worktree.as_ref().is_some_and(|t| t.brief_tracked);
    let text = brief::render(issue, comments, agent);
    let brief_path = brief::write(&workdir, p.kind, text, tracked)
        .await
        .map_err(PrepareError::config)?;
    let skills = crate::skills::materialize(state, agent, &workdir, &home, &brief_path)
        .await
        .map_err(PrepareError::config)?;
    let (mut env, mut secrets) = open_env(state, agent, issue, run)?;
    let token = run_token(state, run).await?;
    env.push(("MUSTER_TOKEN".to_owned(), token.clone()));
    secrets.push(token);
    if worktree.is_some() {
        env.extend(git::agent_env(&dir));
        let identity = git::agent_identity(p.name.as_str());
        env.splice(0..0, identity);
    }
    let kind: RuntimeKind = p
        .kind
        .as_str()
        .parse()
        .map_err(|e| PrepareError::config(format!("{e}")))?;
    let (binary, extra_args, adapter) = program(state, agent, kind).await?;
    let mode = crate::sandbox::mode(&state.config);
    if let crate::sandbox::Mode::Refused { reason } = &mode {
        return Err(PrepareError {
            reason: FailureReason::Sandbox,
            message: format!(
                "agents cannot start on this server: {reason}; the operator can start it with --allow-unsandboxed-agents"
            ),
        });
    }
    let sandboxed = matches!(mode, crate::sandbox::Mode::Sandboxed { .. });
    let permission_mode: PermissionMode = p.permission_mode.as_str().parse().unwrap_or_default();
    let spec = RunSpec {
        binary,
        prompt: brief::prompt(issue, p.kind),
        model: p.model.clone(),
        // A llama agent without its own URL uses the first configured local server (the child's
        // environment is cleared, so it would never see MUSTER_LLAMA_URL itself).
        base_url: p.base_url.clone().or_else(|| {
            (p.kind == AgentKind::Llama)
                .then(|| state.config.llama_urls.first().map(|(_, url)| url.clone()))
                .flatten()
        }),
        // The agent's own key variable (ANTHROPIC_API_KEY, OPENAI_API_KEY, …) travels in `env`; the
        // adapters point their CLI's provider at it by name (Codex `env_key`, OpenCode `{env:…}`).
        api_key: None,
        extra_args,
        // Codex's own sandbox (bubblewrap) cannot run inside Landlock; ours confines it instead (a
        // read-only profile gets a read-only worktree there).
        permission_mode: if sandboxed && kind == RuntimeKind::Codex {
            PermissionMode::Bypass
        } else {
            permission_mode
        },
        env,
        workdir: workdir.clone(),
        home_dir: home,
        resume_session: None,
        running_as_root: running_as_root(),
    };
    secrets.extend(crate::redact::url_credentials(spec.base_url.as_deref()));
    let usage_log = adapter.usage_log_dir(&spec);
    let launch = adapter
        .command(&spec)
        .map_err(|e| PrepareError::config(e.to_string()))?;
    let (launch, sandbox) = confine(
        state,
        &mode,
        launch,
        &dir,
        agent,
        permission_mode == PermissionMode::ReadOnly,
    )?;
    Ok(Prepared {
        launch,
        adapter,
        secrets,
        workdir,
        worktree,
        skills,
        sandbox,
        usage_log,
    })
}

/// Puts the launch inside the sandbox (when the mode says so) and returns it with the `sandbox` event's
/// payload. A program that cannot be found is a missing CLI, reported before the exec step would.
fn confine(
    state: &Engine,
    mode: &crate::sandbox::Mode,
    launch: LaunchSpec,
    dir: &Path,
    agent: &Agent,
    read_only: bool,
) -> Result<(LaunchSpec, serde_json::Value), PrepareError> {
    use crate::sandbox::{self, Mode};
    let Mode::Sandboxed { abi } = mode else {
        return Ok((launch, sandbox::event_payload(mode, None)));
    };
    let search_path = muster_agents::process::inherited_path();
    let cwd = launch.cwd.clone();
    if which::which_in(&launch.program, search_path.as_ref(), &cwd).is_err() {
        return Err(PrepareError {
            reason: FailureReason::MissingCli,
            message: format!("{} is not installed", launch.program.display()),
        });
    }
    let mut ports = state.config.agent_ports.clone();
    ports.extend(
        state
            .api_url()
            .as_deref()
            .and_then(sandbox::policy::url_port),
    );
    ports.extend(
        launch
            .env_value("MUSTER_URL")
            .and_then(sandbox::policy::url_port),
    );
    ports.extend(
        agent
            .profile
            .base_url
            .as_deref()
            .or_else(|| state.config.llama_urls.first().map(|(_, u)| u.as_str()))
            .and_then(sandbox::policy::url_port),
    );
    let (home, tmp) = (dir.join("home"), dir.join("tmp"));
    let runs_dir = &state.config.runs_dir;
    let protected = [state.config.data_dir.as_path(), runs_dir.as_path()];
    let custom = (agent.profile.kind == AgentKind::Custom)
        .then_some(agent.profile.command.as_deref())
        .flatten();
    let facts = sandbox::policy::RunFacts {
        workdir: &cwd,
        home: &home,
        tmp: &tmp,
        read_only,
        program: &launch.program,
        custom_command: custom,
        protected: &protected,
        abi: *abi,
        connect_ports: ports,
        search_path: search_path.as_deref(),
        extra_rw: &state.config.agent_rw_paths,
        extra_read: &[git::exclude_file(dir)],
        muster: &state.config.self_exe,
    };
    let policy = sandbox::policy::for_run(&facts)
        .map_err(|e| PrepareError::config(format!("cannot build the sandbox: {e}")))?;
    let payload = sandbox::event_payload(mode, Some(&policy));
    let launch = sandbox::wrap(launch, &policy, &state.config.self_exe, &home, &tmp)
        .map_err(|e| PrepareError::config(format!("cannot build the sandbox: {e}")))?;
    Ok((launch, payload))
}

/// The run's `work` directory: a git worktree of the workspace's repository on the run's own branch,
/// or a plain folder when the workspace has no repository.
async fn work_dir(
    state: &Engine,
    run: &Run,
    issue: &Issue,
    agent: &Agent,
    dir: &Path,
) -> Result<Option<Worktree>, PrepareError> {
    let ws = state
        .store
        .get_workspace(run.workspace_id)
        .await
        .map_err(|e| PrepareError::config(format!("cannot read the workspace: {e}")))?;
    let Some(repo) = ws.repo_path.filter(|r| !r.trim().is_empty()) else {
        let workdir = dir.join("work");
        tokio::fs::create_dir_all(&workdir).await.map_err(|e| {
            PrepareError::config(format!("cannot create {}: {e}", workdir.display()))
        })?;
        return Ok(None);
    };
    let short: String = run.id.to_string().chars().take(8).collect();
    let brief = brief::file_name(agent.profile.kind);
    let branch = branch_name(issue, run);
    let source = git::RepoSource::parse(&repo).map_err(|e| {
        PrepareError::config(format!(
            "the workspace's repository setting is invalid: {e}"
        ))
    })?;
    let made = match source {
        git::RepoSource::Path(path) => git::create(&path, dir, &branch, &short, brief).await,
        git::RepoSource::Url(url) => {
            // The lead's remote runner will pass its own cache folder here.
            let cache = state.config.runs_dir.join(MIRRORS_DIR);
            let mirror = holding_lease(state, run, git::mirror(&cache, &url))
                .await
                .map_err(PrepareError::config)?;
            git::create_from_mirror(&mirror, &url, dir, &branch, &short, brief).await
        }
    };
    made.map(Some)
        .map_err(|e| PrepareError::config(format!("cannot create the run's git worktree: {e}")))
}

/// Awaits `work` (a clone or fetch may outlast the claim's lease) while renewing the run's lease every
/// heartbeat, as the watch loop does once the run is started, so a slow remote is not taken for a lost
/// runner. A renewal that fails is left to `start_run`, which then finds the run no longer ours.
async fn holding_lease<T>(state: &Engine, run: &Run, work: impl Future<Output = T>) -> T {
    let Some(runner) = run.runner_id else {
        return work.await;
    };
    let timing = state.runs.timing();
    let mut tick = tokio::time::interval(timing.heartbeat);
    tick.tick().await; // The first tick is immediate; the claim has just set the lease.
    tokio::pin!(work);
    loop {
        tokio::select! {
            done = &mut work => return done,
            _ = tick.tick() => {
                let until = chrono::Utc::now() + timing.lease;
                if let Err(e) = state.store.renew_lease(run.id, runner, until).await {
                    tracing::warn!(error = %e, "cannot renew the lease while fetching the repository");
                }
            }
        }
    }
}

/// A token valid for this run only (see `http::extract`), held by the workspace's first owner; it dies
/// with the run.
async fn run_token(state: &Engine, run: &Run) -> Result<String, PrepareError> {
    let members = state
        .store
        .list_members(run.workspace_id)
        .await
        .map_err(|e| PrepareError::config(format!("cannot read the workspace's members: {e}")))?;
    let owner = members
        .iter()
        .find(|m| m.role == Role::Owner)
        .ok_or_else(|| {
            PrepareError::config("the workspace has no owner to hold the run's token")
        })?;
    let secret = crate::auth::new_secret(crate::service::tokens::TOKEN_KIND);
    let new = NewApiToken {
        workspace_id: run.workspace_id,
        user_id: owner.user.id,
        name: format!("run {}", run.id),
        prefix: secret.prefix,
        token_hash: secret.hash,
        run_id: Some(run.id),
    };
    state
        .store
        .create_api_token(&new)
        .await
        .map_err(|e| PrepareError::config(format!("cannot create the run's token: {e}")))?;
    Ok(secret.secret)
}

/// The profile's variables with secrets opened, plus the run's own (`MUSTER_*`).
fn open_env(
    state: &Engine,
    agent: &Agent,
    issue: &Issue,
    run: &Run,
) -> Result<(EnvVars, Vec<String>), PrepareError> {
    let mut env = vec![
        ("MUSTER_ISSUE".to_owned(), issue.key.to_string()),
        ("MUSTER_RUN_ID".to_owned(), run.id.to_string()),
    ];
    if let Some(url) = state.api_url() {
        env.push(("MUSTER_URL".to_owned(), url));
    }
    let mut secrets = Vec::new();
    for var in &agent.profile.env {
        if let Some(why) = crate::domain::reserved_env(&var.key) {
            // Refused when the agent is saved; one stored before that rule is skipped here.
            tracing::warn!(key = %var.key, why, "agent env variable ignored");
            continue;
        }
        let value = if var.secret {
            state.secrets.open(&var.value).map_err(|e| {
                PrepareError::config(format!("cannot open the secret {}: {e:#}", var.key))
            })?
        } else {
            var.value.clone()
        };
        // A key saved as a plain variable is still a key: the run's log never shows it.
        let hidden = var.secret || muster_agents::API_KEY_VARS.contains(&var.key.as_str());
        if hidden && !value.is_empty() {
            secrets.push(value.clone());
        }
        env.push((var.key.clone(), value));
    }
    Ok((env, secrets))
}

/// The binary, its leading arguments and the adapter. A custom agent's command runs through `sh -c`
/// (the profile's extra arguments become `$1…`), its output read as Claude-style stream-json.
async fn program(
    state: &Engine,
    agent: &Agent,
    kind: RuntimeKind,
) -> Result<(PathBuf, Vec<String>, Box<dyn Adapter>), PrepareError> {
    let p = &agent.profile;
    if p.kind == AgentKind::Custom {
        let command = p
            .command
            .clone()
            .filter(|c| !c.trim().is_empty())
            .ok_or_else(|| PrepareError::config("a custom agent needs a command"))?;
        let mut args = vec!["-c".to_owned(), command, "muster-agent".to_owned()];
        args.extend(p.extra_args.iter().cloned());
        let adapter = Box::new(CustomAdapter::new(CustomFormat::StreamJson));
        return Ok((PathBuf::from("sh"), args, adapter));
    }
    if p.kind == AgentKind::Llama {
        // Muster runs the local-model agent loop itself, as `muster llama-loop` in a child process, so
        // every guard (stall, budget, signals to the group) applies as for any CLI.
        return Ok((
            state.config.self_exe.clone(),
            p.extra_args.clone(),
            muster_agents::adapter_for(kind),
        ));
    }
    let configured = state
        .config
        .runtime_paths
        .iter()
        .find(|(k, _)| *k == kind)
        .map(|(_, p)| p.clone());
    let binary = match configured {
        Some(path) => path,
        None => detected_path(state, kind)
            .await
            .unwrap_or_else(|| PathBuf::from(kind.as_str())),
    };
    Ok((
        binary,
        p.extra_args.clone(),
        muster_agents::adapter_for(kind),
    ))
}

async fn detected_path(state: &Engine, kind: RuntimeKind) -> Option<PathBuf> {
    let (_, found) = state.runtimes.get().await;
    found.into_iter().find(|d| d.kind == kind)?.path
}

/// Whether this process runs as root (its children then do too).
fn running_as_root() -> bool {
    std::fs::metadata(Path::new("/proc/self")).is_ok_and(|m| m.uid() == 0)
}
