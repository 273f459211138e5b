//! Preparing a run from its order: its work directory (a git worktree when the workspace has a
//! repository), HOME and TMPDIR under `<runs_dir>/<run_id>/` (outside the data folder), the brief and the
//! skills, the run's environment (`MUSTER_URL`, `MUSTER_TOKEN`, `MUSTER_ISSUE` let the agent use `muster
//! issue …` on its issue), the [`RunSpec`] built from the agent profile, and the launch spec, which
//! starts the agent through the sandbox's exec step (`crate::sandbox`) unless the operator allowed
//! unsandboxed agents on a kernel that cannot sandbox them.

use std::net::SocketAddr;
use std::os::unix::fs::MetadataExt as _;
use std::path::{Path, PathBuf};

use muster_agents::{
    Adapter, CustomAdapter, CustomFormat, LaunchSpec, PermissionMode, RunSpec, RuntimeKind,
};

use super::Error;
use super::brief;
use super::git::{self, Worktree};
use super::run::Host;
use crate::config::Config;
use crate::domain::RunId;
use crate::runner::protocol::{AgentSpec, Order};

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
    /// The `sandbox` event (the mode, and the rules and ports when sandboxed).
    pub sandbox: crate::domain::SandboxNote,
    /// The `session` event for a run that continues another: resumed or fresh, and why.
    pub continuity: Option<crate::domain::SessionNote>,
    /// Where the CLI logs each model request's usage, when its stdout does not (Codex).
    pub usage_log: Option<super::usage_log::UsageLog>,
    /// What an ensemble candidate's check runs inside: the agent's sandbox policy and the run's folders.
    pub confinement: super::check::Confinement,
    /// The run's egress proxy (sandboxed runs): its records become `egress` events; dropping it closes
    /// the listener and the run's connections.
    pub egress: Option<crate::egress::RunProxy>,
    /// Where the agent's model server should accept connections (its base URL, for the known CLIs and
    /// the local loop): checked again when the CLI reports an error while it runs.
    pub model_probe: Option<String>,
}

/// Where a run keeps its files.
pub(super) fn run_dir(config: &Config, run: RunId) -> PathBuf {
    config.runs_dir.join(run.to_string())
}

/// The values the run's redactor hides: the agent's secret variables, its base URL's credentials, the
/// run's token and the forge's token (the agent never holds it, but a git error could echo it).
pub(super) fn order_secrets(order: &Order) -> Vec<String> {
    let mut secrets: Vec<String> = order
        .agent
        .env
        .iter()
        .filter(|v| v.secret && !v.value.is_empty())
        .map(|v| v.value.clone())
        .collect();
    secrets.push(order.token.clone());
    secrets.extend(order.forge.as_ref().map(|f| f.token.clone()));
    secrets.extend(crate::redact::url_credentials(
        order.agent.base_url.as_deref(),
    ));
    // A base URL set through the CLI's own variable is a base URL too (its credentials are hidden).
    let env: Vec<(String, String)> = order
        .agent
        .env
        .iter()
        .map(|v| (v.key.clone(), v.value.clone()))
        .collect();
    for (_, url) in order.agent.kind.base_urls_in(&env) {
        secrets.extend(crate::redact::url_credentials(Some(url)));
    }
    secrets
}

/// How long the runner waits for an agent's model server to accept a connection (before the run starts,
/// and when its CLI reports an error while it runs).
pub(super) const PROBE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(5);

/// The URL the runner checks for an agent's model server at `url`: a name the egress proxy resolves itself
/// (`--egress-resolve`) is checked at the address it stands for.
fn probe_url(url: &str, overrides: &[(String, SocketAddr)]) -> String {
    let overridden = reqwest::Url::parse(url).ok().and_then(|u| {
        let host = u.host_str()?.trim_end_matches('.').to_owned();
        overrides
            .iter()
            .find(|(name, _)| name.trim_end_matches('.') == host)
            .map(|(_, addr)| format!("http://{addr}"))
    });
    overridden.unwrap_or_else(|| url.to_owned())
}

