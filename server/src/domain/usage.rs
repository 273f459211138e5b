//! Usage and spend: what runs cost in tokens, money and time, summed per day and per agent, model,
//! runtime or issue, and the monthly caps that bound it.
//!
//! A run counts on the UTC day it was queued (`created_at`), the same instant the monthly caps use, so
//! the page, the API, the CLI and a cap never disagree about which day or month a run's spend is in.
//! Sums are over whatever a run has recorded so far: a live run counts with its usage to date.

use std::collections::{BTreeMap, BTreeSet};

use chrono::{DateTime, Datelike, NaiveDate, TimeDelta, TimeZone, Utc};

use super::{AgentId, FailureReason, IssueId, RunId, RunStatus, RuntimeKind, Usage, string_enum};

/// Which runs [`crate::store::UsageStore::usage_runs`] returns: those queued in `[from, to)`.
#[derive(Debug, Clone, PartialEq)]
pub struct UsageFilter {
    pub from: DateTime<Utc>,
    pub to: DateTime<Utc>,
    /// Only this agent's runs.
    pub agent: Option<AgentId>,
    /// Only this issue's runs.
    pub issue: Option<IssueId>,
    /// Only runs on this project's issues.
    pub project: Option<super::ProjectId>,
    /// Only runs on this issue's sub-issues.
    pub parent: Option<IssueId>,
}

/// One run's usage, with what it is grouped by.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct RunUsage {
    pub run_id: RunId,
    pub agent_id: AgentId,
    pub agent_name: String,
    pub kind: RuntimeKind,
    /// The model the run was queued with (its agent's then), else its agent's now; `None`: the CLI's
    /// default.
    pub model: Option<String>,
    pub issue_id: IssueId,
    /// The issue's key (`MUS-42`).
    pub issue_key: String,
    pub status: RunStatus,
    pub failure_reason: Option<FailureReason>,
    pub created_at: DateTime<Utc>,
    pub started_at: Option<DateTime<Utc>>,
    pub finished_at: Option<DateTime<Utc>>,
    pub usage: Usage,
}

impl RunUsage {
    /// How long it ran, once it ended after starting.
    pub fn duration(&self) -> Option<TimeDelta> {
        match (self.started_at, self.finished_at) {
            (Some(s), Some(f)) if self.status.is_terminal() && f >= s => Some(f - s),
            _ => None,
        }
    }
}

string_enum!(
    /// What usage is grouped by.
    GroupBy, "by" {
        Agent => "agent",
        Model => "model",
        Runtime => "runtime",
        Issue => "issue",
    }
);

/// A monthly spend cap; either bound may be unset.
#[derive(Debug, Clone, Copy, PartialEq, Default, serde::Serialize, serde::Deserialize)]
pub struct Cap {
    pub usd: Option<f64>,
    pub tokens: Option<i64>,
}

impl Cap {
    /// Neither bound is set.
    pub fn is_none(&self) -> bool {
        self.usd.is_none() && self.tokens.is_none()
    }

    /// The larger fraction of a bound `spent` has used (0.0 when no bound is set). A bound of 0 is
    /// reached before anything is spent: it counts as used in full (1.0), a finite figure for the API.
    pub fn used(&self, spent: &Usage) -> f64 {
        let usd = self.usd.map_or(0.0, |cap| {
            if cap <= 0.0 {
                1.0
            } else {
                spent.cost_usd / cap
            }
        });
        let tokens = self.tokens.map_or(0.0, |cap| {
            if cap <= 0 {
                1.0
            } else {
                spent.tokens() as f64 / cap as f64
            }
        });
        usd.max(tokens)
    }

    /// What `spent` is against the cap, for people: "$12.50 of $10.00, 1,200 of 1,000 tokens".
    pub fn describe(&self, spent: &Usage) -> String {
        let mut parts = Vec::new();
        if let Some(usd) = self.usd {
            parts.push(format!("${:.2} of ${usd:.2}", spent.cost_usd));
        }
        if let Some(tokens) = self.tokens {
            parts.push(format!("{} of {tokens} tokens", spent.tokens()));
        }
        parts.join(", ")
    }
}

