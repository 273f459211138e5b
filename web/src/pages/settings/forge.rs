//! The Settings page's Forge section: connect the workspace's repository to GitHub, GitLab or
//! Gitea/Forgejo (a form posting to `…/settings/forge`), then the connection, its settings, a test of
//! what its token can do, and its removal.

use maud::{Markup, html};

use crate::partials::form::{Form, csrf};
use crate::views::{ForgeFormView, ForgeSectionView, SettingsView};

/// The API URL's hint (its placeholder follows the chosen kind, `settings.js`).
const API_URL_HINT: &str = "The API root. Empty: https://api.github.com for GitHub, https://gitlab.com/api/v4 for GitLab; Gitea/Forgejo needs one, e.g. https://gitea.example/api/v1.";

/// The section (`#forge`).
pub(super) fn section(v: &SettingsView) -> Markup {
    let s = &v.forge;
    html! {
        section #forge.panel.forge aria-labelledby="forge-h" {
            h2 #forge-h { "Forge" }
            p.hint {
                "Muster opens pull requests (GitLab: merge requests) of agents' work on the project, follows their checks and reviews, "
                "and sends the agent back when CI fails or a reviewer asks for changes."
            }
            @if let Some(hook) = &s.webhook { (webhook(hook)) }
            @match &s.connection {
                Some(_) => (connected(v, s)),
                None => (connect_form(v, s)),
            }
        }
    }
}

