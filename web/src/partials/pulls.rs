//! An issue's pull requests: the issue page's side panel (`#issue-pulls`, inside the issue's socket
//! element with the plan, see `plan::issue_live`, and pushed alone over it as an out-of-band swap) and
//! the board card's badge.

use maud::{Markup, html};

use super::form::{Form, csrf};
use crate::views::{CardPullView, IssuePullsView, PullView};

/// The panel as an out-of-band swap, for the issue's socket.
pub fn issue_pulls_oob(v: &IssuePullsView) -> Markup {
    issue_pulls(v, true)
}

/// Each pull request, newest first, and the button that opens one. Nothing at all for an issue without
/// pull requests in a workspace without a connection.
pub(crate) fn issue_pulls(v: &IssuePullsView, oob: bool) -> Markup {
    let f = Form::new("pull", &v.errors);
    html! {
        section #issue-pulls.panel.issue-pulls aria-labelledby="issue-pulls-h"
            hx-swap-oob=[oob.then_some("true")] hidden[v.pulls.is_empty() && v.open_url.is_none()] {
            h2 #issue-pulls-h { "Pull requests" }
            @if v.pulls.is_empty() { p.muted { "None yet." } }
            @for p in &v.pulls { (pull(p)) }
            @if let Some(url) = &v.open_url {
                form.pull-open-form method="post" action=(url) {
                    (csrf(&v.csrf))
                    (f.form_errors())
                    @for field in v.errors.keys().filter(|k| *k != "form") { (f.field_errors(field)) }
                    button.btn type="submit" { "Open pull request" }
                    p.hint { "A draft, of the latest work an agent delivered." }
                }
            }
        }
    }
}

fn pull(p: &PullView) -> Markup {
    html! {
        article.pull id={ "pull-" (p.number) } {
            div.pull-head {
                a.pull-number href=(p.url) target="_blank" rel="noopener" { "#" (p.number) }
                span class={ "pull-state pull-" (p.state) } { (p.state_label) }
                span.pull-rounds.muted { (p.rounds) }
            }
            @if let Some(n) = p.superseded_by { p.pull-superseded.muted { "superseded by #" (n) } }
            dl.pull-facts {
                dt { "Mergeable" } dd.pull-mergeable { (p.mergeable) }
                @if !p.checks.is_empty() {
                    dt { "Checks" }
                    dd {
                        ul.pull-checks {
                            @for c in &p.checks {
                                li class={ "pull-check check-" (c.state) } {
                                    span.check-dot aria-hidden="true" {}
                                    @match &c.url {
                                        Some(url) => a href=(url) target="_blank" rel="noopener" { (c.name) },
                                        None => span { (c.name) },
                                    }
                                    " " span.check-state { (c.state) }
                                }
                            }
                        }
                    }
                }
                @if !p.reviews.is_empty() {
                    dt { "Reviews" }
                    dd {
                        ul.pull-reviews {
                            @for r in &p.reviews {
                                li class={ "pull-review review-" (r.verdict) } {
                                    span.review-author { (r.author) } ": " span.review-verdict { (r.verdict_label) }
                                }
                            }
                        }
                    }
                }
            }
        }
    }
}

/// The card's badge for its latest pull request, coloured by its state.
pub fn card_pull(p: &CardPullView) -> Markup {
    html! {
        span class={ "card-pull pull-" (p.state) } title={ "Pull request #" (p.number) ", " (p.state) } {
            "PR #" (p.number)
        }
    }
}

#[cfg(test)]
mod tests;
