//! Markdown to safe HTML: agent- and user-written text is hostile input, so the rendered HTML is passed
//! through `ammonia` (an allow-list sanitiser) before any page may emit it unescaped.
//!
//! Images: a viewer's browser must not fetch what the text's author chose (a tracking pixel tells them
//! who read the issue, and when). Every image whose source is not an inline raster `data:` image becomes
//! a plain link to it (its alt text, else its address, as the link text); a second sanitiser pass
//! checks the result and drops any image source that is still not inline, so a mistake in the rewrite
//! can only cost the picture, never load it.
//!
//! Mentions: [`to_safe_html_with_mentions`] marks the `@name`s a workspace knows (see `mentions`).

mod mentions;

use std::sync::LazyLock;

pub use mentions::MentionLink;
use pulldown_cmark::{Event, Options, Parser, html};

/// The `rel` of every link in rendered text.
const LINK_REL: &str = "noopener noreferrer nofollow";

/// Inline images kept as images: raster formats only (no SVG), base64-encoded.
const INLINE_IMAGES: [&str; 4] = [
    "data:image/png;base64,",
    "data:image/jpeg;base64,",
    "data:image/gif;base64,",
    "data:image/webp;base64,",
];

/// The first pass: the usual allow-list, plus `data:` kept on image sources only.
static SANITISER: LazyLock<ammonia::Builder<'static>> = LazyLock::new(|| sanitiser(false));
/// The second pass: as the first, and an image source that is not inline is dropped.
static CHECK: LazyLock<ammonia::Builder<'static>> = LazyLock::new(|| sanitiser(true));

fn sanitiser(inline_images_only: bool) -> ammonia::Builder<'static> {
    let mut b = ammonia::Builder::default();
    // Task lists (`- [ ]`, `- [x]`) render as `<input type="checkbox" disabled>`: an `input` is kept only
    // as that, whatever its author wrote, so no text field or button can be slipped into an issue.
    b.add_tags(["input"])
        .add_tag_attributes("input", ["checked", "data-task"])
        .set_tag_attribute_value("input", "type", "checkbox")
        .set_tag_attribute_value("input", "disabled", "");
    // Mentions (see `mentions`): the only classes kept.
    b.add_allowed_classes("a", ["mention", "mention-agent"])
        .add_allowed_classes("span", ["mention", "mention-person"]);
    b.link_rel(Some(LINK_REL))
        .add_url_schemes(["data"])
        .attribute_filter(move |element, attribute, value| {
            let is_data = value
                .trim_start()
                .get(..5)
                .is_some_and(|p| p.eq_ignore_ascii_case("data:"));
            let image_src = element == "img" && attribute == "src";
            let keep = if attribute == "data-task" {
                value.bytes().all(|b| b.is_ascii_digit()) && !value.is_empty()
            } else if image_src {
                is_inline_image(value) || !(is_data || inline_images_only)
            } else {
                !(is_data && matches!(attribute, "href" | "src"))
            };
            keep.then(|| value.into())
        });
    b
}

fn is_inline_image(src: &str) -> bool {
    let src = src.trim();
    INLINE_IMAGES.iter().any(|p| {
        src.get(..p.len())
            .is_some_and(|head| head.eq_ignore_ascii_case(p))
            && src[p.len()..].bytes().all(|c| {
                c.is_ascii_alphanumeric() || matches!(c, b'+' | b'/' | b'=' | b'\n' | b'\r')
            })
    })
}

/// The markdown dialect: GitHub-style tables, strikethrough and task lists.
fn options() -> Options {
    Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH | Options::ENABLE_TASKLISTS
}

/// Numbers the task-list boxes in source order (`data-task="N"`, the `N` [`toggle_task`] takes), so a page
/// can tick them. Raw HTML that names `data-task` itself is shown as text: an author cannot forge a box
/// that would tick another.
fn number_tasks<'a>(events: impl Iterator<Item = Event<'a>>) -> impl Iterator<Item = Event<'a>> {
    let mut next = 0usize;
    events.map(move |event| match event {
        Event::TaskListMarker(checked) => {
            let n = next;
            next += 1;
            let checked = if checked { " checked" } else { "" };
            Event::InlineHtml(
                format!(r#"<input type="checkbox" disabled data-task="{n}"{checked}>"#).into(),
            )
        }
        Event::Html(raw) | Event::InlineHtml(raw)
            if raw.to_ascii_lowercase().contains("data-task") =>
        {
            Event::Text(raw)
        }
        other => other,
    })
}

