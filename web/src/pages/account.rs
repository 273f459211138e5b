//! `GET /w/{slug}/account`: the signed-in person's own account, where they change their password.

use maud::{Markup, html};

use crate::layout::{page, page_head};
use crate::partials::form::{Form, csrf};
use crate::views::{FormErrors, Nav};

/// The account page.
#[derive(Debug, Clone, Default)]
pub struct AccountView {
    pub nav: Nav,
    /// Where the password form posts (`/w/{slug}/account/password`).
    pub password_action: String,
    /// The password form's messages, by field (`current_password`, `new_password`, `new_password_again`).
    pub errors: FormErrors,
    /// Set right after a change: the page says it worked and that other sessions were signed out.
    pub changed: bool,
}

/// The account page: who is signed in, and the password form (current password, the new one twice).
/// Password inputs never echo what was typed, even after an error.
pub fn account(v: &AccountView) -> Markup {
    let f = Form::new("account", &v.errors);
    let body = html! {
        (page_head("Your account", Some("Signed in as the person below, in every workspace you belong to."), html! {}))
        section.panel.account-who {
            dl.account-facts {
                dt { "Name" } dd { (v.nav.user_name) }
                dt { "Email" } dd { (v.nav.user_email) }
            }
        }
        section.panel #change-password {
            h2 { "Change your password" }
            @if v.changed {
                p.alert.alert-ok role="status" { "Your password was changed. Your other sessions were signed out; this one stays signed in." }
            }
            (f.form_errors())
            form.stack method="post" action=(v.password_action) {
                (csrf(&v.nav.csrf))
                // Lets password managers tie the new password to this account.
                input type="hidden" name="username" value=(v.nav.user_email) autocomplete="username";
                (f.field("Current password", "current_password", None, password(&f, "current_password", "current-password")))
                (f.field("New password", "new_password", Some(&super::password_hint()), password(&f, "new_password", "new-password")))
                (f.field("New password again", "new_password_again", None, password(&f, "new_password_again", "new-password")))
                p.hint { "Changing it signs you out everywhere else. API tokens keep working; revoke them on the API tokens page." }
                div.form-actions { button.btn.btn-primary type="submit" { "Change password" } }
            }
        }
    };
    page("Your account", Some(&v.nav), body)
}

fn password(f: &Form<'_>, name: &str, autocomplete: &str) -> Markup {
    let invalid = f.invalid(name);
    html! {
        input id=(f.id(name)) name=(name) type="password" value="" required autocomplete=(autocomplete)
            minlength=[(name != "current_password").then_some(crate::MIN_PASSWORD_CHARS)]
            aria-invalid=[invalid.then_some("true")]
            aria-describedby=[invalid.then(|| format!("{}-error", f.id(name)))];
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::samples;

    #[test]
    fn asks_for_the_current_password_and_the_new_one_twice() {
        let mut v = AccountView {
            nav: samples::nav(crate::views::NavItem::Account),
            password_action: "/w/acme/account/password".into(),
            ..Default::default()
        };
        v.errors.insert(
            "new_password".into(),
            vec!["must be at least 12 characters".into()],
        );
        let html = account(&v).into_string();
        assert!(html.contains(r#"method="post" action="/w/acme/account/password""#));
        assert!(html.contains(r#"name="current_password" type="password" value="" required autocomplete="current-password">"#), "{html}");
        assert!(html.contains(r#"name="new_password" type="password" value="" required autocomplete="new-password" minlength="12" aria-invalid="true" aria-describedby="account-new_password-error""#), "{html}");
        assert!(html.contains(r#"name="new_password_again""#));
        assert!(html.contains("At least 12 characters."));
        assert!(
            html.contains(
                r#"id="account-new_password-error"><p>must be at least 12 characters</p>"#
            )
        );
        assert!(!html.contains("were signed out"));
        v.changed = true;
        assert!(
            account(&v)
                .into_string()
                .contains("Your other sessions were signed out")
        );
    }
}
