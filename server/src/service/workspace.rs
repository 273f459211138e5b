//! Workspace settings: the git repository runs get worktrees of (a folder on the server or a git URL),
//! and the loop guard's limits on runs that comments set off (see `engine::triggers`).

use serde::Deserialize;

use super::{Caller, Error, Result};
use crate::domain::Workspace;
use crate::engine::Engine;

/// Settings as typed or sent. `repo_path`: an absolute path to a git repository with at least one
/// commit, or a git URL without credentials that runners clone; empty or `null` clears it (runs then
/// get a plain work folder).
///
/// `mention_depth_limit` (1–20) and `agent_runs_per_issue_per_hour` (1–1000) are changed when given;
/// the repository is changed when `repo_path` is given or when nothing else is (so `{}` and
/// `{"repo_path": null}` still clear it).
#[derive(Debug, Clone, Default, Deserialize, utoipa::ToSchema)]
pub struct WorkspaceInput {
    pub repo_path: Option<String>,
    /// Loop guard: how deep a chain of agents mentioning agents may go.
    #[schema(value_type = Option<i64>, minimum = 1, maximum = 20, example = 3)]
    pub mention_depth_limit: Option<NumberInput>,
    /// Loop guard: how many runs agents' comments may start on one issue in an hour.
    #[schema(value_type = Option<i64>, minimum = 1, maximum = 1000, example = 10)]
    pub agent_runs_per_issue_per_hour: Option<NumberInput>,
    /// The check command ensembles run in each candidate's worktree unless they name their own; `""`
    /// clears it.
    #[schema(example = "cargo test")]
    pub check_command: Option<String>,
    /// Seconds before that check is stopped (1–3600, default 600).
    #[serde(default, deserialize_with = "crate::domain::serde_util::whole_number")]
    pub check_timeout_secs: Option<u64>,
    /// The default egress allow-list: hosts every agent's runs may reach through the egress proxy
    /// (`github.com`, `*.npmjs.org`, optionally `:port`), unless the agent has no network. Replaces the
    /// list when given; `[]` clears it.
    #[schema(example = json!(["github.com", "*.npmjs.org"]))]
    pub egress_hosts: Option<Vec<String>>,
}

/// A whole number as JSON sends it (`3`) or as a form types it (`"3"`); checked by the service, so a
/// bad one gets the field's own message.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum NumberInput {
    Number(serde_json::Number),
    Text(String),
}

/// The range each limit is checked against.
pub const MENTION_DEPTH_RANGE: std::ops::RangeInclusive<i64> = 1..=20;
/// See [`MENTION_DEPTH_RANGE`].
pub const RUNS_PER_HOUR_RANGE: std::ops::RangeInclusive<i64> = 1..=1000;

fn limit(
    field: &'static str,
    raw: &NumberInput,
    range: &std::ops::RangeInclusive<i64>,
) -> std::result::Result<i32, (&'static str, String)> {
    let (text, parsed) = match raw {
        NumberInput::Number(n) => (n.to_string(), n.as_i64()),
        NumberInput::Text(t) => (format!("{t:?}"), t.trim().parse::<i64>().ok()),
    };
    match parsed {
        Some(n) if range.contains(&n) => Ok(i32::try_from(n).unwrap_or(i32::MAX)),
        _ => Err((
            field,
            format!(
                "must be a whole number from {} to {}, got {text}",
                range.start(),
                range.end()
            ),
        )),
    }
}

/// Applies the settings given in `input` (owners and admins): the limits are all checked before
/// anything changes, then the repository (see [`set_repo`]), then the limits.
pub async fn update(state: &Engine, caller: &Caller, input: &WorkspaceInput) -> Result<Workspace> {
    caller.require_manager()?;
    let depth = input
        .mention_depth_limit
        .as_ref()
        .map(|raw| limit("mention_depth_limit", raw, &MENTION_DEPTH_RANGE))
        .transpose();
    let per_hour = input
        .agent_runs_per_issue_per_hour
        .as_ref()
        .map(|raw| limit("agent_runs_per_issue_per_hour", raw, &RUNS_PER_HOUR_RANGE))
        .transpose();
    let egress = input
        .egress_hosts
        .as_deref()
        .map(|raw| crate::domain::parse_host_list("egress_hosts", raw))
        .transpose();
    let (depth, per_hour, egress) = match (depth, per_hour, egress) {
        (Ok(d), Ok(p), Ok(e)) => (d, p, e),
        (d, p, e) => {
            let hosts = e.err().unwrap_or_default();
            return Err(Error::invalid(
                [d.err(), p.err()]
                    .into_iter()
                    .flatten()
                    .chain(hosts.into_iter().map(|e| (e.field, e.message))),
            ));
        }
    };
    let mut ws = caller.ws.clone();
    if let Some(command) = &input.check_command {
        ws =
            super::ensembles::set_workspace_check(state, caller, command, input.check_timeout_secs)
                .await?;
    }
    if let Some(hosts) = &egress {
        ws = state
            .store
            .set_workspace_egress(caller.ws.id, hosts)
            .await?;
        tracing::info!(workspace = %ws.slug.as_str(), hosts = hosts.len(), "default egress list set");
    }
    let only_check =
        (input.check_command.is_some() || egress.is_some()) && input.repo_path.is_none();
    if input.repo_path.is_some() || (depth.is_none() && per_hour.is_none() && !only_check) {
        ws = set_repo(state, caller, input).await?;
    }
    if depth.is_some() || per_hour.is_some() {
        let depth = depth.unwrap_or(ws.mention_depth_limit);
        let per_hour = per_hour.unwrap_or(ws.agent_runs_per_issue_per_hour);
        ws = state
            .store
            .set_workspace_limits(caller.ws.id, depth, per_hour)
            .await?;
        tracing::info!(workspace = %ws.slug.as_str(), depth, per_hour, "loop guard limits set");
    }
    Ok(ws)
}

/// Sets or clears the workspace's repository (owners and admins). A path must be a git repository
/// with at least one commit and is stored as the repository's top-level folder; a URL is checked for
/// syntax only (see `git::check_repo`).
pub async fn set_repo(
    state: &Engine,
    caller: &Caller,
    input: &WorkspaceInput,
) -> Result<Workspace> {
    caller.require_manager()?;
    let raw = input
        .repo_path
        .as_deref()
        .map(str::trim)
        .unwrap_or_default();
    let repo = if raw.is_empty() {
        None
    } else {
        let repo = crate::runner::executor::git::check_repo(raw)
            .await
            .map_err(|e| Error::invalid([("repo_path", e.to_string())]))?;
        Some(repo)
    };
    let ws = state
        .store
        .set_workspace_repo(caller.ws.id, repo.as_deref())
        .await?;
    tracing::info!(workspace = %ws.slug.as_str(), repo = ?ws.repo_path, "workspace repository set");
    Ok(ws)
}
