//! The Ensembles pages over real HTTP on both backends: owners define, rename and delete an ensemble with
//! the form; bad input comes back 422 with each message and what was typed; a member reads the list and
//! is refused (403) everything else.

use muster::domain::{AgentName, NewAgent, Role, RuntimeKind, Workspace};
use muster_tests::seed::{self, by_email};
use muster_tests::{Backend, Session, TestApp, TestDb, spawn_app};
use reqwest::StatusCode;

/// Ada owns `acme` with agents `coder`, `tester` and `judge`; Bob is a member.
async fn app(backend: Backend) -> Option<(TestDb, TestApp, Workspace)> {
    let db = TestDb::new(backend).await?;
    let app = spawn_app(db.config()).await;
    let (_, ws) = seed::owner_of(&app.store, by_email("ada@acme.test"), seed::ACME).await;
    seed::member(&app.store, ws.id, by_email("bob@acme.test"), Role::Member).await;
    for name in ["coder", "tester", "judge"] {
        let new = NewAgent::new(AgentName::parse(name).unwrap(), RuntimeKind::Claude);
        app.store.create_agent(ws.id, &new).await.unwrap();
    }
    Some((db, app, ws))
}

async fn html(res: reqwest::Response, status: StatusCode) -> String {
    assert_eq!(res.status(), status);
    res.text().await.unwrap()
}

/// Posts the form `fields` (with the session's CSRF token) to `path`, which must answer `status`: the
/// page.
async fn submit(
    session: &Session,
    app: &TestApp,
    path: &str,
    fields: &[(&str, &str)],
    status: StatusCode,
) -> String {
    html(
        session.post(app, path, &form(&session.csrf, fields)).await,
        status,
    )
    .await
}

fn form<'a>(csrf: &'a str, extra: &[(&'a str, &'a str)]) -> Vec<(&'a str, &'a str)> {
    let mut out = vec![("_csrf", csrf)];
    out.extend_from_slice(extra);
    out
}

