//! `GET /w/{slug}/tokens`: the signed-in user's API tokens.

use maud::{Markup, html};

use crate::layout::{page, page_head, workspace_url};
use crate::partials::form::{Form, csrf};
use crate::partials::widgets::Timestamp;
use crate::views::{TokenRowView, TokensView};

/// The tokens page: a just-created secret (shown once, with a copy button), the create form (POST
/// `/w/{slug}/tokens`, field `name`) and the list with revoke buttons (POST `revoke_url`).
pub fn tokens(v: &TokensView) -> Markup {
    let f = Form::new("token", &v.errors);
    let body = html! {
        (page_head("API tokens", Some("For scripts and remote runners calling /api/v1. A token acts as you."), html! {}))
        @if let Some(secret) = &v.new_token { (new_token_box(secret)) }
        section.panel aria-labelledby="new-token-h" {
            h2 #new-token-h { "Create a token" }
            form.inline-create method="post" action={ (workspace_url(&v.nav)) "/tokens" } {
                (csrf(&v.nav.csrf))
                (f.form_errors())
                (f.field("Name", "name", Some("What will use it, e.g. “CI runner”."), f.required("name", "text", &v.name)))
                button.btn.btn-primary type="submit" { "Create token" }
            }
        }
        div.panel.table-panel {
            @if v.tokens.is_empty() {
                p.empty-state { "No tokens yet." }
            } @else {
                table.list {
                    thead { tr {
                        th scope="col" { "Name" } th scope="col" { "Token" } th scope="col" { "Created" }
                        th scope="col" { "Last used" } th scope="col" { "State" }
                        th scope="col" { span.visually-hidden { "Actions" } }
                    } }
                    tbody { @for t in &v.tokens { (token_row(t, &v.nav.csrf, "Programs using it stop working.")) } }
                }
            }
        }
    };
    page("API tokens", Some(&v.nav), body)
}

fn new_token_box(secret: &str) -> Markup {
    html! {
        section.token-once role="status" aria-labelledby="token-once-h" {
            h2 #token-once-h { "Your new token" }
            p.warning { strong { "Copy it now." } " It is shown only this once; Muster stores only a hash." }
            div.copy-box {
                label.visually-hidden for="new-token" { "New API token" }
                input.mono #new-token type="text" readonly value=(secret) spellcheck="false" autocomplete="off";
                button.btn.btn-primary type="button" data-copy="#new-token" { "Copy" }
            }
        }
    }
}

/// One token of a list (API tokens, runner tokens) with its revoke button; `consequence` says what a
/// revoke does.
pub(crate) fn token_row(t: &TokenRowView, token: &str, consequence: &str) -> Markup {
    html! {
        tr.revoked[t.revoked] data-token=(t.name) {
            td { (t.name) }
            td { code { (t.prefix) "…" } }
            td { (Timestamp(t.created_at)) }
            td {
                @match t.last_used_at {
                    Some(at) => (Timestamp(at)),
                    None => span.muted { "Never" },
                }
            }
            td {
                @if t.revoked { span.pill.pill-muted { "Revoked" } } @else { span.pill.pill-ok { "Active" } }
            }
            td.actions {
                @if !t.revoked {
                    form method="post" action=(t.revoke_url) data-confirm={ "Revoke token " (t.name) "? " (consequence) } {
                        (csrf(token))
                        button.btn.btn-small.btn-danger-ghost type="submit" { "Revoke" span.visually-hidden { " " (t.name) } }
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::samples::{at, err, nav};
    use crate::views::NavItem;

    fn row(name: &str, revoked: bool) -> TokenRowView {
        TokenRowView {
            name: name.into(),
            prefix: "mus_4f2a".into(),
            created_at: at(1, 8, 0),
            last_used_at: (!revoked).then(|| at(4, 12, 30)),
            revoked,
            revoke_url: format!("/w/acme/tokens/{name}/revoke"),
        }
    }

    #[test]
    fn new_token_is_shown_once_with_copy_button() {
        let v = TokensView {
            nav: nav(NavItem::Tokens),
            tokens: vec![row("ci", false)],
            new_token: Some("mus_4f2a_SECRET".into()),
            name: String::new(),
            errors: Default::default(),
        };
        let html = tokens(&v).into_string();
        assert!(html.contains(r#"id="new-token" type="text" readonly value="mus_4f2a_SECRET""#));
        assert!(html.contains(r##"data-copy="#new-token""##));
        assert!(html.contains("shown only this once"));
        let without = tokens(&TokensView {
            new_token: None,
            ..v
        })
        .into_string();
        assert!(!without.contains("SECRET") && !without.contains("new-token\""));
    }

    #[test]
    fn list_shows_state_and_revoke_only_for_active() {
        let v = TokensView {
            nav: nav(NavItem::Tokens),
            tokens: vec![row("ci", false), row("old", true)],
            new_token: None,
            name: "laptop".into(),
            errors: err("name", "already used"),
        };
        let html = tokens(&v).into_string();
        assert!(html.contains(r#"method="post" action="/w/acme/tokens""#));
        assert!(html.contains(r#"name="name" type="text" value="laptop""#));
        assert!(html.contains("already used"));
        assert!(html.contains("<code>mus_4f2a…</code>"));
        assert!(html.contains(r#"action="/w/acme/tokens/ci/revoke""#));
        assert!(!html.contains(r#"action="/w/acme/tokens/old/revoke""#));
        assert!(html.contains("Revoked") && html.contains("Active"));
        assert!(html.contains(r#"<time datetime="2025-03-04T12:30:00Z""#));
        assert_eq!(html.matches(r#"name="_csrf" value="csrf-123""#).count(), 3);
    }
}
