//! Issue 11, "Admins can add any existing account by email": an existing account now joins a workspace
//! only with its consent. Adding its email creates a pending invitation that grants nothing; only the
//! invited person accepts or declines it; admins list and revoke it; it expires. A new account with an
//! initial password is still created at once.
//!
//! Real server, real HTTP, both backends.

use chrono::{TimeDelta, Utc};
use muster::domain::{NewInvitation, Role};
use serde_json::{Value, json};

use crate::api::{Api, Auth, Env, PASSWORD, Person, api_cases, field, page_client, post_form};

api_cases!(
    an_existing_account_joins_only_by_accepting,
    invitations_are_declined_revoked_and_expire,
    invitations_on_the_pages,
);

/// The invitee's browser session, as an API client (CSRF header included).
async fn session(t: &Env, email: &str) -> (Api, String) {
    let cookie = t.login(email, PASSWORD).await.expect("signs in");
    let csrf = muster::auth::csrf_token(&cookie);
    let api = t.client(Auth::Session {
        cookie: cookie.clone(),
        csrf: Some(csrf),
    });
    (api, cookie)
}

/// What the session sees of workspace `slug` through `/api/v1/me`.
async fn me_in(t: &Env, cookie: &str, slug: &str) -> reqwest::StatusCode {
    reqwest::Client::new()
        .get(t.app.url("/api/v1/me"))
        .header(reqwest::header::COOKIE, format!("muster_session={cookie}"))
        .header("x-muster-workspace", slug)
        .send()
        .await
        .unwrap()
        .status()
}

fn emails(list: &Value) -> Vec<String> {
    field(list, "email")
}

