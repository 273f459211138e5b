//! Board cards and columns. Columns have stable ids (`column-{status}`) so the server can push a changed
//! column over the board WebSocket as an out-of-band swap, and `app.js` finds cards by `data-key`.

use maud::{Markup, html};

use super::form::csrf as csrf_input;
use super::widgets::{Avatar, LabelChip, PriorityIcon, RunPill, STATUSES, status_class};
use crate::views::{BoardColumnView, IssueCardView, PersonKind};

/// One issue card: key, priority, title (linking to the issue), labels, run state and assignee. It is
/// draggable for `app.js`, and carries a no-JavaScript move form (`status` select, POST `move_url`).
pub fn issue_card(card: &IssueCardView, csrf: &str) -> Markup {
    html! {
        article.card id={ "card-" (card.key) } draggable="true"
            data-key=(card.key) data-move-url=(card.move_url) data-status=(card.status) {
            div.card-top {
                span.card-key { (card.key) }
                (PriorityIcon(&card.priority))
            }
            a.card-title href=(card.url) { (card.title) }
            @if !card.labels.is_empty() {
                div.card-labels {
                    @for l in &card.labels { (LabelChip(l)) }
                }
            }
            div.card-bottom {
                @if let Some(state) = &card.run_state { (RunPill(state)) }
                span.spacer {}
                (move_control(card, csrf))
                @match &card.assignee {
                    Some(a) => {
                        span.card-assignee title=(a.name) {
                            (Avatar(a))
                            span.visually-hidden {
                                "Assigned to " (a.name)
                                @if a.kind == PersonKind::Agent { " (agent)" }
                            }
                        }
                    }
                    None => span.avatar.avatar-empty title="Unassigned" {},
                }
            }
        }
    }
}

/// The keyboard-accessible, no-JavaScript way to move a card: a disclosure holding a status select.
fn move_control(card: &IssueCardView, csrf: &str) -> Markup {
    let id = format!("move-{}", card.key);
    html! {
        details.card-move {
            summary title="Move to another column" {
                span.visually-hidden { "Move " (card.key) }
                span aria-hidden="true" { "⇄" }
            }
            form.card-move-form method="post" action=(card.move_url) {
                (csrf_input(csrf))
                label.visually-hidden for=(id) { "Status" }
                select id=(id) name="status" {
                    @for (value, label) in STATUSES {
                        option value=(value) selected[*value == card.status] { (label) }
                    }
                }
                button.btn.btn-small type="submit" { "Move" }
            }
        }
    }
}

/// One status column with its cards, `id="column-{status}"`.
pub fn board_column(col: &BoardColumnView, csrf: &str) -> Markup {
    column(col, csrf, false)
}

/// Every column as an out-of-band swap (`hx-swap-oob="outerHTML"`): the frame the server pushes over
/// the board WebSocket when someone else changes the board. htmx's `ws` extension replaces each
/// `#column-{status}` in place. A frame broadcast to many sessions can pass `csrf = ""`: `app.js` fills an
/// empty `_csrf` from the page's meta tag on submit.
pub fn board_columns_oob(columns: &[BoardColumnView], csrf: &str) -> Markup {
    html! {
        @for col in columns { (column(col, csrf, true)) }
    }
}

fn column(col: &BoardColumnView, csrf: &str, oob: bool) -> Markup {
    html! {
        section.column id={ "column-" (col.status) } data-status=(col.status)
            hx-swap-oob=[oob.then_some("outerHTML")] aria-label=(col.label) {
            header.column-head {
                span class={ "status-dot dot-" (status_class(&col.status)) } aria-hidden="true" {}
                h2 { (col.label) }
                span.count { (col.cards.len()) }
            }
            ol.cards data-status=(col.status) {
                @for card in &col.cards {
                    li { (issue_card(card, csrf)) }
                }
            }
            // Always present; CSS hides it while the list has cards, so drag and drop needs no bookkeeping.
            p.column-empty { "No issues" }
        }
    }
}

#[cfg(test)]
mod tests;
