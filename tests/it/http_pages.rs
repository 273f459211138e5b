//! Pages and the live board socket over real HTTP: sign-in, CSRF, forms that keep input on errors,
//! permissions, and the WebSocket that pushes re-rendered columns.

use futures_util::StreamExt as _;
use muster::domain::Role;
use muster_tests::seed::{self, by_email};
use muster_tests::{Backend, TestApp, TestDb, spawn_app};
use reqwest::StatusCode;
use reqwest::redirect::Policy;

async fn app_with_people() -> Option<(TestDb, TestApp)> {
    let db = TestDb::new(Backend::Sqlite).await?;
    let app = spawn_app(db.config()).await;
    let (_, ws) = seed::owner_of(&app.store, by_email("ada@acme.test"), seed::ACME).await;
    seed::member(&app.store, ws.id, by_email("bob@acme.test"), Role::Member).await;
    let other = ("Other", "other", "OTH");
    seed::owner_of(&app.store, by_email("eve@other.test"), other).await;
    Some((db, app))
}

#[tokio::test]
async fn wrong_passwords_and_signed_out_visits() {
    let Some((_db, app)) = app_with_people().await else {
        return;
    };
    let http = reqwest::Client::builder()
        .redirect(Policy::none())
        .build()
        .unwrap();
    let bad = http
        .post(app.url("/login"))
        .form(&[("email", "ada@acme.test"), ("password", "nope-nope")])
        .send()
        .await
        .unwrap();
    assert_eq!(bad.status(), StatusCode::UNAUTHORIZED);
    let page = bad.text().await.unwrap();
    assert!(
        page.contains("wrong email or password") && page.contains("ada@acme.test"),
        "message shown, email kept"
    );
    let board = http.get(app.url("/w/acme?q=x")).send().await.unwrap();
    assert_eq!(board.status(), StatusCode::SEE_OTHER);
    assert_eq!(
        board.headers()["location"],
        "/login?next=%2Fw%2Facme%3Fq%3Dx",
        "comes back after signing in"
    );
    // No open redirect after login.
    let off_site = http
        .post(app.url("/login"))
        .form(&[
            ("email", "ada@acme.test"),
            ("password", "correct-horse"),
            ("next", "//evil.example/"),
        ])
        .send()
        .await
        .unwrap();
    assert_eq!(off_site.headers()["location"], "/");
}

#[tokio::test]
async fn forms_need_the_csrf_token_and_write_nothing_without_it() {
    let Some((_db, app)) = app_with_people().await else {
        return;
    };
    let ada = app.sign_in("ada@acme.test", "correct-horse", "acme").await;
    assert_eq!(ada.csrf.len(), 32, "the board carries the CSRF token");
    let forged = ada
        .post(
            &app,
            "/w/acme/issues",
            &[("title", "Forged"), ("status", "todo")],
        )
        .await;
    assert_eq!(forged.status(), StatusCode::FORBIDDEN);
    let wrong = ada
        .post(
            &app,
            "/w/acme/issues",
            &[
                ("_csrf", "0123456789abcdef0123456789abcdef"),
                ("title", "Forged"),
            ],
        )
        .await;
    assert_eq!(wrong.status(), StatusCode::FORBIDDEN);
    let ws = app
        .store
        .get_workspace_by_slug(&muster::domain::Slug::parse("acme").unwrap())
        .await
        .unwrap();
    assert!(
        app.store
            .list_issues(ws.id, &Default::default())
            .await
            .unwrap()
            .is_empty(),
        "nothing written"
    );
    let ok = ada
        .post(
            &app,
            "/w/acme/issues",
            &[
                ("_csrf", &ada.csrf),
                ("title", "Real"),
                ("status", "todo"),
                ("priority", "none"),
            ],
        )
        .await;
    assert_eq!(ok.status(), StatusCode::SEE_OTHER);
    assert_eq!(
        app.store
            .list_issues(ws.id, &Default::default())
            .await
            .unwrap()
            .len(),
        1
    );
}

#[tokio::test]
async fn bad_form_input_is_shown_with_the_input_kept() {
    let Some((_db, app)) = app_with_people().await else {
        return;
    };
    let ada = app.sign_in("ada@acme.test", "correct-horse", "acme").await;
    let res = ada
        .post(
            &app,
            "/w/acme/issues",
            &[
                ("_csrf", &ada.csrf),
                ("title", "  "),
                ("body", "kept <b>body</b>"),
                ("status", "doing"),
                ("labels", "x"),
            ],
        )
        .await;
    assert_eq!(res.status(), StatusCode::UNPROCESSABLE_ENTITY);
    let page = res.text().await.unwrap();
    assert!(page.contains("must not be empty"), "title message");
    assert!(
        page.contains("unknown status &quot;doing&quot;"),
        "status message"
    );
    assert!(
        page.contains("kept &lt;b&gt;body&lt;/b&gt;"),
        "typed body kept, escaped"
    );
    // 10 MB is refused before it is read, with a precise message.
    let huge = "x".repeat(10 * 1024 * 1024);
    let res = ada
        .post(
            &app,
            "/w/acme/issues",
            &[("_csrf", &ada.csrf), ("title", &huge)],
        )
        .await;
    assert_eq!(res.status(), StatusCode::PAYLOAD_TOO_LARGE);
    // A bad agent number is a field error, not a 500.
    let res = ada
        .post(
            &app,
            "/w/acme/agents",
            &[
                ("_csrf", &ada.csrf),
                ("name", "coder"),
                ("kind", "claude"),
                ("max_concurrent_runs", "lots"),
            ],
        )
        .await;
    assert_eq!(res.status(), StatusCode::UNPROCESSABLE_ENTITY);
    assert!(res.text().await.unwrap().contains("must be a whole number"));
}

