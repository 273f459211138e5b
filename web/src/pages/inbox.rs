//! `GET /w/{slug}/inbox`: what needs a person — failed, stalled, over-budget and interrupted runs, work
//! awaiting review, mentions — newest first, each read or unread for the signed-in user.

use maud::{Markup, html};

use crate::layout::{page, page_head, workspace_url};
use crate::partials::form::csrf;
use crate::partials::widgets::Timestamp;
use crate::views::{InboxItemView, InboxView};

/// The inbox: an unread/all switch, "mark all read" (POST `read_all_url`) and the items, each with
/// its issue and run links, a "mark read" button and, for runs worth another try, a retry button.
pub fn inbox(v: &InboxView) -> Markup {
    let base = format!("{}/inbox", workspace_url(&v.nav));
    let subtitle = match v.unread_count {
        0 => "Nothing unread.".to_owned(),
        1 => "1 unread item.".to_owned(),
        n => format!("{n} unread items."),
    };
    let actions = html! {
        nav.segmented aria-label="Show" {
            a href={ (base) "?show=unread" } aria-current=[v.unread_only.then_some("page")] { "Unread" }
            a href={ (base) "?show=all" } aria-current=[(!v.unread_only).then_some("page")] { "All" }
        }
        @if v.unread_count > 0 {
            form.inline-form method="post" action=(v.read_all_url) {
                (csrf(&v.nav.csrf))
                button.btn type="submit" { "Mark all read" }
            }
        }
    };
    let body = html! {
        div.inbox-page {
        (page_head("Inbox", Some(&subtitle), actions))
        @if v.invitations > 0 {
            p.alert.invitations-banner role="status" {
                @if v.invitations == 1 { "A workspace invited you. " } @else { (v.invitations) " workspaces invited you. " }
                a href="/invitations" { "Answer the invitation" @if v.invitations > 1 { "s" } }
            }
        }
        @if v.items.is_empty() {
            div.panel.empty-state {
                @if v.unread_only { "You are all caught up." } @else { "Nothing has needed you yet." }
            }
        } @else {
            ul.inbox-list {
                @for item in &v.items { (inbox_item(item, &v.nav.csrf)) }
            }
        }
        }
    };
    page("Inbox", Some(&v.nav), body)
}

fn kind_class(kind: &str) -> &str {
    match kind {
        "run_failed" | "over_budget" | "run_interrupted" => "bad",
        "run_stalled" => "warn",
        "awaiting_review" => "ok",
        _ => "info",
    }
}

fn inbox_item(i: &InboxItemView, token: &str) -> Markup {
    html! {
        li.inbox-item.unread[!i.read] id={ "inbox-" (i.id) } data-kind=(i.kind) {
            span class={ "inbox-dot dot-" (kind_class(&i.kind)) } aria-hidden="true" {}
            div.inbox-main {
                div.inbox-top {
                    span class={ "inbox-kind kind-" (kind_class(&i.kind)) } { (i.kind_label) }
                    @if let (Some(key), Some(url)) = (&i.issue_key, &i.issue_url) {
                        a.issue-key href=(url) { (key) }
                    }
                    @if !i.read { span.visually-hidden { "(unread)" } }
                    (Timestamp(i.at))
                }
                p.inbox-message { (i.message) }
                @if let Some(d) = &i.details { (super::run::diagnostic_details(d)) }
                div.inbox-actions {
                    @if let Some(url) = &i.comment_url { a.btn.btn-small.btn-ghost href=(url) { "Open comment" } }
                    @if let Some(url) = &i.run_url { a.btn.btn-small.btn-ghost href=(url) { "Open run" } }
                    @if let Some(url) = &i.diff_url { a.btn.btn-small.btn-ghost href=(url) { "View diff" } }
                    @if let Some(url) = &i.retry_url {
                        form.inline-form method="post" action=(url) {
                            (csrf(token))
                            button.btn.btn-small.btn-primary type="submit" { "Retry run" }
                        }
                    }
                    @if let Some(url) = &i.read_url {
                        form.inline-form method="post" action=(url) {
                            (csrf(token))
                            button.btn.btn-small type="submit" { "Mark read" }
                        }
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests;
