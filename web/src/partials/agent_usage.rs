//! The usage section of an agent's page (issue 15): its spend this month against its monthly cap, a
//! sparkline of its daily cost over 30 days, and its run history, paged and filtered by status. Loaded
//! by htmx into the agent's page (`id="agent-usage"`); every link also works without JavaScript.

use maud::{Markup, html};

use crate::pages::ChoiceView;
use crate::partials::widgets::{RunPill, Timestamp};

/// One run of the history.
#[derive(Debug, Clone, PartialEq)]
pub struct AgentRunRowView {
    pub href: String,
    pub issue_key: String,
    pub issue_href: String,
    pub status: String,
    pub created_at: chrono::DateTime<chrono::Utc>,
    pub duration: String,
    pub tokens: String,
    pub cost: String,
    pub cost_title: Option<String>,
}

/// The section.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct AgentUsageView {
    /// `December 2026`.
    pub month: String,
    /// `$1.2500 · 31200 tokens`.
    pub spent: String,
    /// `$5.00 a month` / `no monthly cap`.
    pub cap: String,
    /// Percent of the cap used, when capped.
    pub used: Option<u32>,
    /// Daily cost over the last 30 days, oldest first: (day label, value, value label).
    pub sparkline: Vec<(String, f64, String)>,
    /// The status filters (All, Succeeded, Failed, …).
    pub filters: Vec<ChoiceView>,
    pub runs: Vec<AgentRunRowView>,
    /// The link that shows more runs, when there are more.
    pub more: Option<String>,
}

const W: f64 = 240.0;
const H: f64 = 36.0;

fn sparkline(points: &[(String, f64, String)]) -> Markup {
    let max = points.iter().map(|p| p.1).fold(0.0_f64, f64::max);
    let step = if points.len() > 1 {
        W / (points.len() - 1) as f64
    } else {
        W
    };
    let y = |v: f64| {
        if max > 0.0 {
            H - 2.0 - v / max * (H - 4.0)
        } else {
            H - 2.0
        }
    };
    let path: Vec<String> = points
        .iter()
        .enumerate()
        .map(|(i, p)| format!("{:.1},{:.1}", i as f64 * step, y(p.1)))
        .collect();
    let total: f64 = points.iter().map(|p| p.1).sum();
    html! {
        svg.sparkline role="img" viewBox={ "0 0 " (W) " " (H) } width=(W) height=(H)
            aria-label={ "Daily cost over the last " (points.len()) " days, $" (format!("{total:.4}")) " in all" } {
            polyline points=(path.join(" ")) fill="none" stroke="currentColor" stroke-width="1.5" {}
            @for (i, p) in points.iter().enumerate() {
                @if p.1 > 0.0 {
                    circle cx=(format!("{:.1}", i as f64 * step)) cy=(format!("{:.1}", y(p.1))) r="2" {
                        title { (p.0) ": " (p.2) }
                    }
                }
            }
        }
    }
}

/// The section, `id="agent-usage"`.
pub fn agent_usage(v: &AgentUsageView) -> Markup {
    html! {
        section.panel #agent-usage {
            h2 { "Usage" }
            dl.props.agent-spend {
                dt { "This month (" (v.month) ", UTC)" }
                dd #agent-spent { (v.spent) }
                dt { "Monthly cap" }
                dd {
                    (v.cap)
                    @if let Some(p) = v.used {
                        " · "
                        meter min="0" max="100" low="80" high="99" optimum="0" value=(p.min(100)) { (p) "%" }
                        " " (p) "% used"
                    }
                }
                dt { "Last 30 days" }
                dd { (sparkline(&v.sparkline)) }
            }
            h3 { "Runs" }
            nav.choices aria-label="Filter runs by status" {
                @for c in &v.filters {
                    a.chip href=(c.href) hx-get=(c.href) hx-target="#agent-usage" hx-swap="outerHTML"
                        aria-current=[c.active.then_some("page")] { (c.label) }
                }
            }
            @if v.runs.is_empty() {
                p.muted { "No runs." }
            } @else {
                div.table-scroll {
                    table.data #agent-runs {
                        thead { tr {
                            th scope="col" { "Run" } th scope="col" { "Issue" } th scope="col" { "Status" }
                            th scope="col" { "Queued" } th scope="col" { "Duration" } th scope="col" { "Tokens" }
                            th scope="col" { "Cost" }
                        } }
                        tbody {
                            @for r in &v.runs {
                                tr {
                                    td { a href=(r.href) { "Run" } }
                                    td { a href=(r.issue_href) { (r.issue_key) } }
                                    td { (RunPill(&r.status)) }
                                    td { (Timestamp(r.created_at)) }
                                    td.num { (r.duration) }
                                    td.num { (r.tokens) }
                                    td.num title=[r.cost_title.as_deref()] { (r.cost) }
                                }
                            }
                        }
                    }
                }
            }
            @if let Some(more) = &v.more {
                p { a href=(more) hx-get=(more) hx-target="#agent-usage" hx-swap="outerHTML" { "Show more runs" } }
            }
        }
    }
}