#[tokio::test]
async fn roles_and_workspaces_are_enforced_on_pages() {
    let Some((_db, app)) = app_with_people().await else {
        return;
    };
    let ada = app.sign_in("ada@acme.test", "correct-horse", "acme").await;
    let created = ada
        .post(
            &app,
            "/w/acme/agents",
            &[("_csrf", &ada.csrf), ("name", "coder"), ("kind", "claude")],
        )
        .await;
    assert_eq!(created.status(), StatusCode::SEE_OTHER);
    let bob = app.sign_in("bob@acme.test", "correct-horse", "acme").await;
    let denied = bob
        .post(&app, "/w/acme/agents/coder/delete", &[("_csrf", &bob.csrf)])
        .await;
    assert_eq!(
        denied.status(),
        StatusCode::FORBIDDEN,
        "members cannot delete agents"
    );
    assert!(denied.text().await.unwrap().contains("does not allow"));
    let denied = bob
        .post(
            &app,
            "/w/acme/agents",
            &[
                ("_csrf", &bob.csrf),
                ("name", "mine"),
                ("kind", "custom"),
                ("command", "sh"),
            ],
        )
        .await;
    assert_eq!(
        denied.status(),
        StatusCode::FORBIDDEN,
        "members cannot create agents"
    );
    assert!(
        denied
            .text()
            .await
            .unwrap()
            .contains("only owners and admins may create agents")
    );
    let denied = bob
        .post(
            &app,
            "/w/acme/members",
            &[
                ("_csrf", &bob.csrf),
                ("email", "x@acme.test"),
                ("password", "long-enough"),
            ],
        )
        .await;
    assert_eq!(
        denied.status(),
        StatusCode::FORBIDDEN,
        "members cannot add members"
    );
    assert_eq!(
        bob.get(&app, "/w/other").await.status(),
        StatusCode::NOT_FOUND,
        "another workspace is not revealed"
    );
    assert_eq!(
        bob.get(&app, "/w/acme/issues/OTH-1").await.status(),
        StatusCode::NOT_FOUND
    );
    let gone = ada
        .post(&app, "/w/acme/agents/coder/delete", &[("_csrf", &ada.csrf)])
        .await;
    assert_eq!(gone.status(), StatusCode::SEE_OTHER);
}

#[tokio::test]
async fn the_live_board_pushes_changed_columns() {
    let Some((_db, app)) = app_with_people().await else {
        return;
    };
    let bob = app.sign_in("bob@acme.test", "correct-horse", "acme").await;
    let cookie = ("cookie", bob.cookie.as_str());
    let mut socket = app.socket("/w/acme/live", &[cookie]).await.unwrap();

    // A change by someone else, through the API's use-case path (the page form).
    let ada = app.sign_in("ada@acme.test", "correct-horse", "acme").await;
    ada.post(
        &app,
        "/w/acme/issues",
        &[
            ("_csrf", &ada.csrf),
            ("title", "Pushed <live>"),
            ("status", "todo"),
            ("priority", "high"),
        ],
    )
    .await;
    let frame = tokio::time::timeout(std::time::Duration::from_secs(10), socket.next())
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    let html = frame.into_text().unwrap().to_string();
    assert!(
        html.contains(r#"id="column-todo""#) && html.contains(r#"hx-swap-oob="outerHTML""#),
        "{html}"
    );
    assert!(
        html.contains("ACM-1") && html.contains("Pushed &lt;live&gt;"),
        "the new card, escaped: {html}"
    );

    // A page from another origin cannot open the socket, and neither can a signed-out visitor.
    let foreign = [cookie, ("origin", "http://evil.example")];
    assert!(app.socket("/w/acme/live", &foreign).await.is_err());
    assert!(app.socket("/w/acme/live", &[]).await.is_err());
}

#[tokio::test]
async fn the_runtimes_page_lists_each_cli_and_redetects() {
    let Some((_db, app)) = app_with_people().await else {
        return;
    };
    let bob = app.sign_in("bob@acme.test", "correct-horse", "acme").await;
    let page = bob.get(&app, "/w/acme/runtimes").await;
    assert_eq!(page.status(), StatusCode::OK);
    let html = page.text().await.unwrap();
    for kind in ["claude", "codex", "opencode", "llama"] {
        assert!(
            html.contains(&format!(r#"id="runtime-{kind}""#)),
            "{kind} listed"
        );
    }
    assert!(
        html.contains("Installed") || html.contains("Not installed") || html.contains("Broken")
    );
    // Re-detecting starts processes: a member sees the cached result, without the button.
    assert!(!html.contains("/w/acme/runtimes/detect"));
    let refused = bob
        .post(&app, "/w/acme/runtimes/detect", &[("_csrf", &bob.csrf)])
        .await;
    assert_eq!(refused.status(), StatusCode::FORBIDDEN);
    let ada = app.sign_in("ada@acme.test", "correct-horse", "acme").await;
    assert!(
        ada.get(&app, "/w/acme/runtimes")
            .await
            .text()
            .await
            .unwrap()
            .contains(r#"action="/w/acme/runtimes/detect""#)
    );
    let forged = ada.post(&app, "/w/acme/runtimes/detect", &[]).await;
    assert_eq!(forged.status(), StatusCode::FORBIDDEN);
    let redetect = ada
        .post(&app, "/w/acme/runtimes/detect", &[("_csrf", &ada.csrf)])
        .await;
    assert_eq!(redetect.status(), StatusCode::SEE_OTHER);
    assert_eq!(redetect.headers()["location"], "/w/acme/runtimes");
}
