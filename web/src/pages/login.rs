//! `GET /login`.

use maud::{Markup, html};

use crate::layout::page;
use crate::partials::form::Form;
use crate::views::LoginView;

/// The sign-in form: POST `/login` with `email`, `password` and the hidden `next`.
pub fn login(v: &LoginView) -> Markup {
    let f = Form::new("login", &v.errors);
    let body = html! {
        div.auth-card {
            div.auth-brand { span.brand-mark aria-hidden="true" {} span { "Muster" } }
            h1 { "Log in" }
            (f.form_errors())
            form.stack method="post" action="/login" {
                input type="hidden" name="next" value=(v.next);
                (f.field("Email", "email", None, f.required("email", "email", &v.email)))
                (f.field("Password", "password", None, f.required("password", "password", "")))
                button.btn.btn-primary.btn-block type="submit" { "Log in" }
            }
        }
    };
    page("Log in", None, body)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::samples::err;

    #[test]
    fn posts_email_password_next_and_keeps_email() {
        let v = LoginView {
            email: "ada@acme.test".into(),
            next: "/w/acme".into(),
            errors: err("form", "Wrong email or password."),
        };
        let html = login(&v).into_string();
        assert!(html.contains(r#"<form class="stack" method="post" action="/login">"#));
        assert!(html.contains(r#"name="next" value="/w/acme""#));
        assert!(html.contains(r#"name="email" type="email" value="ada@acme.test""#));
        assert!(html.contains(r#"name="password" type="password" value="""#));
        assert!(html.contains("Wrong email or password."));
        assert!(
            !html.contains("_csrf"),
            "the server handles login CSRF itself"
        );
    }
}
