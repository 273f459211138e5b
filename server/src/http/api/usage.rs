//! `/api/v1/usage`, `/api/v1/usage/caps`, `/api/v1/agents/{name}/cap` and `/api/v1/rates`: what runs
//! cost, the monthly caps, and the prices runs are priced with (issue 15).

use std::collections::BTreeMap;

use axum::extract::State;
use axum::routing::{get, put};
use axum::{Json, Router};
use serde::{Deserialize, Serialize};

use super::ErrorBody;
use super::doc::path::AgentNameParam;
use crate::domain::usage::{DayUsage, GroupUsage, Totals};
use crate::domain::{Cap, RuntimeKind, Usage, UsageReport};
use crate::http::Result;
use crate::http::extract::{ApiCaller, AppJson, AppPath, AppQuery};
use crate::service::usage::{self as svc, CapInput, UsageQuery};
use crate::state::AppState;

pub(super) fn router() -> Router<AppState> {
    Router::new()
        .route("/api/v1/usage", get(report))
        .route("/api/v1/usage/caps", get(caps).put(set_workspace_cap))
        .route("/api/v1/agents/{name}/cap", put(set_agent_cap))
        .route("/api/v1/rates", get(rates).put(set_rates))
}

/// Sums of a set of runs.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct TotalsView {
    pub runs: i64,
    pub input_tokens: i64,
    pub output_tokens: i64,
    pub cache_read_tokens: i64,
    pub cache_write_tokens: i64,
    /// Every token, cache included.
    pub tokens: i64,
    /// The priced part of the cost, in USD.
    pub cost_usd: f64,
    /// Runs with tokens nothing priced: their cost is unknown, not $0.
    pub unpriced_runs: i64,
    /// The cost as people read it: `$1.2500`, `unpriced`, `$1.2500 + unpriced`.
    #[schema(example = "$1.2500")]
    pub cost: String,
}

impl TotalsView {
    fn of(t: &Totals, kind: Option<RuntimeKind>) -> Self {
        TotalsView {
            runs: t.runs,
            input_tokens: t.input_tokens,
            output_tokens: t.output_tokens,
            cache_read_tokens: t.cache_read_tokens,
            cache_write_tokens: t.cache_write_tokens,
            tokens: t.tokens(),
            cost_usd: t.cost_usd,
            unpriced_runs: t.unpriced_runs,
            cost: t.usage().cost_label(kind).0,
        }
    }
}

/// One line of the usage table: an agent, a model, a runtime or an issue.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct GroupView {
    /// The agent's id, the model, the runtime or the issue key.
    pub key: String,
    /// What people read: the agent's name, the model, …
    pub label: String,
    /// The runtime, when the whole group has one.
    pub kind: Option<String>,
    #[serde(flatten)]
    pub totals: TotalsView,
    pub succeeded: i64,
    /// Failed, timed out or interrupted (over-budget and over-cap stops are counted apart).
    pub failed: i64,
    pub cancelled: i64,
    pub over_budget: i64,
    /// Still queued or live.
    pub live: i64,
    /// Shares of the runs that ended, 0 to 1 (`null` when none ended).
    pub success_rate: Option<f64>,
    pub failure_rate: Option<f64>,
    pub cancel_rate: Option<f64>,
    pub over_budget_rate: Option<f64>,
    /// Median and 90th percentile run time, seconds.
    pub median_secs: Option<f64>,
    pub p90_secs: Option<f64>,
    pub cost_per_run_usd: Option<f64>,
    /// Issues a run of the group delivered to review (a succeeded run).
    pub delivered_issues: i64,
    pub cost_per_delivered_usd: Option<f64>,
    /// Output tokens per second of run time, for local models.
    pub tokens_per_sec: Option<f64>,
}

impl From<&GroupUsage> for GroupView {
    fn from(g: &GroupUsage) -> Self {
        GroupView {
            key: g.key.clone(),
            label: g.label.clone(),
            kind: g.kind.map(|k| k.to_string()),
            totals: TotalsView::of(&g.totals, g.kind),
            succeeded: g.succeeded,
            failed: g.failed,
            cancelled: g.cancelled,
            over_budget: g.over_budget,
            live: g.live,
            success_rate: g.rate(g.succeeded),
            failure_rate: g.rate(g.failed),
            cancel_rate: g.rate(g.cancelled),
            over_budget_rate: g.rate(g.over_budget),
            median_secs: g.median_secs,
            p90_secs: g.p90_secs,
            cost_per_run_usd: g.cost_per_run(),
            delivered_issues: g.delivered_issues,
            cost_per_delivered_usd: g.cost_per_delivered(),
            tokens_per_sec: g.tokens_per_sec,
        }
    }
}

