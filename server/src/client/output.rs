//! What the client prints: aligned tables and detail views for people, the server's JSON for `--json`.
//! Text that came from users or agents is cleaned of control characters, so a hostile title cannot move
//! the cursor or recolour a terminal.
//!
//! Everything the client prints on stdout goes through [`write_stdout`] (the client's `print!` and
//! `println!` are shadowed in `client/mod.rs`): when the reader has gone, as in `muster issue list | head`,
//! the command stops quietly with status 0 instead of panicking on the broken pipe.

use std::io::Write as _;

use serde::Deserialize;
use serde_json::Value;

/// Writes `args` to stdout and flushes. A closed reader (broken pipe) ends the process with status 0 and
/// nothing on stderr: the reader chose to stop reading, which is not a failure of the command (ripgrep
/// does the same; dying of SIGPIPE, status 141, would fail `set -o pipefail` scripts for no fault). Any
/// other write error ends it with status 1 and one line on stderr.
pub fn write_stdout(args: std::fmt::Arguments<'_>) {
    let mut out = std::io::stdout().lock();
    if let Err(e) = out.write_fmt(args).and_then(|()| out.flush()) {
        stdout_failed(&e);
    }
}

/// Writes raw bytes to stdout (a file's content), with [`write_stdout`]'s handling of a closed reader.
pub fn write_stdout_bytes(bytes: &[u8]) {
    let mut out = std::io::stdout().lock();
    if let Err(e) = out.write_all(bytes).and_then(|()| out.flush()) {
        stdout_failed(&e);
    }
}

fn stdout_failed(e: &std::io::Error) -> ! {
    if e.kind() == std::io::ErrorKind::BrokenPipe {
        std::process::exit(0);
    }
    eprintln!("error: cannot write to standard output: {e}");
    std::process::exit(1);
}

/// Prints a JSON value, pretty, on stdout.
pub fn print_json(value: &Value) -> anyhow::Result<()> {
    let text = serde_json::to_string_pretty(value)?;
    println!("{text}");
    Ok(())
}

/// One line of text with every control character (newline, escape, …) replaced by a space.
pub fn clean(text: &str) -> String {
    text.chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect()
}

/// Multi-line text with control characters other than newline and tab removed.
pub fn clean_block(text: &str) -> String {
    text.chars()
        .filter(|c| !c.is_control() || matches!(c, '\n' | '\t'))
        .collect()
}

/// Text indented by `pad` on every line.
pub fn indent(text: &str, pad: &str) -> String {
    clean_block(text)
        .lines()
        .map(|l| format!("{pad}{l}").trim_end().to_owned())
        .collect::<Vec<_>>()
        .join("\n")
}

/// A JSON value as a table cell or a field: `-` for null, a string cleaned, anything else as JSON.
pub fn cell(v: &Value) -> String {
    match v {
        Value::Null => "-".to_owned(),
        Value::String(s) => clean(s),
        other => other.to_string(),
    }
}

/// Columns padded to the widest cell; the last column is not padded.
pub fn table(headers: &[&str], rows: &[Vec<String>]) -> String {
    let cells: Vec<Vec<String>> =
        std::iter::once(headers.iter().map(|h| (*h).to_owned()).collect())
            .chain(rows.iter().map(|r| r.iter().map(|c| clean(c)).collect()))
            .collect();
    let mut widths = vec![0; headers.len()];
    for row in &cells {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let mut out = String::new();
    for row in &cells {
        let last = row.len().saturating_sub(1);
        let mut line = String::new();
        for (i, (cell, w)) in row.iter().zip(&widths).enumerate() {
            line.push_str(cell);
            if i < last {
                let pad = w - cell.chars().count() + 2;
                line.push_str(&" ".repeat(pad));
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

/// A person, agent or Muster itself, as the API names them.
#[derive(Debug, Clone, Deserialize)]
pub struct Person {
    /// Display name.
    pub name: String,
}

/// `GET /api/v1/me`.
#[derive(Debug, Clone, Deserialize)]
pub struct Me {
    /// Email (absent for a run's token, which acts as its agent).
    #[serde(default)]
    pub email: String,
    /// Display name.
    pub name: String,
    /// Role in the workspace.
    pub role: String,
    /// Workspace slug.
    pub workspace: String,
    /// Workspace display name.
    pub workspace_name: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_align_and_clean_cells() {
        let t = table(
            &["KEY", "TITLE"],
            &[
                vec!["MUS-1".into(), "Short".into()],
                vec!["MUS-10".into(), "Evil\x1b[31m\ntitle".into()],
            ],
        );
        assert_eq!(t, "KEY     TITLE\nMUS-1   Short\nMUS-10  Evil [31m title\n");
    }
}
