//! Runs in real headless Chromium with the embedded runner and stand-in agents (shell scripts replaying
//! Claude stream-json lines): a person assigns an issue in the browser, opens the run page and watches
//! the log and the token counter move live until the run succeeds and the issue is in review with the
//! agent's summary in its run's entry of the issue's timeline; a second run is stopped with the Cancel
//! button; a failing run lands in the inbox.
//! A local model's answer (the scripted llama server, word by word; and the real SmolLM2) reads as one
//! growing block, and its agent's page agrees with the Runtimes page about its server.
//! Screenshots `run.png`, `run-local-model.png` and `inbox.png` land in `target/screenshots/`.

use std::path::Path;
use std::time::Duration;

use muster::domain::*;
use muster_tests::browser::{Browser, POLL};
use muster_tests::engine::{Env, quick_stops};
use muster_tests::model_server::llama::{Flavor, LlamaServer, MODEL, Scenario};
use muster_tests::model_server::local_llama::{LocalLlama, MODEL_ALIAS};
use muster_tests::seed;
use muster_tests::{Backend, TestDb};

/// Generous: a cold Chromium and real child processes on a loaded 2-core machine.
pub(crate) const LIVE: Duration = Duration::from_secs(30);

/// Claude stream-json lines, shaped like the recorded fixtures.
pub(crate) const INIT: &str = r#"{"type":"system","subtype":"init","cwd":"/tmp","session_id":"sess-browser-1","tools":["Bash"],"model":"claude-sonnet-4-5","permissionMode":"bypassPermissions"}"#;
pub(crate) const TEXT_1: &str = r#"{"type":"assistant","message":{"id":"m1","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[{"type":"text","text":"Reading the **parser** first."}]},"session_id":"sess-browser-1"}"#;
pub(crate) const THINK: &str = r#"{"type":"assistant","message":{"id":"m1","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[{"type":"thinking","thinking":"The empty input case probably hits an unwrap.","signature":"x"}]},"session_id":"sess-browser-1"}"#;
pub(crate) const TOOL: &str = r#"{"type":"assistant","message":{"id":"m2","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[{"type":"tool_use","id":"toolu_b1","name":"Bash","input":{"command":"cargo test parse","description":"Run the parser tests"}}]},"session_id":"sess-browser-1"}"#;
pub(crate) const RESULT: &str = r#"{"type":"user","message":{"role":"user","content":[{"tool_use_id":"toolu_b1","type":"tool_result","content":"test parse_empty ... ok\ntest parse_nested ... ok\n\ntest result: ok. 2 passed","is_error":false}]},"session_id":"sess-browser-1"}"#;
pub(crate) const TEXT_2: &str = r#"{"type":"assistant","message":{"id":"m3","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[{"type":"text","text":"Fixed `parse_empty`; all parser tests pass now."}]},"session_id":"sess-browser-1"}"#;
pub(crate) const DONE: &str = r#"{"type":"result","subtype":"success","is_error":false,"duration_ms":4000,"num_turns":2,"result":"Fixed `parse_empty`; all parser tests pass now.","session_id":"sess-browser-1","total_cost_usd":0.0123,"usage":{"input_tokens":1234,"cache_creation_input_tokens":0,"cache_read_input_tokens":5000,"output_tokens":321}}"#;

/// The run engine's [`Env`] with short stop graces on Ada's `acme`, with agents and issues as these pages
/// are checked with.
pub(crate) struct Server(Env);

impl std::ops::Deref for Server {
    type Target = Env;

    fn deref(&self) -> &Env {
        &self.0
    }
}

impl Server {
    pub(crate) async fn start(backend: Backend) -> Option<Server> {
        let db = TestDb::new(backend).await?;
        let store = db.store().await;
        let ada = seed::person("ada@acme.test", "Ada Lovelace");
        let (ada, ws) = seed::owner_of(&store, ada, ("Acme Robots", "acme", "ACM")).await;
        let env = Env::boot_with(db, store, ws, ada.id, |_| {}, quick_stops()).await;
        Some(Server(env))
    }

