//! A card's quick menu: its status and its assignee as buttons, one form each (POST, CSRF token), so one
//! click or Enter is one change. The board shows it in a shared popover filled on demand (`app.js`), so
//! cards stay light; without JavaScript the card's menu link opens it as a page.

use maud::{Markup, html};

use super::form::csrf;
use super::widgets::{Avatar, STATUSES, status_class};
use crate::views::CardMenuView;

/// The menu body, `id="card-menu-{key}"`. Its forms carry `hx-post` with no swap: the board's live socket
/// redraws the columns, and `app.js` closes the popover when the request succeeds.
pub fn card_menu(v: &CardMenuView) -> Markup {
    html! {
        div.card-menu-body id={ "card-menu-" (v.key) } data-key=(v.key) {
            p.card-menu-title {
                a.card-key href=(v.url) { (v.key) }
                " " span { (v.title) }
            }
            form.card-menu-section method="post" action=(v.move_url) hx-post=(v.move_url) hx-swap="none" {
                (csrf(&v.nav.csrf))
                fieldset {
                    legend { "Status" }
                    @for (value, label) in STATUSES {
                        button.menu-item type="submit" name="status" value=(value)
                            aria-pressed=(if *value == v.status { "true" } else { "false" }) {
                            span class={ "status-dot dot-" (status_class(value)) } aria-hidden="true" {}
                            span { (label) }
                        }
                    }
                }
            }
            form.card-menu-section method="post" action=(v.assign_url) hx-post=(v.assign_url) hx-swap="none" {
                (csrf(&v.nav.csrf))
                fieldset {
                    legend { "Assignee" }
                    @for a in &v.assignees {
                        button.menu-item type="submit" name="assignee" value=(a.value)
                            aria-pressed=(if a.selected { "true" } else { "false" }) {
                            @match &a.person {
                                Some(p) => { (Avatar(p)) span { (p.name) } },
                                None => { span.avatar.avatar-empty aria-hidden="true" {} span { "Nobody" } },
                            }
                        }
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::samples::{agent, nav, user};
    use crate::views::{AssigneeChoiceView, NavItem};

    fn menu() -> CardMenuView {
        CardMenuView {
            nav: nav(NavItem::Board),
            key: "MUS-7".into(),
            title: "<b>Fix</b> it".into(),
            url: "/w/acme/issues/MUS-7".into(),
            move_url: "/w/acme/issues/MUS-7/move".into(),
            assign_url: "/w/acme/issues/MUS-7/assign".into(),
            status: "todo".into(),
            assignees: vec![
                AssigneeChoiceView {
                    value: String::new(),
                    person: None,
                    selected: false,
                },
                AssigneeChoiceView {
                    value: "user:1".into(),
                    person: Some(user("Grace Hopper", "#1d4ed8")),
                    selected: true,
                },
                AssigneeChoiceView {
                    value: "agent:2".into(),
                    person: Some(agent("codex-coder", "#0e7490")),
                    selected: false,
                },
            ],
        }
    }

    #[test]
    fn menu_posts_status_and_assignee_with_csrf() {
        let html = card_menu(&menu()).into_string();
        assert!(html.contains(r#"<form class="card-menu-section" method="post" action="/w/acme/issues/MUS-7/move" hx-post="/w/acme/issues/MUS-7/move" hx-swap="none"><input type="hidden" name="_csrf" value="csrf-123">"#));
        assert!(html.contains(r#"action="/w/acme/issues/MUS-7/assign""#));
        assert_eq!(html.matches(r#"name="_csrf""#).count(), 2);
        assert!(html.contains(r#"name="status" value="todo" aria-pressed="true""#));
        assert!(html.contains(r#"name="status" value="cancelled" aria-pressed="false""#));
        assert!(html.contains(r#"name="assignee" value="" aria-pressed="false""#));
        assert!(html.contains(r#"name="assignee" value="user:1" aria-pressed="true""#));
        assert!(html.contains("rt-claude") && html.contains("codex-coder"));
        assert!(html.contains("&lt;b&gt;Fix&lt;/b&gt;") && !html.contains("<b>Fix"));
    }
}
