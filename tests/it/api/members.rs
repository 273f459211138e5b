//! `/api/v1/members`: listing, adding (new accounts at once, existing ones by invitation), roles and
//! removal, with the rules that owners and admins manage members, only owners touch ownership, and one
//! owner always stays; and `/api/v1/invitations`.

use muster::domain::Role;
use serde_json::{Value, json};

use super::{Env, Person, api_cases, field};

api_cases!(
    members_list_and_add,
    member_add_validation,
    member_permissions,
    role_changes_and_last_owner,
    member_removal,
    invitation_routes,
);

fn role_of(list: &Value, email: &str) -> Option<String> {
    list.as_array()
        .unwrap()
        .iter()
        .find(|m| m["email"] == email)
        .map(|m| m["role"].as_str().unwrap().to_owned())
}

async fn roles(t: &Env) -> Value {
    t.member.api.get("/api/v1/members").await.expect(200)
}

fn member_path(p: &Person) -> String {
    format!("/api/v1/members/{}", p.id)
}

/// Everyone can list members; an admin adds a new account (which can then sign in) or an existing one.
async fn members_list_and_add(t: &Env) {
    let list = roles(t).await;
    assert_eq!(
        field(&list, "email"),
        ["owner@alpha.test", "admin@alpha.test", "member@alpha.test"]
    );
    assert_eq!(field(&list, "role"), ["owner", "admin", "member"]);
    assert_eq!(list[0]["user_id"], t.owner.id.to_string());
    assert_eq!(list[0]["name"], "owner");
    assert!(list[0]["joined_at"].is_string());

    let added = t
        .admin
        .api
        .post(
            "/api/v1/members",
            json!({"email": "  New.Person@Alpha.TEST ", "password": "long enough pw"}),
        )
        .await
        .expect(201);
    assert_eq!(
        added["email"], "new.person@alpha.test",
        "emails are trimmed and lower-cased"
    );
    assert_eq!(
        added["name"], "new.person",
        "the name defaults to the email's local part"
    );
    assert_eq!(added["role"], "member");
    assert!(
        t.login("new.person@alpha.test", "long enough pw")
            .await
            .is_some()
    );

    let named = t
        .owner
        .api
        .post(
            "/api/v1/members",
            json!({"email": "ada@alpha.test", "name": " Ada L ", "password": "123456789012", "role": "admin"}),
        )
        .await
        .expect(201);
    assert_eq!(
        (named["name"].as_str(), named["role"].as_str()),
        (Some("Ada L"), Some("admin"))
    );

    // Someone with an account elsewhere is invited (202), and joins only by accepting; their beta token
    // still names beta.
    let (_, beta) = t.other_workspace().await;
    let invited = t
        .admin
        .api
        .post("/api/v1/members", json!({"email": "owner@beta.test"}))
        .await
        .expect(202);
    assert_eq!(
        (invited["email"].as_str(), invited["role"].as_str()),
        (Some("owner@beta.test"), Some("member"))
    );
    assert_eq!(roles(t).await.as_array().unwrap().len(), 5);
    beta.api
        .post(
            &format!(
                "/api/v1/invitations/{}/accept",
                invited["id"].as_str().unwrap()
            ),
            json!({}),
        )
        .await
        .expect(200);
    let list = roles(t).await;
    assert_eq!(list.as_array().unwrap().len(), 6);
    assert_eq!(role_of(&list, "owner@beta.test").as_deref(), Some("member"));
    assert_eq!(
        beta.api.get("/api/v1/me").await.expect(200)["workspace"],
        "beta"
    );
}

