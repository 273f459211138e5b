//! Carrying a CLI's session from one run to the next, so a follow-up run can resume it.
//!
//! Each run has its own `HOME` and working directory, and each CLI keeps its sessions under `HOME`
//! (Claude Code under a folder named after the working directory). Before a follow-up starts, the files
//! of the earlier run's session are copied into the new run's `HOME`, where the CLI's resume flag finds
//! them.
//!
//! Invariant: the earlier `HOME` was the earlier agent's to write, so nothing in it is trusted. Only
//! regular files and folders are copied: a symbolic link (which could point at the server's own files,
//! read with the server's rights) is skipped, never followed — also one in place of a folder on the way
//! (every file copied must really lie under the earlier `HOME`) — and the copy stops at [`MAX_BYTES`].

use std::io;
use std::path::{Path, PathBuf};

/// The most bytes copied for one session; a bigger session starts fresh instead.
pub const MAX_BYTES: u64 = 256 * 1024 * 1024;

/// Where a run's CLI kept, or will keep, its state.
#[derive(Debug, Clone, Copy)]
pub struct SessionPlace<'a> {
    /// The run's `HOME`.
    pub home: &'a Path,
    /// The run's working directory.
    pub workdir: &'a Path,
}

/// Why a session could not be carried over.
#[derive(Debug, thiserror::Error)]
pub enum CarryError {
    /// The earlier run left no files for the session (another machine, or they were removed).
    #[error("the session's files are not on this runner")]
    Missing,
    /// The session's files are larger than [`MAX_BYTES`].
    #[error("the session's files exceed {} MiB", MAX_BYTES / 1024 / 1024)]
    TooLarge,
    /// This CLI cannot resume a session.
    #[error("{0} cannot resume a session")]
    Unsupported(&'static str),
    /// Reading or writing failed.
    #[error("cannot copy the session's files: {0}")]
    Io(#[from] io::Error),
}

/// Claude Code's project folder name for a working directory: every character other than an ASCII
/// letter or digit becomes `-` (`/srv/runs/ab.c/work` → `-srv-runs-ab-c-work`).
pub fn claude_project_dir(workdir: &Path) -> String {
    workdir
        .to_string_lossy()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect()
}

/// Copies the regular files and folders under `from` into `to` (created as needed), skipping symbolic
/// links and anything else that is not a plain file or folder. Counts bytes against `budget`. Every file
/// must really lie under `within` (a real path, see [`crate::bounded::real_root`]).
pub fn copy_tree(
    from: &Path,
    to: &Path,
    within: &Path,
    budget: &mut u64,
) -> Result<(), CarryError> {
    let meta = std::fs::symlink_metadata(from)?;
    if meta.is_file() {
        return copy_file(from, to, within, budget);
    }
    if !meta.is_dir() {
        return Ok(());
    }
    std::fs::create_dir_all(to)?;
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        copy_tree(&entry.path(), &to.join(entry.file_name()), within, budget)?;
    }
    Ok(())
}

/// Copies one regular file (never through a symbolic link, never a FIFO; see [`crate::bounded`]) into
/// `to`, creating its folder. At most the size it had when opened is copied; `from` must really lie
/// under `within`.
pub fn copy_file(
    from: &Path,
    to: &Path,
    within: &Path,
    budget: &mut u64,
) -> Result<(), CarryError> {
    use std::io::Read as _;
    let meta = std::fs::symlink_metadata(from)?;
    if !meta.is_file() {
        return Ok(());
    }
    let source = crate::bounded::open_regular(from, Some(within))?;
    let len = source.metadata()?.len();
    if len > *budget {
        return Err(CarryError::TooLarge);
    }
    *budget -= len;
    if let Some(parent) = to.parent() {
        std::fs::create_dir_all(parent)?;
    }
    let mut target = std::fs::File::create(to)?;
    io::copy(&mut source.take(len), &mut target)?;
    Ok(())
}

/// The regular files under `dir` that `keep` accepts, depth first in name order, links skipped (never
/// followed).
pub fn find_files(dir: &Path, keep: &dyn Fn(&Path) -> bool) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return found;
    };
    let mut paths: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
    paths.sort();
    for path in paths {
        let Ok(meta) = std::fs::symlink_metadata(&path) else {
            continue;
        };
        if meta.is_dir() {
            found.extend(find_files(&path, keep));
        } else if meta.is_file() && keep(&path) {
            found.push(path);
        }
    }
    found
}

/// Whether the file name of `path` contains `needle`.
fn named(path: &Path, needle: &str) -> bool {
    path.file_name()
        .is_some_and(|n| n.to_string_lossy().contains(needle))
}

#[cfg(test)]
mod tests;

/// Claude Code: the session's transcript (`<session>.jsonl`, and its folder of side files when there is
/// one) moves to the project folder of the new working directory.
pub(crate) fn carry_claude(
    session: &str,
    from: SessionPlace,
    to: SessionPlace,
) -> Result<(), CarryError> {
    let projects = from.home.join(".claude/projects");
    let name = format!("{session}.jsonl");
    let transcript = find_files(&projects, &|p| p.file_name().is_some_and(|n| *n == *name))
        .into_iter()
        .next()
        .ok_or(CarryError::Missing)?;
    let target = to
        .home
        .join(".claude/projects")
        .join(claude_project_dir(to.workdir));
    let mut budget = MAX_BYTES;
    let within = crate::bounded::real_root(from.home)?;
    copy_file(&transcript, &target.join(&name), &within, &mut budget)?;
    if let Some(side) = transcript.parent().map(|d| d.join(session))
        && side.is_dir()
    {
        copy_tree(&side, &target.join(session), &within, &mut budget)?;
    }
    Ok(())
}

/// Codex: the session's rollout files (`sessions/YYYY/MM/DD/rollout-…-<session>.jsonl`), at the same
/// place under the new `CODEX_HOME`.
pub(crate) fn carry_codex(
    session: &str,
    from: SessionPlace,
    to: SessionPlace,
) -> Result<(), CarryError> {
    let sessions = from.home.join(".codex/sessions");
    let files = find_files(&sessions, &|p| named(p, session));
    if files.is_empty() {
        return Err(CarryError::Missing);
    }
    let mut budget = MAX_BYTES;
    let within = crate::bounded::real_root(from.home)?;
    for file in files {
        let relative = file.strip_prefix(&sessions).map_err(io::Error::other)?;
        copy_file(
            &file,
            &to.home.join(".codex/sessions").join(relative),
            &within,
            &mut budget,
        )?;
    }
    Ok(())
}

/// A folder of state under `HOME` copied whole (OpenCode's data folder, a custom command's `HOME`).
pub(crate) fn carry_folder(
    relative: &str,
    from: SessionPlace,
    to: SessionPlace,
) -> Result<(), CarryError> {
    let source = from.home.join(relative);
    if !source.is_dir() {
        return Err(CarryError::Missing);
    }
    let mut budget = MAX_BYTES;
    let within = crate::bounded::real_root(from.home)?;
    copy_tree(&source, &to.home.join(relative), &within, &mut budget)
}
