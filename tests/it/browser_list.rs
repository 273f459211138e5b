//! The issue list in real headless Chromium: a header click sorts, the grouping follows the filter bar,
//! three issues ticked (the bar counts them) move to done in one batch, and a saved view opens from the
//! Views menu. Screenshot: `list-view` in `target/screenshots/` (copied to
//! `docs/screenshots/list-view.png` for the README).

use std::time::Duration;

use muster::domain::{Assignee, IssueStatus, IssueTitle, Label, NewIssue, Priority, RuntimeKind};
use muster_tests::browser::Browser;
use muster_tests::seed;
use muster_tests::{Backend, TestDb, spawn_app};
use serde_json::json;

/// Generous: a cold Chromium on a loaded 2-core machine.
const LIVE: Duration = Duration::from_secs(20);

const TITLES: &[&str] = &[
    "Crash when the config file is empty",
    "Add SSO login for enterprise workspaces",
    "Billing page shows the wrong currency",
    "Dark mode for the run log",
    "Flaky test in the runner socket",
    "Export the board as CSV",
    "Rate-limit the public API",
    "Slow search on large workspaces",
    "Invite link expires too early",
    "Keyboard shortcut to assign an agent",
];

/// Waits until the page is `path_and_query`.
async fn land_on(browser: &Browser, path_and_query: &str) {
    browser
        .until_js(
            "return location.pathname + location.search",
            &json!(path_and_query),
            LIVE,
        )
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs Chromium and chromedriver; run with --include-ignored"]
async fn a_list_is_sorted_grouped_changed_in_a_batch_and_saved() {
    let Some(db) = TestDb::new(Backend::Sqlite).await else {
        return;
    };
    let app = spawn_app(db.config()).await;
    let (ada, ws) = seed::acme(&app.store).await;
    let coder = seed::agent(&app.store, ws.id, "coder", RuntimeKind::Custom).await;
    let statuses = [
        IssueStatus::Backlog,
        IssueStatus::Todo,
        IssueStatus::InProgress,
        IssueStatus::InReview,
        IssueStatus::Done,
    ];
    for n in 0..30_usize {
        let mut new = NewIssue::new(IssueTitle::parse(TITLES[n % TITLES.len()]).unwrap());
        new.status = statuses[(n * 7) % statuses.len()];
        new.priority = Priority::ALL[(n * 3 + n / 5) % Priority::ALL.len()];
        new.assignee = match n % 4 {
            0 => Some(Assignee::User(ada.id)),
            1 if new.status == IssueStatus::Backlog => Some(Assignee::Agent(coder.id)),
            _ => None,
        };
        new.labels = match n % 3 {
            0 => vec![Label::parse("bug").unwrap()],
            1 => vec![Label::parse("ui").unwrap()],
            _ => Vec::new(),
        };
        if n > 0 && n % 6 == 0 {
            new.parent = Some(
                app.store
                    .get_issue(ws.id, &muster::domain::IssueKey::parse("ACM-1").unwrap())
                    .await
                    .unwrap()
                    .id,
            );
        }
        app.store.create_issue(ws.id, &new).await.unwrap();
    }
    let Some(browser) = Browser::signed_in(&app.url(""), "ada@acme.test", LIVE).await else {
        return;
    };
    browser.set_viewport_width(1360, 1500).await.unwrap();
    // From the board's toggle to the list.
    browser.goto(&app.url("/w/acme")).await.unwrap();
    browser
        .click(".view-toggle a[href='/w/acme/list']")
        .await
        .unwrap();
    browser.wait_for_path("/w/acme/list", LIVE).await.unwrap();
    browser.find_within("#row-ACM-30", LIVE).await.unwrap();

    // A click on "Title" sorts by title: "Add SSO login…" (ACM-2) first.
    browser.click("a.list-sort[data-sort=title]").await.unwrap();
    land_on(&browser, "/w/acme/list?sort=title&dir=asc").await;
    browser
        .wait_for_text("tbody.list-group tr.list-row td.list-key", "ACM-2", LIVE)
        .await
        .unwrap();

    // Grouped by status from the filter bar, still by title.
    browser.select("#filter-group", "status").await.unwrap();
    browser
        .click("form.filters button[type=submit]")
        .await
        .unwrap();
    browser
        .wait_for_text(".list-group-head .list-group-label", "Backlog", LIVE)
        .await
        .unwrap();
    assert!(
        browser
            .current_url()
            .await
            .unwrap()
            .contains("group=status")
    );

    // Three ticked; the bar counts them; to done in one batch.
    let picked = ["ACM-2", "ACM-3", "ACM-4"];
    for key in picked {
        browser
            .click(&format!("#row-{key} input[name=key]"))
            .await
            .unwrap();
    }
    browser
        .wait_for_text("#batch-count", "3 selected", LIVE)
        .await
        .unwrap();
    browser.select("#batch-status", "done").await.unwrap();
    browser
        .execute("window.scrollTo(0, 0); return true", vec![])
        .await
        .unwrap();
    browser.screenshot("list-view").await.unwrap();
    browser.click("#batch-apply").await.unwrap();
    for key in picked {
        browser
            .until_js(
                &format!(
                    "var r = document.getElementById('row-{key}'); return r ? r.dataset.status : null"
                ),
                &json!("done"),
                LIVE,
            )
            .await
            .unwrap();
    }
    for key in picked {
        let issue = app
            .store
            .get_issue(ws.id, &muster::domain::IssueKey::parse(key).unwrap())
            .await
            .unwrap();
        assert_eq!(issue.status, IssueStatus::Done, "{key}");
    }

    // Saved as a view, then opened from the Views menu on the plain list.
    browser.click("details.list-save summary").await.unwrap();
    browser.fill("#view-name", "Done by title").await.unwrap();
    browser
        .click("details.list-save button[type=submit]")
        .await
        .unwrap();
    land_on(&browser, "/w/acme/list?sort=title&dir=asc&group=status").await;
    browser.goto(&app.url("/w/acme/list")).await.unwrap();
    browser.click("details.list-views summary").await.unwrap();
    browser.click(".list-view-links a").await.unwrap();
    land_on(&browser, "/w/acme/list?sort=title&dir=asc&group=status").await;
    // The menu (closed again on the new page) marks the view showing.
    browser
        .until_js(
            "var a = document.querySelector('.list-view-links a[aria-current=page]'); \
             return a ? a.textContent : null",
            &json!("Done by title"),
            LIVE,
        )
        .await
        .unwrap();
    browser.close().await.unwrap();
}
