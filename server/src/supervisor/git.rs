//! Git worktrees for runs: one worktree and branch `muster/<KEY>-r<attempt>` per run of a workspace that
//! has a repository, created at the repository's HEAD commit (the run's base).
//!
//! Invariants: every git command runs through `muster_agents::process::run_captured` (the one process
//! home) with [`GIT_TIMEOUT`] and a failure carries git's stderr; the brief (`CLAUDE.md`/`AGENTS.md`) is
//! kept out of the diff (hidden from the agent's `git status` through `core.excludesFile` in its
//! environment, deleted — or restored when the repository tracks that file — before the work is
//! committed), and so are the skill folders Muster writes; the agent's work is committed on its branch
//! before the worktree directory is removed, so nothing is lost; the branch stays. A repository that is a
//! git URL is reached through a per-runner mirror (see [`remote`]).

mod remote;

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};

pub use remote::{
    NETWORK_TIMEOUT, REMOTE_HEAD, RepoSource, mirror, mirror_path, mirror_with_timeout, push_branch,
};

/// Longest a single git command may take.
pub const GIT_TIMEOUT: Duration = Duration::from_secs(120);
/// Largest unified diff kept in the run's `diff` event; the rest is cut with a note.
pub const MAX_PATCH_BYTES: usize = 256 * 1024;
/// Where a run's worktree facts are kept, next to its `work` directory (read again after a crash).
const STATE_FILE: &str = "worktree.json";
/// The exclude file handed to the agent's git (`core.excludesFile`), next to its `work` directory.
const EXCLUDE_FILE: &str = "git-exclude";

/// A run's worktree: where, on which branch, from which base, and the brief file kept out of the diff.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Worktree {
    pub repo: PathBuf,
    pub path: PathBuf,
    pub branch: String,
    /// The commit the branch starts from (the repository's HEAD when the run was prepared).
    pub base: String,
    /// The brief's file name in the worktree.
    pub brief: String,
    /// Whether the repository tracks a file of that name at `base` (it is then restored, not deleted).
    pub brief_tracked: bool,
    /// The worktree's own git folder (`R/.git/worktrees/<name>`), read when it was created.
    #[serde(default)]
    pub git_dir: Option<PathBuf>,
    /// The repository's git folder the worktree shares (`R/.git`), read when it was created.
    #[serde(default)]
    pub git_common_dir: Option<PathBuf>,
    /// The git URL the repository mirrors, when the workspace's repository is one (`repo` is then the
    /// runner's mirror): where the branch is pushed at the end.
    #[serde(default)]
    pub remote: Option<String>,
    /// For a worktree of a private repository (see [`create_isolated`]; `repo` is then that private
    /// repository): the workspace's repository, where the branch is copied at the end.
    #[serde(default)]
    pub origin: Option<PathBuf>,
}

/// What a run changed, against its base.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Diff {
    pub stat: String,
    pub patch: String,
    pub truncated: bool,
}

impl Diff {
    /// Whether the run changed nothing.
    pub fn is_empty(&self) -> bool {
        self.stat.trim().is_empty()
    }
}

/// Settings every git command of the server runs with: a worktree is the agent's, so hooks or an
/// fsmonitor it planted (in the worktree's config or anywhere git reads one) must never run outside the
/// sandbox.
const SAFE_CONFIG: [&str; 4] = [
    "-c",
    "core.hooksPath=/dev/null",
    "-c",
    "core.fsmonitor=false",
];

/// Runs `git args…` in `cwd` (with [`SAFE_CONFIG`]); stdout on success, else a message with git's stderr.
pub async fn git(cwd: &Path, args: &[&str]) -> Result<String, String> {
    git_with(cwd, args, &[]).await
}

/// Runs `git args…` in the run's worktree with its git folders named explicitly (`GIT_DIR`,
/// `GIT_COMMON_DIR`, `GIT_WORK_TREE`), so that neither `W/.git` nor the worktree's `commondir` file, which
/// the agent can rewrite, decides which repository and config the server's git uses.
async fn git_in(tree: &Worktree, args: &[&str]) -> Result<String, String> {
    let (Some(admin), Some(common)) = (&tree.git_dir, &tree.git_common_dir) else {
        return git(&tree.path, args).await; // Recorded before these were kept.
    };
    let env = [
        ("GIT_DIR", admin.as_path()),
        ("GIT_COMMON_DIR", common.as_path()),
        ("GIT_WORK_TREE", tree.path.as_path()),
    ]
    .map(|(k, v)| (k.to_owned(), v.display().to_string()));
    git_with(&tree.path, args, &env).await
}

