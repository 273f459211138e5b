//! Repositories that live elsewhere: a workspace's repository setting is either a folder on the server's
//! machine or a git URL that every runner clones into its own cache (a bare mirror) and fetches before
//! each run; the run's branch is pushed back there at the end when the runner may push.
//!
//! Invariants: a mirror is `<cache>/<sha256(url) first 16 hex>.git`, made under a temporary name and
//! renamed when whole, so a crash never leaves a half clone that looks whole; the remote's branches are
//! fetched into `refs/remotes/origin/*` and its HEAD into [`REMOTE_HEAD`], never into `refs/heads/*`,
//! so a fetch (with prune) can neither move nor delete a run's branch, checked out in a live worktree or
//! not yet pushed; one process-wide lock per mirror serialises its fetches; git never prompts (no
//! terminal prompt, ssh in batch mode) and every network command is bounded by [`NETWORK_TIMEOUT`];
//! pushes are never forced.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, LazyLock, Mutex};
use std::time::Duration;

use sha2::{Digest as _, Sha256};

use super::{GitError, Worktree};

/// Longest a clone, fetch or push may take before the run is told the remote does not answer.
pub const NETWORK_TIMEOUT: Duration = Duration::from_secs(300);
/// Where a mirror keeps the commit the remote's HEAD pointed at when last fetched: a run's base.
pub const REMOTE_HEAD: &str = "refs/muster/remote-head";
/// Where a mirror keeps the remote's branches (the run branches stay alone in `refs/heads/`).
pub const REMOTE_BRANCHES: &str = "refs/remotes/origin";

/// Where a workspace's repository is: parsed from its setting.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RepoSource {
    /// A repository folder on the server's machine (absolute).
    Path(PathBuf),
    /// A git URL each runner clones (`file://`, `http(s)://`, `ssh://`, `git://` or scp-like
    /// `user@host:path`), without credentials.
    Url(String),
}

/// The URL schemes a workspace's repository may use.
const SCHEMES: [&str; 5] = ["file", "http", "https", "ssh", "git"];

impl RepoSource {
    /// Parses a repository setting. A URL is checked for syntax only (the server may not reach it);
    /// anything that is not a URL must be an absolute path. The error is a sentence a person can act on.
    pub fn parse(raw: &str) -> Result<RepoSource, GitError> {
        let raw = raw.trim();
        if raw.is_empty() {
            return Err(GitError::Other("must not be empty".to_owned()));
        }
        if raw.chars().any(char::is_control) {
            return Err(GitError::Other(
                "must not contain control characters".to_owned(),
            ));
        }
        if raw.starts_with('/') {
            return Ok(RepoSource::Path(PathBuf::from(raw)));
        }
        if raw.contains("::") {
            return Err(GitError::Other(format!(
                "{raw} is a git remote-helper address (`transport::address`), which Muster does not run; give an https://, ssh:// or git:// URL"
            )));
        }
        if raw.chars().any(char::is_whitespace) {
            return Err(GitError::Other(format!(
                "{raw} contains spaces; a git URL has none (encode them as %20)"
            )));
        }
        if let Some((scheme, rest)) = raw.split_once("://") {
            return parse_url(raw, &scheme.to_ascii_lowercase(), rest).map(RepoSource::Url);
        }
        if let Some((host, path)) = raw.split_once(':')
            && !host.contains('/')
            && !host.is_empty()
        {
            return parse_scp(raw, host, path).map(RepoSource::Url);
        }
        Err(GitError::Other(format!(
            "{raw} is not an absolute path or a git URL; give the full path on the server (e.g. /home/me/project) or a URL (https://host/org/repo.git, ssh://host/repo.git, git@host:org/repo.git)"
        )))
    }
}

/// Checks `scheme://rest`; returns the URL as it is stored.
fn parse_url(raw: &str, scheme: &str, rest: &str) -> Result<String, GitError> {
    if !SCHEMES.contains(&scheme) {
        return Err(GitError::Other(format!(
            "the URL scheme `{scheme}://` is not supported; use https://, http://, ssh://, git:// or file://"
        )));
    }
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (authority, path) = rest.split_at(end);
    if scheme == "file" {
        if !authority.is_empty() {
            return Err(GitError::Other(format!(
                "{raw} names a host; a file:// URL is a folder on each runner, written file:///absolute/path"
            )));
        }
        if path.len() < 2 {
            return Err(GitError::Other(format!(
                "{raw} names no folder; write file:///absolute/path"
            )));
        }
        return Ok(raw.to_owned());
    }
    if let Some((userinfo, _)) = authority.rsplit_once('@') {
        let http = scheme.starts_with("http");
        if http || userinfo.contains(':') {
            return Err(GitError::Other(format!(
                "{scheme}:// URLs must not carry credentials (they would be shown on pages and in run logs); remove the part before `@` and give the runners' git a credential helper instead (e.g. `git config --global credential.helper store` on each runner)"
            )));
        }
    }
    let host = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    if host.is_empty() || host.starts_with(':') {
        return Err(GitError::Other(format!(
            "{raw} names no host; write {scheme}://host/path"
        )));
    }
    if host.starts_with('-') {
        return Err(GitError::Other(format!(
            "{raw}: a host name cannot start with `-`"
        )));
    }
    if path.len() < 2 {
        return Err(GitError::Other(format!(
            "{raw} names no repository; write {scheme}://{host}/path/to/repo.git"
        )));
    }
    Ok(raw.to_owned())
}