/// A workspace's monthly caps: its own and its agents' (agents without one are absent).
#[derive(Debug, Clone, PartialEq, Default, serde::Serialize)]
pub struct Caps {
    pub workspace: Cap,
    pub agents: BTreeMap<AgentId, Cap>,
}

/// The first instant of `now`'s UTC calendar month (what monthly caps count from).
pub fn month_start(now: DateTime<Utc>) -> DateTime<Utc> {
    Utc.with_ymd_and_hms(now.year(), now.month(), 1, 0, 0, 0)
        .single()
        .unwrap_or(now)
}

/// `now`'s month as `2026-12` (the key of a cap's one warning a month).
pub fn month_key(now: DateTime<Utc>) -> String {
    format!("{:04}-{:02}", now.year(), now.month())
}

/// Sums of a set of runs.
#[derive(Debug, Clone, Copy, PartialEq, Default, serde::Serialize)]
pub struct Totals {
    pub runs: i64,
    pub input_tokens: i64,
    pub output_tokens: i64,
    pub cache_read_tokens: i64,
    pub cache_write_tokens: i64,
    /// The priced part of the cost.
    pub cost_usd: f64,
    /// How many of the runs had tokens nothing priced (their cost is unknown, not $0).
    pub unpriced_runs: i64,
}

impl Totals {
    fn add(&mut self, u: &Usage) {
        // Not `Usage`'s sum: a total counts the runs whose cost is unknown, not just whether one was.
        self.runs += 1;
        self.input_tokens += u.input_tokens;
        self.output_tokens += u.output_tokens;
        self.cache_read_tokens += u.cache_read_tokens;
        self.cache_write_tokens += u.cache_write_tokens;
        self.cost_usd += u.cost_usd;
        self.unpriced_runs += i64::from(u.cost_unknown);
    }

    /// Every token, cache included.
    pub fn tokens(&self) -> i64 {
        self.input_tokens + self.output_tokens + self.cache_read_tokens + self.cache_write_tokens
    }

    /// The totals as a [`Usage`] (for [`Usage::cost_label`]).
    pub fn usage(&self) -> Usage {
        Usage {
            input_tokens: self.input_tokens,
            output_tokens: self.output_tokens,
            cache_read_tokens: self.cache_read_tokens,
            cache_write_tokens: self.cache_write_tokens,
            cost_usd: self.cost_usd,
            cost_unknown: self.unpriced_runs > 0,
            cost_estimated: false,
        }
    }
}

/// One group's line in the usage table (an agent, a model, a runtime or an issue).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct GroupUsage {
    /// What identifies the group (the agent's id, the model name, the runtime kind, the issue key).
    pub key: String,
    /// What people read (the agent's name, …).
    pub label: String,
    /// The runtime kind, when the whole group has one (always for agent and runtime groups).
    pub kind: Option<RuntimeKind>,
    #[serde(flatten)]
    pub totals: Totals,
    pub succeeded: i64,
    /// Failed, timed out or interrupted, over-budget stops excepted.
    pub failed: i64,
    pub cancelled: i64,
    pub over_budget: i64,
    /// Still queued or live.
    pub live: i64,
    /// Median and 90th percentile of the durations of the runs that ended after starting, in seconds.
    pub median_secs: Option<f64>,
    pub p90_secs: Option<f64>,
    /// Issues one of the group's runs delivered to review (a succeeded run).
    pub delivered_issues: i64,
    /// Output tokens per second of run time, for local models.
    pub tokens_per_sec: Option<f64>,
}

impl GroupUsage {
    /// How many runs ended (the denominator of the rates).
    pub fn ended(&self) -> i64 {
        self.totals.runs - self.live
    }

    /// `n` as a share of the runs that ended, 0..=1.
    pub fn rate(&self, n: i64) -> Option<f64> {
        (self.ended() > 0).then(|| n as f64 / self.ended() as f64)
    }

    /// Cost per priced run: runs whose tokens nothing priced cost an unknown amount, not $0, so they are
    /// left out; `None` when no run was priced.
    pub fn cost_per_run(&self) -> Option<f64> {
        let priced = self.totals.runs - self.totals.unpriced_runs;
        (priced > 0).then(|| self.totals.cost_usd / priced as f64)
    }

