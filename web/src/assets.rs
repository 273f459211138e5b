//! Static assets embedded in the binary: vendored htmx 2 and its WebSocket extension, plus our own CSS
//! and JavaScript. They are served under `/assets/{VERSION}/{name}`; `VERSION` is a hash of every file's
//! bytes computed at compile time, so the server can send `Cache-Control: immutable` and a changed file
//! always gets a new URL.
//!
//! Our CSS and JavaScript are written in parts, one per thing they style or drive (`assets/css/*.css`,
//! `assets/js/*.js`), and joined at compile time into the one `app.css` and the one `app.js` that every
//! page loads. The parts' order is the cascade's (a later CSS rule wins a tie) and the order the scripts'
//! listeners run in, so a new part goes where its rules and listeners belong, not just at the end.

/// One embedded file and the `Content-Type` to serve it with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Asset {
    /// The file's bytes, as compiled in.
    pub bytes: &'static [u8],
    /// The `Content-Type` header value.
    pub content_type: &'static str,
}

const JS: &str = "text/javascript; charset=utf-8";

/// Declares `$parts`, the part names in order, and `$joined`, those files of `assets/$dir/` concatenated.
macro_rules! joined {
    ($joined:ident, $parts:ident, $dir:literal, $ext:literal, [$($part:literal),+ $(,)?]) => {
        /// The part names, in order (the test that every file is listed reads them).
        #[cfg(test)]
        const $parts: &[&str] = &[$($part),+];
        const $joined: &str =
            concat!($(include_str!(concat!("../assets/", $dir, "/", $part, ".", $ext))),+);
    };
}

joined!(
    APP_CSS,
    CSS_PARTS,
    "css",
    "css",
    [
        "base", // custom properties (light, dark, the theme switch's pick), element defaults, utilities
        "layout", // top bar, phone menu, main column, page heads
        "forms", // buttons, fields, alerts
        "widgets", // panels, tables, pills, status, priority, run state, avatars, banners, toasts
        "board", // columns, cards, card menu, new-issue popover
        "palette", // command palette, shortcut overlay
        "issue", // issue page, prose, comments, in-place editing
        "agents", // agents list, agent form, attached skills
        "tokens", // secrets shown once, inline create forms
        "auth", // signed-out pages, error pages, account page
        "runtimes", // Runtimes and Runners pages
        "run",  // run page, log, diff, failure texts, run origin
        "inbox", // inbox page
        "mentions", // @name and its autocompletion
        "thread", // the conversation timeline
        "ensemble", // ensemble compare page
        "usage", // usage page, an agent's spend
        "ensembles", // Ensembles page: the list of teams and their form
        "pulls", // pull requests: the panel, the card's badge, Settings' Forge section
        "plan", // planning: the Plan panel, the card's sub-issue and blocker marks
        "projects", // Projects page and one project's page
        "list", // the issue list: its table, groups, batch bar, view toggle and saved views
    ]
);

joined!(
    APP_JS,
    JS_PARTS,
    "js",
    "js",
    [
        "core",     // CSRF, toasts, `window.Muster`, copy, confirm, Ctrl+Enter, local times
        "board",    // drag and drop, card menu, instant filters
        "run",      // elapsed clocks, the live log's cursor and tail
        "issue",    // task-list boxes, in-place forms answered 422
        "palette",  // command palette, keyboard shortcuts
        "settings", // the Forge section's API URL placeholder per kind
        "list",     // the issue list's "select all on this page" and selected count
    ]
);

/// Every asset by name. Names are flat (no directories), so a request path can be matched exactly.
const FILES: &[(&str, Asset)] = &[
    (
        "htmx.min.js",
        Asset {
            bytes: include_bytes!("../assets/htmx.min.js"),
            content_type: JS,
        },
    ),
    (
        "ws.js",
        Asset {
            bytes: include_bytes!("../assets/ws.js"),
            content_type: JS,
        },
    ),
    (
        "app.js",
        Asset {
            bytes: APP_JS.as_bytes(),
            content_type: JS,
        },
    ),
    (
        "mentions.js",
        Asset {
            bytes: include_bytes!("../assets/mentions.js"),
            content_type: JS,
        },
    ),
    (
        "theme.js",
        Asset {
            bytes: include_bytes!("../assets/theme.js"),
            content_type: JS,
        },
    ),
    (
        "app.css",
        Asset {
            bytes: APP_CSS.as_bytes(),
            content_type: "text/css; charset=utf-8",
        },
    ),
    (
        "favicon.svg",
        Asset {
            bytes: include_bytes!("../assets/favicon.svg"),
            content_type: "image/svg+xml",
        },
    ),
];

