use super::*;
use crate::samples::{self, err, opts, user};
use crate::views::{NavItem, PendingInvitationView};

fn row(name: &str, email: &str, role: &str, is_self: bool) -> MemberRowView {
    MemberRowView {
        person: user(name, "#7c3aed"),
        email: email.into(),
        role: role.into(),
        role_url: format!("/w/acme/members/{email}/role"),
        remove_url: format!("/w/acme/members/{email}/remove"),
        is_self,
    }
}

fn view(can_manage: bool) -> MembersView {
    MembersView {
        nav: samples::nav(NavItem::Members),
        members: vec![
            row("Ada Lovelace", "ada@acme.test", "admin", true),
            row("Grace Hopper", "grace@acme.test", "member", false),
        ],
        invitations: vec![PendingInvitationView {
            email: "grace@elsewhere.test".into(),
            name: "Grace <H>".into(),
            role: "admin".into(),
            expires_at: chrono::DateTime::UNIX_EPOCH,
            revoke_url: "/w/acme/members/invitations/i1/revoke".into(),
        }],
        can_manage,
        email: "new@acme.test".into(),
        name: "Newbie".into(),
        role: opts(
            &[("owner", "Owner"), ("admin", "Admin"), ("member", "Member")],
            "member",
        ),
        errors: err("email", "is already a member"),
    }
}

#[test]
fn managers_change_roles_and_remove_others() {
    let html = members(&view(true)).into_string();
    assert!(html.contains(r#"<form class="inline-form" method="post" action="/w/acme/members/grace@acme.test/role"><input type="hidden" name="_csrf" value="csrf-123">"#));
    assert!(html.contains(r#"name="role"><option value="owner">Owner</option><option value="admin">Admin</option><option value="member" selected>Member</option>"#));
    assert!(html.contains(r#"action="/w/acme/members/grace@acme.test/remove""#));
    assert!(
        !html.contains("ada@acme.test/role") && !html.contains("ada@acme.test/remove"),
        "not on yourself"
    );
}

#[test]
fn add_form_posts_documented_fields_and_keeps_input() {
    let html = members(&view(true)).into_string();
    assert!(
        html.contains(
            r#"method="post" action="/w/acme/members"><input type="hidden" name="_csrf""#
        )
    );
    assert!(html.contains(r#"name="email" type="email" value="new@acme.test""#));
    assert!(html.contains(r#"name="name" type="text" value="Newbie""#));
    assert!(html.contains(r#"name="password" type="password" value="""#));
    assert!(html.contains(r#"id="member-role" name="role""#));
    assert!(html.contains("is already a member"));
}

#[test]
fn plain_members_only_read() {
    let html = members(&view(false)).into_string();
    assert!(
        !html.contains("/role\"") && !html.contains("/remove\"") && !html.contains("Add a member")
    );
    assert!(html.contains(r#"<span class="role role-member">member</span>"#));
    assert!(html.contains("grace@acme.test"));
}

#[test]
fn managers_see_pending_invitations_with_revoke() {
    let html = members(&view(true)).into_string();
    assert!(html.contains("Pending invitations"));
    assert!(html.contains("Grace &lt;H&gt;") && html.contains("grace@elsewhere.test"));
    assert!(html.contains(r#"<form method="post" action="/w/acme/members/invitations/i1/revoke"><input type="hidden" name="_csrf""#), "{html}");
    assert!(html.contains("is invited instead: it joins when that person accepts"));
    let plain = members(&view(false)).into_string();
    assert!(!plain.contains("Pending invitations") && !plain.contains("/revoke"));
}
