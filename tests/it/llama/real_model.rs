//! A `llama` agent end to end with a real model: llama.cpp's server with SmolLM2-135M
//! (`muster_tests::model_server::local_llama`), the server in-process with its embedded runner, and the
//! run executed as `muster llama-loop` by the built binary. Detection lists the server; an issue assigned
//! through the API streams text events live (seen through the hub before the run ends), records usage at
//! zero cost, succeeds, and the issue gets the answer as the agent's comment and moves to review. Asserts
//! structure, never the model's wording.

use std::path::PathBuf;
use std::time::Duration;

use muster::domain::*;
use muster::hub::{LiveEvent, Topic};
use muster::runner::executor::RunTiming;
use muster_agents::RuntimeKind;
use muster_tests::engine::{Env, seed_workspace};
use muster_tests::model_server::local_llama::{LocalLlama, MODEL_ALIAS};
use muster_tests::{Backend, TestDb};
use serde_json::{Value, json};

/// The longest the whole run may take on a busy machine.
const RUN_DEADLINE: Duration = Duration::from_secs(300);

async fn real_model_run(backend: Backend) {
    let Some(model) = LocalLlama::start().await else {
        return;
    };
    let Some(db) = TestDb::new(backend).await else {
        return;
    };
    muster_tests::init_tracing();
    let store = db.store().await;
    let (owner, ws) = seed_workspace(&store).await;
    let llama = |config: &mut muster::config::Config| {
        config.self_exe = muster_tests::muster_bin();
        // A runtime path for llama must be ignored: llama runs are always `self_exe llama-loop`.
        config.runtime_paths = vec![(
            RuntimeKind::Llama,
            PathBuf::from("/nonexistent/llama-server"),
        )];
        config.llama_urls = vec![("MUSTER_LLAMA_URL".to_owned(), model.base_url.clone())];
    };
    let timing = RunTiming {
        idle_tick: Duration::from_secs(60),
        ..muster_tests::engine::quick_stops()
    };
    let env = Env::boot_with(db, store, ws, owner.id, llama, timing).await;
    let (state, addr, token, ws) = (&env.state, env.addr, &env.token, &env.ws);
    let api = |method: reqwest::Method, path: &str| {
        reqwest::Client::new()
            .request(method, format!("http://{addr}{path}"))
            .bearer_auth(token)
    };

    // Detection: the configured server is listed as llama.cpp with its model.
    let runtimes: Value =
        muster_tests::json_of(api(reqwest::Method::POST, "/api/v1/runtimes/detect")).await;
    let servers = runtimes["model_servers"].as_array().unwrap();
    let ours = servers
        .iter()
        .find(|s| s["url"] == model.base_url.as_str())
        .unwrap_or_else(|| panic!("{runtimes:#}"));
    assert_eq!(ours["kind"], "llama.cpp");
    assert_eq!(ours["status"], "ready");
    assert_eq!(ours["source"], "MUSTER_LLAMA_URL");
    assert_eq!(ours["models"], json!([MODEL_ALIAS]));
    assert_eq!(ours["context_size"], 2048);
    // No llama.cpp binary on PATH here, but a server answers: the Runtimes page says ready, not
    // "Not installed" above a ready server.
    let page = api(reqwest::Method::GET, &format!("/w/{}/runtimes", ws.slug))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let row = page
        .split(r#"<tr id="runtime-llama">"#)
        .nth(1)
        .and_then(|r| r.split("</tr>").next())
        .unwrap_or_else(|| panic!("{page}"));
    assert!(row.contains("Ready (model server)"), "{row}");
    assert!(!row.contains("Not installed"), "{row}");

    // The agent and the issue.
    let mut new = NewAgent::new(AgentName::parse("local").unwrap(), RuntimeKind::Llama);
    new.base_url = Some(format!("{}/v1", model.base_url));
    new.model = Some(MODEL_ALIAS.to_owned());
    new.max_retries = 0;
    new.instructions =
        "You are a helpful assistant. Answer in one or two short sentences.".to_owned();
    new.extra_args = ["--max-tokens", "48", "--temperature", "0"]
        .map(String::from)
        .to_vec();
    let agent = state.store.create_agent(ws.id, &new).await.unwrap();
    let mut issue = NewIssue::new(IssueTitle::parse("What is the capital of France?").unwrap())
        .with_body("Answer the question in the title.")
        .unwrap();
    issue.status = IssueStatus::Todo;
    let issue = state.store.create_issue(ws.id, &issue).await.unwrap();
    let resp = api(
        reqwest::Method::PATCH,
        &format!("/api/v1/issues/{}", issue.key),
    )
    .json(&json!({ "assignee": agent.profile.name.as_str() }))
    .send()
    .await
    .unwrap();
    assert_eq!(resp.status(), 200, "{}", resp.text().await.unwrap());

    // Watch the run through the hub, as a browser's socket does.
    let run = muster_tests::engine::poll("a run to be queued", || async {
        state
            .store
            .list_runs_for_issue(issue.id)
            .await
            .unwrap()
            .pop()
    })
    .await;
    let mut live = state.hub.subscribe(Topic::Run(run.id));
    let watch = async {
        let mut text_before_end = false;
        loop {
            let current = state.store.get_run(run.id).await.unwrap();
            if current.status.is_terminal() {
                return (current, text_before_end);
            }
            if let Ok(Ok(event)) =
                tokio::time::timeout(Duration::from_millis(200), live.recv()).await
                && let LiveEvent::RunEvents { .. } = &*event
            {
                let events = state
                    .store
                    .run_events_since(run.id, 0, 10_000)
                    .await
                    .unwrap();
                let kinds: Vec<&str> = events.iter().map(|e| e.kind.as_str()).collect();
                if kinds.contains(&"text") && !kinds.contains(&"finished") {
                    text_before_end = true;
                }
            }
        }
    };
    let (finished, text_before_end) = tokio::time::timeout(RUN_DEADLINE, watch)
        .await
        .expect("the run ended in time");
    let events = state
        .store
        .run_events_since(run.id, 0, 10_000)
        .await
        .unwrap();
    let kinds: Vec<&str> = events.iter().map(|e| e.kind.as_str()).collect();
    assert_eq!(
        finished.status,
        RunStatus::Succeeded,
        "{finished:?}\n{kinds:?}\n{events:#?}"
    );
    assert!(
        text_before_end,
        "a text event was live before the run finished: {kinds:?}"
    );
    assert!(
        kinds.contains(&"started") && kinds.contains(&"usage"),
        "{kinds:?}"
    );
    assert!(
        events.iter().any(|e| e.kind == "speed"
            && e.payload["tokens_per_second"]
                .as_f64()
                .is_some_and(|t| t > 0.0)),
        "llama.cpp timings are logged: {kinds:?}"
    );
    assert!(
        finished.usage.input_tokens + finished.usage.cache_read_tokens > 0,
        "{:?}",
        finished.usage
    );
    assert!(finished.usage.output_tokens > 0, "{:?}", finished.usage);
    assert_eq!(finished.usage.cost_usd, 0.0);
    let summary = finished.summary.clone().unwrap_or_default();
    assert!(!summary.trim().is_empty());

    // The issue: the answer as the agent's comment, moved to review.
    let issue = muster_tests::engine::poll("the issue to reach review", || async {
        let issue = state.store.get_issue_by_id(issue.id).await.unwrap();
        (issue.status == IssueStatus::InReview).then_some(issue)
    })
    .await;
    let comments = state.store.list_comments(issue.id).await.unwrap();
    assert!(
        comments
            .iter()
            .any(|c| c.author == CommentAuthor::Agent(agent.id) && c.body.trim() == summary.trim()),
        "{comments:#?}"
    );

    // The system message carried the brief: SmolLM2 answers sensibly only with one (LOCAL-LLAMA.md).
    env.stop().await;
    drop(model);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the local model (MUSTER_LOCAL_LLAMA_DIR, installed by .ci/run); run with --include-ignored"]
async fn a_llama_agent_runs_a_real_local_model_sqlite() {
    real_model_run(Backend::Sqlite).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the local model (MUSTER_LOCAL_LLAMA_DIR, installed by .ci/run), and PostgreSQL; run with --include-ignored"]
async fn a_llama_agent_runs_a_real_local_model_postgres() {
    real_model_run(Backend::Postgres).await;
}
