//! `GET /w/{slug}/runtimes`: which agent CLIs and local model runtimes this server's machine has, with
//! versions, what is wrong when one is unusable, how to install it, and a re-detect button.

use maud::{Markup, html};

use crate::layout::{page, page_head, workspace_url};
use crate::partials::form::csrf;
use crate::partials::widgets::Timestamp;
use crate::views::{ModelServerRowView, RuntimeRowView, RuntimesView};

/// The runtimes page.
pub fn runtimes(v: &RuntimesView) -> Markup {
    let actions = html! {
        @if v.can_redetect {
            form method="post" action=(v.redetect_url) {
                (csrf(&v.nav.csrf))
                button.btn.btn-primary type="submit" { "Re-detect" }
            }
        }
    };
    let body = html! {
        (page_head("Runtimes", Some("Agent CLIs found on the machine this server runs on."), actions))
        p #runtimes-runner .muted {
            "This is what this server's embedded runner has. Remote runners report their own CLIs on the "
            a href={ (workspace_url(&v.nav)) "/runners" } { "Runners page" } "."
        }
        @if let Some(note) = &v.note { p #redetect-note .alert role="status" { (note) } }
        p #sandbox-mode .(if v.sandboxed { "muted" } else { "warning" }) {
            strong { "Agent sandbox: " } (v.sandbox)
        }
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
        (local_models(v))
    };
    page("Runtimes", Some(&v.nav), body)
}

/// Local model servers and binaries: what a `llama` agent (or a CLI with a base URL) can use.
fn local_models(v: &RuntimesView) -> Markup {
    html! {
        section #local-models {
            h2 { "Local models" }
            p.muted {
                "Model servers from agent base URLs, MUSTER_LLAMA_URL, OLLAMA_HOST and LLAMA_API_BASE, then 127.0.0.1 ports "
                (v.probed_ports) "."
            }
            @if v.model_servers.is_empty() {
                p #no-model-servers { "No local model server answered. Start llama-server or Ollama, or set MUSTER_LLAMA_URL." }
            } @else {
                div.panel {
                    table.model-servers {
                        thead { tr { th { "Server" } th { "Kind" } th { "Status" } th { "Models" } th { "Version" } th { "Found by" } } }
                        tbody { @for s in &v.model_servers { (server_row(s)) } }
                    }
                }
            }
            @if !v.local_binaries.is_empty() {
                h3 { "Binaries on PATH" }
                div.panel {
                    table.local-binaries {
                        thead { tr { th { "Path" } th { "Status" } th { "Version" } th { "Note" } } }
                        tbody {
                            @for b in &v.local_binaries {
                                tr {
                                    td { @if let Some(p) = &b.path { code { (p) } } }
                                    td { span class={ "runtime-status " (status_label(&b.status).1) } { (status_label(&b.status).0) } }
                                    td { @if let Some(ver) = &b.version { code { (ver) } } @else { span.muted { "—" } } }
                                    td { @if let Some(reason) = &b.reason { (reason) } }
                                }
                            }
                        }
                    }
                }
            }
        }
    }
}

fn server_status(status: &str) -> (&'static str, &'static str) {
    match status {
        "ready" => ("Ready", "runtime-ok"),
        "loading" => ("Loading", "runtime-warn"),
        "unreachable" => ("Unreachable", "runtime-missing"),
        _ => ("Not a model server", "runtime-bad"),
    }
}

fn server_row(s: &ModelServerRowView) -> Markup {
    let (label, class) = server_status(&s.status);
    html! {
        tr.model-server data-kind=(s.kind) {
            td { code { (s.url) } }
            td { @if s.kind.is_empty() { span.muted { "—" } } @else { (s.kind) } }
            td {
                span class={ "runtime-status " (class) } { (label) }
                @if let Some(reason) = &s.reason { p.muted { (reason) } }
            }
            td {
                @if s.models.is_empty() { span.muted { "—" } }
                @for m in &s.models { code.model { (m) } " " }
                @if let Some(d) = &s.details { p.muted { (d) } }
            }
            td { @if let Some(ver) = &s.version { code { (ver) } } @else { span.muted { "—" } } }
            td { (s.source) }
        }
    }
}

fn status_label(status: &str) -> (&'static str, &'static str) {
    match status {
        "found" => ("Installed", "runtime-ok"),
        "served" => ("Ready (model server)", "runtime-ok"),
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
            sandbox: "agents refused: the kernel has no Landlock".into(),
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
            probed_ports: "8080, 11434".into(),
            can_redetect: true,
            ..Default::default()
        };
        let html = runtimes(&v).into_string();
        assert!(html.contains(r#"<form method="post" action="/w/acme/runtimes/detect">"#));
        assert!(html.contains(r#"name="_csrf" value="tok""#));
        assert!(html.contains(
            r#"<p class="warning" id="sandbox-mode"><strong>Agent sandbox: </strong>agents refused: the kernel has no Landlock</p>"#
        ));
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
        assert!(html.contains(r#"id="no-model-servers""#) && html.contains("8080, 11434"));
    }

    #[test]
    fn lists_model_servers_with_kind_models_and_reasons() {
        let v = RuntimesView {
            model_servers: vec![
                ModelServerRowView {
                    url: "http://127.0.0.1:8080".into(),
                    kind: "llama.cpp".into(),
                    status: "ready".into(),
                    models: vec!["smollm2".into()],
                    version: Some("b4567".into()),
                    source: "port 8080 (llama.cpp / llamafile)".into(),
                    details: Some("context 2048 tokens".into()),
                    reason: None,
                },
                ModelServerRowView {
                    url: "http://gpu:9000".into(),
                    status: "unreachable".into(),
                    source: "MUSTER_LLAMA_URL".into(),
                    reason: Some("nothing answered <here>".into()),
                    ..Default::default()
                },
            ],
            local_binaries: vec![RuntimeRowView {
                kind: "llama".into(),
                label: "Local Llama".into(),
                status: "found".into(),
                path: Some("/usr/local/bin/llama-server".into()),
                version: Some("b4567".into()),
                reason: None,
                install_hint: None,
            }],
            ..Default::default()
        };
        let html = runtimes(&v).into_string();
        assert!(!html.contains("no-model-servers"));
        assert!(html.contains(r#"data-kind="llama.cpp""#) && html.contains("smollm2"));
        assert!(html.contains("Ready") && html.contains("Unreachable"));
        assert!(html.contains("nothing answered &lt;here&gt;"));
        assert!(
            html.contains("/usr/local/bin/llama-server") && html.contains("context 2048 tokens")
        );
    }

    #[test]
    fn members_get_no_redetect_button_and_a_throttled_redetect_says_why() {
        let v = RuntimesView {
            redetect_url: "/w/acme/runtimes/detect".into(),
            note: Some("Re-detected less than 10 s ago <now>.".into()),
            ..Default::default()
        };
        let html = runtimes(&v).into_string();
        assert!(!html.contains("/w/acme/runtimes/detect") && !html.contains("Re-detect<"));
        assert!(html.contains(r#"id="redetect-note""#));
        assert!(html.contains("Re-detected less than 10 s ago &lt;now&gt;."));
    }
}
