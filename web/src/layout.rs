//! The frame around every page: doctype, head (CSS, htmx, the `ws` extension, `app.js`), and for a
//! signed-in user the top bar with the workspace, the main links and a logout form.

use maud::{DOCTYPE, Markup, html};

use crate::assets;
use crate::partials::form::csrf;
use crate::views::{Nav, NavItem};

/// htmx's settings, read from the `htmx-config` meta tag before htmx initialises.
pub const HTMX_CONFIG: &str =
    r#"{"includeIndicatorStyles":false,"allowEval":false,"allowScriptTags":false}"#;

/// A full HTML page. With `nav` (signed in) it gets the top bar and a `csrf-token` meta tag that
/// `app.js` and htmx requests read; without it (login, setup, errors for strangers) a plain centred frame.
#[expect(
    clippy::needless_pass_by_value,
    reason = "callers hand over an `html!` temporary built inline; taking `&Markup` would only add `&`s"
)]
pub fn page(title: &str, nav: Option<&Nav>, body: Markup) -> Markup {
    html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                meta name="color-scheme" content="light dark";
                @if let Some(n) = nav {
                    meta name="csrf-token" content=(n.csrf);
                    title { (title) " · " (n.workspace_name) " · Muster" }
                } @else {
                    title { (title) " · Muster" }
                }
                // The CSP refuses inline `<style>` and `eval`: htmx must not inject its indicator style
                // (app.css has it), evaluate `hx-on`/`js:` code or run scripts in swapped HTML.
                meta name="htmx-config" content=(HTMX_CONFIG);
                link rel="icon" type="image/svg+xml" href=(assets::url("favicon.svg"));
                link rel="stylesheet" href=(assets::url("app.css"));
                // Synchronous on purpose (no `defer`): it sets the saved light/dark choice on <html>
                // before the first paint. A file, since the CSP refuses inline scripts.
                script src=(assets::url("theme.js")) {}
                script src=(assets::url("htmx.min.js")) defer {}
                script src=(assets::url("ws.js")) defer {}
                script src=(assets::url("app.js")) defer {}
                script src=(assets::url("mentions.js")) defer {}
            }
            @match nav {
                Some(n) => body.signed-in {
                    a.skip-link href="#main" { "Skip to content" }
                    (top_bar(n))
                    main #main { (body) }
                    div #toasts aria-live="polite" {}
                    (crate::partials::board_palette::mount(n))
                },
                None => body.signed-out {
                    main #main { (body) }
                },
            }
        }
    }
}

/// The workspace's base URL, `/w/{slug}`.
pub fn workspace_url(nav: &Nav) -> String {
    format!("/w/{}", nav.workspace_slug)
}

fn top_bar(nav: &Nav) -> Markup {
    let base = workspace_url(nav);
    let mut links = vec![
        (NavItem::Board, "Board", base.clone()),
        (NavItem::Projects, "Projects", format!("{base}/projects")),
        (NavItem::Agents, "Agents", format!("{base}/agents")),
        (NavItem::Skills, "Skills", format!("{base}/skills")),
        (NavItem::Ensembles, "Ensembles", format!("{base}/ensembles")),
        (NavItem::Members, "Members", format!("{base}/members")),
        (NavItem::Runtimes, "Runtimes", format!("{base}/runtimes")),
        (NavItem::Runners, "Runners", format!("{base}/runners")),
        (NavItem::Usage, "Usage", format!("{base}/usage")),
        (NavItem::Tokens, "API tokens", format!("{base}/tokens")),
    ];
    // Settings (the workspace's repository) are for owners and admins only.
    if nav.role != "member" {
        links.push((NavItem::Settings, "Settings", format!("{base}/settings")));
    }
    html! {
        header.topbar {
            a.brand href=(base) {
                span.brand-mark aria-hidden="true" {}
                span.brand-name { "Muster" }
            }
            span.workspace-name title=(nav.workspace_name) { (nav.workspace_name) }
            nav.mainnav aria-label="Main" {
                @for (item, label, href) in &links {
                    a href=(href) aria-current=[(nav.active == *item).then_some("page")] { (label) }
                }
            }
            (inbox_link(nav, &base))
            // Phones: the same links behind a menu button (a `details`, so it opens without JavaScript).
            details.navmenu {
                summary.btn.btn-ghost.navmenu-button aria-label="Menu" title="Menu" { span aria-hidden="true" { "☰" } }
                nav.navmenu-list aria-label="Main (menu)" {
                    @for (item, label, href) in &links {
                        a href=(href) aria-current=[(nav.active == *item).then_some("page")] { (label) }
                    }
                    a href={ (base) "/account" } aria-current=[(nav.active == NavItem::Account).then_some("page")] {
                        (nav.user_name) " · account"
                    }
                }
            }
            div.user {
                (theme_switch())
                a.user-name href={ (base) "/account" } title={ (nav.user_email) " · your account and password" }
                    aria-current=[(nav.active == NavItem::Account).then_some("page")] { (nav.user_name) }
                span.user-role { (nav.role) }
                form.logout method="post" action="/logout" {
                    (csrf(&nav.csrf))
                    button.btn.btn-ghost.btn-small type="submit" { "Log out" }
                }
            }
        }
    }
}