/// Checks, before the agent starts, that something accepts connections at its model server (`probe`, from
/// [`probe_url`]): a wrong base URL fails the run in seconds, naming the address, instead of after the
/// CLI's own minutes of retries (Claude Code: 10) and Muster's retries of a "network" failure. Only a
/// connection is tried: no request, no key sent, no tokens spent.
async fn preflight(probe: &str) -> Result<(), Error> {
    muster_llama::probe::accepts_connections(probe, PROBE_TIMEOUT)
        .await
        .map_err(Error::Unreachable)
}

/// Creates the work directory (a git worktree when the workspace has a repository), writes the brief
/// and the skills, and builds the launch spec. A worktree made here is discarded again if a later step
/// fails.
pub(super) async fn prepare(host: &Host, order: &Order) -> Result<Prepared, Error> {
    let dir = run_dir(&host.config, order.run_id);
    for sub in ["home", "tmp"] {
        create_dir(dir.join(sub)).await?;
    }
    let started = work_dir(host, order, &dir).await?;
    let (worktree, from_branch) = match started {
        Some(Started {
            tree,
            from_previous,
        }) => (Some(tree), from_previous),
        None => (None, None),
    };
    match finish_prepare(host, order, worktree.clone(), from_branch).await {
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
    host: &Host,
    order: &Order,
    worktree: Option<Worktree>,
    from_branch: Option<String>,
) -> Result<Prepared, Error> {
    let dir = run_dir(&host.config, order.run_id);
    let (workdir, home) = (dir.join("work"), dir.join("home"));
    let p = &order.agent;
    let kind = p.kind;
    // Before the skills are written: a custom command's whole earlier HOME is copied.
    let (resume_session, continuity) =
        continue_session(host, order, kind, &home, &workdir, from_branch).await;
    // The repository's own context file, if any, is kept and the brief added after it.
    let tracked = worktree.as_ref().is_some_and(|t| t.brief_tracked);
    let brief_path = brief::write(&workdir, p.kind, order.brief.clone(), tracked).await?;
    let skills =
        crate::skills::materialize(p.kind, &order.skills, &workdir, &home, &brief_path).await?;
    let mut env = vec![
        ("MUSTER_ISSUE".to_owned(), order.issue_key.clone()),
        ("MUSTER_RUN_ID".to_owned(), order.run_id.to_string()),
    ];
    let api_url = order.api_url.clone().or_else(|| host.api_url.clone());
    if let Some(url) = api_url.clone() {
        env.push(("MUSTER_URL".to_owned(), url));
    }
    env.extend(p.env.iter().map(|v| (v.key.clone(), v.value.clone())));
    env.push(("MUSTER_TOKEN".to_owned(), order.token.clone()));
    let secrets = order_secrets(order);
    if worktree.is_some() {
        env.extend(git::agent_env(&dir));
        let identity = git::agent_identity(&p.name);
        env.splice(0..0, identity);
    }
    let (binary, extra_args, adapter) = program(host, p, kind).await?;
    let mode = crate::sandbox::mode(&host.config);
    if let crate::sandbox::Mode::Refused { reason } = &mode {
        return Err(Error::SandboxRefused {
            reason: reason.clone(),
        });
    }
    let sandboxed = matches!(mode, crate::sandbox::Mode::Sandboxed { .. });
    let permission_mode: PermissionMode = p.permission_mode.as_str().parse().unwrap_or_default();
    // The Base URL field, else the CLI's own base-URL variable in the agent's env, else (llama) the
    // first configured local server (the child's environment is cleared, so it would never see
    // MUSTER_LLAMA_URL itself).
    let base_url = p
        .base_url
        .clone()
        .or_else(|| {
            kind.base_urls_in(&env)
                .first()
                .map(|(_, u)| (*u).to_owned())
        })
        .or_else(|| {
            p.kind
                .is_local_model()
                .then(|| host.config.llama_urls.first().map(|(_, url)| url.clone()))
                .flatten()
        });
    // A custom command decides itself what its base URL means; the known CLIs and the local loop call it.
    let model_probe = base_url
        .as_deref()
        .filter(|_| !kind.is_custom())
        .map(|url| probe_url(url, &host.config.egress_resolve));
    if let Some(probe) = &model_probe {
        preflight(probe).await?;
    }
    let model_urls = super::egress::model_urls(kind, base_url.as_deref(), &env);
    let api_urls: Vec<String> = api_url.into_iter().chain(host.api_url.clone()).collect();
    let mut egress =
        super::egress::open(&host.config, p, &[model_urls, api_urls].concat(), sandboxed).await?;
    env.extend(egress.env());
    let spec = RunSpec {
        binary,
        prompt: match (&resume_session, &order.resume) {
            (Some(_), Some(resume)) => resume.prompt.clone(),
            _ => order.prompt.clone(),
        },
        model: p.model.clone(),
        base_url,
        // The agent's own key variable (ANTHROPIC_API_KEY, OPENAI_API_KEY, …) travels in `env`; the
        // adapters point their CLI's provider at it by name (Codex `env_key`, OpenCode `{env:…}`).
        api_key: None,
        extra_args,
        permission_mode: if sandboxed {
            kind.mode_inside_sandbox(permission_mode)
        } else {
            permission_mode
        },
        env,
        workdir: workdir.clone(),
        home_dir: home,
        resume_session,
        running_as_root: running_as_root(),
    };
    let mut secrets = secrets;
    secrets.extend(crate::redact::url_credentials(spec.base_url.as_deref()));
    let usage_log = adapter
        .usage_log_dir(&spec)
        .map(super::usage_log::UsageLog::at);
    let launch = adapter.command(&spec).map_err(Error::Command)?;
    let (launch, mut sandbox, policy) = confine(
        host,
        &mode,
        launch,
        &dir,
        p,
        permission_mode == PermissionMode::ReadOnly,
        &egress.direct_ports,
    )?;
    if sandboxed {
        sandbox.egress = Some(egress.note());
    }
    let confinement = super::check::Confinement {
        policy,
        self_exe: host.config.self_exe.clone(),
        run_dir: dir.clone(),
        issue_key: order.issue_key.clone(),
        run_id: order.run_id.to_string(),
    };
    Ok(Prepared {
        launch,
        adapter,
        secrets,
        workdir,
        worktree,
        skills,
        sandbox,
        continuity,
        usage_log,
        confinement,
        egress: egress.proxy.take(),
        model_probe,
    })
}

/// Points the carried session's state at this run's working directory, where the CLI keeps the
/// earlier one's in a database of its own (see [`muster_agents::Adapter::session_databases`]).
async fn relocate(
    host: &Host,
    kind: RuntimeKind,
    previous: crate::domain::RunId,
    home: &Path,
    workdir: &Path,
) -> Result<(), Error> {
    let old = run_dir(&host.config, previous).join("work");
    for relative in muster_agents::adapter_for(kind).session_databases() {
        let db = home.join(relative);
        if db.is_file() {
            crate::store::foreign::replace_text(
                &db,
                &old.display().to_string(),
                &workdir.display().to_string(),
            )
            .await
            .map_err(Error::Relocate)?;
        }
    }
    Ok(())
}

/// Copies `session`'s files from the previous run's `HOME` into this run's and points them at this
/// run's working directory.
async fn carry(
    host: &Host,
    kind: RuntimeKind,
    previous: crate::domain::RunId,
    session: &str,
    home: &Path,
    workdir: &Path,
) -> Result<(), Error> {
    use muster_agents::session::SessionPlace;
    let old = run_dir(&host.config, previous);
    let (new_home, new_work, id) = (
        home.to_path_buf(),
        workdir.to_path_buf(),
        session.to_owned(),
    );
    tokio::task::spawn_blocking(move || {
        let (old_home, old_work) = (old.join("home"), old.join("work"));
        muster_agents::adapter_for(kind).carry_session(
            &id,
            SessionPlace {
                home: &old_home,
                workdir: &old_work,
            },
            SessionPlace {
                home: &new_home,
                workdir: &new_work,
            },
        )
    })
    .await
    .map_err(Error::CarryTask)??;
    relocate(host, kind, previous, home, workdir).await
}

/// Carries the previous run's session into this run when the order continues one and its files are
/// on this runner: the session to resume, and the `session` event's payload saying what happened
/// (resumed, or a fresh session whose brief carries the thread, and why).
async fn continue_session(
    host: &Host,
    order: &Order,
    kind: RuntimeKind,
    home: &Path,
    workdir: &Path,
    from_branch: Option<String>,
) -> (Option<String>, Option<crate::domain::SessionNote>) {
    let Some(resume) = &order.resume else {
        return (None, None);
    };
    let carried = match resume.session_id.clone() {
        None => Err(resume
            .fresh_because
            .clone()
            .unwrap_or_else(|| "the previous run reported no session".to_owned())),
        Some(session) => carry(host, kind, resume.previous_run_id, &session, home, workdir)
            .await
            .map(|()| session)
            .map_err(|e| e.to_string()),
    };
    let branch_missing = resume
        .branch
        .as_ref()
        .filter(|_| from_branch.is_none() && order.repo.is_some());
    let note = crate::domain::SessionNote {
        previous_run_id: resume.previous_run_id.to_string(),
        resumed: carried.is_ok(),
        from_branch,
        session_id: carried.as_ref().ok().cloned(),
        reason: carried.as_ref().err().cloned(),
        branch_missing: branch_missing.cloned(),
    };
    (carried.ok(), Some(note))
}

/// Puts the launch inside the sandbox (when the mode says so) and returns it with the `sandbox` event's
/// payload and the policy (an ensemble candidate's check runs inside it too). A program that cannot be found is a missing CLI, reported before the exec step would.
fn confine(
    host: &Host,
    mode: &crate::sandbox::Mode,
    launch: LaunchSpec,
    dir: &Path,
    agent: &AgentSpec,
    read_only: bool,
    direct_ports: &[u16],
) -> Result<
    (
        LaunchSpec,
        crate::domain::SandboxNote,
        Option<crate::sandbox::Policy>,
    ),
    Error,
> {
    use crate::sandbox::{self, Mode};
    let Mode::Sandboxed { abi } = mode else {
        return Ok((launch, sandbox::event_note(mode, None), None));
    };
    let search_path = muster_agents::process::inherited_path();
    let cwd = launch.cwd.clone();
    if which::which_in(&launch.program, search_path.as_ref(), &cwd).is_err() {
        return Err(Error::MissingCli {
            program: launch.program,
        });
    }
    // Direct connections: the run's egress proxy, Muster's API and model servers on this machine's
    // loopback, and what the operator added; everything else goes through the proxy.
    let mut ports = host.config.agent_ports.clone();
    ports.extend_from_slice(direct_ports);
    let (home, tmp) = (dir.join("home"), dir.join("tmp"));
    let runs_dir = &host.config.runs_dir;
    let protected = [host.config.data_dir.as_path(), runs_dir.as_path()];
    let custom = (agent.kind.is_custom())
        .then_some(agent.command.as_deref())
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
        extra_rw: &host.config.agent_rw_paths,
        extra_read: &[git::exclude_file(dir)],
        muster: &host.config.self_exe,
        process_view: sandbox::process_view(&host.config.self_exe),
    };
    let policy = sandbox::policy::for_run(&facts)?;
    let payload = sandbox::event_note(mode, Some(&policy));
    let launch = sandbox::wrap(launch, &policy, &host.config.self_exe, &home, &tmp)?;
    Ok((launch, payload, Some(policy)))
}