/// FNV-1a over every asset's name and bytes: cheap, `const`, and good enough to bust caches.
const fn content_hash() -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    let mut f = 0;
    while f < FILES.len() {
        let (name, asset) = FILES[f];
        let parts: [&[u8]; 2] = [name.as_bytes(), asset.bytes];
        let mut p = 0;
        while p < parts.len() {
            let mut i = 0;
            while i < parts[p].len() {
                hash ^= parts[p][i] as u64;
                hash = hash.wrapping_mul(0x0100_0000_01b3);
                i += 1;
            }
            p += 1;
        }
        f += 1;
    }
    hash
}

const fn hex12(hash: u64) -> [u8; 12] {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = [0u8; 12];
    let mut i = 0;
    while i < out.len() {
        out[i] = DIGITS[((hash >> (60 - 4 * i)) & 0xf) as usize];
        i += 1;
    }
    out
}

const VERSION_BYTES: [u8; 12] = hex12(content_hash());

/// Twelve hex digits of the assets' content hash; part of every asset URL.
pub const VERSION: &str = match core::str::from_utf8(&VERSION_BYTES) {
    Ok(v) => v,
    Err(_) => panic!("hex digits are ASCII"),
};

/// The URL prefix every asset lives under (`/assets/{VERSION}/`), for the server's router.
pub fn prefix() -> String {
    format!("/assets/{VERSION}/")
}

/// The versioned URL of an asset: `url("app.css")` is `/assets/{VERSION}/app.css`.
pub fn url(name: &str) -> String {
    format!("/assets/{VERSION}/{name}")
}

/// The asset called `name` (the last path segment of its URL), or `None`.
pub fn get(name: &str) -> Option<Asset> {
    FILES.iter().find(|(n, _)| *n == name).map(|(_, a)| *a)
}

/// The names of all embedded assets.
pub fn names() -> impl Iterator<Item = &'static str> {
    FILES.iter().map(|(n, _)| *n)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_asset_is_served_with_a_type() {
        for name in names() {
            let asset = get(name).unwrap();
            assert!(!asset.bytes.is_empty(), "{name} is empty");
            assert!(!asset.content_type.is_empty());
        }
        assert_eq!(
            get("app.css").unwrap().content_type,
            "text/css; charset=utf-8"
        );
        assert!(get("../Cargo.toml").is_none());
        assert!(get("nope.js").is_none());
    }

    #[test]
    fn urls_are_versioned_by_content() {
        assert_eq!(VERSION.len(), 12);
        assert!(VERSION.bytes().all(|b| b.is_ascii_hexdigit()));
        assert_eq!(url("htmx.min.js"), format!("/assets/{VERSION}/htmx.min.js"));
        assert!(url("app.js").starts_with(&prefix()));
    }

    #[test]
    fn every_part_is_joined_once() {
        for (dir, ext, parts) in [("css", "css", CSS_PARTS), ("js", "js", JS_PARTS)] {
            let folder = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("assets")
                .join(dir);
            let mut on_disk: Vec<String> = std::fs::read_dir(&folder)
                .unwrap()
                .map(|e| e.unwrap().path())
                .filter(|p| p.extension().is_some_and(|e| e == ext))
                .map(|p| p.file_stem().unwrap().to_string_lossy().into_owned())
                .collect();
            on_disk.sort();
            let mut listed: Vec<String> = parts.iter().map(|p| p.to_string()).collect();
            listed.sort();
            assert_eq!(
                listed, on_disk,
                "every file of assets/{dir}/ is listed once in assets.rs"
            );
            for part in parts {
                let text = std::fs::read_to_string(folder.join(format!("{part}.{ext}"))).unwrap();
                // A part that ended mid-line would run into the next one (`})()(function …`).
                assert!(
                    text.ends_with('\n'),
                    "assets/{dir}/{part}.{ext} ends with a newline"
                );
            }
        }
        let css = std::str::from_utf8(get("app.css").unwrap().bytes).unwrap();
        assert!(css.starts_with("/* Muster's stylesheet"));
        assert!(css.contains(".usage-rates {"));
        let js = std::str::from_utf8(get("app.js").unwrap().bytes).unwrap();
        assert!(
            js.find("window.Muster = {").unwrap() < js.find("window.Muster.csrfToken").unwrap()
        );
    }

    #[test]
    fn vendored_htmx_is_version_2() {
        let htmx = std::str::from_utf8(get("htmx.min.js").unwrap().bytes).unwrap();
        assert!(htmx.contains("version:\"2."), "htmx must stay on 2.x");
        let ws = std::str::from_utf8(get("ws.js").unwrap().bytes).unwrap();
        assert!(ws.contains("defineExtension('ws'"));
    }
}
