//! `GET /w/{slug}/usage`: what the workspace's agents cost and delivered over a period — totals, a daily
//! chart of cost and of tokens stacked by agent, model or runtime (server-rendered SVG with accessible
//! labels, and a table view of the same numbers), one line per group, and the monthly caps.

use maud::{Markup, html};

use crate::layout::{page, page_head, workspace_url};
use crate::partials::form::csrf;
use crate::partials::widgets::safe_color;
use crate::views::{FormErrors, Nav};

/// A link among alternatives (a period, a grouping).
#[derive(Debug, Clone, PartialEq)]
pub struct ChoiceView {
    pub label: String,
    pub href: String,
    pub active: bool,
}

/// One stacked series of the charts (an agent, a model, a runtime), with its colour.
#[derive(Debug, Clone, PartialEq)]
pub struct SeriesView {
    pub label: String,
    /// `#rrggbb`: an agent's avatar colour (the same on every page), else its name's.
    pub color: String,
}

/// One day's bar: the value of each series (index into the chart's series) with its label.
#[derive(Debug, Clone, PartialEq)]
pub struct BarView {
    /// `Dec 3`.
    pub label: String,
    pub total: f64,
    pub total_label: String,
    pub segments: Vec<(usize, f64, String)>,
}

/// A daily stacked bar chart.
#[derive(Debug, Clone, PartialEq)]
pub struct ChartView {
    /// `Cost per day (USD)`.
    pub title: String,
    /// The element id (`usage-cost`).
    pub id: String,
    pub bars: Vec<BarView>,
    /// The axis top, as people read it.
    pub max_label: String,
}

/// One line of the usage table.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct UsageRowView {
    pub label: String,
    /// The agent's page, for agent lines.
    pub href: Option<String>,
    /// The chart colour of this group (`#rrggbb`).
    pub color: Option<String>,
    pub runs: String,
    pub succeeded: String,
    pub failed: String,
    pub cancelled: String,
    pub over_budget: String,
    pub median: String,
    pub p90: String,
    pub input: String,
    pub output: String,
    pub cache: String,
    pub cost: String,
    /// Why the cost reads as it does (unpriced, local), when it needs saying.
    pub cost_title: Option<String>,
    pub per_run: String,
    pub per_delivered: String,
    pub tokens_per_sec: String,
}

/// A monthly cap line: the workspace or one agent, with this month's spend.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct CapRowView {
    pub label: String,
    /// The agent's name; empty for the workspace.
    pub agent: String,
    pub spent: String,
    pub usd_input: String,
    pub tokens_input: String,
    /// Percent of the cap used, when capped.
    pub used: Option<u32>,
}

/// The usage page.
#[derive(Debug, Clone, Default)]
pub struct UsagePageView {
    pub nav: Nav,
    /// `Last 7 days (Nov 27 – Dec 3, UTC)`.
    pub period_label: String,
    pub periods: Vec<ChoiceView>,
    pub groupings: Vec<ChoiceView>,
    /// The custom period's inputs.
    pub since_input: String,
    pub until_input: String,
    pub by: String,
    /// (label, value, title) of the headline figures.
    pub totals: Vec<(String, String, Option<String>)>,
    pub series: Vec<SeriesView>,
    pub charts: Vec<ChartView>,
    /// The group column's heading (`Agent`, `Model`, …).
    pub group_heading: String,
    pub rows: Vec<UsageRowView>,
    /// The month the caps count (`December 2026`).
    pub month: String,
    pub caps: Vec<CapRowView>,
    pub can_manage: bool,
    pub errors: FormErrors,
    pub saved: bool,
}

const WIDTH: f64 = 720.0;
const HEIGHT: f64 = 180.0;
const LEFT: f64 = 56.0;
const BOTTOM: f64 = 22.0;
const TOP: f64 = 10.0;

