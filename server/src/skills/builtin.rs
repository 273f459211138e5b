//! The built-in skills, embedded from the top-level `skills/` folder, and seeding them into workspaces.
//!
//! Seeding rule (run at start-up for every workspace, and when a workspace is created):
//! - a built-in the workspace does not have is created with source `built_in`;
//! - a stored copy still marked `built_in` whose hash differs from the embedded one is updated;
//! - a copy a person edited is never touched: every edit through Muster turns the source to `written`,
//!   so only untouched copies keep `built_in`. (A deleted built-in comes back at the next seeding.)

use super::parse::{self, ParsedSkill};
use crate::domain::{NewSkill, SkillSource, WorkspaceId};
use crate::store::{self, Store};

/// Each built-in skill's SKILL.md, by folder name (no built-in has supporting files yet).
const EMBEDDED: &[(&str, &str)] = &[
    (
        "test-first-fix",
        include_str!("../../../skills/test-first-fix/SKILL.md"),
    ),
    (
        "review-a-diff",
        include_str!("../../../skills/review-a-diff/SKILL.md"),
    ),
    (
        "fix-failing-ci",
        include_str!("../../../skills/fix-failing-ci/SKILL.md"),
    ),
    (
        "small-honest-commits",
        include_str!("../../../skills/small-honest-commits/SKILL.md"),
    ),
    (
        "report-to-the-board",
        include_str!("../../../skills/report-to-the-board/SKILL.md"),
    ),
];

/// The built-in skills, parsed. A built-in that fails its own rules is a bug caught by the unit tests;
/// here it is logged and left out rather than stopping the server.
pub fn all() -> Vec<ParsedSkill> {
    EMBEDDED
        .iter()
        .filter_map(|(folder, text)| match parse::parse(text, Vec::new()) {
            Ok(skill) if skill.slug.as_str() == *folder => Some(skill),
            Ok(skill) => {
                tracing::error!(
                    folder,
                    name = skill.slug.as_str(),
                    "built-in skill name differs from its folder"
                );
                None
            }
            Err(problems) => {
                tracing::error!(folder, ?problems, "invalid built-in skill");
                None
            }
        })
        .collect()
}

/// What seeding did in one workspace.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Seeded {
    pub created: Vec<String>,
    pub updated: Vec<String>,
    /// Built-ins left alone because a person edited that copy.
    pub kept: Vec<String>,
}

/// Seeds the built-ins into one workspace (see the module docs for the rule).
pub async fn seed(store: &dyn Store, ws: WorkspaceId) -> store::Result<Seeded> {
    let mut out = Seeded::default();
    for skill in all() {
        let slug = skill.slug.as_str().to_owned();
        let new = new_skill(skill);
        match store.get_skill(ws, &new.slug).await {
            Err(store::Error::NotFound) => match store.create_skill(ws, &new).await {
                Ok(_) => out.created.push(slug),
                // Another replica seeded it at the same moment.
                Err(store::Error::Conflict { .. }) => {}
                Err(e) => return Err(e),
            },
            Err(e) => return Err(e),
            Ok(stored) if stored.source != SkillSource::BuiltIn => out.kept.push(slug),
            Ok(stored) if stored.content_hash == new.content_hash => {}
            Ok(_) => {
                store.update_skill(ws, &new.slug, &new).await?;
                out.updated.push(slug);
            }
        }
    }
    Ok(out)
}

/// Seeds every workspace; errors are logged per workspace and do not stop start-up.
pub async fn seed_all(store: &dyn Store) -> store::Result<()> {
    for ws in store.list_workspaces().await? {
        match seed(store, ws.id).await {
            Ok(s) if !(s.created.is_empty() && s.updated.is_empty()) => tracing::info!(
                workspace = ws.slug.as_str(),
                created = ?s.created,
                updated = ?s.updated,
                "built-in skills seeded"
            ),
            Ok(_) => {}
            Err(e) => {
                tracing::warn!(workspace = ws.slug.as_str(), error = %e, "cannot seed built-in skills")
            }
        }
    }
    Ok(())
}

fn new_skill(skill: ParsedSkill) -> NewSkill {
    NewSkill {
        name: skill.slug.as_str().to_owned(),
        slug: skill.slug,
        description: skill.description,
        body: skill.body,
        files: skill.files,
        source: SkillSource::BuiltIn,
        content_hash: skill.content_hash,
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn every_built_in_parses_and_matches_its_folder() {
        let all = super::all();
        assert_eq!(all.len(), super::EMBEDDED.len());
        for s in &all {
            assert!(
                s.description.len() > 40,
                "{} needs a real description",
                s.slug.as_str()
            );
            assert!(
                super::parse::instructions(&s.body).len() > 200,
                "{} is too thin",
                s.slug.as_str()
            );
        }
    }
}
