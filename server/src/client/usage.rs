//! `muster usage`: what the workspace's runs cost over a period, grouped by agent, model, runtime or
//! issue (the Usage page), as a table, the server's JSON (`--json`) or CSV (`--csv`).

use clap::Args;
use serde::Deserialize;
use serde_json::Value;

use super::output::{clean, print_json, table};
use super::{Remote, shape};

/// `muster usage` options.
#[derive(Debug, Args)]
pub struct UsageOptions {
    /// The period: today, a number of days or hours (7d, 30d, 12h) or a start date (2026-11-01).
    #[arg(long, default_value = "7d")]
    pub since: String,
    /// The last day of a custom period (2026-11-30, included) [default: now].
    #[arg(long)]
    pub until: Option<String>,
    /// Group by agent, model, runtime or issue.
    #[arg(long, default_value = "agent", value_parser = ["agent", "model", "runtime", "issue"])]
    pub by: String,
    /// Only this agent's runs.
    #[arg(long)]
    pub agent: Option<String>,
    /// Print CSV (one line per group, a header first) instead of a table.
    #[arg(long)]
    pub csv: bool,
}

#[derive(Deserialize)]
struct Report {
    from: String,
    to: String,
    by: String,
    total: Totals,
    groups: Vec<Group>,
}

#[derive(Deserialize)]
struct Totals {
    runs: i64,
    input_tokens: i64,
    output_tokens: i64,
    cache_read_tokens: i64,
    cache_write_tokens: i64,
    tokens: i64,
    cost_usd: f64,
    unpriced_runs: i64,
    cost: String,
}

#[derive(Deserialize)]
struct Group {
    key: String,
    label: String,
    #[serde(flatten)]
    totals: Totals,
    succeeded: i64,
    failed: i64,
    cancelled: i64,
    over_budget: i64,
    live: i64,
    success_rate: Option<f64>,
    median_secs: Option<f64>,
    p90_secs: Option<f64>,
    cost_per_run_usd: Option<f64>,
    delivered_issues: i64,
    cost_per_delivered_usd: Option<f64>,
    tokens_per_sec: Option<f64>,
}

/// Runs `muster usage`.
pub async fn run(remote: &Remote, options: UsageOptions) -> anyhow::Result<()> {
    let client = remote.connect()?;
    let mut query = vec![("since", options.since.clone()), ("by", options.by.clone())];
    if let Some(until) = &options.until {
        query.push(("until", until.clone()));
    }
    if let Some(agent) = &options.agent {
        query.push(("agent", agent.clone()));
    }
    let path = format!("/api/v1/usage?{}", serde_urlencoded::to_string(&query)?);
    let answer: Value = client.get(&path).await?;
    if remote.json {
        return print_json(&answer);
    }
    let report: Report = shape(&answer)?;
    if options.csv {
        print!("{}", csv(&report));
        return Ok(());
    }
    println!("{} to {} (UTC), by {}", report.from, report.to, report.by);
    let t = &report.total;
    println!(
        "total: {} runs, {} tokens ({} in, {} out, {} cache read, {} cache write), {}",
        t.runs,
        t.tokens,
        t.input_tokens,
        t.output_tokens,
        t.cache_read_tokens,
        t.cache_write_tokens,
        t.cost
    );
    if report.groups.is_empty() {
        println!("no runs in this period");
        return Ok(());
    }
    let opt = |v: Option<f64>, f: &dyn Fn(f64) -> String| v.map_or_else(|| "-".to_owned(), f);
    let rows: Vec<Vec<String>> = report
        .groups
        .iter()
        .map(|g| {
            vec![
                g.label.clone(),
                g.totals.runs.to_string(),
                opt(g.success_rate, &|r| format!("{:.0}%", r * 100.0)),
                format!("{}/{}/{}", g.failed, g.cancelled, g.over_budget),
                g.totals.input_tokens.to_string(),
                g.totals.output_tokens.to_string(),
                (g.totals.cache_read_tokens + g.totals.cache_write_tokens).to_string(),
                g.totals.cost.clone(),
                opt(g.cost_per_run_usd, &|c| format!("${c:.4}")),
                opt(g.median_secs, &|s| format!("{s:.0}s")),
                opt(g.p90_secs, &|s| format!("{s:.0}s")),
            ]
        })
        .collect();
    print!(
        "{}",
        table(
            &[
                "GROUP",
                "RUNS",
                "OK",
                "FAIL/CANC/BUDGET",
                "IN",
                "OUT",
                "CACHE",
                "COST",
                "PER RUN",
                "MEDIAN",
                "P90",
            ],
            &rows,
        )
    );
    Ok(())
}

/// One CSV field: quoted when it holds a comma, a quote or a line break (RFC 4180).
fn field(text: &str) -> String {
    let text = clean(text);
    if text.contains([',', '"']) {
        format!("\"{}\"", text.replace('"', "\"\""))
    } else {
        text
    }
}

fn num(v: Option<f64>) -> String {
    v.map(|v| v.to_string()).unwrap_or_default()
}

/// The groups as CSV, a header line first; amounts unrounded.
fn csv(report: &Report) -> String {
    let mut out = String::from(
        "by,key,label,runs,succeeded,failed,cancelled,over_budget,live,input_tokens,output_tokens,\
         cache_read_tokens,cache_write_tokens,tokens,cost_usd,unpriced_runs,median_secs,p90_secs,\
         delivered_issues,cost_per_delivered_usd,tokens_per_sec\n",
    );
    for g in &report.groups {
        let t = &g.totals;
        let cells = [
            field(&report.by),
            field(&g.key),
            field(&g.label),
            t.runs.to_string(),
            g.succeeded.to_string(),
            g.failed.to_string(),
            g.cancelled.to_string(),
            g.over_budget.to_string(),
            g.live.to_string(),
            t.input_tokens.to_string(),
            t.output_tokens.to_string(),
            t.cache_read_tokens.to_string(),
            t.cache_write_tokens.to_string(),
            t.tokens.to_string(),
            t.cost_usd.to_string(),
            t.unpriced_runs.to_string(),
            num(g.median_secs),
            num(g.p90_secs),
            g.delivered_issues.to_string(),
            num(g.cost_per_delivered_usd),
            num(g.tokens_per_sec),
        ];
        out.push_str(&cells.join(","));
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::field;

    #[test]
    fn csv_fields_are_quoted_only_when_needed() {
        assert_eq!(field("coder"), "coder");
        assert_eq!(field("a,b"), "\"a,b\"");
        assert_eq!(field("say \"hi\""), "\"say \"\"hi\"\"\"");
        assert_eq!(field("two\nlines"), "two lines");
    }
}
