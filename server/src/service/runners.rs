//! Runners for people: runner tokens (owners and admins create, list and revoke them; the secret is
//! shown once), the runners a workspace can use with what they reported, and why a queued run waits.
//!
//! Invariants: a runner is online while its last heartbeat is at most [`crate::domain::ONLINE_WITHIN`] old; a revoked
//! runner takes nothing; a remote runner serves only its token's workspace; the decision of who could
//! take a run ([`can_take`]) is the same one the claim scope makes, said in words by [`waiting_reason`].

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use super::{Caller, Error, Result};
use crate::domain::{
    Agent, NewRunnerToken, Run, Runner, RunnerToken, RunnerTokenId, RuntimeKind, WorkspaceId,
};
use crate::engine::Engine;

/// A runner token just created: the secret is in here and nowhere else.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct CreatedRunnerToken {
    pub id: uuid::Uuid,
    pub name: String,
    /// Shown once: give it to `muster runner` as MUSTER_RUNNER_TOKEN (or --token-file).
    pub token: String,
}

/// Creates a runner token named `name` (1–64 characters) in the caller's workspace: owners and admins.
pub async fn create_token(
    state: &Engine,
    caller: &Caller,
    name: &str,
) -> Result<CreatedRunnerToken> {
    caller.require_manager()?;
    let name = name.trim();
    let len = name.chars().count();
    if len == 0 || len > 64 {
        return Err(Error::invalid([(
            "name",
            format!("must be 1 to 64 characters (got {len})"),
        )]));
    }
    let secret = crate::auth::new_secret(crate::auth::RUNNER_TOKEN_KIND);
    let new = NewRunnerToken {
        workspace_id: caller.ws.id,
        name: name.to_owned(),
        prefix: secret.prefix,
        token_hash: secret.hash,
        created_by: caller.user.id,
    };
    let token = state.store.create_runner_token(&new).await?;
    Ok(CreatedRunnerToken {
        id: token.id.0,
        name: token.name,
        token: secret.secret,
    })
}

/// The workspace's runner tokens, newest first, revoked ones included: owners and admins.
pub async fn list_tokens(state: &Engine, caller: &Caller) -> Result<Vec<RunnerToken>> {
    caller.require_manager()?;
    Ok(state.store.list_runner_tokens(caller.ws.id).await?)
}

/// Revokes a runner token of the caller's workspace (404 for another's, or an id that is none), then
/// has the engine disconnect the runners using it.
pub async fn revoke_token(state: &Engine, caller: &Caller, id: &str) -> Result<RunnerToken> {
    caller.require_manager()?;
    let id: RunnerTokenId = id.parse().map_err(|_| Error::NotFound)?;
    let token = state
        .store
        .revoke_runner_token(caller.ws.id, id, Utc::now())
        .await?;
    state.runner_token_revoked(token.id);
    Ok(token)
}

/// What a runner reported at hello, as the session stores it in `runner.detected`. Read leniently: a
/// shape this server does not know (an older runner's, an embedded runner's `[]`) is "nothing reported".
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize, utoipa::ToSchema)]
#[serde(default)]
pub struct Reported {
    /// The agent CLIs it found.
    pub runtimes: Vec<ReportedRuntime>,
    /// The local model servers it can reach.
    pub local_models: Vec<ReportedModels>,
    /// How many runs it takes at once.
    pub max_runs: Option<u32>,
}

/// One detected CLI.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize, utoipa::ToSchema)]
#[serde(default)]
pub struct ReportedRuntime {
    /// claude, codex, opencode, llama or custom.
    pub kind: String,
    pub version: Option<String>,
    pub path: Option<String>,
}

/// One local model server and the models it serves.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize, utoipa::ToSchema)]
#[serde(default)]
pub struct ReportedModels {
    pub url: String,
    pub models: Vec<String>,
}

impl Reported {
    /// Reads a runner's `detected` JSON.
    pub fn from_json(v: &serde_json::Value) -> Self {
        serde_json::from_value(v.clone()).unwrap_or_default()
    }
}

/// A runner as people see it.
#[derive(Debug, Clone)]
pub struct RunnerStatus {
    pub runner: Runner,
    pub reported: Reported,
    /// Its last heartbeat is at most [`crate::domain::ONLINE_WITHIN`] old.
    pub online: bool,
    /// The runs it holds (claimed or running), oldest first.
    pub live_runs: Vec<Run>,
}

impl RunnerStatus {
    /// Whether this is a server's own runner (it serves every workspace and every kind).
    pub fn embedded(&self) -> bool {
        self.runner.token_id.is_none()
    }
}