async fn git_with(cwd: &Path, args: &[&str], extra: &[(String, String)]) -> Result<String, String> {
    git_with_timeout(cwd, args, extra, GIT_TIMEOUT).await
}

async fn git_with_timeout(
    cwd: &Path,
    args: &[&str],
    extra: &[(String, String)],
    timeout: Duration,
) -> Result<String, String> {
    let shown = args.join(" ");
    let args: Vec<String> = SAFE_CONFIG
        .iter()
        .chain(args)
        .map(|a| (*a).to_owned())
        .collect();
    let mut env = vec![
        ("GIT_TERMINAL_PROMPT".to_owned(), "0".to_owned()),
        ("LC_ALL".to_owned(), "C".to_owned()),
    ];
    env.extend_from_slice(extra);
    let out = muster_agents::process::run_captured("git", &args, cwd, &env, timeout)
        .await
        .map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound if cwd.is_dir() => {
                "git is not installed (not found on PATH)".to_owned()
            }
            _ => format!("git {shown} failed: {e}"),
        })?;
    if out.status.success() {
        return Ok(String::from_utf8_lossy(&out.stdout).into_owned());
    }
    let stderr = String::from_utf8_lossy(&out.stderr);
    Err(format!(
        "git {shown} failed ({}): {}",
        out.status,
        stderr.trim()
    ))
}

/// Checks a workspace's repository setting and returns the value to store. A URL is checked for syntax
/// only (the server may not reach it; each runner clones it). A path must name a git repository with at
/// least one commit and is stored as its top-level folder. The error is a sentence a person can act on.
pub async fn check_repo(raw: &str) -> Result<String, String> {
    let path = match RepoSource::parse(raw)? {
        RepoSource::Url(url) => return Ok(url),
        RepoSource::Path(path) => path,
    };
    let path = path.as_path();
    match tokio::fs::metadata(path).await {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(format!("{} does not exist on the server", path.display()));
        }
        Err(e) => return Err(format!("{} cannot be read: {e}", path.display())),
        Ok(m) if !m.is_dir() => return Err(format!("{} is not a folder", path.display())),
        Ok(_) => {}
    }
    let top = git(path, &["rev-parse", "--show-toplevel"])
        .await
        .map_err(|e| {
            format!(
                "{} is not a git repository ({e}); run `git init` there first",
                path.display()
            )
        })?;
    let top = PathBuf::from(top.trim());
    head_commit(&top).await.map_err(|_| {
        format!(
            "{} has no commit yet; make a first commit so runs have a base to branch from",
            top.display()
        )
    })?;
    Ok(top.display().to_string())
}

/// The commit HEAD points at.
pub async fn head_commit(repo: &Path) -> Result<String, String> {
    commit(repo, "HEAD").await
}

/// The commit `rev` names in `repo`, as a full hash.
pub async fn commit(repo: &Path, rev: &str) -> Result<String, String> {
    let sha = git(
        repo,
        &["rev-parse", "--verify", &format!("{rev}^{{commit}}")],
    )
    .await?;
    Ok(sha.trim().to_owned())
}

/// Creates the worktree `<run_dir>/work` on a new branch at `start` (a commit; the repository's HEAD
/// when `None`), and records it in `<run_dir>/worktree.json`. `branch` is taken as is unless it exists
/// (an earlier run of the same attempt number); then the run's short id is appended.
pub async fn create(
    repo: &Path,
    run_dir: &Path,
    names: &Names<'_>,
    start: Option<String>,
) -> Result<Worktree, String> {
    let at = start_and_branch(repo, false, names, start).await?;
    make(repo, None, None, run_dir, names.brief, at).await
}

/// [`create`] from a runner's mirror of `url` (see [`mirror`]): the branch starts at `start` or else
/// the remote's HEAD as last fetched, and is renamed too when the remote already has a branch of that
/// name (a run on another runner), so that pushing it never meets someone else's branch.
pub async fn create_from_mirror(
    mirror: &Path,
    url: &str,
    run_dir: &Path,
    names: &Names<'_>,
    start: Option<String>,
) -> Result<Worktree, String> {
    let at = start_and_branch(mirror, true, names, start).await?;
    make(mirror, Some(url), None, run_dir, names.brief, at).await
}

