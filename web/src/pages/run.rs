//! `GET /w/{slug}/runs/{id}`: one agent run — header (status, stall banner, failure, cancel and retry),
//! live counters, the log as a readable timeline, and the diff.
//!
//! Stable DOM ids, so the live socket can change the page with out-of-band swaps: `run-{id}-header`,
//! `run-{id}-counters`, `run-{id}-log` (the timeline; new entries are appended `beforeend`),
//! `run-{id}-cursor` (`data-seq`: the last seq on the page, which a reconnecting socket resumes from),
//! `run-{id}-diff`, and one result slot per tool call (`slot_id`).

use maud::{Markup, PreEscaped, html};

use crate::layout::page;
use crate::partials::form::csrf;
use crate::partials::widgets::{PersonChip, RunPill, Timestamp};
use crate::views::{
    FailureView, LongTextView, RunCountersView, RunDiffView, RunHeaderView, RunItemKind,
    RunItemView, RunLiveFrame, RunPageView, ToolResultView,
};

/// The run page. While the run is live, the page sits inside the `ws` extension's connection
/// (`ws-connect` = `live_url`, which resumes after `last_seq`).
pub fn run(v: &RunPageView) -> Markup {
    let h = &v.header;
    let title = format!("Run of {} · {}", h.issue_key, h.issue_title);
    let content = html! {
        (header(h, &v.nav.csrf, false))
        (crate::partials::run_origin::run_origin(&v.origin))
        (counters(&h.id, &v.counters, false))
        section.run-log-panel aria-labelledby="run-log-h" {
            h2 #run-log-h { "Log" }
            ol.run-log id={ "run-" (h.id) "-log" } aria-live="polite" {
                @for item in &v.items { (timeline_item(item, false)) }
            }
            @if v.items.is_empty() {
                p.muted.run-log-empty { "Nothing logged yet." }
            }
            (cursor(&h.id, v.last_seq, false))
        }
        (diff(&h.id, &v.diff, false))
    };
    let body = html! {
        nav.breadcrumbs aria-label="Breadcrumb" {
            a href={ "/w/" (v.nav.workspace_slug) } { "Board" }
            span aria-hidden="true" { "/" }
            a href=(h.issue_url) { (h.issue_key) }
            span aria-hidden="true" { "/" }
            span { "Run " (h.number.map_or_else(|| h.id.chars().take(8).collect::<String>(), |n| n.to_string())) }
        }
        @match &v.live_url {
            Some(url) => div.run-page.run-live hx-ext="ws" ws-connect=(url) data-run=(h.id) { (content) },
            None => div.run-page data-run=(h.id) { (content) },
        }
    };
    page(&title, Some(&v.nav), body)
}

/// One live push as out-of-band swaps: appended timeline entries, results into their calls, entries
/// re-rendered in place (a streamed answer's block that grew), replaced counters, header and diff, and
/// the moved cursor. `csrf` goes into the header's forms.
pub fn run_live_frame(f: &RunLiveFrame, csrf: &str) -> Markup {
    let log = format!("beforeend:#run-{}-log", f.run_id);
    html! {
        @if !f.items.is_empty() {
            div hx-swap-oob=(log) {
                @for item in &f.items { (timeline_item(item, false)) }
            }
        }
        @for item in &f.replaced { (timeline_item(item, true)) }
        @for (slot, result) in &f.results { (result_slot(slot, Some(result), true)) }
        @if let Some(c) = &f.counters { (counters(&f.run_id, c, true)) }
        @if let Some(h) = &f.header { (header(h, csrf, true)) }
        @if let Some(d) = &f.diff { (diff(&f.run_id, d, true)) }
        (cursor(&f.run_id, f.last_seq, true))
    }
}

fn oob(on: bool) -> Option<&'static str> {
    on.then_some("outerHTML")
}

fn cursor(id: &str, seq: i64, swap: bool) -> Markup {
    html! {
        span.run-cursor id={ "run-" (id) "-cursor" } data-seq=(seq) hidden hx-swap-oob=[oob(swap)] {}
    }
}

