//! The Usage page (issue 15): totals, daily charts and the per-group table over a period, and the
//! monthly caps (owners and admins set them here).

use axum::Router;
use axum::extract::{Query, State};
use axum::response::IntoResponse;
use axum::routing::{get, post};
use chrono::{DateTime, Utc};
use muster_web::pages::{
    BarView, CapRowView, ChartView, ChoiceView, SeriesView, UsagePageView, UsageRowView,
};
use muster_web::partials::widgets;
use muster_web::views::NavItem;

use super::runs::thousands;
use super::views::nav;
use super::{PageResult, form_errors, invalid, see_other};
use crate::domain::GroupBy;
use crate::domain::usage::{Totals, UsageReport, month_start};
use crate::http::extract::WsMember;
use crate::http::form::Form;
use crate::service::usage::{self as svc, CapInput, UsageQuery};
use crate::state::AppState;

pub(super) fn router() -> Router<AppState> {
    Router::new()
        .route("/w/{slug}/usage", get(show))
        .route("/w/{slug}/usage/caps", post(save_cap))
        .route("/w/{slug}/agents/{name}/usage", get(agent_section))
        .route("/w/{slug}/usage/rates", get(rates).post(save_rates))
}

/// The page's query: the API's, plus `saved` after a cap was saved.
#[derive(Debug, Default, serde::Deserialize)]
struct PageQuery {
    since: Option<String>,
    until: Option<String>,
    by: Option<String>,
    saved: Option<String>,
}

fn usd(v: f64) -> String {
    format!("${v:.4}")
}

fn secs(v: Option<f64>) -> String {
    match v {
        None => "–".to_owned(),
        Some(s) if s < 60.0 => format!("{s:.0}s"),
        Some(s) if s < 3600.0 => format!("{:.0}m {:.0}s", (s / 60.0).floor(), s % 60.0),
        Some(s) => format!("{:.0}h {:.0}m", (s / 3600.0).floor(), (s % 3600.0) / 60.0),
    }
}

fn rate(n: i64, of: i64) -> String {
    if of == 0 {
        n.to_string()
    } else {
        format!("{n} ({:.0}%)", n as f64 * 100.0 / of as f64)
    }
}

fn href(slug: &str, q: &PageQuery, since: Option<&str>, by: Option<&str>) -> String {
    let mut pairs: Vec<(&str, &str)> = Vec::new();
    match since {
        Some(s) => pairs.push(("since", s)),
        None => {
            if let Some(s) = q.since.as_deref() {
                pairs.push(("since", s));
            }
            if let Some(u) = q.until.as_deref() {
                pairs.push(("until", u));
            }
        }
    }
    if let Some(b) = by.or(q.by.as_deref()) {
        pairs.push(("by", b));
    }
    let query = serde_urlencoded::to_string(&pairs).unwrap_or_default();
    format!("/w/{slug}/usage?{query}")
}

/// The two charts (cost, tokens), stacked by group.
fn charts(report: &UsageReport, keys: &[String]) -> Vec<ChartView> {
    let make =
        |title: &str, id: &str, value: &dyn Fn(&Totals) -> f64, label: &dyn Fn(f64) -> String| {
            let bars: Vec<BarView> = report
                .days
                .iter()
                .map(|d| BarView {
                    label: d.day.format("%b %-d").to_string(),
                    total: value(&d.total),
                    total_label: label(value(&d.total)),
                    segments: keys
                        .iter()
                        .enumerate()
                        .filter_map(|(i, k)| {
                            d.groups
                                .get(k)
                                .map(|t| (i, value(t), label(value(t))))
                                .filter(|(_, v, _)| *v > 0.0)
                        })
                        .collect(),
                })
                .collect();
            let max = bars.iter().map(|b| b.total).fold(0.0_f64, f64::max);
            ChartView {
                title: title.to_owned(),
                id: id.to_owned(),
                max_label: label(max),
                bars,
            }
        };
    vec![
        make("Cost per day (USD)", "usage-cost", &|t| t.cost_usd, &|v| {
            usd(v)
        }),
        make(
            "Tokens per day (input, output and cache)",
            "usage-tokens",
            &|t| t.tokens() as f64,
            &|v| thousands(v.round() as i64),
        ),
    ]
}

