//! Runs in real headless Chromium with the embedded runner and stand-in agents (shell scripts replaying
//! Claude stream-json lines): a person assigns an issue in the browser, opens the run page and watches
//! the log and the token counter move live until the run succeeds and the issue is in review with the
//! agent's summary; a second run is stopped with the Cancel button; a failing run lands in the inbox.
//! Screenshots `run.png` and `inbox.png` land in `target/screenshots/`.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use muster::domain::*;
use muster::store::Store;
use muster::supervisor::RunTiming;
use muster_tests::browser::{Browser, POLL};
use muster_tests::{Backend, TestDb};
use tokio_util::sync::CancellationToken;

/// Generous: a cold Chromium and real child processes on a loaded 2-core machine.
const LIVE: Duration = Duration::from_secs(30);

/// Claude stream-json lines, shaped like the recorded fixtures.
const INIT: &str = r#"{"type":"system","subtype":"init","cwd":"/tmp","session_id":"sess-browser-1","tools":["Bash"],"model":"claude-sonnet-4-5","permissionMode":"bypassPermissions"}"#;
const TEXT_1: &str = r#"{"type":"assistant","message":{"id":"m1","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[{"type":"text","text":"Reading the **parser** first."}]},"session_id":"sess-browser-1"}"#;
const THINK: &str = r#"{"type":"assistant","message":{"id":"m1","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[{"type":"thinking","thinking":"The empty input case probably hits an unwrap.","signature":"x"}]},"session_id":"sess-browser-1"}"#;
const TOOL: &str = r#"{"type":"assistant","message":{"id":"m2","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[{"type":"tool_use","id":"toolu_b1","name":"Bash","input":{"command":"cargo test parse","description":"Run the parser tests"}}]},"session_id":"sess-browser-1"}"#;
const RESULT: &str = r#"{"type":"user","message":{"role":"user","content":[{"tool_use_id":"toolu_b1","type":"tool_result","content":"test parse_empty ... ok\ntest parse_nested ... ok\n\ntest result: ok. 2 passed","is_error":false}]},"session_id":"sess-browser-1"}"#;
const TEXT_2: &str = r#"{"type":"assistant","message":{"id":"m3","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[{"type":"text","text":"Fixed `parse_empty`; all parser tests pass now."}]},"session_id":"sess-browser-1"}"#;
const DONE: &str = r#"{"type":"result","subtype":"success","is_error":false,"duration_ms":4000,"num_turns":2,"result":"Fixed `parse_empty`; all parser tests pass now.","session_id":"sess-browser-1","total_cost_usd":0.0123,"usage":{"input_tokens":1234,"cache_creation_input_tokens":0,"cache_read_input_tokens":5000,"output_tokens":321}}"#;

struct Server {
    addr: std::net::SocketAddr,
    store: Arc<dyn Store>,
    ws: Workspace,
    shutdown: CancellationToken,
    handle: tokio::task::JoinHandle<anyhow::Result<()>>,
    scripts: tempfile::TempDir,
    _db: TestDb,
}

impl Server {
    /// A server with the embedded runner on, short stop graces, and Ada owning workspace `acme`.
    async fn start(backend: Backend) -> Option<Server> {
        let db = TestDb::new(backend).await?;
        let store = db.store().await;
        let (_, ws) = store
            .create_owner_and_workspace(
                &NewUser {
                    email: Email::parse("ada@acme.test").unwrap(),
                    display_name: "Ada Lovelace".into(),
                    password_hash: muster::auth::hash_password("correct-horse").unwrap(),
                },
                &NewWorkspace::parse("Acme Robots", "acme", "ACM").unwrap(),
            )
            .await
            .unwrap();
        store.close().await;
        muster_tests::init_tracing();
        let mut config = db.config();
        config.embedded_runner = true;
        let mut app = muster::app::build(config).await.unwrap();
        app.set_run_timing(RunTiming {
            int_grace: Duration::from_secs(2),
            term_grace: Duration::from_secs(2),
            ..RunTiming::default()
        });
        let addr = app.local_addr().unwrap();
        let store = app.state().store.clone();
        let shutdown = CancellationToken::new();
        let handle = tokio::spawn(app.run_until_stopped(shutdown.clone()));
        Some(Server {
            addr,
            store,
            ws,
            shutdown,
            handle,
            scripts: tempfile::tempdir().unwrap(),
            _db: db,
        })
    }

    fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    /// An executable shell script in the scratch directory.
    fn script(&self, name: &str, body: &str) -> PathBuf {
        use std::os::unix::fs::PermissionsExt as _;
        let path = self.scripts.path().join(name);
        std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        path
    }

    /// A `custom` agent running `script`.
    async fn agent(&self, name: &str, script: &Path) -> Agent {
        let mut new = NewAgent::new(AgentName::parse(name).unwrap(), AgentKind::Custom);
        new.command = Some(script.display().to_string());
        new.max_retries = 0;
        new.color = "#d97706".into();
        self.store.create_agent(self.ws.id, &new).await.unwrap()
    }

    async fn issue(&self, title: &str) -> Issue {
        let mut new = NewIssue::new(IssueTitle::parse(title).unwrap());
        new.status = IssueStatus::Todo;
        self.store.create_issue(self.ws.id, &new).await.unwrap()
    }

    async fn stop(self) {
        self.shutdown.cancel();
        self.handle.await.unwrap().unwrap();
    }
}

/// Echoes `lines` one by one with a short pause, like a CLI streaming its work.
fn replay(lines: &[&str]) -> String {
    lines
        .iter()
        .map(|l| format!("sleep 0.4\ncat <<'EOF'\n{l}\nEOF\n"))
        .collect()
}

async fn sign_in(browser: &Browser, server: &Server) {
    browser.goto(&server.url("/login")).await.unwrap();
    browser.fill("#login-email", "ada@acme.test").await.unwrap();
    browser
        .fill("#login-password", "correct-horse")
        .await
        .unwrap();
    browser
        .click("form[action='/login'] button[type=submit]")
        .await
        .unwrap();
    browser.find_within(".board", LIVE).await.unwrap();
}

/// Assigns `agent` on the issue page with the edit form, as a person would.
async fn assign(browser: &Browser, server: &Server, issue: &Issue, agent: &Agent) {
    browser
        .goto(&server.url(&format!("/w/acme/issues/{}", issue.key)))
        .await
        .unwrap();
    browser.click("details.edit-issue > summary").await.unwrap();
    browser
        .select("#edit-assignee", &format!("agent:{}", agent.id))
        .await
        .unwrap();
    browser
        .click("details.edit-issue form button[type=submit]")
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

/// Opens the issue's newest run from the issue page's run list.
async fn open_latest_run(browser: &Browser) {
    browser.click(".issue-runs a.run-link").await.unwrap();
    browser.find_within(".run-page", LIVE).await.unwrap();
}

async fn js(browser: &Browser, script: &str) -> serde_json::Value {
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
    browser
        .wait_for_text(".counter-input", "1,234", LIVE)
        .await
        .unwrap();
    assert_eq!(browser.text(".counter-cache").await.unwrap(), "5,000");
    browser
        .wait_for_text(".run-head .run-status", "Succeeded", LIVE)
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

    // The issue is in review with the agent's summary as a comment.
    browser.click(".run-issue-link").await.unwrap();
    browser
        .wait_for_text(".issue-side", "In review", LIVE)
        .await
        .unwrap();
    browser
        .wait_for_text(".comment-agent", "all parser tests pass now", LIVE)
        .await
        .unwrap();
    browser
        .wait_for_text(".issue-runs", "Succeeded", LIVE)
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watch_a_run_live_sqlite() {
    watch_a_run_live(Backend::Sqlite, true).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watch_a_run_live_postgres() {
    watch_a_run_live(Backend::Postgres, false).await;
}