fn header(h: &RunHeaderView, token: &str, swap: bool) -> Markup {
    html! {
        header.run-head id={ "run-" (h.id) "-header" } hx-swap-oob=[oob(swap)] data-status=(h.status) {
            div.run-title {
                div {
                    a.issue-key href=(h.issue_url) { (h.issue_key) }
                    h1 { a.run-issue-link href=(h.issue_url) { (h.issue_title) } }
                }
                div.run-actions {
                    @if let Some(url) = &h.cancel_url {
                        form.inline-form.run-cancel method="post" action=(url)
                            data-confirm="Stop this run? The agent is interrupted, then terminated." {
                            (csrf(token))
                            button.btn.btn-danger type="submit" { "Cancel run" }
                        }
                    }
                    @if let Some(url) = &h.open_pull_url {
                        form.inline-form.run-open-pull method="post" action=(url) {
                            (csrf(token))
                            button.btn type="submit" { "Open pull request" }
                        }
                    }
                    @if let Some(url) = &h.retry_url {
                        form.inline-form.run-retry method="post" action=(url) {
                            (csrf(token))
                            button.btn.btn-primary type="submit" { "Retry" }
                        }
                    }
                }
            }
            div.run-meta {
                span.run-status { (RunPill(&h.status)) }
                @if let Some(a) = &h.agent { (PersonChip(a)) }
                @if let Some(n) = h.number { span.run-number { "Run " (n) } }
                @if h.attempt > 1 || h.number.is_none() { span.muted { "attempt " (h.attempt) } }
                @if let Some(r) = &h.runner { span.muted.run-runner { "on runner " strong { (r) } } }
                @if let Some(b) = &h.branch { code.run-branch { (b) } }
                @if let Some(c) = &h.head_commit {
                    code.run-commit title=(c) { (c.get(..12).unwrap_or(c)) }
                }
                @if let Some(t) = h.created_at { span.muted { "queued " (Timestamp(t)) } }
            }
            @if let Some(why) = &h.waiting {
                p.run-waiting-banner.muted role="status" { (why) ". " a href="../runners" { "See the runners" } "." }
            }
            @if let Some(t) = h.stalled_at {
                div.banner.banner-warn.run-stalled role="status" {
                    strong { "Stalled. " }
                    "No output since " (Timestamp(t)) ". The run is stopped if it stays silent for another stall timeout."
                }
            }
            @if let Some(why) = &h.failure {
                div.banner.banner-error.run-failure role="status" {
                    strong { "Did not succeed. " }
                    (failure_text(why))
                }
            }
        }
    }
}

/// A failure's text ("what happened: what to do", with a link to the agent's settings when the fix is
/// there) and its raw diagnostic behind a "details" toggle.
pub(crate) fn failure_text(f: &FailureView) -> Markup {
    html! {
        span.failure-what { (f.what) } ": "
        span.failure-todo { (f.to_do) } "."
        @if let Some(url) = &f.settings_url {
            " " a.failure-settings href=(url) { "Open the agent's settings" }
        }
        (diagnostic_details(&f.details))
    }
}

/// A raw diagnostic behind a "details" toggle.
pub(crate) fn diagnostic_details(details: &str) -> Markup {
    html! {
        details.failure-details {
            summary { "details" }
            pre.failure-diagnostic { (details) }
        }
    }
}

fn counters(id: &str, c: &RunCountersView, swap: bool) -> Markup {
    let started = c
        .started_at
        .map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::Millis, true));
    let finished = c
        .finished_at
        .map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::Millis, true));
    html! {
        dl.run-counters id={ "run-" (id) "-counters" } hx-swap-oob=[oob(swap)] {
            div { dt { "Input" } dd.counter-input { (c.input_tokens) } }
            div { dt { "Output" } dd.counter-output { (c.output_tokens) } }
            div { dt { "Cache" } dd.counter-cache { (c.cache_tokens) } }
            div { dt { "Cost" } dd.counter-cost title=[c.cost_title.as_deref()] { (c.cost) } }
            @if let Some(speed) = &c.tokens_per_second {
                div { dt { "Tokens/s" } dd.counter-speed { (speed) } }
            }
            div {
                dt { "Elapsed" }
                dd.counter-elapsed.elapsed data-started=[started] data-finished=[finished] { (c.elapsed) }
            }
        }
    }
}

