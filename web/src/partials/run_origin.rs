//! The run page's line under its header: what started the run ("Triggered by Ada's comment") and the
//! run it continues. Not part of the live-swapped header: neither changes while the run goes.

use maud::{Markup, html};

use crate::views::RunOriginView;

/// "Triggered by <trigger> · Continues run <short id>", each a link when it has one; nothing when the
/// trigger is unknown.
pub fn run_origin(v: &RunOriginView) -> Markup {
    html! {
        @if !v.trigger.is_empty() {
            p.run-origin {
                span.run-trigger {
                    "Triggered by "
                    @match &v.trigger_url {
                        Some(url) => a href=(url) { (v.trigger) },
                        None => strong { (v.trigger) },
                    }
                }
                @if let Some((short, url)) = &v.continues {
                    span.run-continues {
                        "Continues run " a href=(url) { code { (short) } }
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_trigger_and_the_continued_run_are_links() {
        let v = crate::samples::run_page().origin;
        assert_eq!(
            run_origin(&v).into_string(),
            r##"<p class="run-origin"><span class="run-trigger">Triggered by <a href="/w/acme/issues/MUS-24#comment-c1">Ada's comment</a></span><span class="run-continues">Continues run <a href="/w/acme/runs/7f1c2a9e-0000"><code>7f1c2a9e</code></a></span></p>"##
        );
        let plain = RunOriginView {
            trigger: "assignment".into(),
            ..RunOriginView::default()
        };
        assert_eq!(
            run_origin(&plain).into_string(),
            r#"<p class="run-origin"><span class="run-trigger">Triggered by <strong>assignment</strong></span></p>"#
        );
        assert_eq!(run_origin(&RunOriginView::default()).into_string(), "");
    }
}