    /// A `custom` agent running `script`, in amber, with no variables.
    pub(crate) async fn agent(&self, name: &str, script: &Path) -> Agent {
        let mut new = NewAgent::new(AgentName::parse(name).unwrap(), RuntimeKind::Custom);
        new.command = Some(script.display().to_string());
        new.max_retries = 0;
        new.color = "#d97706".into();
        self.store.create_agent(self.ws.id, &new).await.unwrap()
    }

    /// A todo issue with no body.
    pub(crate) async fn issue(&self, title: &str) -> Issue {
        let mut new = NewIssue::new(IssueTitle::parse(title).unwrap());
        new.status = IssueStatus::Todo;
        self.store.create_issue(self.ws.id, &new).await.unwrap()
    }

    pub(crate) async fn stop(self) {
        self.0.stop().await;
    }
}

/// The texts of the page's "runtime not ready" banners.
async fn runtime_warnings(browser: &Browser) -> serde_json::Value {
    let script =
        "return Array.from(document.querySelectorAll('.runtime-warning')).map(w => w.innerText)";
    js(browser, script).await
}

/// Echoes `lines` one by one with a short pause, like a CLI streaming its work.
pub(crate) fn replay(lines: &[&str]) -> String {
    lines
        .iter()
        .map(|l| format!("sleep 0.4\ncat <<'EOF'\n{l}\nEOF\n"))
        .collect()
}

/// Signs Ada in.
pub(crate) async fn sign_in(browser: &Browser, server: &Server) {
    browser
        .sign_in(&server.url(""), "ada@acme.test", seed::PASSWORD, LIVE)
        .await
        .unwrap();
}

/// Assigns `agent` on the issue page's side panel, as a person would.
async fn assign(browser: &Browser, server: &Server, issue: &Issue, agent: &Agent) {
    browser
        .goto(&server.url(&format!("/w/acme/issues/{}", issue.key)))
        .await
        .unwrap();
    // The side panel's assignee saves as soon as it changes.
    browser
        .select("#prop-assignee", &format!("agent:{}", agent.id))
        .await
        .unwrap();
    browser
        .wait_for_text(
            "main",
            &format!("assigned this to {}", agent.profile.name.as_str()),
            LIVE,
        )
        .await
        .unwrap();
}

/// Opens the issue's newest run: the last run entry of the issue page's timeline.
async fn open_latest_run(browser: &Browser) {
    browser
        .find_within(".thread-run a.run-link", LIVE)
        .await
        .unwrap();
    js(
        browser,
        "const links = document.querySelectorAll('.thread-run a.run-link'); links[links.length - 1].click();",
    )
    .await;
    browser.find_within(".run-page", LIVE).await.unwrap();
}

pub(crate) async fn js(browser: &Browser, script: &str) -> serde_json::Value {
    browser.execute(script, vec![]).await.unwrap()
}

