//! Workspaces, users and members.

use std::sync::Arc;

use muster::domain::*;
use muster::store::{Backend as StoreBackend, Store};

use super::{assert_conflict, assert_not_found, fixture, store_cases, user};

store_cases!(
    ping_and_backend,
    workspaces,
    users,
    members_and_the_last_owner,
    sessions_expire_and_end,
    a_new_password_ends_the_other_sessions,
    api_tokens,
    atomic_setup_and_new_members,
);

async fn ping_and_backend(store: Arc<dyn Store>) {
    store.ping().await.unwrap();
    assert!(matches!(
        store.backend(),
        StoreBackend::Sqlite | StoreBackend::Postgres
    ));
    // Migrating again is a no-op.
    store.migrate().await.unwrap();
}

async fn workspaces(store: Arc<dyn Store>) {
    let f = fixture(&store, "team-a", "mus").await;
    assert_eq!(f.ws.slug.as_str(), "team-a");
    assert_eq!(f.ws.issue_prefix.as_str(), "MUS");
    assert_eq!(f.ws.issue_counter, 0);
    assert_eq!(store.get_workspace(f.ws.id).await.unwrap(), f.ws);
    assert_eq!(
        store
            .get_workspace_by_slug(&Slug::parse("team-a").unwrap())
            .await
            .unwrap(),
        f.ws
    );
    assert_not_found(
        store
            .get_workspace_by_slug(&Slug::parse("nope").unwrap())
            .await,
    );
    assert_not_found(store.get_workspace(WorkspaceId::new()).await);

    let dup = store
        .create_workspace(
            &NewWorkspace::parse("Other", "team-a", "OTH").unwrap(),
            f.owner.id,
        )
        .await;
    assert_conflict(dup, "workspace_slug_key");
    let second = store
        .create_workspace(
            &NewWorkspace::parse("Second", "team-b", "SEC").unwrap(),
            f.owner.id,
        )
        .await
        .unwrap();
    let mine = store.list_workspaces_for_user(f.owner.id).await.unwrap();
    assert_eq!(
        mine,
        vec![(f.ws.clone(), Role::Owner), (second, Role::Owner)]
    );

    let with_repo = store
        .set_workspace_repo(f.ws.id, Some("/srv/repo"))
        .await
        .unwrap();
    assert_eq!(with_repo.repo_path.as_deref(), Some("/srv/repo"));
    let cleared = store.set_workspace_repo(f.ws.id, None).await.unwrap();
    assert_eq!(cleared.repo_path, None);
}

async fn users(store: Arc<dyn Store>) {
    assert_eq!(store.count_users().await.unwrap(), 0);
    let ada = user(&store, "ada@example.com").await;
    assert_eq!(store.count_users().await.unwrap(), 1);
    assert_eq!(store.get_user(ada.id).await.unwrap(), ada);
    assert_eq!(ada.password_hash, "$argon2id$fake");
    let by_email = store
        .get_user_by_email(&Email::parse("ADA@example.com").unwrap())
        .await
        .unwrap();
    assert_eq!(by_email.id, ada.id);
    assert_not_found(store.get_user(UserId::new()).await);
    let dup = store
        .create_user(&NewUser {
            email: Email::parse("ada@example.com").unwrap(),
            display_name: "Other Ada".into(),
            password_hash: "x".into(),
        })
        .await;
    assert_conflict(dup, "app_user_email_key");
}