/// The run's `work` directory: a worktree of the run's private repository on its line's branch, or a
/// plain folder when the workspace has no repository. The run starts at the line's tip when the line
/// exists (for a git URL: the remote's branch as last fetched, else the mirror's), else at the branch of
/// the run it continues (a line named before lines were), else at the ensemble's base commit or the
/// repository's HEAD.
async fn work_dir(host: &Host, order: &Order, dir: &Path) -> Result<Option<Started>, Error> {
    let Some(repo) = order.repo.as_deref() else {
        create_dir(dir.join("work")).await?;
        return Ok(None);
    };
    let brief = order.agent.kind.brief_file();
    let source = git::RepoSource::parse(repo).map_err(Error::RepoSetting)?;
    let names = git::Names {
        branch: &order.branch,
        brief,
    };
    // The runner's heartbeat renews the claim's lease meanwhile (a first clone may outlast it).
    let (repo, url) = match source {
        git::RepoSource::Path(path) => (path, None),
        git::RepoSource::Url(url) => {
            // A private forge project is read with the connection's token, outside the sandbox.
            let auth = order
                .forge
                .as_ref()
                .map(|f| crate::forge::git_auth_header(f.kind, &f.token));
            let mirror = git::mirror_with_auth(&host.repo_cache, &url, auth.as_deref()).await?;
            (mirror, Some(url))
        }
    };
    let mirror = url.is_some();
    let line = git::branch_tip(&repo, mirror, &order.branch).await;
    let previous = order.resume.as_ref().and_then(|r| r.branch.as_deref());
    let (start, from) = match (order.base.as_deref(), line, previous) {
        // An ensemble's candidate starts at the commit every candidate starts at.
        (Some(base), _, _) => (
            Some(
                git::commit(&repo, base)
                    .await
                    .map_err(|source| Error::MissingBase {
                        base: base.to_owned(),
                        source,
                    })?,
            ),
            None,
        ),
        (None, Some(tip), _) => (Some(tip), Some(order.branch.clone())),
        (None, None, Some(previous)) => match git::branch_tip(&repo, mirror, previous).await {
            Some(tip) => (Some(tip), Some(previous.to_owned())),
            None => (None, None),
        },
        (None, None, None) => (None, None),
    };
    let tree = git::create(&repo, url.as_deref(), dir, &names, start, order.blind)
        .await
        .map_err(Error::Worktree)?;
    Ok(Some(Started {
        tree,
        from_previous: from,
    }))
}

