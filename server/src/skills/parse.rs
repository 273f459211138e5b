//! Parsing and validating one skill: its `SKILL.md` (YAML front matter with `name` and `description`,
//! then markdown) and its supporting files. Every rule names the file it is about; nothing here writes.
//!
//! The whole `SKILL.md` is kept verbatim, so front-matter keys Muster does not know (`license`,
//! `allowed-tools`, `metadata`, …) round-trip untouched: only `name` and `description` are read.

use std::collections::BTreeMap;

use sha2::{Digest as _, Sha256};

use crate::domain::{SkillFile, Slug};

/// The skill's main file.
pub const SKILL_MD: &str = "SKILL.md";
/// Longest `description`, in characters.
pub const MAX_DESCRIPTION: usize = 1024;
/// Largest single file (SKILL.md included), in bytes.
pub const MAX_FILE_BYTES: usize = 256 * 1024;
/// Largest skill, all files together, in bytes.
pub const MAX_TOTAL_BYTES: usize = 1024 * 1024;
/// Most supporting files in one skill.
pub const MAX_FILES: usize = 64;
/// Longest supporting-file path.
pub const MAX_PATH: usize = 255;

/// One broken rule: the file it is about and what is wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// `SKILL.md`, a supporting file's path, or the archive/folder as a whole.
    pub file: String,
    /// The rule, in words.
    pub rule: String,
}

impl Problem {
    /// A problem with `file`.
    pub fn new(file: impl Into<String>, rule: impl Into<String>) -> Self {
        Self {
            file: file.into(),
            rule: rule.into(),
        }
    }
}

impl std::fmt::Display for Problem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.file, self.rule)
    }
}

/// A skill that passed every rule.
#[derive(Debug, Clone, PartialEq)]
pub struct ParsedSkill {
    /// The `name` from the front matter; it is also the slug.
    pub slug: Slug,
    pub description: String,
    /// The whole SKILL.md, front matter included.
    pub body: String,
    /// Supporting files, sorted by path.
    pub files: Vec<SkillFile>,
    /// sha256 over the SKILL.md and the sorted files.
    pub content_hash: String,
}

/// A raw file as read from a form, an archive or a folder.
#[derive(Debug, Clone)]
pub struct RawFile {
    pub path: String,
    pub bytes: Vec<u8>,
}

/// Validates a skill; on any problem returns them all (never a partial skill).
pub fn parse(skill_md: &str, raw_files: Vec<RawFile>) -> Result<ParsedSkill, Vec<Problem>> {
    let mut problems = Vec::new();
    let head = front_matter(skill_md).map_err(|p| vec![p]);
    if skill_md.len() > MAX_FILE_BYTES {
        problems.push(too_big(SKILL_MD, skill_md.len()));
    }
    let (slug, description) = match head {
        Ok(head) => (
            name(&head, &mut problems),
            description(&head, &mut problems),
        ),
        Err(mut p) => {
            problems.append(&mut p);
            (None, None)
        }
    };
    let files = files(raw_files, &mut problems);
    let total = skill_md.len() + files.iter().map(|f| f.content.len()).sum::<usize>();
    if total > MAX_TOTAL_BYTES {
        problems.push(Problem::new(
            "skill",
            format!("is {total} bytes in all; at most {MAX_TOTAL_BYTES} are allowed"),
        ));
    }
    match (slug, description) {
        (Some(slug), Some(description)) if problems.is_empty() => Ok(ParsedSkill {
            slug,
            description,
            content_hash: content_hash(skill_md, &files),
            body: skill_md.to_owned(),
            files,
        }),
        _ => Err(problems),
    }
}

/// The front matter as a YAML mapping.
fn front_matter(skill_md: &str) -> Result<BTreeMap<String, serde_json::Value>, Problem> {
    let text = skill_md.strip_prefix('\u{feff}').unwrap_or(skill_md);
    let missing = || {
        Problem::new(
            SKILL_MD,
            "must start with YAML front matter: a line `---`, `name:` and `description:`, then `---`",
        )
    };
    let mut lines = text.split_inclusive('\n');
    if lines.next().map(str::trim_end) != Some("---") {
        return Err(missing());
    }
    let mut yaml = String::new();
    let mut closed = false;
    for line in lines {
        if line.trim_end() == "---" {
            closed = true;
            break;
        }
        yaml.push_str(line);
    }
    if !closed {
        return Err(Problem::new(
            SKILL_MD,
            "the front matter is not closed by a `---` line",
        ));
    }
    if yaml.trim().is_empty() {
        return Err(missing());
    }
    serde_saphyr::from_str::<BTreeMap<String, serde_json::Value>>(&yaml).map_err(|e| {
        let first = e.to_string();
        let first = first.lines().next().unwrap_or("invalid YAML").to_owned();
        Problem::new(
            SKILL_MD,
            format!("the front matter is not a YAML mapping of keys to values ({first})"),
        )
    })
}

fn name(head: &BTreeMap<String, serde_json::Value>, problems: &mut Vec<Problem>) -> Option<Slug> {
    let Some(raw) = head.get("name").and_then(serde_json::Value::as_str) else {
        problems.push(Problem::new(
            SKILL_MD,
            "the front matter needs `name:` (a-z, 0-9 and '-', at most 64 characters)",
        ));
        return None;
    };
    match Slug::parse_field("name", raw) {
        Ok(slug) if slug.as_str() == raw => Some(slug),
        Ok(_) => {
            problems.push(Problem::new(
                SKILL_MD,
                "`name` must not have surrounding spaces",
            ));
            None
        }
        Err(e) => {
            problems.push(Problem::new(SKILL_MD, format!("`name` {}", e.message)));
            None
        }
    }
}

