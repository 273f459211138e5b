//! The planner in real headless Chromium, with real runs: "Plan with agent" on an issue starts a
//! stand-in planner, whose proposal shows up on the issue's Plan panel; on the review page a person
//! drops an item, renames one and approves; the tree's agents then run in dependency order and the
//! sub-issues show on the panel. Screenshot: `planner` (the review page) in `target/screenshots/`
//! (copied to `docs/screenshots/` for the README).

use std::time::Duration;

use muster::domain::*;
use muster_tests::Backend;
use muster_tests::browser::Browser;
use muster_tests::engine::poll_for;
use serde_json::json;

use crate::browser_runs::Server;
use crate::plans::{finisher, order_lines};

/// Generous: a cold Chromium on a loaded 2-core machine.
const LIVE: Duration = Duration::from_secs(20);

fn item(reference: &str, title: &str, blocked_by: &[&str]) -> serde_json::Value {
    json!({
        "ref": reference,
        "title": title,
        "description": format!("{title}, as the issue asks."),
        "acceptance": format!("{title} passes its tests"),
        "agent": "worker",
        "blocked_by": blocked_by,
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs Chromium and chromedriver; run with --include-ignored"]
async fn a_person_edits_and_approves_an_agents_plan_and_it_runs_in_order() {
    let Some(server) = Server::start(Backend::Sqlite).await else {
        return;
    };
    let repo = muster_tests::repo_named(server.scripts.path(), "site");
    server.use_repo(&repo).await;
    let plan = json!({
        "summary": "Schema first, then the API; the screens and the docs build on it.",
        "items": [
            item("db", "Add the subscriptions table", &[]),
            item("api", "Subscription endpoints", &["db"]),
            item("ui", "Billing screens", &["api"]),
            item("docs", "Document the billing API", &["api"]),
        ],
    });
    let planner = server.script(
        "planner.sh",
        &format!(
            r#"cat >/dev/null
curl -sS -o /dev/null -X POST -H "Authorization: Bearer $MUSTER_TOKEN" -H 'content-type: application/json' \
  --data @- "$MUSTER_URL/api/v1/issues/$MUSTER_ISSUE/proposals" <<'PLAN'
{plan}
PLAN
echo '{}'
exit 0"#,
            muster_tests::ensemble::result_line(9, 0.003, "Proposed four parts.")
        ),
    );
    server.agent("planner", &planner).await;
    server.agent("worker", &finisher(&server)).await;
    let issue = server.issue("Take payments for subscriptions").await;
    let Some(browser) = Browser::signed_in(&server.url(""), "ada@acme.test", LIVE).await else {
        return;
    };
    browser.set_viewport_width(1280, 1100).await.unwrap();
    let page = server.url(&format!("/w/acme/issues/{}", issue.key));
    browser.goto(&page).await.unwrap();
    browser
        .select("#plan-agent-agent", "planner")
        .await
        .unwrap();
    browser
        .click("form.plan-with button[type=submit]")
        .await
        .unwrap();
    // The proposal reaches the panel (live, or at the latest on a reload).
    let mut shown = false;
    for _ in 0..20 {
        if browser
            .wait_for_text(
                "#issue-plan",
                "planner proposed 4 sub-issues",
                Duration::from_secs(2),
            )
            .await
            .is_ok()
        {
            shown = true;
            break;
        }
        browser.goto(&page).await.unwrap();
    }
    assert!(
        shown,
        "{}",
        browser.text("#issue-plan").await.unwrap_or_default()
    );
    browser.click("#plan-review").await.unwrap();
    browser
        .wait_for_path(&format!("/w/acme/issues/{}/plan", issue.key), LIVE)
        .await
        .unwrap();
    browser
        .wait_for_text("#plan-review-h", "planner proposed 4 sub-issues", LIVE)
        .await
        .unwrap();
    browser.screenshot("planner").await.unwrap();
    // Drop the docs, rename the screens; approve with the agents assigned.
    browser
        .click("#plan-item-docs .plan-drop input")
        .await
        .unwrap();
    browser
        .fill(
            "#plan-item-ui-title",
            "Billing screens, with the plan picker",
        )
        .await
        .unwrap();
    browser.click("#plan-approve-button").await.unwrap();
    browser
        .wait_for_path(&format!("/w/acme/issues/{}#issue-plan", issue.key), LIVE)
        .await
        .unwrap();
    let children = server.store.list_children(issue.id).await.unwrap();
    let titles: Vec<&str> = children.iter().map(|c| c.title.as_str()).collect();
    assert_eq!(
        titles,
        [
            "Add the subscriptions table",
            "Subscription endpoints",
            "Billing screens, with the plan picker"
        ]
    );
    // They run in order, each once.
    poll_for(Duration::from_secs(90), "the three parts done", || async {
        let mut all = true;
        for child in &children {
            let c = server.store.get_issue_by_id(child.id).await.unwrap();
            let runs = server.store.list_runs_for_issue(c.id).await.unwrap();
            all &= c.status == IssueStatus::Done
                && !runs.is_empty()
                && runs.iter().all(|r| r.status.is_terminal());
        }
        all.then_some(())
    })
    .await;
    let mut expected = Vec::new();
    for child in &children {
        expected.push(format!("{} start", child.key));
        expected.push(format!("{} end 200", child.key));
    }
    assert_eq!(order_lines(&server), expected);
    browser.goto(&page).await.unwrap();
    browser
        .wait_for_text("#issue-plan .plan-progress-text", "3/3 done", LIVE)
        .await
        .unwrap();
    // The review page now reads as what was made.
    browser
        .goto(&server.url(&format!("/w/acme/issues/{}/plan", issue.key)))
        .await
        .unwrap();
    browser
        .wait_for_text("#plan-review-h", "approved", LIVE)
        .await
        .unwrap();
    browser
        .wait_for_text("#plan-review", children[2].key.to_string().as_str(), LIVE)
        .await
        .unwrap();
    browser.close().await.unwrap();
    server.stop().await;
}