/// A stacked bar chart as SVG, labelled for screen readers (the table view below says the same).
fn chart(c: &ChartView, series: &[SeriesView]) -> Markup {
    let max = c.bars.iter().map(|b| b.total).fold(0.0_f64, f64::max);
    let n = c.bars.len().max(1) as f64;
    let slot = (WIDTH - LEFT) / n;
    let bar_w = (slot * 0.7).max(2.0);
    let plot_h = HEIGHT - BOTTOM - TOP;
    let every = (c.bars.len() / 10).max(1);
    html! {
        figure.usage-chart {
            figcaption #{ (c.id) "-title" } { (c.title) }
            svg role="img" aria-labelledby={ (c.id) "-title" } viewBox={ "0 0 " (WIDTH) " " (HEIGHT) }
                id=(c.id) {
                line.axis x1=(LEFT) y1=(TOP) x2=(LEFT) y2=(HEIGHT - BOTTOM) {}
                line.axis x1=(LEFT) y1=(HEIGHT - BOTTOM) x2=(WIDTH) y2=(HEIGHT - BOTTOM) {}
                text.tick x=(LEFT - 6.0) y=(TOP + 4.0) text-anchor="end" { (c.max_label) }
                text.tick x=(LEFT - 6.0) y=(HEIGHT - BOTTOM) text-anchor="end" { "0" }
                @for (i, bar) in c.bars.iter().enumerate() {
                    @let x = LEFT + slot * i as f64 + (slot - bar_w) / 2.0;
                    g {
                        title { (bar.label) ": " (bar.total_label) }
                        @let mut y = HEIGHT - BOTTOM;
                        @for (s, value, label) in &bar.segments {
                            @let h = if max > 0.0 { value / max * plot_h } else { 0.0 };
                            @let top = { y -= h; y };
                            @let name = series.get(*s).map_or("", |v| v.label.as_str());
                            rect style={ "--hue:" (safe_color(series.get(*s).map_or("", |v| v.color.as_str()))) }
                                x=(format!("{x:.1}")) y=(format!("{top:.1}")) width=(format!("{bar_w:.1}"))
                                height=(format!("{h:.1}")) {
                                title { (bar.label) " · " (name) ": " (label) }
                            }
                        }
                    }
                    @if i % every == 0 {
                        text.tick x=(format!("{:.1}", x + bar_w / 2.0)) y=(HEIGHT - 6.0) text-anchor="middle" { (bar.label) }
                    }
                }
            }
        }
    }
}

/// The same numbers as the charts, as a table.
fn chart_table(charts: &[ChartView], series: &[SeriesView]) -> Markup {
    html! {
        details.usage-table-view {
            summary { "Table view of the charts" }
            @for c in charts {
                table.data {
                    caption { (c.title) }
                    thead { tr {
                        th scope="col" { "Day" }
                        @for s in series { th scope="col" { (s.label) } }
                        th scope="col" { "Total" }
                    } }
                    tbody {
                        @for bar in &c.bars {
                            tr {
                                th scope="row" { (bar.label) }
                                @for (i, _) in series.iter().enumerate() {
                                    td.num {
                                        @match bar.segments.iter().find(|(s, _, _)| *s == i) {
                                            Some((_, _, label)) => (label),
                                            None => "–",
                                        }
                                    }
                                }
                                td.num { (bar.total_label) }
                            }
                        }
                    }
                }
            }
        }
    }
}

fn choices(label: &str, items: &[ChoiceView]) -> Markup {
    html! {
        nav.choices aria-label=(label) {
            @for c in items {
                a.chip href=(c.href) aria-current=[c.active.then_some("page")] { (c.label) }
            }
        }
    }
}

fn caps(v: &UsagePageView) -> Markup {
    let action = format!("{}/usage/caps", workspace_url(&v.nav));
    html! {
        section.panel aria-labelledby="caps-h" {
            h2 #caps-h { "Monthly caps · " (v.month) " (UTC)" }
            p.muted {
                "A run that would start over a cap is refused, with the reason on its issue and in the inbox of owners and admins; "
                "80% of a cap warns them once a month. Blank means no cap."
            }
            @if v.saved { p.notice role="status" { "Saved." } }
            @if let Some(messages) = v.errors.get("usd").or(v.errors.get("tokens")) {
                p.form-error role="alert" { @for m in messages { (m) " " } }
            }
            table.data {
                thead { tr {
                    th scope="col" { "Cap of" } th scope="col" { "Spent this month" } th scope="col" { "Used" }
                    th scope="col" { "USD / month" } th scope="col" { "Tokens / month" } th {}
                } }
                tbody {
                    @for c in &v.caps {
                        tr {
                            th scope="row" { (c.label) }
                            td.num { (c.spent) }
                            td.num {
                                @match c.used {
                                    Some(p) => {
                                        meter min="0" max="100" low="80" high="99" optimum="0" value=(p.min(100))
                                            title={ (p) "%" } { (p) "%" }
                                        " " (p) "%"
                                    },
                                    None => span.muted { "no cap" },
                                }
                            }
                            @if v.can_manage {
                                @let form = format!("cap-{}", if c.agent.is_empty() { "workspace" } else { c.agent.as_str() });
                                td { input type="text" inputmode="decimal" name="usd" form=(form) value=(c.usd_input)
                                    aria-label={ "USD cap of " (c.label) } size="8"; }
                                td { input type="text" inputmode="numeric" name="tokens" form=(form) value=(c.tokens_input)
                                    aria-label={ "Token cap of " (c.label) } size="10"; }
                                td {
                                    form #(form) method="post" action=(action) {
                                        (csrf(&v.nav.csrf))
                                        input type="hidden" name="agent" value=(c.agent);
                                        button.btn type="submit" { "Save" }
                                    }
                                }
                            } @else {
                                td.num { @if c.usd_input.is_empty() { "–" } @else { "$" (c.usd_input) } }
                                td.num { @if c.tokens_input.is_empty() { "–" } @else { (c.tokens_input) } }
                                td {}
                            }
                        }
                    }
                }
            }
        }
    }
}

