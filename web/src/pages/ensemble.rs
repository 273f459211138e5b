//! `GET /w/{slug}/issues/{key}/ensemble`: an ensemble run's candidates side by side — state, check gate,
//! live log tail, diff stat and per-file diff, tokens, cost, time, review score and reasons — with the
//! budget bar stacked by candidate, the recommendation and its evidence, and Choose.
//!
//! While candidates or the reviewer are at work, `#ensemble` re-reads itself every 2 s (htmx), so the
//! page follows the run without a socket of its own; the candidates' full live logs are their run pages.

use maud::{Markup, html};

use crate::layout::page;
use crate::partials::form::csrf;
use crate::partials::widgets::safe_color;
use crate::views::{CandidateColumnView, EnsemblePageView};

/// The ensemble page.
pub fn ensemble(v: &EnsemblePageView) -> Markup {
    let title = format!("Ensemble on {} · {}", v.issue_key, v.issue_title);
    let body = html! {
        nav.breadcrumbs aria-label="Breadcrumb" {
            a href={ "/w/" (v.nav.workspace_slug) } { "Board" }
            span aria-hidden="true" { "/" }
            a href=(v.issue_url) { (v.issue_key) }
            span aria-hidden="true" { "/" }
            span { "Ensemble " (v.ensemble) " r" (v.number) }
        }
        (body(v))
    };
    page(&title, Some(&v.nav), body)
}

/// The part that refreshes itself.
pub fn body(v: &EnsemblePageView) -> Markup {
    html! {
        @if v.live {
            div #ensemble .ensemble data-status=(v.status) hx-get=(v.self_url) hx-trigger="every 2s"
                hx-select="#ensemble" hx-swap="outerHTML" { (inner(v)) }
        } @else {
            div #ensemble .ensemble data-status=(v.status) { (inner(v)) }
        }
    }
}

fn inner(v: &EnsemblePageView) -> Markup {
    html! {
        header.ensemble-head {
            h1 { (v.issue_key) " · " (v.issue_title) }
            p.ensemble-meta {
                span.pill.(format!("ens-{}", v.status)) #ensemble-status { (v.status) }
                " ensemble " strong { (v.ensemble) } " r" (v.number)
                " · policy " code { (v.early_stop) }
                " · check " @match &v.check { Some(c) => code { (c) }, None => span.muted { "none (by opinion only)" } }
                @if let Some(base) = &v.base { " · from " code { (base) } }
            }
            @if !v.others.is_empty() {
                p.muted { "Other runs: " @for (label, url) in &v.others { a href=(url) { (label) } " " } }
            }
        }
        section.panel.ensemble-budget aria-labelledby="ens-budget-h" {
            h2 #ens-budget-h { "Spend" }
            p #ensemble-spent { (v.spent_label)
                @if let Some(single) = &v.single_agent { span.muted { " · one agent alone typically " (single) } }
            }
            @if !v.budget_parts.is_empty() {
                div.budget-bar role="img" aria-label={ "Spend by candidate: " (v.spent_label) } {
                    @for p in &v.budget_parts {
                        span.budget-part style={ "--hue:" (safe_color(&p.color)) ";width:" (format!("{:.1}", p.fraction * 100.0)) "%" }
                            title={ (p.agent) ": " (p.label) } {}
                    }
                }
                ul.budget-legend {
                    @for p in &v.budget_parts {
                        li { span.swatch style={ "--hue:" (safe_color(&p.color)) } aria-hidden="true" {} (p.agent) ": " (p.label) }
                    }
                }
            }
            @if let Some(why) = &v.stop_reason { p.ensemble-stop #ensemble-stop { (why) } }
        }
        section.panel.ensemble-verdict aria-labelledby="ens-verdict-h" {
            h2 #ens-verdict-h { "Evidence" }
            @match v.review.state.as_str() {
                "pending" => p #review-state { "The blind review is under way"
                    @if let Some(url) = &v.review.review_run_url { " (" a href=(url) { "reviewer's run" } ")" } "." },
                "verdict" => p #review-state { "Blind review: candidate " strong { (v.review.best_label.clone().unwrap_or_default()) } " judged best"
                    @if let Some(url) = &v.review.review_run_url { " (" a href=(url) { "reviewer's run" } ")" } "." },
                "invalid" => p.error #review-state { strong { "Invalid verdict: " } (v.review.message.clone().unwrap_or_default())
                    " — shown as given, not guessed"
                    @if let Some(url) = &v.review.review_run_url { " (" a href=(url) { "reviewer's run" } ")" } "." },
                "no_answer" => p.error #review-state { "No review: " (v.review.message.clone().unwrap_or_default()) },
                "waiting" => p.muted #review-state { "Candidates at work: the checks decide first; a blind review follows only if they do not." },
                _ => p.muted #review-state {
                    @match v.recommendation.as_ref().map(|r| r.decided_by.as_str()) {
                        Some("check") => "No review was needed: the check decided.",
                        _ => "No blind review is set for this ensemble.",
                    }
                },
            }
            @if let Some(r) = &v.recommendation {
                p.recommendation #recommendation {
                    "Recommended: " strong { (r.agent) } " — " (r.why)
                    @match r.decided_by.as_str() {
                        "review" => { " " span.pill.pill-muted { "by opinion only" } }
                        "cost" => { " " span.pill.pill-muted { "by cost and size only" } }
                        _ => {}
                    }
                }
            }
            @if let Some(m) = &v.merged_commit { p #merged { "Merged into the base branch as " code { (m) } "." } }
            @for (field, messages) in &v.errors { @for m in messages { p.error role="alert" { (field) ": " (m) } } }
        }
        div.candidates #candidates style={ "--columns:" (v.candidates.len().max(1)) } {
            @for c in &v.candidates { (column(v, c)) }
        }
    }
}

