//! Workspace settings: the local git repository runs get worktrees of.

use serde::Deserialize;

use super::{Caller, Error, Result};
use crate::domain::Workspace;
use crate::engine::Engine;

/// Settings as typed or sent. `repo_path`: an absolute path to a git repository with at least one
/// commit; empty or `null` clears it (runs then get a plain work folder).
#[derive(Debug, Clone, Default, Deserialize, utoipa::ToSchema)]
pub struct WorkspaceInput {
    pub repo_path: Option<String>,
}

/// Sets or clears the workspace's repository (owners and admins). The path must be a git repository
/// with at least one commit; it is stored as the repository's top-level folder.
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
        let top = crate::supervisor::git::check_repo(raw)
            .await
            .map_err(|message| Error::invalid([("repo_path", message)]))?;
        Some(top.display().to_string())
    };
    let ws = state
        .store
        .set_workspace_repo(caller.ws.id, repo.as_deref())
        .await?;
    tracing::info!(workspace = %ws.slug.as_str(), repo = ?ws.repo_path, "workspace repository set");
    Ok(ws)
}
