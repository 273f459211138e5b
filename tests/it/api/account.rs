//! `PUT /api/v1/account/password`: a person changes their own password; other sessions end.

use reqwest::Method;
use serde_json::json;

use super::{Auth, Env, PASSWORD, api_cases};

api_cases!(
    password_change_signs_out_other_sessions,
    password_change_validation_and_limits,
);

const NEW: &str = "a much longer secret";

/// The session that asks stays; the account's other session is signed out; the old password no longer
/// signs in and the new one does; API tokens keep working.
async fn password_change_signs_out_other_sessions(t: &Env) {
    let here = t.login(&t.member.email, PASSWORD).await.unwrap();
    let elsewhere = t.login(&t.member.email, PASSWORD).await.unwrap();
    let api = t.client(Auth::Session {
        csrf: Some(muster::auth::csrf_token(&here)),
        cookie: here,
    });
    let body =
        json!({"current_password": PASSWORD, "new_password": NEW, "new_password_again": NEW});
    api.json(Method::PUT, "/api/v1/account/password", &body)
        .await
        .expect(204);
    api.get("/api/v1/me").await.expect(200);
    t.client(Auth::Session {
        cookie: elsewhere,
        csrf: None,
    })
    .get("/api/v1/me")
    .await
    .expect(401);
    assert!(t.login(&t.member.email, PASSWORD).await.is_none());
    assert!(t.login(&t.member.email, NEW).await.is_some());
    t.member.api.get("/api/v1/me").await.expect(200);
    // Others' passwords are untouched.
    assert!(t.login(&t.admin.email, PASSWORD).await.is_some());
}

/// Every problem in one 422; wrong current passwords are limited like sign-ins (429 + Retry-After),
/// after which even the right one waits; a run's token may not change a person's password.
async fn password_change_validation_and_limits(t: &Env) {
    let api = &t.owner.api;
    let reply = api
        .json(
            Method::PUT,
            "/api/v1/account/password",
            &json!({"current_password": "wrong", "new_password": "short", "new_password_again": "other"}),
        )
        .await;
    reply.error_contains(422, "current_password", "is not your current password");
    reply.error_contains(422, "new_password", "must be at least 12 characters");
    reply.error_contains(422, "new_password_again", "does not match");
    api.json(
        Method::PUT,
        "/api/v1/account/password",
        &json!({"current_password": PASSWORD, "new_password": PASSWORD}),
    )
    .await
    .error_contains(422, "new_password", "must differ");
    let wrong = json!({"current_password": "guess", "new_password": NEW});
    let mut limited = None;
    for _ in 0..5 {
        let reply = api
            .json(Method::PUT, "/api/v1/account/password", &wrong)
            .await;
        if reply.status == 429 {
            limited = Some(reply);
            break;
        }
        reply.error(422, "current_password");
    }
    let limited = limited.expect("wrong current passwords are rate-limited");
    limited.error_contains(429, "current_password", "too many password attempts");
    let right = json!({"current_password": PASSWORD, "new_password": NEW});
    api.json(Method::PUT, "/api/v1/account/password", &right)
        .await
        .error(429, "current_password");
    // Signing in is limited by the same count now; the stored password is still the old one.
    let owner = t
        .app
        .store
        .get_user_by_email(&muster::domain::Email::parse(&t.owner.email).unwrap())
        .await
        .unwrap();
    assert!(
        muster::auth::verify_password(PASSWORD, &owner.password_hash),
        "nothing changed"
    );
    let form = format!(
        "email={}&password={}",
        super::form_encode(&t.owner.email),
        super::form_encode(PASSWORD)
    );
    let login = t
        .anon
        .send(
            Method::POST,
            "/login",
            Some(("application/x-www-form-urlencoded", form.into_bytes())),
        )
        .await;
    assert_eq!(login.status, 429, "{}", login.body);
}
