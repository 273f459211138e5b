//! The board in real headless Chromium: a person sets Muster up, adds a teammate and an agent, files an
//! issue, moves and assigns it — and the teammate's open board follows along live, without reloading.
//! Screenshots of the board, the issue page and the agent page land in `target/screenshots/`.

use std::time::Duration;

use muster::domain::{AgentName, Slug};
use muster_tests::browser::{Browser, drag_card};
use muster_tests::{Backend, TestDb, spawn_app};

/// Generous: a cold Chromium on a loaded 2-core machine.
const LIVE: Duration = Duration::from_secs(20);

async fn submit(browser: &Browser, form: &str) {
    browser
        .click(&format!("{form} button[type=submit]"))
        .await
        .unwrap();
}

async fn wait_for_path(browser: &Browser, suffix: &str) {
    browser.wait_for_path(suffix, LIVE).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs Chromium and chromedriver; run with --include-ignored"]
async fn a_team_works_on_the_board_and_sees_changes_live() {
    let Some(db) = TestDb::new(Backend::Sqlite).await else {
        return;
    };
    let app = spawn_app(db.config()).await;
    let Some(ada) = Browser::start().await else {
        return;
    };
    let base = app.url("");

    // First-run setup, from the link the server printed.
    ada.goto(
        app.setup_url
            .as_deref()
            .expect("a fresh install offers setup"),
    )
    .await
    .unwrap();
    ada.fill("#setup-workspace_name", "Acme Robots")
        .await
        .unwrap();
    ada.fill("#setup-name", "Ada Lovelace").await.unwrap();
    ada.fill("#setup-email", "ada@acme.test").await.unwrap();
    ada.fill("#setup-password", "correct-horse-battery")
        .await
        .unwrap();
    submit(&ada, "form[action='/setup']").await;
    wait_for_path(&ada, "/w/acme-robots").await;
    let ws = app
        .store
        .get_workspace_by_slug(&Slug::parse("acme-robots").unwrap())
        .await
        .unwrap();
    assert_eq!(ws.issue_prefix.as_str(), "ACM");
    // The setup link is single-use.
    let reused = app
        .client
        .get(app.setup_url.clone().unwrap())
        .send()
        .await
        .unwrap();
    assert_eq!(reused.status(), 410);

    // A teammate, added by the owner.
    ada.goto(&format!("{base}/w/acme-robots/members"))
        .await
        .unwrap();
    ada.fill("#member-email", "grace@acme.test").await.unwrap();
    ada.fill("#member-name", "Grace Hopper").await.unwrap();
    ada.fill("#member-password", "cobol-forever").await.unwrap();
    submit(&ada, "form[action='/w/acme-robots/members']").await;
    ada.wait_for_text("main", "grace@acme.test", LIVE)
        .await
        .unwrap();

    // An agent, with a bad field first: the form comes back with the message and the input kept.
    ada.goto(&format!("{base}/w/acme-robots/agents/new"))
        .await
        .unwrap();
    ada.fill("#agent-name", "claude coder").await.unwrap();
    ada.fill("#agent-model", "claude-sonnet-4-5").await.unwrap();
    submit(&ada, "form[action='/w/acme-robots/agents']").await;
    ada.wait_for_text("#agent-name-error", "may contain only letters", LIVE)
        .await
        .unwrap();
    let model = ada
        .execute(
            "return document.querySelector('#agent-model').value",
            vec![],
        )
        .await
        .unwrap();
    assert_eq!(model, "claude-sonnet-4-5", "typed input is kept");
    ada.fill("#agent-name", "claude-coder").await.unwrap();
    submit(&ada, "form[action='/w/acme-robots/agents']").await;
    wait_for_path(&ada, "/w/acme-robots/agents/claude-coder").await;
    ada.screenshot("agent").await.unwrap();
    let agent = app
        .store
        .get_agent_by_name(ws.id, &AgentName::parse("claude-coder").unwrap())
        .await
        .unwrap();

    // The teammate signs in on a second browser and keeps the board open.
    let Some(grace) = Browser::start().await else {
        return;
    };
    grace.goto(&format!("{base}/login")).await.unwrap();
    grace.fill("#login-email", "grace@acme.test").await.unwrap();
    grace
        .fill("#login-password", "cobol-forever")
        .await
        .unwrap();
    submit(&grace, "form[action='/login']").await;
    wait_for_path(&grace, "/w/acme-robots").await;

    // Ada files an issue; it appears on Grace's board without a reload.
    ada.goto(&format!("{base}/w/acme-robots")).await.unwrap();
    ada.click("details.new-issue > summary").await.unwrap();
    ada.fill("#new-issue-title", "Rate-limit the public API")
        .await
        .unwrap();
    ada.fill("#new-issue-labels", "api, security")
        .await
        .unwrap();
    ada.select("#new-issue-priority", "high").await.unwrap();
    submit(&ada, "details.new-issue form").await;
    ada.wait_for_text("#column-todo", "ACM-1", LIVE)
        .await
        .unwrap();
    grace
        .wait_for_text("#column-todo", "Rate-limit the public API", LIVE)
        .await
        .unwrap();

    // Ada moves it with the card's menu; Grace sees it change column.
    ada.click("#card-ACM-1 .card-menu").await.unwrap();
    ada.click("#card-menu button[name=status][value=in_progress]")
        .await
        .unwrap();
    ada.wait_for_text("#column-in_progress", "ACM-1", LIVE)
        .await
        .unwrap();
    grace
        .wait_for_text("#column-in_progress", "ACM-1", LIVE)
        .await
        .unwrap();
    let todo = grace.text("#column-todo").await.unwrap();
    assert!(
        !todo.contains("ACM-1"),
        "the card left todo on the live board: {todo}"
    );

    // Ada assigns it to the agent on the issue page; Grace's card shows the agent's avatar.
    ada.goto(&format!("{base}/w/acme-robots/issues/ACM-1"))
        .await
        .unwrap();
    ada.select("#prop-assignee", &format!("agent:{}", agent.id))
        .await
        .unwrap();
    ada.wait_for_text("main", "assigned this to claude-coder", LIVE)
        .await
        .unwrap();
    ada.click("a.issue-edit").await.unwrap();
    ada.fill(
        "#edit-body",
        "Use a **token bucket** per API token.\n\n<script>alert('x')</script>",
    )
    .await
    .unwrap();
    submit(&ada, "form.issue-text-edit").await;
    ada.wait_for_text("main", "edited the description", LIVE)
        .await
        .unwrap();
    let body = ada
        .execute("return document.querySelector('main').innerHTML", vec![])
        .await
        .unwrap();
    let body = body.as_str().unwrap_or_default();
    assert!(
        body.contains("<strong>token bucket</strong>") && !body.contains("<script>alert"),
        "markdown rendered, script removed"
    );
    ada.fill("#comment-body", "Starting with the **issue** endpoints.")
        .await
        .unwrap();
    submit(&ada, "form[action='/w/acme-robots/issues/ACM-1/comments']").await;
    ada.wait_for_text("main", "Starting with the", LIVE)
        .await
        .unwrap();
    ada.screenshot("issue").await.unwrap();
    grace
        .find_within("#card-ACM-1 .avatar-agent", LIVE)
        .await
        .unwrap();

    // A second issue so the board screenshot shows more than one card.
    ada.goto(&format!("{base}/w/acme-robots")).await.unwrap();
    ada.click("details.new-issue > summary").await.unwrap();
    ada.fill("#new-issue-title", "Nightly export of the board to CSV")
        .await
        .unwrap();
    ada.select("#new-issue-status", "backlog").await.unwrap();
    submit(&ada, "details.new-issue form").await;
    grace
        .wait_for_text("#column-backlog", "ACM-2", LIVE)
        .await
        .unwrap();
    grace.screenshot("board").await.unwrap();

    // Drag and drop: Ada drags ACM-2 into "In review"; the move is saved and Grace's board follows.
    ada.wait_for_text("#column-backlog", "ACM-2", LIVE)
        .await
        .unwrap();
    let dragged = ada
        .execute(
            &drag_card("ACM-2", "in_review", "card.closest('.column').id"),
            vec![],
        )
        .await
        .unwrap();
    assert_eq!(
        dragged, "column-in_review",
        "the card moved in the page at once"
    );
    grace
        .wait_for_text("#column-in_review", "ACM-2", LIVE)
        .await
        .unwrap();
    let started = std::time::Instant::now();
    loop {
        let moved = app
            .store
            .get_issue(ws.id, &muster::domain::IssueKey::parse("ACM-2").unwrap())
            .await
            .unwrap();
        if moved.status == muster::domain::IssueStatus::InReview {
            break;
        }
        assert!(started.elapsed() < LIVE, "the drop was saved");
        tokio::time::sleep(muster_tests::browser::POLL).await;
    }

    // The Runtimes page shows what this machine has.
    ada.goto(&format!("{base}/w/acme-robots/runtimes"))
        .await
        .unwrap();
    ada.find("#runtime-claude").await.unwrap();
    ada.screenshot("runtimes").await.unwrap();

    // Logging out ends the session: the board sends Grace back to the login page.
    grace.click("form[action='/logout'] button").await.unwrap();
    wait_for_path(&grace, "/login").await;
    grace.goto(&format!("{base}/w/acme-robots")).await.unwrap();
    wait_for_path(&grace, "/login").await;

    ada.close().await.unwrap();
    grace.close().await.unwrap();
    app.shutdown.cancel();
    app.handle.await.unwrap().unwrap();
}
