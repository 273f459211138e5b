use super::*;
use crate::samples::{agent, user};
use crate::views::RuntimeView;

/// WCAG relative luminance of `#rrggbb`.
fn luminance(hex: &str) -> f64 {
    let channel = |i: usize| {
        let c = f64::from(u8::from_str_radix(&hex[i..i + 2], 16).unwrap()) / 255.0;
        if c <= 0.039_28 {
            c / 12.92
        } else {
            ((c + 0.055) / 1.055).powf(2.4)
        }
    };
    0.2126 * channel(1) + 0.7152 * channel(3) + 0.0722 * channel(5)
}

#[test]
fn initials_come_from_the_first_two_words() {
    assert_eq!(initials("claude-coder"), "CC");
    assert_eq!(initials("codex_coder"), "CC");
    assert_eq!(initials("Grace Hopper"), "GH");
    assert_eq!(initials("ada lovelace byron"), "AL");
    assert_eq!(initials("codex"), "CO");
    assert_eq!(initials("--x--"), "X");
    assert_eq!(initials(""), "?");
}

#[test]
fn every_avatar_colour_keeps_white_initials_readable() {
    for c in AVATAR_COLORS {
        let ratio = 1.05 / (luminance(c) + 0.05);
        assert!(ratio >= 4.5, "{c}: contrast {ratio:.2} with white");
        assert_eq!(safe_color(c), c);
    }
    assert_eq!(avatar_color("claude-coder"), avatar_color("Claude-Coder"));
    assert_eq!(avatar_color("x"), avatar_color("x"), "stable");
}

#[test]
fn look_alike_agents_get_different_colours_in_any_order() {
    // Both are "CC"; whatever their hashes, the workspace shows them in two colours.
    let names = [
        "claude-coder",
        "codex-coder",
        "claude-reviewer",
        "codex-cleaner",
    ];
    let colours = distinct_colors(&names);
    assert_eq!(colours.len(), 4);
    for (i, a) in names.iter().enumerate() {
        for (j, b) in names.iter().enumerate() {
            if i < j && initials(a) == initials(b) {
                assert_ne!(colours[i], colours[j], "{a} and {b}");
            }
        }
    }
    let reversed: Vec<&str> = names.iter().rev().copied().collect();
    let mut again = distinct_colors(&reversed);
    again.reverse();
    assert_eq!(colours, again, "independent of the listing order");
    // Without a look-alike, an agent keeps the colour of its name.
    assert_eq!(distinct_colors(&["solo"]), vec![avatar_color("solo")]);
    // Many look-alikes: still one colour each while the palette lasts.
    let many: Vec<String> = (0..AVATAR_COLORS.len())
        .map(|i| format!("c{i}-c"))
        .collect();
    let many: Vec<&str> = many.iter().map(String::as_str).collect();
    let mut picked = distinct_colors(&many);
    picked.sort_unstable();
    picked.dedup();
    assert_eq!(picked.len(), AVATAR_COLORS.len());
}

#[test]
fn side_by_side_colours_keep_each_name_its_own_and_never_repeat() {
    // Each keeps the colour it has elsewhere (its avatar's), whatever else is shown beside it.
    let own = |n: &str| avatar_color(n).to_owned();
    let pair = side_by_side_colors(&["alpha", "beta"], &[own("alpha"), "#123456".into()]);
    assert_eq!(pair, vec![own("alpha"), "#123456".to_owned()]);
    let alone = side_by_side_colors(&["alpha"], &[own("alpha")]);
    assert_eq!(
        alone[0], pair[0],
        "the same colour alone and beside another"
    );
    // Two that would look alike are parted, the same way in any order.
    let same = "#b91c1c".to_owned();
    let parted = side_by_side_colors(&["one", "two"], &[same.clone(), same.clone()]);
    assert_eq!(parted[0], same, "the first in name order keeps it");
    assert_ne!(parted[0], parted[1]);
    let mut reversed = side_by_side_colors(&["two", "one"], &[same.clone(), same]);
    reversed.reverse();
    assert_eq!(parted, reversed, "independent of the listing order");
    // Names without a preferred colour get their name's; as many as the palette has, all different.
    let names: Vec<String> = (0..AVATAR_COLORS.len()).map(|i| format!("m{i}")).collect();
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    let mut picked = side_by_side_colors(&names, &[]);
    picked.sort_unstable();
    picked.dedup();
    assert_eq!(picked.len(), AVATAR_COLORS.len());
}

#[test]
fn agent_avatar_carries_its_runtime_badge() {
    let mut codex = agent("codex-coder", "#0e7490");
    codex.runtime = Some(RuntimeView {
        name: "codex".into(),
        label: "Codex".into(),
    });
    let html = Avatar(&codex).render().into_string();
    assert!(html.contains(r#"<span class="avatar-group" title="codex-coder (Agent, Codex)""#));
    assert!(html.contains(r#"class="avatar avatar-agent" style="--avatar:#0e7490""#));
    assert!(html.contains(">CC<"));
    assert!(html.contains(r#"<span class="avatar-rt rt-codex">codex</span>"#));

    let claude = agent("claude-coder", "#b91c1c");
    let other = Avatar(&claude).render().into_string();
    assert!(other.contains(">CC<") && other.contains("rt-claude"));
    assert_ne!(html, other);

    // People have no badge; an unknown runtime never reaches a class name.
    let grace = Avatar(&user("Grace Hopper", "#1d4ed8"))
        .render()
        .into_string();
    assert!(!grace.contains("avatar-rt") && grace.contains(r#"class="avatar avatar-user""#));
    codex.runtime = Some(RuntimeView {
        name: "x\" onmouseover=\"y".into(),
        label: "X".into(),
    });
    let odd = Avatar(&codex).render().into_string();
    assert!(!odd.contains("avatar-rt") && !odd.contains("onmouseover"));
}
