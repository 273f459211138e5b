//! `GET /invitations`: the workspaces that invited the signed-in person. Joining needs their consent, so
//! each invitation has "Join" and "Decline"; nothing changes until they press one.

use maud::{Markup, html};

use crate::layout::page;
use crate::partials::form::csrf;
use crate::partials::widgets::Timestamp;
use crate::views::{InvitationRowView, InvitationsView};

/// The invitations page: POST `accept_url` to join, `decline_url` to decline (both with `_csrf`).
pub fn invitations(v: &InvitationsView) -> Markup {
    let body = html! {
        div.auth-card.invitations {
            div.auth-brand { span.brand-mark aria-hidden="true" {} span { "Muster" } }
            h1 { "Invitations" }
            @if v.invitations.is_empty() {
                p.empty-state { "No workspace is waiting for your answer, " (v.user_name) "." }
            } @else {
                p.hint { "You join a workspace only if you accept its invitation." }
                ul.invitation-list {
                    @for i in &v.invitations { (row(i, &v.csrf)) }
                }
            }
            @if let Some(home) = &v.home_url { p { a href=(home) { "Back to your workspace" } } }
            form method="post" action="/logout" {
                (csrf(&v.csrf))
                button.btn.btn-ghost type="submit" { "Log out" }
            }
        }
    };
    page("Invitations", None, body)
}

fn row(i: &InvitationRowView, token: &str) -> Markup {
    html! {
        li.invitation {
            div {
                strong { (i.workspace_name) }
                " as " span class="role" { (i.role) }
                @if let Some(by) = &i.invited_by { " — invited by " (by) }
                p.hint { "Expires " (Timestamp(i.expires_at)) }
            }
            div.form-actions {
                form.inline-form method="post" action=(i.accept_url) {
                    (csrf(token))
                    button.btn.btn-primary type="submit" { "Join " (i.workspace_name) }
                }
                form.inline-form method="post" action=(i.decline_url) {
                    (csrf(token))
                    button.btn.btn-ghost type="submit" { "Decline" }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_invitation_posts_accept_or_decline_with_the_csrf_token() {
        let v = InvitationsView {
            csrf: "csrf-1".into(),
            user_name: "Ada".into(),
            invitations: vec![InvitationRowView {
                workspace_name: "Beta <Team>".into(),
                role: "admin".into(),
                invited_by: Some("Bob".into()),
                expires_at: chrono::DateTime::UNIX_EPOCH,
                accept_url: "/invitations/1/accept".into(),
                decline_url: "/invitations/1/decline".into(),
            }],
            home_url: None,
        };
        let html = invitations(&v).into_string();
        assert!(html.contains(r#"<form class="inline-form" method="post" action="/invitations/1/accept"><input type="hidden" name="_csrf" value="csrf-1">"#), "{html}");
        assert!(html.contains(r#"action="/invitations/1/decline""#));
        assert!(html.contains("Join Beta &lt;Team&gt;") && html.contains("invited by Bob"));
        let none = invitations(&InvitationsView {
            user_name: "Ada".into(),
            ..Default::default()
        })
        .into_string();
        assert!(none.contains("No workspace is waiting for your answer, Ada."));
    }
}
