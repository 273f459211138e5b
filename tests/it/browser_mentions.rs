//! `@mention` autocompletion in real headless Chromium (issue 13), on both backends: typing `@co` in the
//! issue's comment box lists the matching agents (an accessible listbox), the arrows move, Escape
//! closes, a click or Enter picks; the submitted comment links `@coder` and queues a run of coder, whose
//! page says what started it and which run it continues; a person mentioned by handle finds the comment
//! from their inbox. Screenshots: `mentions-*` in
//! `target/screenshots/`, light and dark.

use std::time::Duration;

use muster::domain::{
    AgentName, Email, IssueStatus, IssueTitle, NewAgent, NewIssue, NewUser, Role, RunStatus,
    RunTrigger, RuntimeKind,
};
use muster_tests::browser::Browser;
use muster_tests::seed;
use muster_tests::{Backend, TestDb, spawn_app};
use serde_json::{Value, json};

/// Generous: a cold Chromium on a loaded 2-core machine.
const LIVE: Duration = Duration::from_secs(20);
/// WebDriver's key codes.
const ENTER: &str = "\u{e007}";
const ESCAPE: &str = "\u{e00c}";
const ARROW_UP: &str = "\u{e013}";
const ARROW_DOWN: &str = "\u{e015}";

async fn js(browser: &Browser, script: &str) -> Value {
    browser.execute(script, vec![]).await.unwrap()
}

/// The comment box's value, whether its list is open, the options shown and the active one.
async fn state(browser: &Browser) -> Value {
    js(
        browser,
        r#"var ta = document.querySelector('#comment-body');
           var list = document.getElementById(ta.getAttribute('aria-controls') || '');
           var active = ta.getAttribute('aria-activedescendant');
           return {
             value: ta.value,
             expanded: ta.getAttribute('aria-expanded'),
             open: !!list && !list.hidden && list.getAttribute('role') === 'listbox',
             options: list ? [...list.querySelectorAll('[role=option]')].map(o => o.querySelector('.mention-name').textContent) : [],
             active: active && document.getElementById(active).getAttribute('aria-selected') === 'true'
               ? document.getElementById(active).querySelector('.mention-name').textContent : null,
           };"#,
    )
    .await
}

async fn type_keys(browser: &Browser, keys: &str) {
    let ta = browser.find("#comment-body").await.unwrap();
    ta.send_keys(keys).await.unwrap();
}

