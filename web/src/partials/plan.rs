//! An issue's plan: the issue page's side panel (`#issue-plan`, also pushed alone over the issue's
//! socket as an out-of-band swap) with its parent, sub-issues and their progress, relations, the
//! blockers its agent waits on and the forms that change them; and the board card's marks.
//!
//! Every form is a plain POST under `{issue}/plan/…`, answered with the issue page (303) or the page
//! again with the refusal beside the form (422), so the panel works without JavaScript. What is being
//! typed is `hx-preserve`d: a live swap of the panel (a sub-issue finishing) does not wipe it.

use maud::{Markup, html};

use super::form::{Form, csrf};
use super::widgets::{Avatar, StatusBadge};
use crate::views::{
    CardPlanView, IssuePlanView, IssuePullsView, PlanChildView, PlanGroupView, PlanIssueView,
};

/// The fields each form of the panel shows its errors beside; any other goes to the panel's top.
const FIELDS: &[&str] = &["parent", "title", "kind", "issue", "until", "agent"];

/// The issue page's live side panels: the plan and the pull requests inside the issue's socket element
/// (`ws-connect`), which stays while the panels are swapped; plain panels when neither needs a socket.
pub fn issue_live(pulls: &IssuePullsView, plan: &IssuePlanView) -> Markup {
    let panels = html! {
        (issue_plan(plan, false))
        (super::pulls::issue_pulls(pulls, false))
    };
    html! {
        @match pulls.live_url.as_ref().or(plan.live_url.as_ref()) {
            Some(url) => div #issue-live.issue-live hx-ext="ws" ws-connect=(url) hx-history="false" { (panels) },
            None => (panels),
        }
    }
}

/// The panel as an out-of-band swap, for the issue's socket.
pub fn issue_plan_oob(v: &IssuePlanView) -> Markup {
    issue_plan(v, true)
}

/// "Waiting on ACM-2, ACM-3: its agent starts when they are done".
pub fn waiting_text(keys: &[String]) -> String {
    let they = if keys.len() == 1 { "it is" } else { "they are" };
    format!(
        "Waiting on {}: its agent starts when {they} done",
        keys.join(", ")
    )
}

fn issue_plan(v: &IssuePlanView, oob: bool) -> Markup {
    let top = Form::new("plan", &v.errors);
    let other: Vec<&String> = v
        .errors
        .iter()
        .filter(|(k, m)| !FIELDS.contains(&k.as_str()) && k.as_str() != "form" && !m.is_empty())
        .flat_map(|(_, m)| m)
        .collect();
    html! {
        section #issue-plan.panel.issue-plan aria-labelledby="issue-plan-h"
            hx-swap-oob=[oob.then_some("true")] {
            h2 #issue-plan-h { "Plan" }
            @if !v.waiting_on.is_empty() {
                p.plan-waiting role="status" { (waiting_text(&v.waiting_on)) }
            }
            (top.form_errors())
            @if !other.is_empty() {
                div.alert.alert-error role="alert" { @for m in other { p { (m) } } }
            }
            (planner(v))
            (parent(v))
            (children(v))
            (relations(v))
        }
    }
}

/// "Plan with agent": a proposal waiting for review, a plan run at work, and the form that asks for one.
fn planner(v: &IssuePlanView) -> Markup {
    let p = &v.planner;
    let f = Form::new("plan-agent", &v.errors);
    html! {
        @if let Some((text, url)) = &p.pending {
            div.plan-proposal role="status" {
                span { (text) }
                a.btn.btn-small.btn-primary #plan-review href=(url) { "Review the plan" }
            }
        }
        @if let Some((agent, url)) = &p.planning {
            p.plan-planning role="status" { (agent) " is planning this issue. " a href=(url) { "Watch the run" } }
        }
        @if v.editable && !p.agents.is_empty() {
            form.plan-form.plan-with method="post" action={ (v.url) "/plan/agent" } {
                (csrf(&v.csrf))
                label for=(f.id("agent")) { "Plan with agent" }
                select id=(f.id("agent")) name="agent"
                    aria-invalid=[f.invalid("agent").then_some("true")]
                    aria-describedby=[f.invalid("agent").then(|| format!("{}-error", f.id("agent")))] {
                    @for a in &p.agents { option value=(a) { (a) } }
                }
                button.btn.btn-small type="submit" { "Plan" }
                (f.field_errors("agent"))
            }
        }
    }
}