async fn members_and_the_last_owner(store: Arc<dyn Store>) {
    let f = fixture(&store, "team", "MUS").await;
    let bob = user(&store, "bob@example.com").await;
    let cy = user(&store, "cy@example.com").await;
    let m = store
        .add_member(f.ws.id, bob.id, Role::Admin)
        .await
        .unwrap();
    assert_eq!((m.user.id, m.role), (bob.id, Role::Admin));
    store
        .add_member(f.ws.id, cy.id, Role::Member)
        .await
        .unwrap();
    assert_conflict(
        store.add_member(f.ws.id, cy.id, Role::Admin).await,
        "member_pkey",
    );
    assert_eq!(
        store.get_member(f.ws.id, cy.id).await.unwrap().role,
        Role::Member
    );

    let listed: Vec<_> = store
        .list_members(f.ws.id)
        .await
        .unwrap()
        .into_iter()
        .map(|m| (m.user.id, m.role))
        .collect();
    assert_eq!(
        listed,
        vec![
            (f.owner.id, Role::Owner),
            (bob.id, Role::Admin),
            (cy.id, Role::Member)
        ]
    );

    // The only owner cannot be demoted or removed...
    assert_conflict(
        store
            .set_member_role(f.ws.id, f.owner.id, Role::Admin)
            .await,
        "last_owner",
    );
    assert_conflict(store.remove_member(f.ws.id, f.owner.id).await, "last_owner");
    // ...until there is a second owner.
    assert_eq!(
        store
            .set_member_role(f.ws.id, bob.id, Role::Owner)
            .await
            .unwrap()
            .role,
        Role::Owner
    );
    assert_eq!(
        store
            .set_member_role(f.ws.id, f.owner.id, Role::Member)
            .await
            .unwrap()
            .role,
        Role::Member
    );
    store.remove_member(f.ws.id, cy.id).await.unwrap();
    assert_not_found(store.get_member(f.ws.id, cy.id).await);
    assert_not_found(store.remove_member(f.ws.id, cy.id).await);
    assert_not_found(store.set_member_role(f.ws.id, cy.id, Role::Admin).await);
    assert_eq!(store.list_members(f.ws.id).await.unwrap().len(), 2);
}

async fn sessions_expire_and_end(store: Arc<dyn Store>) {
    use chrono::{TimeDelta, Utc};
    let ada = user(&store, "ada@example.com").await;
    let now = Utc::now();
    let expires_at = now + TimeDelta::hours(1);
    let s = store
        .create_session(&NewSession {
            user_id: ada.id,
            token_hash: "h1".into(),
            expires_at,
        })
        .await
        .unwrap();
    assert_eq!(s.user_id, ada.id);
    let (found, who) = store.session_user("h1", now).await.unwrap();
    assert_eq!((found.id, who.id), (s.id, ada.id));
    assert_not_found(
        store
            .session_user("h1", expires_at + TimeDelta::seconds(1))
            .await,
    );
    assert_not_found(store.session_user("other", now).await);
    assert_conflict(
        store
            .create_session(&NewSession {
                user_id: ada.id,
                token_hash: "h1".into(),
                expires_at,
            })
            .await,
        "session_token_hash_key",
    );
    store.delete_session("h1").await.unwrap();
    assert_not_found(store.session_user("h1", now).await);
    store
        .delete_session("h1")
        .await
        .expect("ending an unknown session is fine");
}

async fn a_new_password_ends_the_other_sessions(store: Arc<dyn Store>) {
    use chrono::{TimeDelta, Utc};
    let ada = user(&store, "ada@example.com").await;
    let bob = user(&store, "bob@example.com").await;
    let now = Utc::now();
    for (who, hash) in [(&ada, "a1"), (&ada, "a2"), (&ada, "a3"), (&bob, "b1")] {
        store
            .create_session(&NewSession {
                user_id: who.id,
                token_hash: hash.into(),
                expires_at: now + TimeDelta::hours(1),
            })
            .await
            .unwrap();
    }
    let mut ended = store
        .change_password(ada.id, "$argon2id$new", Some("a2"))
        .await
        .unwrap();
    ended.sort();
    assert_eq!(ended, ["a1", "a3"]);
    assert_eq!(
        store.get_user(ada.id).await.unwrap().password_hash,
        "$argon2id$new"
    );
    assert_eq!(
        store.get_user(bob.id).await.unwrap().password_hash,
        "$argon2id$fake"
    );
    assert_not_found(store.session_user("a1", now).await);
    assert_not_found(store.session_user("a3", now).await);
    assert_eq!(store.session_user("a2", now).await.unwrap().1.id, ada.id);
    assert_eq!(store.session_user("b1", now).await.unwrap().1.id, bob.id);
    // Without a session to keep (an API token made the change), every session ends.
    assert_eq!(
        store
            .change_password(ada.id, "$argon2id$newer", None)
            .await
            .unwrap(),
        ["a2"]
    );
    assert_not_found(store.change_password(UserId::new(), "x", None).await);
}