/// The light/dark switch: follow the system, or always light, or always dark. `theme.js` remembers the
/// choice in `localStorage`, marks the pressed button and shows the group (hidden without JavaScript,
/// where the pages follow the system).
fn theme_switch() -> Markup {
    html! {
        div.theme-switch role="group" aria-label="Colour theme" hidden {
            @for (choice, label, icon) in [("system", "Follow the system theme", "◐"), ("light", "Light theme", "☀"), ("dark", "Dark theme", "☾")] {
                button.theme-choice type="button" data-theme-choice=(choice) aria-pressed="false" title=(label) aria-label=(label) { (icon) }
            }
        }
    }
}

/// The header's inbox link with the unread count: rendered when the page counted it, else loaded once
/// the page is shown (the link itself works without JavaScript).
fn inbox_link(nav: &Nav, base: &str) -> Markup {
    html! {
        a.inbox-link href={ (base) "/inbox" } aria-current=[(nav.active == NavItem::Inbox).then_some("page")] {
            "Inbox"
            @match nav.inbox_unread {
                Some(n) => (inbox_count(n)),
                None => span.inbox-count-slot hx-get={ (base) "/inbox/count" } hx-trigger="load"
                    hx-swap="outerHTML" {},
            }
        }
    }
}

/// The unread count badge (`id="inbox-count"`), empty and hidden at zero.
pub fn inbox_count(unread: i64) -> Markup {
    html! {
        @if unread > 0 {
            span #inbox-count.inbox-count title={ (unread) " unread" } { (unread) }
        } @else {
            span #inbox-count.inbox-count hidden {}
        }
    }
}

/// A page heading with optional actions on the right.
#[expect(
    clippy::needless_pass_by_value,
    reason = "callers hand over an `html!` temporary built inline; taking `&Markup` would only add `&`s"
)]
pub fn page_head(title: &str, subtitle: Option<&str>, actions: Markup) -> Markup {
    html! {
        div.page-head {
            div {
                h1 { (title) }
                @if let Some(s) = subtitle { p.subtitle { (s) } }
            }
            div.page-actions { (actions) }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::samples;

    #[test]
    fn signed_in_page_has_csrf_meta_nav_and_logout() {
        let nav = samples::nav(NavItem::Agents);
        let html = page("Agents", Some(&nav), html! { p { "hi" } }).into_string();
        assert!(html.starts_with("<!DOCTYPE html>"));
        assert!(html.contains(r#"<meta name="csrf-token" content="csrf-123">"#));
        assert!(html.contains(r#"<a href="/w/acme/agents" aria-current="page">Agents</a>"#));
        assert!(html.contains(r#"<a href="/w/acme">Board</a>"#));
        assert!(html.contains(r#"href="/w/acme/members""#));
        assert!(html.contains(r#"href="/w/acme/tokens""#));
        assert_eq!(
            html.matches(r#"<a href="/w/acme/ensembles">Ensembles</a>"#)
                .count(),
            2,
            "in the main nav and the phone menu"
        );
        assert!(html.contains(r#"<form class="logout" method="post" action="/logout">"#));
        assert!(html.contains(r#"<input type="hidden" name="_csrf" value="csrf-123">"#));
        assert!(html.contains(&assets::url("htmx.min.js")));
        assert!(html.contains(&assets::url("ws.js")));
        assert!(html.contains(&assets::url("app.css")));
        assert!(
            html.contains(&format!(
                r#"<script src="{}"></script>"#,
                assets::url("theme.js")
            )),
            "theme.js runs before the first paint: not deferred"
        );
        assert!(html.contains(r#"data-theme-choice="dark""#));
        assert!(html.contains(r#"<a class="user-name" href="/w/acme/account""#));
        assert!(html.contains("Acme Robotics"));
        assert!(html.contains(
            r#"<meta name="htmx-config" content="{&quot;includeIndicatorStyles&quot;:false,&quot;allowEval&quot;:false,&quot;allowScriptTags&quot;:false}">"#
        ));
        assert!(
            !html.contains("<script>") && !html.contains("hx-on"),
            "no inline script or handler"
        );
    }

    #[test]
    fn signed_out_page_has_no_nav_or_csrf() {
        let html = page("Log in", None, html! { p { "x" } }).into_string();
        assert!(!html.contains("csrf-token"));
        assert!(!html.contains("/logout"));
        assert!(html.contains("<title>Log in · Muster</title>"));
    }

    #[test]
    fn title_and_names_are_escaped() {
        let mut nav = samples::nav(NavItem::Board);
        nav.workspace_name = "<b>ws</b>".into();
        let html = page("<script>", Some(&nav), html! {}).into_string();
        assert!(!html.contains("<script>·") && !html.contains("<b>ws"));
        assert!(html.contains("&lt;script&gt;"));
        assert!(html.contains("&lt;b&gt;ws&lt;/b&gt;"));
    }
}
