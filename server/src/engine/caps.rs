//! The monthly caps as runs meet them: whether a run may start (or go on), and the one warning a month
//! at [`WARN_AT`] of a cap. Setting caps is the service's (`service::usage`).
//!
//! Caps count the UTC calendar month of a run's queueing, over every run of the month including live
//! ones with their usage so far: [`cap_breach`] is the one check, called when a run is queued, when
//! it is claimed, and (by the live-usage path) while it runs.

use chrono::{DateTime, Utc};

use super::Engine;
use crate::domain::usage::{month_key, month_start};
use crate::domain::{AgentId, Cap, InboxKind, NewInboxItem, WorkspaceId};
use crate::store::{self, Store};

/// Why a run of `agent` may not start now, when a monthly cap (the agent's or the workspace's) is
/// reached: its spend this UTC month, live runs' usage so far included, is at or over the cap. `None`
/// when it may. The one check for the refusal at queue and claim time and the stop of a live run.
pub async fn cap_breach(
    store: &dyn Store,
    ws: WorkspaceId,
    agent: AgentId,
    now: DateTime<Utc>,
) -> store::Result<Option<String>> {
    let caps = store.caps(ws).await?;
    let since = month_start(now);
    let month = now.format("%B %Y");
    if let Some(cap) = caps.agents.get(&agent) {
        let spent = store.spend_since(ws, Some(agent), since).await?;
        if cap.used(&spent) >= 1.0 {
            let name = store
                .get_agent(ws, agent)
                .await
                .map(|a| a.profile.name.as_str().to_owned())
                .unwrap_or_else(|_| "the agent".to_owned());
            return Ok(Some(format!(
                "{name} reached its monthly cap for {month} (UTC): {}",
                cap.describe(&spent)
            )));
        }
    }
    if !caps.workspace.is_none() {
        let spent = store.spend_since(ws, None, since).await?;
        if caps.workspace.used(&spent) >= 1.0 {
            return Ok(Some(format!(
                "the workspace reached its monthly cap for {month} (UTC): {}",
                caps.workspace.describe(&spent)
            )));
        }
    }
    Ok(None)
}

/// The share of a cap at which owners and admins are warned, once per cap per month.
pub const WARN_AT: f64 = 0.8;

/// Warns owners and admins (one inbox item per cap per month) when `agent`'s or the workspace's
/// spend this month reached [`WARN_AT`] of its cap. Called whenever a run's usage is recorded.
pub async fn warn_caps(
    state: &Engine,
    ws: WorkspaceId,
    agent: AgentId,
    now: DateTime<Utc>,
) -> store::Result<()> {
    let caps = state.store.caps(ws).await?;
    let since = month_start(now);
    let key = month_key(now);
    let mut checks: Vec<(String, Cap, Option<AgentId>)> = Vec::new();
    if let Some(cap) = caps.agents.get(&agent) {
        checks.push((format!("agent:{agent}"), *cap, Some(agent)));
    }
    if !caps.workspace.is_none() {
        checks.push(("workspace".to_owned(), caps.workspace, None));
    }
    for (scope, cap, of) in checks {
        let spent = state.store.spend_since(ws, of, since).await?;
        let used = cap.used(&spent);
        if used < WARN_AT
            || !state
                .store
                .record_cap_warning(ws, &scope, &key, now)
                .await?
        {
            continue;
        }
        let whose = match of {
            Some(id) => state
                .store
                .get_agent(ws, id)
                .await
                .map(|a| a.profile.name.as_str().to_owned())
                .unwrap_or_else(|_| "An agent".to_owned()),
            None => "The workspace".to_owned(),
        };
        let message = format!(
            "{whose} has used {:.0}% of its monthly cap for {} (UTC): {}. Runs are refused once it is reached.",
            (used * 100.0).floor(),
            now.format("%B %Y"),
            cap.describe(&spent)
        );
        // For those who can raise a cap: owners and admins, each in their own inbox.
        for member in state.store.list_members(ws).await? {
            if !member.role.can_manage() {
                continue;
            }
            let item = NewInboxItem {
                workspace_id: ws,
                user_id: Some(member.user.id),
                kind: InboxKind::CapWarning,
                issue_id: None,
                run_id: None,
                comment_id: None,
                message: message.clone(),
            };
            state.store.create_inbox_item(&item).await?;
        }
    }
    Ok(())
}
