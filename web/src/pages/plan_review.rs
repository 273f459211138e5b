//! `GET /w/{slug}/issues/{key}/plan`: an agent's proposed tree of sub-issues as one form. Each item is a
//! row indented under what it waits on, with its title, description, acceptance check, agent and
//! blockers editable and a "Drop" box; "Approve" creates them all at once (blockers first), "Discard"
//! creates nothing. An approved proposal reads as the issues it made.

use maud::{Markup, html};

use crate::layout::{page, page_head};
use crate::partials::form::csrf;
use crate::views::{PlanReviewView, ReviewItemView};

/// "items[2].title" reads "Item 3, title".
fn field_label(field: &str) -> String {
    let Some(rest) = field.strip_prefix("items[") else {
        return field.replace('_', " ");
    };
    match rest.split_once("].") {
        Some((n, name)) => match n.parse::<usize>() {
            Ok(n) => format!("Item {}, {}", n + 1, name.replace('_', " ")),
            Err(_) => field.to_owned(),
        },
        None => "Items".to_owned(),
    }
}

/// The plan review page.
pub fn plan_review(v: &PlanReviewView) -> Markup {
    let title = format!("Plan for {}", v.issue_key);
    let pending = v.status.as_deref() == Some("pending");
    let body = html! {
        (page_head(&title, Some(&v.issue_title), html! {
            a.btn href=(v.issue_url) { "Back to " (v.issue_key) }
        }))
        @if !v.errors.is_empty() {
            div.alert.alert-error #plan-errors role="alert" {
                p { strong { "The plan was not approved:" } }
                ul { @for (field, messages) in &v.errors { @for m in messages { li { (field_label(field)) ": " (m) } } } }
            }
        }
        @match v.status.as_deref() {
            None => section.panel { p.empty-state #no-proposal { "No plan was proposed for " (v.issue_key) " yet. Ask an agent with \u{201c}Plan with agent\u{201d} on the issue's page." } },
            Some(status) => section.panel.plan-review #plan-review aria-labelledby="plan-review-h" {
                h2 #plan-review-h {
                    (v.agent) " proposed " (v.items.len()) " sub-issue" @if v.items.len() != 1 { "s" }
                    " " span class={ "pill proposal-" (status) } { (status) }
                }
                p.muted { (v.proposed) }
                @if !v.summary.is_empty() { p.plan-summary { (v.summary) } }
                @if pending {
                    form #plan-approve method="post" action=(v.approve_url) {
                        (csrf(&v.nav.csrf))
                        ol.plan-tree { @for item in &v.items { (editable_item(item, &v.agents)) } }
                        div.plan-review-actions {
                            input type="hidden" name="assign" value="false";
                            label.check {
                                input #plan-assign type="checkbox" name="assign" value="true" checked[v.assign];
                                " Assign each sub-issue to its agent (each starts once its blockers are done)"
                            }
                            button.btn.btn-primary #plan-approve-button type="submit" { "Approve and create" }
                        }
                    }
                    form #plan-discard method="post" action=(v.discard_url) {
                        (csrf(&v.nav.csrf))
                        button.btn.btn-danger-ghost type="submit" { "Discard the plan" }
                    }
                } @else {
                    ol.plan-tree { @for item in &v.items { (decided_item(item)) } }
                }
            },
        }
    };
    page(&title, Some(&v.nav), body)
}

fn editable_item(item: &ReviewItemView, agents: &[String]) -> Markup {
    let id = format!("plan-item-{}", item.reference);
    html! {
        li.plan-item id=(id) data-ref=(item.reference) style={ "--depth: " (item.depth) } {
            input type="hidden" name="ref" value=(item.reference);
            div.plan-item-head {
                code.plan-ref { (item.reference) }
                label.visually-hidden for={ (id) "-title" } { "Title" }
                input.plan-item-title id={ (id) "-title" } name="title" type="text" value=(item.title) required maxlength="500";
                label.check.plan-drop {
                    input type="checkbox" name="drop" value=(item.reference) checked[item.dropped];
                    " Drop"
                }
            }
            div.plan-item-fields {
                label for={ (id) "-description" } { "Description" }
                textarea id={ (id) "-description" } name="description" rows="2" { (item.description) }
                label for={ (id) "-acceptance" } { "Done when" }
                textarea id={ (id) "-acceptance" } name="acceptance" rows="1" { (item.acceptance) }
                label for={ (id) "-agent" } { "Agent" }
                select id={ (id) "-agent" } name="agent" {
                    option value="" selected[item.agent.is_empty()] { "Unassigned" }
                    @for a in agents { option value=(a) selected[&item.agent == a] { (a) } }
                    @if !item.agent.is_empty() && !agents.contains(&item.agent) {
                        option value=(item.agent) selected { (item.agent) " (no such agent)" }
                    }
                }
                label for={ (id) "-blocked-by" } { "After (refs)" }
                input id={ (id) "-blocked-by" } name="blocked_by" type="text" value=(item.blocked_by) placeholder="none";
            }
        }
    }
}