/// `markdown` with its task-list box number `index` (in source order, as [`to_safe_html`] numbers them)
/// ticked or cleared; `None` when it has no such box. Only the box's character changes.
pub fn toggle_task(markdown: &str, index: usize, checked: bool) -> Option<String> {
    let (_, range) = Parser::new_ext(markdown, options())
        .into_offset_iter()
        .filter(|(e, _)| matches!(e, Event::TaskListMarker(_)))
        .nth(index)?;
    let open = range.start + markdown.get(range)?.find('[')?;
    let mark = open + 1;
    markdown.get(mark..=mark)?;
    let mut out = String::with_capacity(markdown.len());
    out.push_str(&markdown[..mark]);
    out.push(if checked { 'x' } else { ' ' });
    out.push_str(&markdown[mark + 1..]);
    Some(out)
}

/// Renders markdown (GitHub-style tables, strikethrough, task lists) and sanitises the result.
pub fn to_safe_html(markdown: &str) -> String {
    to_safe_html_with_mentions(markdown, &|_| None)
}

/// Like [`to_safe_html`], with each `@name` that `resolve` knows marked as a mention: a link to an
/// agent's page, a titled span for a person.
pub fn to_safe_html_with_mentions(
    markdown: &str,
    resolve: &dyn Fn(&str) -> Option<MentionLink>,
) -> String {
    let mut raw = String::with_capacity(markdown.len() * 2);
    let events = mentions::mark(number_tasks(Parser::new_ext(markdown, options())), resolve);
    html::push_html(&mut raw, events.into_iter());
    let clean = SANITISER.clean(&raw).to_string();
    if !clean.contains("<img") {
        return clean;
    }
    CHECK.clean(&images_to_links(&clean)).to_string()
}

/// Rewrites each `<img>` of sanitised HTML that is not an inline image into a link (or, inside a link,
/// into its text). Relies on the serialiser's canonical form: outside tags `<` only opens a tag, and
/// attribute values are double-quoted with `"` escaped.
fn images_to_links(html: &str) -> String {
    let mut out = String::with_capacity(html.len());
    let mut rest = html;
    let mut in_link = 0usize;
    while let Some(lt) = rest.find('<') {
        out.push_str(&rest[..lt]);
        let tag_len = tag_length(&rest[lt..]);
        let tag = &rest[lt..lt + tag_len];
        rest = &rest[lt + tag_len..];
        let name = tag_name(tag);
        match name {
            "a" => in_link += 1,
            "/a" => in_link = in_link.saturating_sub(1),
            _ => {}
        }
        if name != "img" {
            out.push_str(tag);
            continue;
        }
        let attrs = attributes(tag);
        let get = |n: &str| attrs.iter().find(|(k, _)| *k == n).map(|(_, v)| *v);
        let src = get("src").unwrap_or("");
        if is_inline_image(&unescape_quote(src)) {
            out.push_str(tag);
            continue;
        }
        let text = match get("alt").filter(|a| !a.trim().is_empty()) {
            Some(alt) => alt,
            None => src,
        };
        let text = text.replace('<', "&lt;").replace('>', "&gt;");
        if src.is_empty() || in_link > 0 {
            out.push_str(&text);
        } else {
            out.push_str(&format!("<a href=\"{src}\">{text}</a>"));
        }
    }
    out.push_str(rest);
    out
}

/// The length of the tag at the start of `s` (up to its `>` outside quotes), or all of `s`.
fn tag_length(s: &str) -> usize {
    let mut quoted = false;
    for (i, c) in s.char_indices() {
        match c {
            '"' => quoted = !quoted,
            '>' if !quoted => return i + 1,
            _ => {}
        }
    }
    s.len()
}

/// `img`, `a`, `/a`, … of a tag.
fn tag_name(tag: &str) -> &str {
    let inner = tag.trim_start_matches('<');
    let end = inner
        .find(|c: char| c.is_whitespace() || c == '>')
        .unwrap_or(inner.len());
    &inner[..end]
}

/// The `name="value"` pairs of a tag, values as they are written (still escaped).
fn attributes(tag: &str) -> Vec<(&str, &str)> {
    let mut out = Vec::new();
    let mut rest = tag
        .trim_start_matches('<')
        .trim_end_matches('>')
        .trim_end_matches('/');
    rest = rest.find(char::is_whitespace).map_or("", |i| &rest[i..]);
    loop {
        rest = rest.trim_start();
        let Some(eq) = rest.find('=') else { break };
        let name = rest[..eq].trim();
        let after = &rest[eq + 1..];
        let Some(body) = after.strip_prefix('"') else {
            break;
        };
        let Some(close) = body.find('"') else { break };
        out.push((name, &body[..close]));
        rest = &body[close + 1..];
    }
    out
}

fn unescape_quote(value: &str) -> String {
    value.replace("&quot;", "\"").replace("&amp;", "&")
}

#[cfg(test)]
mod tests;