/// One timeline entry, `id="run-entry-{seq}"`; `swap` replaces the entry of that id already on the page.
fn timeline_item(item: &RunItemView, swap: bool) -> Markup {
    let (class, body) = match &item.kind {
        RunItemKind::Started {
            session_id,
            model,
            skills,
        } => (
            "ev ev-started",
            html! {
                span.ev-label { "Session started" }
                @if let Some(m) = model { " · " code { (m) } }
                span.muted.ev-session title="Session id" { " · " (session_id) }
                @if !skills.is_empty() {
                    div.ev-skills {
                        span.muted { "Skills: " }
                        @for (i, s) in skills.iter().enumerate() {
                            @if i > 0 { ", " }
                            code { (s) }
                        }
                    }
                }
            },
        ),
        RunItemKind::Text { html } => (
            "ev ev-text",
            // Rendered from markdown and sanitised (ammonia) by the server.
            html! { div.prose { (PreEscaped(html)) } },
        ),
        RunItemKind::Thinking { text } => (
            "ev ev-thinking",
            html! { details { summary { "Thinking" } div.thinking-text { (text) } } },
        ),
        RunItemKind::ToolCall {
            slot_id,
            name,
            input,
            result,
        } => (
            "ev ev-tool",
            html! {
                div.ev-head { span.ev-label { "Tool" } code.tool-name { (name) } }
                (long_text(input, "tool-input"))
                (result_slot(slot_id, result.as_ref(), false))
            },
        ),
        RunItemKind::ToolResult { result } => (
            "ev ev-tool ev-orphan",
            html! {
                div.ev-head { span.ev-label { "Tool result" } }
                (tool_result(result))
            },
        ),
        RunItemKind::Command {
            cmd,
            exit_code,
            output,
        } => (
            "ev ev-command",
            html! {
                div.ev-head {
                    code.cmd { "$ " (cmd) }
                    @match exit_code {
                        Some(0) => span.exit.exit-ok { "exit 0" },
                        Some(code) => span.exit.exit-bad { "exit " (code) },
                        None => {},
                    }
                }
                @if !output.shown.is_empty() { (long_text(output, "cmd-output")) }
            },
        ),
        RunItemKind::FileChange { path, change } => (
            "ev ev-file",
            html! {
                span class={ "file-change file-" (file_class(change)) } { (file_label(change)) }
                " " code { (path) }
            },
        ),
        RunItemKind::Error { message } => (
            "ev ev-error",
            html! { span.ev-label { "Error" } div.error-text { (message) } },
        ),
        RunItemKind::Egress { allowed, line } => (
            if *allowed {
                "ev ev-egress ev-ok"
            } else {
                "ev ev-egress ev-bad"
            },
            html! { span.ev-label { "Egress" } " " code.egress-line { (line) } },
        ),
        RunItemKind::Sandbox { lines } => (
            "ev ev-sandbox",
            // One line (the mode), the rules behind it: live output starts near the top of the page.
            html! {
                details.sandbox-details {
                    summary {
                        span.ev-label { "Sandbox" } " "
                        span.sandbox-mode { (lines.first().map_or("", String::as_str)) }
                        @if lines.len() > 1 { span.muted { " · " (lines.len() - 1) " rules" } }
                    }
                    pre.sandbox-rules { @for l in lines.iter().skip(1) { (l) "\n" } }
                }
            },
        ),
        RunItemKind::Check {
            ok,
            command,
            ending,
            duration,
            counts,
            tail,
        } => (
            if *ok {
                "ev ev-check ev-ok"
            } else {
                "ev ev-check ev-bad"
            },
            html! {
                div.ev-head {
                    span.ev-label { "Check" }
                    span class={ "check-badge " (if *ok { "check-pass" } else { "check-fail" }) } {
                        @if *ok { "passed" } @else { "failed" }
                    }
                    code.cmd { (command) }
                    span.check-ending { (ending) }
                    @if let Some(d) = duration { span.muted { (d) } }
                    @if let Some(c) = counts { span.check-counts { (c) } }
                }
                @if !tail.trim().is_empty() {
                    details.check-tail {
                        summary { "Last lines of its output" }
                        pre { (tail) }
                    }
                }
            },
        ),
        RunItemKind::Session { resumed, text } => (
            "ev ev-session",
            html! {
                div.ev-head {
                    span.ev-label { @if *resumed { "Session resumed" } @else { "Fresh session" } }
                }
                div { (text) }
            },
        ),
        RunItemKind::Stderr { line } => ("ev ev-stderr", html! { (line) }),
        RunItemKind::Raw { line } => ("ev ev-raw", html! { (line) }),
        RunItemKind::Status { status } => (
            "ev ev-status",
            html! {
                @if status == "stalled" {
                    "Stalled: no output for the agent's stall timeout."
                } @else {
                    "Output resumed."
                }
            },
        ),
        RunItemKind::Finished { ok, summary_html } => (
            match (*ok, summary_html.is_some()) {
                (true, _) => "ev ev-finished ev-ok",
                (false, true) => "ev ev-finished ev-bad",
                // A turn that ended with no answer and no reason (a cancelled one): the run's status
                // says what happened, not a red line.
                (false, false) => "ev ev-finished",
            },
            html! {
                div.ev-head { span.ev-label {
                    @if *ok { "Finished" }
                    @else if summary_html.is_some() { "Finished with a failure" }
                    @else { "Ended without an answer" }
                } }
                @if let Some(s) = summary_html {
                    // Rendered from markdown and sanitised (ammonia) by the server.
                    div.prose.summary { (PreEscaped(s)) }
                }
            },
        ),
    };
    html! {
        li class=(class) id={ "run-entry-" (item.seq) } data-seq=(item.seq) hx-swap-oob=[oob(swap)] {
            (body)
        }
    }
}

