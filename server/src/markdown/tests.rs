use super::{MentionLink, to_safe_html, to_safe_html_with_mentions, toggle_task};

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
    assert!(!hostile.contains("<img"), "{hostile}");
    assert!(to_safe_html("[a](https://e.com)").contains("rel=\"noopener noreferrer nofollow\""));
}

#[test]
fn remote_images_become_links() {
    assert_eq!(
        to_safe_html("![the chart](https://evil.example/t.png?u=1&v=2)").trim(),
        "<p><a href=\"https://evil.example/t.png?u=1&amp;v=2\" rel=\"noopener noreferrer nofollow\">the chart</a></p>"
    );
    assert_eq!(
        to_safe_html("<img src=\"https://evil.example/p.gif\" width=1 height=1>").trim(),
        "<a href=\"https://evil.example/p.gif\" rel=\"noopener noreferrer nofollow\">https://evil.example/p.gif</a>"
    );
    // Protocol-relative and relative sources are fetched too: links as well.
    for src in ["//evil.example/p.gif", "/api/v1/me", "x.png"] {
        let html = to_safe_html(&format!("![p]({src})"));
        assert_eq!(
            html.trim(),
            format!("<p><a href=\"{src}\" rel=\"noopener noreferrer nofollow\">p</a></p>"),
        );
    }
    // Inside a link (a badge), the image becomes its text; the link stays.
    let badge = to_safe_html("[![build](https://ci.example/b.svg)](https://ci.example/)");
    assert_eq!(
        badge.trim(),
        "<p><a href=\"https://ci.example/\" rel=\"noopener noreferrer nofollow\">build</a></p>"
    );
    // Alt text is text, whatever it holds.
    let alt =
        to_safe_html("<img src=\"https://e.example/a\" alt='<script>x</script>\" onclick=\"y'>");
    assert_eq!(
        alt.trim(),
        "<a href=\"https://e.example/a\" rel=\"noopener noreferrer nofollow\">&lt;script&gt;x&lt;/script&gt;\" onclick=\"y</a>"
    );
    // An image tag written inside an attribute value is text, not an image.
    let nested = to_safe_html(
        "<a href=\"https://e.example/\" title='<img src=\"https://evil.example/t\">'>x</a>",
    );
    assert!(!nested.contains("<img src"), "{nested}");
    assert!(nested.contains(">x</a>"), "{nested}");
}

#[test]
fn inline_raster_images_stay_and_other_data_urls_go() {
    let png = "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4nGNgYGD4DwABBAEAwS2OUAAAAABJRU5ErkJggg==";
    assert_eq!(
        to_safe_html(&format!("![dot]({png})")).trim(),
        format!("<p><img src=\"{png}\" alt=\"dot\"></p>")
    );
    let svg = to_safe_html("<img src=\"data:image/svg+xml;base64,PHN2Zz48L3N2Zz4=\" alt=\"logo\">");
    assert_eq!(svg.trim(), "logo");
    let page = to_safe_html("[open](data:text/html;base64,PHNjcmlwdD4=)");
    assert!(!page.contains("data:"), "{page}");
}

/// The `<input …>` tags of `html`, each with its attributes sorted (the sanitiser's order varies).
fn inputs(html: &str) -> Vec<Vec<&str>> {
    html.match_indices("<input")
        .map(|(at, _)| {
            let tag = &html[at + "<input".len()..];
            let mut attrs: Vec<&str> = tag[..tag.find('>').unwrap()].split_whitespace().collect();
            attrs.sort_unstable();
            attrs
        })
        .collect()
}