fn row(
    slug: &str,
    report: &UsageReport,
    g: &crate::domain::usage::GroupUsage,
    color: String,
) -> UsageRowView {
    let t = &g.totals;
    let (cost, title) = t.usage().cost_label(g.kind);
    let ended = g.ended();
    UsageRowView {
        label: g.label.clone(),
        href: (report.by == GroupBy::Agent).then(|| format!("/w/{slug}/agents/{}", g.label)),
        color: Some(color),
        runs: t.runs.to_string(),
        succeeded: rate(g.succeeded, ended),
        failed: rate(g.failed, ended),
        cancelled: rate(g.cancelled, ended),
        over_budget: rate(g.over_budget, ended),
        median: secs(g.median_secs),
        p90: secs(g.p90_secs),
        input: thousands(t.input_tokens),
        output: thousands(t.output_tokens),
        cache: thousands(t.cache_read_tokens + t.cache_write_tokens),
        cost,
        cost_title: title.map(str::to_owned),
        per_run: per(g, g.cost_per_run()),
        per_delivered: per(g, g.cost_per_delivered()),
        tokens_per_sec: g
            .tokens_per_sec
            .map_or_else(|| "–".to_owned(), |v| format!("{v:.1}")),
    }
}

/// A cost per run or per delivered issue: "unpriced" when nothing of the group was priced (never $0).
fn per(g: &crate::domain::usage::GroupUsage, cost: Option<f64>) -> String {
    match cost {
        Some(c) => usd(c),
        None if g.all_unpriced() => "unpriced".to_owned(),
        None => "–".to_owned(),
    }
}

async fn view(
    state: &AppState,
    member: &WsMember,
    q: &PageQuery,
) -> crate::http::Result<UsagePageView> {
    let caller = &member.caller;
    let slug = caller.ws.slug.to_string();
    let now = Utc::now();
    let query = UsageQuery {
        since: q.since.clone(),
        until: q.until.clone(),
        by: q.by.clone(),
        agent: None,
    };
    let report = svc::report(state, caller, &query, now).await?;
    let keys: Vec<String> = report.groups.iter().map(|g| g.key.clone()).collect();
    // Agents keep their avatar colours; models and runtimes their names'; never two alike side by side.
    let labels: Vec<&str> = report.groups.iter().map(|g| g.label.as_str()).collect();
    let colors = if report.by == GroupBy::Agent {
        super::views::People::load(state, caller)
            .await?
            .side_by_side(&labels)
    } else {
        widgets::side_by_side_colors(&labels, &[])
    };
    let series = report
        .groups
        .iter()
        .zip(&colors)
        .map(|(g, color)| SeriesView {
            label: g.label.clone(),
            color: color.clone(),
        })
        .collect();
    let since = q.since.as_deref().unwrap_or(svc::DEFAULT_SINCE);
    let periods = [("Today", "today"), ("7 days", "7d"), ("30 days", "30d")]
        .into_iter()
        .map(|(label, value)| ChoiceView {
            label: label.to_owned(),
            href: href(&slug, q, Some(value), None),
            active: since == value && q.until.is_none(),
        })
        .collect();
    let groupings = [
        ("Agent", GroupBy::Agent),
        ("Model", GroupBy::Model),
        ("Runtime", GroupBy::Runtime),
        ("Issue", GroupBy::Issue),
    ]
    .into_iter()
    .map(|(label, by)| ChoiceView {
        label: label.to_owned(),
        href: href(&slug, q, None, Some(by.as_str())),
        active: report.by == by,
    })
    .collect();
    let t = &report.total;
    let (cost, cost_title) = t.usage().cost_label(None);
    let last = report.to - chrono::TimeDelta::microseconds(1);
    let period_label = format!(
        "{} – {} (UTC)",
        report.from.format("%b %-d, %Y"),
        last.format("%b %-d, %Y")
    );
    Ok(UsagePageView {
        nav: nav(caller, &member.csrf, NavItem::Usage),
        period_label,
        periods,
        groupings,
        since_input: report.from.format("%Y-%m-%d").to_string(),
        until_input: last.format("%Y-%m-%d").to_string(),
        by: report.by.to_string(),
        totals: vec![
            ("Cost".to_owned(), cost, cost_title.map(str::to_owned)),
            ("Runs".to_owned(), thousands(t.runs), None),
            ("Tokens".to_owned(), thousands(t.tokens()), None),
            ("Input".to_owned(), thousands(t.input_tokens), None),
            ("Output".to_owned(), thousands(t.output_tokens), None),
            (
                "Cache".to_owned(),
                thousands(t.cache_read_tokens + t.cache_write_tokens),
                None,
            ),
        ],
        charts: charts(&report, &keys),
        series,
        group_heading: match report.by {
            GroupBy::Agent => "Agent",
            GroupBy::Model => "Model",
            GroupBy::Runtime => "Runtime",
            GroupBy::Issue => "Issue",
        }
        .to_owned(),
        rows: report
            .groups
            .iter()
            .zip(&colors)
            .map(|(g, color)| row(&slug, &report, g, color.clone()))
            .collect(),
        month: now.format("%B %Y").to_string(),
        caps: cap_rows(state, caller, now).await?,
        can_manage: caller.role.can_manage(),
        errors: Default::default(),
        saved: q.saved.is_some(),
    })
}

