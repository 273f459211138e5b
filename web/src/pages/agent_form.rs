//! `GET /w/{slug}/agents/new` and `GET /w/{slug}/agents/{name}`: the agent profile form.
//!
//! Secret environment values never leave the server: a secret row renders an empty password input
//! (with a "stored" placeholder when one exists), whatever the view's `value` holds.

use maud::{Markup, html};

use crate::layout::{page, workspace_url};
use crate::partials::form::{Form, csrf};
use crate::views::{AgentFormView, EnvVarView};

/// Empty environment rows offered for new variables.
const NEW_ENV_ROWS: usize = 3;

/// Why a member sees the runtime fields but cannot change them.
const RUNTIME_LOCKED: &str = "Only owners and admins may change the runtime and environment: they decide what runs on the server.";

/// Why a member sees the name, model and stall timeout but cannot change them, and may only lower a budget.
const LIMITS_LOCKED: &str = "Only owners and admins may change the name, model and stall timeout, or raise a budget: a member may lower a budget.";

/// Placeholder of a secret whose value is stored.
const STORED_SECRET: &str = "•••••• (stored; leave empty to keep)";
/// The placeholder of a secret typed before the form came back with errors (kept sealed, never shown).
const KEPT_SECRET: &str = "•••••• (as you typed it; leave empty to keep)";

