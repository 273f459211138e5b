//! Preparing a claimed run: its work directory and HOME under `<data_dir>/runs/<run_id>/`, the brief, the
//! [`RunSpec`] built from the agent profile (secrets opened here and nowhere else), and the launch spec.

use std::os::unix::fs::MetadataExt as _;
use std::path::{Path, PathBuf};

use muster_agents::{Adapter, CustomAdapter, CustomFormat, LaunchSpec, RunSpec, RuntimeKind};

use super::brief;
use crate::app::AppState;
use crate::domain::{Agent, AgentKind, Comment, FailureReason, Issue, Run};

/// A run ready to spawn.
pub(super) struct Prepared {
    pub launch: LaunchSpec,
    pub adapter: Box<dyn Adapter>,
    /// Plain values of the agent's secret variables, redacted from every stored event.
    pub secrets: Vec<String>,
    pub workdir: PathBuf,
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

/// A child's environment variables, in order.
type EnvVars = Vec<(String, String)>;

/// Where a run keeps its files.
pub(super) fn run_dir(state: &AppState, run: &Run) -> PathBuf {
    state.config.data_dir.join("runs").join(run.id.to_string())
}

/// Creates the directories, writes the brief and builds the launch spec.
pub(super) async fn prepare(
    state: &AppState,
    run: &Run,
    issue: &Issue,
    comments: &[Comment],
    agent: &Agent,
) -> Result<Prepared, PrepareError> {
    let dir = run_dir(state, run);
    let (workdir, home) = (dir.join("work"), dir.join("home"));
    for d in [&workdir, &home] {
        tokio::fs::create_dir_all(d)
            .await
            .map_err(|e| PrepareError::config(format!("cannot create {}: {e}", d.display())))?;
    }
    let p = &agent.profile;
    let brief_path = workdir.join(brief::file_name(p.kind));
    tokio::fs::write(&brief_path, brief::render(issue, comments, agent))
        .await
        .map_err(|e| PrepareError::config(format!("cannot write the brief: {e}")))?;
    let (env, secrets) = open_env(state, agent, issue, run)?;
    let kind: RuntimeKind = p
        .kind
        .as_str()
        .parse()
        .map_err(|e| PrepareError::config(format!("{e}")))?;
    let (binary, extra_args, adapter) = program(state, agent, kind).await?;
    let spec = RunSpec {
        binary,
        prompt: brief::prompt(issue, p.kind),
        model: p.model.clone(),
        base_url: p.base_url.clone(),
        api_key: None,
        extra_args,
        permission_mode: p.permission_mode.as_str().parse().unwrap_or_default(),
        env,
        workdir: workdir.clone(),
        home_dir: home,
        resume_session: None,
        running_as_root: running_as_root(),
    };
    let launch = adapter
        .command(&spec)
        .map_err(|e| PrepareError::config(e.to_string()))?;
    Ok(Prepared {
        launch,
        adapter,
        secrets,
        workdir,
    })
}

/// The profile's variables with secrets opened, plus the run's own (`MUSTER_*`).
fn open_env(
    state: &AppState,
    agent: &Agent,
    issue: &Issue,
    run: &Run,
) -> Result<(EnvVars, Vec<String>), PrepareError> {
    let mut env = vec![
        ("MUSTER_ISSUE".to_owned(), issue.key.to_string()),
        ("MUSTER_RUN_ID".to_owned(), run.id.to_string()),
    ];
    if let Some(url) = &state.config.public_url {
        env.push(("MUSTER_URL".to_owned(), url.clone()));
    }
    let mut secrets = Vec::new();
    for var in &agent.profile.env {
        let value = if var.secret {
            let plain = state.secrets.open(&var.value).map_err(|e| {
                PrepareError::config(format!("cannot open the secret {}: {e:#}", var.key))
            })?;
            if !plain.is_empty() {
                secrets.push(plain.clone());
            }
            plain
        } else {
            var.value.clone()
        };
        env.push((var.key.clone(), value));
    }
    Ok((env, secrets))
}

/// The binary, its leading arguments and the adapter. A custom agent's command runs through `sh -c`
/// (the profile's extra arguments become `$1…`), its output read as Claude-style stream-json.
async fn program(
    state: &AppState,
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

async fn detected_path(state: &AppState, kind: RuntimeKind) -> Option<PathBuf> {
    let (_, found) = state.runtimes.get().await;
    found.into_iter().find(|d| d.kind == kind)?.path
}

/// Whether this process runs as root (its children then do too).
fn running_as_root() -> bool {
    std::fs::metadata(Path::new("/proc/self")).is_ok_and(|m| m.uid() == 0)
}
