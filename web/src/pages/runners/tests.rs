use super::*;
use crate::samples::{at, nav};
use crate::views::{NavItem, TokenRowView};

fn runner(name: &str, online: bool, revoked: bool) -> RunnerRowView {
    RunnerRowView {
        name: name.into(),
        online,
        embedded: false,
        revoked,
        version: "0.9.0".into(),
        clis: vec!["claude 2.1.0".into()],
        local_models: vec!["http://127.0.0.1:8080 (qwen)".into()],
        live_runs: vec![("/w/acme/runs/r1".into(), "ACME-7".into())],
        last_heartbeat_at: at(4, 12, 30),
        last_heartbeat_ago: "4 s ago".into(),
    }
}

fn view(can_manage: bool) -> RunnersView {
    RunnersView {
        nav: nav(NavItem::Runners),
        runners: vec![runner("gpu-box", true, false), runner("old", false, true)],
        can_manage,
        tokens: vec![TokenRowView {
            name: "gpu".into(),
            prefix: "mrt_4f2a1b".into(),
            created_at: at(1, 8, 0),
            last_used_at: None,
            revoked: false,
            revoke_url: "/w/acme/runners/tokens/t1/revoke".into(),
        }],
        new_token: Some("mrt_SECRET".into()),
        server_url: Some("http://10.0.0.2:7777".into()),
        name: String::new(),
        errors: Default::default(),
    }
}

#[test]
fn runners_show_state_report_and_live_runs() {
    let html = runners(&view(true)).into_string();
    assert!(html.contains(r#"<tr class="runner-row runner-online" data-runner="gpu-box">"#));
    assert!(html.contains(r#"<tr class="runner-row runner-revoked" data-runner="old">"#));
    assert!(html.contains("<span class=\"pill\">claude 2.1.0</span>"));
    assert!(html.contains("http://127.0.0.1:8080 (qwen)"));
    assert!(html.contains(r#"<a href="/w/acme/runs/r1">ACME-7</a>"#));
    assert!(html.contains("4 s ago"));
    assert!(html.contains(r#"aria-current="page">Runners</a>"#));
}

#[test]
fn token_controls_are_for_managers_and_the_secret_shows_once() {
    let html = runners(&view(true)).into_string();
    assert!(html.contains(r#"id="new-token" type="text" readonly value="mrt_SECRET""#));
    assert!(html.contains(
        "MUSTER_RUNNER_TOKEN=&lt;token&gt; muster runner --server http://10.0.0.2:7777 --name"
    ));
    assert!(html.contains(r#"action="/w/acme/runners/tokens/t1/revoke""#));
    assert!(html.contains(r#"method="post" action="/w/acme/runners/tokens""#));
    let member = runners(&RunnersView {
        new_token: None,
        ..view(false)
    })
    .into_string();
    assert!(member.contains("gpu-box"), "members see the runners");
    assert!(!member.contains("runner-tokens") && !member.contains("/runners/tokens"));
}
