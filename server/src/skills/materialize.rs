//! Handing a run its agent's enabled skills, in the CLI's native discovery folder:
//! - Claude Code: `<workdir>/.claude/skills/<slug>/`;
//! - Codex: `$CODEX_HOME/skills/<slug>/`, where `CODEX_HOME` is always the per-run home's `.codex` (Muster
//!   sets it; an agent's env may not);
//! - OpenCode: `<workdir>/.opencode/skills/<slug>/`;
//! - custom commands and the local Llama loop have no skills folder: the skills are appended to the brief.
//!
//! Invariants: a folder the repository already has is never written into: ours goes to `<slug>-muster`
//! (and its `name:` follows). Nothing is written or removed through a symbolic link: every path is the
//! run's workdir or home plus plain components, checked one by one (see [`crate::confined`]); a
//! repository whose skills folder is a link gets its skills in the brief instead. Every folder Muster
//! creates is recorded in the [`Materialized`] manifest, and dropping the manifest removes exactly those
//! (and nothing the agent or the repository put elsewhere, even if the agent swapped a folder for a link).

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use super::parse::{self, SKILL_MD};
use crate::confined;
use crate::domain::RuntimeKind;
use crate::runner::protocol::SkillBundle;
use muster_agents::SkillsPlace;

/// What was written for one run. Dropping it removes what was written, deepest first.
#[derive(Debug, Default)]
pub struct Materialized {
    /// The folder everything below is relative to (the run's workdir or home).
    base: PathBuf,
    /// Folders Muster created, relative to `base`, in creation order; `true` for a skill folder (wholly
    /// ours).
    created: Vec<(PathBuf, bool)>,
    /// Where each skill went, by slug (a renamed copy shows its new folder).
    pub placed: Vec<(String, PathBuf)>,
    /// Human-readable notes (renames), for the run log.
    pub notes: Vec<String>,
}

impl Materialized {
    /// The folders Muster created (the manifest).
    pub fn manifest(&self) -> Vec<PathBuf> {
        self.created
            .iter()
            .map(|(p, _)| self.base.join(p))
            .collect()
    }

    /// Removes everything in the manifest now (also done on drop). A folder whose path now passes
    /// through a link (the agent swapped a folder for one) is left alone: removing it would reach
    /// wherever the link points.
    pub fn cleanup(&mut self) {
        for (rel, skill) in self.created.drain(..).rev() {
            let dir = self.base.join(&rel);
            if let Err(e) = confined::check_dir(&self.base, &rel) {
                if !matches!(&e, confined::Error::Io { source, .. } if source.kind() == std::io::ErrorKind::NotFound)
                {
                    tracing::warn!(dir = %dir.display(), error = %e, "skill folder left in place");
                }
                continue;
            }
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

/// Where a CLI discovers skills: a folder `rel` under the run's workdir or home (`base`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkillsRoot {
    pub base: PathBuf,
    pub rel: PathBuf,
}

impl SkillsRoot {
    /// The folder's full path.
    pub fn path(&self) -> PathBuf {
        self.base.join(&self.rel)
    }
}

/// Where `kind` discovers skills for a run with this working directory and home; `None` for kinds that
/// read skills from the brief. Only the run's own folders decide: nothing in the agent's env does.
pub fn skills_root(kind: RuntimeKind, workdir: &Path, home: &Path) -> Option<SkillsRoot> {
    let (base, rel) = match muster_agents::adapter_for(kind).skills_place() {
        SkillsPlace::Workdir(rel) => (workdir, rel),
        SkillsPlace::Home(rel) => (home, rel),
        SkillsPlace::Brief => return None,
    };
    Some(SkillsRoot {
        base: base.to_path_buf(),
        rel: PathBuf::from(rel),
    })
}

/// Writes `skills` under `root`, never into a folder that exists already and never through a link: a
/// link on the way is [`confined::Error::Link`] (and whatever was written before is removed again).
pub fn write_skills(
    root: &SkillsRoot,
    skills: &[&SkillBundle],
) -> Result<Materialized, confined::Error> {
    let mut out = Materialized::default();
    out.base.clone_from(&root.base);
    if skills.is_empty() {
        return Ok(out);
    }
    let rel_of = |p: &Path| p.strip_prefix(&root.base).unwrap_or(p).to_path_buf();
    for dir in confined::ensure_dir(&root.base, &root.rel)? {
        out.created.push((rel_of(&dir), false));
    }
    let full = root.path();
    for skill in skills {
        let slug = skill.slug.as_str();
        let (folder, body) = match free_folder(&full, slug) {
            (name, false) => (name, skill.body.clone()),
            (name, true) => {
                out.notes.push(format!(
                    "the repository already has a skill folder `{slug}`; Muster's copy is `{name}`"
                ));
                let body = parse::renamed(&skill.body, &name);
                (name, body)
            }
        };
        let rel = root.rel.join(&folder);
        for dir in confined::ensure_dir(&root.base, &rel)? {
            out.created.push((rel_of(&dir), true));
        }
        confined::write_new(&root.base, &rel.join(SKILL_MD), body.as_bytes())?;
        for f in &skill.files {
            // Paths were validated on the way in; check again before touching the disk.
            if parse::check_path(&f.path).is_err() {
                continue;
            }
            let path = rel.join(&f.path);
            if let Some(parent) = path.parent() {
                confined::ensure_dir(&root.base, parent)?;
            }
            confined::write_new(&root.base, &path, f.content.as_bytes())?;
        }
        out.placed.push((slug.to_owned(), full.join(&folder)));
    }
    Ok(out)
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
pub fn brief_section(skills: &[&SkillBundle]) -> String {
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
            s.slug,
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
