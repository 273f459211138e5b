//! Board cards and columns. Columns have stable ids (`column-{status}`) so the server can push a changed
//! column over the board WebSocket as an out-of-band swap, and `app.js` finds cards by `data-key`.

use maud::{Markup, html};

use super::widgets::{Avatar, LabelChip, PriorityIcon, RunPill, status_class};
use crate::views::{BoardColumnView, IssueCardView, PersonKind};

/// One issue card: key, priority, title (linking to the issue), labels, run state and assignee. It is
/// draggable for `app.js`, and its menu button leads to the status and assignee choices (with or without
/// JavaScript). Cards carry no forms, so one rendering serves every reader of the board.
pub fn issue_card(card: &IssueCardView) -> Markup {
    html! {
        article.card id={ "card-" (card.key) } draggable="true"
            data-key=(card.key) data-move-url=(card.move_url) data-status=(card.status) {
            div.card-top {
                span.card-key { (card.key) }
                @if let Some(p) = &card.project { span.card-project title="Project" { (p) } }
                @if let Some(pull) = &card.pull { (super::pulls::card_pull(pull)) }
                (super::plan::card_children(&card.plan))
                (PriorityIcon(&card.priority))
            }
            a.card-title href=(card.url) { (card.title) }
            @if !card.labels.is_empty() {
                div.card-labels {
                    @for l in &card.labels { (LabelChip(l)) }
                }
            }
            @if let Some(e) = &card.ensemble {
                a.card-ensemble href={ (card.url) "/ensemble" } { (e) }
            }
            div.card-bottom {
                @if let Some(why) = &card.run_waiting {
                    span.run.run-queued.run-waiting title=(why) { span.run-dot aria-hidden="true" {} (why) }
                } @else if let Some(state) = &card.run_state { (RunPill(state)) }
                (super::plan::card_blocked(&card.plan))
                span.spacer {}
                (menu_button(card))
                @match &card.assignee {
                    Some(a) => {
                        span.card-assignee {
                            (Avatar(a))
                            span.visually-hidden {
                                "Assigned to " (a.name)
                                @if a.kind == PersonKind::Agent {
                                    " (agent"
                                    @if let Some(rt) = &a.runtime { ", " (rt.label) }
                                    ")"
                                }
                            }
                        }
                    }
                    None => span.avatar.avatar-empty title="Unassigned" {},
                }
            }
        }
    }
}

/// The card's menu button: a link to the card menu page (status and assignee as buttons), which `app.js`
/// opens in the board's one shared popover instead. One small link per card, no per-card forms.
fn menu_button(card: &IssueCardView) -> Markup {
    html! {
        a.card-menu href={ (card.url) "/menu" } {
            span.visually-hidden { "Status and assignee of " (card.key) }
        }
    }
}

/// One status column with its first cards, `id="column-{status}"`.
pub fn board_column(col: &BoardColumnView) -> Markup {
    column(col, false)
}

/// Out-of-band swaps (`hx-swap-oob="outerHTML"`) of whole columns: what the board WebSocket pushes
/// for a column whose first page changed. htmx's `ws` extension replaces each `#column-{status}` in
/// place. Cards carry no CSRF token, so one frame serves every session.
pub fn board_columns_oob(columns: &[BoardColumnView]) -> Markup {
    html! {
        @for col in columns { (column(col, true)) }
    }
}

/// An out-of-band swap of only a column's count, for a change that left its shown cards as they were
/// (`app.js` then recomputes the "+ N more" from the count and the cards shown).
pub fn column_count_oob(col: &BoardColumnView) -> Markup {
    html! { (count(col, true)) }
}

/// An out-of-band removal of the card of `key` wherever a reader shows it: sent when it changed
/// outside the pages the server renders, so a reader who paged further does not keep a stale copy.
pub fn card_removal_oob(key: &str) -> Markup {
    html! { li id={ "item-" (key) } hx-swap-oob="delete" {} }
}

/// The cards of the next page of a column, to append to `#cards-{status}`, plus its "show more" as an
/// out-of-band swap (the next page's, or none on the last).
pub fn column_page_fragment(col: &BoardColumnView) -> Markup {
    html! {
        @for card in &col.cards { (card_item(card)) }
        (more(col, true))
    }
}

fn card_item(card: &IssueCardView) -> Markup {
    html! { li id={ "item-" (card.key) } { (issue_card(card)) } }
}

fn count(col: &BoardColumnView, oob: bool) -> Markup {
    html! {
        span.count id={ "count-" (col.status) } hx-swap-oob=[oob.then_some("outerHTML")]
            title="Issues in this column" { (col.total) }
    }
}

/// "Show more" (htmx appends the next page; without JavaScript it is a link to that page) and how many
/// cards follow. Always present, so a later page can replace it.
fn more(col: &BoardColumnView, oob: bool) -> Markup {
    html! {
        div.column-more id={ "more-" (col.status) } hx-swap-oob=[oob.then_some("outerHTML")] {
            @if let Some(m) = &col.more {
                a.btn.btn-ghost.show-more href=(m.url) hx-get=(m.url)
                    hx-target={ "#cards-" (col.status) } hx-swap="beforeend" {
                    "Show more"
                }
                " "
                span.more-rest { "+ " (m.rest) " more" }
            }
        }
    }
}

fn column(col: &BoardColumnView, oob: bool) -> Markup {
    html! {
        section.column id={ "column-" (col.status) } data-status=(col.status)
            hx-swap-oob=[oob.then_some("outerHTML")] aria-label=(col.label) {
            header.column-head {
                span class={ "status-dot dot-" (status_class(&col.status)) } aria-hidden="true" {}
                h2 { (col.label) }
                (count(col, false))
            }
            ol.cards id={ "cards-" (col.status) } data-status=(col.status) {
                @for card in &col.cards { (card_item(card)) }
            }
            // Always present; CSS hides it while the list has cards, so drag and drop needs no bookkeeping.
            p.column-empty { "No issues" }
            (more(col, false))
        }
    }
}

#[cfg(test)]
mod tests;