/// The agent form: POST `action` with every profile field; env rows as repeated `env_key`,
/// `env_value` and `env_secret` (checkbox whose value is the row index). Read-only when `!can_edit`; the
/// runtime and environment fieldsets, the name, the model and the stall timeout are read-only (and so
/// not sent) when `!can_manage_runtime`.
pub fn agent_form(v: &AgentFormView) -> Markup {
    let f = Form::new("agent", &v.errors);
    let title = if v.is_new {
        "New agent".to_string()
    } else {
        v.name.clone()
    };
    let body = html! {
        nav.breadcrumbs aria-label="Breadcrumb" {
            a href={ (workspace_url(&v.nav)) "/agents" } { "Agents" }
            span aria-hidden="true" { "/" }
            span { (title) }
        }
        div.page-head { div { h1 { (title) } } }
        form.stack.agent-form method="post" action=(v.action) {
            (csrf(&v.nav.csrf))
            (f.form_errors())
            (f.error_summary())
            @if !v.can_edit { p.alert { "Only owners and admins can change agents." } }
            @if let Some(warning) = &v.runtime_warning { p.alert.alert-error.runtime-warning role="status" { (warning) } }
            fieldset.panel disabled[!v.can_edit] {
                (identity(v, &f))
            }
            fieldset.panel disabled[!v.can_edit] {
                legend { "Behaviour" }
                (f.field("Instructions", "instructions", Some("Added to every prompt this agent gets."),
                    f.textarea("instructions", &v.instructions, 6)))
                @if v.is_new {
                    p.hint.default-skills { "New agents start with the built-in " code { "report-to-the-board" } " skill attached: it tells the agent to comment on its issue and move it to review when done. You can detach it under Skills on the agent's page." }
                }
            }
            fieldset.panel.agent-runtime disabled[!v.can_edit || !v.can_manage_runtime] { (runtime(v, &f)) }
            fieldset.panel disabled[!v.can_edit] { (limits(v, &f)) }
            fieldset.panel.agent-env disabled[!v.can_edit || !v.can_manage_runtime] { (env_table(&v.env, &f)) }
            @if v.can_edit {
                div.form-actions {
                    button.btn.btn-primary type="submit" { (if v.is_new { "Create agent" } else { "Save agent" }) }
                    a.btn.btn-ghost href={ (workspace_url(&v.nav)) "/agents" } { "Cancel" }
                }
            }
        }
        @if !v.is_new { div #agent-skills hx-get={ (v.action) "/skills" } hx-trigger="load" hx-swap="outerHTML" { a href={ (v.action) "/skills" } { "Skills of this agent" } } }
        @if !v.is_new { div #agent-usage hx-get={ (v.action) "/usage" } hx-trigger="load" hx-swap="outerHTML" { a href={ (v.action) "/usage" } { "Usage and runs of this agent" } } }
        @if let Some(url) = &v.delete_url {
            form.danger-zone method="post" action=(url) data-confirm={ "Delete agent " (v.name) "?" } {
                (csrf(&v.nav.csrf))
                div { strong { "Delete this agent" } p.hint { "Running work is cancelled; its history stays." } }
                button.btn.btn-danger type="submit" { "Delete agent" }
            }
        }
    };
    page(&title, Some(&v.nav), body)
}

/// Whether the owners' fields outside the runtime fieldset (name, model, stall timeout) are read-only.
fn owners_only(v: &AgentFormView) -> bool {
    v.can_edit && !v.can_manage_runtime
}

fn identity(v: &AgentFormView, f: &Form<'_>) -> Markup {
    html! {
        legend { "Agent" }
        div.field-row {
            fieldset.owners-only disabled[owners_only(v)] {
                (f.field("Name", "name", Some("Letters, digits, - _ and . only: it is how you assign issues to this agent, also from the command line."), f.required("name", "text", &v.name)))
            }
            (f.field("Colour", "color", None, f.input("color", "color", &v.color)))
        }
        fieldset.owners-only disabled[owners_only(v)] {
            (f.field("Model", "model", Some("Empty uses the CLI's default; a Codex agent with a base URL must name one."), f.input("model", "text", &v.model)))
        }
    }
}

/// What each permission mode allows, per CLI (every mode runs inside Muster's sandbox).
const PERMISSION_HINT: &str = "Read only: look, change nothing. Edit the worktree: Claude Code edits \
    files but refuses shell commands it cannot vet (nobody can approve them headless: a run whose every \
    call was refused ends \"needs permission\"); Codex and OpenCode also run commands in the worktree. \
    Anything: every command, for all CLIs, still confined to the run by Muster's sandbox.";

/// What runs on the server: read-only, with the reason, for anyone but owners and admins.
fn runtime(v: &AgentFormView, f: &Form<'_>) -> Markup {
    html! {
        legend { "Runtime" }
        @if v.can_edit && !v.can_manage_runtime {
            p.hint.runtime-locked { (RUNTIME_LOCKED) }
        }
        div.field-row {
            (f.field("Kind", "kind", None, f.select("kind", &v.kind)))
            (f.field("Permission mode", "permission_mode", Some(PERMISSION_HINT), f.select("permission_mode", &v.permission_mode)))
        }
        div.field-row {
            (f.field("Command", "command", Some("Only for custom agents, or to override the CLI path."),
                f.input("command", "text", &v.command)))
            (f.field("Base URL", "base_url", Some("For local or proxied models."), f.input("base_url", "url", &v.base_url)))
        }
        (f.field("Extra arguments", "extra_args", Some("One argument per line."), f.textarea("extra_args", &v.extra_args, 3)))
        (f.field("Runs on", "runners", Some("Runner names, separated by commas. Empty: any runner that has this agent's CLI."),
            f.input("runners", "text", &v.runners)))
        div.field-row {
            (f.field("Network", "network", Some("Its model endpoint is always reachable; \"none\" allows nothing else."),
                f.select("network", &v.network)))
            (f.field("Allowed hosts", "egress_hosts",
                Some("One per line: github.com, *.npmjs.org (subdomains), host:port. Without a port: 443 and 80. Added to the workspace's default list."),
                f.textarea("egress_hosts", &v.egress_hosts, 3)))
        }
    }
}

fn limits(v: &AgentFormView, f: &Form<'_>) -> Markup {
    html! {
        legend { "Limits" }
        @if owners_only(v) {
            p.hint.limits-locked { (LIMITS_LOCKED) }
        }
        div.field-row {
            (f.field("Concurrent runs", "max_concurrent_runs", None,
                f.input("max_concurrent_runs", "number", &v.max_concurrent_runs)))
            fieldset.owners-only disabled[owners_only(v)] {
                (f.field("Stall timeout (s)", "stall_timeout_secs", Some("Stop a run silent this long."),
                    f.input("stall_timeout_secs", "number", &v.stall_timeout_secs)))
            }
            (f.field("Retries", "max_retries", None, f.input("max_retries", "number", &v.max_retries)))
        }
        div.field-row {
            (f.field("Budget (USD per run)", "budget_usd", Some("Empty for no limit."),
                f.input("budget_usd", "text", &v.budget_usd)))
            (f.field("Budget (tokens per run)", "budget_tokens", Some("Empty for no limit."),
                f.input("budget_tokens", "number", &v.budget_tokens)))
        }
    }
}

fn env_table(env: &[EnvVarView], f: &Form<'_>) -> Markup {
    let blank = EnvVarView::default();
    let rows = env.iter().chain(std::iter::repeat_n(&blank, NEW_ENV_ROWS));
    html! {
        legend { "Environment" }
        p.hint { "Passed to the agent's process. Secrets are encrypted at rest, redacted from run output and never shown again. A new kind, command or base URL drops the stored secrets you do not enter again." }
        table.env-table {
            thead { tr { th scope="col" { "Name" } th scope="col" { "Value" } th scope="col" { "Secret" } } }
            tbody {
                @for (i, row) in rows.enumerate() { (env_row(i, row)) }
            }
        }
        (f.field_errors("env"))
        (f.field_errors("env_key"))
        (f.field_errors("env_value"))
    }
}

fn env_row(i: usize, row: &EnvVarView) -> Markup {
    html! {
        tr {
            td {
                input.mono type="text" name="env_key" value=(row.key) placeholder="NAME"
                    aria-label={ "Variable " (i + 1) " name" } autocomplete="off" spellcheck="false";
            }
            td {
                input type="hidden" name="env_kept" value=(row.kept);
                @if row.secret {
                    // Never echo a secret, even if the view carries one by mistake.
                    input.mono type="password" name="env_value" value="" autocomplete="new-password"
                        aria-label={ "Variable " (i + 1) " value" }
                        placeholder=[if !row.kept.is_empty() { Some(KEPT_SECRET) } else { row.has_value.then_some(STORED_SECRET) }];
                } @else {
                    input.mono type="text" name="env_value" value=(row.value)
                        aria-label={ "Variable " (i + 1) " value" } autocomplete="off" spellcheck="false";
                }
            }
            td.center {
                input type="checkbox" name="env_secret" value=(i) checked[row.secret]
                    aria-label={ "Variable " (i + 1) " is secret" };
            }
        }
    }
}

#[cfg(test)]
mod tests;
