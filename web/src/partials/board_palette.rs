//! The keyboard layer of every signed-in page: the command palette (Ctrl/Cmd-K) and the `?` overlay that
//! lists the shortcuts. Both are native `<dialog>`s (modal, Esc closes, focus comes back to where it was),
//! mounted once by the layout and driven by `app.js`; the palette reads its data from
//! `GET /w/{slug}/palette` when it opens.

use maud::{Markup, html};

use crate::views::Nav;

/// Every shortcut as (keys, what it does). The overlay lists exactly these and `app.js` implements
/// them; single keys do nothing while typing in a field.
pub const SHORTCUTS: &[(&[&str], &str)] = &[
    (&["Ctrl", "K"], "Open the command palette (⌘K on a Mac)"),
    (&["c"], "New issue"),
    (&["/"], "Search the board"),
    (&["g", "b"], "Go to the board"),
    (&["g", "a"], "Go to agents"),
    (&["g", "i"], "Go to the inbox"),
    (&["g", "s"], "Go to skills"),
    (&["g", "m"], "Go to members"),
    (&["g", "r"], "Go to runtimes"),
    (&["?"], "Show these shortcuts"),
    (&["Esc"], "Close a dialog, menu or palette"),
];

/// The palette and shortcut dialogs; `data-base` is the workspace URL the shortcuts navigate under.
pub fn mount(nav: &Nav) -> Markup {
    let base = format!("/w/{}", nav.workspace_slug);
    html! {
        dialog #palette.palette aria-label="Command palette" data-base=(base)
            data-url={ (base) "/palette" } {
            div.palette-search {
                label.visually-hidden for="palette-input" { "Command" }
                input #palette-input type="text" role="combobox" autocomplete="off" spellcheck="false"
                    aria-expanded="true" aria-controls="palette-list" aria-autocomplete="list"
                    placeholder="Type an issue key or title, a page, “assign”, “status”…";
            }
            ul #palette-list role="listbox" aria-label="Results" {}
            p.palette-foot {
                kbd { "↑" } kbd { "↓" } " move · " kbd { "Enter" } " run · " kbd { "Esc" } " close · "
                kbd { "?" } " all shortcuts"
            }
        }
        dialog #shortcuts.shortcuts aria-labelledby="shortcuts-title" {
            h2 #shortcuts-title { "Keyboard shortcuts" }
            table.shortcut-list {
                tbody {
                    @for (keys, what) in SHORTCUTS {
                        tr {
                            td {
                                @for (i, k) in keys.iter().enumerate() {
                                    @if i > 0 { span.key-then { @if keys[0] == "Ctrl" { "+" } @else { " then " } } }
                                    kbd { (k) }
                                }
                            }
                            td { (what) }
                        }
                    }
                }
            }
            p.hint { "Single-key shortcuts are ignored while you type in a field." }
            form method="dialog" { button.btn type="submit" { "Close" } }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::samples::nav;
    use crate::views::NavItem;

    #[test]
    fn overlay_lists_every_shortcut_and_palette_is_a_combobox_dialog() {
        let html = mount(&nav(NavItem::Board)).into_string();
        assert!(html.contains(
            r#"<dialog class="palette" id="palette" aria-label="Command palette" data-base="/w/acme" data-url="/w/acme/palette">"#
        ));
        assert!(
            html.contains(r#"role="combobox""#) && html.contains(r#"aria-controls="palette-list""#)
        );
        assert!(html.contains(r#"<ul id="palette-list" role="listbox""#));
        for (keys, what) in SHORTCUTS {
            assert!(html.contains(what), "{what}");
            for k in *keys {
                assert!(html.contains(&format!("<kbd>{k}</kbd>")), "{k}");
            }
        }
        assert!(html.contains(r#"<form method="dialog">"#));
        assert!(!html.contains("<script"), "no inline script");
    }
}
