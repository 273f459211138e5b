//! Git for runs. Each run owns its git state: it works in a private repository (`<run_dir>/repo`,
//! holding only the history of the commit it starts from) with a worktree `<run_dir>/work` on its own
//! branch, so an agent can neither read nor move another run's branch, nor touch the workspace's
//! repository's objects, refs or `HEAD`. Runs are grouped in **lines of work**: one branch per issue ×
//! agent (`muster/<KEY>-<agent>`, see `engine::order::line_branch`) that each follow-up and retry advances;
//! an ensemble candidate has a line of its own.
//!
//! Invariants: the server's own git never follows agent-writable state. At the end of a run it commits
//! the worktree's files into the workspace's repository (or the runner's mirror of it) by plumbing, with
//! that repository's git folder, a fresh index of its own outside the agent's reach and the start commit
//! as parent (`read-tree`, `add -A`, `write-tree`, `commit-tree -p <start>`), then moves the line's branch
//! with a compare-and-swap against the value it had when the run was prepared (`update-ref <ref> <new>
//! <old>`): a branch moved meanwhile is an error, never overwritten. The commit it made is what is
//! recorded, diffed, pushed and later merged — never a branch tip read later. Every git command runs
//! through `muster_agents::process::run_captured` with [`GIT_TIMEOUT`] and hooks and fsmonitor off, and a
//! failure carries git's stderr. The brief (`CLAUDE.md`/`AGENTS.md`) and the skill folders Muster writes
//! are kept out of the commit. A repository that is a git URL is reached through a per-runner mirror
//! (see [`remote`]).

mod remote;

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};

pub use remote::{
    NETWORK_TIMEOUT, REMOTE_HEAD, RepoSource, mirror, mirror_path, mirror_with_auth,
    mirror_with_timeout, push_branch, push_branch_to,
};

/// What went wrong with git work: a run's worktree, commit, diff or push, or a repository setting. Its
/// text is the sentence a person reads (on a failed run, beside a setting).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GitError {
    /// git is not on the machine's `PATH`.
    #[error("git is not installed (not found on PATH)")]
    NotInstalled,
    /// git did not finish within its time (`timeout` seconds).
    #[error("git {command} failed: git did not finish within {timeout} s")]
    TimedOut { command: String, timeout: u64 },
    /// git could not be started.
    #[error("git {command} failed: {reason}")]
    NotRun { command: String, reason: String },
    /// git ran and refused: its exit status and what it printed on stderr.
    #[error("git {command} failed ({status}): {stderr}")]
    Failed {
        command: String,
        status: String,
        stderr: String,
    },
    /// Anything else about a repository or its files, as the sentence to show.
    #[error("{0}")]
    Other(String),
}

/// Longest a single git command may take.
pub const GIT_TIMEOUT: Duration = Duration::from_secs(120);
/// Largest unified diff kept in the run's `diff` event; the rest is cut with a note.
pub const MAX_PATCH_BYTES: usize = 256 * 1024;
/// Where a run's worktree facts are kept, next to its `work` directory (read again after a crash).
const STATE_FILE: &str = "worktree.json";
/// The exclude file handed to the agent's git (`core.excludesFile`), next to its `work` directory.
const EXCLUDE_FILE: &str = "git-exclude";

/// A run's worktree: where, on which line's branch, from which start, and the brief file kept out of the
/// commit.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Worktree {
    /// The repository the run's work goes to: the workspace's, or the runner's mirror of its git URL.
    pub repo: PathBuf,
    /// That repository's git folder (`R/.git`, or the mirror itself), read when the run was prepared:
    /// the server's git names it explicitly, so nothing in the worktree decides which repository it uses.
    pub git_dir: PathBuf,
    /// The worktree `<run_dir>/work`.
    pub path: PathBuf,
    /// The run's private repository `<run_dir>/repo`, the agent's own (see [`create`]).
    pub private: PathBuf,
    /// The objects folder the private repository reads the repository's history from (its only
    /// `objects/info/alternates` entry, which the agent may not rewrite: it is restored before the
    /// server reads the private repository); `None` for a blind run, whose repository has a copy.
    #[serde(default)]
    pub alternate: Option<PathBuf>,
    /// The line's branch (without `refs/heads/`).
    pub branch: String,
    /// The commit the run starts from (the line's tip, or the repository's HEAD for a new line).
    pub base: String,
    /// What `refs/heads/<branch>` of `repo` pointed at when the run was prepared (`None`: no such
    /// branch): the run's commit moves the branch only if it still does.
    #[serde(default)]
    pub line_tip: Option<String>,
    /// The brief's file name in the worktree.
    pub brief: String,
    /// Whether the repository tracks a file of that name at `base` (its tracked version is kept).
    pub brief_tracked: bool,
    /// The git URL the repository mirrors, when the workspace's repository is one (`repo` is then the
    /// runner's mirror): where the branch is pushed at the end.
    #[serde(default)]
    pub remote: Option<String>,
}