/// The runners the caller's workspace can use (its remote ones and every embedded one), with their
/// live runs: any member may see them.
pub async fn list(state: &Engine, caller: &Caller) -> Result<Vec<RunnerStatus>> {
    let now = Utc::now();
    let runners = state.store.list_runners(caller.ws.id).await?;
    let mut out = Vec::with_capacity(runners.len());
    for runner in runners {
        // An embedded runner serves every workspace: show only the caller's runs on it.
        let live_runs = state
            .store
            .list_live_runs_of_runner(runner.id)
            .await?
            .into_iter()
            .filter(|r| r.workspace_id == caller.ws.id)
            .collect();
        out.push(RunnerStatus {
            reported: Reported::from_json(&runner.detected),
            online: runner.online_at(now) && !runner.revoked,
            runner,
            live_runs,
        });
    }
    Ok(out)
}

/// A runner reduced to what the waiting decision needs; build with [`Candidate::of`].
#[derive(Debug, Clone, PartialEq)]
pub struct Candidate {
    pub name: String,
    pub online: bool,
    pub revoked: bool,
    /// `None` for an embedded runner: any kind.
    pub kinds: Option<Vec<RuntimeKind>>,
}

impl Candidate {
    /// What `runner` offers at `now`: a remote runner the kinds it detected, `custom` always, and
    /// `llama` when it reported a local model server; an embedded runner any kind.
    pub fn of(runner: &Runner, now: DateTime<Utc>) -> Self {
        let kinds = runner.token_id.is_some().then(|| {
            let reported = Reported::from_json(&runner.detected);
            RuntimeKind::offered_by_runner(
                reported.runtimes.iter().filter_map(|r| r.kind.parse().ok()),
                !reported.local_models.is_empty(),
            )
        });
        Candidate {
            name: runner.name.clone(),
            online: runner.online_at(now),
            revoked: runner.revoked,
            kinds,
        }
    }

    fn has(&self, kind: RuntimeKind) -> bool {
        self.kinds.as_ref().is_none_or(|k| k.contains(&kind))
    }
}

/// Whether `c` could take a run of an agent of `kind` bound to `bound` (empty: any runner). The
/// candidates are already the run's workspace's (see [`list`]).
pub fn can_take(c: &Candidate, kind: RuntimeKind, bound: &[String]) -> bool {
    c.online && !c.revoked && c.has(kind) && (bound.is_empty() || bound.contains(&c.name))
}

/// Why a queued run of an agent of `kind` bound to `bound` waits, given the workspace's runners: `None`
/// when one of them could take it now.
pub fn waiting_reason(
    candidates: &[Candidate],
    kind: RuntimeKind,
    bound: &[String],
) -> Option<String> {
    if candidates.iter().any(|c| can_take(c, kind, bound)) {
        return None;
    }
    if bound.is_empty() {
        let online = candidates.iter().any(|c| c.online && !c.revoked);
        return Some(if online {
            format!("waiting for a runner with {}", kind.runner_needs())
        } else {
            "waiting for a runner: none is online".to_owned()
        });
    }
    let why: Vec<String> = bound
        .iter()
        .map(|name| {
            let state = match candidates.iter().find(|c| &c.name == name) {
                None => "never connected".to_owned(),
                Some(c) if c.revoked => "its token is revoked".to_owned(),
                Some(c) if !c.online => "offline".to_owned(),
                Some(_) => format!("it has no {}", kind.runner_needs()),
            };
            (name, state)
        })
        .map(|(name, state)| {
            if bound.len() == 1 {
                state
            } else {
                format!("{name}: {state}")
            }
        })
        .collect();
    Some(match bound {
        [one] => format!("waiting for runner {one} ({})", why[0]),
        _ => format!(
            "waiting for one of the runners {} ({})",
            bound.join(", "),
            why.join("; ")
        ),
    })
}

/// The waiting sentence for `run` of `agent` against the workspace's runners, computed once by the
/// caller ([`candidates`]) so a board of many queued cards reads the runners once. `None` unless the run
/// is queued and no runner could take it.
pub fn run_waiting_reason(candidates: &[Candidate], run: &Run, agent: &Agent) -> Option<String> {
    if run.status != crate::domain::RunStatus::Queued {
        return None;
    }
    waiting_reason(candidates, agent.profile.kind, &agent.profile.runners)
}

/// The runners of workspace `ws` as waiting candidates: one store read, whatever the number of runs.
pub async fn candidates(state: &Engine, ws: WorkspaceId) -> Result<Vec<Candidate>> {
    let now = Utc::now();
    let runners = state.store.list_runners(ws).await?;
    Ok(runners.iter().map(|r| Candidate::of(r, now)).collect())
}

/// Why `run` waits (see [`waiting_reason`]), reading its agent and the workspace's runners: for one run
/// (its page); a board reads [`candidates`] once and calls [`run_waiting_reason`] per card.
pub async fn run_waiting(state: &Engine, run: &Run) -> Result<Option<String>> {
    if run.status != crate::domain::RunStatus::Queued {
        return Ok(None);
    }
    let agent = state
        .store
        .get_agent(run.workspace_id, run.agent_id)
        .await?;
    let candidates = candidates(state, run.workspace_id).await?;
    Ok(run_waiting_reason(&candidates, run, &agent))
}

#[cfg(test)]
mod tests;