/// The usage page.
pub fn usage(v: &UsagePageView) -> Markup {
    let base = workspace_url(&v.nav);
    let body = html! {
        (page_head("Usage", Some(v.period_label.as_str()), html! {}))
        section.usage-controls {
            (choices("Period", &v.periods))
            form.usage-custom method="get" action={ (base) "/usage" } {
                input type="hidden" name="by" value=(v.by);
                label { "From " input type="date" name="since" value=(v.since_input); }
                label { "to " input type="date" name="until" value=(v.until_input); }
                button.btn type="submit" { "Show" }
            }
            (choices("Group by", &v.groupings))
            a.usage-rates href={ (base) "/usage/rates" } { "Rates" }
        }
        dl.usage-totals {
            @for (label, value, title) in &v.totals {
                div { dt { (label) } dd title=[title.as_deref()] { (value) } }
            }
        }
        section.panel aria-labelledby="chart-h" {
            h2 #chart-h { "Per day" }
            ul.legend {
                @for s in &v.series {
                    li { span.swatch style={ "--hue:" (safe_color(&s.color)) } aria-hidden="true" {} (s.label) }
                }
            }
            @for c in &v.charts { (chart(c, &v.series)) }
            (chart_table(&v.charts, &v.series))
        }
        section.panel aria-labelledby="groups-h" {
            h2 #groups-h { "By " (v.group_heading.to_lowercase()) }
            @if v.rows.is_empty() {
                p.muted { "No runs in this period." }
            } @else {
                div.table-scroll {
                    table.data #usage-table {
                        thead { tr {
                            th scope="col" { (v.group_heading) }
                            th scope="col" { "Runs" } th scope="col" { "Succeeded" } th scope="col" { "Failed" }
                            th scope="col" { "Cancelled" } th scope="col" { "Over budget" }
                            th scope="col" { "Median" } th scope="col" { "p90" }
                            th scope="col" { "Input" } th scope="col" { "Output" } th scope="col" { "Cache" }
                            th scope="col" { "Cost" } th scope="col" { "Per run" } th scope="col" { "Per issue delivered" }
                            th scope="col" { "Tokens/s" }
                        } }
                        tbody {
                            @for r in &v.rows {
                                tr {
                                    th scope="row" {
                                        @if let Some(c) = &r.color { span.swatch style={ "--hue:" (safe_color(c)) } aria-hidden="true" {} }
                                        @match &r.href {
                                            Some(href) => a href=(href) { (r.label) },
                                            None => (r.label),
                                        }
                                    }
                                    td.num { (r.runs) } td.num { (r.succeeded) } td.num { (r.failed) }
                                    td.num { (r.cancelled) } td.num { (r.over_budget) }
                                    td.num { (r.median) } td.num { (r.p90) }
                                    td.num { (r.input) } td.num { (r.output) } td.num { (r.cache) }
                                    td.num title=[r.cost_title.as_deref()] { (r.cost) }
                                    td.num { (r.per_run) } td.num { (r.per_delivered) } td.num { (r.tokens_per_sec) }
                                }
                            }
                        }
                    }
                }
            }
        }
        (caps(v))
    };
    page("Usage", Some(&v.nav), body)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_chart_has_a_labelled_bar_per_day_and_a_table_of_the_same_numbers() {
        let v = UsagePageView {
            series: vec![SeriesView {
                label: "coder".into(),
                color: "#0e7490".into(),
            }],
            charts: vec![ChartView {
                title: "Cost per day (USD)".into(),
                id: "usage-cost".into(),
                bars: vec![
                    BarView {
                        label: "Dec 2".into(),
                        total: 0.0,
                        total_label: "$0.0000".into(),
                        segments: vec![],
                    },
                    BarView {
                        label: "Dec 3".into(),
                        total: 0.5,
                        total_label: "$0.5000".into(),
                        segments: vec![(0, 0.5, "$0.5000".into())],
                    },
                ],
                max_label: "$0.50".into(),
            }],
            ..Default::default()
        };
        let html = usage(&v).into_string();
        assert!(
            html.contains("role=\"img\" aria-labelledby=\"usage-cost-title\""),
            "{html}"
        );
        assert!(
            html.contains("<title>Dec 3 · coder: $0.5000</title>"),
            "{html}"
        );
        assert!(html.contains("<rect style=\"--hue:#0e7490\""), "{html}");
        assert!(
            html.contains("<th scope=\"row\">Dec 3</th><td class=\"num\">$0.5000</td>"),
            "{html}"
        );
        assert!(html.contains("No runs in this period."), "{html}");
    }
}
