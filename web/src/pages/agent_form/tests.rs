use super::*;
use crate::samples;

fn render(v: &AgentFormView) -> String {
    agent_form(v).into_string()
}

#[test]
fn posts_every_field_to_action() {
    let html = render(&samples::agent_form());
    assert!(html.contains(r#"<form class="stack agent-form" method="post" action="/w/acme/agents/codex"><input type="hidden" name="_csrf" value="csrf-123">"#));
    for name in [
        "name",
        "color",
        "kind",
        "model",
        "instructions",
        "extra_args",
        "permission_mode",
        "max_concurrent_runs",
        "stall_timeout_secs",
        "max_retries",
        "budget_usd",
        "budget_tokens",
        "command",
        "base_url",
        "runners",
    ] {
        assert!(
            html.contains(&format!(r#"id="agent-{name}" name="{name}""#)),
            "{name}"
        );
    }
    assert!(html.contains(r#"<option value="codex" selected>Codex</option>"#));
    assert!(
        html.contains(r#"<option value="workspace_write" selected>Edit the worktree</option>"#)
    );
    assert!(html.contains(">--search\n--config=model_reasoning_effort=high</textarea>"));
    assert!(html.contains(r#"name="runners" type="text" value="gpu-box, mac-mini""#));
}

#[test]
fn errors_are_shown_and_input_kept() {
    let html = render(&samples::agent_form());
    assert!(html.contains("Fix the highlighted fields."));
    assert!(html.contains(r#"name="max_concurrent_runs" type="number" value="40" aria-invalid="true" aria-describedby="agent-max_concurrent_runs-error""#));
    assert!(
        html.contains(r#"id="agent-max_concurrent_runs-error"><p>must be between 1 and 16</p>"#)
    );
}

#[test]
fn many_errors_are_counted_once_at_the_top() {
    let mut v = samples::agent_form();
    v.errors.remove("form");
    v.errors
        .insert("name".into(), vec!["may contain only letters".into()]);
    v.errors
        .insert("base_url".into(), vec!["must start with http://".into()]);
    let html = render(&v);
    assert!(
        html.contains("Fix the 3 highlighted fields below."),
        "{html}"
    );
    for f in ["name", "base_url", "max_concurrent_runs"] {
        assert!(
            html.contains(&format!(r#"aria-describedby="agent-{f}-error""#)),
            "{f}"
        );
        assert!(html.contains(&format!(r#"id="agent-{f}-error""#)), "{f}");
    }
}

#[test]
fn secrets_are_never_rendered() {
    let html = render(&samples::agent_form());
    assert!(
        !html.contains("sk-LEAKED"),
        "a secret value must never be echoed"
    );
    assert!(html.contains(r#"name="env_key" value="OPENAI_API_KEY""#));
    assert!(
        html.contains(r#"type="password" name="env_value" value="" autocomplete="new-password""#)
    );
    assert!(html.contains(r#"placeholder="•••••• (stored; leave empty to keep)""#));
    assert!(html.contains(r#"name="env_secret" value="0" checked"#));
    assert!(html.contains(r#"name="env_value" value="info""#));
    assert!(html.contains(r#"name="env_secret" value="1" aria-label"#));
}

#[test]
fn three_blank_env_rows_follow_with_their_indices() {
    let html = render(&samples::agent_form());
    assert_eq!(html.matches(r#"name="env_key""#).count(), 5);
    assert_eq!(html.matches(r#"name="env_key" value="""#).count(), 3);
    for i in 2..5 {
        assert!(
            html.contains(&format!(r#"name="env_secret" value="{i}""#)),
            "row {i}"
        );
    }
    assert!(!html.contains(r#"value="5""#));
}

#[test]
fn delete_is_a_separate_post_and_read_only_disables() {
    let html = render(&samples::agent_form());
    assert!(html.contains(r#"method="post" action="/w/acme/agents/codex/delete""#));
    let mut v = samples::agent_form();
    v.can_edit = false;
    v.delete_url = None;
    let ro = render(&v);
    assert!(ro.contains(r#"<fieldset class="panel" disabled>"#));
    assert!(!ro.contains("Save agent") && !ro.contains("/delete"));
}

#[test]
fn new_agent_has_create_button_and_blank_rows_only() {
    let v = AgentFormView {
        nav: samples::nav(crate::views::NavItem::Agents),
        is_new: true,
        action: "/w/acme/agents".into(),
        can_edit: true,
        ..Default::default()
    };
    let html = render(&v);
    assert!(html.contains("Create agent") && html.contains("<h1>New agent</h1>"));
    assert!(html.contains("<code>report-to-the-board</code> skill attached"));
    assert!(!render(&samples::agent_form()).contains("skill attached"));
    assert_eq!(html.matches(r#"name="env_key""#).count(), 3);
}

#[test]
fn a_missing_runtime_is_said_on_the_profile() {
    let mut v = samples::agent_form();
    v.runtime_warning = Some("Codex is not installed on this server <here>".into());
    let html = agent_form(&v).into_string();
    assert!(
        html.contains(r#"class="alert alert-error runtime-warning""#),
        "{html}"
    );
    assert!(html.contains("Codex is not installed on this server &lt;here&gt;"));
    v.runtime_warning = None;
    assert!(!agent_form(&v).into_string().contains("runtime-warning"));
}

#[test]
fn a_member_sees_the_runtime_read_only_with_the_reason() {
    let mut v = samples::agent_form();
    v.can_manage_runtime = false;
    let html = render(&v);
    assert!(html.contains(r#"<fieldset class="panel agent-runtime" disabled>"#));
    assert!(html.contains(r#"<fieldset class="panel agent-env" disabled>"#));
    assert!(html.contains(RUNTIME_LOCKED));
    // Still shown (not hidden), and the member's own fields stay editable.
    assert!(html.contains(r#"id="agent-command" name="command""#));
    assert!(html.contains(r#"name="env_key" value="OPENAI_API_KEY""#));
    assert!(html.contains("Save agent"));
    // The name, model and stall timeout are owners' too; the budgets stay open (a member may lower one).
    assert_eq!(
        html.matches(r#"<fieldset class="owners-only" disabled>"#)
            .count(),
        3,
        "{html}"
    );
    assert!(html.contains(LIMITS_LOCKED));
    assert_eq!(html.matches("disabled>").count(), 5, "{html}");
    let manager = render(&samples::agent_form());
    assert!(
        !manager.contains(RUNTIME_LOCKED)
            && !manager.contains(LIMITS_LOCKED)
            && !manager.contains("disabled>")
    );
}