fn webhook(hook: &crate::views::WebhookShownView) -> Markup {
    html! {
        div.alert.forge-webhook role="status" {
            p { strong { "Connected." } " Now add a webhook in " (hook.where_to) " with this URL and secret (shown this once):" }
            p { "URL: " code #forge-webhook-url { (hook.url) } }
            p { "Secret: " code #forge-webhook-secret { (hook.secret) } }
            p.hint { "Send pull request, check (workflow, pipeline, status) and review events, as JSON." }
        }
    }
}

/// The settings fields both forms share: draft on delivery, rounds, what a close does.
fn settings_fields(f: &Form<'_>, form: &ForgeFormView) -> Markup {
    html! {
        div.field.has-error[f.invalid("auto_open")] {
            label {
                input id=(f.id("auto_open")) type="checkbox" name="auto_open" value="true" checked[form.auto_open];
                " Open a draft pull request when an agent delivers"
            }
            (f.field_errors("auto_open"))
        }
        (f.field("Automatic rounds per pull request", "max_rounds",
            Some("How often (1 to 20) CI failures and reviews send the agent back before a person must step in."),
            html! {
                input id=(f.id("max_rounds")) name="max_rounds" type="number" min="1" max="20" value=(form.max_rounds)
                    aria-invalid=[f.invalid("max_rounds").then_some("true")];
            }))
        (f.field("When closed unmerged", "on_close", None, f.select("on_close", &form.on_close)))
    }
}

/// The API URL's placeholder for a kind: the public service's API root, or an example.
fn api_url_example(kind: &str) -> &'static str {
    match kind {
        "gitlab" => "https://gitlab.com/api/v4",
        "gitea" => "https://gitea.example/api/v1",
        _ => "https://api.github.com",
    }
}

fn connect_form(v: &SettingsView, s: &ForgeSectionView) -> Markup {
    let f = Form::new("forge", &s.errors);
    let chosen = s
        .form
        .kind
        .iter()
        .find(|o| o.selected)
        .map(|o| o.value.clone())
        .unwrap_or_default();
    html! {
        p.muted #forge-none { "Not connected." }
        form method="post" action=(s.connect_url) {
            (csrf(&v.nav.csrf))
            (f.form_errors())
            (f.field("Kind", "kind", None, html! {
                select id=(f.id("kind")) name="kind" aria-invalid=[f.invalid("kind").then_some("true")] {
                    @for o in &s.form.kind {
                        option value=(o.value) selected[o.selected] data-api-url=(api_url_example(&o.value)) { (o.label) }
                    }
                }
            }))
            (f.field("API URL", "api_url", Some(API_URL_HINT), html! {
                input id=(f.id("api_url")) name="api_url" type="url" value=(s.form.api_url)
                    placeholder=(api_url_example(&chosen)) aria-invalid=[f.invalid("api_url").then_some("true")];
            }))
            (f.field("Project", "repo", Some("owner/name (GitLab: group/subgroup/name)."), html! {
                input id=(f.id("repo")) name="repo" type="text" value=(s.form.repo) placeholder="acme/app"
                    required aria-invalid=[f.invalid("repo").then_some("true")];
            }))
            (f.field("Token", "token",
                Some("May push branches, open pull requests, read checks and comment. Stored sealed, never shown again, never given to an agent."),
                html! {
                    input id=(f.id("token")) name="token" type="password" autocomplete="off" required
                        aria-invalid=[f.invalid("token").then_some("true")];
                }))
            (f.field("Webhook secret", "webhook_secret",
                Some("Optional, at least 16 characters; empty: Muster makes one."),
                html! {
                    input id=(f.id("webhook_secret")) name="webhook_secret" type="password" autocomplete="off"
                        aria-invalid=[f.invalid("webhook_secret").then_some("true")];
                }))
            (settings_fields(&f, &s.form))
            button.btn.btn-primary type="submit" { "Connect" }
        }
    }
}

fn connected(v: &SettingsView, s: &ForgeSectionView) -> Markup {
    let Some(c) = &s.connection else {
        return html! {};
    };
    let f = Form::new("forge", &s.errors);
    html! {
        dl.props.forge-connection #forge-connection {
            dt { "Forge" } dd #forge-kind { (c.kind_label) }
            dt { "API URL" } dd { code { (c.api_url) } }
            dt { "Project" } dd #forge-repo { code { (c.repo) } }
            dt { "Webhook" } dd { code #forge-webhook-path { (c.webhook_path) } }
        }
        @if s.saved { p.notice role="status" { "Saved." } }
        form method="post" action=(c.update_url) {
            (csrf(&v.nav.csrf))
            (f.form_errors())
            (settings_fields(&f, &s.form))
            button.btn.btn-primary type="submit" { "Save forge settings" }
        }
        div.forge-actions {
            form.inline-form method="post" action=(c.test_url) {
                (csrf(&v.nav.csrf))
                button.btn type="submit" { "Test connection" }
            }
            form.inline-form method="post" action=(c.remove_url)
                data-confirm="Remove the forge connection? Its pull requests stay on the forge; Muster stops following them." {
                (csrf(&v.nav.csrf))
                button.btn.btn-danger-ghost type="submit" { "Remove" }
            }
        }
        (f.field_errors("token"))
        @if let Some(a) = &s.access {
            div #forge-access {
                p { "The token can:" }
                ul.forge-access {
                    @for (what, can) in &a.abilities {
                        li class=(if *can { "can" } else { "cannot" }) { (what) @if !*can { " — not allowed" } }
                    }
                }
                @for n in &a.notes { p.hint { (n) } }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::pages::settings;
    use crate::views::{ForgeAccessView, ForgeConnectionView, Nav, SettingsView, WebhookShownView};

    #[test]
    fn the_webhook_shows_once_and_the_test_lists_what_the_token_cannot_do() {
        let mut v = SettingsView {
            nav: Nav {
                csrf: "tok".into(),
                workspace_slug: "acme".into(),
                ..Default::default()
            },
            ..Default::default()
        };
        v.forge.connection = Some(ForgeConnectionView {
            kind_label: "GitLab".into(),
            api_url: "https://gitlab.com/api/v4".into(),
            repo: "acme/app".into(),
            webhook_path: "/hooks/gitlab/c1".into(),
            update_url: "/w/acme/settings/forge/c1".into(),
            test_url: "/w/acme/settings/forge/c1/test".into(),
            remove_url: "/w/acme/settings/forge/c1/remove".into(),
        });
        let html = settings(&v).into_string();
        assert!(!html.contains("forge-webhook-secret"), "not shown again");
        assert!(!html.contains(r#"name="token""#), "no connect form");
        v.forge.webhook = Some(WebhookShownView {
            url: "https://muster.example/hooks/gitlab/c1".into(),
            secret: "whs_s3cret".into(),
            where_to: "the project's Settings → Webhooks".into(),
        });
        v.forge.access = Some(ForgeAccessView {
            abilities: vec![("push branches".into(), true), ("comment".into(), false)],
            notes: vec!["The token expires in 3 days.".into()],
        });
        let html = settings(&v).into_string();
        assert!(
            html.contains(
                r#"<code id="forge-webhook-url">https://muster.example/hooks/gitlab/c1</code>"#
            ),
            "{html}"
        );
        assert!(html.contains(r#"<code id="forge-webhook-secret">whs_s3cret</code>"#));
        assert!(html.contains("the project's Settings → Webhooks"));
        assert!(
            html.contains(r#"<li class="can">push branches</li>"#),
            "{html}"
        );
        assert!(
            html.contains(r#"<li class="cannot">comment — not allowed</li>"#),
            "{html}"
        );
        assert!(html.contains("The token expires in 3 days."));
    }
}
