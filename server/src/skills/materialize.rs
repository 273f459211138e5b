//! Handing a run its agent's enabled skills, in the CLI's native discovery folder:
//! - Claude Code: `<workdir>/.claude/skills/<slug>/`;
//! - Codex: `$CODEX_HOME/skills/<slug>/` (the per-run home's `.codex`, or the agent's own `CODEX_HOME`);
//! - OpenCode: `<workdir>/.opencode/skills/<slug>/`;
//! - custom commands and the local Llama loop have no skills folder: the skills are appended to the brief.
//!
//! Invariants: a folder the repository already has is never written into: ours goes to `<slug>-muster`
//! (and its `name:` follows). Every folder Muster creates is recorded in the [`Materialized`] manifest, and
//! dropping the manifest removes exactly those (and nothing the agent or the repository put elsewhere).

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use super::parse::{self, SKILL_MD};
use crate::domain::{AgentKind, Skill};

/// What was written for one run. Dropping it removes what was written, deepest first.
#[derive(Debug, Default)]
pub struct Materialized {
    /// Folders Muster created, in creation order; `true` for a skill folder (wholly ours).
    created: Vec<(PathBuf, bool)>,
    /// Where each skill went, by slug (a renamed copy shows its new folder).
    pub placed: Vec<(String, PathBuf)>,
    /// Human-readable notes (renames), for the run log.
    pub notes: Vec<String>,
}

impl Materialized {
    /// The folders Muster created (the manifest).
    pub fn manifest(&self) -> Vec<&Path> {
        self.created.iter().map(|(p, _)| p.as_path()).collect()
    }

    /// Removes everything in the manifest now (also done on drop).
    pub fn cleanup(&mut self) {
        for (dir, skill) in self.created.drain(..).rev() {
            // Skill folders are ours entirely; parent folders we created go only if now empty.
            let removed = if skill {
                std::fs::remove_dir_all(&dir)
            } else {
                std::fs::remove_dir(&dir)
            };
            if let Err(e) = removed
                && e.kind() != std::io::ErrorKind::NotFound
            {
                tracing::debug!(dir = %dir.display(), error = %e, "skill folder left in place");
            }
        }
    }
}

impl Drop for Materialized {
    fn drop(&mut self) {
        self.cleanup();
    }
}

/// Where `kind` discovers skills for a run with this working directory and home; `None` for kinds that
/// read skills from the brief.
pub fn skills_root(
    kind: AgentKind,
    workdir: &Path,
    home: &Path,
    codex_home: Option<&Path>,
) -> Option<PathBuf> {
    match kind {
        AgentKind::Claude => Some(workdir.join(".claude/skills")),
        AgentKind::OpenCode => Some(workdir.join(".opencode/skills")),
        AgentKind::Codex => Some(
            codex_home
                .map_or_else(|| home.join(".codex"), Path::to_path_buf)
                .join("skills"),
        ),
        AgentKind::Llama | AgentKind::Custom => None,
    }
}

/// Writes `skills` under `root`, never into a folder that exists already.
pub fn write_skills(root: &Path, skills: &[&Skill]) -> std::io::Result<Materialized> {
    let mut out = Materialized::default();
    if skills.is_empty() {
        return Ok(out);
    }
    create_parents(root, &mut out)?;
    for skill in skills {
        let slug = skill.slug.as_str();
        let (folder, body) = match free_folder(root, slug) {
            (name, false) => (name, skill.body.clone()),
            (name, true) => {
                out.notes.push(format!(
                    "the repository already has a skill folder `{slug}`; Muster's copy is `{name}`"
                ));
                let body = parse::renamed(&skill.body, &name);
                (name, body)
            }
        };
        let dir = root.join(&folder);
        std::fs::create_dir(&dir)?;
        out.created.push((dir.clone(), true));
        std::fs::write(dir.join(SKILL_MD), body)?;
        for f in &skill.files {
            // Paths were validated on the way in; check again before touching the disk.
            if parse::check_path(&f.path).is_err() {
                continue;
            }
            let path = dir.join(&f.path);
            if let Some(parent) = path.parent() {
                std::fs::create_dir_all(parent)?;
            }
            std::fs::write(path, &f.content)?;
        }
        out.placed.push((slug.to_owned(), dir));
    }
    Ok(out)
}

/// Creates `root` and its missing ancestors, recording each one created.
fn create_parents(root: &Path, out: &mut Materialized) -> std::io::Result<()> {
    let mut missing = Vec::new();
    let mut cur = Some(root);
    while let Some(dir) = cur {
        if std::fs::symlink_metadata(dir).is_ok() {
            break;
        }
        missing.push(dir.to_path_buf());
        cur = dir.parent();
    }
    for dir in missing.into_iter().rev() {
        std::fs::create_dir(&dir)?;
        out.created.push((dir, false));
    }
    Ok(())
}

/// `slug` if free, else `slug-muster`, `slug-muster-2`, …; and whether it was renamed.
fn free_folder(root: &Path, slug: &str) -> (String, bool) {
    let taken = |name: &str| std::fs::symlink_metadata(root.join(name)).is_ok();
    if !taken(slug) {
        return (slug.to_owned(), false);
    }
    let mut name = format!("{slug}-muster");
    let mut n = 2;
    while taken(&name) {
        name = format!("{slug}-muster-{n}");
        n += 1;
    }
    (name, true)
}

/// The skills as a brief section, for runtimes without native skills.
pub fn brief_section(skills: &[&Skill]) -> String {
    if skills.is_empty() {
        return String::new();
    }
    let mut out = String::from(
        "\n## Skills\n\nPlaybooks your team gave you. Use one when its description fits the task.\n",
    );
    for s in skills {
        let _ = writeln!(
            out,
            "\n### Skill: {}\n\n_{}_\n\n{}",
            s.slug.as_str(),
            s.description,
            parse::instructions(&s.body).trim_end()
        );
        for f in &s.files {
            let _ = writeln!(
                out,
                "\nFile `{}`:\n\n````\n{}\n````",
                f.path,
                f.content.trim_end()
            );
        }
    }
    out
}
