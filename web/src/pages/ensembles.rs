//! `GET /w/{slug}/ensembles`: the workspace's ensembles, and the form that makes or changes one. (The
//! page comparing one ensemble run's candidates is `ensemble.rs`.)

use maud::{Markup, html};

use crate::layout::{page, page_head, workspace_url};
use crate::partials::form::{Form, csrf};
use crate::partials::widgets::Avatar;
use crate::views::{EnsembleFormView, EnsembleListView, EnsembleRowView, PersonView};

/// What an ensemble is, for a workspace that has none yet.
const WHAT: &str = "An ensemble is a named team of 2 to 8 agents that all take the same issue, each \
    on its own branch without seeing the others' work; a check command (and, when the checks do not \
    decide, a reviewer) compares the results, and you choose the one to keep.";

/// How an issue goes to an ensemble.
fn how() -> Markup {
    html! {
        "To use one, open an issue and pick it under Ensembles, \"Run an ensemble\" (or "
        code { "muster issue assign KEY --ensemble NAME" } ")."
    }
}

const EARLY_STOP_HINT: &str = "All: every candidate runs to its end. First green: the first to pass \
    its check stops the others. Quorum: once K have passed, the rest stop.";

/// The ensemble list, with "New ensemble" and an Edit button per row for owners and admins.
pub fn ensembles(v: &EnsembleListView) -> Markup {
    let base = workspace_url(&v.nav);
    let actions = html! {
        @if v.can_manage { a.btn.btn-primary href={ (base) "/ensembles/new" } { "New ensemble" } }
    };
    let body = html! {
        (page_head("Ensembles", Some("Teams of agents that each take the same issue, judged on evidence."), actions))
        @if v.ensembles.is_empty() {
            div.panel.empty-state.ensembles-empty {
                p { strong { "No ensembles yet." } }
                p { (WHAT) }
                p { (how()) }
                @if !v.can_manage { p { "Owners and admins define ensembles." } }
            }
        } @else {
            div.panel.table-panel {
                table.list.ensembles {
                    thead { tr {
                        th scope="col" { "Ensemble" } th scope="col" { "Members" } th scope="col" { "Check" }
                        th scope="col" { "Early stop" } th scope="col" { "Reviewer" } th scope="col" { "Budget" }
                        th scope="col" { "Per candidate" }
                        @if v.can_manage { th scope="col" { span.visually-hidden { "Actions" } } }
                    } }
                    tbody { @for e in &v.ensembles { (row(e, v.can_manage)) } }
                }
            }
            p.hint.ensembles-how { (how()) }
        }
    };
    page("Ensembles", Some(&v.nav), body)
}

fn agent_chip(p: &PersonView) -> Markup {
    html! { span.agent-chip { (Avatar(p)) span.mono { (p.name) } } }
}

fn row(e: &EnsembleRowView, can_manage: bool) -> Markup {
    let none = html! { span.muted { "none" } };
    html! {
        tr id={ "ensemble-" (e.name) } data-ensemble=(e.name) {
            td.ensemble-name data-label="Ensemble" {
                @match &e.edit_url {
                    Some(url) => a.mono href=(url) { (e.name) },
                    None => span.mono { (e.name) },
                }
            }
            td data-label="Members" { span.agent-chips { @for m in &e.members { (agent_chip(m)) } } }
            td data-label="Check" {
                @match &e.check {
                    // One box: a phone lays the cell out as a grid of label and value.
                    Some(c) => div {
                        code { (c) }
                        @if let Some(t) = &e.check_timeout { br; span.hint { (t) } }
                    },
                    None => span.muted { "the workspace's" },
                }
            }
            td data-label="Early stop" { (e.early_stop) }
            td data-label="Reviewer" {
                @match &e.reviewer { Some(r) => (agent_chip(r)), None => (none) }
            }
            td.figure data-label="Budget" { @match &e.budget { Some(b) => (b), None => (none) } }
            td.figure data-label="Per candidate" {
                @match &e.per_candidate {
                    Some(b) => div { (b) br; span.hint { (e.share) } },
                    None => (none),
                }
            }
            @if can_manage {
                td.actions {
                    @if let Some(url) = &e.edit_url {
                        a.btn.btn-small href=(url) aria-label={ "Edit " (e.name) } { "Edit" }
                    }
                }
            }
        }
    }
}

