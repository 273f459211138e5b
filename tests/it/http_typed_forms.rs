//! Issue 28: the pages' forms are typed. A request looks its session up once (the form reads the caller
//! its `WsMember` found), and a field that does not fit its form's type is a 422 naming it.

use axum::body::Body;
use axum::extract::{FromRequest, FromRequestParts};
use axum::http::Request;
use muster::domain::{Email, NewUser, NewWorkspace};
use muster::http::extract::CurrentUser;
use muster::http::form::{Form, NameForm};
use muster_tests::{Backend, TestApp, TestDb, spawn_app};
use reqwest::StatusCode;

async fn app_with_ada() -> Option<(TestDb, TestApp)> {
    let db = TestDb::new(Backend::Sqlite).await?;
    let app = spawn_app(db.config()).await;
    app.store
        .create_owner_and_workspace(
            &NewUser {
                email: Email::parse("ada@acme.test").unwrap(),
                display_name: "Ada".into(),
                password_hash: muster::auth::hash_password("correct-horse").unwrap(),
            },
            &NewWorkspace::parse("Acme", "acme", "ACM").unwrap(),
        )
        .await
        .unwrap();
    Some((db, app))
}

/// A token form posted with `cookie`, carrying `csrf`.
fn token_post(cookie: &str, csrf: &str) -> Request<Body> {
    Request::post("/w/acme/tokens")
        .header("cookie", cookie)
        .header("content-type", "application/x-www-form-urlencoded")
        .body(Body::from(format!("_csrf={csrf}&name=laptop")))
        .unwrap()
}

/// The form extractor runs after the caller's (a page's `WsMember`) and reads the caller that one
/// found: with the session ended in between, the form is still read, because the store is not asked
/// again. The same form on a request of its own is refused, so the store was not asked.
#[tokio::test]
async fn a_form_reads_the_session_its_request_already_looked_up() {
    let Some((_db, app)) = app_with_ada().await else {
        return;
    };
    let ada = app.sign_in("ada@acme.test", "correct-horse", "acme").await;
    let (mut parts, body) = token_post(&ada.cookie, &ada.csrf).into_parts();
    let caller = CurrentUser::from_request_parts(&mut parts, &app.state)
        .await
        .expect("the session is valid");
    assert_eq!(caller.user.display_name, "Ada");

    let secret = ada.cookie.trim_start_matches("muster_session=");
    app.store
        .delete_session(&muster::auth::hash_secret(secret))
        .await
        .unwrap();
    let Form(form) = Form::<NameForm>::from_request(Request::from_parts(parts, body), &app.state)
        .await
        .expect("the form reads the caller already looked up");
    assert_eq!(form.name, "laptop");

    let alone =
        Form::<NameForm>::from_request(token_post(&ada.cookie, &ada.csrf), &app.state).await;
    assert!(
        matches!(alone, Err(muster::http::Error::Unauthorized)),
        "on its own, the form looks the (ended) session up: {alone:?}"
    );
}

/// A field sent twice where the form takes one value is a 422 naming the field; the CSRF check comes
/// first, so a forged form gets its 403 whatever it holds.
#[tokio::test]
async fn a_field_that_does_not_fit_its_form_is_named() {
    let Some((_db, app)) = app_with_ada().await else {
        return;
    };
    let ada = app.sign_in("ada@acme.test", "correct-horse", "acme").await;
    let twice = ada
        .post(
            &app,
            "/w/acme/tokens",
            &[("_csrf", &ada.csrf), ("name", "a"), ("name", "b")],
        )
        .await;
    assert_eq!(twice.status(), StatusCode::UNPROCESSABLE_ENTITY);
    let body = twice.text().await.unwrap();
    assert!(body.contains("name"), "{body}");
    let forged = ada
        .post(&app, "/w/acme/tokens", &[("name", "a"), ("name", "b")])
        .await;
    assert_eq!(forged.status(), StatusCode::FORBIDDEN);
}