/// [`create`] (or [`create_from_mirror`] when `url` is set, `repo` being the mirror) in a private bare
/// repository `<run_dir>/repo` that holds only the history of `start`: the agent's git rights (objects,
/// its own branch) are over that repository alone, so it cannot read or move any other run's branch — an
/// ensemble's candidates stay blind to each other. The branch name is checked against `repo`; at the
/// end [`return_branch`] copies the branch there (a mirror's is pushed to `url` from the private
/// repository instead).
pub async fn create_isolated(
    repo: &Path,
    url: Option<&str>,
    run_dir: &Path,
    names: &Names<'_>,
    start: Option<String>,
) -> Result<Worktree, String> {
    let (start, branch) = start_and_branch(repo, url.is_some(), names, start).await?;
    let private = run_dir.join("repo");
    let target = private.display().to_string();
    git(run_dir, &["init", "--quiet", "--bare", &target]).await?;
    // Only what `start` reaches: a fetch by commit packs its history and nothing else.
    let source = repo.display().to_string();
    git(
        &private,
        &[
            "fetch",
            "--quiet",
            "--no-tags",
            "--no-write-fetch-head",
            "--",
            &source,
            &format!("{start}:refs/muster/base"),
        ],
    )
    .await
    .map_err(|e| format!("cannot copy the history of {start} from {source}: {e}"))?;
    make(
        &private,
        url,
        Some(repo),
        run_dir,
        names.brief,
        (start, branch),
    )
    .await
}

/// Copies the branch of a worktree made by [`create_isolated`] to the workspace's repository (forced:
/// the branch is the run's own). Fetched from the workspace's side, so no configuration the agent could
/// reach decides what runs. Nothing to do for other worktrees, nor for a mirror's (its branch is pushed
/// to the remote).
pub async fn return_branch(tree: &Worktree) -> Result<(), String> {
    let Some(origin) = tree.origin.as_ref().filter(|_| tree.remote.is_none()) else {
        return Ok(());
    };
    let refspec = format!("+refs/heads/{0}:refs/heads/{0}", tree.branch);
    let private = tree.repo.display().to_string();
    git(
        origin,
        &[
            "fetch",
            "--quiet",
            "--no-tags",
            "--no-write-fetch-head",
            "--",
            &private,
            &refspec,
        ],
    )
    .await
    .map(drop)
    .map_err(|e| {
        format!(
            "cannot copy the branch {} to {}: {e}",
            tree.branch,
            origin.display()
        )
    })
}

/// What a new worktree is called: its branch, the run's short id (appended to a branch name taken
/// already) and the brief's file name.
pub struct Names<'a> {
    pub branch: &'a str,
    pub run_short: &'a str,
    pub brief: &'a str,
}

/// The commit at the tip of `branch` in `repo` (a repository, or a mirror when `mirror`: there also
/// among the remote's branches as last fetched); `None` when there is no such branch.
pub async fn branch_tip(repo: &Path, mirror: bool, branch: &str) -> Option<String> {
    let mut names = vec![format!("refs/heads/{branch}")];
    if mirror {
        names.push(format!("{}/{branch}", remote::REMOTE_BRANCHES));
    }
    for name in names {
        if let Ok(sha) = git(
            repo,
            &[
                "rev-parse",
                "--verify",
                "--quiet",
                &format!("{name}^{{commit}}"),
            ],
        )
        .await
        {
            return Some(sha.trim().to_owned());
        }
    }
    None
}

/// Where a worktree starts when nothing says: the repository's HEAD, or for a mirror the remote's HEAD
/// as last fetched.
async fn default_start(repo: &Path, mirror: bool) -> Result<String, String> {
    let base = if mirror {
        git(
            repo,
            &[
                "rev-parse",
                "--verify",
                &format!("{REMOTE_HEAD}^{{commit}}"),
            ],
        )
        .await
        .map(|sha| sha.trim().to_owned())
    } else {
        head_commit(repo).await
    };
    base.map_err(|e| {
        format!(
            "the repository {} has no commit to branch from: {e}",
            repo.display()
        )
    })
}