async fn watch_a_run_live(backend: Backend, screenshots: bool) {
    let Some(server) = Server::start(backend).await else {
        return;
    };
    let Some(browser) = Browser::start().await else {
        return;
    };
    let go = server.scripts.path().join("go");
    let coder = server
        .agent(
            "claude-coder",
            &server.script(
                "coder.sh",
                &format!(
                    "cat >/dev/null\ncat <<'EOF'\n{INIT}\nEOF\nwhile [ ! -f '{}' ]; do sleep 0.1; done\n{}sleep 1\n",
                    go.display(),
                    replay(&[TEXT_1, THINK, TOOL, RESULT, TEXT_2, DONE]),
                ),
            ),
        )
        .await;
    let issue = server.issue("Parser crashes on empty input").await;
    sign_in(&browser, &server).await;
    assign(&browser, &server, &issue, &coder).await;
    open_latest_run(&browser).await;

    // The agent holds its output until the page is open: everything after this arrives live.
    browser
        .wait_for_text(".run-log", "claude-sonnet-4-5", LIVE)
        .await
        .unwrap();
    assert_eq!(browser.text(".counter-input").await.unwrap(), "0");
    let marker = js(&browser, "window.__same_page = true; return true").await;
    assert_eq!(marker, serde_json::Value::Bool(true));
    std::fs::write(&go, "").unwrap();
    browser
        .wait_for_text(".run-log .ev-text", "Reading the parser first.", LIVE)
        .await
        .unwrap();
    browser
        .wait_for_text(".run-log .ev-tool .tool-result", "2 passed", LIVE)
        .await
        .unwrap();
    // The counters move with each model request, then settle on the final report.
    browser
        .wait_for_text(".run-head .run-status", "Succeeded", LIVE)
        .await
        .unwrap();
    browser
        .wait_for_text(".counter-input", "1,234", LIVE)
        .await
        .unwrap();
    browser
        .wait_for_text(".counter-cache", "5,000", LIVE)
        .await
        .unwrap();
    assert_eq!(
        js(&browser, "return window.__same_page === true").await,
        serde_json::Value::Bool(true),
        "all of it came over the socket, without a reload"
    );
    // Each event once, in order; the thinking is folded; the tool result sits in its call's block.
    let seqs = js(
        &browser,
        "return Array.from(document.querySelectorAll('.run-log > li')).map(li => Number(li.dataset.seq))",
    )
    .await;
    let seqs: Vec<i64> = serde_json::from_value(seqs).unwrap();
    assert!(
        seqs.windows(2).all(|w| w[0] < w[1]),
        "ascending, no repeats: {seqs:?}"
    );
    let texts = js(
        &browser,
        "return document.querySelectorAll('.run-log .ev-text').length",
    )
    .await;
    assert_eq!(texts, serde_json::json!(2));
    browser
        .find(".run-log .ev-thinking details:not([open])")
        .await
        .unwrap();
    assert!(
        !browser.text(".run-head").await.unwrap().contains("Retry"),
        "a succeeded run offers no retry"
    );
    let elapsed = browser.text(".counter-elapsed").await.unwrap();
    assert!(
        elapsed.ends_with('s'),
        "the clock shows the run's time: {elapsed}"
    );
    // A reconnect (htmx's ws extension reuses its first URL) resumes from the seq the page holds now.
    let cursor: i64 = js(
        &browser,
        "return Number(document.querySelector('.run-cursor').dataset.seq)",
    )
    .await
    .as_i64()
    .unwrap();
    assert!(cursor >= *seqs.last().unwrap(), "{cursor} vs {seqs:?}");
    let first = js(
        &browser,
        "return document.querySelector('.run-live').getAttribute('ws-connect')",
    )
    .await;
    assert!(
        !first
            .as_str()
            .unwrap()
            .ends_with(&format!("after={cursor}")),
        "the page opened earlier: {first}"
    );
    let resumed = js(
        &browser,
        "const path = document.querySelector('.run-live').getAttribute('ws-connect'); \
         const s = htmx.createWebSocket(location.origin.replace('http', 'ws') + path); \
         const url = s.url; s.close(); return url;",
    )
    .await;
    assert!(
        resumed
            .as_str()
            .unwrap()
            .ends_with(&format!("/live?after={cursor}")),
        "{resumed}"
    );
    if screenshots {
        browser.screenshot("run").await.unwrap();
    }

    // The issue is in review with the agent's summary as a comment. (The page followed the log's tail:
    // back to the top, where the link is, out from under the sticky top bar.)
    js(&browser, "window.scrollTo(0, 0); return true").await;
    browser.click(".run-issue-link").await.unwrap();
    browser
        .wait_for_text(".issue-side", "In review", LIVE)
        .await
        .unwrap();
    browser
        .wait_for_text(".thread-summary", "all parser tests pass now", LIVE)
        .await
        .unwrap();
    browser
        .wait_for_text(".thread-run", "Succeeded", LIVE)
        .await
        .unwrap();

    // A second agent that never finishes, stopped with the Cancel button.
    let sleeper = server
        .agent(
            "slow-poke",
            &server.script(
                "sleeper.sh",
                &format!("cat >/dev/null\ncat <<'EOF'\n{INIT}\nEOF\nsleep 120"),
            ),
        )
        .await;
    let stuck = server.issue("Rewrite everything in one go").await;
    assign(&browser, &server, &stuck, &sleeper).await;
    open_latest_run(&browser).await;
    browser
        .wait_for_text(".run-head .run-status", "Running", LIVE)
        .await
        .unwrap();
    js(&browser, "window.confirm = () => true; return true").await;
    browser.click("form.run-cancel button").await.unwrap();
    browser
        .wait_for_text(".run-head .run-status", "Cancelled", LIVE)
        .await
        .unwrap();
    let runs = server.store.list_runs_for_issue(stuck.id).await.unwrap();
    assert_eq!(runs[0].status, RunStatus::Cancelled);
    browser.find(".run-head form.run-retry").await.unwrap();

    // A failing agent: its run ends failed and the inbox says so, with a retry.
    let failer = server
        .agent(
            "flaky-bot",
            &server.script(
                "fail.sh",
                "cat >/dev/null\necho 'Error: the test database is gone' >&2\nexit 1",
            ),
        )
        .await;
    let doomed = server.issue("Migrate the session store").await;
    assign(&browser, &server, &doomed, &failer).await;
    browser.goto(&server.url("/w/acme/inbox")).await.unwrap();
    let started = std::time::Instant::now();
    while !browser
        .text("main")
        .await
        .unwrap()
        .contains("flaky-bot failed on ACM-3")
    {
        assert!(started.elapsed() < LIVE, "the failure reached the inbox");
        tokio::time::sleep(POLL * 4).await;
        browser.goto(&server.url("/w/acme/inbox")).await.unwrap();
    }
    // Unread: the failure, and the first run's work awaiting review (issue 17).
    browser
        .wait_for_text(".inbox-link .inbox-count", "2", LIVE)
        .await
        .unwrap();
    browser
        .find(".inbox-item.unread form[action$='/retry']")
        .await
        .unwrap();
    // Pages that do not count the inbox themselves load the badge.
    browser.goto(&server.url("/w/acme/agents")).await.unwrap();
    browser
        .wait_for_text(".inbox-link #inbox-count", "2", LIVE)
        .await
        .unwrap();
    if screenshots {
        browser
            .goto(&server.url("/w/acme/inbox?show=all"))
            .await
            .unwrap();
        browser.find(".inbox-list").await.unwrap();
        browser.screenshot("inbox").await.unwrap();
    }

    browser.close().await.unwrap();
    server.stop().await;
}