async fn autocomplete_picks_an_agent_and_queues_it(backend: Backend) {
    let Some(db) = TestDb::new(backend).await else {
        return;
    };
    let app = spawn_app(db.config()).await;
    let (ada, ws) = seed::acme(&app.store).await;
    let mut agents = Vec::new();
    for name in ["coder", "codex-helper", "reviewer"] {
        let new = NewAgent::new(AgentName::parse(name).unwrap(), RuntimeKind::Custom);
        agents.push(app.store.create_agent(ws.id, &new).await.unwrap());
    }
    let coder = agents[0].id;
    let mut new = NewIssue::new(IssueTitle::parse("Parse empty files").unwrap());
    new.status = IssueStatus::Todo;
    new.created_by = Some(ada.id);
    let issue = app.store.create_issue(ws.id, &new).await.unwrap();
    // An earlier run of coder on the issue, mentioned through the API and cancelled.
    let token = muster_tests::mint_token(app.store.as_ref(), ws.id, ada.id, "test").await;
    let api = |method: reqwest::Method, path: String, body: Value| {
        let req = app
            .client
            .request(method, app.url(&path))
            .bearer_auth(&token);
        async move { req.json(&body).send().await.unwrap() }
    };
    let sent = api(
        reqwest::Method::POST,
        "/api/v1/issues/ACM-1/comments".into(),
        json!({ "body": "@coder have a first look" }),
    )
    .await;
    assert_eq!(sent.status(), 201);
    let first = app.store.list_runs_for_issue(issue.id).await.unwrap();
    assert_eq!(first.len(), 1, "{first:?}");
    let first = &first[0];
    let cancelled = api(
        reqwest::Method::POST,
        format!("/api/v1/runs/{}/cancel", first.id),
        json!({}),
    )
    .await;
    assert!(cancelled.status().is_success(), "{}", cancelled.status());

    let Some(browser) = Browser::signed_in(&app.url(""), "ada@acme.test", LIVE).await else {
        return;
    };
    browser
        .goto(&app.url("/w/acme/issues/ACM-1"))
        .await
        .unwrap();

    // `@rev`: one match; Escape closes the list and leaves the text alone.
    browser.fill("#comment-body", "See @rev").await.unwrap();
    let s = state(&browser).await;
    assert_eq!(s["options"], json!(["@reviewer"]), "{s}");
    assert_eq!(s["expanded"], "true", "{s}");
    type_keys(&browser, ESCAPE).await;
    let s = state(&browser).await;
    assert_eq!(
        (&s["open"], &s["expanded"], &s["value"]),
        (&json!(false), &json!("false"), &json!("See @rev")),
        "{s}"
    );
    // Typing on reopens it; a click picks.
    type_keys(&browser, "i").await;
    browser.click(".mention-list [role=option]").await.unwrap();
    let s = state(&browser).await;
    assert_eq!(
        (&s["value"], &s["open"]),
        (&json!("See @reviewer "), &json!(false)),
        "{s}"
    );

    // The box says whom sending wakes, for the text as typed.
    let wakes = async |browser: &Browser| {
        js(
            browser,
            "return document.querySelector('#comment-body').parentNode.querySelector('.comment-wakes').textContent",
        )
        .await
    };
    assert_eq!(wakes(&browser).await, "Sending this wakes reviewer.");
    // What the box says once the comment reads `text`.
    let wakes_for = async |text: &str| {
        browser.fill("#comment-body", text).await.unwrap();
        wakes(&browser).await
    };
    let people_only = "Sending this wakes no agent: it mentions only people.";
    assert_eq!(
        wakes_for("@ada can you confirm the spec?").await,
        people_only
    );
    assert_eq!(
        wakes_for("A plain note").await,
        "Sending this wakes no agent."
    );
    // On an issue assigned to coder, a plain note continues coder's work; a note to a person does not.
    js(
        &browser,
        "document.querySelector('#comment-body').parentNode.querySelector('.comment-wakes').setAttribute('data-assignee', 'coder'); return null;",
    )
    .await;
    assert_eq!(wakes_for("A plain note").await, "Sending this wakes coder.");
    assert_eq!(wakes_for("@ADA. thoughts?").await, people_only);

    // `@co`: two agents, the first active; the arrows move; Enter picks.
    browser.fill("#comment-body", "Thanks. @co").await.unwrap();
    let s = state(&browser).await;
    assert_eq!(s["options"], json!(["@coder", "@codex-helper"]), "{s}");
    assert_eq!(s["active"], "@coder", "{s}");
    browser.screenshot("mentions-autocomplete").await.unwrap();
    type_keys(&browser, ARROW_DOWN).await;
    assert_eq!(state(&browser).await["active"], "@codex-helper");
    type_keys(&browser, ARROW_UP).await;
    assert_eq!(state(&browser).await["active"], "@coder");
    js(
        &browser,
        "document.documentElement.dataset.theme = 'dark'; return null;",
    )
    .await;
    browser
        .screenshot("mentions-autocomplete-dark")
        .await
        .unwrap();
    js(
        &browser,
        "delete document.documentElement.dataset.theme; return null;",
    )
    .await;
    type_keys(&browser, ENTER).await;
    let s = state(&browser).await;
    assert_eq!(
        (&s["value"], &s["open"]),
        (&json!("Thanks. @coder "), &json!(false)),
        "{s}"
    );
    assert_eq!(s["expanded"], "false", "{s}");
    type_keys(&browser, "fix the empty file case").await;
    browser
        .click("form.comment-form button[type=submit]")
        .await
        .unwrap();
    browser
        .wait_for_text(".comment", "fix the empty file case", LIVE)
        .await
        .unwrap();
    let link = js(
        &browser,
        "var a = [...document.querySelectorAll('.comment a.mention-agent')].pop(); return [a.textContent, a.getAttribute('href')];",
    )
    .await;
    assert_eq!(link, json!(["@coder", "/w/acme/agents/coder"]));

    // The comment queued coder, continuing its cancelled run.
    let runs = app.store.list_runs_for_issue(issue.id).await.unwrap();
    let run = runs
        .iter()
        .find(|r| r.id != first.id)
        .unwrap_or_else(|| panic!("{runs:?}"));
    assert_eq!(run.agent_id, coder);
    assert_eq!(
        (run.status, run.trigger),
        (RunStatus::Queued, RunTrigger::Mention)
    );
    assert_eq!(run.previous_run_id, Some(first.id));

    browser
        .goto(&app.url(&format!("/w/acme/runs/{}", run.id)))
        .await
        .unwrap();
    let origin = browser.text(".run-origin").await.unwrap();
    let short: String = first.id.to_string().chars().take(8).collect();
    assert!(
        origin.contains("Triggered by mention by Ada Lovelace"),
        "{origin}"
    );
    assert!(
        origin.contains(&format!("Continues run {short}")),
        "{origin}"
    );
    browser.screenshot("mentions-run-origin").await.unwrap();
    js(
        &browser,
        "document.documentElement.dataset.theme = 'dark'; return null;",
    )
    .await;
    browser
        .screenshot("mentions-run-origin-dark")
        .await
        .unwrap();
    js(
        &browser,
        "delete document.documentElement.dataset.theme; return null;",
    )
    .await;

    // Bob mentions Ada by her handle: her inbox links his comment.
    let bob = app
        .store
        .create_user(&NewUser {
            email: Email::parse("bob@acme.test").unwrap(),
            display_name: "Bob Builder".into(),
            password_hash: "unused".into(),
        })
        .await
        .unwrap();
    app.store
        .add_member(ws.id, bob.id, Role::Member)
        .await
        .unwrap();
    let bobs = muster_tests::mint_token(app.store.as_ref(), ws.id, bob.id, "bob").await;
    let sent = app
        .client
        .post(app.url("/api/v1/issues/ACM-1/comments"))
        .bearer_auth(&bobs)
        .json(&json!({ "body": "@Ada can you check the empty file case?" }))
        .send()
        .await
        .unwrap();
    assert_eq!(sent.status(), 201);
    browser.goto(&app.url("/w/acme/inbox")).await.unwrap();
    browser
        .wait_for_text(".inbox-item", "Bob Builder mentioned you on ACM-1", LIVE)
        .await
        .unwrap();
    browser.screenshot("mentions-inbox").await.unwrap();
    browser
        .click(".inbox-item a[href*='#comment-']")
        .await
        .unwrap();
    browser
        .wait_for_text(
            ".comment:target",
            "can you check the empty file case?",
            LIVE,
        )
        .await
        .unwrap();

    browser
        .goto(&app.url(&format!("/w/acme/runs/{}", run.id)))
        .await
        .unwrap();
    browser.click(".run-continues a").await.unwrap();
    browser
        .wait_for_text(".run-origin", "Triggered by mention by Ada Lovelace", LIVE)
        .await
        .unwrap();
    assert!(
        browser
            .current_url()
            .await
            .unwrap()
            .ends_with(&first.id.to_string())
    );
    browser.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs Chromium and chromedriver; run with --include-ignored"]
async fn mention_autocomplete_queues_the_agent_in_chromium_sqlite() {
    autocomplete_picks_an_agent_and_queues_it(Backend::Sqlite).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs Chromium and chromedriver, and PostgreSQL (MUSTER_TEST_PG_URL); run with --include-ignored"]
async fn mention_autocomplete_queues_the_agent_in_chromium_postgres() {
    autocomplete_picks_an_agent_and_queues_it(Backend::Postgres).await;
}
