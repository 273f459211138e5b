//! Usage and spend (issue 15): the usage report behind the page, the API and `muster usage`; the
//! monthly caps (who may set them, whether a run may start, the one 80% warning a month); and the
//! workspace's rate table.
//!
//! Whether a run may start under the caps, and the 80% warning, are the engine's
//! ([`crate::engine::caps`]): they follow from runs, not from a request.

use chrono::{DateTime, Utc};
use muster_agents::RateTable;

use super::{Caller, Error, Problems, Result};
use crate::domain::usage::{self, month_start};
use crate::domain::{AgentId, Cap, Caps, GroupBy, Usage, UsageFilter, UsageReport, WorkspaceId};
use crate::engine::Engine;

/// A usage query as the API and the page take it (raw, validated here).
#[derive(Debug, Clone, Default, serde::Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct UsageQuery {
    /// The period: `today`, a number of days or hours (`7d`, `30d`, `12h`) or a start date
    /// (`2026-11-01`); 7 days when absent or blank.
    #[param(
        pattern = r"^\s*(today|[0-9]+[dh]|[0-9]{4}-[0-9]{2}-[0-9]{2})?\s*$",
        example = "7d"
    )]
    pub since: Option<String>,
    /// The end of a custom period, a date (`2026-11-30`, included); now when absent or blank.
    #[param(
        pattern = r"^\s*([0-9]{4}-[0-9]{2}-[0-9]{2})?\s*$",
        example = "2026-11-30"
    )]
    pub until: Option<String>,
    /// What to group by: `agent` (the default), `model`, `runtime` or `issue`.
    #[param(pattern = r"^\s*(agent|model|runtime|issue)?\s*$", example = "agent")]
    pub by: Option<String>,
    /// Only this agent's runs (its name).
    pub agent: Option<String>,
}

/// The default period.
pub const DEFAULT_SINCE: &str = "7d";

/// The usage of the caller's workspace over the asked period, grouped as asked.
pub async fn report(
    state: &Engine,
    caller: &Caller,
    query: &UsageQuery,
    now: DateTime<Utc>,
) -> Result<UsageReport> {
    if let Some(scope) = &caller.run {
        return Err(scope.refusal());
    }
    let mut problems = Problems::default();
    let since = match query.since.as_deref().map(str::trim) {
        None | Some("") => DEFAULT_SINCE,
        Some(raw) => raw,
    };
    let from = problems.take(usage::parse_since(since, now));
    let to = match query.until.as_deref().map(str::trim) {
        None | Some("") => Some(now),
        Some(raw) => match chrono::NaiveDate::parse_from_str(raw, "%Y-%m-%d") {
            Ok(day) => day
                .succ_opt()
                .and_then(|d| d.and_hms_opt(0, 0, 0))
                .map(|t| t.and_utc()),
            Err(_) => {
                problems.add("until", format!("{raw:?} is not a date (2026-11-30)"));
                None
            }
        },
    };
    let by = match query.by.as_deref().map(str::trim) {
        None | Some("") => Some(GroupBy::Agent),
        Some(raw) => problems.take(
            raw.parse::<GroupBy>()
                .map_err(|e| crate::domain::ValidationError::new("by", e.to_string())),
        ),
    };
    if let (Some(from), Some(to)) = (from, to)
        && to <= from
    {
        problems.add("until", "must be after the start of the period");
    }
    problems.finish()?;
    let (Some(from), Some(to), Some(by)) = (from, to, by) else {
        return Err(Error::invalid([("since", "is not a period".to_owned())]));
    };
    let agent = match query.agent.as_deref().map(str::trim) {
        None | Some("") => None,
        Some(name) => Some(
            super::agents::by_name(state, caller, name)
                .await
                .map_err(|_| Error::Unknown {
                    field: "agent",
                    message: format!("{name:?} is not an agent of this workspace"),
                })?
                .id,
        ),
    };
    let filter = UsageFilter {
        from,
        to,
        agent,
        issue: None,
        project: None,
        parent: None,
    };
    let runs = state.store.usage_runs(caller.ws.id, &filter).await?;
    Ok(usage::report(&runs, from, to, by))
}