async fn cap_rows(
    state: &AppState,
    caller: &crate::service::Caller,
    now: DateTime<Utc>,
) -> crate::http::Result<Vec<CapRowView>> {
    let caps = svc::caps(state, caller).await?;
    let since = month_start(now);
    let line = |label: String,
                agent: String,
                cap: crate::domain::Cap,
                spent: &crate::domain::Usage| CapRowView {
        label,
        agent,
        spent: format!(
            "{} · {} tokens",
            usd(spent.cost_usd),
            thousands(spent.tokens())
        ),
        usd_input: cap.usd.map(|v| v.to_string()).unwrap_or_default(),
        tokens_input: cap.tokens.map(|v| v.to_string()).unwrap_or_default(),
        used: (!cap.is_none()).then(|| (cap.used(spent) * 100.0).floor().min(999.0) as u32),
    };
    let spent = state.store.spend_since(caller.ws.id, None, since).await?;
    let mut rows = vec![line(
        "Workspace".to_owned(),
        String::new(),
        caps.workspace,
        &spent,
    )];
    for agent in state.store.list_agents(caller.ws.id).await? {
        let (spent, cap) = svc::agent_month(state, caller.ws.id, agent.id, now).await?;
        let name = agent.profile.name.as_str().to_owned();
        rows.push(line(name.clone(), name, cap, &spent));
    }
    Ok(rows)
}

async fn show(
    State(state): State<AppState>,
    member: WsMember,
    Query(q): Query<PageQuery>,
) -> PageResult {
    let v = view(&state, &member, &q).await?;
    Ok(muster_web::pages::usage(&v).into_response())
}

/// A monthly cap: the workspace's, or (named in `agent`) one agent's; amounts as typed.
#[derive(Debug, Default, serde::Deserialize)]
#[serde(default)]
struct CapForm {
    agent: String,
    usd: String,
    tokens: String,
}

async fn save_cap(
    State(state): State<AppState>,
    member: WsMember,
    Form(form): Form<CapForm>,
) -> PageResult {
    let input = CapInput {
        usd: Some(form.usd),
        tokens: Some(form.tokens),
    };
    let agent = form.agent.trim().to_owned();
    let saved = if agent.is_empty() {
        svc::set_workspace_cap(&state, &member.caller, &input).await
    } else {
        svc::set_agent_cap(&state, &member.caller, &agent, &input).await
    };
    match saved {
        Ok(_) => Ok(see_other(&format!(
            "/w/{}/usage?saved=1",
            member.caller.ws.slug
        ))),
        Err(e) => {
            let errors = form_errors(e)?;
            let mut v = view(&state, &member, &PageQuery::default()).await?;
            v.errors = errors;
            Ok(invalid(muster_web::pages::usage(&v)))
        }
    }
}

