//! The failing part of a CI job's log: what an agent reads to fix a failed check, small enough for a
//! prompt.

/// The most lines [`failing_part`] keeps.
pub const MAX_LINES: usize = 60;
/// The most bytes [`failing_part`] keeps.
pub const MAX_BYTES: usize = 8 * 1024;
/// Lines kept before the first error line.
const BEFORE_ERROR: usize = 5;
/// Lines kept from the first error line on.
const FROM_ERROR: usize = 25;
/// The line that stands for the lines left out.
pub const ELIDED: &str = "…";

/// At most [`MAX_LINES`] lines and [`MAX_BYTES`] bytes of `log`: the lines around the first line that
/// reads like an error or a failure, and the end (where runners print the step's exit), with [`ELIDED`]
/// between parts; ANSI colour codes and GitHub's per-line timestamps removed.
pub fn failing_part(log: &str) -> String {
    let lines: Vec<String> = log.lines().map(clean).collect();
    let mut keep = vec![false; lines.len()];
    let tail_len = if let Some(first) = lines.iter().position(|l| is_error_line(l)) {
        let start = first.saturating_sub(BEFORE_ERROR);
        let end = (first + FROM_ERROR).min(lines.len());
        keep[start..end].iter_mut().for_each(|k| *k = true);
        MAX_LINES - BEFORE_ERROR - FROM_ERROR - 2
    } else {
        MAX_LINES - 1
    };
    let tail_start = lines.len().saturating_sub(tail_len);
    keep[tail_start..].iter_mut().for_each(|k| *k = true);

    let mut out: Vec<&str> = Vec::new();
    let mut elided = false;
    for (line, kept) in lines.iter().zip(&keep) {
        if *kept {
            out.push(line);
            elided = false;
        } else if !elided {
            out.push(ELIDED);
            elided = true;
        }
    }
    fit(&out)
}

/// Joins `lines`, shortening each evenly until the whole fits [`MAX_BYTES`].
fn fit(lines: &[&str]) -> String {
    let whole = lines.join("\n");
    if whole.len() <= MAX_BYTES {
        return whole;
    }
    let per_line = MAX_BYTES / lines.len().max(1) - 2;
    lines
        .iter()
        .map(|line| shorten(line, per_line))
        .collect::<Vec<_>>()
        .join("\n")
}

fn shorten(line: &str, max: usize) -> String {
    if line.len() <= max {
        return line.to_owned();
    }
    let mut end = max.saturating_sub(ELIDED.len());
    while !line.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}{ELIDED}", &line[..end])
}

/// Whether a line reads like the start of a failure.
fn is_error_line(line: &str) -> bool {
    let lower = line.to_ascii_lowercase();
    [
        "error",
        "fail",
        "panicked",
        "exception",
        "traceback",
        "fatal:",
    ]
    .iter()
    .any(|word| lower.contains(word))
        && !lower.contains(" 0 failed")
}

/// A log line without ANSI escape sequences, without GitHub's leading timestamp
/// (`2024-05-01T10:00:00.1234567Z `) and without trailing blanks.
fn clean(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            if chars.peek() == Some(&'[') {
                chars.next();
                // Parameters and intermediates up to the final byte (`@`..`~`).
                for c in chars.by_ref() {
                    if ('@'..='~').contains(&c) {
                        break;
                    }
                }
            }
            continue;
        }
        if c != '\r' {
            out.push(c);
        }
    }
    let trimmed = match out.split_once(' ') {
        Some((stamp, rest)) if is_timestamp(stamp) => rest.to_owned(),
        _ => out,
    };
    trimmed.trim_end().to_owned()
}

fn is_timestamp(word: &str) -> bool {
    let b = word.as_bytes();
    b.len() >= 20
        && word.ends_with('Z')
        && b[4] == b'-'
        && b[7] == b'-'
        && b[10] == b'T'
        && b[..4].iter().all(u8::is_ascii_digit)
}
