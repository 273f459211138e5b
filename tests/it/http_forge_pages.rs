//! The pull-request loop's pages over real HTTP on both backends: the Settings page's Forge section for
//! owners (its connect form, its validation beside the fields, the connection once there) and its
//! refusal for members; and the issue page's pull-request panel with its "Open pull request" button.
//! Connections and pull requests are seeded straight in the store: no forge is ever called.

use muster::domain::{
    CheckState, IssueTitle, NewIssue, NewRun, PrCheck, PrUpdate, Role, RunStatus, RuntimeKind,
};
use muster_tests::engine::{bare_outcome, start_next};
use muster_tests::seed::{self, PASSWORD};
use muster_tests::{Backend, TestDb, spawn_app};
use reqwest::StatusCode;

async fn settings_forge_section_is_for_owners(backend: Backend) {
    let Some(db) = TestDb::new(backend).await else {
        return;
    };
    let app = spawn_app(db.config()).await;
    let (ada, ws) = seed::acme(&app.store).await;
    seed::member(
        &app.store,
        ws.id,
        seed::by_email("bob@acme.test"),
        Role::Member,
    )
    .await;
    let owner = app.sign_in("ada@acme.test", PASSWORD, "acme").await;
    let member = app.sign_in("bob@acme.test", PASSWORD, "acme").await;

    // Not connected: the connect form, every field of it.
    let page = owner.page(&app, "/w/acme/settings").await;
    assert!(
        page.contains(r#"<section class="panel forge" id="forge""#),
        "{page}"
    );
    assert!(page.contains("Not connected."), "{page}");
    for field in [
        r#"<select id="forge-kind" name="kind""#,
        r#"<option value="gitlab" data-api-url="https://gitlab.com/api/v4">GitLab</option>"#,
        r#"placeholder="https://api.github.com""#,
        r#"name="api_url" type="url""#,
        r#"name="repo" type="text""#,
        r#"name="token" type="password""#,
        r#"name="webhook_secret" type="password""#,
        r#"type="checkbox" name="auto_open""#,
        r#"name="max_rounds" type="number" min="1" max="20" value="3""#,
        r#"<option value="cancelled">cancelled</option>"#,
    ] {
        assert!(page.contains(field), "{field} not in the Forge section");
    }

    // Bad input: 422, each message beside its field, what was typed kept (never the token).
    let res = owner
        .post(
            &app,
            "/w/acme/settings/forge",
            &[
                ("_csrf", owner.csrf.as_str()),
                ("kind", "gitea"),
                ("api_url", ""),
                ("repo", "just-a-name"),
                ("token", ""),
                ("max_rounds", "99"),
                ("on_close", "todo"),
            ],
        )
        .await;
    assert_eq!(res.status(), StatusCode::UNPROCESSABLE_ENTITY);
    let page = res.text().await.unwrap();
    for (field, message) in [
        ("api_url", "is required for Gitea/Forgejo"),
        ("repo", "just-a-name is not a project path"),
        ("token", "is required: a token that may push"),
        ("max_rounds", "must be a whole number from 1 to 20"),
    ] {
        let at = page
            .find(&format!(r#"id="forge-{field}-error""#))
            .unwrap_or_else(|| panic!("no error beside {field}"));
        assert!(
            page[at..].split("</div>").next().unwrap().contains(message),
            "{field}: {message:?} not beside it"
        );
    }
    assert!(
        page.contains(r#"value="just-a-name""#),
        "the project is kept"
    );
    assert!(
        page.contains(r#"<option value="gitea" selected"#),
        "the kind is kept"
    );
    assert!(
        page.contains(r#"placeholder="https://gitea.example/api/v1""#),
        "the API URL's example follows the kind"
    );

    // A member sees no Forge section and may not connect.
    let res = member.get(&app, "/w/acme/settings").await;
    assert_eq!(res.status(), StatusCode::FORBIDDEN);
    assert!(!res.text().await.unwrap().contains(r#"id="forge""#));
    let res = member
        .post(
            &app,
            "/w/acme/settings/forge",
            &[
                ("_csrf", member.csrf.as_str()),
                ("kind", "github"),
                ("repo", "acme/app"),
                ("token", "ghp_x"),
            ],
        )
        .await;
    assert_eq!(res.status(), StatusCode::FORBIDDEN);
    assert!(
        app.store
            .list_forge_connections(ws.id)
            .await
            .unwrap()
            .is_empty(),
        "nothing was connected"
    );

    // Connected: the connection, its settings form, Test and Remove.
    let conn = seed::forge_connection(&app.store, ws.id, ada.id).await;
    let page = owner.page(&app, "/w/acme/settings").await;
    assert!(!page.contains("Not connected."), "{page}");
    for part in [
        r#"<dd id="forge-kind">GitHub</dd>"#,
        "<code>acme/app</code>",
        &format!("/hooks/github/{}", conn.id),
        "Test connection",
        &format!(r#"action="/w/acme/settings/forge/{}/remove""#, conn.id),
        "data-confirm=",
    ] {
        assert!(page.contains(part), "{part} not in the connected section");
    }

    // Its settings change from the page; a member may not.
    let update = format!("/w/acme/settings/forge/{}", conn.id);
    let res = owner
        .post(
            &app,
            &update,
            &[
                ("_csrf", owner.csrf.as_str()),
                ("auto_open", "true"),
                ("max_rounds", "5"),
                ("on_close", "cancelled"),
            ],
        )
        .await;
    assert_eq!(res.status(), StatusCode::SEE_OTHER);
    let now = app.store.get_forge_connection(conn.id).await.unwrap();
    assert!(now.auto_open && now.max_rounds == 5);
    assert_eq!(now.on_close.as_str(), "cancelled");
    let res = member
        .post(
            &app,
            &update,
            &[("_csrf", member.csrf.as_str()), ("max_rounds", "1")],
        )
        .await;
    assert_eq!(res.status(), StatusCode::FORBIDDEN);
    assert_eq!(
        app.store
            .get_forge_connection(conn.id)
            .await
            .unwrap()
            .max_rounds,
        5
    );

    // Removed from the page.
    let res = owner
        .post(
            &app,
            &format!("{update}/remove"),
            &[("_csrf", owner.csrf.as_str())],
        )
        .await;
    assert_eq!(res.status(), StatusCode::SEE_OTHER);
    assert!(
        app.store
            .list_forge_connections(ws.id)
            .await
            .unwrap()
            .is_empty()
    );
}

async fn the_issue_panel_offers_and_shows_pull_requests(backend: Backend) {
    let Some(db) = TestDb::new(backend).await else {
        return;
    };
    let app = spawn_app(db.config()).await;
    let (ada, ws) = seed::acme(&app.store).await;
    let agent = seed::agent(&app.store, ws.id, "coder", RuntimeKind::Custom).await;
    let issue = app
        .store
        .create_issue(
            ws.id,
            &NewIssue::new(IssueTitle::parse("Add a cache").unwrap()),
        )
        .await
        .unwrap();
    let owner = app.sign_in("ada@acme.test", PASSWORD, "acme").await;
    let url = format!("/w/acme/issues/{}", issue.key);

    // No connection, no pull request: no panel to speak of, no socket.
    let page = owner.page(&app, &url).await;
    assert!(!page.contains("Open pull request"), "not connected");
    assert!(!page.contains(&format!("{url}/live")), "no socket");

    // Connected: the button, and the panel's socket.
    let conn = seed::forge_connection(&app.store, ws.id, ada.id).await;
    let page = owner.page(&app, &url).await;
    assert!(
        page.contains(&format!(r#"action="{url}/pull-request""#)),
        "the button: {page}"
    );
    assert!(page.contains(&format!(r#"ws-connect="{url}/live""#)));
    // Nothing delivered yet: the refusal shows in the panel, the page again (422).
    let res = owner
        .post(
            &app,
            &format!("{url}/pull-request"),
            &[("_csrf", owner.csrf.as_str())],
        )
        .await;
    assert_eq!(res.status(), StatusCode::UNPROCESSABLE_ENTITY);
    let page = res.text().await.unwrap();
    let panel = &page[page.find(r#"id="issue-pulls""#).unwrap()..];
    assert!(
        panel.contains(&format!(
            "no run on {} has delivered pushed work yet",
            issue.key
        )),
        "{panel}"
    );

    // A pull request, superseded by a newer one that is open: both listed, newest first, no button.
    let run = app
        .store
        .create_run(&NewRun::assignment(ws.id, issue.id, agent.id))
        .await
        .unwrap();
    let old = seed::pull_request(&app.store, &conn, &run, 3).await;
    let new = seed::pull_request(&app.store, &conn, &run, 4).await;
    app.store
        .update_pull_request(
            old.id,
            &PrUpdate {
                state: Some(muster::domain::PrState::Closed),
                ..PrUpdate::default()
            },
        )
        .await
        .unwrap();
    app.store
        .supersede_pull_request(old.id, new.id)
        .await
        .unwrap();
    app.store
        .update_pull_request(
            new.id,
            &PrUpdate {
                check: Some(PrCheck {
                    name: "lint".into(),
                    state: CheckState::Pending,
                    url: None,
                }),
                ..PrUpdate::default()
            },
        )
        .await
        .unwrap();
    let page = owner.page(&app, &url).await;
    let panel = &page[page.find(r#"id="issue-pulls""#).unwrap()..];
    let (four, three) = (
        panel.find(r#"id="pull-4""#).unwrap(),
        panel.find(r#"id="pull-3""#).unwrap(),
    );
    assert!(four < three, "newest first");
    assert!(panel.contains("superseded by #4"), "{panel}");
    assert!(panel.contains(r#"<span class="pull-state pull-closed">Closed</span>"#));
    assert!(panel.contains(r#"<span class="pull-state pull-draft">Draft</span>"#));
    assert!(panel.contains(r#"class="pull-check check-pending""#));
    assert!(!page.contains("Open pull request"), "one is open");

    // The run's page offers one once the run succeeded, and only then.
    let run_url = format!("/w/acme/runs/{}", run.id);
    let button = format!(r#"action="{run_url}/pull-request""#);
    assert!(
        !owner.page(&app, &run_url).await.contains(&button),
        "queued"
    );
    let started = start_next(app.store.as_ref(), "test", None).await.unwrap();
    assert_eq!(started.id, run.id);
    app.store
        .finish_run(run.id, &bare_outcome(RunStatus::Succeeded))
        .await
        .unwrap();
    assert!(
        owner.page(&app, &run_url).await.contains(&button),
        "succeeded"
    );

    // The board's card shows the latest.
    let board = owner.page(&app, "/w/acme").await;
    assert!(
        board.contains(
            r#"<span class="card-pull pull-draft" title="Pull request #4, draft">PR #4</span>"#
        ),
        "the badge"
    );
}

both_backends!(
    settings_forge_section_is_for_owners,
    the_issue_panel_offers_and_shows_pull_requests,
);
