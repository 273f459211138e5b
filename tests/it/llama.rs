//! The local-model agent loop and the model-server probes against the scripted server
//! (`muster_tests::model_server::llama`): what real servers send, and what broken ones do. Each case ends
//! in the right state without hanging (every loop runs under a deadline).

mod real_model;

use std::time::Duration;

use muster_agents::{AgentEvent, FileChangeKind};
use muster_llama::agent::{Settings, run};
use muster_llama::probe::{self, Candidate, ServerKind, ServerStatus};
use muster_tests::model_server::llama::{
    ANSWER_WORDS, Flavor, LlamaServer, MODEL, Scenario, TOKENS_PER_SECOND, TOOL_SAID, USAGE,
};

/// The longest one loop may take before the test fails.
const DEADLINE: Duration = Duration::from_secs(60);

struct Outcome {
    ok: bool,
    events: Vec<AgentEvent>,
    workdir: tempfile::TempDir,
}

impl Outcome {
    fn texts(&self) -> Vec<&str> {
        self.events
            .iter()
            .filter_map(|e| match e {
                AgentEvent::Text { text } => Some(text.as_str()),
                _ => None,
            })
            .collect()
    }

    fn finished(&self) -> (bool, String) {
        match self.events.last() {
            Some(AgentEvent::Finished { ok, summary }) => {
                (*ok, summary.clone().unwrap_or_default())
            }
            other => panic!("the last event is not Finished: {other:?}"),
        }
    }

    fn error(&self) -> String {
        self.events
            .iter()
            .find_map(|e| match e {
                AgentEvent::Error { message, .. } => Some(message.clone()),
                _ => None,
            })
            .unwrap_or_else(|| panic!("no Error event in {:?}", self.events))
    }
}

async fn run_loop(server: &LlamaServer, tweak: impl FnOnce(&mut Settings)) -> Outcome {
    let workdir = tempfile::tempdir().unwrap();
    std::fs::write(workdir.path().join("README.md"), "scripted project\n").unwrap();
    let mut settings = Settings::new(
        &format!("{}/v1", server.base_url()),
        workdir.path().to_path_buf(),
        "You are a careful engineer.".into(),
        "Do the task.".into(),
    );
    settings.max_tokens = Some(256);
    tweak(&mut settings);
    let mut events = Vec::new();
    let ok = tokio::time::timeout(DEADLINE, run(&settings, &mut events))
        .await
        .expect("the loop ended within the deadline");
    Outcome {
        ok,
        events,
        workdir,
    }
}

#[tokio::test]
async fn a_streamed_answer_becomes_coalesced_text_usage_timings_and_the_summary() {
    let server = LlamaServer::start(Scenario::Text, Flavor::LlamaCpp)
        .await
        .unwrap();
    let out = run_loop(&server, |s| s.temperature = Some(0.0)).await;
    assert!(out.ok, "{:?}", out.events);
    assert!(matches!(
        &out.events[0],
        AgentEvent::Started { model: Some(m), .. } if m == MODEL
    ));
    let texts = out.texts();
    assert_eq!(texts.concat(), ANSWER_WORDS.concat());
    assert!(
        texts.len() < ANSWER_WORDS.len(),
        "{} text events for {} deltas: not coalesced",
        texts.len(),
        ANSWER_WORDS.len()
    );
    let usage: Vec<_> = out
        .events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::Usage(u) => Some(*u),
            _ => None,
        })
        .collect();
    assert_eq!(usage.len(), 1);
    assert_eq!((usage[0].input, usage[0].output), USAGE);
    assert_eq!(usage[0].cost_usd, Some(0.0));
    // While it streams, each coalesced piece is followed by the tokens streamed so far (one per delta),
    // so the run page counts them live; the final usage then covers them.
    let streamed: Vec<u64> = out
        .events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::TurnUsage(u) => Some(u.output),
            _ => None,
        })
        .collect();
    assert_eq!(streamed.len(), texts.len(), "{:?}", out.events);
    assert_eq!(streamed.iter().sum::<u64>(), ANSWER_WORDS.len() as u64);
    let first_piece = out
        .events
        .iter()
        .position(|e| matches!(e, AgentEvent::Text { .. }))
        .unwrap();
    assert!(matches!(
        out.events[first_piece + 1],
        AgentEvent::TurnUsage(_)
    ));
    assert!(out.events.iter().any(|e| matches!(
        e,
        AgentEvent::Speed { tokens_per_second, detail }
            if (*tokens_per_second - TOKENS_PER_SECOND).abs() < 1e-9
                && detail.contains(&format!("{TOKENS_PER_SECOND:.1} tokens/s"))
    )));
    assert_eq!(
        out.finished(),
        (true, ANSWER_WORDS.concat().trim().to_owned())
    );

    let requests = server.chat_requests();
    assert_eq!(requests.len(), 1);
    let r = &requests[0];
    assert_eq!(r["stream"], true);
    assert_eq!(r["messages"][0]["role"], "system");
    assert_eq!(r["messages"][0]["content"], "You are a careful engineer.");
    assert_eq!(r["messages"][1]["role"], "user");
    assert_eq!(r["temperature"], 0.0);
    assert_eq!(r["max_tokens"], 256);
    assert_eq!(
        r["model"], MODEL,
        "the model comes from /v1/models when unset"
    );
    let tools: Vec<&str> = r["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        tools,
        ["list_dir", "read_file", "write_file", "run_command"]
    );
}