/// `?status=&limit=` of an agent's usage section.
#[derive(Debug, Default, serde::Deserialize)]
struct AgentQuery {
    status: Option<String>,
    limit: Option<i64>,
}

/// Runs shown at first, and added by "Show more runs".
const RUN_PAGE: i64 = 20;
/// The most runs the section shows.
const MAX_RUNS: i64 = 500;

/// An agent's usage section: spend this month against its cap, a 30-day sparkline, its runs.
async fn agent_section(
    State(state): State<AppState>,
    member: WsMember,
    crate::http::extract::HxRequest(hx): crate::http::extract::HxRequest,
    axum::extract::Path((_, name)): axum::extract::Path<(String, String)>,
    Query(q): Query<AgentQuery>,
) -> PageResult {
    use muster_web::partials::agent_usage::{AgentRunRowView, AgentUsageView, agent_usage};
    let caller = &member.caller;
    let agent = crate::service::agents::by_name(&state, caller, &name).await?;
    let now = Utc::now();
    let base = format!("/w/{}", caller.ws.slug);
    let status = match q.status.as_deref().map(str::trim) {
        None | Some("") | Some("all") => None,
        Some(raw) => Some(
            raw.parse::<crate::domain::RunStatus>()
                .map_err(|e| crate::service::Error::invalid([("status", e.to_string())]))?,
        ),
    };
    let limit = q.limit.unwrap_or(RUN_PAGE).clamp(1, MAX_RUNS);
    let (spent, cap) = svc::agent_month(&state, caller.ws.id, agent.id, now).await?;
    let from = (now.date_naive() - chrono::TimeDelta::days(29))
        .and_hms_opt(0, 0, 0)
        .map_or(now, |t| t.and_utc());
    let filter = crate::domain::UsageFilter {
        from,
        to: now,
        agent: Some(agent.id),
        issue: None,
        project: None,
        parent: None,
    };
    let recent = state.store.usage_runs(caller.ws.id, &filter).await?;
    let days = crate::domain::usage::report(&recent, from, now, GroupBy::Agent).days;
    let mut runs = state
        .store
        .list_runs(
            caller.ws.id,
            &crate::store::RunFilter {
                agent: Some(agent.id),
                statuses: status.into_iter().collect(),
                limit: limit + 1,
                ..Default::default()
            },
        )
        .await?;
    let more = runs.len() > usize::try_from(limit).unwrap_or(usize::MAX);
    runs.truncate(usize::try_from(limit).unwrap_or(usize::MAX));
    let mut keys: std::collections::HashMap<crate::domain::IssueId, String> = Default::default();
    let mut rows = Vec::with_capacity(runs.len());
    for run in &runs {
        let key = match keys.get(&run.issue_id) {
            Some(k) => k.clone(),
            None => {
                let k = state
                    .store
                    .get_issue_by_id(run.issue_id)
                    .await?
                    .key
                    .to_string();
                keys.insert(run.issue_id, k.clone());
                k
            }
        };
        let (cost, title) = run.usage.cost_label(Some(agent.profile.kind));
        let duration = match (run.started_at, run.finished_at) {
            (Some(s), Some(f)) => secs(Some((f - s).num_milliseconds() as f64 / 1000.0)),
            _ => "–".to_owned(),
        };
        rows.push(AgentRunRowView {
            href: format!("{base}/runs/{}", run.id),
            issue_href: format!("{base}/issues/{key}"),
            issue_key: key,
            status: run.status.to_string(),
            created_at: run.created_at,
            duration,
            tokens: thousands(run.usage.tokens()),
            cost,
            cost_title: title.map(str::to_owned),
        });
    }
    let section = format!("{base}/agents/{name}/usage");
    let status_text = status.map(|s| s.to_string());
    let filters = std::iter::once(("All".to_owned(), None))
        .chain(
            [
                crate::domain::RunStatus::Succeeded,
                crate::domain::RunStatus::Failed,
                crate::domain::RunStatus::Cancelled,
                crate::domain::RunStatus::Running,
                crate::domain::RunStatus::Queued,
            ]
            .into_iter()
            .map(|s| (s.to_string().replace('_', " "), Some(s.to_string()))),
        )
        .map(|(label, value)| muster_web::pages::ChoiceView {
            href: match &value {
                Some(v) => format!("{section}?status={v}"),
                None => section.clone(),
            },
            active: value == status_text,
            label,
        })
        .collect();
    let more = more.then(|| match &status_text {
        Some(s) => format!("{section}?status={s}&limit={}", limit + RUN_PAGE),
        None => format!("{section}?limit={}", limit + RUN_PAGE),
    });
    let view = AgentUsageView {
        month: now.format("%B %Y").to_string(),
        spent: format!(
            "{} · {} tokens",
            spent.cost_label(Some(agent.profile.kind)).0,
            thousands(spent.tokens())
        ),
        cap: match (cap.usd, cap.tokens) {
            (None, None) => "no monthly cap".to_owned(),
            (Some(u), None) => format!("${u:.2} a month"),
            (None, Some(t)) => format!("{} tokens a month", thousands(t)),
            (Some(u), Some(t)) => format!("${u:.2} or {} tokens a month", thousands(t)),
        },
        used: (!cap.is_none()).then(|| (cap.used(&spent) * 100.0).floor().min(999.0) as u32),
        sparkline: days
            .iter()
            .map(|d| {
                (
                    d.day.format("%b %-d").to_string(),
                    d.total.cost_usd,
                    usd(d.total.cost_usd),
                )
            })
            .collect(),
        filters,
        runs: rows,
        more,
    };
    let fragment = agent_usage(&view);
    if hx {
        return Ok(fragment.into_response());
    }
    let body = maud::html! {
        p { a href={ (base) "/agents/" (name) } { "Back to " (name) } }
        (fragment)
    };
    Ok(muster_web::layout::page(
        &format!("Usage of {name}"),
        Some(&nav(caller, &member.csrf, NavItem::Agents)),
        body,
    )
    .into_response())
}

