//! Skills in and out of `.zip`/`.skill` archives and folders, with guards against zip bombs, path
//! traversal, symbolic links and special files (FIFOs, devices, sockets: a folder import reads regular
//! files only, each opened without following a link). Reading never writes anything; a skill is returned whole or not at all.
//!
//! Layout accepted: `SKILL.md` at the root of the archive (or folder), or inside one top-level folder
//! (`<name>/SKILL.md`, the way Claude's `.skill` files and our exports are laid out).

use std::io::{Read as _, Write as _};
use std::path::Path;

use super::parse::{
    self, MAX_FILE_BYTES, MAX_TOTAL_BYTES, ParsedSkill, Problem, RawFile, SKILL_MD,
};
use crate::domain::Skill;

/// Most entries (files and folders) an archive may list.
pub const MAX_ENTRIES: usize = 128;
/// Most bytes all entries may expand to (checked on the declared sizes and while reading).
pub const MAX_UNCOMPRESSED: u64 = 2 * MAX_TOTAL_BYTES as u64;
/// Largest expansion ratio of one entry (uncompressed / compressed).
pub const MAX_RATIO: u64 = 100;
/// Largest archive accepted, in bytes.
pub const MAX_ARCHIVE_BYTES: usize = 2 * MAX_TOTAL_BYTES;
/// Deepest folder nesting read from a folder import.
const MAX_DEPTH: usize = 8;

fn archive_problem(rule: impl Into<String>) -> Vec<Problem> {
    vec![Problem::new("archive", rule)]
}

/// Reads a skill from the bytes of a `.zip`/`.skill` archive.
pub fn from_zip(bytes: &[u8]) -> Result<ParsedSkill, Vec<Problem>> {
    if bytes.len() > MAX_ARCHIVE_BYTES {
        return Err(archive_problem(format!(
            "is {} bytes; at most {MAX_ARCHIVE_BYTES} are allowed",
            bytes.len()
        )));
    }
    let mut zip = zip::ZipArchive::new(std::io::Cursor::new(bytes))
        .map_err(|e| archive_problem(format!("is not a readable zip archive ({e})")))?;
    if zip.len() > MAX_ENTRIES {
        return Err(archive_problem(format!(
            "has {} entries; at most {MAX_ENTRIES} are allowed",
            zip.len()
        )));
    }
    let mut declared: u64 = 0;
    let mut read_total: u64 = 0;
    let mut raw = Vec::new();
    for i in 0..zip.len() {
        let entry = zip
            .by_index(i)
            .map_err(|e| archive_problem(format!("entry {i} cannot be read ({e})")))?;
        let name = entry
            .name()
            .map_err(|e| archive_problem(format!("entry {i} has an unreadable name ({e})")))?
            .into_owned();
        if entry.is_symlink() {
            return Err(vec![Problem::new(
                name,
                "is a symbolic link; links are not allowed in a skill",
            )]);
        }
        if entry.is_dir() {
            continue;
        }
        parse::check_path(&name).map_err(|p| vec![p])?;
        declared = declared.saturating_add(entry.size());
        if declared > MAX_UNCOMPRESSED {
            return Err(archive_problem(format!(
                "would expand to more than {MAX_UNCOMPRESSED} bytes"
            )));
        }
        if entry.size() > 1024 && entry.size() / entry.compressed_size().max(1) > MAX_RATIO {
            return Err(vec![Problem::new(
                name,
                format!("expands more than {MAX_RATIO} times; this looks like a zip bomb"),
            )]);
        }
        // Never trust the declared size: read at most one byte past the per-file limit.
        let mut bytes = Vec::new();
        entry
            .take(MAX_FILE_BYTES as u64 + 1)
            .read_to_end(&mut bytes)
            .map_err(|e| vec![Problem::new(&name, format!("cannot be decompressed ({e})"))])?;
        read_total += bytes.len() as u64;
        if read_total > MAX_UNCOMPRESSED {
            return Err(archive_problem(format!(
                "expands to more than {MAX_UNCOMPRESSED} bytes"
            )));
        }
        raw.push(RawFile { path: name, bytes });
    }
    from_raw(raw)
}

/// Reads a skill from a folder (on the server, or on the CLI's machine). Symbolic links are refused.
pub fn from_folder(dir: &Path) -> Result<ParsedSkill, Vec<Problem>> {
    let shown = dir.display().to_string();
    let meta = std::fs::symlink_metadata(dir)
        .map_err(|e| vec![Problem::new(&shown, format!("cannot be read ({e})"))])?;
    if meta.file_type().is_symlink() {
        return Err(vec![Problem::new(
            shown,
            "is a symbolic link; give the real folder",
        )]);
    }
    if !meta.is_dir() {
        return Err(vec![Problem::new(shown, "is not a folder")]);
    }
    let mut raw = Vec::new();
    let mut total = 0usize;
    walk(dir, "", 0, &mut raw, &mut total)?;
    from_raw(raw)
}