/// Where a new worktree of `repo` (a mirror when `mirror`) starts, `start` or else [`default_start`], and
/// its branch: `names.branch`, with the run's short id appended when `repo` has that branch already.
async fn start_and_branch(
    repo: &Path,
    mirror: bool,
    names: &Names<'_>,
    start: Option<String>,
) -> Result<(String, String), String> {
    let base = match start {
        Some(sha) => sha,
        None => default_start(repo, mirror).await?,
    };
    let mut branch = names.branch.to_owned();
    if branch_tip(repo, mirror, &branch).await.is_some() {
        branch = format!("{branch}-{}", names.run_short);
    }
    Ok((base, branch))
}

/// Adds the worktree `<run_dir>/work` of `repo` on the new branch at the commit of `at` (base, branch),
/// and records it; `origin` is the workspace's repository when `repo` is a private one.
async fn make(
    repo: &Path,
    remote: Option<&str>,
    origin: Option<&Path>,
    run_dir: &Path,
    brief: &str,
    (base, branch): (String, String),
) -> Result<Worktree, String> {
    let path = run_dir.join("work");
    let target = path.display().to_string();
    git(repo, &["worktree", "add", "-b", &branch, &target, &base]).await?;
    let tracked = git(repo, &["cat-file", "-e", &format!("{base}:{brief}")])
        .await
        .is_ok();
    let dirs = git(
        &path,
        &[
            "rev-parse",
            "--path-format=absolute",
            "--git-dir",
            "--git-common-dir",
        ],
    )
    .await?;
    let mut dirs = dirs.lines().map(|d| PathBuf::from(d.trim()));
    let (git_dir, git_common_dir) = (dirs.next(), dirs.next());
    let tree = Worktree {
        repo: repo.to_path_buf(),
        path,
        branch,
        base,
        brief: brief.to_owned(),
        brief_tracked: tracked,
        git_dir,
        git_common_dir,
        remote: remote.map(str::to_owned),
        origin: origin.map(Path::to_path_buf),
    };
    record(run_dir, &tree).await?;
    tokio::fs::write(run_dir.join(EXCLUDE_FILE), exclusions(brief))
        .await
        .map_err(|e| format!("cannot write the git exclude file: {e}"))?;
    Ok(tree)
}

/// Writes the worktree's facts to `<run_dir>/worktree.json` (read again after a crash).
async fn record(run_dir: &Path, tree: &Worktree) -> Result<(), String> {
    let json = serde_json::to_vec_pretty(tree).map_err(|e| e.to_string())?;
    tokio::fs::write(run_dir.join(STATE_FILE), json)
        .await
        .map_err(|e| format!("cannot record the worktree: {e}"))
}

/// What Muster puts in a worktree that is not the agent's work: the brief, and the skill folders it
/// writes for Claude Code and OpenCode. (A skill folder an agent adds there itself is hidden too.)
fn exclusions(brief: &str) -> String {
    format!("/{brief}\n/.claude/skills/\n/.opencode/skills/\n")
}

/// The worktree recorded in `run_dir`, if the run had one and it is still on disk.
pub async fn recorded(run_dir: &Path) -> Option<Worktree> {
    let json = tokio::fs::read(run_dir.join(STATE_FILE)).await.ok()?;
    let tree: Worktree = serde_json::from_slice(&json).ok()?;
    tree.path.is_dir().then_some(tree)
}

/// The variables that make the agent's git ignore the brief, without touching the repository's config.
pub fn agent_env(run_dir: &Path) -> Vec<(String, String)> {
    vec![
        ("GIT_CONFIG_COUNT".to_owned(), "1".to_owned()),
        (
            "GIT_CONFIG_KEY_0".to_owned(),
            "core.excludesFile".to_owned(),
        ),
        (
            "GIT_CONFIG_VALUE_0".to_owned(),
            run_dir.join(EXCLUDE_FILE).display().to_string(),
        ),
    ]
}

/// The git identity of an agent's own commits (its per-run HOME has no `~/.gitconfig`); the profile's
/// variables, applied later, may replace it.
pub fn agent_identity(agent_name: &str) -> Vec<(String, String)> {
    let name = format!("{agent_name} (muster)");
    ["AUTHOR", "COMMITTER"]
        .into_iter()
        .flat_map(|who| {
            [
                (format!("GIT_{who}_NAME"), name.clone()),
                (format!("GIT_{who}_EMAIL"), "muster@localhost".to_owned()),
            ]
        })
        .collect()
}