/// Checks scp-like `[user@]host:path`; returns it as it is stored.
fn parse_scp(raw: &str, host: &str, path: &str) -> Result<String, GitError> {
    let name = host.rsplit_once('@').map_or(host, |(_, h)| h);
    if name.is_empty() || host.starts_with('@') {
        return Err(GitError::Other(format!(
            "{raw} names no host; write user@host:path/to/repo.git"
        )));
    }
    if host.starts_with('-') {
        return Err(GitError::Other(format!(
            "{raw}: a host name cannot start with `-`"
        )));
    }
    if path.is_empty() {
        return Err(GitError::Other(format!(
            "{raw} names no repository; write {host}:path/to/repo.git"
        )));
    }
    Ok(raw.to_owned())
}

/// The runner's own identity for the remote, passed to network git commands only (their environment is
/// otherwise just `PATH`): `HOME` for its git config and credential helper, the ssh agent's socket. The
/// agent's environment never gets these: it is built separately and explicitly (see `prepare`).
#[allow(clippy::disallowed_methods)] // The runner's own login, process state like PATH, not configuration.
fn network_env() -> Vec<(String, String)> {
    let mut env: Vec<(String, String)> = ["HOME", "SSH_AUTH_SOCK"]
        .into_iter()
        .filter_map(|k| Some((k.to_owned(), std::env::var(k).ok()?)))
        .collect();
    // Never ask: no password, passphrase or host-key question waits for a terminal nobody watches.
    env.push((
        "GIT_SSH_COMMAND".to_owned(),
        "ssh -o BatchMode=yes -o ConnectTimeout=30".to_owned(),
    ));
    env
}

/// [`network_env`], with `auth` (an `Authorization` header value) as an extra HTTP header through git's
/// `GIT_CONFIG_*` variables: on no command line, in no file, in no config an agent could read.
fn auth_env(auth: Option<&str>) -> Vec<(String, String)> {
    let mut env = network_env();
    if let Some(header) = auth {
        env.extend([
            ("GIT_CONFIG_COUNT".to_owned(), "1".to_owned()),
            ("GIT_CONFIG_KEY_0".to_owned(), "http.extraHeader".to_owned()),
            (
                "GIT_CONFIG_VALUE_0".to_owned(),
                format!("Authorization: {header}"),
            ),
        ]);
    }
    env
}

/// Runs a git command that talks to a remote, bounded by `timeout`, with the environment `env`
/// ([`network_env`] or [`auth_env`]).
async fn git_network_with(
    cwd: &Path,
    args: &[&str],
    env: &[(String, String)],
    timeout: Duration,
) -> Result<String, GitError> {
    // A transfer that stalls below 1 KB/s for a minute gives up before the hard timeout.
    let mut all = vec![
        "-c",
        "http.lowSpeedLimit=1000",
        "-c",
        "http.lowSpeedTime=60",
    ];
    all.extend_from_slice(args);
    super::git_with_timeout(cwd, &all, env, timeout)
        .await
        .map_err(|e| match e {
            GitError::TimedOut { timeout, .. } => {
                GitError::Other(format!("the remote did not answer within {timeout} s"))
            }
            other => other,
        })
}

/// One lock per mirror path for this process: fetches into one mirror never overlap. Entries are never
/// removed (one per repository this runner has used).
static MIRROR_LOCKS: LazyLock<Mutex<HashMap<PathBuf, Arc<tokio::sync::Mutex<()>>>>> =
    LazyLock::new(Mutex::default);

fn mirror_lock(path: &Path) -> Arc<tokio::sync::Mutex<()>> {
    let mut locks = MIRROR_LOCKS
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    locks.entry(path.to_path_buf()).or_default().clone()
}

/// The mirror's path for `url` in `cache_dir`.
pub fn mirror_path(cache_dir: &Path, url: &str) -> PathBuf {
    let digest = Sha256::digest(url.as_bytes());
    let hex: String = digest.iter().take(8).map(|b| format!("{b:02x}")).collect();
    cache_dir.join(format!("{hex}.git"))
}

/// Brings the bare mirror of `url` in `cache_dir` up to date (cloning it on first use) and returns its
/// path; runs' worktrees are then made from it at [`REMOTE_HEAD`].
pub async fn mirror(cache_dir: &Path, url: &str) -> Result<PathBuf, GitError> {
    mirror_with_timeout(cache_dir, url, None, NETWORK_TIMEOUT).await
}

