//! Skills: reusable playbooks (a `SKILL.md` plus supporting files) kept centrally and handed to each run
//! in its CLI's native format. [`parse`] validates one skill, [`archive`] reads and writes archives and
//! folders, [`builtin`] embeds and seeds our own set, [`materialize`] writes a run's skills and removes them.

pub mod archive;
pub mod builtin;
pub mod materialize;
pub mod parse;

use std::path::{Path, PathBuf};

pub use materialize::Materialized;
pub use parse::{ParsedSkill, Problem};

use crate::domain::RuntimeKind;
use crate::runner::protocol::SkillBundle;

/// Why a run's skills could not be handed to it. Its text is the run's failure message.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A skill's name is not a slug, so it cannot name a folder.
    #[error("a skill of this run has a bad name {slug:?}: {reason}")]
    BadName {
        slug: String,
        reason: crate::domain::ValidationError,
    },
    /// The CLI's skills folder could not be written.
    #[error("cannot write the agent's skills into {}: {source}", folder.display())]
    Write {
        folder: PathBuf,
        #[source]
        source: crate::confined::Error,
    },
    /// The brief's path has no folder or no file name.
    #[error("{} is not a file path", .0.display())]
    NotAFile(PathBuf),
    /// The brief could not be read back to add the skills.
    #[error("cannot read the brief to add skills: {0}")]
    ReadBrief(#[source] crate::confined::Error),
    /// The brief could not be written with the skills added.
    #[error("cannot add the skills to the brief: {0}")]
    AddToBrief(#[source] crate::confined::Error),
    /// The task that adds the skills to the brief did not finish (it panicked).
    #[error("cannot add the skills to the brief: {0}")]
    Task(#[source] tokio::task::JoinError),
}

/// Writes a run's skills (the agent's enabled ones, as its order carries them): into the CLI's skills
/// folder (see [`materialize`]), or appended to the brief at `brief` for custom and Llama agents. The
/// returned manifest removes what it wrote when dropped, so keep it alive until the run has ended.
pub async fn materialize(
    kind: RuntimeKind,
    bundles: &[SkillBundle],
    workdir: &Path,
    home: &Path,
    brief: &Path,
) -> Result<Materialized, Error> {
    for b in bundles {
        // The order comes from the server, but a folder name is still checked before it touches a disk.
        crate::domain::Slug::parse(&b.slug).map_err(|reason| Error::BadName {
            slug: b.slug.clone(),
            reason,
        })?;
    }
    let enabled: Vec<&SkillBundle> = bundles.iter().collect();
    let written = match materialize::skills_root(kind, workdir, home) {
        Some(root) => match materialize::write_skills(&root, &enabled) {
            Ok(written) => written,
            Err(e @ crate::confined::Error::Link { .. }) => {
                // A repository may link its skills folder elsewhere; Muster never writes through a
                // link, so this run reads its skills from the brief.
                tracing::warn!(error = %e, "skills folder is a link; skills go into the brief");
                append_to_brief(brief, &enabled).await?;
                let mut written = Materialized::default();
                written
                    .notes
                    .push(format!("{e}; the skills are in the brief instead"));
                written
            }
            Err(source) => {
                return Err(Error::Write {
                    folder: root.path(),
                    source,
                });
            }
        },
        None => {
            append_to_brief(brief, &enabled).await?;
            Materialized::default()
        }
    };
    for note in &written.notes {
        tracing::info!(note, "skill renamed for this run");
    }
    tracing::debug!(count = enabled.len(), kind = %kind, "skills handed to the run");
    Ok(written)
}

/// Appends the skills to the brief (a regular file Muster wrote at the top of the workdir), never
/// through a link.
async fn append_to_brief(brief: &Path, skills: &[&SkillBundle]) -> Result<(), Error> {
    if skills.is_empty() {
        return Ok(());
    }
    let (Some(dir), Some(name)) = (brief.parent(), brief.file_name()) else {
        return Err(Error::NotAFile(brief.to_path_buf()));
    };
    let (dir, name, section) = (
        dir.to_path_buf(),
        PathBuf::from(name),
        materialize::brief_section(skills),
    );
    tokio::task::spawn_blocking(move || {
        let mut text = crate::confined::read_regular(&dir.join(&name), MAX_BRIEF_BYTES)
            .map_err(Error::ReadBrief)?;
        text.extend_from_slice(section.as_bytes());
        crate::confined::replace(&dir, &name, &text).map_err(Error::AddToBrief)
    })
    .await
    .map_err(Error::Task)?
}

/// Largest brief read back to add the skills (the issue, its discussion and the instructions).
const MAX_BRIEF_BYTES: u64 = 16 * 1024 * 1024;