fn decided_item(item: &ReviewItemView) -> Markup {
    html! {
        li.plan-item data-ref=(item.reference) style={ "--depth: " (item.depth) } {
            div.plan-item-head {
                code.plan-ref { (item.reference) }
                @match &item.created {
                    Some((key, url)) => a href=(url) { code { (key) } " " (item.title) },
                    None => span { (item.title) },
                }
            }
            p.muted {
                "Agent: " @if item.agent.is_empty() { "none" } @else { (item.agent) }
                @if !item.blocked_by.is_empty() { " · after " (item.blocked_by) }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item(reference: &str, depth: usize, blocked_by: &str) -> ReviewItemView {
        ReviewItemView {
            reference: reference.into(),
            title: format!("Do <{reference}>"),
            description: "Some words".into(),
            acceptance: "tests pass".into(),
            agent: "coder".into(),
            blocked_by: blocked_by.into(),
            depth,
            dropped: false,
            created: None,
        }
    }

    fn sample(status: &str) -> PlanReviewView {
        PlanReviewView {
            issue_key: "ACM-1".into(),
            issue_title: "Ship it".into(),
            issue_url: "/w/acme/issues/ACM-1".into(),
            status: Some(status.into()),
            agent: "planner".into(),
            proposed: "proposed 2 minutes ago".into(),
            summary: "Two steps.".into(),
            items: vec![item("api", 0, ""), item("ui", 1, "api")],
            agents: vec!["coder".into(), "planner".into()],
            assign: true,
            approve_url: "/w/acme/issues/ACM-1/plan/p1/approve".into(),
            discard_url: "/w/acme/issues/ACM-1/plan/p1/discard".into(),
            ..Default::default()
        }
    }

    #[test]
    fn a_pending_plan_is_one_form_of_editable_rows() {
        let html = plan_review(&sample("pending")).into_string();
        assert!(
            html.contains(r#"action="/w/acme/issues/ACM-1/plan/p1/approve""#),
            "{html}"
        );
        assert!(
            html.contains(r#"action="/w/acme/issues/ACM-1/plan/p1/discard""#),
            "{html}"
        );
        assert!(
            html.contains(r#"value="Do &lt;api&gt;""#),
            "escaped: {html}"
        );
        assert!(
            html.contains(r#"<option value="coder" selected>coder</option>"#),
            "{html}"
        );
        assert!(
            html.contains(r#"name="blocked_by" type="text" value="api""#),
            "{html}"
        );
        assert!(html.contains("--depth: 1"), "{html}");
        assert!(
            html.contains(r#"name="assign" value="true" checked"#),
            "{html}"
        );
        assert!(html.contains("planner proposed 2 sub-issues"), "{html}");
    }

    #[test]
    fn refusals_name_the_item_and_a_decided_plan_links_its_issues() {
        let mut v = sample("pending");
        v.errors.insert(
            "items[1].blocked_by".into(),
            vec!["\"zz\" is not the ref of an item".into()],
        );
        let html = plan_review(&v).into_string();
        assert!(html.contains("Item 2, blocked by: "), "{html}");
        let mut v = sample("approved");
        v.items[0].created = Some(("ACM-2".into(), "/w/acme/issues/ACM-2".into()));
        let html = plan_review(&v).into_string();
        assert!(!html.contains("plan-approve"), "{html}");
        assert!(
            html.contains(r#"<a href="/w/acme/issues/ACM-2"><code>ACM-2</code>"#),
            "{html}"
        );
        let none = PlanReviewView {
            status: None,
            ..sample("pending")
        };
        assert!(
            plan_review(&none)
                .into_string()
                .contains("No plan was proposed")
        );
    }
}