/// The slot a tool call's result lives in; pending until the result arrives.
fn result_slot(slot: &str, result: Option<&ToolResultView>, swap: bool) -> Markup {
    html! {
        div.tool-result-slot id=(slot) hx-swap-oob=[oob(swap)] {
            @match result {
                Some(r) => (tool_result(r)),
                None => span.muted.pending { "waiting for the result…" },
            }
        }
    }
}

fn tool_result(r: &ToolResultView) -> Markup {
    let class = if r.is_error {
        "tool-result tool-error"
    } else {
        "tool-result"
    };
    html! {
        div class=(class) {
            @if r.is_error { span.ev-label { "Tool error" } }
            @match r.exit_code {
                Some(0) => span.exit.exit-ok { "exit 0" },
                Some(code) => span.exit.exit-bad { "exit " (code) },
                None => {},
            }
            (long_text(&r.output, "tool-output"))
        }
    }
}

/// A possibly long text: its start in a `<pre>`, the whole of it behind "show all".
fn long_text(t: &LongTextView, class: &str) -> Markup {
    html! {
        @match &t.full {
            None => pre class=(class) { (t.shown) },
            Some(full) => {
                pre class=(class) { (t.shown) "\n…" }
                details.show-all {
                    summary { "Show all " (t.lines) " lines" }
                    pre class=(class) { (full) }
                }
            }
        }
    }
}

fn file_class(change: &str) -> &str {
    match change {
        "add" => "add",
        "delete" => "delete",
        _ => "update",
    }
}

fn file_label(change: &str) -> &str {
    match change {
        "add" => "added",
        "delete" => "deleted",
        _ => "changed",
    }
}

fn diff(id: &str, d: &RunDiffView, swap: bool) -> Markup {
    html! {
        section.run-diff id={ "run-" (id) "-diff" } hx-swap-oob=[oob(swap)] {
            @if d.stat.is_some() || !d.lines.is_empty() {
                h2 { "Changes" }
                @if let Some(stat) = &d.stat { pre.diff-stat { (stat) } }
                @if !d.lines.is_empty() {
                    pre.diff {
                        @for l in &d.lines {
                            span class={ "diff-line diff-" (diff_class(&l.kind)) } { (l.text) "\n" }
                        }
                    }
                }
                @if d.omitted > 0 {
                    p.muted { (d.omitted) " more lines not shown." }
                }
            }
        }
    }
}

fn diff_class(kind: &str) -> &str {
    match kind {
        "add" => "add",
        "del" => "del",
        "hunk" => "hunk",
        "meta" => "meta",
        _ => "ctx",
    }
}

#[cfg(test)]
mod tests;