    /// Cost per issue delivered to review; `None` when none was, or when no run was priced.
    pub fn cost_per_delivered(&self) -> Option<f64> {
        let priced = self.totals.runs > self.totals.unpriced_runs;
        (priced && self.delivered_issues > 0)
            .then(|| self.totals.cost_usd / self.delivered_issues as f64)
    }

    /// Whether every run counted had tokens nothing priced: its costs are unknown, not $0.
    pub fn all_unpriced(&self) -> bool {
        self.totals.runs > 0 && self.totals.unpriced_runs == self.totals.runs
    }
}

/// One day of the chart: totals per group key (groups with no run that day are absent).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct DayUsage {
    pub day: NaiveDate,
    pub total: Totals,
    pub groups: BTreeMap<String, Totals>,
}

/// Usage over a period, grouped.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct UsageReport {
    pub from: DateTime<Utc>,
    pub to: DateTime<Utc>,
    pub by: GroupBy,
    pub total: Totals,
    /// Most expensive first (then most tokens, then by label).
    pub groups: Vec<GroupUsage>,
    /// Every day of the period, oldest first, empty days included.
    pub days: Vec<DayUsage>,
}

/// The group a run falls in: (key, label, kind).
fn group_of(run: &RunUsage, by: GroupBy) -> (String, String, Option<RuntimeKind>) {
    match by {
        GroupBy::Agent => (
            run.agent_id.to_string(),
            run.agent_name.clone(),
            Some(run.kind),
        ),
        GroupBy::Model => {
            let model = run
                .model
                .clone()
                .unwrap_or_else(|| format!("{} default", run.kind));
            (model.clone(), model, None)
        }
        GroupBy::Runtime => (run.kind.to_string(), run.kind.to_string(), Some(run.kind)),
        GroupBy::Issue => (run.issue_key.clone(), run.issue_key.clone(), None),
    }
}

/// The `q`-quantile (0..=1) of sorted `values`, by the nearest-rank method.
pub fn quantile(sorted: &[f64], q: f64) -> Option<f64> {
    if sorted.is_empty() {
        return None;
    }
    let rank = (q * sorted.len() as f64).ceil().max(1.0) as usize;
    sorted.get(rank.min(sorted.len()) - 1).copied()
}

#[derive(Default)]
struct Acc {
    label: String,
    kinds: BTreeSet<&'static str>,
    kind: Option<RuntimeKind>,
    totals: Totals,
    succeeded: i64,
    failed: i64,
    cancelled: i64,
    over_budget: i64,
    live: i64,
    durations: Vec<f64>,
    delivered: BTreeSet<IssueId>,
    local_secs: f64,
    local_output: i64,
}

impl Acc {
    fn add(&mut self, run: &RunUsage) {
        self.totals.add(&run.usage);
        self.kinds.insert(run.kind.as_str());
        match run.status {
            RunStatus::Succeeded => {
                self.succeeded += 1;
                self.delivered.insert(run.issue_id);
            }
            RunStatus::Cancelled => self.cancelled += 1,
            RunStatus::Failed | RunStatus::TimedOut | RunStatus::Interrupted => {
                if run.failure_reason == Some(FailureReason::OverBudget) {
                    self.over_budget += 1;
                } else {
                    self.failed += 1;
                }
            }
            RunStatus::Queued | RunStatus::Claimed | RunStatus::Running => self.live += 1,
        }
        if let Some(d) = run.duration() {
            let secs = d.num_milliseconds() as f64 / 1000.0;
            self.durations.push(secs);
            if run.kind.is_local_model() {
                self.local_secs += secs;
                self.local_output += run.usage.output_tokens;
            }
        }
    }

