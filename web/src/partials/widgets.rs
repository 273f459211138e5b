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

/// Avatar backgrounds, in hue order. White initials have a contrast ratio of at least 4.5:1 (WCAG AA) on
/// each, in light and dark mode alike, since the avatar draws its own background.
pub const AVATAR_COLORS: [&str; 14] = [
    "#b91c1c", "#c2410c", "#a16207", "#4d7c0f", "#15803d", "#047857", "#0f766e", "#0e7490",
    "#0369a1", "#1d4ed8", "#4338ca", "#6d28d9", "#a21caf", "#be185d",
];

/// How far [`distinct_colors`] jumps in [`AVATAR_COLORS`] to part two look-alikes: coprime with its
/// length (so every colour is reached) and about a third of the hue circle away.
const COLOR_STEP: usize = 5;

/// Up to two letters for an avatar: the first letters of the first two words of `name` (words split on
/// spaces, `-`, `_` and `.`), or the first two letters of a one-word name; upper case.
/// `claude-coder` → `CC`, `Grace Hopper` → `GH`, `codex` → `CO`.
pub fn initials(name: &str) -> String {
    let words: Vec<&str> = name
        .split(|c: char| c.is_whitespace() || matches!(c, '-' | '_' | '.'))
        .filter(|w| !w.is_empty())
        .collect();
    let letters: String = match words.as_slice() {
        [] => "?".into(),
        [one] => one.chars().take(2).collect(),
        many => many
            .iter()
            .filter_map(|w| w.chars().next())
            .take(2)
            .collect(),
    };
    letters.to_uppercase()
}

/// FNV-1a over the lower-cased name: stable across builds, platforms and restarts (unlike `std`'s
/// randomly seeded hasher), so a name keeps its colour.
fn name_hash(name: &str) -> u32 {
    name.to_lowercase().bytes().fold(0x811c_9dc5_u32, |h, b| {
        (h ^ u32::from(b)).wrapping_mul(0x0100_0193)
    })
}

/// The avatar colour of a name: one of [`AVATAR_COLORS`], picked by a stable hash of the name.
pub fn avatar_color(name: &str) -> &'static str {
    AVATAR_COLORS[name_hash(name) as usize % AVATAR_COLORS.len()]
}

/// The avatar colours of a workspace's agents, in the order of `names`: each its [`avatar_color`],
/// except that agents whose [`initials`] are the same get different colours (while the palette lasts),
/// so `claude-coder` and `codex-coder` (both `CC`) never look alike. Names are settled in sorted order,
/// so the result does not depend on the order they are listed in.
pub fn distinct_colors(names: &[&str]) -> Vec<&'static str> {
    let mut order: Vec<usize> = (0..names.len()).collect();
    order.sort_by_key(|&i| (names[i].to_lowercase(), names[i]));
    let mut taken: Vec<(String, usize)> = Vec::new();
    let mut out = vec![AVATAR_COLORS[0]; names.len()];
    for i in order {
        let letters = initials(names[i]);
        let start = name_hash(names[i]) as usize % AVATAR_COLORS.len();
        let pick = (0..AVATAR_COLORS.len())
            .map(|n| (start + n * COLOR_STEP) % AVATAR_COLORS.len())
            .find(|c| !taken.iter().any(|(l, t)| *l == letters && t == c))
            .unwrap_or(start);
        taken.push((letters, pick));
        out[i] = AVATAR_COLORS[pick];
    }
    out
}

/// Colours for things shown side by side (chart series, ensemble candidates), in the order of `names`:
/// each its `preferred` colour (an agent's avatar colour, else [`avatar_color`] of its name), unless a name
/// before it in sorted order took that colour; then the next free colour of [`AVATAR_COLORS`] from its own.
/// So a name keeps the colour it has everywhere else (its avatar's), whatever else is shown or in which
/// order, and no two look alike while the palette lasts.
pub fn side_by_side_colors(names: &[&str], preferred: &[String]) -> Vec<String> {
    let mut order: Vec<usize> = (0..names.len()).collect();
    order.sort_by_key(|&i| (names[i].to_lowercase(), names[i]));
    let mut out = vec![String::new(); names.len()];
    let mut taken: Vec<String> = Vec::new();
    for i in order {
        let own = preferred
            .get(i)
            .map_or_else(|| avatar_color(names[i]).to_owned(), Clone::clone);
        let color = if taken.iter().any(|t| t.eq_ignore_ascii_case(&own)) {
            let start = name_hash(names[i]) as usize % AVATAR_COLORS.len();
            (0..AVATAR_COLORS.len())
                .map(|n| AVATAR_COLORS[(start + n * COLOR_STEP) % AVATAR_COLORS.len()])
                .find(|c| !taken.iter().any(|t| t.eq_ignore_ascii_case(c)))
                .map_or(own, str::to_owned)
        } else {
            own
        };
        taken.push(color.clone());
        out[i] = color;
    }
    out
}

/// Whether a runtime's name may become a CSS class: lowercase letters only, so a malformed name never
/// reaches the markup as anything but text.
fn class_safe(name: &str) -> bool {
    !name.is_empty() && name.bytes().all(|b| b.is_ascii_lowercase())
}

/// The one avatar of a person or agent, used on cards, the issue and run pages, the agents list and the
/// command palette: people are round, agents square, both with initials on their colour; an agent
/// carries its runtime as a badge on the corner (so `CC` on claude and `CC` on codex differ twice over).
pub struct Avatar<'a>(pub &'a PersonView);

impl Render for Avatar<'_> {
    fn render(&self) -> Markup {
        let p = self.0;
        let (class, label) = match p.kind {
            PersonKind::User => ("avatar avatar-user", "Person"),
            PersonKind::Agent => ("avatar avatar-agent", "Agent"),
            PersonKind::System => ("avatar avatar-system", "System"),
        };
        let runtime = p.runtime.as_ref().filter(|r| class_safe(&r.name));
        let title = match runtime {
            Some(rt) => format!("{} ({label}, {})", p.name, rt.label),
            None => format!("{} ({label})", p.name),
        };
        let face = |title: Option<&str>| {
            html! {
                span class=(class) style={ "--avatar:" (safe_color(&p.color)) } title=[title]
                    aria-hidden=[title.map(|_| "true")] {
                    span.avatar-initials { (p.initials) }
                }
            }
        };
        html! {
            @match runtime {
                Some(rt) => span.avatar-group title=(title) aria-hidden="true" {
                    (face(None))
                    span class={ "avatar-rt rt-" (rt.name) } { (rt.name) }
                },
                None => (face(Some(&title))),
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

#[cfg(test)]
mod tests;
