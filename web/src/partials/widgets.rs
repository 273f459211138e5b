//! Small repeated bits as `maud::Render` types: avatars, status and run-state badges, priority icons and
//! timestamps. Values that end up in a `class` or `style` are checked against known sets, so even a bad
//! view cannot smuggle markup or CSS into an attribute.

use chrono::{DateTime, Utc};
use maud::{Markup, Render, html};

use crate::views::{PersonKind, PersonView};

/// Every issue status with its label, in board order (the move control offers all of them).
pub const STATUSES: &[(&str, &str)] = &[
    ("backlog", "Backlog"),
    ("todo", "Todo"),
    ("in_progress", "In progress"),
    ("in_review", "In review"),
    ("done", "Done"),
    ("blocked", "Blocked"),
    ("cancelled", "Cancelled"),
];

/// The label of a known status, or the raw value.
pub fn status_label(status: &str) -> &str {
    STATUSES
        .iter()
        .find(|(s, _)| *s == status)
        .map_or(status, |(_, l)| l)
}

/// `status` when it is a known status (safe in a class name), else `other`.
pub(crate) fn status_class(status: &str) -> &str {
    if STATUSES.iter().any(|(s, _)| *s == status) {
        status
    } else {
        "other"
    }
}

/// A `#rgb`/`#rrggbb` colour, or a neutral grey: the value goes into a `style` attribute.
pub fn safe_color(color: &str) -> &str {
    let hex = color.strip_prefix('#').unwrap_or("");
    if matches!(hex.len(), 3 | 6) && hex.bytes().all(|b| b.is_ascii_hexdigit()) {
        color
    } else {
        "#6b7280"
    }
}

/// A person's or agent's avatar: people are round with initials; agents are square, in the agent's
/// colour, with a bolt mark; the system is a neutral gear.
pub struct Avatar<'a>(pub &'a PersonView);

impl Render for Avatar<'_> {
    fn render(&self) -> Markup {
        let p = self.0;
        let (class, label) = match p.kind {
            PersonKind::User => ("avatar avatar-user", "Person"),
            PersonKind::Agent => ("avatar avatar-agent", "Agent"),
            PersonKind::System => ("avatar avatar-system", "System"),
        };
        html! {
            span class=(class) style={ "--avatar:" (safe_color(&p.color)) }
                title={ (p.name) " (" (label) ")" } aria-hidden="true" {
                span.avatar-initials { (p.initials) }
                @if p.kind == PersonKind::Agent {
                    span.avatar-bolt {}
                }
            }
        }
    }
}

/// Avatar plus name, with an "agent" tag after agents' names.
pub struct PersonChip<'a>(pub &'a PersonView);

impl Render for PersonChip<'_> {
    fn render(&self) -> Markup {
        let p = self.0;
        html! {
            span.person {
                (Avatar(p))
                span.person-name { (p.name) }
                @if p.kind == PersonKind::Agent { span.tag-agent { "agent" } }
            }
        }
    }
}

/// The issue status as a coloured badge.
pub struct StatusBadge<'a>(pub &'a str);

impl Render for StatusBadge<'_> {
    fn render(&self) -> Markup {
        html! {
            span class={ "status status-" (status_class(self.0)) } {
                span.status-dot aria-hidden="true" {}
                (status_label(self.0))
            }
        }
    }
}

/// A priority as signal bars (or an exclamation mark for urgent), with an accessible label.
pub struct PriorityIcon<'a>(pub &'a str);

impl Render for PriorityIcon<'_> {
    fn render(&self) -> Markup {
        let (class, label, bars) = match self.0 {
            "urgent" => ("urgent", "Urgent", 0),
            "high" => ("high", "High priority", 3),
            "medium" => ("medium", "Medium priority", 2),
            "low" => ("low", "Low priority", 1),
            _ => ("none", "No priority", 0),
        };
        html! {
            span class={ "prio prio-" (class) } title=(label) role="img" aria-label=(label) {
                @if class == "urgent" {
                    "!"
                } @else {
                    @for i in 1..=3 {
                        span.bar.on[i <= bars] {}
                    }
                }
            }
        }
    }
}

/// The state of an issue's latest agent run as a pill (`running` pulses, `failed` is red).
pub struct RunPill<'a>(pub &'a str);

impl Render for RunPill<'_> {
    fn render(&self) -> Markup {
        const KNOWN: &[&str] = &[
            "queued",
            "claimed",
            "running",
            "stalled",
            "succeeded",
            "failed",
            "cancelled",
            "timed_out",
            "interrupted",
        ];
        let class = if KNOWN.contains(&self.0) {
            self.0
        } else {
            "other"
        };
        html! {
            span class={ "run run-" (class) } title="Latest agent run" {
                span.run-dot aria-hidden="true" {}
                (self.0.replace('_', " "))
            }
        }
    }
}

/// A timestamp as `<time datetime=…>` in UTC; `app.js` rewrites the text to the reader's local time.
pub struct Timestamp(pub DateTime<Utc>);

impl Render for Timestamp {
    fn render(&self) -> Markup {
        html! {
            time datetime=(self.0.to_rfc3339_opts(chrono::SecondsFormat::Secs, true))
                title=(self.0.format("%Y-%m-%d %H:%M:%S UTC")) {
                (self.0.format("%b %-d, %Y %H:%M UTC"))
            }
        }
    }
}

/// A label chip.
pub struct LabelChip<'a>(pub &'a str);

impl Render for LabelChip<'_> {
    fn render(&self) -> Markup {
        html! { span.label { (self.0) } }
    }
}
