use super::*;
use crate::samples;
use crate::views::{EnsembleListView, NavItem};

#[test]
fn managers_see_every_figure_and_the_buttons() {
    let html = ensembles(&samples::ensembles()).into_string();
    assert!(html.contains(r#"href="/w/acme/ensembles/new""#));
    assert!(html.contains(r#"href="/w/acme/ensembles/trio/edit""#));
    assert!(html.contains(r#"href="/w/acme/ensembles/pair/edit""#));
    for figure in [
        "claude-quick",
        "opencode-slow",
        "<div><code>cargo test</code><br><span class=\"hint\">stopped after 600 s</span></div>",
        "first green",
        "judge",
        "$3.00 · 200,000 tokens",
        "<div>$1.00 · 66,667 tokens<br><span class=\"hint\">equal share</span></div>",
        "the workspace's",
        "all finish",
    ] {
        assert!(html.contains(figure), "{figure}");
    }
    assert!(html.contains(r#"data-ensemble="trio""#));
    assert!(
        html.contains(r#"<a href="/w/acme/ensembles" aria-current="page">Ensembles</a>"#),
        "the nav marks the page"
    );
}

#[test]
fn members_read_the_list_without_buttons() {
    let v = EnsembleListView {
        can_manage: false,
        ensembles: samples::ensembles()
            .ensembles
            .into_iter()
            .map(|mut e| {
                e.edit_url = None;
                e
            })
            .collect(),
        ..samples::ensembles()
    };
    let html = ensembles(&v).into_string();
    assert!(!html.contains("/ensembles/new"));
    assert!(!html.contains("/edit"));
    assert!(!html.contains(">Edit<"));
    assert!(html.contains("stopped after 600 s"), "still every figure");
}

#[test]
fn the_empty_list_says_what_an_ensemble_is_and_how_to_use_one() {
    let v = EnsembleListView {
        nav: samples::nav(NavItem::Ensembles),
        ensembles: Vec::new(),
        can_manage: true,
    };
    let html = ensembles(&v).into_string();
    assert!(html.contains("No ensembles yet."));
    assert!(html.contains("2 to 8 agents that all take the same issue"));
    assert!(html.contains("Run an ensemble"));
    assert!(html.contains("<code>muster issue assign KEY --ensemble NAME</code>"));
    assert!(html.contains(r#"href="/w/acme/ensembles/new""#));
}

#[test]
fn names_are_escaped() {
    let mut v = samples::ensembles();
    v.ensembles[0].name = "<b>x</b>".into();
    v.ensembles[0].check = Some("echo '<script>'".into());
    let html = ensembles(&v).into_string();
    assert!(!html.contains("<b>x</b>") && html.contains("&lt;b&gt;x&lt;/b&gt;"));
    assert!(!html.contains("<script>'") && html.contains("&lt;script&gt;"));
}

#[test]
fn the_form_keeps_what_was_typed_and_puts_the_error_by_the_members() {
    let html = ensemble_form(&samples::ensemble_form()).into_string();
    assert!(html.contains(
        r#"<form class="stack ensemble-form" method="post" action="/w/acme/ensembles/trio">"#
    ));
    assert!(html.contains(r#"name="_csrf" value="csrf-123""#));
    assert!(html.contains(r#"name="members" value="codex" checked"#));
    assert!(!html.contains(r#"name="members" value="judge" checked"#));
    let members = html.split(r#"id="ensemble-members""#).nth(1).unwrap();
    let members = members.split("</fieldset>").next().unwrap();
    assert!(
        members.contains(r#"id="ensemble-members-error""#)
            && members.contains("an ensemble has 2 to 8 members; this one has 1"),
        "the message is inside the members group: {members}"
    );
    assert!(html.contains(r#"aria-describedby="ensemble-members-error""#));
    assert!(html.contains("Fix the highlighted field below."));
    assert!(html.contains(r#"value="cargo test""#));
    assert!(html.contains(r#"<option value="quorum" selected>"#));
    assert!(html.contains(r#"<option value="judge" selected>"#));
    assert!(html.contains(r#"id="ensemble-quorum" name="quorum" type="number" value="2""#));
    assert!(html.contains(r#"value="200000""#));
    assert!(html.contains(r#"action="/w/acme/ensembles/trio/delete" data-confirm="Delete ensemble trio? Its past runs stay.""#));
    assert!(html.contains("Save ensemble"));
    let ids: Vec<&str> = html
        .split(" id=\"")
        .skip(1)
        .filter_map(|rest| rest.split('"').next())
        .collect();
    let unique: std::collections::HashSet<_> = ids.iter().collect();
    assert_eq!(ids.len(), unique.len(), "no id twice: {ids:?}");
}

#[test]
fn the_new_form_has_no_delete_and_says_create() {
    let mut v = samples::ensemble_form();
    v.is_new = true;
    v.title = "New ensemble".into();
    v.delete_url = None;
    v.errors.clear();
    let html = ensemble_form(&v).into_string();
    assert!(html.contains("Create ensemble"));
    assert!(!html.contains("/delete"));
    assert!(!html.contains("error-summary"));
}

#[test]
fn a_workspace_without_agents_is_told_to_add_some() {
    let mut v = samples::ensemble_form();
    v.agents.clear();
    let html = ensemble_form(&v).into_string();
    assert!(html.contains("has no agents yet") && html.contains("add at least two"));
}
