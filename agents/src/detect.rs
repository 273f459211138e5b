//! Detection: is a CLI installed, which version, and is it new enough?
//!
//! The binary is found with `which` (on a blocking thread) or taken from an explicit override.
//! `<bin> --version` then runs with a timeout in its own process group: on timeout the group is
//! killed, and at most [`MAX_VERSION_OUTPUT`] bytes of each stream are read, so no output (a 5 MB
//! line, nothing at all, a hang) can block or exhaust the caller. The first `x.y.z` in the output
//! is compared with the kind's minimum ([`min_version`], the versions Muster was tested with).
//! Custom commands are only located: running an arbitrary program with `--version` may do anything.

use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Serialize;
use tokio::io::{AsyncRead, AsyncReadExt};

use crate::{LaunchSpec, RuntimeKind, llama, process};

/// How long `--version` may take before the CLI is reported broken.
pub const VERSION_TIMEOUT: Duration = Duration::from_secs(5);
/// Most bytes read from each of stdout and stderr of `--version`.
pub const MAX_VERSION_OUTPUT: u64 = 64 * 1024;
/// Longest excerpt of bad output quoted in a reason.
const REASON_EXCERPT_CHARS: usize = 80;

/// What detection found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum DetectionStatus {
    /// Installed, and new enough.
    Found,
    /// Installed, but older than the minimum version.
    TooOld,
    /// Not found on `PATH` (or not at the override path).
    NotInstalled,
    /// Found, but `--version` failed, hung or printed no version.
    Broken,
}

impl DetectionStatus {
    /// The snake_case name, as serialised (`found`, `too_old`, `not_installed`, `broken`).
    pub fn as_str(self) -> &'static str {
        match self {
            DetectionStatus::Found => "found",
            DetectionStatus::TooOld => "too_old",
            DetectionStatus::NotInstalled => "not_installed",
            DetectionStatus::Broken => "broken",
        }
    }
}

/// The detection report for one runtime kind.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Detection {
    /// The kind probed.
    pub kind: RuntimeKind,
    /// The binary found, if any.
    pub path: Option<PathBuf>,
    /// The version it reported (`x.y.z`), if any.
    pub version: Option<String>,
    /// The verdict.
    pub status: DetectionStatus,
    /// A plain-language reason for any status but `Found`.
    pub reason: Option<String>,
}

/// A semver-ish `major.minor.patch`, ordered numerically.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Version(pub u64, pub u64, pub u64);

impl fmt::Display for Version {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}.{}", self.0, self.1, self.2)
    }
}

/// The oldest version Muster supports for `kind`: the pinned build its parsers were recorded against
/// ([`crate::pins`]; event fields change between minors). `None`: no minimum.
pub fn min_version(kind: RuntimeKind) -> Option<Version> {
    crate::pins::pin(kind).map(|p| p.version)
}

/// How to install the build of `kind` Muster is tested with; `None` for a custom command.
pub fn install_hint(kind: RuntimeKind) -> Option<String> {
    match kind {
        RuntimeKind::Llama => {
            Some("install llama.cpp (llama-server) or Ollama, or: pip install xllamacpp".to_owned())
        }
        _ => crate::pins::pin(kind).map(crate::pins::Pin::install_command),
    }
}

/// The binary names probed on `PATH` for `kind`, in order of preference.
pub fn binary_names(kind: RuntimeKind) -> &'static [&'static str] {
    match kind {
        RuntimeKind::Claude => &["claude"],
        RuntimeKind::Codex => &["codex"],
        RuntimeKind::Opencode => &["opencode"],
        RuntimeKind::Llama => &llama::BINARIES,
        RuntimeKind::Custom => &[],
    }
}

/// The first `x.y.z` in `text` whose parts are all numbers, not part of a longer dotted run.
pub fn parse_version(text: &str) -> Option<Version> {
    text.split(|c: char| !(c.is_ascii_digit() || c == '.'))
        .find_map(|token| {
            let mut parts = token.split('.');
            let (major, minor, patch) = (parts.next()?, parts.next()?, parts.next()?);
            if parts.next().is_some() {
                return None;
            }
            Some(Version(
                major.parse().ok()?,
                minor.parse().ok()?,
                patch.parse().ok()?,
            ))
        })
}

/// Detects `kind` with the default [`VERSION_TIMEOUT`]; `override_path` skips the `PATH` search.
pub async fn detect(kind: RuntimeKind, override_path: Option<&Path>) -> Detection {
    detect_with_timeout(kind, override_path, VERSION_TIMEOUT).await
}

/// [`detect`] with an explicit `--version` timeout.
pub async fn detect_with_timeout(
    kind: RuntimeKind,
    override_path: Option<&Path>,
    timeout: Duration,
) -> Detection {
    let report = |path: Option<PathBuf>, status, reason: String| Detection {
        kind,
        path,
        version: None,
        status,
        reason: Some(reason),
    };
    let path = match locate(kind, override_path).await {
        Ok(path) => path,
        Err(reason) => return report(None, DetectionStatus::NotInstalled, reason),
    };
    if kind == RuntimeKind::Custom {
        return Detection {
            kind,
            path: Some(path),
            version: None,
            status: DetectionStatus::Found,
            reason: None,
        };
    }
    let (shown, version) = match probe_version(kind, &path, timeout).await {
        Ok(found) => found,
        Err(reason) => return report(Some(path), DetectionStatus::Broken, reason),
    };
    let (status, reason) = match (version, min_version(kind)) {
        (Some(version), Some(min)) if version < min => (
            DetectionStatus::TooOld,
            Some(format!("version {version} is older than the minimum {min}")),
        ),
        _ => (DetectionStatus::Found, None),
    };
    Detection {
        kind,
        path: Some(path),
        version: Some(shown),
        status,
        reason,
    }
}