/// What the end of a run committed: the commit (recorded on the run, and the only thing later compared,
/// pushed or merged) and its diff against the run's start.
#[derive(Debug, Clone, PartialEq)]
pub struct Committed {
    pub commit: String,
    pub diff: Diff,
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
pub async fn git(cwd: &Path, args: &[&str]) -> Result<String, GitError> {
    git_with(cwd, args, &[]).await
}

/// Runs `git args…` as the server's side of a run: in the run's repository's git folder (`GIT_DIR`), over
/// the worktree's files (`GIT_WORK_TREE`), with an index of its own in the run's folder (`GIT_INDEX_FILE`,
/// outside the agent's reach). Neither `W/.git`, nor the private repository, nor any index the agent
/// wrote decides what the server's git reads or runs.
async fn git_server(tree: &Worktree, args: &[&str]) -> Result<String, GitError> {
    let index = server_index(tree);
    let env = [
        ("GIT_DIR", tree.git_dir.as_path()),
        ("GIT_WORK_TREE", tree.path.as_path()),
        ("GIT_INDEX_FILE", index.as_path()),
    ]
    .map(|(k, v)| (k.to_owned(), v.display().to_string()));
    git_with(&tree.path, args, &env).await
}

/// The server's own index for a run's commit: in the run's folder, which the agent cannot write.
fn server_index(tree: &Worktree) -> PathBuf {
    match tree.path.parent() {
        Some(run_dir) => run_dir.join("muster-index"),
        None => tree.path.with_extension("muster-index"),
    }
}

async fn git_with(
    cwd: &Path,
    args: &[&str],
    extra: &[(String, String)],
) -> Result<String, GitError> {
    git_with_timeout(cwd, args, extra, GIT_TIMEOUT).await
}

async fn git_with_timeout(
    cwd: &Path,
    args: &[&str],
    extra: &[(String, String)],
    timeout: Duration,
) -> Result<String, GitError> {
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
            std::io::ErrorKind::NotFound if cwd.is_dir() => GitError::NotInstalled,
            std::io::ErrorKind::TimedOut => GitError::TimedOut {
                command: shown.clone(),
                timeout: timeout.as_secs(),
            },
            _ => GitError::NotRun {
                command: shown.clone(),
                reason: e.to_string(),
            },
        })?;
    if out.status.success() {
        return Ok(String::from_utf8_lossy(&out.stdout).into_owned());
    }
    Err(GitError::Failed {
        command: shown,
        status: out.status.to_string(),
        stderr: String::from_utf8_lossy(&out.stderr).trim().to_owned(),
    })
}

/// Checks a workspace's repository setting and returns the value to store. A URL is checked for syntax
/// only (the server may not reach it; each runner clones it). A path must name a git repository with at
/// least one commit and is stored as its top-level folder. The error is a sentence a person can act on.
pub async fn check_repo(raw: &str) -> Result<String, GitError> {
    let path = match RepoSource::parse(raw)? {
        RepoSource::Url(url) => return Ok(url),
        RepoSource::Path(path) => path,
    };
    let path = path.as_path();
    match tokio::fs::metadata(path).await {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(GitError::Other(format!(
                "{} does not exist on the server",
                path.display()
            )));
        }
        Err(e) => {
            return Err(GitError::Other(format!(
                "{} cannot be read: {e}",
                path.display()
            )));
        }
        Ok(m) if !m.is_dir() => {
            return Err(GitError::Other(format!(
                "{} is not a folder",
                path.display()
            )));
        }
        Ok(_) => {}
    }
    let top = git(path, &["rev-parse", "--show-toplevel"])
        .await
        .map_err(|e| {
            GitError::Other(format!(
                "{} is not a git repository ({e}); run `git init` there first",
                path.display()
            ))
        })?;
    let top = PathBuf::from(top.trim());
    head_commit(&top).await.map_err(|_| {
        GitError::Other(format!(
            "{} has no commit yet; make a first commit so runs have a base to branch from",
            top.display()
        ))
    })?;
    Ok(top.display().to_string())
}