#[test]
fn task_lists_render_as_numbered_disabled_checkboxes() {
    let html = to_safe_html("- [ ] write the test\n- [x] see it fail\n- plain item");
    assert_eq!(
        inputs(&html),
        [
            vec![r#"data-task="0""#, r#"disabled="""#, r#"type="checkbox""#],
            vec![
                r#"checked="""#,
                r#"data-task="1""#,
                r#"disabled="""#,
                r#"type="checkbox""#
            ],
        ],
        "{html}"
    );
    assert!(
        html.find("checked").unwrap() > html.find("write the test").unwrap(),
        "the ticked box is the second item's: {html}"
    );
    assert!(html.contains("<li>plain item</li>"), "{html}");
}

#[test]
fn a_task_box_ticks_and_clears_by_its_number_and_nothing_else_changes() {
    let md = "Steps:\n\n- [ ] one `[ ]`\n- [X] two\n  * [ ] nested\n\n```\n- [ ] in code\n```\n1. [ ] three\n";
    let ticked = toggle_task(md, 0, true).unwrap();
    assert_eq!(ticked, md.replacen("- [ ] one", "- [x] one", 1));
    assert_eq!(
        toggle_task(md, 1, false).unwrap(),
        md.replacen("[X] two", "[ ] two", 1)
    );
    assert_eq!(
        toggle_task(md, 2, true).unwrap(),
        md.replacen("* [ ] nested", "* [x] nested", 1)
    );
    // The box in a code block is not one; the ordered list's is the fourth.
    assert_eq!(
        toggle_task(md, 3, true).unwrap(),
        md.replacen("1. [ ] three", "1. [x] three", 1)
    );
    assert_eq!(toggle_task(md, 4, true), None);
    assert_eq!(toggle_task("no boxes", 0, true), None);
    // The numbers the page shows are the ones it takes.
    let html = to_safe_html(md);
    assert_eq!(inputs(&html).len(), 4, "{html}");
    assert!(html.contains(r#"data-task="3""#), "{html}");
}

#[test]
fn an_author_cannot_forge_a_numbered_box() {
    // Raw HTML that names the attribute is shown as text: no element of it, so no box.
    let html = to_safe_html(r#"<input type="checkbox" data-task="0"> and <p data-task="1">x</p>"#);
    assert!(inputs(&html).is_empty(), "{html}");
    assert!(!html.contains("<p data-task"), "{html}");
    let html = to_safe_html("- [ ] real\n\n<span data-task=0>fake</span>");
    assert_eq!(
        inputs(&html),
        [vec![
            r#"data-task="0""#,
            r#"disabled="""#,
            r#"type="checkbox""#
        ]],
        "{html}"
    );
    assert!(!html.contains("<span data-task"), "{html}");
}

#[test]
fn hand_written_inputs_become_disabled_checkboxes() {
    let html = to_safe_html(
        r#"<input type="text" name="password" value="x" onfocus="alert(1)"> <input type="submit" formaction="https://evil.example/">"#,
    );
    let checkbox = vec![r#"disabled="""#, r#"type="checkbox""#];
    assert_eq!(inputs(&html), [checkbox.clone(), checkbox], "{html}");
}

/// `coder` (any case) is an agent, `ada` a person; anything else is unknown.
fn with_mentions(md: &str) -> String {
    to_safe_html_with_mentions(md, &|name| match name.to_lowercase().as_str() {
        "coder" => Some(MentionLink::Agent {
            href: "/w/acme/agents/coder".to_owned(),
        }),
        "ada" => Some(MentionLink::Person {
            name: "Ada \"the\" Lovelace".to_owned(),
        }),
        _ => None,
    })
    .trim()
    .to_owned()
}

const CODER: &str = r#"<a class="mention mention-agent" href="/w/acme/agents/coder" rel="noopener noreferrer nofollow">"#;

#[test]
fn known_mentions_link_to_agents_and_name_people() {
    assert_eq!(
        with_mentions("thanks @coder, ask @Ada."),
        format!(
            r#"<p>thanks {CODER}@coder</a>, ask <span class="mention mention-person" title="Ada &quot;the&quot; Lovelace">@Ada</span>.</p>"#
        )
    );
    assert_eq!(
        with_mentions("**@CODER.** @nobody"),
        format!("<p><strong>{CODER}@CODER</a>.</strong> @nobody</p>"),
        "case-insensitive, the period is the sentence's, an unknown name is text"
    );
}

#[test]
fn mentions_are_not_marked_in_code_links_or_addresses() {
    let text =
        "`@coder` and [ask @coder](https://e.com) and coder@acme.test\n\n    @coder in a block\n";
    let html = with_mentions(text);
    assert!(!html.contains("mention"), "{html}");
    assert!(html.contains("<code>@coder</code>"), "{html}");
    let fenced = with_mentions("```\n@coder\n```\n\n<b>@coder</b>");
    assert_eq!(fenced.matches("class=\"mention").count(), 1, "{fenced}");
}

#[test]
fn authors_cannot_forge_other_classes_or_scripts_through_mentions() {
    let html = with_mentions(
        r#"<a class="mention evil" href="javascript:x">@coder</a> <span class="x mention-person">hi</span>"#,
    );
    assert!(
        !html.contains("evil") && !html.contains("javascript"),
        "{html}"
    );
    assert!(
        html.contains(r#"<span class="mention-person">hi</span>"#),
        "{html}"
    );
    assert_eq!(
        to_safe_html("@coder").trim(),
        "<p>@coder</p>",
        "no names known"
    );
}