/// A cap as entered: amounts as text, blank for no bound.
#[derive(Debug, Clone, Default, serde::Deserialize)]
pub struct CapInput {
    /// USD per month; blank or absent: no bound.
    pub usd: Option<String>,
    /// Tokens per month (cache included); blank or absent: no bound.
    pub tokens: Option<String>,
}

impl CapInput {
    /// The cap, or what is wrong with each field.
    pub fn parse(&self) -> Result<Cap> {
        let mut problems = Problems::default();
        let usd = match self.usd.as_deref().map(str::trim) {
            None | Some("") => None,
            Some(raw) => match raw.trim_start_matches('$').parse::<f64>() {
                Ok(v) if v.is_finite() && v >= 0.0 => Some(v),
                _ => {
                    problems.add(
                        "usd",
                        format!("{raw:?} is not an amount in USD (such as 25 or 12.50)"),
                    );
                    None
                }
            },
        };
        let tokens = match self.tokens.as_deref().map(str::trim) {
            None | Some("") => None,
            Some(raw) => match raw.replace(['_', ','], "").parse::<i64>() {
                Ok(v) if v >= 0 => Some(v),
                _ => {
                    problems.add("tokens", format!("{raw:?} is not a whole number of tokens"));
                    None
                }
            },
        };
        problems.finish()?;
        Ok(Cap { usd, tokens })
    }
}

/// The workspace's caps (anyone in it may read them).
pub async fn caps(state: &Engine, caller: &Caller) -> Result<Caps> {
    Ok(state.store.caps(caller.ws.id).await?)
}

/// Sets the workspace's monthly cap (owners and admins).
pub async fn set_workspace_cap(state: &Engine, caller: &Caller, input: &CapInput) -> Result<Cap> {
    caller.require_manager()?;
    let cap = input.parse()?;
    state.store.set_workspace_cap(caller.ws.id, cap).await?;
    Ok(cap)
}

/// Sets an agent's monthly cap (owners and admins).
pub async fn set_agent_cap(
    state: &Engine,
    caller: &Caller,
    agent: &str,
    input: &CapInput,
) -> Result<Cap> {
    caller.require_manager()?;
    let cap = input.parse()?;
    let agent = super::agents::by_name(state, caller, agent).await?;
    state
        .store
        .set_agent_cap(caller.ws.id, agent.id, cap)
        .await?;
    Ok(cap)
}

/// What an agent spent this UTC month and its cap, for its page.
pub async fn agent_month(
    state: &Engine,
    ws: WorkspaceId,
    agent: AgentId,
    now: DateTime<Utc>,
) -> Result<(Usage, Cap)> {
    let caps = state.store.caps(ws).await?;
    let spent = state
        .store
        .spend_since(ws, Some(agent), month_start(now))
        .await?;
    Ok((spent, caps.agents.get(&agent).copied().unwrap_or_default()))
}

/// The rate table runs of the workspace are priced with, and whether it is the workspace's own.
pub async fn rate_table(state: &Engine, ws: WorkspaceId) -> Result<(RateTable, bool)> {
    Ok(match state.store.rate_table(ws).await? {
        Some(own) => (own, true),
        None => (RateTable::default(), false),
    })
}

/// Replaces the workspace's rate table with `json` (owners and admins); blank goes back to the
/// built-in table. Every price must be an amount from 0 to the maximum.
pub async fn set_rate_table(
    state: &Engine,
    caller: &Caller,
    json: &str,
) -> Result<(RateTable, bool)> {
    caller.require_manager()?;
    if json.trim().is_empty() {
        state.store.set_rate_table(caller.ws.id, None).await?;
        return Ok((RateTable::default(), false));
    }
    let table =
        RateTable::from_json(json).map_err(|e| Error::invalid([("rates", e.to_string())]))?;
    if let Some((model, _)) = table.iter().find(|(_, r)| !r.is_valid()) {
        return Err(Error::invalid([(
            "rates",
            format!(
                "{model:?}: prices must be amounts in USD per million tokens, from 0 to {}",
                muster_agents::pricing::MAX_PRICE_PER_MILLION
            ),
        )]));
    }
    state
        .store
        .set_rate_table(caller.ws.id, Some(&table))
        .await?;
    Ok((table, true))
}