#[tokio::test]
async fn a_tool_call_runs_in_the_workdir_and_its_result_goes_back_to_the_model() {
    let scenario = Scenario::Tool {
        name: "write_file".into(),
        arguments: r#"{"path":"notes/plan.md","content":"step one\n"}"#.into(),
    };
    let server = LlamaServer::start(scenario, Flavor::LlamaCpp)
        .await
        .unwrap();
    let out = run_loop(&server, |_| {}).await;
    assert!(out.ok, "{:?}", out.events);
    let written = std::fs::read_to_string(out.workdir.path().join("notes/plan.md")).unwrap();
    assert_eq!(written, "step one\n");
    let kinds: Vec<&str> = out.events.iter().map(AgentEvent::kind).collect();
    let call = kinds.iter().position(|k| *k == "tool_call").unwrap();
    let change = kinds.iter().position(|k| *k == "file_change").unwrap();
    let result = kinds.iter().position(|k| *k == "tool_result").unwrap();
    assert!(call < change && change < result, "{kinds:?}");
    assert!(out.events.contains(&AgentEvent::FileChange {
        path: "notes/plan.md".into(),
        change: FileChangeKind::Add
    }));
    assert!(matches!(
        &out.events[result],
        AgentEvent::ToolResult { id, is_error: false, .. } if id == "call_1"
    ));
    let (ok, summary) = out.finished();
    assert!(
        ok && summary.starts_with(TOOL_SAID) && summary.contains("wrote 9 bytes"),
        "{summary}"
    );
    let second = &server.chat_requests()[1];
    let messages = second["messages"].as_array().unwrap();
    assert_eq!(messages[2]["role"], "assistant");
    assert_eq!(
        messages[2]["tool_calls"][0]["function"]["name"],
        "write_file"
    );
    assert_eq!(messages[3]["role"], "tool");
    assert_eq!(messages[3]["tool_call_id"], "call_1");
}

#[tokio::test]
async fn a_tool_call_outside_the_workdir_is_refused_and_the_run_goes_on() {
    for arguments in [
        r#"{"path":"../../../../etc/passwd"}"#,
        r#"{"path":"/etc/passwd"}"#,
    ] {
        let scenario = Scenario::Tool {
            name: "read_file".into(),
            arguments: arguments.into(),
        };
        let server = LlamaServer::start(scenario, Flavor::LlamaCpp)
            .await
            .unwrap();
        let out = run_loop(&server, |_| {}).await;
        assert!(out.ok, "{:?}", out.events);
        let refused = out.events.iter().find_map(|e| match e {
            AgentEvent::ToolResult {
                output,
                is_error: true,
                ..
            } => Some(output.clone()),
            _ => None,
        });
        let refused = refused.expect("an error tool result");
        assert!(!refused.contains("root:"), "{refused}");
        let tool_message = &server.chat_requests()[1]["messages"][3];
        assert_eq!(tool_message["content"], refused.as_str());
    }
}