async fn ensembles_pages_on(backend: Backend) {
    let Some((_db, app, ws)) = app(backend).await else {
        return;
    };
    let ada = app.sign_in("ada@acme.test", "correct-horse", "acme").await;
    let bob = app.sign_in("bob@acme.test", "correct-horse", "acme").await;
    let page = html(ada.get(&app, "/w/acme/ensembles").await, StatusCode::OK).await;
    assert!(page.contains("No ensembles yet."), "{page}");
    assert!(page.contains(r#"href="/w/acme/ensembles/new""#));
    assert!(page.contains(r#"<a href="/w/acme/ensembles" aria-current="page">Ensembles</a>"#));

    // Everything wrong at once comes back 422, each message by its field, the input kept.
    let typed = [
        ("name", "pair"),
        ("members", "coder"),
        ("check", "cargo test"),
        ("early_stop", "quorum"),
        ("quorum", "nine"),
        ("budget_usd", "lots"),
        ("budget_tokens", "1,000"),
    ];
    let page = submit(
        &ada,
        &app,
        "/w/acme/ensembles",
        &typed,
        StatusCode::UNPROCESSABLE_ENTITY,
    )
    .await;
    assert!(
        page.contains("K must be a whole number from 1 to 8"),
        "{page}"
    );
    assert!(page.contains("must be an amount like 2.50"), "{page}");
    assert!(page.contains(r#"id="ensemble-name" name="name" type="text" value="pair""#));
    assert!(page.contains(r#"name="members" value="coder" checked"#));
    assert!(!page.contains(r#"name="members" value="tester" checked"#));
    assert!(page.contains(r#"value="cargo test""#));
    assert!(page.contains(r#"<option value="quorum" selected>"#));
    assert!(page.contains(r#"value="lots""#) && page.contains(r#"value="1,000""#));
    // One member is the service's rule, said by the members.
    let page = submit(
        &ada,
        &app,
        "/w/acme/ensembles",
        &[
            ("name", "pair"),
            ("members", "coder"),
            ("early_stop", "all"),
        ],
        StatusCode::UNPROCESSABLE_ENTITY,
    )
    .await;
    let members = page
        .split(r#"id="ensemble-members-error""#)
        .nth(1)
        .unwrap_or_default();
    assert!(
        members.starts_with("><p>an ensemble has 2 to 8 members; this one has 1</p>"),
        "{page}"
    );
    assert!(app.store.list_ensembles(ws.id).await.unwrap().is_empty());

    // Created; a timeout without a check command is dropped, not an error.
    let done = ada
        .post(
            &app,
            "/w/acme/ensembles",
            &form(
                &ada.csrf,
                &[
                    ("name", "pair"),
                    ("members", "coder"),
                    ("members", "tester"),
                    ("check", ""),
                    ("check_timeout", "600"),
                    ("early_stop", "first_green"),
                    ("reviewer", "judge"),
                    ("budget_usd", "$2.50"),
                    ("budget_tokens", ""),
                    ("share", "60%"),
                ],
            ),
        )
        .await;
    assert_eq!(done.status(), StatusCode::SEE_OTHER);
    assert_eq!(done.headers()["location"], "/w/acme/ensembles");
    let e = &app.store.list_ensembles(ws.id).await.unwrap()[0];
    assert_eq!(e.settings.check, None);
    assert_eq!(e.settings.budget.usd, Some(2.5));
    assert_eq!(e.settings.share, Some(0.6));
    let page = html(ada.get(&app, "/w/acme/ensembles").await, StatusCode::OK).await;
    for expected in [
        r#"data-ensemble="pair""#,
        "first green",
        "$2.50",
        "$1.50<br><span class=\"hint\">60% share</span>",
        r#"href="/w/acme/ensembles/pair/edit""#,
    ] {
        assert!(page.contains(expected), "{expected:?} in {page}");
    }
    let again = submit(
        &ada,
        &app,
        "/w/acme/ensembles",
        &[
            ("name", "pair"),
            ("members", "coder"),
            ("members", "tester"),
        ],
        StatusCode::UNPROCESSABLE_ENTITY,
    )
    .await;
    assert!(again.contains("an ensemble called pair exists already"));

    // The reviewer may not be a member; renamed, the old name is gone.
    let page = submit(
        &ada,
        &app,
        "/w/acme/ensembles/pair",
        &[
            ("name", "pair"),
            ("members", "coder"),
            ("members", "judge"),
            ("reviewer", "judge"),
        ],
        StatusCode::UNPROCESSABLE_ENTITY,
    )
    .await;
    assert!(
        page.contains("the reviewer may not be one of the members"),
        "{page}"
    );
    assert!(
        page.contains(r#"action="/w/acme/ensembles/pair""#),
        "still posts to the stored name"
    );
    let renamed = ada
        .post(
            &app,
            "/w/acme/ensembles/pair",
            &form(
                &ada.csrf,
                &[
                    ("name", "duo"),
                    ("members", "coder"),
                    ("members", "tester"),
                    ("early_stop", "all"),
                    ("reviewer", ""),
                ],
            ),
        )
        .await;
    assert_eq!(renamed.status(), StatusCode::SEE_OTHER);
    let page = html(
        ada.get(&app, "/w/acme/ensembles/duo/edit").await,
        StatusCode::OK,
    )
    .await;
    assert!(
        page.contains(r#"<option value="" selected>None</option>"#),
        "{page}"
    );
    assert!(page.contains(r#"action="/w/acme/ensembles/duo/delete""#));
    assert_eq!(
        ada.get(&app, "/w/acme/ensembles/pair/edit").await.status(),
        StatusCode::NOT_FOUND
    );

    // A member reads the list, without the buttons, and is refused the rest.
    let page = html(bob.get(&app, "/w/acme/ensembles").await, StatusCode::OK).await;
    assert!(page.contains(r#"data-ensemble="duo""#));
    assert!(
        !page.contains("/ensembles/new") && !page.contains("/edit"),
        "{page}"
    );
    for path in ["/w/acme/ensembles/new", "/w/acme/ensembles/duo/edit"] {
        assert_eq!(
            bob.get(&app, path).await.status(),
            StatusCode::FORBIDDEN,
            "{path}"
        );
    }
    let mine = [
        ("name", "mine"),
        ("members", "coder"),
        ("members", "tester"),
    ];
    for path in [
        "/w/acme/ensembles",
        "/w/acme/ensembles/duo",
        "/w/acme/ensembles/duo/delete",
    ] {
        let refused = bob.post(&app, path, &form(&bob.csrf, &mine)).await;
        assert_eq!(refused.status(), StatusCode::FORBIDDEN, "{path}");
    }
    // Without the CSRF token, not even the owner.
    let forged = ada.post(&app, "/w/acme/ensembles/duo/delete", &[]).await;
    assert_eq!(forged.status(), StatusCode::FORBIDDEN);
    assert_eq!(app.store.list_ensembles(ws.id).await.unwrap().len(), 1);

    let gone = ada
        .post(&app, "/w/acme/ensembles/duo/delete", &form(&ada.csrf, &[]))
        .await;
    assert_eq!(gone.status(), StatusCode::SEE_OTHER);
    assert!(app.store.list_ensembles(ws.id).await.unwrap().is_empty());
}

both_backends!(
    runtime ();
    ensembles_pages_on,
);