/// Finds the binary: the override if it is a file, else the first of the kind's names on `PATH`.
async fn locate(kind: RuntimeKind, override_path: Option<&Path>) -> Result<PathBuf, String> {
    if let Some(path) = override_path {
        return if path.is_file() {
            Ok(path.to_path_buf())
        } else {
            Err(format!(
                "{} does not exist or is not a file",
                path.display()
            ))
        };
    }
    let names = binary_names(kind);
    if names.is_empty() {
        return Err(format!("{kind} needs an explicit command path"));
    }
    let found =
        tokio::task::spawn_blocking(move || names.iter().find_map(|name| which::which(name).ok()))
            .await
            .ok()
            .flatten();
    found.ok_or_else(|| format!("{} was not found on PATH", names.join(" or ")))
}

/// The version in `--version` output, as shown and as parsed: the first `x.y.z`, or for llama.cpp
/// builds, which print `version: 4567 (abc123)`, the build number shown as `b4567`.
fn find_version(kind: RuntimeKind, text: &str) -> Option<(String, Option<Version>)> {
    if let Some(version) = parse_version(text) {
        return Some((version.to_string(), Some(version)));
    }
    if kind != RuntimeKind::Llama {
        return None;
    }
    let rest = text.split("version:").nth(1)?.trim_start();
    let build: String = rest.chars().take_while(char::is_ascii_digit).collect();
    (!build.is_empty()).then(|| (format!("b{build}"), None))
}

/// Runs `<path> --version` and returns the version, or a plain reason why not.
async fn probe_version(
    kind: RuntimeKind,
    path: &Path,
    timeout: Duration,
) -> Result<(String, Option<Version>), String> {
    let spec = LaunchSpec {
        program: path.to_path_buf(),
        args: vec!["--version".into()],
        cwd: std::env::temp_dir(),
        ..LaunchSpec::default()
    };
    let mut child = process::to_command(&spec)
        .spawn()
        .map_err(|e| format!("could not run {}: {e}", path.display()))?;
    let (Some(stdout), Some(stderr)) = (child.stdout.take(), child.stderr.take()) else {
        let _ = process::kill_group(&mut child).await;
        return Err("could not capture the output of --version".into());
    };
    let run = async {
        let (out, err) = tokio::join!(read_capped(stdout), read_capped(stderr));
        // The pipes are closed now, so a child still writing gets EPIPE instead of blocking.
        let status = child.wait().await;
        (out, err, status)
    };
    let outcome = tokio::time::timeout(timeout, run).await;
    let Ok((out, err, status)) = outcome else {
        let _ = process::kill_group(&mut child).await;
        return Err(format!(
            "--version did not finish within {} s",
            timeout.as_secs_f32()
        ));
    };
    let status = status.map_err(|e| format!("could not wait for --version: {e}"))?;
    let (out, err) = (out?, err?);
    if !status.success() {
        let detail = excerpt(&err).or_else(|| excerpt(&out)).unwrap_or_default();
        return Err(format!("--version failed ({status}) {detail}")
            .trim_end()
            .to_owned());
    }
    if out.trim().is_empty() && err.trim().is_empty() {
        return Err("--version printed nothing".into());
    }
    find_version(kind, &out)
        .or_else(|| find_version(kind, &err))
        .ok_or_else(|| {
            let shown = excerpt(&out).or_else(|| excerpt(&err)).unwrap_or_default();
            format!("no version number (x.y.z) in the --version output {shown}")
                .trim_end()
                .to_owned()
        })
}

/// Reads at most [`MAX_VERSION_OUTPUT`] bytes; more is an error (nothing sane prints that much).
async fn read_capped(stream: impl AsyncRead + Unpin) -> Result<String, String> {
    let mut bytes = Vec::new();
    let mut limited = stream.take(MAX_VERSION_OUTPUT + 1);
    limited
        .read_to_end(&mut bytes)
        .await
        .map_err(|e| format!("could not read the output of --version: {e}"))?;
    if bytes.len() as u64 > MAX_VERSION_OUTPUT {
        return Err(format!(
            "--version printed more than {MAX_VERSION_OUTPUT} bytes"
        ));
    }
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

/// The first non-blank line of `text`, quoted and shortened, for a reason.
fn excerpt(text: &str) -> Option<String> {
    let line = text.lines().map(str::trim).find(|l| !l.is_empty())?;
    let short: String = line.chars().take(REASON_EXCERPT_CHARS).collect();
    let ellipsis = if short.len() < line.len() { "…" } else { "" };
    Some(format!("{short:?}{ellipsis}"))
}

#[cfg(test)]
mod tests;
