//! How `muster run logs` shows the events that are more than one line: the run's diff as a unified diff
//! (coloured like `git diff` when stdout is a terminal), and the shared colour switch.
//!
//! Every line is cleaned of control characters (tabs kept), so a hostile patch cannot move the cursor or
//! recolour the terminal; the only escapes printed are the styles below.

use anstyle::{AnsiColor, Style};

use crate::domain::DiffNote;

/// Whether to colour: `--color always|never`, or on `auto` only when stdout is a terminal and `NO_COLOR`
/// is unset or empty (<https://no-color.org>).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum ColorChoice {
    /// Colour when stdout is a terminal and NO_COLOR is not set.
    #[default]
    Auto,
    /// Always colour (even into a pipe or with NO_COLOR set).
    Always,
    /// Never colour.
    Never,
}

impl ColorChoice {
    /// The decision for this process: `tty` says whether stdout is a terminal, `no_color` whether
    /// `NO_COLOR` is set to a non-empty value.
    pub fn resolve(self, tty: bool, no_color: bool) -> bool {
        match self {
            ColorChoice::Always => true,
            ColorChoice::Never => false,
            ColorChoice::Auto => tty && !no_color,
        }
    }
}

const HEADER: Style = Style::new().bold();
const HUNK: Style = AnsiColor::Cyan.on_default();
const ADDED: Style = AnsiColor::Green.on_default();
const REMOVED: Style = AnsiColor::Red.on_default();
const NOTE: Style = Style::new().dimmed();

/// `#12 diff: muster/MUS-1-r1 against 1a2b3c4d5e6f`, the `--stat` summary, then the unified patch.
pub fn diff_block(seq: i64, diff: &DiffNote, color: bool) -> String {
    let base: String = diff.base.chars().take(12).collect();
    let mut head = format!("#{seq} diff:");
    if !diff.branch.is_empty() {
        head.push_str(&format!(" {}", clean_line(&diff.branch)));
    }
    if !base.is_empty() {
        head.push_str(&format!(" against {}", clean_line(&base)));
    }
    let mut out = vec![paint(HEADER, &head, color)];
    let patch = diff.patch.as_str();
    if patch.trim().is_empty() {
        out.push("    (no changes)".to_owned());
        return out.join("\n");
    }
    out.extend(diff.stat.lines().map(clean_line));
    out.push(String::new());
    out.extend(patch_lines(patch, color));
    out.join("\n")
}

/// The patch's lines, each styled by what it is: file headers bold, hunk headers cyan, additions green,
/// removals red (inside a hunk only, so a `---` file header is not a removal).
fn patch_lines(patch: &str, color: bool) -> Vec<String> {
    let mut in_hunk = false;
    patch
        .lines()
        .map(|raw| {
            let line = clean_line(raw);
            let style = if line.starts_with("diff --git ") {
                in_hunk = false;
                Some(HEADER)
            } else if line.starts_with("@@") {
                in_hunk = true;
                Some(HUNK)
            } else if !in_hunk {
                if line.starts_with('…') {
                    Some(NOTE)
                } else {
                    Some(HEADER)
                }
            } else if line.starts_with('+') {
                Some(ADDED)
            } else if line.starts_with('-') {
                Some(REMOVED)
            } else if line.starts_with('\\') || line.starts_with('…') {
                Some(NOTE)
            } else {
                None
            };
            match style {
                Some(style) => paint(style, &line, color),
                None => line,
            }
        })
        .collect()
}

/// `text` in `style` when colouring.
pub fn paint(style: Style, text: &str, color: bool) -> String {
    if color && !text.is_empty() {
        format!("{}{text}{}", style.render(), style.render_reset())
    } else {
        text.to_owned()
    }
}

/// One line with control characters other than tab removed and the line end trimmed.
fn clean_line(raw: &str) -> String {
    raw.chars()
        .filter(|c| !c.is_control() || *c == '\t')
        .collect::<String>()
        .trim_end()
        .to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    const PATCH: &str = "diff --git a/a.txt b/a.txt\nindex 1..2 100644\n--- a/a.txt\n+++ b/a.txt\n@@ -1,2 +1,2 @@\n keep\n-old\x1b[2J\n+new\n";

    #[test]
    fn a_diff_reads_as_a_unified_diff_coloured_only_when_asked() {
        let payload = DiffNote {
            base: "0123456789abcdef0123".into(),
            branch: "muster/MUS-1-r1".into(),
            stat: " a.txt | 2 +-\n 1 file changed".into(),
            patch: PATCH.into(),
            ..DiffNote::default()
        };
        let plain = diff_block(7, &payload, false);
        assert_eq!(
            plain,
            "#7 diff: muster/MUS-1-r1 against 0123456789ab\n a.txt | 2 +-\n 1 file changed\n\n\
             diff --git a/a.txt b/a.txt\nindex 1..2 100644\n--- a/a.txt\n+++ b/a.txt\n@@ -1,2 +1,2 @@\n keep\n-old[2J\n+new"
        );
        let coloured = diff_block(7, &payload, true);
        assert!(coloured.contains("\x1b[32m+new\x1b[0m"), "{coloured:?}");
        assert!(coloured.contains("\x1b[31m-old[2J\x1b[0m"), "{coloured:?}");
        assert!(
            coloured.contains("\x1b[1m--- a/a.txt\x1b[0m"),
            "{coloured:?}"
        );
        assert!(
            coloured.contains("\x1b[36m@@ -1,2 +1,2 @@\x1b[0m"),
            "{coloured:?}"
        );
        assert!(coloured.contains("\n keep\n"), "context lines stay plain");
        let empty = DiffNote {
            branch: "b".into(),
            ..DiffNote::default()
        };
        assert_eq!(diff_block(2, &empty, false), "#2 diff: b\n    (no changes)");
    }

    #[test]
    fn colour_follows_the_terminal_and_no_color() {
        assert!(ColorChoice::Auto.resolve(true, false));
        assert!(!ColorChoice::Auto.resolve(true, true));
        assert!(!ColorChoice::Auto.resolve(false, false));
        assert!(ColorChoice::Always.resolve(false, true));
        assert!(!ColorChoice::Never.resolve(true, false));
    }
}