fn column(v: &EnsemblePageView, c: &CandidateColumnView) -> Markup {
    html! {
        article.candidate style={ "--hue:" (safe_color(&c.color)) } data-agent=(c.agent) data-gate=(c.gate)
            aria-labelledby={ "cand-" (c.agent) } {
            header {
                h3 #{ "cand-" (c.agent) } { (c.agent) " " span.muted { (c.runtime) } }
                p {
                    span.pill.(format!("run-{}", c.status)) { (c.status) }
                    @if c.recommended { " " span.pill.pill-ok { "recommended" } }
                    @if c.chosen { " " span.pill.pill-ok { "chosen" } }
                    " " a href=(c.run_url) { "log" }
                }
                @if let Some(f) = &c.failure { p.error.small { (f) } }
            }
            div.gate.(format!("gate-{}", c.gate)) { strong { "Check: " } (c.gate_label) }
            @if let Some(tail) = &c.check_tail {
                details.check-tail { summary { "check output" } pre { (tail) } }
            }
            dl.candidate-figures {
                dt { "Tokens" } dd { (c.tokens) }
                dt { "Cost" } dd { (c.cost) }
                @if let Some(d) = &c.duration { dt { "Time" } dd { (d) } }
                @if let Some(stat) = &c.diff_stat { dt { "Diff" } dd { (stat.lines().last().unwrap_or_default().trim()) } }
                @if let Some(b) = &c.branch { dt { "Branch" } dd { code { (b) } } }
            }
            @if let Some(label) = &c.review_label {
                div.review {
                    strong { "Review (as " (label) "): " }
                    @match c.review_score { Some(s) => { (s) "/10" }, None => span.muted { "no score" } }
                    @if !c.review_reasons.is_empty() { ul { @for r in &c.review_reasons { li { (r) } } } }
                }
            }
            @if !c.log_tail.is_empty() {
                details.log-tail open[v.live] { summary { "latest log lines" } pre { @for l in &c.log_tail { (l) "\n" } } }
            }
            @if !c.files.is_empty() {
                div.diff-files {
                    @for f in &c.files {
                        details.diff-file { summary { code { (f.path) } } pre.diff { (f.patch) } }
                    }
                }
            }
            @if let Some(url) = &v.choose_url {
                form.choose method="post" action=(url) {
                    (csrf(&v.nav.csrf))
                    input type="hidden" name="candidate" value=(c.choose_value);
                    @if v.can_merge {
                        label { input type="checkbox" name="merge" value="1"; " merge into the base branch" }
                    }
                    button.btn.btn-primary type="submit" { "Choose " (c.agent) }
                }
            }
        }
    }
}