/// One UTC day: its totals, and per group key.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct DayView {
    #[schema(value_type = String, example = "2026-12-03")]
    pub day: chrono::NaiveDate,
    #[serde(flatten)]
    pub total: TotalsView,
    /// Totals per group key (as in `groups`); groups without a run that day are absent.
    pub groups: BTreeMap<String, TotalsView>,
}

impl From<&DayUsage> for DayView {
    fn from(d: &DayUsage) -> Self {
        DayView {
            day: d.day,
            total: TotalsView::of(&d.total, None),
            groups: d
                .groups
                .iter()
                .map(|(k, t)| (k.clone(), TotalsView::of(t, None)))
                .collect(),
        }
    }
}

/// Usage over a period: totals, one line per group, and every day.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct UsageView {
    /// The period, `[from, to)`; runs count on the UTC day they were queued.
    pub from: chrono::DateTime<chrono::Utc>,
    pub to: chrono::DateTime<chrono::Utc>,
    /// `agent`, `model`, `runtime` or `issue`.
    pub by: String,
    pub total: TotalsView,
    /// Most expensive first.
    pub groups: Vec<GroupView>,
    /// Oldest first, days without runs included.
    pub days: Vec<DayView>,
}

impl From<&UsageReport> for UsageView {
    fn from(r: &UsageReport) -> Self {
        UsageView {
            from: r.from,
            to: r.to,
            by: r.by.to_string(),
            total: TotalsView::of(&r.total, None),
            groups: r.groups.iter().map(GroupView::from).collect(),
            days: r.days.iter().map(DayView::from).collect(),
        }
    }
}

/// What the workspace's runs cost over a period, grouped by agent, model, runtime or issue, and per day.
#[utoipa::path(get, path = "/api/v1/usage", tag = "usage", params(UsageQuery),
    responses((status = 200, body = UsageView), (status = 422, body = ErrorBody)))]
pub(super) async fn report(
    State(state): State<AppState>,
    ApiCaller(caller): ApiCaller,
    AppQuery(q): AppQuery<UsageQuery>,
) -> Result<Json<UsageView>> {
    let report = svc::report(&state, &caller, &q, chrono::Utc::now()).await?;
    Ok(Json(UsageView::from(&report)))
}

/// A monthly cap (UTC calendar month) and the spend against it this month.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct CapView {
    /// USD per month; `null`: no bound.
    pub usd: Option<f64>,
    /// Tokens per month, cache included; `null`: no bound.
    pub tokens: Option<i64>,
    /// Spent this month (live runs' usage so far included).
    pub spent_usd: f64,
    pub spent_tokens: i64,
    /// The larger share of a bound used, 0 to 1 and beyond (0 without a bound).
    pub used: f64,
}

impl CapView {
    fn of(cap: Cap, spent: &Usage) -> Self {
        CapView {
            usd: cap.usd,
            tokens: cap.tokens,
            spent_usd: spent.cost_usd,
            spent_tokens: spent.tokens(),
            used: cap.used(spent),
        }
    }
}

/// An agent's cap.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct AgentCapView {
    pub agent: String,
    #[serde(flatten)]
    pub cap: CapView,
}

/// The workspace's monthly cap and those of its agents.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct CapsView {
    pub workspace: CapView,
    /// Every agent, by name, capped or not.
    pub agents: Vec<AgentCapView>,
}

/// A cap to set; a bound absent or `null` is no bound.
#[derive(Debug, Clone, Default, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CapBody {
    /// USD per month, 0 or more.
    #[schema(minimum = 0)]
    pub usd: Option<f64>,
    /// Tokens per month (cache included), 0 or more.
    #[schema(minimum = 0)]
    #[serde(default, deserialize_with = "crate::http::extract::whole_number")]
    pub tokens: Option<i64>,
}

impl CapBody {
    fn input(&self) -> CapInput {
        CapInput {
            usd: self.usd.map(|v| v.to_string()),
            tokens: self.tokens.map(|v| v.to_string()),
        }
    }
}

async fn caps_view(state: &AppState, caller: &crate::service::Caller) -> Result<CapsView> {
    let now = chrono::Utc::now();
    let caps = svc::caps(state, caller).await?;
    let since = crate::domain::usage::month_start(now);
    let ws_spent = state.store.spend_since(caller.ws.id, None, since).await?;
    let mut agents = Vec::new();
    for agent in state.store.list_agents(caller.ws.id).await? {
        let (spent, cap) = svc::agent_month(state, caller.ws.id, agent.id, now).await?;
        agents.push(AgentCapView {
            agent: agent.profile.name.as_str().to_owned(),
            cap: CapView::of(cap, &spent),
        });
    }
    Ok(CapsView {
        workspace: CapView::of(caps.workspace, &ws_spent),
        agents,
    })
}