async fn api_tokens(store: Arc<dyn Store>) {
    use chrono::{TimeDelta, Utc};
    let f = fixture(&store, "team", "MUS").await;
    let bob = user(&store, "bob@example.com").await;
    let new = |name: &str, hash: &str, user: UserId| NewApiToken {
        workspace_id: f.ws.id,
        user_id: user,
        name: name.into(),
        prefix: format!("mst_{name}"),
        token_hash: hash.into(),
        run_id: None,
    };
    let ci = store
        .create_api_token(&new("ci", "hash-ci", f.owner.id))
        .await
        .unwrap();
    assert_eq!(
        (ci.name.as_str(), ci.last_used_at, ci.revoked_at),
        ("ci", None, None)
    );
    let laptop = store
        .create_api_token(&new("laptop", "hash-laptop", f.owner.id))
        .await
        .unwrap();
    store
        .create_api_token(&new("bobs", "hash-bob", bob.id))
        .await
        .unwrap();
    assert_conflict(
        store.create_api_token(&new("dup", "hash-ci", bob.id)).await,
        "api_token_token_hash_key",
    );

    let now = Utc::now();
    let used = store.use_api_token("hash-ci", now).await.unwrap();
    assert_eq!(used.id, ci.id);
    let listed = store.list_api_tokens(f.ws.id, f.owner.id).await.unwrap();
    assert_eq!(
        listed.iter().map(|t| t.id).collect::<Vec<_>>(),
        vec![laptop.id, ci.id],
        "newest first, own only"
    );
    assert!(listed[1].last_used_at.is_some(), "use is recorded");
    assert_not_found(store.use_api_token("nope", now).await);

    // Only the owner revokes, once; a revoked token no longer authenticates but stays listed.
    assert_not_found(store.revoke_api_token(f.ws.id, bob.id, ci.id).await);
    let revoked = store
        .revoke_api_token(f.ws.id, f.owner.id, ci.id)
        .await
        .unwrap();
    assert_eq!(revoked, "hash-ci", "the revoked token's hash comes back");
    assert_not_found(store.revoke_api_token(f.ws.id, f.owner.id, ci.id).await);
    assert_not_found(
        store
            .use_api_token("hash-ci", now + TimeDelta::minutes(5))
            .await,
    );
    let listed = store.list_api_tokens(f.ws.id, f.owner.id).await.unwrap();
    assert!(
        listed
            .iter()
            .any(|t| t.id == ci.id && t.revoked_at.is_some())
    );
}

async fn atomic_setup_and_new_members(store: Arc<dyn Store>) {
    let new_user = |email: &str| NewUser {
        email: Email::parse(email).unwrap(),
        display_name: "Someone".into(),
        password_hash: "$argon2id$x".into(),
    };
    let (owner, ws) = store
        .create_owner_and_workspace(
            &new_user("ada@example.com"),
            &NewWorkspace::parse("Acme", "acme", "ACM").unwrap(),
        )
        .await
        .unwrap();
    assert_eq!(
        store.get_member(ws.id, owner.id).await.unwrap().role,
        Role::Owner
    );
    // A clash on the workspace rolls back the user too.
    let clash = store
        .create_owner_and_workspace(
            &new_user("bob@example.com"),
            &NewWorkspace::parse("Acme", "acme", "ACM").unwrap(),
        )
        .await;
    assert_conflict(clash, "workspace_slug_key");
    assert_not_found(
        store
            .get_user_by_email(&Email::parse("bob@example.com").unwrap())
            .await,
    );

    let cy = store
        .add_new_member(ws.id, &new_user("cy@example.com"), Role::Admin)
        .await
        .unwrap();
    assert_eq!(
        (cy.role, cy.user.email.as_str()),
        (Role::Admin, "cy@example.com")
    );
    assert_conflict(
        store
            .add_new_member(ws.id, &new_user("cy@example.com"), Role::Member)
            .await,
        "app_user_email_key",
    );
    // A bad workspace rolls back the new user.
    let orphan = store
        .add_new_member(
            WorkspaceId::new(),
            &new_user("dee@example.com"),
            Role::Member,
        )
        .await;
    assert_conflict(orphan, "foreign_key");
    assert_not_found(
        store
            .get_user_by_email(&Email::parse("dee@example.com").unwrap())
            .await,
    );
    assert_eq!(store.count_users().await.unwrap(), 2);
}