/// The invitation routes: the invitee lists, declines or accepts their own; managers list and revoke
/// their workspace's; unknown or malformed ids are 404. (The attacks are in `security::invitations`.)
async fn invitation_routes(t: &Env) {
    let (_, beta) = t.other_workspace().await;
    let invite = || async {
        t.owner
            .api
            .post(
                "/api/v1/members",
                json!({"email": "owner@beta.test", "role": "admin"}),
            )
            .await
            .expect(202)["id"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    let id = invite().await;
    let mine = beta.api.get("/api/v1/invitations").await.expect(200);
    assert_eq!(field(&mine, "workspace"), ["alpha"]);
    assert_eq!(field(&mine, "invited_by"), ["owner"]);
    let pending = t
        .admin
        .api
        .get("/api/v1/members/invitations")
        .await
        .expect(200);
    assert_eq!(field(&pending, "id"), [id.as_str()]);
    beta.api
        .post(&format!("/api/v1/invitations/{id}/decline"), json!({}))
        .await
        .expect(204);
    for bad in ["not-a-uuid", &uuid::Uuid::now_v7().to_string()] {
        beta.api
            .post(&format!("/api/v1/invitations/{bad}/accept"), json!({}))
            .await
            .error(404, "resource");
        t.admin
            .api
            .delete(&format!("/api/v1/members/invitations/{bad}"))
            .await
            .error(404, "resource");
    }
    let id = invite().await;
    t.admin
        .api
        .delete(&format!("/api/v1/members/invitations/{id}"))
        .await
        .expect(204);
    let id = invite().await;
    let joined = beta
        .api
        .post(&format!("/api/v1/invitations/{id}/accept"), json!({}))
        .await
        .expect(200);
    assert_eq!(joined["role"], "admin");
    assert_eq!(
        role_of(&roles(t).await, "owner@beta.test").as_deref(),
        Some("admin")
    );
}

/// Bad member input: 422 per field, 409 on a duplicate email; nothing is added.
async fn member_add_validation(t: &Env) {
    let api = &t.admin.api;
    let cases: [(Value, u16, &str, &str); 8] = [
        (
            json!({"email": "x@alpha.test", "password": "short"}),
            422,
            "password",
            "must be at least 12 characters",
        ),
        (
            json!({"email": "x@alpha.test"}),
            422,
            "password",
            "must be at least 12 characters",
        ),
        (
            json!({"email": "", "password": "long enough!"}),
            422,
            "email",
            "must not be empty",
        ),
        (
            json!({"email": "not-an-email", "password": "long enough!"}),
            422,
            "email",
            "must look like name@example.com",
        ),
        (
            json!({"email": "x@alpha.test", "password": "long enough!", "role": "boss"}),
            422,
            "role",
            "unknown role \"boss\"; expected one of: owner, admin, member",
        ),
        (
            json!({"email": "x@alpha.test", "password": "long enough!", "name": "n".repeat(101)}),
            422,
            "name",
            "must be at most 100 characters",
        ),
        (
            json!({"email": "member@alpha.test", "password": "long enough!"}),
            409,
            "email",
            "is already a member",
        ),
        (
            json!({"email": "MEMBER@alpha.test", "role": "admin"}),
            409,
            "email",
            "is already a member",
        ),
    ];
    for (input, status, field, message) in cases {
        api.post("/api/v1/members", input)
            .await
            .error_contains(status, field, message);
    }
    let list = roles(t).await;
    assert_eq!(list.as_array().unwrap().len(), 3);
    assert_eq!(
        role_of(&list, "member@alpha.test").as_deref(),
        Some("member"),
        "the duplicate did not change the role"
    );
    assert!(
        t.login("x@alpha.test", "long enough!").await.is_none(),
        "no account was created"
    );
}

/// A plain member cannot add, remove or re-role anyone (403); an admin cannot grant ownership or touch
/// an owner (403). Refused requests change nothing.
async fn member_permissions(t: &Env) {
    let m = &t.member.api;
    m.post(
        "/api/v1/members",
        json!({"email": "x@alpha.test", "password": "long enough!"}),
    )
    .await
    .error_contains(403, "auth", "not allowed");
    m.patch(&member_path(&t.member), json!({"role": "admin"}))
        .await
        .error(403, "auth");
    m.patch(&member_path(&t.admin), json!({"role": "member"}))
        .await
        .error(403, "auth");
    m.delete(&member_path(&t.admin)).await.error(403, "auth");
    m.delete(&member_path(&t.member)).await.error(403, "auth");

    let a = &t.admin.api;
    a.post(
        "/api/v1/members",
        json!({"email": "x@alpha.test", "password": "long enough!", "role": "owner"}),
    )
    .await
    .error(403, "auth");
    a.patch(&member_path(&t.member), json!({"role": "owner"}))
        .await
        .error(403, "auth");
    a.patch(&member_path(&t.admin), json!({"role": "owner"}))
        .await
        .error(403, "auth");
    a.patch(&member_path(&t.owner), json!({"role": "admin"}))
        .await
        .error(403, "auth");
    a.patch(&member_path(&t.owner), json!({"role": "owner"}))
        .await
        .error(403, "auth");
    a.delete(&member_path(&t.owner)).await.error(403, "auth");

    let list = roles(t).await;
    assert_eq!(field(&list, "role"), ["owner", "admin", "member"]);
    assert!(t.login("x@alpha.test", "long enough!").await.is_none());

    // What an admin may do: promote and demote non-owners.
    let up = a
        .patch(&member_path(&t.member), json!({"role": "admin"}))
        .await
        .expect(200);
    assert_eq!(
        (up["email"].as_str(), up["role"].as_str()),
        (Some("member@alpha.test"), Some("admin"))
    );
    a.patch(&member_path(&t.member), json!({"role": "member"}))
        .await
        .expect(200);
}

/// Role changes: unknown roles are 422, unknown people 404; owners grant and give up ownership, but the
/// last owner cannot step down (409 on `role`).
async fn role_changes_and_last_owner(t: &Env) {
    let o = &t.owner.api;
    o.patch(&member_path(&t.member), json!({"role": "boss"}))
        .await
        .error_contains(
            422,
            "role",
            "unknown role \"boss\"; expected one of: owner, admin, member",
        );
    o.patch(
        &format!("/api/v1/members/{}", uuid::Uuid::now_v7()),
        json!({"role": "admin"}),
    )
    .await
    .error(404, "resource");
    o.patch("/api/v1/members/not-a-uuid", json!({"role": "admin"}))
        .await
        .error(404, "resource");
    o.patch(&member_path(&t.member), json!({}))
        .await
        .rejected(422, "missing field `role`");

    for role in ["admin", "member"] {
        o.patch(&member_path(&t.owner), json!({"role": role}))
            .await
            .error_contains(409, "role", "a workspace needs at least one owner");
    }
    assert_eq!(
        role_of(&roles(t).await, "owner@alpha.test").as_deref(),
        Some("owner")
    );

    // A second owner lets the first step down; then the second is the last.
    let promoted = o
        .patch(&member_path(&t.admin), json!({"role": "owner"}))
        .await
        .expect(200);
    assert_eq!(promoted["role"], "owner");
    assert_eq!(
        t.admin.api.get("/api/v1/me").await.expect(200)["role"],
        "owner"
    );
    let demoted = o
        .patch(&member_path(&t.owner), json!({"role": "admin"}))
        .await
        .expect(200);
    assert_eq!(demoted["role"], "admin");
    assert_eq!(
        t.owner.api.get("/api/v1/me").await.expect(200)["role"],
        "admin"
    );
    t.admin
        .api
        .patch(&member_path(&t.admin), json!({"role": "member"}))
        .await
        .error_contains(409, "role", "a workspace needs at least one owner");
    // The former owner, now an admin, cannot touch the new owner.
    o.patch(&member_path(&t.admin), json!({"role": "member"}))
        .await
        .error(403, "auth");
    let list = roles(t).await;
    assert_eq!(role_of(&list, "admin@alpha.test").as_deref(), Some("owner"));
    assert_eq!(role_of(&list, "owner@alpha.test").as_deref(), Some("admin"));
}

/// Removal: admins remove non-owners, owners remove owners, the last owner stays (409 on `role`), and a
/// removed person loses access.
async fn member_removal(t: &Env) {
    let extra = t.add_person("extra@alpha.test", Role::Member).await;
    t.admin.api.delete(&member_path(&extra)).await.expect(204);
    t.admin
        .api
        .delete(&member_path(&extra))
        .await
        .error(404, "resource");
    t.admin
        .api
        .delete("/api/v1/members/not-a-uuid")
        .await
        .error(404, "resource");
    extra.api.get("/api/v1/members").await.error(403, "auth");

    t.owner
        .api
        .delete(&member_path(&t.owner))
        .await
        .error_contains(409, "role", "a workspace needs at least one owner");
    let co = t.add_person("co@alpha.test", Role::Owner).await;
    t.admin
        .api
        .delete(&member_path(&co))
        .await
        .error(403, "auth");
    co.api.delete(&member_path(&t.owner)).await.expect(204);
    t.owner.api.get("/api/v1/me").await.error(403, "auth");
    co.api.delete(&member_path(&co)).await.error_contains(
        409,
        "role",
        "a workspace needs at least one owner",
    );

    let list = roles(t).await;
    assert_eq!(
        field(&list, "email"),
        ["admin@alpha.test", "member@alpha.test", "co@alpha.test"]
    );
    // The removed account still exists and can be invited back; it is a member again once it accepts.
    let back = co
        .api
        .post("/api/v1/members", json!({"email": "extra@alpha.test"}))
        .await
        .expect(202);
    assert_eq!(back["email"], "extra@alpha.test");
    let cookie = t.login("extra@alpha.test", super::PASSWORD).await.unwrap();
    let session = t.client(super::Auth::Session {
        csrf: Some(muster::auth::csrf_token(&cookie)),
        cookie,
    });
    let id = back["id"].as_str().unwrap();
    session
        .post(&format!("/api/v1/invitations/{id}/accept"), json!({}))
        .await
        .expect(200);
    assert_eq!(
        t.app
            .store
            .get_member(t.ws.id, extra.id)
            .await
            .unwrap()
            .role,
        Role::Member
    );
    extra.api.get("/api/v1/me").await.expect(200);
}