/// The workspace's monthly cap and its agents', with what each spent this month.
#[utoipa::path(get, path = "/api/v1/usage/caps", tag = "usage",
    responses((status = 200, body = CapsView)))]
pub(super) async fn caps(
    State(state): State<AppState>,
    ApiCaller(caller): ApiCaller,
) -> Result<Json<CapsView>> {
    Ok(Json(caps_view(&state, &caller).await?))
}

/// Sets the workspace's monthly cap (owners and admins). Runs are refused once it is reached; owners and
/// admins are warned once a month at 80%.
#[utoipa::path(put, path = "/api/v1/usage/caps", tag = "usage", request_body = CapBody,
    responses((status = 200, body = CapsView), (status = 422, body = ErrorBody)))]
pub(super) async fn set_workspace_cap(
    State(state): State<AppState>,
    ApiCaller(caller): ApiCaller,
    AppJson(body): AppJson<CapBody>,
) -> Result<Json<CapsView>> {
    svc::set_workspace_cap(&state, &caller, &body.input()).await?;
    Ok(Json(caps_view(&state, &caller).await?))
}

/// Sets an agent's monthly cap (owners and admins).
#[utoipa::path(put, path = "/api/v1/agents/{name}/cap", tag = "usage", request_body = CapBody,
    params(AgentNameParam),
    responses((status = 200, body = CapsView), (status = 404, body = ErrorBody), (status = 422, body = ErrorBody)))]
pub(super) async fn set_agent_cap(
    State(state): State<AppState>,
    ApiCaller(caller): ApiCaller,
    AppPath(name): AppPath<String>,
    AppJson(body): AppJson<CapBody>,
) -> Result<Json<CapsView>> {
    svc::set_agent_cap(&state, &caller, &name, &body.input()).await?;
    Ok(Json(caps_view(&state, &caller).await?))
}

/// One model's prices, USD per million tokens.
#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
pub struct RateView {
    #[schema(minimum = 0, maximum = 1000000)]
    pub input: f64,
    #[schema(minimum = 0, maximum = 1000000)]
    pub output: f64,
    /// Cached input; the input price when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(minimum = 0, maximum = 1000000)]
    pub cached: Option<f64>,
}

/// The rate table runs are priced with when their CLI reports tokens but no cost.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct RatesView {
    /// `true`: the workspace's own table; `false`: the built-in one.
    pub custom: bool,
    /// Model name → prices. A model is matched exactly, else by the longest entry prefixing it at a
    /// `-`, `[`, `@` or `:` (after dropping a `provider/` prefix).
    pub rates: BTreeMap<String, RateView>,
}

fn rates_view(table: &muster_agents::RateTable, custom: bool) -> RatesView {
    RatesView {
        custom,
        rates: table
            .iter()
            .map(|(m, r)| {
                let view = RateView {
                    input: r.input,
                    output: r.output,
                    cached: r.cached,
                };
                (m.to_owned(), view)
            })
            .collect(),
    }
}

/// The prices runs of the workspace are priced with.
#[utoipa::path(get, path = "/api/v1/rates", tag = "usage", responses((status = 200, body = RatesView)))]
pub(super) async fn rates(
    State(state): State<AppState>,
    ApiCaller(caller): ApiCaller,
) -> Result<Json<RatesView>> {
    let (table, custom) = svc::rate_table(&state, caller.ws.id).await?;
    Ok(Json(rates_view(&table, custom)))
}

/// A new rate table; `null` goes back to the built-in one.
#[derive(Debug, Clone, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RatesBody {
    pub rates: Option<BTreeMap<String, RateView>>,
}

/// Replaces the workspace's rate table (owners and admins). Runs priced from it say "estimated".
#[utoipa::path(put, path = "/api/v1/rates", tag = "usage", request_body = RatesBody,
    responses((status = 200, body = RatesView), (status = 422, body = ErrorBody)))]
pub(super) async fn set_rates(
    State(state): State<AppState>,
    ApiCaller(caller): ApiCaller,
    AppJson(body): AppJson<RatesBody>,
) -> Result<Json<RatesView>> {
    let json = match &body.rates {
        Some(rates) => serde_json::to_string(rates)
            .map_err(|e| crate::http::Error::Internal(anyhow::Error::new(e)))?,
        None => String::new(),
    };
    let (table, custom) = svc::set_rate_table(&state, &caller, &json).await?;
    Ok(Json(rates_view(&table, custom)))
}
