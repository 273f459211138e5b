//! Full-page errors (404, 403, expired setup link…).

use maud::{Markup, html};

use crate::layout::page;
use crate::views::{ErrorPageView, Nav};

/// An error page, framed with the top bar when the reader is signed in.
pub fn error(v: &ErrorPageView, nav: Option<&Nav>) -> Markup {
    let body = html! {
        div.error-page {
            p.error-code { (v.status) }
            h1 { (v.title) }
            p.subtitle { (v.message) }
            @if !v.back_url.is_empty() {
                a.btn.btn-primary href=(v.back_url) { "Go back" }
            }
        }
    };
    page(&v.title, nav, body)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::samples::nav;
    use crate::views::NavItem;

    #[test]
    fn shows_status_title_message_and_back_link() {
        let v = ErrorPageView {
            status: 404,
            title: "Issue not found".into(),
            message: "No issue <MUS-9> here.".into(),
            back_url: "/w/acme".into(),
        };
        let signed_in = error(&v, Some(&nav(NavItem::Board))).into_string();
        assert!(signed_in.contains(r#"<p class="error-code">404</p>"#));
        assert!(signed_in.contains("<h1>Issue not found</h1>"));
        assert!(signed_in.contains("No issue &lt;MUS-9&gt; here."));
        assert!(signed_in.contains(r#"href="/w/acme">Go back"#));
        assert!(signed_in.contains("/logout"));
        assert!(!error(&v, None).into_string().contains("/logout"));
    }
}
