//! Issue 26, findings 13 and 16, with the real pinned CLIs through the run engine and the real sandbox:
//! - each CLI completes a run whose model server is reached through the run's egress proxy (its base
//!   URL names `model.test`, which the proxy resolves to the scripted model server), and each request
//!   is an `egress` event;
//! - a Claude agent set up the usual Claude way, `ANTHROPIC_BASE_URL` in its env and no Base URL field,
//!   completes a run (its port used to be refused: Claude retried for minutes and failed "network").

use super::*;
use muster::domain::RunStatus;

/// The name the proxy resolves to the scripted model server.
const MODEL_HOST: &str = "model.test";

fn sandboxed() -> bool {
    matches!(
        muster::sandbox::decide(muster::sandbox::detect(), false),
        muster::sandbox::Mode::Sandboxed { .. }
    )
}

/// A run of `cli` whose base URL is `http://model.test:<port>…`: the model requests go through the proxy.
async fn through_the_proxy(cli: &Cli) {
    let Some(binary) = locate(cli) else { return };
    if !sandboxed() {
        eprintln!("!!! SKIPPING: this kernel cannot sandbox agents (no egress proxy without it)");
        return;
    }
    let server = ModelServer::start().await.unwrap();
    let addr: std::net::SocketAddr = server
        .base_url()
        .trim_start_matches("http://")
        .parse()
        .unwrap();
    let Some(engine) = Engine::start_configured(
        muster_tests::Backend::Sqlite,
        vec![(cli.kind, binary)],
        |c| c.egress_resolve = vec![(MODEL_HOST.to_owned(), addr)],
    )
    .await
    else {
        return;
    };
    let base = format!("http://{MODEL_HOST}:{}{}", addr.port(), cli.base_path);
    let key = cli.key_var;
    let agent = engine
        .agent(cli, &server, &[(key, FAKE_KEY, true)], |new| {
            new.base_url = Some(base.clone());
        })
        .await;
    let run = engine.run(&agent, "Say hello").await;
    let events = engine.events(&run).await;
    let report = run_report(&run, &events);
    assert_eq!(run.status, RunStatus::Succeeded, "{report}");
    assert!(!served(&server, cli, 0).is_empty(), "{report}");
    let through: Vec<&serde_json::Value> = events
        .iter()
        .filter(|e| e.kind == "egress")
        .map(|e| &e.payload)
        .filter(|p| p["host"] == MODEL_HOST && p["allowed"] == true)
        .collect();
    assert!(
        !through.is_empty(),
        "no model request went through the proxy\n{report}"
    );
    assert!(
        through.iter().any(|p| p["bytes_down"].as_u64() > Some(0)),
        "{report}"
    );
    let sandbox = events.iter().find(|e| e.kind == "sandbox").unwrap();
    let always = sandbox.payload["egress"]["always"].as_array().unwrap();
    assert!(
        always.contains(&serde_json::json!(format!("{MODEL_HOST}:{}", addr.port()))),
        "{report}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[ignore = "needs the agent CLIs (MUSTER_AGENT_CLIS_DIR, installed by .ci/run); run with --include-ignored"]
async fn claude_code_reaches_its_model_through_the_egress_proxy() {
    through_the_proxy(&CLAUDE).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[ignore = "needs the agent CLIs (MUSTER_AGENT_CLIS_DIR, installed by .ci/run); run with --include-ignored"]
async fn codex_reaches_its_model_through_the_egress_proxy() {
    through_the_proxy(&CODEX).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[ignore = "needs the agent CLIs (MUSTER_AGENT_CLIS_DIR, installed by .ci/run); run with --include-ignored"]
async fn opencode_reaches_its_model_through_the_egress_proxy() {
    through_the_proxy(&OPENCODE).await;
}

/// Finding 16: `ANTHROPIC_BASE_URL` in the agent's env, no Base URL field. Its loopback port is allowed
/// (it counts as the base URL), so the run completes against the scripted server.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[ignore = "needs the agent CLIs (MUSTER_AGENT_CLIS_DIR, installed by .ci/run); run with --include-ignored"]
async fn a_claude_agent_with_anthropic_base_url_in_its_env_completes_a_run() {
    let Some(binary) = locate(&CLAUDE) else {
        return;
    };
    let Some(engine) = Engine::start(muster_tests::Backend::Sqlite, &CLAUDE, &binary).await else {
        return;
    };
    let server = ModelServer::start().await.unwrap();
    let url = server.base_url().to_owned();
    let agent = engine
        .agent(
            &CLAUDE,
            &server,
            &[
                ("ANTHROPIC_BASE_URL", &url, false),
                ("ANTHROPIC_API_KEY", FAKE_KEY, true),
            ],
            |new| new.base_url = None,
        )
        .await;
    let run = engine.run(&agent, "Say hello").await;
    let events = engine.events(&run).await;
    let report = run_report(&run, &events);
    assert_eq!(run.status, RunStatus::Succeeded, "{report}");
    assert!(!served(&server, &CLAUDE, 0).is_empty(), "{report}");
    if sandboxed() {
        let sandbox = events.iter().find(|e| e.kind == "sandbox").unwrap();
        let port = u64::from(muster::sandbox::policy::url_port(&url).unwrap());
        let ports = sandbox.payload["connect_ports"].as_array().unwrap();
        assert!(ports.iter().any(|p| p.as_u64() == Some(port)), "{report}");
    }
}

/// A local model server named so that it is no loopback literal (`localhost.`): Claude Code (Bun) does not
/// match it against `NO_PROXY` and sends its requests through the egress proxy, which lets them through
/// (the model endpoint is on every run's list) — it used to answer 403, which Claude reported as "Failed
/// to authenticate".
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[ignore = "needs the agent CLIs (MUSTER_AGENT_CLIS_DIR, installed by .ci/run); run with --include-ignored"]
async fn claude_code_reaches_a_local_model_named_localhost_dot_through_the_proxy() {
    let Some(binary) = locate(&CLAUDE) else {
        return;
    };
    if !sandboxed() {
        eprintln!("!!! SKIPPING: this kernel cannot sandbox agents");
        return;
    }
    let Some(engine) = Engine::start(muster_tests::Backend::Sqlite, &CLAUDE, &binary).await else {
        return;
    };
    let server = ModelServer::start().await.unwrap();
    let port = muster::sandbox::policy::url_port(server.base_url()).unwrap();
    let url = format!("http://localhost.:{port}");
    let agent = engine
        .agent(
            &CLAUDE,
            &server,
            &[("ANTHROPIC_API_KEY", FAKE_KEY, true)],
            |new| {
                new.base_url = Some(url.clone());
            },
        )
        .await;
    let run = engine.run(&agent, "Say hello").await;
    let events = engine.events(&run).await;
    let report = run_report(&run, &events);
    assert_eq!(run.status, RunStatus::Succeeded, "{report}");
    assert!(!served(&server, &CLAUDE, 0).is_empty(), "{report}");
}