/// A local model's answer, streamed word by word while the run page is open, grows one text block
/// (live and after a reload), is not repeated under Finished; the agent's page says nothing is missing
/// while Runtimes lists its llama.cpp server ready, and names an unreachable one.
async fn a_local_model_answer_reads_as_one_block(backend: Backend) {
    let Some(server) = Server::start(backend).await else {
        return;
    };
    let Some(browser) = Browser::start().await else {
        return;
    };
    let gate = server.scripts.path().join("speak");
    let model = LlamaServer::start(
        Scenario::Gated {
            gate: gate.clone(),
            pause: Duration::from_millis(300),
        },
        Flavor::LlamaCpp,
    )
    .await
    .unwrap();
    let llama = |name: &str, url: String| {
        let mut new = NewAgent::new(AgentName::parse(name).unwrap(), RuntimeKind::Llama);
        new.base_url = Some(url);
        new.max_retries = 0;
        new
    };
    let store = &server.store;
    let local = store
        .create_agent(
            server.ws.id,
            &llama("local-llama", format!("{}/v1", model.base_url())),
        )
        .await
        .unwrap();
    let dead_port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    store
        .create_agent(
            server.ws.id,
            &llama("dead-llama", format!("http://127.0.0.1:{dead_port}/v1")),
        )
        .await
        .unwrap();
    sign_in(&browser, &server).await;

    // Runtimes lists the agent's server as a ready llama.cpp and the local runtime as ready through it;
    // the agent's page agrees.
    browser.goto(&server.url("/w/acme/runtimes")).await.unwrap();
    let row = |rows: &str, text: String| {
        format!(
            "return Array.from(document.querySelectorAll('{rows}')).map(r => r.innerText).find(t => t.includes('{text}')) || ''"
        )
    };
    let served = js(
        &browser,
        &row("tr.model-server", model.base_url().to_owned()),
    )
    .await;
    let served = served.as_str().unwrap().to_lowercase();
    assert!(
        served.contains("llama.cpp") && served.contains("ready"),
        "{served}"
    );
    let runtime = js(&browser, &row("tr", "Local Llama".to_owned())).await;
    let runtime = runtime.as_str().unwrap().to_lowercase();
    assert!(runtime.contains("ready (model server)"), "{runtime}");
    browser
        .goto(&server.url("/w/acme/agents/local-llama"))
        .await
        .unwrap();
    browser.find("form #name, form [name=name]").await.unwrap();
    let warnings = runtime_warnings(&browser).await;
    assert_eq!(
        warnings,
        serde_json::json!([]),
        "no banner for a ready server"
    );
    browser
        .goto(&server.url("/w/acme/agents/dead-llama"))
        .await
        .unwrap();
    let warning = browser.text(".runtime-warning").await.unwrap();
    assert!(
        warning.contains(&format!("127.0.0.1:{dead_port}")) && warning.contains("unreachable"),
        "{warning}"
    );

    // The answer streams while the page is open.
    let issue = server.issue("What does the script say?").await;
    assign(&browser, &server, &issue, &local).await;
    open_latest_run(&browser).await;
    browser
        .wait_for_text(".run-log .ev-started", MODEL, LIVE)
        .await
        .unwrap();
    js(&browser, "window.__same_page = true; return true").await;
    std::fs::write(&gate, "").unwrap();
    let count = "return document.querySelectorAll('.run-log .ev-text').length";
    let mut most = 0;
    let started = std::time::Instant::now();
    let mut seen_growing = false;
    loop {
        let blocks = js(&browser, count).await.as_u64().unwrap();
        most = most.max(blocks);
        let shown = js(
            &browser,
            "const b = document.querySelector('.run-log .ev-text'); return b ? b.innerText : ''",
        )
        .await;
        let shown = shown.as_str().unwrap().to_owned();
        seen_growing |= shown.contains("answer") && !shown.contains("script");
        if shown.contains("It came from the script.")
            && browser
                .text(".run-head .run-status")
                .await
                .unwrap()
                .contains("Succeeded")
        {
            break;
        }
        assert!(started.elapsed() < LIVE, "the answer arrived: {shown:?}");
        tokio::time::sleep(POLL).await;
    }
    let live_height = js(&browser, "return document.documentElement.scrollHeight").await;
    let live_blocks = js(&browser, count).await;
    let finished_summary = js(
        &browser,
        "return document.querySelectorAll('.run-log .ev-finished .summary').length",
    )
    .await;
    assert_eq!(
        js(&browser, "return window.__same_page === true").await,
        serde_json::Value::Bool(true),
        "the answer came over the socket, without a reload"
    );
    browser
        .goto(&browser.current_url().await.unwrap())
        .await
        .unwrap();
    browser.find(".run-log .ev-finished").await.unwrap();
    let page_height = js(&browser, "return document.documentElement.scrollHeight").await;
    let html = js(&browser, "return document.documentElement.outerHTML").await;
    let page_blocks = html
        .as_str()
        .unwrap()
        .matches(r#"class="ev ev-text""#)
        .count();
    let deltas = stored_text_events(&server, issue.id).await;
    eprintln!(
        "local-model run: {deltas} stored text events; live: {live_blocks} text blocks (at most {most}), \
         {live_height} px; reloaded: {page_blocks} text blocks, {page_height} px"
    );
    assert!(deltas > 1, "the answer arrived as {deltas} text events");
    assert!(seen_growing, "the block was seen while it grew");
    assert_eq!(
        (most, live_blocks, page_blocks),
        (1, serde_json::json!(1), 1),
        "one block for the answer, live and reloaded"
    );
    assert_eq!(
        finished_summary,
        serde_json::json!(0),
        "the answer is not repeated"
    );
    js(
        &browser,
        "document.querySelector('.run-log .ev-text').scrollIntoView({block: 'center'}); return true",
    )
    .await;
    browser.screenshot("run-local-model").await.unwrap();
    browser.close().await.unwrap();
    server.stop().await;
}

/// The same with the real local model (llama.cpp's server with SmolLM2, see `model_server::local_llama`):
/// the agent's page has no "not installed" banner, and the finished run's page shows the answer as one
/// block, not repeated under Finished.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs Chromium and chromedriver and the local model (MUSTER_LOCAL_LLAMA_DIR, installed by .ci/run); run with --include-ignored"]
async fn a_real_local_model_answer_reads_as_one_block() {
    let Some(model) = LocalLlama::start().await else {
        return;
    };
    let Some(server) = Server::start(Backend::Sqlite).await else {
        return;
    };
    let Some(browser) = Browser::start().await else {
        return;
    };
    let mut new = NewAgent::new(AgentName::parse("smol").unwrap(), RuntimeKind::Llama);
    new.base_url = Some(format!("{}/v1", model.base_url));
    new.model = Some(MODEL_ALIAS.to_owned());
    new.max_retries = 0;
    new.instructions = "Answer in one or two short sentences.".to_owned();
    new.extra_args = ["--max-tokens", "48", "--temperature", "0"]
        .map(String::from)
        .to_vec();
    let agent = server.store.create_agent(server.ws.id, &new).await.unwrap();
    sign_in(&browser, &server).await;
    browser
        .goto(&server.url("/w/acme/agents/smol"))
        .await
        .unwrap();
    browser.find("form [name=name]").await.unwrap();
    let warnings = runtime_warnings(&browser).await;
    assert_eq!(warnings, serde_json::json!([]), "llama.cpp is ready here");

    let issue = server.issue("What is the capital of France?").await;
    assign(&browser, &server, &issue, &agent).await;
    open_latest_run(&browser).await;
    browser
        .wait_for_text(
            ".run-head .run-status",
            "Succeeded",
            Duration::from_secs(240),
        )
        .await
        .unwrap();
    browser
        .goto(&browser.current_url().await.unwrap())
        .await
        .unwrap();
    browser.find(".run-log .ev-finished").await.unwrap();
    let blocks = js(
        &browser,
        "return document.querySelectorAll('.run-log .ev-text').length",
    )
    .await;
    let summaries = js(
        &browser,
        "return document.querySelectorAll('.run-log .ev-finished .summary').length",
    )
    .await;
    let height = js(&browser, "return document.documentElement.scrollHeight").await;
    let deltas = stored_text_events(&server, issue.id).await;
    eprintln!("real local model: {deltas} stored text events; {blocks} text blocks, {height} px");
    assert!(deltas >= 1);
    assert_eq!(
        (blocks, summaries),
        (serde_json::json!(1), serde_json::json!(0)),
        "one block, not repeated under Finished"
    );
    browser.close().await.unwrap();
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs Chromium and chromedriver; run with --include-ignored"]
async fn a_local_model_answer_reads_as_one_block_sqlite() {
    a_local_model_answer_reads_as_one_block(Backend::Sqlite).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs Chromium and chromedriver and PostgreSQL (MUSTER_TEST_PG_URL); run with --include-ignored"]
async fn a_local_model_answer_reads_as_one_block_postgres() {
    a_local_model_answer_reads_as_one_block(Backend::Postgres).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs Chromium and chromedriver; run with --include-ignored"]
async fn watch_a_run_live_sqlite() {
    watch_a_run_live(Backend::Sqlite, true).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs Chromium and chromedriver, and PostgreSQL (MUSTER_TEST_PG_URL); run with --include-ignored"]
async fn watch_a_run_live_postgres() {
    watch_a_run_live(Backend::Postgres, false).await;
}

/// How many `text` events the store holds for the first run of issue `issue`: how many pieces the
/// agent's answer arrived in.
async fn stored_text_events(server: &Server, issue: IssueId) -> usize {
    let run = &server.store.list_runs_for_issue(issue).await.unwrap()[0];
    server
        .store
        .run_events_since(run.id, 0, 1000)
        .await
        .unwrap()
        .iter()
        .filter(|e| e.kind == "text")
        .count()
}