fn description(
    head: &BTreeMap<String, serde_json::Value>,
    problems: &mut Vec<Problem>,
) -> Option<String> {
    let Some(raw) = head.get("description").and_then(serde_json::Value::as_str) else {
        problems.push(Problem::new(
            SKILL_MD,
            "the front matter needs `description:` (what the skill does and when to use it)",
        ));
        return None;
    };
    let text = raw.trim();
    let chars = text.chars().count();
    if chars == 0 {
        problems.push(Problem::new(SKILL_MD, "`description` must not be empty"));
        return None;
    }
    if chars > MAX_DESCRIPTION {
        problems.push(Problem::new(
            SKILL_MD,
            format!("`description` is {chars} characters; at most {MAX_DESCRIPTION} are allowed"),
        ));
        return None;
    }
    Some(text.to_owned())
}

fn too_big(file: &str, len: usize) -> Problem {
    Problem::new(
        file,
        format!("is {len} bytes; a file may be at most {MAX_FILE_BYTES}"),
    )
}

/// Checks a supporting file's path: relative, inside the skill, plain segments.
pub fn check_path(path: &str) -> Result<(), Problem> {
    let bad = |rule: &str| Err(Problem::new(path, rule));
    if path.is_empty() {
        return bad("an empty path is not allowed");
    }
    if path.len() > MAX_PATH {
        return bad("the path is too long (at most 255 bytes)");
    }
    if path.starts_with('/') || path.contains(':') || path.starts_with('~') {
        return bad("absolute paths are not allowed; use a path relative to the skill folder");
    }
    if path.contains('\\') || path.chars().any(char::is_control) {
        return bad("a path may not contain backslashes or control characters");
    }
    for segment in path.split('/') {
        match segment {
            ".." => return bad("`..` is not allowed: files must stay inside the skill folder"),
            "" | "." => return bad("empty or `.` path segments are not allowed"),
            _ => {}
        }
    }
    Ok(())
}

/// Validates and decodes supporting files; sorted by path.
fn files(raw: Vec<RawFile>, problems: &mut Vec<Problem>) -> Vec<SkillFile> {
    if raw.len() > MAX_FILES {
        problems.push(Problem::new(
            "skill",
            format!(
                "has {} supporting files; at most {MAX_FILES} are allowed",
                raw.len()
            ),
        ));
    }
    let mut out: Vec<SkillFile> = Vec::new();
    for file in raw {
        if let Err(p) = check_path(&file.path) {
            problems.push(p);
            continue;
        }
        if file.path == SKILL_MD {
            problems.push(Problem::new(
                SKILL_MD,
                "is the skill itself, not a supporting file",
            ));
            continue;
        }
        if out.iter().any(|f| f.path == file.path) {
            problems.push(Problem::new(&file.path, "appears twice"));
            continue;
        }
        if file.bytes.len() > MAX_FILE_BYTES {
            problems.push(too_big(&file.path, file.bytes.len()));
            continue;
        }
        match text(file.bytes) {
            Some(content) => out.push(SkillFile {
                path: file.path,
                content,
            }),
            None => problems.push(Problem::new(
                &file.path,
                "is a binary file; a skill may contain only UTF-8 text files",
            )),
        }
    }
    out.sort_by(|a, b| a.path.cmp(&b.path));
    out
}

/// UTF-8 text without NUL bytes, or `None` for a binary file.
fn text(bytes: Vec<u8>) -> Option<String> {
    if bytes.contains(&0) {
        return None;
    }
    String::from_utf8(bytes).ok()
}

/// sha256 (hex) over the SKILL.md and each file (path and content) in path order.
pub fn content_hash(skill_md: &str, files: &[SkillFile]) -> String {
    let mut sorted: Vec<&SkillFile> = files.iter().collect();
    sorted.sort_by(|a, b| a.path.cmp(&b.path));
    let mut h = Sha256::new();
    h.update(skill_md.as_bytes());
    for f in sorted {
        h.update([0]);
        h.update(f.path.as_bytes());
        h.update([0]);
        h.update(f.content.as_bytes());
    }
    h.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

/// The markdown after the front matter (what an agent without native skills reads).
pub fn instructions(skill_md: &str) -> &str {
    let text = skill_md.strip_prefix('\u{feff}').unwrap_or(skill_md);
    let mut offset = 0;
    let mut fences = 0;
    for line in text.split_inclusive('\n') {
        offset += line.len();
        if line.trim_end() == "---" {
            fences += 1;
            if fences == 2 {
                return text[offset..].trim_start_matches(['\n', '\r']);
            }
        }
    }
    text
}

/// The SKILL.md with its `name:` front-matter line replaced (for a copy written under another folder
/// name, which the CLIs expect to match).
pub fn renamed(skill_md: &str, new_name: &str) -> String {
    let mut out = String::with_capacity(skill_md.len() + 8);
    let mut fences = 0;
    let mut done = false;
    for line in skill_md.split_inclusive('\n') {
        if line.trim_end() == "---" {
            fences += 1;
        }
        if fences == 1 && !done && line.starts_with("name:") {
            out.push_str(&format!("name: {new_name}\n"));
            done = true;
        } else {
            out.push_str(line);
        }
    }
    out
}

#[cfg(test)]
mod tests;