#[tokio::test]
async fn read_only_agents_cannot_write_even_when_the_model_asks() {
    let scenario = Scenario::Tool {
        name: "run_command".into(),
        arguments: r#"{"command":"touch pwned"}"#.into(),
    };
    let server = LlamaServer::start(scenario, Flavor::LlamaCpp)
        .await
        .unwrap();
    let out = run_loop(&server, |s| s.allow_write = false).await;
    assert!(out.ok);
    assert!(!out.workdir.path().join("pwned").exists());
    assert!(out.events.iter().any(|e| matches!(
        e,
        AgentEvent::ToolResult { is_error: true, output, .. } if output.contains("read_only")
    )));
    let offered = server.chat_requests()[0]["tools"].as_array().unwrap().len();
    assert_eq!(offered, 2);
}

#[tokio::test]
async fn malformed_chunks_are_logged_and_skipped() {
    let server = LlamaServer::start(Scenario::Malformed, Flavor::OpenAi)
        .await
        .unwrap();
    let out = run_loop(&server, |_| {}).await;
    assert!(out.ok, "{:?}", out.events);
    let raws = out
        .events
        .iter()
        .filter(|e| matches!(e, AgentEvent::Raw { line } if line.contains("malformed") || line.contains("unexpected line")))
        .count();
    assert_eq!(raws, 3, "{:?}", out.events);
    assert_eq!(out.texts().concat(), ANSWER_WORDS.concat());
}

#[tokio::test]
async fn a_server_that_dies_mid_stream_fails_the_run_and_keeps_the_partial_text() {
    let server = LlamaServer::start(Scenario::DiesMidStream, Flavor::LlamaCpp)
        .await
        .unwrap();
    let out = run_loop(&server, |_| {}).await;
    assert!(!out.ok);
    assert_eq!(out.texts().concat(), ANSWER_WORDS[..3].concat());
    let error = out.error();
    assert!(
        error.contains("broke off") || error.contains("closed the stream"),
        "{error}"
    );
    assert!(!out.finished().0);
}

#[tokio::test]
async fn an_html_answer_fails_the_run_naming_its_type_but_never_quoting_it() {
    let server = LlamaServer::start(Scenario::Html, Flavor::OpenAi)
        .await
        .unwrap();
    let out = run_loop(&server, |_| {}).await;
    assert!(!out.ok);
    let error = out.error();
    assert_eq!(
        error, "the model server answered text/html, not an event stream",
        "a base URL may point at any service: its pages are not echoed"
    );
}

#[tokio::test]
async fn a_stream_that_never_ends_is_cut_off() {
    let server = LlamaServer::start(Scenario::Forever, Flavor::LlamaCpp)
        .await
        .unwrap();
    let out = run_loop(&server, |s| s.max_tokens = Some(8)).await;
    assert!(!out.ok);
    assert!(out.error().contains("kept streaming"), "{}", out.error());
    assert!(!out.texts().is_empty(), "what arrived was shown");
}

#[tokio::test]
async fn a_silent_server_trips_the_idle_timeout() {
    let server = LlamaServer::start(Scenario::Silent, Flavor::LlamaCpp)
        .await
        .unwrap();
    let out = run_loop(&server, |s| s.idle_timeout = Duration::from_millis(500)).await;
    assert!(!out.ok);
    assert!(out.error().contains("sent nothing"), "{}", out.error());
}

#[tokio::test]
async fn a_server_that_rejects_tools_gets_a_plain_answer_request() {
    let server = LlamaServer::start(Scenario::RejectsTools, Flavor::LlamaCpp)
        .await
        .unwrap();
    let out = run_loop(&server, |_| {}).await;
    assert!(out.ok, "{:?}", out.events);
    assert!(out.events.iter().any(
        |e| matches!(e, AgentEvent::Raw { line } if line.contains("continuing without tools"))
    ));
    let requests = server.chat_requests();
    assert_eq!(requests.len(), 2);
    assert!(requests[0].get("tools").is_some() && requests[1].get("tools").is_none());
    assert_eq!(out.finished().1, ANSWER_WORDS.concat().trim());
}

