//! Skills: reusable playbooks (a `SKILL.md` plus supporting files) kept centrally and handed to each run
//! in its CLI's native format. [`parse`] validates one skill, [`archive`] reads and writes archives and
//! folders, [`builtin`] embeds and seeds our own set, [`materialize`] writes a run's skills and removes them.

pub mod archive;
pub mod builtin;
pub mod materialize;
pub mod parse;

use std::path::Path;

pub use materialize::Materialized;
pub use parse::{ParsedSkill, Problem};

use crate::app::AppState;
use crate::domain::{Agent, Skill};

/// Writes `agent`'s enabled skills for a run: into the CLI's skills folder (see [`materialize`]), or
/// appended to the brief at `brief` for custom and Llama agents. The returned manifest removes what it
/// wrote when dropped, so keep it alive until the run has ended.
pub async fn materialize(
    state: &AppState,
    agent: &Agent,
    workdir: &Path,
    home: &Path,
    brief: &Path,
) -> Result<Materialized, String> {
    let attached = state
        .store
        .agent_skills(agent.id)
        .await
        .map_err(|e| format!("cannot load the agent's skills: {e}"))?;
    let enabled: Vec<&Skill> = attached
        .iter()
        .filter(|a| a.enabled)
        .map(|a| &a.skill)
        .collect();
    let kind = agent.profile.kind;
    let codex_home = agent
        .profile
        .env
        .iter()
        .rev()
        .find(|v| v.key == "CODEX_HOME" && !v.secret)
        .map(|v| Path::new(&v.value).to_path_buf());
    let written = match materialize::skills_root(kind, workdir, home, codex_home.as_deref()) {
        Some(root) => materialize::write_skills(&root, &enabled).map_err(|e| {
            format!(
                "cannot write the agent's skills into {}: {e}",
                root.display()
            )
        })?,
        None => {
            append_to_brief(brief, &enabled).await?;
            Materialized::default()
        }
    };
    for note in &written.notes {
        tracing::info!(
            agent = agent.profile.name.as_str(),
            note,
            "skill renamed for this run"
        );
    }
    tracing::debug!(count = enabled.len(), kind = %kind, "skills handed to the run");
    Ok(written)
}

async fn append_to_brief(brief: &Path, skills: &[&Skill]) -> Result<(), String> {
    if skills.is_empty() {
        return Ok(());
    }
    let mut text = tokio::fs::read_to_string(brief)
        .await
        .map_err(|e| format!("cannot read the brief to add skills: {e}"))?;
    text.push_str(&materialize::brief_section(skills));
    tokio::fs::write(brief, text)
        .await
        .map_err(|e| format!("cannot add the skills to the brief: {e}"))
}
