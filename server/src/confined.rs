//! Files the server writes into folders someone else shaped (a run's worktree, which is a checkout of a
//! repository anyone with push access wrote; a run's HOME) and files it reads from folders a person names
//! (a skill folder to import): never through a symbolic link.
//!
//! Invariants: every path is a trusted `base` (a folder the server made or was given) plus a relative
//! path of plain components; each folder on the way is checked with `lstat` and refused when it is a link;
//! the last component is opened with `O_NOFOLLOW` (and created with `O_EXCL`), so a link planted there
//! is never followed either; reads take regular files only (`O_NONBLOCK`, so a FIFO cannot hang us, then
//! `fstat`). Nothing here resolves a link, so nothing here can reach outside `base`.

use std::fs::OpenOptions;
use std::io::{Read as _, Write as _};
use std::os::unix::fs::OpenOptionsExt as _;
use std::path::{Component, Path, PathBuf};

/// Why a confined path could not be used; each names the path.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A symbolic link on the way (or at the end).
    #[error("{} is a symbolic link; Muster does not write or read through links", path.display())]
    Link { path: PathBuf },
    /// Something other than a folder where a folder was needed.
    #[error("{} is not a folder", path.display())]
    NotDir { path: PathBuf },
    /// Something other than a regular file (a FIFO, a device, a socket, a folder).
    #[error("{} is {kind}, not a regular file", path.display())]
    NotFile { path: PathBuf, kind: &'static str },
    /// The relative part is not a plain path (absolute, or with `..`).
    #[error("{} is not a plain relative path", path.display())]
    NotPlain { path: PathBuf },
    /// Any other I/O failure.
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

impl Error {
    fn io(path: &Path, source: std::io::Error) -> Self {
        // The kernel's answer to O_NOFOLLOW on a link is ELOOP: say what it means.
        if source.raw_os_error() == Some(libc::ELOOP) {
            return Error::Link {
                path: path.to_path_buf(),
            };
        }
        Error::Io {
            path: path.to_path_buf(),
            source,
        }
    }
}

/// The plain components of `rel`, refusing absolute paths and `..`.
fn plain(rel: &Path) -> Result<Vec<&std::ffi::OsStr>, Error> {
    rel.components()
        .filter(|c| !matches!(c, Component::CurDir))
        .map(|c| match c {
            Component::Normal(name) => Ok(name),
            _ => Err(Error::NotPlain {
                path: rel.to_path_buf(),
            }),
        })
        .collect()
}

/// Checks that every folder of `base/rel` exists and none is a link, without creating anything.
pub fn check_dir(base: &Path, rel: &Path) -> Result<(), Error> {
    let mut cur = base.to_path_buf();
    for name in plain(rel)? {
        cur.push(name);
        let meta = std::fs::symlink_metadata(&cur).map_err(|e| Error::io(&cur, e))?;
        if meta.file_type().is_symlink() {
            return Err(Error::Link { path: cur });
        }
        if !meta.is_dir() {
            return Err(Error::NotDir { path: cur });
        }
    }
    Ok(())
}

/// Makes `base/rel` a folder, creating what is missing; refuses a link or a file on the way. Returns
/// the folders it created, outermost first.
pub fn ensure_dir(base: &Path, rel: &Path) -> Result<Vec<PathBuf>, Error> {
    let mut created = Vec::new();
    let mut cur = base.to_path_buf();
    for name in plain(rel)? {
        cur.push(name);
        match std::fs::symlink_metadata(&cur) {
            Ok(meta) if meta.file_type().is_symlink() => return Err(Error::Link { path: cur }),
            Ok(meta) if meta.is_dir() => {}
            Ok(_) => return Err(Error::NotDir { path: cur }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                // mkdir never follows a link: one planted since the lstat makes it fail (EEXIST).
                std::fs::create_dir(&cur).map_err(|e| Error::io(&cur, e))?;
                created.push(cur.clone());
            }
            Err(e) => return Err(Error::io(&cur, e)),
        }
    }
    Ok(created)
}

/// Writes a new file `base/rel` (its folders must exist and are checked): `O_CREAT | O_EXCL |
/// O_NOFOLLOW`, so an existing file or link there is an error, never a write through it.
pub fn write_new(base: &Path, rel: &Path, bytes: &[u8]) -> Result<(), Error> {
    let (dir, name) = split(rel)?;
    check_dir(base, &dir)?;
    let path = base.join(&dir).join(name);
    let mut file = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o644)
        .custom_flags(libc::O_NOFOLLOW)
        .open(&path)
        .map_err(|e| Error::io(&path, e))?;
    file.write_all(bytes).map_err(|e| Error::io(&path, e))
}

/// Replaces the file `base/rel` with a new regular file holding `bytes`: an existing file or link there
/// is unlinked first (the link itself, never its target); a folder there is an error.
pub fn replace(base: &Path, rel: &Path, bytes: &[u8]) -> Result<(), Error> {
    let (dir, name) = split(rel)?;
    check_dir(base, &dir)?;
    let path = base.join(&dir).join(name);
    match std::fs::symlink_metadata(&path) {
        Ok(meta) if meta.is_dir() => {
            return Err(Error::NotFile {
                path,
                kind: "a folder",
            });
        }
        Ok(_) => std::fs::remove_file(&path).map_err(|e| Error::io(&path, e))?,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(Error::io(&path, e)),
    }
    write_new(base, rel, bytes)
}

/// Reads the regular file at `path` (at most `limit` bytes; more is an error), its last component
/// opened without following a link and without blocking on a FIFO. The caller checks the folders.
pub fn read_regular(path: &Path, limit: u64) -> Result<Vec<u8>, Error> {
    let file = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
        .map_err(|e| Error::io(path, e))?;
    let meta = file.metadata().map_err(|e| Error::io(path, e))?;
    if !meta.is_file() {
        return Err(Error::NotFile {
            path: path.to_path_buf(),
            kind: kind_of(&meta.file_type()),
        });
    }
    let mut bytes = Vec::new();
    file.take(limit.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(|e| Error::io(path, e))?;
    if bytes.len() as u64 > limit {
        return Err(Error::Io {
            path: path.to_path_buf(),
            source: std::io::Error::other(format!("larger than {limit} bytes")),
        });
    }
    Ok(bytes)
}

/// What kind of thing a file type is, in words.
pub fn kind_of(t: &std::fs::FileType) -> &'static str {
    use std::os::unix::fs::FileTypeExt as _;
    if t.is_symlink() {
        "a symbolic link"
    } else if t.is_dir() {
        "a folder"
    } else if t.is_fifo() {
        "a FIFO (named pipe)"
    } else if t.is_socket() {
        "a socket"
    } else if t.is_block_device() || t.is_char_device() {
        "a device"
    } else if t.is_file() {
        "a regular file"
    } else {
        "a special file"
    }
}

/// `rel` split into its folder part and its last component.
fn split(rel: &Path) -> Result<(PathBuf, &std::ffi::OsStr), Error> {
    let parts = plain(rel)?;
    let Some((name, dirs)) = parts.split_last() else {
        return Err(Error::NotPlain {
            path: rel.to_path_buf(),
        });
    };
    Ok((dirs.iter().collect(), name))
}

#[cfg(test)]
mod tests;
