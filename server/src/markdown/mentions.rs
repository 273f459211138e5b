//! The `@name` pass of rendering: in text nodes only (never in code spans or blocks, links, image alt
//! text or raw HTML), a mention the workspace knows becomes a link to the agent's page, or a styled
//! span for a person; unknown names stay plain text. The grammar is `domain::mention_spans`'s.

use pulldown_cmark::{CowStr, Event, Tag, TagEnd, TextMergeStream};

use crate::domain::mention_spans;

/// What a known `@name` renders as.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MentionLink {
    /// An agent: a link to its page.
    Agent { href: String },
    /// A person: a span titled with their name.
    Person { name: String },
}

/// Rewrites the text events of `events`, marking the mentions `resolve` knows.
pub(super) fn mark<'a>(
    events: impl Iterator<Item = Event<'a>>,
    resolve: &dyn Fn(&str) -> Option<MentionLink>,
) -> Vec<Event<'a>> {
    let mut out = Vec::new();
    // Inside a code block, a link or an image: text there is left alone.
    let mut opaque = 0usize;
    for event in TextMergeStream::new(events) {
        match &event {
            Event::Start(Tag::CodeBlock(_) | Tag::Link { .. } | Tag::Image { .. }) => opaque += 1,
            Event::End(TagEnd::CodeBlock | TagEnd::Link | TagEnd::Image) => {
                opaque = opaque.saturating_sub(1);
            }
            Event::Text(text) if opaque == 0 => {
                split(text, resolve, &mut out);
                continue;
            }
            _ => {}
        }
        out.push(event);
    }
    out
}

/// Pushes `text` as text events around the markup of each known mention.
fn split<'a>(
    text: &CowStr<'a>,
    resolve: &dyn Fn(&str) -> Option<MentionLink>,
    out: &mut Vec<Event<'a>>,
) {
    let mut at = 0;
    for (span, name) in mention_spans(text) {
        let Some(link) = resolve(name) else { continue };
        if span.start > at {
            out.push(Event::Text(text[at..span.start].to_owned().into()));
        }
        let open = match link {
            MentionLink::Agent { href } => {
                format!(
                    r#"<a class="mention mention-agent" href="{}">"#,
                    attr(&href)
                )
            }
            MentionLink::Person { name } => {
                format!(
                    r#"<span class="mention mention-person" title="{}">"#,
                    attr(&name)
                )
            }
        };
        let close = if open.starts_with("<a") {
            "</a>"
        } else {
            "</span>"
        };
        out.push(Event::InlineHtml(open.into()));
        out.push(Event::Text(text[span.clone()].to_owned().into()));
        out.push(Event::InlineHtml(close.into()));
        at = span.end;
    }
    if at == 0 {
        out.push(Event::Text(text.clone()));
    } else if at < text.len() {
        out.push(Event::Text(text[at..].to_owned().into()));
    }
}

/// `value` escaped for a double-quoted attribute.
fn attr(value: &str) -> String {
    value
        .replace('&', "&amp;")
        .replace('"', "&quot;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}
