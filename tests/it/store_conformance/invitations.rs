//! Invitations: pending until the invited account accepts (which makes the membership), declines, or a
//! manager revokes; invisible and unusable once expired.

use std::sync::Arc;

use chrono::{TimeDelta, Utc};
use muster::domain::*;
use muster::store::Store;

use super::{assert_conflict, assert_not_found, fixture, store_cases, user};

store_cases!(invitation_lifecycle, invitations_expire_and_are_per_person);

fn invite(ws: &Workspace, who: &User, by: &User, role: Role, ttl: TimeDelta) -> NewInvitation {
    NewInvitation {
        workspace_id: ws.id,
        user_id: who.id,
        role,
        invited_by: by.id,
        expires_at: Utc::now() + ttl,
    }
}

async fn invitation_lifecycle(store: Arc<dyn Store>) {
    let f = fixture(&store, "alpha", "ALP").await;
    let ada = user(&store, "ada@elsewhere.test").await;
    let day = TimeDelta::days(1);

    let inv = store
        .create_invitation(&invite(&f.ws, &ada, &f.owner, Role::Admin, day))
        .await
        .unwrap();
    assert_eq!(
        (inv.workspace_id, &inv.user, inv.role),
        (f.ws.id, &ada, Role::Admin)
    );
    assert_eq!(
        (inv.workspace_name.as_str(), inv.workspace_slug.as_str()),
        ("Team", "alpha")
    );
    assert_eq!(
        (inv.invited_by, inv.invited_by_name.as_deref()),
        (Some(f.owner.id), Some("owner"))
    );
    assert!(inv.expires_at > Utc::now() && inv.created_at <= Utc::now());
    // Pending is not membership.
    assert_not_found(store.get_member(f.ws.id, ada.id).await);
    assert!(
        store
            .list_workspaces_for_user(ada.id)
            .await
            .unwrap()
            .is_empty()
    );
    let now = Utc::now();
    assert_eq!(
        store.list_invitations(f.ws.id, now).await.unwrap(),
        std::slice::from_ref(&inv)
    );
    assert_eq!(
        store.list_invitations_for_user(ada.id, now).await.unwrap(),
        std::slice::from_ref(&inv)
    );

    // Inviting again refreshes the one pending invitation (new role), it does not add a second.
    let again = store
        .create_invitation(&invite(&f.ws, &ada, &f.owner, Role::Member, day))
        .await
        .unwrap();
    assert_eq!((again.id, again.role), (inv.id, Role::Member));
    assert_eq!(store.list_invitations(f.ws.id, now).await.unwrap().len(), 1);

    // Only Ada accepts it; someone else's attempt finds nothing.
    assert_not_found(store.accept_invitation(inv.id, f.owner.id, now).await);
    assert_not_found(store.decline_invitation(inv.id, f.owner.id).await);
    let member = store
        .accept_invitation(inv.id, ada.id, Utc::now())
        .await
        .unwrap();
    assert_eq!((member.user.id, member.role), (ada.id, Role::Member));
    assert_eq!(store.get_member(f.ws.id, ada.id).await.unwrap(), member);
    assert!(
        store
            .list_invitations(f.ws.id, Utc::now())
            .await
            .unwrap()
            .is_empty()
    );
    assert_not_found(store.accept_invitation(inv.id, ada.id, Utc::now()).await);
    // A member is not invited again.
    assert_conflict(
        store
            .create_invitation(&invite(&f.ws, &ada, &f.owner, Role::Admin, day))
            .await,
        "member_pkey",
    );

    // Declined and revoked invitations are gone.
    let bob = user(&store, "bob@elsewhere.test").await;
    let declined = store
        .create_invitation(&invite(&f.ws, &bob, &f.owner, Role::Member, day))
        .await
        .unwrap();
    store.decline_invitation(declined.id, bob.id).await.unwrap();
    assert_not_found(store.decline_invitation(declined.id, bob.id).await);
    assert_not_found(
        store
            .accept_invitation(declined.id, bob.id, Utc::now())
            .await,
    );
    let revoked = store
        .create_invitation(&invite(&f.ws, &bob, &f.owner, Role::Member, day))
        .await
        .unwrap();
    let other = fixture(&store, "beta", "BET").await;
    assert_not_found(store.revoke_invitation(other.ws.id, revoked.id).await);
    store.revoke_invitation(f.ws.id, revoked.id).await.unwrap();
    assert_not_found(store.revoke_invitation(f.ws.id, revoked.id).await);
    assert_not_found(
        store
            .accept_invitation(revoked.id, bob.id, Utc::now())
            .await,
    );
    assert_not_found(store.get_member(f.ws.id, bob.id).await);
}

async fn invitations_expire_and_are_per_person(store: Arc<dyn Store>) {
    let f = fixture(&store, "alpha", "ALP").await;
    let g = fixture(&store, "beta", "BET").await;
    let ada = user(&store, "ada@elsewhere.test").await;
    let expired = store
        .create_invitation(&invite(
            &f.ws,
            &ada,
            &f.owner,
            Role::Member,
            TimeDelta::seconds(-1),
        ))
        .await
        .unwrap();
    let live = store
        .create_invitation(&invite(
            &g.ws,
            &ada,
            &g.owner,
            Role::Admin,
            TimeDelta::days(14),
        ))
        .await
        .unwrap();
    let now = Utc::now();
    assert_eq!(
        store.list_invitations_for_user(ada.id, now).await.unwrap(),
        std::slice::from_ref(&live)
    );
    assert!(
        store
            .list_invitations(f.ws.id, now)
            .await
            .unwrap()
            .is_empty()
    );
    assert_not_found(store.accept_invitation(expired.id, ada.id, now).await);
    assert_not_found(store.get_member(f.ws.id, ada.id).await);
    // Inviting again revives it with a new expiry.
    let revived = store
        .create_invitation(&invite(
            &f.ws,
            &ada,
            &f.owner,
            Role::Member,
            TimeDelta::days(1),
        ))
        .await
        .unwrap();
    assert_eq!(revived.id, expired.id);
    store
        .accept_invitation(revived.id, ada.id, Utc::now())
        .await
        .unwrap();
    // The other workspace's invitation is untouched.
    assert_eq!(
        store.list_invitations(g.ws.id, Utc::now()).await.unwrap(),
        [live]
    );
    assert_eq!(
        store
            .list_workspaces_for_user(ada.id)
            .await
            .unwrap()
            .iter()
            .map(|(w, r)| (w.slug.as_str().to_owned(), *r))
            .collect::<Vec<_>>(),
        [("alpha".to_owned(), Role::Member)]
    );
}
