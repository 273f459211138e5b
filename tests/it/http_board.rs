//! The board's search, card menu, assign action and palette data over real HTTP, on both backends:
//! "ACM-1" finds the issue by key, the card menu and assign go through the session, the CSRF token and
//! the same use-case as the issue page.

use muster::domain::{
    AgentName, Assignee, IssueKey, IssueStatus, IssueTitle, NewIssue, Role, RuntimeKind, Workspace,
};
use muster_tests::seed::{self, by_email};
use muster_tests::{Backend, TestApp, TestDb, spawn_app};
use reqwest::StatusCode;

/// Ada (owner) and Bob (member) in `acme`, twelve issues ACM-1..ACM-12 in todo, one agent.
pub(crate) async fn board_with_issues(backend: Backend) -> Option<(TestDb, TestApp, Workspace)> {
    let db = TestDb::new(backend).await?;
    let app = spawn_app(db.config()).await;
    let (_, ws) = seed::owner_of(&app.store, by_email("ada@acme.test"), seed::ACME).await;
    seed::member(&app.store, ws.id, by_email("bob@acme.test"), Role::Member).await;
    seed::agent(&app.store, ws.id, "codex-coder", RuntimeKind::Codex).await;
    for n in 1..=12 {
        let mut new = NewIssue::new(IssueTitle::parse(&format!("Task {n}")).unwrap());
        new.status = IssueStatus::Todo;
        app.store.create_issue(ws.id, &new).await.unwrap();
    }
    Some((db, app, ws))
}

async fn search_finds_issues_by_key(backend: Backend) {
    let Some((_db, app, _ws)) = board_with_issues(backend).await else {
        return;
    };
    let ada = app.sign_in("ada@acme.test", "correct-horse", "acme").await;
    let page = ada.get(&app, "/w/acme?q=ACM-1").await;
    assert_eq!(page.status(), StatusCode::OK);
    let html = page.text().await.unwrap();
    for shown in ["card-ACM-1\"", "card-ACM-10\"", "card-ACM-12\""] {
        assert!(html.contains(shown), "{shown} is found");
    }
    assert!(!html.contains("card-ACM-2\""), "ACM-2 is not");
    let html = ada
        .get(&app, "/w/acme?q=acm-12")
        .await
        .text()
        .await
        .unwrap();
    assert!(html.contains("card-ACM-12\"") && !html.contains("card-ACM-1\""));

    // The palette's data: the exact key first, then the keys it begins.
    let palette: serde_json::Value = ada
        .get(&app, "/w/acme/palette?q=ACM-1")
        .await
        .json()
        .await
        .unwrap();
    let keys: Vec<&str> = palette["issues"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["key"].as_str().unwrap())
        .collect();
    assert_eq!(keys, ["ACM-1", "ACM-10", "ACM-11", "ACM-12"]);
    assert_eq!(palette["issues"][0]["url"], "/w/acme/issues/ACM-1");
    assert_eq!(palette["people"].as_array().unwrap().len(), 3);
    let agent = &palette["people"][2];
    assert_eq!(agent["name"], "codex-coder");
    assert!(agent["avatar"].as_str().unwrap().contains("rt-codex"));
    assert!(palette["pages"].to_string().contains("/w/acme/settings"));
    assert!(palette["pages"].to_string().contains("/w/acme/ensembles"));
    let bob = app.sign_in("bob@acme.test", "correct-horse", "acme").await;
    let theirs: serde_json::Value = bob.get(&app, "/w/acme/palette").await.json().await.unwrap();
    assert!(
        !theirs["pages"].to_string().contains("settings"),
        "members have no settings page"
    );
    app.shutdown.cancel();
}

both_backends!(
    runtime ();
    search_finds_issues_by_key,
    card_menu_assigns_with_csrf,
);

async fn card_menu_assigns_with_csrf(backend: Backend) {
    let Some((_db, app, ws)) = board_with_issues(backend).await else {
        return;
    };
    let bob = app.sign_in("bob@acme.test", "correct-horse", "acme").await;
    let key = IssueKey::parse("ACM-3").unwrap();

    // The menu: a fragment for htmx, a whole page without JavaScript; both post with the CSRF token.
    let fragment = bob
        .hx_get(&app, "/w/acme/issues/ACM-3/menu")
        .await
        .text()
        .await
        .unwrap();
    assert!(fragment.starts_with(r#"<div class="card-menu-body" id="card-menu-ACM-3""#));
    assert!(fragment.contains(&format!(r#"name="_csrf" value="{}""#, bob.csrf)));
    assert!(fragment.contains(r#"action="/w/acme/issues/ACM-3/assign""#));
    let page = bob
        .get(&app, "/w/acme/issues/ACM-3/menu")
        .await
        .text()
        .await
        .unwrap();
    assert!(page.starts_with("<!DOCTYPE html>") && page.contains("card-menu-ACM-3"));
    assert_eq!(
        bob.hx_get(&app, "/w/acme/issues/ACM-99/menu")
            .await
            .status(),
        StatusCode::NOT_FOUND
    );

    // Without the token nothing changes.
    let forged = bob
        .hx_post(
            &app,
            "/w/acme/issues/ACM-3/assign",
            &[("assignee", "codex-coder")],
        )
        .await;
    assert_eq!(forged.status(), StatusCode::FORBIDDEN);
    assert_eq!(
        app.store.get_issue(ws.id, &key).await.unwrap().assignee,
        None
    );

    // A member assigns the agent from the card (htmx: 204), then nobody (no JS: back to the board).
    let agent = app
        .store
        .get_agent_by_name(ws.id, &AgentName::parse("codex-coder").unwrap())
        .await
        .unwrap();
    let value = format!("agent:{}", agent.id);
    let res = bob
        .hx_post(
            &app,
            "/w/acme/issues/ACM-3/assign",
            &[("_csrf", &bob.csrf), ("assignee", &value)],
        )
        .await;
    assert_eq!(res.status(), StatusCode::NO_CONTENT);
    assert_eq!(
        app.store.get_issue(ws.id, &key).await.unwrap().assignee,
        Some(Assignee::Agent(agent.id))
    );
    let res = bob
        .post(
            &app,
            "/w/acme/issues/ACM-3/assign",
            &[("_csrf", &bob.csrf), ("assignee", "")],
        )
        .await;
    assert_eq!(res.status(), StatusCode::SEE_OTHER);
    assert_eq!(res.headers()["location"], "/w/acme");
    assert_eq!(
        app.store.get_issue(ws.id, &key).await.unwrap().assignee,
        None
    );

    // Bad input gets a precise answer.
    let res = bob
        .hx_post(
            &app,
            "/w/acme/issues/ACM-3/assign",
            &[("_csrf", &bob.csrf), ("assignee", "nobody-here")],
        )
        .await;
    assert_eq!(res.status(), StatusCode::UNPROCESSABLE_ENTITY);
    assert!(
        res.text()
            .await
            .unwrap()
            .contains("no agent or member called")
    );
    let res = bob
        .hx_post(&app, "/w/acme/issues/ACM-3/assign", &[("_csrf", &bob.csrf)])
        .await;
    assert_eq!(res.status(), StatusCode::UNPROCESSABLE_ENTITY);
    assert!(res.text().await.unwrap().contains("is missing: send"));
    app.shutdown.cancel();
}
