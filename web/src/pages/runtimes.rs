//! `GET /w/{slug}/runtimes`: which agent CLIs and local model runtimes this server's machine has, with
//! versions, what is wrong when one is unusable, how to install it, and a re-detect button.

use maud::{Markup, html};

use crate::layout::{page, page_head};
use crate::partials::form::csrf;
use crate::partials::widgets::Timestamp;
use crate::views::{RuntimeRowView, RuntimesView};

/// The runtimes page.
pub fn runtimes(v: &RuntimesView) -> Markup {
    let actions = html! {
        form method="post" action=(v.redetect_url) {
            (csrf(&v.nav.csrf))
            button.btn.btn-primary type="submit" { "Re-detect" }
        }
    };
    let body = html! {
        (page_head("Runtimes", Some("Agent CLIs found on the machine this server runs on."), actions))
        @if let Some(at) = v.detected_at {
            p.muted { "Detected " (Timestamp(at)) "." }
        }
        div.panel {
            table.runtimes {
                thead { tr { th { "Runtime" } th { "Status" } th { "Version" } th { "Path" } th { "What to do" } } }
                tbody {
                    @for r in &v.runtimes { (row(r)) }
                }
            }
        }
    };
    page("Runtimes", Some(&v.nav), body)
}

fn status_label(status: &str) -> (&'static str, &'static str) {
    match status {
        "found" => ("Installed", "runtime-ok"),
        "too_old" => ("Too old", "runtime-warn"),
        "not_installed" => ("Not installed", "runtime-missing"),
        _ => ("Broken", "runtime-bad"),
    }
}

fn row(r: &RuntimeRowView) -> Markup {
    let (label, class) = status_label(&r.status);
    html! {
        tr id={ "runtime-" (r.kind) } {
            td { strong { (r.label) } br; code.muted { (r.kind) } }
            td { span class={ "runtime-status " (class) } { (label) } }
            td { @if let Some(v) = &r.version { code { (v) } } @else { span.muted { "—" } } }
            td { @if let Some(p) = &r.path { code { (p) } } @else { span.muted { "—" } } }
            td {
                @if let Some(reason) = &r.reason { p { (reason) } }
                @if let Some(hint) = &r.install_hint { pre.install-hint { code { (hint) } } }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::views::{Nav, NavItem};

    #[test]
    fn shows_each_runtime_with_reason_hint_and_a_csrf_protected_redetect() {
        let v = RuntimesView {
            nav: Nav {
                csrf: "tok".into(),
                workspace_slug: "acme".into(),
                active: NavItem::Runtimes,
                ..Default::default()
            },
            runtimes: vec![
                RuntimeRowView {
                    kind: "claude".into(),
                    label: "Claude Code".into(),
                    status: "found".into(),
                    path: Some("/usr/bin/claude".into()),
                    version: Some("2.1.197".into()),
                    reason: None,
                    install_hint: None,
                },
                RuntimeRowView {
                    kind: "codex".into(),
                    label: "Codex".into(),
                    status: "not_installed".into(),
                    path: None,
                    version: None,
                    reason: Some("codex is not on PATH <anywhere>".into()),
                    install_hint: Some("npm install -g @openai/codex@0.171.0".into()),
                },
            ],
            detected_at: None,
            redetect_url: "/w/acme/runtimes/detect".into(),
        };
        let html = runtimes(&v).into_string();
        assert!(html.contains(r#"<form method="post" action="/w/acme/runtimes/detect">"#));
        assert!(html.contains(r#"name="_csrf" value="tok""#));
        assert!(
            html.contains(r#"id="runtime-claude""#)
                && html.contains("2.1.197")
                && html.contains("Installed")
        );
        assert!(
            html.contains("Not installed") && html.contains("npm install -g @openai/codex@0.171.0")
        );
        assert!(html.contains("&lt;anywhere&gt;"), "reasons are escaped");
        assert!(html.contains(r#"aria-current="page">Runtimes"#));
    }
}