/// The ensemble form: POST `action` with every field; the delete form below it when editing.
pub fn ensemble_form(v: &EnsembleFormView) -> Markup {
    let f = Form::new("ensemble", &v.errors);
    let base = workspace_url(&v.nav);
    let body = html! {
        nav.breadcrumbs aria-label="Breadcrumb" {
            a href={ (base) "/ensembles" } { "Ensembles" }
            span aria-hidden="true" { "/" }
            span { (v.title) }
        }
        div.page-head { div { h1 { (v.title) } } }
        form.stack.ensemble-form method="post" action=(v.action) {
            (csrf(&v.nav.csrf))
            (f.form_errors())
            (f.error_summary())
            fieldset.panel {
                legend { "Team" }
                (f.field("Name", "name", Some("Letters, digits, - _ and . only: you pick the ensemble by this name on an issue, also from the command line."),
                    f.required("name", "text", &v.name)))
                (members(v, &f))
            }
            fieldset.panel {
                legend { "Judging" }
                div.field-row.check-row {
                    (f.field("Check command", "check", Some("Run in each candidate's worktree once its agent is done, e.g. cargo test. Empty: the workspace's check, from Settings."),
                        html! { input.mono id=(f.id("check")) name="check" type="text" value=(v.check) spellcheck="false"
                            aria-invalid=[f.invalid("check").then_some("true")]
                            aria-describedby=[f.invalid("check").then(|| format!("{}-error", f.id("check")))]; }))
                    (f.field("Check timeout (s)", "check_timeout", Some("600 when empty; at most 3600."),
                        f.input("check_timeout", "number", &v.check_timeout)))
                }
                div.field-row {
                    (f.field("Early stop", "early_stop", Some(EARLY_STOP_HINT), f.select("early_stop", &v.early_stop)))
                    (f.field("Quorum K", "quorum", Some("For quorum only: how many passing candidates stop the rest."),
                        f.input("quorum", "number", &v.quorum)))
                }
                (f.field("Reviewer", "reviewer", Some("Reads the candidates' work blind and says which is best when the checks do not decide. Not one of the members."),
                    f.select("reviewer", &v.reviewer)))
            }
            fieldset.panel {
                legend { "Budget" }
                p.hint { "For the whole ensemble run, candidates and reviewer together. Empty: no limit." }
                div.field-row {
                    (f.field("Budget (USD)", "budget_usd", None, f.input("budget_usd", "text", &v.budget_usd)))
                    (f.field("Budget (tokens)", "budget_tokens", None, f.input("budget_tokens", "number", &v.budget_tokens)))
                    (f.field("Per-candidate share", "share", Some("The most one candidate may spend, as a fraction of the budget (0.5 is half). Empty: an equal share."),
                        f.input("share", "text", &v.share)))
                }
            }
            div.form-actions {
                button.btn.btn-primary type="submit" { (if v.is_new { "Create ensemble" } else { "Save ensemble" }) }
                a.btn.btn-ghost href={ (base) "/ensembles" } { "Cancel" }
            }
        }
        @if let Some(url) = &v.delete_url {
            form.danger-zone method="post" action=(url) data-confirm={ "Delete ensemble " (v.title) "? Its past runs stay." } {
                (csrf(&v.nav.csrf))
                div { strong { "Delete this ensemble" } p.hint { "Its past runs and their comparisons stay." } }
                button.btn.btn-danger type="submit" { "Delete ensemble" }
            }
        }
    };
    page(&v.title, Some(&v.nav), body)
}

/// The member checkboxes (field `members`, one per agent), with the group's messages.
fn members(v: &EnsembleFormView, f: &Form<'_>) -> Markup {
    let invalid = f.invalid("members");
    html! {
        fieldset.field.member-picks.has-error[invalid] id=(f.id("members"))
            aria-describedby=[invalid.then(|| format!("{}-error", f.id("members")))] {
            legend { "Members" }
            @if v.agents.is_empty() {
                p.hint { "This workspace has no agents yet: " a href={ (workspace_url(&v.nav)) "/agents" } { "add at least two" } " first." }
            } @else {
                div.member-grid {
                    @for a in &v.agents {
                        label.member-pick {
                            input type="checkbox" name="members" value=(a.name) checked[a.checked];
                            (Avatar(&a.avatar))
                            span.mono { (a.name) }
                        }
                    }
                }
            }
            p.hint { "2 to 8 agents. Each takes the issue on its own branch, blind to the others." }
            (f.field_errors("members"))
        }
    }
}

#[cfg(test)]
mod tests;