fn walk(
    dir: &Path,
    prefix: &str,
    depth: usize,
    out: &mut Vec<RawFile>,
    total: &mut usize,
) -> Result<(), Vec<Problem>> {
    let read_err =
        |p: &str, e: std::io::Error| vec![Problem::new(p, format!("cannot be read ({e})"))];
    if depth > MAX_DEPTH {
        return Err(vec![Problem::new(
            prefix,
            format!("is nested too deep (at most {MAX_DEPTH} folders)"),
        )]);
    }
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .map_err(|e| read_err(prefix, e))?
        .collect::<Result<_, _>>()
        .map_err(|e| read_err(prefix, e))?;
    entries.sort_by_key(std::fs::DirEntry::file_name);
    for entry in entries {
        let name = entry.file_name().to_string_lossy().into_owned();
        let rel = if prefix.is_empty() {
            name
        } else {
            format!("{prefix}/{name}")
        };
        let kind = entry.file_type().map_err(|e| read_err(&rel, e))?;
        if kind.is_symlink() {
            return Err(vec![Problem::new(
                rel,
                "is a symbolic link; links are not allowed in a skill",
            )]);
        }
        if kind.is_dir() {
            walk(&entry.path(), &rel, depth + 1, out, total)?;
            continue;
        }
        if !kind.is_file() {
            // A FIFO would block the read forever, a device would read forever.
            return Err(vec![Problem::new(
                rel,
                format!(
                    "is {}; only regular files are allowed in a skill",
                    crate::confined::kind_of(&kind)
                ),
            )]);
        }
        if out.len() > parse::MAX_FILES {
            return Err(vec![Problem::new(
                "skill",
                format!("has more than {} files", parse::MAX_FILES),
            )]);
        }
        let len = entry.metadata().map_err(|e| read_err(&rel, e))?.len();
        if len > MAX_FILE_BYTES as u64 {
            return Err(vec![Problem::new(
                rel,
                format!("is {len} bytes; a file may be at most {MAX_FILE_BYTES}"),
            )]);
        }
        *total += len as usize;
        if *total > MAX_TOTAL_BYTES {
            return Err(vec![Problem::new(
                "skill",
                format!("is more than {MAX_TOTAL_BYTES} bytes in all"),
            )]);
        }
        // Opened without following a link or waiting on a FIFO, and checked again once open: the entry
        // may have been swapped since it was listed.
        let bytes = crate::confined::read_regular(&entry.path(), MAX_FILE_BYTES as u64)
            .map_err(|e| vec![Problem::new(&rel, format!("cannot be read ({e})"))])?;
        out.push(RawFile { path: rel, bytes });
    }
    Ok(())
}

/// Finds SKILL.md (at the root or in the one top-level folder), strips that folder, and parses.
fn from_raw(mut raw: Vec<RawFile>) -> Result<ParsedSkill, Vec<Problem>> {
    if !raw.iter().any(|f| f.path == SKILL_MD) {
        let tops: std::collections::BTreeSet<&str> = raw
            .iter()
            .map(|f| f.path.split('/').next().unwrap_or_default())
            .collect();
        let top = match tops.into_iter().collect::<Vec<_>>().as_slice() {
            [one] if raw.iter().any(|f| f.path == format!("{one}/{SKILL_MD}")) => {
                format!("{one}/")
            }
            _ => {
                return Err(vec![Problem::new(
                    SKILL_MD,
                    "is missing: put SKILL.md at the top, or in one top-level folder",
                )]);
            }
        };
        for f in &mut raw {
            f.path = f.path.strip_prefix(&top).unwrap_or(&f.path).to_owned();
        }
    }
    let index = raw
        .iter()
        .position(|f| f.path == SKILL_MD)
        .ok_or_else(|| vec![Problem::new(SKILL_MD, "is missing")])?;
    let main = raw.swap_remove(index);
    if main.bytes.len() > MAX_FILE_BYTES {
        return Err(vec![Problem::new(
            SKILL_MD,
            format!(
                "is {} bytes; a file may be at most {MAX_FILE_BYTES}",
                main.bytes.len()
            ),
        )]);
    }
    let skill_md = String::from_utf8(main.bytes)
        .map_err(|_| vec![Problem::new(SKILL_MD, "is not UTF-8 text")])?;
    parse::parse(&skill_md, raw)
}

/// A `.zip` of the skill: `<slug>/SKILL.md` and its files.
pub fn to_zip(skill: &Skill) -> anyhow::Result<Vec<u8>> {
    let mut zip = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let options = zip::write::SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Deflated)
        .unix_permissions(0o644);
    let slug = skill.slug.as_str();
    zip.start_file(format!("{slug}/{SKILL_MD}"), options)?;
    zip.write_all(skill.body.as_bytes())?;
    for f in &skill.files {
        zip.start_file(format!("{slug}/{}", f.path), options)?;
        zip.write_all(f.content.as_bytes())?;
    }
    Ok(zip.finish()?.into_inner())
}

/// Zips a folder as it is (the CLI uploads a local folder this way); validation happens on the server,
/// but links are refused here already, and the same size limits apply.
pub fn folder_to_zip(dir: &Path) -> Result<Vec<u8>, Vec<Problem>> {
    let parsed = from_folder(dir)?;
    let skill = Skill {
        id: crate::domain::SkillId::new(),
        workspace_id: crate::domain::WorkspaceId::new(),
        slug: parsed.slug,
        name: String::new(),
        description: parsed.description,
        body: parsed.body,
        files: parsed.files,
        source: crate::domain::SkillSource::Imported,
        content_hash: parsed.content_hash,
        created_at: chrono::Utc::now(),
        updated_at: chrono::Utc::now(),
    };
    to_zip(&skill).map_err(|e| archive_problem(format!("cannot be written ({e})")))
}