/// The exclude file handed to the agent's git, which the sandbox lets the agent read.
pub fn exclude_file(run_dir: &Path) -> PathBuf {
    run_dir.join(EXCLUDE_FILE)
}

/// Commits everything the agent left (changes, new files, deletions; not the brief) on the run's branch
/// and returns the diff against the base.
pub async fn commit_work(tree: &Worktree, message: &str, author: &str) -> Result<Diff, String> {
    let wt = tree.path.as_path();
    let brief = wt.join(&tree.brief);
    if tree.brief_tracked {
        git_in(tree, &["checkout", &tree.base, "--", &tree.brief]).await?;
    } else if let Err(e) = tokio::fs::remove_file(&brief).await
        && e.kind() != std::io::ErrorKind::NotFound
    {
        return Err(format!("cannot remove the brief: {e}"));
    }
    let exclude = match tree.path.parent() {
        Some(run_dir) => format!("core.excludesFile={}", run_dir.join(EXCLUDE_FILE).display()),
        None => "core.excludesFile=".to_owned(),
    };
    git_in(tree, &["-c", &exclude, "add", "-A"]).await?;
    let staged = git_in(tree, &["diff", "--cached", "--quiet"])
        .await
        .is_err();
    if staged {
        let name = format!("user.name={author}");
        git_in(
            tree,
            &[
                "-c",
                &name,
                "-c",
                "user.email=muster@localhost",
                "-c",
                "commit.gpgsign=false",
                "commit",
                "--quiet",
                "--no-verify",
                "-m",
                message,
            ],
        )
        .await?;
    }
    diff(tree).await
}

/// The branch's diff against its base: stat and unified patch (capped at [`MAX_PATCH_BYTES`]).
pub async fn diff(tree: &Worktree) -> Result<Diff, String> {
    let range = format!("{}..HEAD", tree.base);
    let stat = git_in(
        tree,
        &["diff", "--no-color", "--no-ext-diff", "--stat", &range],
    )
    .await?;
    let mut patch = git_in(tree, &["diff", "--no-color", "--no-ext-diff", &range]).await?;
    let truncated = patch.len() > MAX_PATCH_BYTES;
    if truncated {
        let mut cut = MAX_PATCH_BYTES;
        while !patch.is_char_boundary(cut) {
            cut -= 1;
        }
        let total = patch.len();
        patch.truncate(cut);
        patch.push_str(&format!(
            "\n… [diff truncated: {total} bytes, first {cut} shown; the full change is on branch {}]\n",
            tree.branch
        ));
    }
    Ok(Diff {
        stat: stat.trim_end().to_owned(),
        patch,
        truncated,
    })
}

/// Removes the worktree directory (the branch stays).
pub async fn remove(tree: &Worktree) -> Result<(), String> {
    let target = tree.path.display().to_string();
    let removed = git(&tree.repo, &["worktree", "remove", "--force", &target]).await;
    if removed.is_err() {
        // Already half gone: clear what is left and let git forget it.
        let _ = tokio::fs::remove_dir_all(&tree.path).await;
        git(&tree.repo, &["worktree", "prune"]).await?;
    }
    Ok(())
}

/// The commit the run's branch points at in its repository.
pub async fn run_branch_tip(tree: &Worktree) -> Option<String> {
    branch_tip(&tree.repo, false, &tree.branch).await
}

/// Points the run's branch back at `sha` (what the run committed), after something moved it.
pub async fn reset_branch(tree: &Worktree, sha: &str) -> Result<(), String> {
    let name = format!("refs/heads/{}", tree.branch);
    git(&tree.repo, &["update-ref", &name, sha])
        .await
        .map(|_| ())
}

/// Removes the worktree and deletes its branch: for a run that never started.
pub async fn discard(tree: &Worktree) {
    if let Err(e) = remove(tree).await {
        tracing::warn!(error = %e, "cannot remove an unused worktree");
    }
    if let Err(e) = git(&tree.repo, &["branch", "-D", &tree.branch]).await {
        tracing::warn!(error = %e, "cannot delete an unused branch");
    }
}