/// [`mirror`] of a repository that needs `auth` (an `Authorization` header value, handed to git as in
/// [`push_branch_to`]) to be read: a private forge project.
pub async fn mirror_with_auth(
    cache_dir: &Path,
    url: &str,
    auth: Option<&str>,
) -> Result<PathBuf, GitError> {
    mirror_with_timeout(cache_dir, url, auth, NETWORK_TIMEOUT).await
}

/// [`mirror_with_auth`] with another bound on each network command (tests use a short one).
pub async fn mirror_with_timeout(
    cache_dir: &Path,
    url: &str,
    auth: Option<&str>,
    timeout: Duration,
) -> Result<PathBuf, GitError> {
    let shown = crate::redact::without_credentials(url);
    let path = mirror_path(cache_dir, url);
    let lock = mirror_lock(&path);
    let _held = lock.lock().await;
    if path.is_dir() {
        fetch(&path, url, auth, timeout)
            .await
            .map_err(|e| GitError::Other(format!("cannot fetch {shown}: {e}")))?;
        return Ok(path);
    }
    tokio::fs::create_dir_all(cache_dir)
        .await
        .map_err(|e| GitError::Other(format!("cannot create {}: {e}", cache_dir.display())))?;
    let mut tmp = path.clone().into_os_string();
    tmp.push(".partial");
    let tmp = PathBuf::from(tmp);
    // Left by a crash: never whole, never used.
    let _ = tokio::fs::remove_dir_all(&tmp).await;
    let made = async {
        let target = tmp.display().to_string();
        super::git(cache_dir, &["init", "--quiet", "--bare", &target]).await?;
        fetch(&tmp, url, auth, timeout).await
    };
    if let Err(e) = made.await {
        let _ = tokio::fs::remove_dir_all(&tmp).await;
        return Err(GitError::Other(format!("cannot clone {shown}: {e}")));
    }
    tokio::fs::rename(&tmp, &path).await.map_err(|e| {
        GitError::Other(format!("cannot move the clone of {shown} into place: {e}"))
    })?;
    Ok(path)
}

/// Fetches the remote's HEAD and branches into the mirror at `repo`, pruning branches it deleted.
async fn fetch(
    repo: &Path,
    url: &str,
    auth: Option<&str>,
    timeout: Duration,
) -> Result<(), GitError> {
    let head = format!("+HEAD:{REMOTE_HEAD}");
    let branches = format!("+refs/heads/*:{REMOTE_BRANCHES}/*");
    let args = [
        "fetch",
        "--quiet",
        // FETCH_HEAD would name the URL in the mirror, which agents may read; nothing uses it.
        "--no-write-fetch-head",
        "--prune",
        "--no-tags",
        "--",
        url,
        &head,
        &branches,
    ];
    match git_network_with(repo, &args, &auth_env(auth), timeout).await {
        Err(GitError::Failed { stderr, .. })
            if stderr.contains("couldn't find remote ref HEAD") =>
        {
            Err(GitError::Other(
                "the remote repository has no commit yet; push a first commit so runs have a base"
                    .to_owned(),
            ))
        }
        other => other.map(drop),
    }
}

/// Pushes `commit` (what the run committed, never a tip read later) to the run's branch at `url`, never
/// forced: a remote whose branch of that name has moved elsewhere, or that refuses it, keeps its own and
/// the error says why.
pub async fn push_branch(tree: &Worktree, commit: &str, url: &str) -> Result<(), GitError> {
    push_branch_with_timeout(tree, commit, url, &tree.branch, None, NETWORK_TIMEOUT).await
}

/// [`push_branch`] to the branch `branch` at `url` (a forge may send the work of a line whose pull
/// request was merged to a fresh branch), with `auth` — an `Authorization` header value — handed to git
/// through its environment (`GIT_CONFIG_*`), so it is on no command line, in no file and in no config.
pub async fn push_branch_to(
    tree: &Worktree,
    commit: &str,
    url: &str,
    branch: &str,
    auth: Option<&str>,
) -> Result<(), GitError> {
    push_branch_with_timeout(tree, commit, url, branch, auth, NETWORK_TIMEOUT).await
}

async fn push_branch_with_timeout(
    tree: &Worktree,
    commit: &str,
    url: &str,
    branch: &str,
    auth: Option<&str>,
    timeout: Duration,
) -> Result<(), GitError> {
    let refspec = format!("{commit}:refs/heads/{branch}");
    let env = auth_env(auth);
    // From the mirror, whose config the agent cannot write, not from the agent's worktree.
    git_network_with(
        &tree.repo,
        &["push", "--quiet", "--no-verify", "--", url, &refspec],
        &env,
        timeout,
    )
    .await
    .map(drop)
    .map_err(|e| {
        let shown = crate::redact::without_credentials(url);
        GitError::Other(format!("cannot push {branch} to {shown}: {e}"))
    })
}

#[cfg(test)]
mod tests;