/// Creates `path` and the folders above it.
async fn create_dir(path: PathBuf) -> Result<(), Error> {
    match tokio::fs::create_dir_all(&path).await {
        Ok(()) => Ok(()),
        Err(source) => Err(Error::CreateDir { path, source }),
    }
}

/// A new worktree, and the previous run's branch when it starts from there (else from HEAD).
struct Started {
    tree: Worktree,
    from_previous: Option<String>,
}

/// The binary, its leading arguments and the adapter. A custom agent's command runs through `sh -c`
/// (the profile's extra arguments become `$1…`), its output read as Claude-style stream-json.
async fn program(
    host: &Host,
    p: &AgentSpec,
    kind: RuntimeKind,
) -> Result<(PathBuf, Vec<String>, Box<dyn Adapter>), Error> {
    if p.kind.is_custom() {
        let command = p
            .command
            .clone()
            .filter(|c| !c.trim().is_empty())
            .ok_or(Error::NoCommand)?;
        let mut args = vec!["-c".to_owned(), command, "muster-agent".to_owned()];
        args.extend(p.extra_args.iter().cloned());
        let adapter = Box::new(CustomAdapter::new(CustomFormat::StreamJson));
        return Ok((PathBuf::from("sh"), args, adapter));
    }
    if p.kind.is_local_model() {
        // Muster runs the local-model agent loop itself, as `muster llama-loop` in a child process, so
        // every guard (stall, budget, signals to the group) applies as for any CLI.
        return Ok((
            host.config.self_exe.clone(),
            p.extra_args.clone(),
            muster_agents::adapter_for(kind),
        ));
    }
    let configured = host
        .config
        .runtime_paths
        .iter()
        .find(|(k, _)| *k == kind)
        .map(|(_, p)| p.clone());
    let binary = match configured {
        Some(path) => path,
        None => detected_path(host, kind)
            .await
            .unwrap_or_else(|| PathBuf::from(kind.as_str())),
    };
    Ok((
        binary,
        p.extra_args.clone(),
        muster_agents::adapter_for(kind),
    ))
}

async fn detected_path(host: &Host, kind: RuntimeKind) -> Option<PathBuf> {
    let (_, found) = host.runtimes.get().await;
    found.into_iter().find(|d| d.kind == kind)?.path
}

/// Whether this process runs as root (its children then do too).
fn running_as_root() -> bool {
    std::fs::metadata(Path::new("/proc/self")).is_ok_and(|m| m.uid() == 0)
}
