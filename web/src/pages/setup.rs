//! `GET /setup?token=…`: the one-time owner and workspace creation.

use maud::{Markup, html};

use crate::layout::page;
use crate::partials::form::Form;
use crate::views::SetupView;

/// The first-start form: POST `/setup` with `token`, `workspace_name`, `issue_prefix`, `name`, `email`
/// and `password`.
pub fn setup(v: &SetupView) -> Markup {
    let f = Form::new("setup", &v.errors);
    let body = html! {
        div.auth-card.auth-wide {
            div.auth-brand { span.brand-mark aria-hidden="true" {} span { "Muster" } }
            h1 { "Set up your workspace" }
            p.subtitle { "Create the workspace and its owner account. This link works once." }
            (f.form_errors())
            form.stack method="post" action="/setup" {
                input type="hidden" name="token" value=(v.token);
                fieldset {
                    legend { "Workspace" }
                    (f.field("Workspace name", "workspace_name", None,
                        f.required("workspace_name", "text", &v.workspace_name)))
                    (f.field("Issue prefix", "issue_prefix", Some("2–10 capital letters; issues are keyed like MUS-42. Leave empty to take it from the workspace name."),
                        f.input("issue_prefix", "text", &v.issue_prefix)))
                }
                fieldset {
                    legend { "Owner account" }
                    (f.field("Your name", "name", None, f.required("name", "text", &v.name)))
                    (f.field("Email", "email", None, f.required("email", "email", &v.email)))
                    (f.field("Password", "password", Some(&crate::pages::password_hint()),
                        f.required("password", "password", "")))
                }
                button.btn.btn-primary.btn-block type="submit" { "Create workspace" }
            }
        }
    };
    page("Set up", None, body)
}

/// What a setup link says once setup is done (the link was used, or an account was made another way):
/// the server is set up, so the way in is the login page.
pub fn setup_used() -> Markup {
    let body = html! {
        div.auth-card.setup-used {
            div.auth-brand { span.brand-mark aria-hidden="true" {} span { "Muster" } }
            h1 { "This setup link was already used — sign in" }
            p.subtitle { "Muster is set up: the workspace and its owner exist, and a setup link works only once. Sign in with the owner's email and password, or ask the owner to add you." }
            a.btn.btn-primary.btn-block href="/login" { "Go to sign in" }
        }
    };
    page("Setup link already used", None, body)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::samples::err;

    #[test]
    fn posts_every_setup_field_and_keeps_input_on_error() {
        let v = SetupView {
            token: "tok".into(),
            workspace_name: "Acme".into(),
            issue_prefix: "mu5".into(),
            name: "Ada".into(),
            email: "ada@acme.test".into(),
            errors: err("issue_prefix", "must be 2–10 capital letters"),
        };
        let html = setup(&v).into_string();
        assert!(html.contains(r#"method="post" action="/setup""#));
        assert!(html.contains(r#"name="token" value="tok""#));
        for (name, value) in [
            ("workspace_name", "Acme"),
            ("issue_prefix", "mu5"),
            ("name", "Ada"),
            ("email", "ada@acme.test"),
        ] {
            assert!(html.contains(&format!(r#"name="{name}" type="#)), "{name}");
            assert!(html.contains(&format!(r#"value="{value}""#)), "{value}");
        }
        assert!(html.contains(r#"name="password" type="password" value="""#));
        assert!(html.contains(r#"<div class="field-error" id="setup-issue_prefix-error"><p>must be 2–10 capital letters</p>"#));
        assert!(html.contains(r#"aria-invalid="true""#));
        assert!(html.contains("At least 12 characters."));
    }

    #[test]
    fn a_used_link_points_to_sign_in() {
        let html = setup_used().into_string();
        assert!(html.contains("This setup link was already used — sign in"));
        assert!(html.contains(r#"href="/login""#));
    }
}
