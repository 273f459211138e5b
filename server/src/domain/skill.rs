//! Skills: reusable playbooks (a SKILL.md plus supporting files) attached to agents.

use chrono::{DateTime, Utc};

use super::{AgentId, SkillId, Slug, WorkspaceId, string_enum};

string_enum!(
    /// Where a skill came from.
    SkillSource, "source" { BuiltIn => "built_in", Imported => "imported", Written => "written" }
);

/// A supporting file of a skill, by path relative to the skill folder.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct SkillFile {
    pub path: String,
    pub content: String,
}

/// Input for creating or replacing a skill (already parsed and validated from its SKILL.md).
#[derive(Debug, Clone, PartialEq)]
pub struct NewSkill {
    pub slug: Slug,
    pub name: String,
    pub description: String,
    /// The whole SKILL.md, front matter included.
    pub body: String,
    pub files: Vec<SkillFile>,
    pub source: SkillSource,
    /// Hash over the SKILL.md and files, to tell whether a built-in changed.
    pub content_hash: String,
}

/// A stored skill.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Skill {
    pub id: SkillId,
    pub workspace_id: WorkspaceId,
    pub slug: Slug,
    pub name: String,
    pub description: String,
    pub body: String,
    pub files: Vec<SkillFile>,
    pub source: SkillSource,
    pub content_hash: String,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

/// A skill attached to an agent, with its switch.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct AgentSkill {
    pub agent_id: AgentId,
    pub skill: Skill,
    pub enabled: bool,
}
