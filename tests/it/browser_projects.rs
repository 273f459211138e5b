//! Projects on the pages in real headless Chromium: a project is created from the Projects page (a taken
//! key is refused beside the field, the typed name kept), an issue joins it from its own page, the
//! project's page shows its progress, issues and spend, and the board filters to it with the project's
//! key on its cards. Screenshots: `projects` and `project` in `target/screenshots/` (copied to
//! `docs/screenshots/` for the README).

use std::time::Duration;

use muster::domain::*;
use muster_tests::browser::Browser;
use muster_tests::seed;
use muster_tests::{Backend, TestDb, spawn_app};
use serde_json::json;

/// Generous: a cold Chromium on a loaded 2-core machine.
const LIVE: Duration = Duration::from_secs(20);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs Chromium and chromedriver; run with --include-ignored"]
async fn a_project_is_laid_out_on_its_pages_and_filters_the_board() {
    let Some(db) = TestDb::new(Backend::Sqlite).await else {
        return;
    };
    let app = spawn_app(db.config()).await;
    let (ada, ws) = seed::acme(&app.store).await;
    for (title, status) in [
        ("Hero image for the landing page", IssueStatus::Todo),
        ("Footer links", IssueStatus::Done),
        ("Pricing table", IssueStatus::InProgress),
        ("Rotate the API keys", IssueStatus::Todo),
    ] {
        let mut new = NewIssue::new(IssueTitle::parse(title).unwrap());
        new.status = status;
        new.created_by = Some(ada.id);
        app.store.create_issue(ws.id, &new).await.unwrap();
    }
    // Another project, for the list.
    app.store
        .create_project(
            ws.id,
            &NewProject {
                key: ProjectKey::parse("OPS").unwrap(),
                name: ProjectName::parse("Infrastructure").unwrap(),
                description: String::new(),
                lead: None,
                status: ProjectStatus::Planned,
                target_date: None,
                repo_path: None,
                check: None,
                created_by: Some(ada.id),
            },
        )
        .await
        .unwrap();
    let Some(browser) = Browser::signed_in(&app.url(""), "ada@acme.test", LIVE).await else {
        return;
    };
    browser.set_viewport_width(1280, 1000).await.unwrap();

    // Created from the Projects page.
    browser.goto(&app.url("/w/acme/projects")).await.unwrap();
    browser.fill("#new-project-key", "web").await.unwrap();
    browser
        .fill("#new-project-name", "Website relaunch")
        .await
        .unwrap();
    browser
        .select("#new-project-status", "active")
        .await
        .unwrap();
    browser
        .select("#new-project-lead", &format!("user:{}", ada.id))
        .await
        .unwrap();
    browser
        .execute(
            "document.getElementById('new-project-target_date').value = '2027-03-31'; return true",
            vec![],
        )
        .await
        .unwrap();
    browser
        .fill(
            "#new-project-description",
            "The new landing page, pricing and footer.",
        )
        .await
        .unwrap();
    browser
        .click("form.project-form button[type=submit]")
        .await
        .unwrap();
    browser
        .wait_for_path("/w/acme/projects/WEB", LIVE)
        .await
        .unwrap();
    browser
        .wait_for_text("h1", "WEB · Website relaunch", LIVE)
        .await
        .unwrap();

    // A taken key is refused beside the field; what was typed stays.
    browser.goto(&app.url("/w/acme/projects")).await.unwrap();
    browser.fill("#new-project-key", "WEB").await.unwrap();
    browser
        .fill("#new-project-name", "Second site")
        .await
        .unwrap();
    browser
        .click("form.project-form button[type=submit]")
        .await
        .unwrap();
    browser
        .wait_for_text(
            "#new-project-key-error",
            "another project already has this key",
            LIVE,
        )
        .await
        .unwrap();
    assert_eq!(
        browser
            .execute(
                "return document.getElementById('new-project-name').value",
                vec![]
            )
            .await
            .unwrap(),
        json!("Second site")
    );

    // Issues join it from their own page.
    for key in ["ACM-1", "ACM-2", "ACM-3"] {
        browser
            .goto(&app.url(&format!("/w/acme/issues/{key}")))
            .await
            .unwrap();
        browser.select("#prop-project", "WEB").await.unwrap();
        let key = IssueKey::parse(key).unwrap();
        muster_tests::engine::poll_for(LIVE, "the issue in the project", || async {
            let issue = app.store.get_issue(ws.id, &key).await.unwrap();
            issue.project.is_some().then_some(())
        })
        .await;
    }
    // The move is in the issue's thread, named.
    browser
        .goto(&app.url("/w/acme/issues/ACM-3"))
        .await
        .unwrap();
    browser
        .wait_for_text(
            "#comments",
            "moved this to project WEB (Website relaunch)",
            LIVE,
        )
        .await
        .unwrap();

    // Its page: progress, statuses, issues.
    browser
        .goto(&app.url("/w/acme/projects/WEB"))
        .await
        .unwrap();
    browser
        .wait_for_text("#project-summary .project-progress-text", "1/3 done", LIVE)
        .await
        .unwrap();
    browser
        .wait_for_text("#project-issues", "Hero image for the landing page", LIVE)
        .await
        .unwrap();
    browser
        .wait_for_text("#project-repo", "the workspace's", LIVE)
        .await
        .unwrap();
    browser.screenshot("project").await.unwrap();
    browser.goto(&app.url("/w/acme/projects")).await.unwrap();
    browser
        .wait_for_text("tr[data-project=WEB]", "1/3 done", LIVE)
        .await
        .unwrap();
    browser.screenshot("projects").await.unwrap();

    // The board filtered to it: its cards only, each with the project's key.
    browser.goto(&app.url("/w/acme?project=WEB")).await.unwrap();
    browser
        .wait_for_text("#card-ACM-1 .card-project", "WEB", LIVE)
        .await
        .unwrap();
    assert_eq!(
        browser
            .execute(
                "return document.getElementById('card-ACM-4') === null",
                vec![]
            )
            .await
            .unwrap(),
        json!(true),
        "ACM-4 is in no project"
    );
    browser.close().await.unwrap();
}