/// The commit HEAD points at.
pub async fn head_commit(repo: &Path) -> Result<String, GitError> {
    commit(repo, "HEAD").await
}

/// The commit `rev` names in `repo`, as a full hash.
pub async fn commit(repo: &Path, rev: &str) -> Result<String, GitError> {
    let sha = git(
        repo,
        &["rev-parse", "--verify", &format!("{rev}^{{commit}}")],
    )
    .await?;
    Ok(sha.trim().to_owned())
}

/// The zero object id `update-ref` takes as "the branch must not exist yet".
const NO_COMMIT: &str = "0000000000000000000000000000000000000000";

/// What a new worktree is called: its line's branch and the brief's file name.
pub struct Names<'a> {
    pub branch: &'a str,
    pub brief: &'a str,
}

/// Creates the run's private bare repository `<run_dir>/repo` and its worktree `<run_dir>/work` on the
/// branch `names.branch` at `start` (a commit of `repo`; the repository's HEAD — a mirror's: the remote's
/// HEAD — when `None`); records it in `<run_dir>/worktree.json`. `repo` is the workspace's repository, or
/// the runner's mirror of `url`. The private repository reads `repo`'s objects through
/// `objects/info/alternates` (the sandbox lets the agent read them, never write them), or for a `blind`
/// run holds a copy of `start`'s history and nothing else, so that it cannot read other runs' work
/// either. The agent's git rights are over the private repository alone: it cannot move another run's
/// branch nor touch `repo`. At the end [`commit_work`] commits the work into `repo` itself.
pub async fn create(
    repo: &Path,
    url: Option<&str>,
    run_dir: &Path,
    names: &Names<'_>,
    start: Option<String>,
    blind: bool,
) -> Result<Worktree, GitError> {
    let base = match start {
        Some(sha) => sha,
        None => default_start(repo, url.is_some()).await?,
    };
    let git_dir = git(repo, &["rev-parse", "--absolute-git-dir"])
        .await
        .map(|d| PathBuf::from(d.trim()))?;
    let line_tip = branch_tip(repo, false, names.branch).await;
    let private = run_dir.join("repo");
    let target = private.display().to_string();
    git(run_dir, &["init", "--quiet", "--bare", &target]).await?;
    let alternate = if blind {
        // Only what `base` reaches: a fetch by commit packs its history and nothing else.
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
                &format!("{base}:refs/muster/base"),
            ],
        )
        .await
        .map_err(|e| {
            GitError::Other(format!(
                "cannot copy the history of {base} from {source}: {e}"
            ))
        })?;
        None
    } else {
        let objects = git_dir.join("objects");
        write_alternates(&private, Some(&objects)).await?;
        git(&private, &["update-ref", "refs/muster/base", &base]).await?;
        Some(objects)
    };
    let path = run_dir.join("work");
    let work = path.display().to_string();
    git(
        &private,
        &["worktree", "add", "-b", names.branch, &work, &base],
    )
    .await?;
    let tracked = git(
        repo,
        &["cat-file", "-e", &format!("{base}:{}", names.brief)],
    )
    .await
    .is_ok();
    let tree = Worktree {
        repo: repo.to_path_buf(),
        git_dir,
        path,
        private,
        alternate,
        branch: names.branch.to_owned(),
        base,
        line_tip,
        brief: names.brief.to_owned(),
        brief_tracked: tracked,
        remote: url.map(str::to_owned),
    };
    record(run_dir, &tree).await?;
    tokio::fs::write(run_dir.join(EXCLUDE_FILE), exclusions(names.brief))
        .await
        .map_err(|e| GitError::Other(format!("cannot write the git exclude file: {e}")))?;
    Ok(tree)
}

/// Writes the private repository's `objects/info/alternates`: `objects` alone, or nothing.
async fn write_alternates(private: &Path, objects: Option<&Path>) -> Result<(), GitError> {
    let file = private.join("objects/info/alternates");
    let written = match objects {
        Some(dir) => tokio::fs::write(&file, format!("{}\n", dir.display())).await,
        None => match tokio::fs::remove_file(&file).await {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            other => other,
        },
    };
    written.map_err(|e| GitError::Other(format!("cannot write {}: {e}", file.display())))
}

