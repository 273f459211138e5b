//! The issue's conversation in real headless Chromium, with the embedded runner and a stand-in agent (a
//! shell script replaying Claude stream-json lines): a person comments and assigns the agent; its run
//! appears in the timeline and, without a reload, ends with its summary inside its entry; the status
//! changes read as thin lines in order. A reply from the box under that summary queues a follow-up: the
//! page shows it "working…", then (still without a reload) the finished run with its own summary.
//! Screenshots `issue-thread-working`, `issue-thread-light` and `issue-thread-dark` land in
//! `target/screenshots/`.

use muster_tests::Backend;
use muster_tests::browser::Browser;
use serde_json::Value;

use crate::browser_runs::{DONE, INIT, LIVE, Server, TEXT_1, js, sign_in};

/// The follow-up's last line: its summary, cost and usage.
const DONE_2: &str = r#"{"type":"result","subtype":"success","is_error":false,"duration_ms":3000,"num_turns":1,"result":"Handled the empty file: `parse(\"\")` now returns an empty document, with a test.","session_id":"sess-browser-1","total_cost_usd":0.0087,"usage":{"input_tokens":2100,"cache_creation_input_tokens":0,"cache_read_input_tokens":9000,"output_tokens":240}}"#;

/// What the timeline lists, in order: each entry's kind and text.
async fn entries(browser: &Browser) -> Vec<(String, String)> {
    let v = js(
        browser,
        "return [...document.querySelectorAll('#issue-thread .thread-item')]\
         .map(li => [li.className, li.innerText]);",
    )
    .await;
    v.as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e[0].as_str().unwrap().to_owned(),
                e[1].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

/// The index of the first entry whose class has `kind` and whose text has `text`.
fn index(entries: &[(String, String)], kind: &str, text: &str) -> usize {
    entries
        .iter()
        .position(|(class, t)| class.contains(kind) && t.contains(text))
        .unwrap_or_else(|| panic!("no {kind} entry with {text:?} in {entries:#?}"))
}

async fn talk_to_an_agent(backend: Backend, screenshots: bool) {
    let Some(server) = Server::start(backend).await else {
        return;
    };
    let Some(browser) = Browser::start().await else {
        return;
    };
    let dir = server.scripts.path();
    let go = dir.join("go");
    let lines = |name: &str, lines: &[&str]| {
        let path = dir.join(name);
        std::fs::write(&path, lines.join("\n") + "\n").unwrap();
        path
    };
    let (done_1, done_2) = (lines("done-1", &[TEXT_1, DONE]), lines("done-2", &[DONE_2]));
    // The first run ends at once; the follow-up (its prompt has the reply) waits for `go`, so the
    // test sees it working. Runs are sandboxed: the script reads the scratch directory, never writes.
    let body = format!(
        "prompt=$(cat)\ncat <<'EOF'\n{INIT}\nEOF\ncase \"$prompt\" in\n  *whitespace*)\n    \
         while [ ! -f '{go}' ]; do sleep 0.1; done\n    sleep 1\n    cat '{done_2}' ;;\n  *)\n    \
         sleep 1\n    cat '{done_1}' ;;\nesac\n",
        go = go.display(),
        done_1 = done_1.display(),
        done_2 = done_2.display(),
    );
    let coder = server
        .agent("claude-coder", &server.script("coder.sh", &body))
        .await;
    let issue = server.issue("The parser panics on an empty file").await;
    sign_in(&browser, &server).await;
    browser
        .goto(&server.url(&format!("/w/acme/issues/{}", issue.key)))
        .await
        .unwrap();

    // A person's comment, then the agent assigned: its run ends with its summary, no reload needed.
    browser
        .fill(
            "#comment-body",
            "It panics with `unwrap on None` when the file is empty.",
        )
        .await
        .unwrap();
    browser
        .click(".comment-form button[type=submit]")
        .await
        .unwrap();
    browser
        .wait_for_text("#issue-thread", "unwrap on None", LIVE)
        .await
        .unwrap();
    js(&browser, "window.__stayed = true").await;
    browser
        .select("#prop-assignee", &format!("agent:{}", coder.id))
        .await
        .unwrap();
    browser
        .wait_for_text(".thread-summary", "all parser tests pass now", LIVE)
        .await
        .unwrap();
    browser
        .wait_for_text("#issue-thread", "to in review", LIVE)
        .await
        .unwrap();
    let e = entries(&browser).await;
    let said = index(&e, "thread-comment", "unwrap on None");
    let assigned = index(&e, "thread-change", "assigned this to claude-coder");
    let ran = index(&e, "thread-run-item", "all parser tests pass now");
    let review = index(&e, "thread-change", "to in review");
    assert!(said < assigned && assigned < ran && ran < review, "{e:#?}");
    assert!(
        e[ran].1.contains("assigned") && e[ran].1.contains("$0.0123"),
        "{e:#?}"
    );
    assert!(
        !e.iter()
            .any(|(c, t)| c.contains("thread-comment") && t.contains("all parser tests pass now")),
        "the summary is not repeated as a comment: {e:#?}"
    );
    let stayed = js(&browser, "return window.__stayed === true").await;
    assert_eq!(
        stayed,
        Value::Bool(true),
        "the run ended on the page without a reload"
    );

    // A reply from under the summary queues a follow-up, shown working, then finished, live.
    browser
        .fill(
            ".thread-reply textarea",
            "Thanks! Now also handle a file with only whitespace.",
        )
        .await
        .unwrap();
    browser
        .click(".thread-reply button[type=submit]")
        .await
        .unwrap();
    browser
        .wait_for_text(".thread-run-live", "working…", LIVE)
        .await
        .unwrap();
    let live = browser.text(".thread-run-live").await.unwrap();
    assert!(live.contains("after Ada Lovelace's comment"), "{live}");
    assert!(
        browser.find(".thread-reply").await.is_err(),
        "no reply box while the agent works"
    );
    if screenshots {
        browser.screenshot("issue-thread-working").await.unwrap();
    }
    js(&browser, "window.__stayed = true").await;
    std::fs::write(&go, "").unwrap();
    browser
        .wait_for_text("#issue-thread", "Handled the empty file", LIVE)
        .await
        .unwrap();
    let stayed = js(&browser, "return window.__stayed === true").await;
    assert_eq!(
        stayed,
        Value::Bool(true),
        "the follow-up ended on the page without a reload"
    );
    let e = entries(&browser).await;
    let reply = index(&e, "thread-comment", "only whitespace");
    let second = index(&e, "thread-run-item", "Handled the empty file");
    assert!(review < reply && reply < second, "{e:#?}");
    assert!(e[second].1.contains("$0.0087"), "{e:#?}");
    assert_eq!(
        js(
            &browser,
            "return document.querySelectorAll('.thread-run').length"
        )
        .await,
        2
    );
    browser.find(".thread-reply").await.unwrap();

    if screenshots {
        // Tall enough for the whole conversation, from the issue's title.
        browser.client().set_window_size(1400, 1500).await.unwrap();
        let top = "document.documentElement.style.scrollBehavior = 'auto'; window.scrollTo(0, 0);";
        js(&browser, top).await;
        browser.screenshot("issue-thread-light").await.unwrap();
        js(
            &browser,
            "document.documentElement.setAttribute('data-theme', 'dark')",
        )
        .await;
        browser.screenshot("issue-thread-dark").await.unwrap();
    }
    browser.close().await.unwrap();
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs Chromium and chromedriver; run with --include-ignored"]
async fn talk_to_an_agent_on_the_issue_page_sqlite() {
    talk_to_an_agent(Backend::Sqlite, true).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs Chromium and chromedriver, and PostgreSQL (MUSTER_TEST_PG_URL); run with --include-ignored"]
async fn talk_to_an_agent_on_the_issue_page_postgres() {
    talk_to_an_agent(Backend::Postgres, false).await;
}