/// Key (linked), title and status pill of another issue.
fn issue_ref(i: &PlanIssueView) -> Markup {
    html! {
        a.plan-key href=(i.url) { (i.key) }
        span.plan-title title=(i.title) { (i.title) }
        (StatusBadge(&i.status))
    }
}

fn parent(v: &IssuePlanView) -> Markup {
    let f = Form::new("plan-parent", &v.errors);
    let action = format!("{}/plan/parent", v.url);
    html! {
        div.plan-part.plan-parent {
            h3 { "Parent" }
            @match &v.parent {
                Some(p) => div.plan-row { (issue_ref(p)) },
                None => p.muted.plan-none { "None." },
            }
            @if v.editable {
                form.plan-form method="post" action=(action) {
                    (csrf(&v.csrf))
                    label.visually-hidden for=(f.id("parent")) { "Parent issue key" }
                    input id=(f.id("parent")) name="parent" type="text" value=(v.forms.parent) hx-preserve
                        placeholder="Parent issue key"
                        aria-invalid=[f.invalid("parent").then_some("true")]
                        aria-describedby=[f.invalid("parent").then(|| format!("{}-error", f.id("parent")))];
                    button.btn.btn-small type="submit" { "Set parent" }
                    (f.field_errors("parent"))
                }
                @if v.parent.is_some() {
                    form.plan-form method="post" action=(action) {
                        (csrf(&v.csrf))
                        input type="hidden" name="parent" value="";
                        button.btn.btn-small.btn-ghost type="submit" { "Clear parent" }
                    }
                }
            }
        }
    }
}

fn child(c: &PlanChildView) -> Markup {
    html! {
        li.plan-row.plan-child id={ "plan-child-" (c.issue.key) } {
            (issue_ref(&c.issue))
            @match &c.assignee {
                Some(a) => span.plan-assignee { (Avatar(a)) span.visually-hidden { "Assigned to " (a.name) } },
                None => span.avatar.avatar-empty title="Unassigned" {},
            }
        }
    }
}

fn children(v: &IssuePlanView) -> Markup {
    let f = Form::new("plan-child", &v.errors);
    html! {
        div.plan-part.plan-children {
            h3 { "Sub-issues" }
            @if v.children.is_empty() {
                p.muted.plan-none { "None." }
            } @else {
                div.plan-progress-row {
                    progress.plan-progress max="100" value=(v.percent.clamp(0, 100))
                        aria-label="Sub-issues done" {}
                    span.plan-progress-text { (v.progress) }
                }
                @if let Some(r) = &v.rollup { p.plan-rollup.muted { (r) } }
                ul.plan-list { @for c in &v.children { (child(c)) } }
            }
            @if v.editable {
                form.plan-form method="post" action={ (v.url) "/plan/children" } {
                    (csrf(&v.csrf))
                    label.visually-hidden for=(f.id("title")) { "Sub-issue title" }
                    input id=(f.id("title")) name="title" type="text" value=(v.forms.child_title) hx-preserve
                        placeholder="Sub-issue title" required maxlength="500"
                        aria-invalid=[f.invalid("title").then_some("true")]
                        aria-describedby=[f.invalid("title").then(|| format!("{}-error", f.id("title")))];
                    button.btn.btn-small type="submit" { "+ Sub-issue" }
                    (f.field_errors("title"))
                }
                form.plan-form.plan-fan-in method="post" action={ (v.url) "/plan/fan-in" } {
                    (csrf(&v.csrf))
                    input type="hidden" name="on" value="false";
                    label.check {
                        input #plan-fan-in-on type="checkbox" name="on" value="true" checked[v.fan_in];
                        " Wake the assignee when every sub-issue has ended"
                    }
                    button.btn.btn-small.btn-ghost type="submit" { "Save" }
                }
            }
        }
    }
}