#[tokio::test]
async fn tools_off_sends_no_tools_and_the_answer_is_the_summary() {
    let server = LlamaServer::start(Scenario::Text, Flavor::Ollama)
        .await
        .unwrap();
    let out = run_loop(&server, |s| {
        s.tools = false;
        s.model = Some("llama3.2:latest".into());
    })
    .await;
    assert!(out.ok);
    let r = &server.chat_requests()[0];
    assert!(r.get("tools").is_none());
    assert_eq!(r["model"], "llama3.2:latest");
}

#[tokio::test]
async fn an_unreachable_server_fails_with_a_network_error() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let workdir = tempfile::tempdir().unwrap();
    let settings = Settings::new(
        &format!("http://127.0.0.1:{port}"),
        workdir.path().to_path_buf(),
        "s".into(),
        "u".into(),
    );
    let mut events = Vec::new();
    assert!(!run(&settings, &mut events).await);
    assert!(matches!(
        &events[..],
        [
            AgentEvent::Error {
                class: Some(muster_agents::ErrorClass::Network),
                ..
            },
            AgentEvent::Finished { ok: false, .. }
        ]
    ));
}

#[tokio::test]
async fn probes_tell_llama_cpp_ollama_and_openai_servers_apart() {
    let llama = LlamaServer::start(Scenario::Text, Flavor::LlamaCpp)
        .await
        .unwrap();
    let ollama = LlamaServer::start(Scenario::Text, Flavor::Ollama)
        .await
        .unwrap();
    let openai = LlamaServer::start(Scenario::Text, Flavor::OpenAi)
        .await
        .unwrap();
    let html = LlamaServer::start(Scenario::Html, Flavor::OpenAi)
        .await
        .unwrap();
    let not_a_model_server = {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let app = axum::Router::new().fallback(|| async { "hello" });
        tokio::spawn(async move { axum::serve(listener, app).await });
        format!("http://{addr}")
    };
    let found = probe::scan(
        vec![
            Candidate::explicit(&format!("{}/v1", llama.base_url()), "MUSTER_LLAMA_URL"),
            Candidate::explicit(ollama.base_url(), "OLLAMA_HOST"),
            Candidate::explicit(openai.base_url(), "agent local"),
            Candidate::explicit(&not_a_model_server, "LLAMA_API_BASE"),
            Candidate {
                url: html.base_url().to_owned(),
                source: "port (implicit)".into(),
                explicit: false,
            },
        ],
        Duration::from_secs(2),
    )
    .await;
    let summary: Vec<(Option<ServerKind>, ServerStatus, &str)> = found
        .iter()
        .map(|s| (s.kind, s.status, s.source.as_str()))
        .collect();
    assert_eq!(
        summary,
        [
            (
                Some(ServerKind::LlamaCpp),
                ServerStatus::Ready,
                "MUSTER_LLAMA_URL"
            ),
            (Some(ServerKind::Ollama), ServerStatus::Ready, "OLLAMA_HOST"),
            (Some(ServerKind::OpenAi), ServerStatus::Ready, "agent local"),
            (None, ServerStatus::Unrecognized, "LLAMA_API_BASE"),
            (
                Some(ServerKind::OpenAi),
                ServerStatus::Ready,
                "port (implicit)"
            ),
        ]
    );
    assert_eq!(found[0].url, llama.base_url());
    assert_eq!(found[0].models, [MODEL]);
    assert_eq!(found[0].version.as_deref(), Some("b4567-scripted"));
    assert_eq!(found[0].context_size, Some(2048));
    assert_eq!(found[0].supports_tools, Some(true));
    assert_eq!(found[1].models, ["llama3.2:latest", MODEL]);
    assert_eq!(found[1].version.as_deref(), Some("0.14.1"));
    assert_eq!(found[2].models, [MODEL]);
}
