//! Markdown to safe HTML: agent- and user-written text is hostile input, so the rendered HTML is passed
//! through `ammonia` (an allow-list sanitiser) before any page may emit it unescaped.

use pulldown_cmark::{Options, Parser, html};

/// Renders markdown (GitHub-style tables, strikethrough, task lists) and sanitises the result.
pub fn to_safe_html(markdown: &str) -> String {
    let options =
        Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH | Options::ENABLE_TASKLISTS;
    let mut raw = String::with_capacity(markdown.len() * 2);
    html::push_html(&mut raw, Parser::new_ext(markdown, options));
    ammonia::Builder::default()
        .link_rel(Some("noopener noreferrer nofollow"))
        .clean(&raw)
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::to_safe_html;

    #[test]
    fn renders_markdown_and_strips_scripts() {
        assert_eq!(
            to_safe_html("**bold** `code`").trim(),
            "<p><strong>bold</strong> <code>code</code></p>"
        );
        let hostile = to_safe_html(
            "<script>alert(1)</script>\n\n<img src=x onerror=alert(2)>\n\n[x](javascript:alert(3))",
        );
        assert!(
            !hostile.contains("<script") && !hostile.contains("onerror"),
            "{hostile}"
        );
        assert!(!hostile.contains("href=\"javascript:"), "{hostile}");
        assert!(
            hostile.contains("<img src=\"x\">"),
            "harmless HTML stays: {hostile}"
        );
        assert!(
            to_safe_html("[a](https://e.com)").contains("rel=\"noopener noreferrer nofollow\"")
        );
    }
}
