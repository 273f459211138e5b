//! The pure waiting decision: who could take a run, and the sentence when nobody can.

use super::*;

fn remote(name: &str, online: bool, kinds: &[RuntimeKind]) -> Candidate {
    Candidate {
        name: name.to_owned(),
        online,
        revoked: false,
        kinds: Some(kinds.to_vec()),
    }
}

fn runner(
    detected: serde_json::Value,
    remote: bool,
    beat_secs_ago: i64,
) -> (Runner, DateTime<Utc>) {
    let now = Utc::now();
    let r = Runner {
        id: crate::domain::RunnerId(uuid::Uuid::new_v4()),
        name: "box".into(),
        version: "0.1.0".into(),
        detected,
        last_heartbeat_at: now - chrono::TimeDelta::seconds(beat_secs_ago),
        created_at: now,
        workspace_id: None,
        token_id: remote.then(|| RunnerTokenId(uuid::Uuid::new_v4())),
        revoked: false,
    };
    (r, now)
}

#[test]
fn an_embedded_runner_takes_any_kind_and_a_remote_one_what_it_reported() {
    let (embedded, now) = runner(serde_json::json!([]), false, 0);
    let c = Candidate::of(&embedded, now);
    assert_eq!(c.kinds, None);
    assert!(can_take(&c, RuntimeKind::Codex, &[]));

    let detected = serde_json::json!({"runtimes": [{"kind": "claude", "version": "2.1.0",
        "path": "/usr/bin/claude"}, {"kind": "someday"}], "local_models": [], "max_runs": 4});
    let (r, now) = runner(detected, true, 30);
    let c = Candidate::of(&r, now);
    assert!(c.online, "a heartbeat exactly 30 s old is still online");
    assert_eq!(
        c.kinds,
        Some(vec![RuntimeKind::Claude, RuntimeKind::Custom]),
        "an unknown kind is skipped, custom always there, no llama without a model server"
    );
    assert!(!can_take(&c, RuntimeKind::Llama, &[]));

    let (r, now) = runner(
        serde_json::json!({"local_models": [{"url": "http://127.0.0.1:8080", "models": ["q"]}]}),
        true,
        31,
    );
    let c = Candidate::of(&r, now);
    assert!(!c.online, "31 s without a heartbeat is offline");
    assert_eq!(c.kinds, Some(vec![RuntimeKind::Custom, RuntimeKind::Llama]));
    let (r, now) = runner(serde_json::json!("not an object"), true, 0);
    assert_eq!(
        Candidate::of(&r, now).kinds,
        Some(vec![RuntimeKind::Custom]),
        "an unreadable report offers nothing but custom"
    );
}

#[test]
fn an_unbound_run_waits_for_a_runner_with_its_cli_or_any_online_one() {
    assert_eq!(
        waiting_reason(&[], RuntimeKind::Claude, &[]).as_deref(),
        Some("waiting for a runner: none is online")
    );
    let offline = remote("gpu", false, &[RuntimeKind::Codex]);
    assert_eq!(
        waiting_reason(std::slice::from_ref(&offline), RuntimeKind::Codex, &[]).as_deref(),
        Some("waiting for a runner: none is online")
    );
    let claude_only = remote("mac", true, &[RuntimeKind::Claude]);
    assert_eq!(
        waiting_reason(&[offline, claude_only.clone()], RuntimeKind::Codex, &[]).as_deref(),
        Some("waiting for a runner with Codex")
    );
    assert_eq!(
        waiting_reason(std::slice::from_ref(&claude_only), RuntimeKind::Claude, &[]),
        None
    );
    let mut revoked = remote("old", true, &[RuntimeKind::Codex]);
    revoked.revoked = true;
    assert_eq!(
        waiting_reason(&[revoked], RuntimeKind::Codex, &[]).as_deref(),
        Some("waiting for a runner: none is online"),
        "a revoked runner takes nothing"
    );
}

#[test]
fn a_bound_run_waits_for_its_named_runners_and_says_what_each_lacks() {
    let bound = vec!["gpu".to_owned()];
    let any = Candidate {
        name: "embedded-1".into(),
        online: true,
        revoked: false,
        kinds: None,
    };
    assert_eq!(
        waiting_reason(std::slice::from_ref(&any), RuntimeKind::Claude, &bound).as_deref(),
        Some("waiting for runner gpu (never connected)"),
        "an online runner of another name does not count"
    );
    let gpu_off = remote("gpu", false, &[RuntimeKind::Claude]);
    assert_eq!(
        waiting_reason(&[any, gpu_off.clone()], RuntimeKind::Claude, &bound).as_deref(),
        Some("waiting for runner gpu (offline)")
    );
    let gpu_on = remote("gpu", true, &[RuntimeKind::Claude]);
    assert_eq!(
        waiting_reason(std::slice::from_ref(&gpu_on), RuntimeKind::Codex, &bound).as_deref(),
        Some("waiting for runner gpu (it has no Codex)")
    );
    assert_eq!(waiting_reason(&[gpu_on], RuntimeKind::Claude, &bound), None);
    let mut gpu_revoked = remote("gpu", true, &[RuntimeKind::Claude]);
    gpu_revoked.revoked = true;
    let two = vec!["gpu".to_owned(), "mac".to_owned()];
    assert_eq!(
        waiting_reason(&[gpu_revoked, gpu_off], RuntimeKind::Claude, &two).as_deref(),
        Some(
            "waiting for one of the runners gpu, mac (gpu: its token is revoked; mac: never connected)"
        )
    );
}
