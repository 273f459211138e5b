//! The brief an agent works from: the issue, its discussion, the agent's instructions and how to report
//! back, written as the CLI's native context file (`CLAUDE.md` for Claude Code, `AGENTS.md` otherwise).
//!
//! Invariant: the brief (it carries the issue's text) is written as a regular file in the run's workdir
//! and nowhere else. A repository's own file of that name may be a symbolic link: the link in the
//! worktree is replaced (git restores it before the work is committed), never written through, and its
//! text is read only when the link resolves inside the worktree.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use crate::domain::{Agent, Comment, CommentAuthor, Issue, RuntimeKind};

/// The brief as Markdown.
pub(crate) fn render(issue: &Issue, comments: &[Comment], agent: &Agent) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "# {}: {}\n", issue.key, issue.title.as_str());
    if issue.body.trim().is_empty() {
        out.push_str("(The issue has no description.)\n");
    } else {
        let _ = writeln!(out, "{}", issue.body.trim_end());
    }
    if !comments.is_empty() {
        out.push_str("\n## Discussion\n");
        for c in comments {
            let who = match c.author {
                CommentAuthor::User(_) => "a team member",
                CommentAuthor::Agent(id) if id == agent.id => "you (an earlier run)",
                CommentAuthor::Agent(_) => "another agent",
                CommentAuthor::System => "Muster",
            };
            let _ = writeln!(
                out,
                "\n**{who}**, {}:\n\n{}",
                c.created_at.format("%Y-%m-%d %H:%M UTC"),
                c.body.trim_end()
            );
        }
    }
    let instructions = agent.profile.instructions.trim();
    if !instructions.is_empty() {
        let _ = writeln!(out, "\n## Your instructions\n\n{instructions}");
    }
    let _ = writeln!(
        out,
        "\n## Reporting back\n\nWork in this directory. When you are done, end with a short summary of what \
         you did and what is left: Muster posts it on {key} as your comment and moves the issue to review. \
         If you cannot finish, say why.",
        key = issue.key
    );
    out
}

/// The prompt given on stdin: short, pointing at the brief.
pub(crate) fn prompt(issue: &Issue, kind: RuntimeKind) -> String {
    format!(
        "Work on issue {}: {}. The full brief is in {} in the current directory. Finish with a short \
         summary of what you did.",
        issue.key,
        issue.title.as_str(),
        kind.brief_file()
    )
}

/// Largest repository context file read into the brief.
const MAX_OWN_BYTES: u64 = 1024 * 1024;

/// Writes `brief` as the run's context file in `workdir` (after the repository's own text when the
/// repository `tracked` a file of that name) and returns its path.
pub(super) async fn write(
    workdir: &Path,
    kind: RuntimeKind,
    brief: String,
    tracked: bool,
) -> Result<PathBuf, super::Error> {
    let workdir = workdir.to_path_buf();
    let name = kind.brief_file();
    tokio::task::spawn_blocking(move || {
        let text = if tracked {
            format!(
                "{}\n\n---\n\n{brief}",
                repository_text(&workdir, name).trim_end()
            )
        } else {
            brief
        };
        crate::confined::replace(&workdir, Path::new(name), text.as_bytes())
            .map_err(super::Error::Brief)?;
        Ok(workdir.join(name))
    })
    .await
    .map_err(super::Error::BriefTask)?
}

/// The repository's own `name` in the worktree: its text, read without following a link out of the
/// worktree (a link elsewhere inside it, like `AGENTS.md -> CLAUDE.md`, is fine).
fn repository_text(workdir: &Path, name: &str) -> String {
    let path = workdir.join(name);
    let target = match std::fs::symlink_metadata(&path) {
        Ok(meta) if meta.file_type().is_symlink() => {
            let inside = std::fs::canonicalize(workdir).ok();
            match (std::fs::canonicalize(&path), inside) {
                (Ok(target), Some(inside)) if target.starts_with(&inside) => target,
                _ => {
                    tracing::warn!(
                        file = name,
                        "the repository's context file links outside it"
                    );
                    return format!(
                        "(The repository's {name} is a link to a file outside the repository; Muster \
                         did not read it.)"
                    );
                }
            }
        }
        _ => path,
    };
    match crate::confined::read_regular(&target, MAX_OWN_BYTES) {
        Ok(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
        Err(e) => {
            tracing::warn!(error = %e, "cannot read the repository's context file");
            String::new()
        }
    }
}