fn group(g: &PlanGroupView, csrf_token: &str) -> Markup {
    html! {
        div class={ "plan-group plan-" (g.kind) } {
            h4 { (g.label) }
            ul.plan-list {
                @for r in &g.relations {
                    li.plan-row.plan-relation id={ "plan-" (g.kind) "-" (r.issue.key) } {
                        (issue_ref(&r.issue))
                        @match r.holds {
                            Some(true) => span.plan-holds title="Its agent waits until this is done" { "holds" },
                            Some(false) => span.plan-met { "met" },
                            None => {},
                        }
                        @if r.until_merged { span.plan-tag { "until merged" } }
                        @if r.stacked { span.plan-tag { "stacked" } }
                        @if let Some(url) = &r.remove_url {
                            form.plan-remove method="post" action=(url) {
                                (csrf(csrf_token))
                                button.btn.btn-small.btn-danger-ghost type="submit"
                                    aria-label={ "Remove " (g.label.to_lowercase()) " " (r.issue.key) } { "Remove" }
                            }
                        }
                    }
                }
            }
        }
    }
}

fn relations(v: &IssuePlanView) -> Markup {
    let f = Form::new("plan-rel", &v.errors);
    let kinds = [
        ("blocked_by", "Blocked by"),
        ("blocks", "Blocks"),
        ("relates_to", "Relates to"),
        ("duplicate_of", "Duplicate of"),
    ];
    let untils = [("done", "until done"), ("merged", "until merged")];
    html! {
        div.plan-part.plan-relations {
            h3 { "Relations" }
            @if v.groups.is_empty() { p.muted.plan-none { "None." } }
            @for g in &v.groups { (group(g, &v.csrf)) }
            @if v.editable {
                form.plan-form.plan-relate method="post" action={ (v.url) "/plan/relations" } {
                    (csrf(&v.csrf))
                    div.plan-relate-fields {
                        label.visually-hidden for=(f.id("kind")) { "Relation" }
                        select id=(f.id("kind")) name="kind" hx-preserve {
                            @for (value, label) in kinds {
                                option value=(value) selected[v.forms.kind == value] { (label) }
                            }
                        }
                        label.visually-hidden for=(f.id("issue")) { "Other issue key" }
                        input id=(f.id("issue")) name="issue" type="text" value=(v.forms.issue) hx-preserve
                            placeholder="Key" required
                            aria-invalid=[f.invalid("issue").then_some("true")]
                            aria-describedby=[f.invalid("issue").then(|| format!("{}-error", f.id("issue")))];
                    }
                    div.plan-relate-fields {
                        label.visually-hidden for=(f.id("until")) { "Holds" }
                        select id=(f.id("until")) name="until" title="For blocked by and blocks" hx-preserve {
                            @for (value, label) in untils {
                                option value=(value) selected[v.forms.until == value] { (label) }
                            }
                        }
                        label.check title="The blocked issue's first run starts from the blocker's branch" {
                            input #plan-rel-stacked type="checkbox" name="stacked" value="true" checked[v.forms.stacked] hx-preserve;
                            " Stacked"
                        }
                        button.btn.btn-small type="submit" { "Add relation" }
                    }
                    (f.field_errors("kind"))
                    (f.field_errors("issue"))
                    (f.field_errors("until"))
                }
            }
        }
    }
}

/// The card's marks: "2/5" sub-issues done, and "blocked by ACM-2" while a blocker holds.
pub fn card_children(p: &CardPlanView) -> Markup {
    html! {
        @if let Some(n) = &p.children {
            span.card-children.done[p.children_done] title={ "Sub-issues done: " (n) } { "☰ " (n) }
        }
    }
}

/// "blocked by ACM-2", for a card whose blockers hold and whose agent has no queued run.
pub fn card_blocked(p: &CardPlanView) -> Markup {
    html! {
        @if !p.blocked_by.is_empty() {
            span.card-blocked title="Its agent starts when its blockers are done" {
                "blocked by " (p.blocked_by.join(", "))
            }
        }
    }
}

#[cfg(test)]
mod tests;
