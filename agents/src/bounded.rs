//! Reading files an agent could have written (its HOME, its worktree, an earlier run's HOME): the one way
//! the server and the runner open and read them.
//!
//! An agent may make such a file huge (`truncate -s +2G`: one line of two gigabytes), swap it for a
//! symbolic link to a file only the server may read, or for a FIFO that blocks whoever opens it. So:
//! - [`open_regular`] opens with `O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC` and takes regular files only
//!   (`fstat` on the opened file, so nothing can be swapped in between); given a `within` folder, the
//!   opened file's real path must lie under it, so a folder on the way swapped for a link is refused too;
//! - [`read_capped`] reads a whole file of at most `limit` bytes; a larger one is an error, never a
//!   silently cut read;
//! - [`Lines`] reads lines with a cap per line and a cap on all bytes read: a longer line is skipped
//!   ([`Line::TooLong`], for the caller to log), never buffered whole, and past the total nothing more is
//!   read ([`Line::Exhausted`]). Memory stays at one chunk plus one capped line, whatever the file holds.

use std::fs::{File, OpenOptions};
use std::io::{self, Read as _};
use std::os::fd::AsRawFd as _;
use std::os::unix::fs::OpenOptionsExt as _;
use std::path::{Path, PathBuf};

use tokio::io::{AsyncRead, AsyncReadExt as _};

/// How much [`Lines`] reads at once.
const CHUNK: usize = 64 * 1024;

/// Opens the regular file at `path` for reading without following a link at its last component and
/// without blocking on a FIFO. With `within` (a real path taken before the agent could change it, see
/// [`real_root`]), the file's real path must lie under it: a link anywhere on the way out of it is
/// refused. A link is [`io::ErrorKind::InvalidInput`] naming it; anything but a regular file likewise.
pub fn open_regular(path: &Path, within: Option<&Path>) -> io::Result<File> {
    let file = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(path)
        .map_err(|e| {
            if e.raw_os_error() == Some(libc::ELOOP) {
                refused(path, "is a symbolic link")
            } else {
                e
            }
        })?;
    if !file.metadata()?.is_file() {
        return Err(refused(path, "is not a regular file"));
    }
    if let Some(root) = within {
        let real = real_path(&file)?;
        if !real.starts_with(root) {
            return Err(refused(
                path,
                "leads out of its folder through a symbolic link",
            ));
        }
    }
    Ok(file)
}

/// Reads the whole regular file at `path` (see [`open_regular`]); more than `limit` bytes is an
/// [`io::ErrorKind::FileTooLarge`] error, and at most `limit + 1` bytes are ever read.
pub fn read_capped(path: &Path, within: Option<&Path>, limit: u64) -> io::Result<Vec<u8>> {
    let file = open_regular(path, within)?;
    let mut bytes = Vec::new();
    file.take(limit.saturating_add(1)).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > limit {
        return Err(io::Error::new(
            io::ErrorKind::FileTooLarge,
            format!("{} is larger than {limit} bytes", path.display()),
        ));
    }
    Ok(bytes)
}

/// The real path of `dir` as it is now, also when it does not exist yet (its nearest existing folder
/// resolved, the rest appended). Take it before an agent runs: it is the `within` of [`open_regular`].
pub fn real_root(dir: &Path) -> io::Result<PathBuf> {
    let mut rest = Vec::new();
    let mut cur = dir;
    loop {
        match std::fs::canonicalize(cur) {
            Ok(real) => return Ok(rest.into_iter().rev().fold(real, |p, c| p.join(c))),
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                let (Some(parent), Some(name)) = (cur.parent(), cur.file_name()) else {
                    return Err(e);
                };
                rest.push(name.to_owned());
                cur = parent;
            }
            Err(e) => return Err(e),
        }
    }
}

/// Where the open file really is (`/proc/self/fd/N`).
fn real_path(file: &File) -> io::Result<PathBuf> {
    std::fs::read_link(format!("/proc/self/fd/{}", file.as_raw_fd()))
}

fn refused(path: &Path, why: &str) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidInput,
        format!(
            "{} {why}; Muster reads only regular files there",
            path.display()
        ),
    )
}

/// One item of [`Lines`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Line {
    /// A complete line, without its `\n` (or `\r\n`); invalid UTF-8 replaced.
    Text(String),
    /// A line longer than the cap, skipped whole; its length in bytes (without the `\n`).
    TooLong(u64),
    /// The cap on all bytes read was reached: nothing more is read. Comes once.
    Exhausted(u64),
}

/// Capped lines of a reader, for a file that may still be growing: at the current end of the file
/// [`Lines::next`] returns `None` and keeps the unfinished line, so a later call continues it.
#[derive(Debug)]
pub struct Lines<R> {
    reader: R,
    chunk: Box<[u8]>,
    start: usize,
    end: usize,
    line: Vec<u8>,
    /// Bytes of the current line beyond the cap (the line is being skipped when non-zero).
    over: u64,
    read: u64,
    max_line: usize,
    max_total: u64,
    exhausted: bool,
}

impl<R: AsyncRead + Unpin> Lines<R> {
    /// Lines of `reader` of at most `max_line` bytes, reading at most `max_total` bytes in all.
    pub fn new(reader: R, max_line: usize, max_total: u64) -> Self {
        Self {
            reader,
            chunk: vec![0; CHUNK].into_boxed_slice(),
            start: 0,
            end: 0,
            line: Vec::new(),
            over: 0,
            read: 0,
            max_line,
            max_total,
            exhausted: false,
        }
    }

    /// The next complete line (or skipped one), or `None` at the current end of the input.
    pub async fn next(&mut self) -> io::Result<Option<Line>> {
        loop {
            if self.start == self.end {
                if self.read >= self.max_total {
                    if self.exhausted {
                        return Ok(None);
                    }
                    self.exhausted = true;
                    self.line = Vec::new();
                    return Ok(Some(Line::Exhausted(self.max_total)));
                }
                let want = usize::try_from(self.max_total - self.read)
                    .unwrap_or(usize::MAX)
                    .min(self.chunk.len());
                let n = self.reader.read(&mut self.chunk[..want]).await?;
                if n == 0 {
                    return Ok(None);
                }
                self.read += n as u64;
                (self.start, self.end) = (0, n);
            }
            let (start, end) = (self.start, self.end);
            match self.chunk[start..end].iter().position(|&b| b == b'\n') {
                Some(i) => {
                    self.keep(start, start + i);
                    self.start = start + i + 1;
                    let over = std::mem::take(&mut self.over);
                    if over > 0 {
                        return Ok(Some(Line::TooLong(over)));
                    }
                    let mut line = std::mem::take(&mut self.line);
                    if line.last() == Some(&b'\r') {
                        line.pop();
                    }
                    return Ok(Some(Line::Text(
                        String::from_utf8_lossy(&line).into_owned(),
                    )));
                }
                None => {
                    self.keep(start, end);
                    self.start = end;
                }
            }
        }
    }

    /// Adds `chunk[from..to]` to the current line, or counts it as skipped once the line is too long
    /// (what was kept of it is then freed).
    fn keep(&mut self, from: usize, to: usize) {
        let n = to - from;
        if self.over == 0 && self.line.len() + n <= self.max_line {
            self.line.extend_from_slice(&self.chunk[from..to]);
            return;
        }
        if self.over == 0 {
            self.over = self.line.len() as u64;
            self.line = Vec::new();
        }
        self.over += n as u64;
    }
}

#[cfg(test)]
mod tests;