fn rates_view(
    member: &WsMember,
    table: &muster_agents::RateTable,
    custom: bool,
) -> muster_web::pages::RatesPageView {
    let price = |v: f64| format!("${v}");
    muster_web::pages::RatesPageView {
        nav: nav(&member.caller, &member.csrf, NavItem::Usage),
        custom,
        rows: table
            .iter()
            .map(|(model, r)| muster_web::pages::RateRowView {
                model: model.to_owned(),
                input: price(r.input),
                output: price(r.output),
                cached: price(r.cached.unwrap_or(r.input)),
            })
            .collect(),
        json: table.to_json(),
        can_manage: member.caller.role.can_manage(),
        errors: Default::default(),
        saved: false,
    }
}

async fn rates(
    State(state): State<AppState>,
    member: WsMember,
    Query(q): Query<PageQuery>,
) -> PageResult {
    let (table, custom) = svc::rate_table(&state, member.caller.ws.id).await?;
    let mut v = rates_view(&member, &table, custom);
    v.saved = q.saved.is_some();
    Ok(muster_web::pages::rates(&v).into_response())
}

/// The price table as JSON text.
#[derive(Debug, Default, serde::Deserialize)]
#[serde(default)]
struct RatesForm {
    rates: String,
}

async fn save_rates(
    State(state): State<AppState>,
    member: WsMember,
    Form(form): Form<RatesForm>,
) -> PageResult {
    match svc::set_rate_table(&state, &member.caller, &form.rates).await {
        Ok(_) => Ok(see_other(&format!(
            "/w/{}/usage/rates?saved=1",
            member.caller.ws.slug
        ))),
        Err(e) => {
            let errors = form_errors(e)?;
            let (table, custom) = svc::rate_table(&state, member.caller.ws.id).await?;
            let mut v = rates_view(&member, &table, custom);
            v.errors = errors;
            v.json = form.rates;
            Ok(invalid(muster_web::pages::rates(&v)))
        }
    }
}
