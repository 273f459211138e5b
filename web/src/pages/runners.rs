//! `GET /w/{slug}/runners`: where runs execute. Every member sees the runners (online or not, what they
//! reported, what they run now); owners and admins also manage the runner tokens remote runners connect
//! with, a new one's secret shown once.

use super::tokens::token_row;
use maud::{Markup, html};

use crate::layout::{page, page_head, workspace_url};
use crate::partials::form::{Form, csrf};
use crate::partials::widgets::Timestamp;
use crate::views::{RunnerRowView, RunnersView};

/// The runners page.
pub fn runners(v: &RunnersView) -> Markup {
    let body = html! {
        (page_head("Runners", Some("Where agent runs execute: this server's own runner and any muster runner connected with a runner token."), html! {}))
        div.panel.table-panel {
            @if v.runners.is_empty() {
                p.empty-state #no-runners { "No runner has connected yet." }
            } @else {
                table.list #runners {
                    thead { tr {
                        th scope="col" { "Runner" } th scope="col" { "Version" } th scope="col" { "CLIs" }
                        th scope="col" { "Local models" } th scope="col" { "Live runs" }
                        th scope="col" { "Last heartbeat" }
                    } }
                    tbody { @for r in &v.runners { (runner_row(r)) } }
                }
            }
        }
        @if v.can_manage { (tokens(v)) }
    };
    page("Runners", Some(&v.nav), body)
}

fn runner_row(r: &RunnerRowView) -> Markup {
    let (state, class) = match (r.revoked, r.online) {
        (true, _) => ("revoked", "runner-revoked"),
        (false, true) => ("online", "runner-online"),
        (false, false) => ("offline", "runner-offline"),
    };
    html! {
        tr.runner-row.(class) data-runner=(r.name) {
            td {
                span.runner-dot.(class) title=(state) aria-hidden="true" {}
                strong { (r.name) }
                " " span.runner-state { (state) }
                @if r.embedded { " " span.pill.pill-muted { "embedded" } }
            }
            td { code { (r.version) } }
            td {
                @if r.embedded && r.clis.is_empty() {
                    a href="runtimes" { "this server's" }
                } @else if r.clis.is_empty() {
                    span.muted { "none" }
                } @else {
                    @for c in &r.clis { span.pill { (c) } " " }
                }
            }
            td {
                @if r.local_models.is_empty() { span.muted { "none" } }
                @for m in &r.local_models { div { (m) } }
            }
            td {
                @if r.live_runs.is_empty() { span.muted { "0" } }
                @for (href, label) in &r.live_runs { a href=(href) { (label) } " " }
            }
            td { (r.last_heartbeat_ago) br; span.muted { (Timestamp(r.last_heartbeat_at)) } }
        }
    }
}

fn tokens(v: &RunnersView) -> Markup {
    let f = Form::new("runner-token", &v.errors);
    html! {
        @if let Some(secret) = &v.new_token { (new_token_box(v, secret)) }
        section.panel aria-labelledby="new-runner-token-h" {
            h2 #new-runner-token-h { "Create a runner token" }
            form.inline-create method="post" action={ (workspace_url(&v.nav)) "/runners/tokens" } {
                (csrf(&v.nav.csrf))
                (f.form_errors())
                (f.field("Name", "name", Some("What it is for, e.g. “gpu box”."), f.required("name", "text", &v.name)))
                button.btn.btn-primary type="submit" { "Create runner token" }
            }
        }
        div.panel.table-panel {
            @if v.tokens.is_empty() {
                p.empty-state { "No runner tokens yet." }
            } @else {
                table.list #runner-tokens {
                    thead { tr {
                        th scope="col" { "Name" } th scope="col" { "Token" } th scope="col" { "Created" }
                        th scope="col" { "Last used" } th scope="col" { "State" }
                        th scope="col" { span.visually-hidden { "Actions" } }
                    } }
                    tbody { @for t in &v.tokens { (token_row(t, &v.nav.csrf, "Its runners are disconnected at once.")) } }
                }
            }
        }
    }
}

fn new_token_box(v: &RunnersView, secret: &str) -> Markup {
    let server = v.server_url.as_deref().unwrap_or("http://SERVER:7777");
    html! {
        section.token-once role="status" aria-labelledby="token-once-h" {
            h2 #token-once-h { "Your new runner token" }
            p.warning { strong { "Copy it now." } " It is shown only this once; Muster stores only a hash." }
            div.copy-box {
                label.visually-hidden for="new-token" { "New runner token" }
                input.mono #new-token type="text" readonly value=(secret) spellcheck="false" autocomplete="off";
                button.btn.btn-primary type="button" data-copy="#new-token" { "Copy" }
            }
            // The token in the environment: `muster runner` refuses it on the command line, which every
            // process of the machine can read.
            p.muted { "On the runner's machine: " code { "MUSTER_RUNNER_TOKEN=<token> muster runner --server " (server) " --name <name>" } }
        }
    }
}

#[cfg(test)]
mod tests;
