//! Rows and SQL of the usage use-cases (issue 15): per-run usage for reports, spend sums for caps, the
//! caps themselves, their monthly warnings and the workspace's rate table. The methods are in
//! `impl_store!` (`common.rs`); the SQL is portable (sums are cast so both backends return `bigint`).

use chrono::{DateTime, Utc};
use sqlx::types::Json;

use crate::domain::{
    AgentId, FailureReason, IssueId, RunId, RunStatus, RunUsage, RuntimeKind, Usage,
};

/// One run of [`super::Store::usage_runs`].
pub(super) const USAGE_RUNS: &str = "select r.run_id, r.agent_id, a.name as agent_name, a.kind, \
     coalesce(r.model, a.model) as model, r.issue_id, w.issue_prefix, i.number as issue_number, r.status, \
     r.failure_reason, r.created_at, r.started_at, r.finished_at, r.input_tokens, r.output_tokens, \
     r.cache_read_tokens, r.cache_write_tokens, r.cost_usd, r.cost_unknown \
     from run r join agent a on a.agent_id = r.agent_id join issue i on i.issue_id = r.issue_id \
     join workspace w on w.workspace_id = r.workspace_id \
     where r.workspace_id = ";

/// The sums of [`super::Store::spend_since`].
pub(super) const SPEND_SINCE: &str = "select \
     cast(coalesce(sum(input_tokens), 0) as bigint) as input_tokens, \
     cast(coalesce(sum(output_tokens), 0) as bigint) as output_tokens, \
     cast(coalesce(sum(cache_read_tokens), 0) as bigint) as cache_read_tokens, \
     cast(coalesce(sum(cache_write_tokens), 0) as bigint) as cache_write_tokens, \
     coalesce(sum(cost_usd), 0.0) as cost_usd, \
     cast(coalesce(sum(case when cost_unknown then 1 else 0 end), 0) as bigint) as unknown_runs \
     from run where workspace_id = ";

#[derive(sqlx::FromRow)]
pub(super) struct UsageRow {
    run_id: RunId,
    agent_id: AgentId,
    agent_name: String,
    kind: super::codec::Named<RuntimeKind>,
    model: Option<String>,
    issue_id: IssueId,
    issue_prefix: String,
    issue_number: i64,
    status: RunStatus,
    failure_reason: Option<FailureReason>,
    created_at: DateTime<Utc>,
    started_at: Option<DateTime<Utc>>,
    finished_at: Option<DateTime<Utc>>,
    input_tokens: i64,
    output_tokens: i64,
    cache_read_tokens: i64,
    cache_write_tokens: i64,
    cost_usd: f64,
    cost_unknown: bool,
}

impl From<UsageRow> for RunUsage {
    fn from(r: UsageRow) -> Self {
        RunUsage {
            run_id: r.run_id,
            agent_id: r.agent_id,
            agent_name: r.agent_name,
            kind: r.kind.0,
            model: r.model.filter(|m| !m.trim().is_empty()),
            issue_id: r.issue_id,
            issue_key: format!("{}-{}", r.issue_prefix, r.issue_number),
            status: r.status,
            failure_reason: r.failure_reason,
            created_at: r.created_at,
            started_at: r.started_at,
            finished_at: r.finished_at,
            usage: Usage {
                input_tokens: r.input_tokens,
                output_tokens: r.output_tokens,
                cache_read_tokens: r.cache_read_tokens,
                cache_write_tokens: r.cache_write_tokens,
                cost_usd: r.cost_usd,
                cost_unknown: r.cost_unknown,
                cost_estimated: false,
            },
        }
    }
}

#[derive(sqlx::FromRow)]
pub(super) struct SpendRow {
    input_tokens: i64,
    output_tokens: i64,
    cache_read_tokens: i64,
    cache_write_tokens: i64,
    cost_usd: f64,
    unknown_runs: i64,
}

impl From<SpendRow> for Usage {
    fn from(r: SpendRow) -> Self {
        Usage {
            input_tokens: r.input_tokens,
            output_tokens: r.output_tokens,
            cache_read_tokens: r.cache_read_tokens,
            cache_write_tokens: r.cache_write_tokens,
            cost_usd: r.cost_usd,
            cost_unknown: r.unknown_runs > 0,
            cost_estimated: false,
        }
    }
}

/// A cap's two columns, on `workspace` or `agent`.
#[derive(sqlx::FromRow)]
pub(super) struct CapRow {
    pub(super) agent_id: Option<AgentId>,
    cap_usd: Option<f64>,
    cap_tokens: Option<i64>,
}

impl CapRow {
    pub(super) fn cap(&self) -> crate::domain::Cap {
        crate::domain::Cap {
            usd: self.cap_usd,
            tokens: self.cap_tokens,
        }
    }
}

/// The workspace's rate table column.
pub(super) type RatesColumn = Option<Json<muster_agents::RateTable>>;