/// The commit at the tip of `branch` in `repo` (a repository, or a mirror when `mirror`: there first
/// among the remote's branches as last fetched, which another runner may have advanced); `None` when
/// there is no such branch.
pub async fn branch_tip(repo: &Path, mirror: bool, branch: &str) -> Option<String> {
    let mut names = vec![format!("refs/heads/{branch}")];
    if mirror {
        names.insert(0, format!("{}/{branch}", remote::REMOTE_BRANCHES));
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
async fn default_start(repo: &Path, mirror: bool) -> Result<String, GitError> {
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
        GitError::Other(format!(
            "the repository {} has no commit to branch from: {e}",
            repo.display()
        ))
    })
}

/// Writes the worktree's facts to `<run_dir>/worktree.json` (read again after a crash).
async fn record(run_dir: &Path, tree: &Worktree) -> Result<(), GitError> {
    let json = serde_json::to_vec_pretty(tree)
        .map_err(|e| GitError::Other(format!("cannot record the worktree: {e}")))?;
    tokio::fs::write(run_dir.join(STATE_FILE), json)
        .await
        .map_err(|e| GitError::Other(format!("cannot record the worktree: {e}")))
}

/// What Muster puts in a worktree that is not the agent's work: the brief, and the skill folders it
/// writes there for the CLIs that read skills from their working directory (Claude Code's and
/// OpenCode's). A skill folder an agent adds there itself is hidden too.
fn exclusions(brief: &str) -> String {
    let mut out = format!("/{brief}\n");
    for kind in muster_agents::RuntimeKind::ALL {
        if let muster_agents::SkillsPlace::Workdir(folder) =
            muster_agents::adapter_for(kind).skills_place()
        {
            out.push_str(&format!("/{folder}/\n"));
        }
    }
    out
}

/// The worktree recorded in `run_dir`, if the run had one and it is still on disk. A record written
/// before runs had private repositories does not parse and is left alone (its folder stays).
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

/// Commits the files the agent left in its worktree (changes, new files, deletions; not the brief nor
/// Muster's skill folders) into the run's repository as one commit on top of the agent's own commits
/// (see [`agent_commits`]) or else the run's start, moves the line's branch there if it still points
/// where it did when the run was prepared, and returns the commit with its diff against the start. A run
/// that changed nothing leaves the line where it was (a new line's branch is made at the start, so that
/// it exists).
pub async fn commit_work(
    tree: &Worktree,
    message: &str,
    author: &str,
) -> Result<Committed, GitError> {
    let index = server_index(tree);
    if let Err(e) = tokio::fs::remove_file(&index).await
        && e.kind() != std::io::ErrorKind::NotFound
    {
        return Err(GitError::Other(format!(
            "cannot clear the server's index: {e}"
        )));
    }
    let parent = agent_commits(tree)
        .await
        .unwrap_or_else(|| tree.base.clone());
    git_server(tree, &["read-tree", &parent]).await?;
    let exclude = match tree.path.parent() {
        Some(run_dir) => format!("core.excludesFile={}", run_dir.join(EXCLUDE_FILE).display()),
        None => "core.excludesFile=".to_owned(),
    };
    git_server(tree, &["-c", &exclude, "add", "-A", "--", "."]).await?;
    // The brief as the start has it (or not at all): Muster wrote it, it is not the agent's work.
    git_server(tree, &["reset", "--quiet", &tree.base, "--", &tree.brief]).await?;
    let written = git_server(tree, &["write-tree"]).await?;
    let written = written.trim();
    let parent_tree = git_server(tree, &["rev-parse", &format!("{parent}^{{tree}}")]).await?;
    let commit = if written == parent_tree.trim() {
        parent
    } else {
        let (name, email) = (format!("user.name={author}"), "user.email=muster@localhost");
        git_server(
            tree,
            &[
                "-c",
                &name,
                "-c",
                email,
                "-c",
                "commit.gpgsign=false",
                "commit-tree",
                written,
                "-p",
                &parent,
                "-m",
                message,
            ],
        )
        .await?
        .trim()
        .to_owned()
    };
    let _ = tokio::fs::remove_file(&index).await;
    if commit != tree.base || tree.line_tip.is_none() {
        move_line(tree, &commit).await?;
    }
    let diff = diff(tree, &commit).await?;
    Ok(Committed { commit, diff })
}