/// The attack: an admin adds the owner of another workspace by email. Now that is an invitation (202):
/// no membership, no workspace in their list, the board is 404 to them, until they accept. Nobody else
/// can accept or decline it for them.
async fn an_existing_account_joins_only_by_accepting(t: &Env) {
    let (_, beta) = t.other_workspace().await;
    let reply = t
        .admin
        .api
        .post(
            "/api/v1/members",
            json!({"email": "Owner@Beta.test", "role": "admin", "password": "ignored-anyway"}),
        )
        .await;
    let invitation = reply.expect(202);
    assert_eq!(
        (
            invitation["workspace"].as_str(),
            invitation["email"].as_str(),
            invitation["role"].as_str(),
            invitation["invited_by"].as_str()
        ),
        (
            Some("alpha"),
            Some("owner@beta.test"),
            Some("admin"),
            Some("admin")
        )
    );
    let expires: chrono::DateTime<Utc> =
        invitation["expires_at"].as_str().unwrap().parse().unwrap();
    let ttl = expires - Utc::now();
    assert!(
        ttl > TimeDelta::days(13) && ttl <= TimeDelta::days(14),
        "{ttl}"
    );
    let id = invitation["id"].as_str().unwrap().to_owned();

    // Nothing granted yet.
    let members = t.owner.api.get("/api/v1/members").await.expect(200);
    assert!(!emails(&members).contains(&"owner@beta.test".to_owned()));
    assert!(matches!(
        t.app.store.get_member(t.ws.id, beta.id).await,
        Err(muster::store::Error::NotFound)
    ));
    let (beta_session, beta_cookie) = session(t, "owner@beta.test").await;
    assert_eq!(me_in(t, &beta_cookie, "alpha").await, 404);
    assert_eq!(me_in(t, &beta_cookie, "beta").await, 200);
    let board = reqwest::Client::new()
        .get(t.app.url("/w/alpha"))
        .header(
            reqwest::header::COOKIE,
            format!("muster_session={beta_cookie}"),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(board.status(), 404);

    // The invitee sees it (by token or session); the managers see it; a member does not.
    let mine = beta.api.get("/api/v1/invitations").await.expect(200);
    assert_eq!(field(&mine, "id"), [id.as_str()]);
    assert_eq!(mine[0]["workspace_name"], "Alpha Team");
    assert_eq!(
        beta_session.get("/api/v1/invitations").await.expect(200),
        mine
    );
    let pending = t
        .owner
        .api
        .get("/api/v1/members/invitations")
        .await
        .expect(200);
    assert_eq!(emails(&pending), ["owner@beta.test"]);
    t.member
        .api
        .get("/api/v1/members/invitations")
        .await
        .error(403, "auth");
    assert!(none_listed(&t.member.api, "/api/v1/invitations").await);

    // Another person cannot accept or decline it, whatever their role.
    for other in [&t.owner, &t.admin, &t.member] {
        cannot_accept(&other.api, &id).await;
        other
            .api
            .post(&format!("/api/v1/invitations/{id}/decline"), json!({}))
            .await
            .error(404, "resource");
    }
    // A session write without the CSRF header is refused.
    let cookie_only = t.client(Auth::Session {
        cookie: beta_cookie.clone(),
        csrf: None,
    });
    cookie_only
        .post(&format!("/api/v1/invitations/{id}/accept"), json!({}))
        .await
        .error(403, "csrf");
    assert_eq!(me_in(t, &beta_cookie, "alpha").await, 404);

    // The invitee accepts: now, and only now, they are an admin of alpha.
    let joined = beta_session
        .post(&format!("/api/v1/invitations/{id}/accept"), json!({}))
        .await
        .expect(200);
    assert_eq!(
        (joined["workspace"].as_str(), joined["role"].as_str()),
        (Some("alpha"), Some("admin"))
    );
    assert_eq!(me_in(t, &beta_cookie, "alpha").await, 200);
    let members = t.owner.api.get("/api/v1/members").await.expect(200);
    assert!(emails(&members).contains(&"owner@beta.test".to_owned()));
    assert!(none_listed(&beta.api, "/api/v1/invitations").await);
    cannot_accept(&beta.api, &id).await;
    // Their beta token still names beta.
    assert_eq!(
        beta.api.get("/api/v1/me").await.expect(200)["workspace"],
        "beta"
    );
}

/// Whether `api` lists nothing at `path`.
async fn none_listed(api: &Api, path: &str) -> bool {
    let list = api.get(path).await.expect(200);
    list.as_array().unwrap().is_empty()
}

/// `api` cannot accept the invitation `id` (any more): 404.
async fn cannot_accept(api: &Api, id: &str) {
    let path = format!("/api/v1/invitations/{id}/accept");
    api.post(&path, json!({})).await.error(404, "resource");
}

/// An existing account that belongs to no workspace (it was added to alpha, then removed).
async fn account(t: &Env, email: &str) -> Person {
    let other = t.add_person(email, Role::Member).await;
    t.app.store.remove_member(t.ws.id, other.id).await.unwrap();
    other
}

/// Decline, revoke, expiry, and the rules around them: a member cannot invite or revoke, only owners
/// invite owners, a member is not invited twice, and a new account is still added at once.
async fn invitations_are_declined_revoked_and_expire(t: &Env) {
    let carol = account(t, "carol@gamma.test").await;
    let (carol_session, carol_cookie) = session(t, "carol@gamma.test").await;
    let invite = |role: &str| {
        let body = json!({"email": "carol@gamma.test", "role": role});
        async move { t.admin.api.post("/api/v1/members", body).await }
    };

    // Decline.
    let id = invite("member").await.expect(202)["id"]
        .as_str()
        .unwrap()
        .to_owned();
    carol_session
        .post(&format!("/api/v1/invitations/{id}/decline"), json!({}))
        .await
        .expect(204);
    assert_eq!(me_in(t, &carol_cookie, "alpha").await, 404);
    assert!(none_listed(&t.admin.api, "/api/v1/members/invitations").await);
    cannot_accept(&carol_session, &id).await;

    // Revoke: by a manager of this workspace only.
    let id = invite("member").await.expect(202)["id"]
        .as_str()
        .unwrap()
        .to_owned();
    t.member
        .api
        .delete(&format!("/api/v1/members/invitations/{id}"))
        .await
        .error(403, "auth");
    let (_, beta_owner) = t.other_workspace().await;
    beta_owner
        .api
        .delete(&format!("/api/v1/members/invitations/{id}"))
        .await
        .error(404, "resource");
    t.owner
        .api
        .delete(&format!("/api/v1/members/invitations/{id}"))
        .await
        .expect(204);
    assert!(none_listed(&carol_session, "/api/v1/invitations").await);
    cannot_accept(&carol_session, &id).await;
    assert_eq!(me_in(t, &carol_cookie, "alpha").await, 404);

    // Expired: not listed, not acceptable.
    let stale = t
        .app
        .store
        .create_invitation(&NewInvitation {
            workspace_id: t.ws.id,
            user_id: carol.id,
            role: Role::Admin,
            invited_by: t.owner.id,
            expires_at: Utc::now() - TimeDelta::minutes(1),
        })
        .await
        .unwrap();
    assert!(none_listed(&carol_session, "/api/v1/invitations").await);
    cannot_accept(&carol_session, &stale.id.to_string()).await;
    assert_eq!(me_in(t, &carol_cookie, "alpha").await, 404);

    // Who may invite whom.
    t.member
        .api
        .post("/api/v1/members", json!({"email": "carol@gamma.test"}))
        .await
        .error(403, "auth");
    invite("owner").await.error(403, "auth");
    t.admin
        .api
        .post("/api/v1/members", json!({"email": "member@alpha.test"}))
        .await
        .error_contains(409, "email", "is already a member");
    // A new account is still created at once, with its password.
    let added = t
        .admin
        .api
        .post(
            "/api/v1/members",
            json!({"email": "new@alpha.test", "password": "long enough pw"}),
        )
        .await
        .expect(201);
    assert_eq!(added["role"], "member");
    assert!(t.login("new@alpha.test", "long enough pw").await.is_some());
}

/// The pages: the admin's members form invites, the members page lists the pending invitation with a
/// revoke button; the invitee's inbox has a banner and `/invitations` joins with one click; someone
/// with no workspace lands on `/invitations`.
async fn invitations_on_the_pages(t: &Env) {
    let dave = account(t, "dave@delta.test").await;
    let admin_cookie = t.login(&t.admin.email, PASSWORD).await.unwrap();
    let admin = page_client(&admin_cookie);
    let csrf = muster::auth::csrf_token(&admin_cookie);
    let added = post_form(
        &admin,
        &t.app,
        "/w/alpha/members",
        format!("_csrf={csrf}&email=dave%40delta.test&name=&password=&role=admin"),
    )
    .await;
    assert_eq!(added.status(), 303);
    let members_page = admin
        .get(t.app.url("/w/alpha/members"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(members_page.contains("Pending invitations"));
    assert!(members_page.contains("dave@delta.test"));
    assert!(members_page.contains("/w/alpha/members/invitations/"));
    assert!(matches!(
        t.app.store.get_member(t.ws.id, dave.id).await,
        Err(muster::store::Error::NotFound)
    ));

    // Dave has no workspace now: home sends him to his invitations.
    let dave_cookie = t.login("dave@delta.test", PASSWORD).await.unwrap();
    let dave_client = page_client(&dave_cookie);
    let home = dave_client.get(t.app.url("/")).send().await.unwrap();
    assert_eq!(home.status(), 303);
    assert_eq!(home.headers()["location"], "/invitations");
    let page = dave_client
        .get(t.app.url("/invitations"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(page.contains("Join Alpha Team"), "{page}");
    let id = t
        .app
        .store
        .list_invitations_for_user(dave.id, Utc::now())
        .await
        .unwrap()[0]
        .id;
    // A form post without the session's CSRF token is refused.
    let forged = post_form(
        &dave_client,
        &t.app,
        &format!("/invitations/{id}/accept"),
        String::new(),
    )
    .await;
    assert_eq!(forged.status(), 403);
    let dave_csrf = muster::auth::csrf_token(&dave_cookie);
    let joined = post_form(
        &dave_client,
        &t.app,
        &format!("/invitations/{id}/accept"),
        format!("_csrf={dave_csrf}"),
    )
    .await;
    assert_eq!(joined.status(), 303);
    assert_eq!(joined.headers()["location"], "/w/alpha");
    assert_eq!(
        t.app.store.get_member(t.ws.id, dave.id).await.unwrap().role,
        Role::Admin
    );

    // The member's inbox shows a banner when another workspace invites them.
    let (_, beta_owner) = t.other_workspace().await;
    beta_owner
        .api
        .post("/api/v1/members", json!({"email": "member@alpha.test"}))
        .await
        .expect(202);
    let member_cookie = t.login(&t.member.email, PASSWORD).await.unwrap();
    let inbox = page_client(&member_cookie)
        .get(t.app.url("/w/alpha/inbox"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(inbox.contains("A workspace invited you."), "{inbox}");
    assert!(inbox.contains(r#"href="/invitations""#));
    // Decline on the page.
    let id = t
        .app
        .store
        .list_invitations_for_user(t.member.id, Utc::now())
        .await
        .unwrap()[0]
        .id;
    let csrf = muster::auth::csrf_token(&member_cookie);
    let declined = post_form(
        &page_client(&member_cookie),
        &t.app,
        &format!("/invitations/{id}/decline"),
        format!("_csrf={csrf}"),
    )
    .await;
    assert_eq!(declined.status(), 303);
    assert!(
        t.app
            .store
            .list_invitations_for_user(t.member.id, Utc::now())
            .await
            .unwrap()
            .is_empty()
    );
}
