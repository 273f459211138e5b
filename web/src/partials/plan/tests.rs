use super::*;
use crate::views::{PersonKind, PersonView, PlanRelationView, PlannerView};

fn issue(key: &str, title: &str, status: &str) -> PlanIssueView {
    PlanIssueView {
        key: key.into(),
        title: title.into(),
        status: status.into(),
        url: format!("/w/acme/issues/{key}"),
    }
}

fn relation(key: &str, holds: Option<bool>, until_merged: bool) -> PlanRelationView {
    PlanRelationView {
        issue: issue(key, "Schema", "in_progress"),
        holds,
        until_merged,
        stacked: false,
        remove_url: Some(format!(
            "/w/acme/issues/ACM-1/plan/relations/blocked_by/{key}/remove"
        )),
    }
}

fn sample() -> IssuePlanView {
    IssuePlanView {
        key: "ACM-1".into(),
        url: "/w/acme/issues/ACM-1".into(),
        parent: Some(issue("ACM-9", "Launch", "todo")),
        children: vec![PlanChildView {
            issue: issue("ACM-4", "Write the <migration>", "done"),
            assignee: Some(PersonView {
                name: "coder".into(),
                initials: "CO".into(),
                color: "#0891b2".into(),
                kind: PersonKind::Agent,
                runtime: None,
            }),
        }],
        percent: 40,
        rollup: Some("Their runs: 2 runs · $0.0200 · 40 tokens · 1m 05s of agent time".into()),
        progress: "2/5 done".into(),
        groups: vec![PlanGroupView {
            kind: "blocked_by".into(),
            label: "Blocked by".into(),
            relations: vec![
                relation("ACM-2", Some(true), true),
                relation("ACM-3", Some(false), false),
            ],
        }],
        waiting_on: vec!["ACM-2".into()],
        fan_in: true,
        editable: true,
        forms: Default::default(),
        errors: Default::default(),
        csrf: "tok".into(),
        live_url: Some("/w/acme/issues/ACM-1/live".into()),
        planner: Default::default(),
    }
}

#[test]
fn the_panel_shows_parent_children_progress_and_relations() {
    let html = issue_live(&IssuePullsView::default(), &sample()).into_string();
    assert!(
        html.contains(r#"ws-connect="/w/acme/issues/ACM-1/live""#),
        "{html}"
    );
    assert!(
        html.contains(r#"<section class="panel issue-plan" id="issue-plan""#),
        "{html}"
    );
    assert!(
        html.contains(r#"<a class="plan-key" href="/w/acme/issues/ACM-9">ACM-9</a>"#),
        "{html}"
    );
    assert!(
        html.contains("Write the &lt;migration&gt;"),
        "escaped: {html}"
    );
    assert!(
        html.contains(r#"<progress class="plan-progress" max="100" value="40""#),
        "{html}"
    );
    assert!(html.contains("2/5 done"), "{html}");
    assert!(html.contains("<h4>Blocked by</h4>"), "{html}");
    assert!(html.contains(r#"<span class="plan-holds""#), "{html}");
    assert!(
        html.contains(r#"<span class="plan-met">met</span>"#),
        "{html}"
    );
    assert!(html.contains("until merged"), "{html}");
    assert!(
        html.contains(r#"action="/w/acme/issues/ACM-1/plan/relations/blocked_by/ACM-2/remove""#),
        "{html}"
    );
    assert!(
        html.contains("Waiting on ACM-2: its agent starts when it is done"),
        "{html}"
    );
    assert!(html.contains(r#"name="on" value="true" checked"#), "{html}");
    for action in ["parent", "children", "fan-in", "relations"] {
        assert!(
            html.contains(&format!(r#"action="/w/acme/issues/ACM-1/plan/{action}""#)),
            "{action}: {html}"
        );
    }
    assert!(html.contains("Clear parent"), "{html}");
    assert!(!html.contains("hx-swap-oob"), "{html}");
}

#[test]
fn errors_show_beside_their_form_and_the_input_is_kept() {
    let mut v = sample();
    v.forms.issue = "ACM-7".into();
    v.forms.kind = "blocks".into();
    v.errors.insert(
        "issue".into(),
        vec!["that would make a cycle: ACM-1 → ACM-2 → ACM-1".into()],
    );
    v.errors
        .insert("token".into(), vec!["not with a run's token".into()]);
    let html = issue_plan_oob(&v).into_string();
    assert!(html.contains(r#"hx-swap-oob="true""#), "{html}");
    let at = html
        .find(r#"id="plan-rel-issue-error""#)
        .expect("beside the key");
    assert!(html[at..].contains("ACM-1 → ACM-2 → ACM-1"), "{html}");
    assert!(html.contains(r#"value="ACM-7""#), "{html}");
    assert!(
        html.contains(r#"<option value="blocks" selected"#),
        "{html}"
    );
    assert!(
        html.contains("not with a run&#39;s token") || html.contains("not with a run's token"),
        "{html}"
    );
}

#[test]
fn a_read_only_plan_has_no_forms_and_many_blockers_read_as_they() {
    let mut v = sample();
    v.editable = false;
    v.waiting_on = vec!["ACM-2".into(), "ACM-3".into()];
    v.live_url = None;
    for g in &mut v.groups {
        for r in &mut g.relations {
            r.remove_url = None;
        }
    }
    let html = issue_live(&IssuePullsView::default(), &v).into_string();
    assert!(!html.contains("<form"), "{html}");
    assert!(!html.contains("ws-connect"), "{html}");
    assert!(
        html.contains("Waiting on ACM-2, ACM-3: its agent starts when they are done"),
        "{html}"
    );
}

#[test]
fn the_card_marks_progress_and_blockers() {
    let p = CardPlanView {
        children: Some("2/5".into()),
        children_done: false,
        blocked_by: vec!["ACM-2".into()],
    };
    let html = card_children(&p).into_string();
    assert!(
        html.contains(r#"<span class="card-children" title="Sub-issues done: 2/5">"#),
        "{html}"
    );
    assert!(card_blocked(&p).into_string().contains("blocked by ACM-2"));
    let empty = CardPlanView::default();
    assert!(card_children(&empty).into_string().is_empty());
    assert!(card_blocked(&empty).into_string().is_empty());
}

#[test]
fn the_planner_part_offers_agents_and_links_a_pending_proposal() {
    let mut v = sample();
    assert!(
        !issue_live(&IssuePullsView::default(), &v)
            .into_string()
            .contains("Plan with agent")
    );
    v.planner = PlannerView {
        agents: vec!["planner".into(), "coder".into()],
        planning: Some(("planner".into(), "/w/acme/runs/r1".into())),
        pending: Some((
            "planner proposed 3 sub-issues".into(),
            "/w/acme/issues/ACM-1/plan".into(),
        )),
    };
    let html = issue_live(&IssuePullsView::default(), &v).into_string();
    assert!(
        html.contains(r#"action="/w/acme/issues/ACM-1/plan/agent""#),
        "{html}"
    );
    assert!(
        html.contains(r#"<option value="coder">coder</option>"#),
        "{html}"
    );
    assert!(html.contains("planner proposed 3 sub-issues"), "{html}");
    assert!(
        html.contains(r#"href="/w/acme/issues/ACM-1/plan">Review the plan"#),
        "{html}"
    );
    assert!(html.contains("planner is planning this issue"), "{html}");
    v.editable = false;
    let html = issue_live(&IssuePullsView::default(), &v).into_string();
    assert!(
        !html.contains("/plan/agent"),
        "a run's token sees no form: {html}"
    );
}