/// The commits the agent made itself on its branch in its private repository, fetched into the run's
/// repository (from that side, with its own configuration) under a ref of the run's: their tip, when it
/// descends from the run's start; `None` when the agent made none, or left something else there (a
/// branch reset elsewhere, a broken ref), whose files are then committed on top of the start instead.
async fn agent_commits(tree: &Worktree) -> Option<String> {
    let incoming = format!(
        "refs/muster/incoming/{}",
        tree.path
            .parent()
            .and_then(Path::file_name)
            .map_or_else(|| "run".to_owned(), |n| n.to_string_lossy().into_owned())
    );
    // The agent could write its repository's alternates: the server's fetch reads only what it set.
    if let Err(e) = write_alternates(&tree.private, tree.alternate.as_deref()).await {
        tracing::warn!(error = %e, "cannot restore the private repository's alternates");
        return None;
    }
    let private = tree.private.display().to_string();
    let refspec = format!("+refs/heads/{}:{incoming}", tree.branch);
    let fetched = git(
        &tree.repo,
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
    .await;
    let tip = match fetched {
        Ok(_) => commit(&tree.repo, &incoming).await.ok(),
        Err(e) => {
            tracing::warn!(error = %e, "cannot take the agent's own commits; its files are committed");
            None
        }
    };
    let _ = git(&tree.repo, &["update-ref", "-d", &incoming]).await;
    let tip = tip.filter(|t| *t != tree.base)?;
    git(
        &tree.repo,
        &["merge-base", "--is-ancestor", &tree.base, &tip],
    )
    .await
    .ok()
    .map(|_| tip)
}

/// Moves the line's branch in the run's repository to `commit`, only from where it pointed when the run
/// was prepared (or only if it does not exist yet).
async fn move_line(tree: &Worktree, commit: &str) -> Result<(), GitError> {
    let name = format!("refs/heads/{}", tree.branch);
    let old = tree.line_tip.as_deref().unwrap_or(NO_COMMIT);
    git(&tree.repo, &["update-ref", &name, commit, old])
        .await
        .map(drop)
        .map_err(|e| {
            let was = tree.line_tip.as_deref().map_or_else(
                || "did not exist".to_owned(),
                |t| format!("pointed at {}", short(t)),
            );
            GitError::Other(format!(
                "the branch {} was moved by someone else while the run worked (it {was}); the run's work is commit {}: {e}",
                tree.branch,
                short(commit)
            ))
        })
}

/// A commit's id as people read it.
fn short(sha: &str) -> &str {
    sha.get(..12).unwrap_or(sha)
}

/// The diff from the run's start to `commit`: stat and unified patch (capped at [`MAX_PATCH_BYTES`]),
/// made in the run's repository with no external diff or text conversion.
pub async fn diff(tree: &Worktree, commit: &str) -> Result<Diff, GitError> {
    let args = |stat: bool| {
        let mut a = vec!["diff", "--no-color", "--no-ext-diff", "--no-textconv"];
        if stat {
            a.push("--stat");
        }
        a
    };
    let mut stat_args = args(true);
    stat_args.extend([tree.base.as_str(), commit]);
    let stat = git(&tree.repo, &stat_args).await?;
    let mut patch_args = args(false);
    patch_args.extend([tree.base.as_str(), commit]);
    let mut patch = git(&tree.repo, &patch_args).await?;
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

/// Removes the worktree and the run's private repository (the work is in the run's repository by then).
pub async fn remove(tree: &Worktree) -> Result<(), GitError> {
    for dir in [&tree.path, &tree.private] {
        match tokio::fs::remove_dir_all(dir).await {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                return Err(GitError::Other(format!(
                    "cannot remove {}: {e}",
                    dir.display()
                )));
            }
            _ => {}
        }
    }
    Ok(())
}

/// Removes the worktree of a run that never started (the line's branch was not touched).
pub async fn discard(tree: &Worktree) {
    if let Err(e) = remove(tree).await {
        tracing::warn!(error = %e, "cannot remove an unused worktree");
    }
}

/// Deletes `branch` of `repo` only while it still points at `commit` (what Muster last put there): a
/// branch a person moved or made is never deleted. `Ok(false)` when it was left alone.
pub async fn prune_branch(repo: &Path, branch: &str, commit: &str) -> Result<bool, GitError> {
    let name = format!("refs/heads/{branch}");
    match branch_tip(repo, false, branch).await {
        None => Ok(false),
        Some(tip) if tip != commit => Ok(false),
        Some(_) => git(repo, &["update-ref", "-d", &name, commit])
            .await
            .map(|_| true),
    }
}