    fn finish(mut self, key: String) -> GroupUsage {
        self.durations.sort_by(f64::total_cmp);
        let kind = if self.kinds.len() == 1 {
            self.kind
        } else {
            None
        };
        GroupUsage {
            key,
            label: self.label,
            kind,
            totals: self.totals,
            succeeded: self.succeeded,
            failed: self.failed,
            cancelled: self.cancelled,
            over_budget: self.over_budget,
            live: self.live,
            median_secs: quantile(&self.durations, 0.5),
            p90_secs: quantile(&self.durations, 0.9),
            delivered_issues: i64::try_from(self.delivered.len()).unwrap_or(i64::MAX),
            tokens_per_sec: (self.local_secs > 0.0)
                .then(|| self.local_output as f64 / self.local_secs),
        }
    }
}

/// Sums `runs` (queued in `[from, to)`) by `by`, and per UTC day.
pub fn report(
    runs: &[RunUsage],
    from: DateTime<Utc>,
    to: DateTime<Utc>,
    by: GroupBy,
) -> UsageReport {
    let mut total = Totals::default();
    let mut groups: BTreeMap<String, Acc> = BTreeMap::new();
    let mut days: BTreeMap<NaiveDate, DayUsage> = BTreeMap::new();
    let first = from.date_naive();
    let last = (to - TimeDelta::microseconds(1)).date_naive();
    let mut day = first;
    while day <= last {
        days.insert(
            day,
            DayUsage {
                day,
                total: Totals::default(),
                groups: BTreeMap::new(),
            },
        );
        day = match day.succ_opt() {
            Some(next) => next,
            None => break,
        };
    }
    for run in runs
        .iter()
        .filter(|r| r.created_at >= from && r.created_at < to)
    {
        total.add(&run.usage);
        let (key, label, kind) = group_of(run, by);
        let acc = groups.entry(key.clone()).or_default();
        acc.label = label;
        acc.kind = kind.or(Some(run.kind));
        acc.add(run);
        if let Some(d) = days.get_mut(&run.created_at.date_naive()) {
            d.total.add(&run.usage);
            d.groups.entry(key).or_default().add(&run.usage);
        }
    }
    let mut groups: Vec<GroupUsage> = groups.into_iter().map(|(k, acc)| acc.finish(k)).collect();
    groups.sort_by(|a, b| {
        b.totals
            .cost_usd
            .total_cmp(&a.totals.cost_usd)
            .then(b.totals.tokens().cmp(&a.totals.tokens()))
            .then(a.label.cmp(&b.label))
    });
    UsageReport {
        from,
        to,
        by,
        total,
        groups,
        days: days.into_values().collect(),
    }
}

/// A period asked for as `today`, `7d`, `30d`, `12h`, or a start date `2026-11-01`: its `[from, to)`
/// ending at `now` (a day count covers that many UTC days, today included).
pub fn parse_since(raw: &str, now: DateTime<Utc>) -> Result<DateTime<Utc>, super::ValidationError> {
    let raw = raw.trim();
    let bad = || {
        super::ValidationError::new(
            "since",
            format!(
                "{raw:?} is not a period: use today, a number of days or hours (7d, 30d, 12h) or a \
                 start date (2026-11-01)"
            ),
        )
    };
    let today = now.date_naive().and_hms_opt(0, 0, 0).map(|t| t.and_utc());
    if raw == "today" {
        return today.ok_or_else(bad);
    }
    if let Some(n) = raw.strip_suffix('d') {
        let n: i64 = n.parse().map_err(|_| bad())?;
        if !(1..=3660).contains(&n) {
            return Err(bad());
        }
        return Ok(today.ok_or_else(bad)? - TimeDelta::days(n - 1));
    }
    if let Some(n) = raw.strip_suffix('h') {
        let n: i64 = n.parse().map_err(|_| bad())?;
        if !(1..=87_840).contains(&n) {
            return Err(bad());
        }
        return Ok(now - TimeDelta::hours(n));
    }
    let date = NaiveDate::parse_from_str(raw, "%Y-%m-%d").map_err(|_| bad())?;
    let from = date.and_hms_opt(0, 0, 0).ok_or_else(bad)?.and_utc();
    if from > now {
        return Err(super::ValidationError::new(
            "since",
            format!("{raw} is in the future"),
        ));
    }
    Ok(from)
}

#[cfg(test)]
mod tests;
