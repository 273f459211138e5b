//! Skills: list, show, write, import (archive or server folder), export, delete; attaching them to agents.
//! Every input goes through `skills::parse`, so a page, the API and the CLI get the same rules and the same
//! messages, and nothing is stored when any rule fails.

use serde::{Deserialize, Serialize};

use super::{Caller, Error, Result};
use crate::domain::{AgentSkill, NewSkill, Skill, SkillSource, Slug};
use crate::engine::Engine;
use crate::service::agents;
use crate::skills::{ParsedSkill, Problem, archive, parse};

/// A supporting file as sent in.
#[derive(Debug, Clone, Default, Deserialize, Serialize, utoipa::ToSchema)]
pub struct FileInput {
    /// Relative to the skill folder (`scripts/check.sh`).
    pub path: String,
    /// UTF-8 text.
    pub content: String,
}

/// A skill as written by hand: the whole SKILL.md and, optionally, its supporting files.
#[derive(Debug, Clone, Default, Deserialize, utoipa::ToSchema)]
pub struct SkillInput {
    /// The whole SKILL.md: YAML front matter (`name`, `description`, any other keys) and markdown.
    #[schema(min_length = 1, pattern = r"^\ufeff?---")]
    pub skill_md: String,
    /// Supporting files; on edit, absent means "keep the current ones".
    pub files: Option<Vec<FileInput>>,
}

/// A folder on the server to import (owners and admins).
#[derive(Debug, Clone, Default, Deserialize, utoipa::ToSchema)]
pub struct ImportPathInput {
    /// An absolute path on the server: a skill folder, or a folder of skill folders.
    #[schema(min_length = 1, pattern = r"^\s*/")]
    pub path: String,
}

/// The switch of an attached skill.
#[derive(Debug, Clone, Deserialize, utoipa::ToSchema)]
pub struct AttachInput {
    /// Whether runs get the skill (default true).
    #[serde(default = "yes")]
    pub enabled: bool,
}

fn yes() -> bool {
    true
}

/// A skill as the API shows it.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct SkillView {
    pub slug: String,
    pub name: String,
    pub description: String,
    /// The whole SKILL.md.
    pub body: String,
    pub files: Vec<FileInput>,
    /// built_in, imported or written.
    pub source: String,
    /// sha256 over SKILL.md and the files.
    pub content_hash: String,
    /// Names of the agents the skill is attached to (enabled or not).
    pub agents: Vec<String>,
    pub created_at: chrono::DateTime<chrono::Utc>,
    pub updated_at: chrono::DateTime<chrono::Utc>,
}

impl SkillView {
    /// The view of `s`, attached to `agents`.
    pub fn new(s: &Skill, agents: Vec<String>) -> Self {
        SkillView {
            slug: s.slug.as_str().to_owned(),
            name: s.name.clone(),
            description: s.description.clone(),
            body: s.body.clone(),
            files: s
                .files
                .iter()
                .map(|f| FileInput {
                    path: f.path.clone(),
                    content: f.content.clone(),
                })
                .collect(),
            source: s.source.to_string(),
            content_hash: s.content_hash.clone(),
            agents,
            created_at: s.created_at,
            updated_at: s.updated_at,
        }
    }
}

/// A skill attached to an agent.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct AgentSkillView {
    pub slug: String,
    pub description: String,
    pub source: String,
    pub enabled: bool,
}

impl From<&AgentSkill> for AgentSkillView {
    fn from(a: &AgentSkill) -> Self {
        AgentSkillView {
            slug: a.skill.slug.as_str().to_owned(),
            description: a.skill.description.clone(),
            source: a.skill.source.to_string(),
            enabled: a.enabled,
        }
    }
}

/// Rule breaks as a 422: SKILL.md problems under `skill_md`, archive-wide ones under `archive`, the rest
/// under `files`; each message starts with the file it is about.
pub fn problems_error(problems: &[Problem]) -> Error {
    Error::invalid(problems.iter().map(|p| {
        let field = match p.file.as_str() {
            parse::SKILL_MD => "skill_md",
            "archive" => "archive",
            _ => "files",
        };
        (field, p.to_string())
    }))
}

fn slug(raw: &str) -> Result<Slug> {
    Slug::parse_field("slug", raw).map_err(|_| Error::NotFound)
}

/// Every skill, by slug, with the agents each is attached to.
pub async fn list(state: &Engine, caller: &Caller) -> Result<Vec<SkillView>> {
    let skills = state.store.list_skills(caller.ws.id).await?;
    let mut attached: Vec<(String, Vec<AgentSkill>)> = Vec::new();
    for agent in state.store.list_agents(caller.ws.id).await? {
        let skills = state.store.agent_skills(agent.id).await?;
        attached.push((agent.profile.name.as_str().to_owned(), skills));
    }
    Ok(skills
        .iter()
        .map(|s| {
            let agents = attached
                .iter()
                .filter(|(_, list)| list.iter().any(|a| a.skill.id == s.id))
                .map(|(name, _)| name.clone())
                .collect();
            SkillView::new(s, agents)
        })
        .collect())
}

/// One skill, with the agents it is attached to.
pub async fn show(state: &Engine, caller: &Caller, raw_slug: &str) -> Result<SkillView> {
    let wanted = slug(raw_slug)?;
    list(state, caller)
        .await?
        .into_iter()
        .find(|s| s.slug == wanted.as_str())
        .ok_or(Error::NotFound)
}

/// The stored skill itself.
pub async fn get(state: &Engine, caller: &Caller, raw_slug: &str) -> Result<Skill> {
    Ok(state
        .store
        .get_skill(caller.ws.id, &slug(raw_slug)?)
        .await?)
}

fn new_skill(parsed: ParsedSkill, source: SkillSource) -> NewSkill {
    NewSkill {
        name: parsed.slug.as_str().to_owned(),
        slug: parsed.slug,
        description: parsed.description,
        body: parsed.body,
        files: parsed.files,
        source,
        content_hash: parsed.content_hash,
    }
}

fn raw_files(files: &[FileInput]) -> Vec<parse::RawFile> {
    files
        .iter()
        .map(|f| parse::RawFile {
            path: f.path.trim().to_owned(),
            bytes: f.content.clone().into_bytes(),
        })
        .collect()
}

/// Stores a new skill, refusing a name another skill has.
async fn insert(state: &Engine, caller: &Caller, new: &NewSkill) -> Result<Skill> {
    let clash = || {
        Error::conflict(
            "name",
            format!(
                "a skill named {} already exists; edit or delete it first",
                new.slug.as_str()
            ),
        )
    };
    match state.store.get_skill(caller.ws.id, &new.slug).await {
        Ok(_) => return Err(clash()),
        Err(crate::store::Error::NotFound) => {}
        Err(e) => return Err(e.into()),
    }
    match state.store.create_skill(caller.ws.id, new).await {
        Err(crate::store::Error::Conflict { .. }) => Err(clash()),
        other => Ok(other?),
    }
}

/// Writes a new skill by hand.
pub async fn create(state: &Engine, caller: &Caller, input: &SkillInput) -> Result<Skill> {
    let files = raw_files(input.files.as_deref().unwrap_or_default());
    let parsed = parse::parse(&input.skill_md, files).map_err(|p| problems_error(&p))?;
    insert(state, caller, &new_skill(parsed, SkillSource::Written)).await
}

/// Replaces a skill's SKILL.md (and files, when given). Its name must stay; the source becomes `written`,
/// which also protects an edited built-in from being reseeded.
pub async fn update(
    state: &Engine,
    caller: &Caller,
    raw_slug: &str,
    input: &SkillInput,
) -> Result<Skill> {
    let current = get(state, caller, raw_slug).await?;
    let files = match &input.files {
        Some(files) => raw_files(files),
        None => current
            .files
            .iter()
            .map(|f| parse::RawFile {
                path: f.path.clone(),
                bytes: f.content.clone().into_bytes(),
            })
            .collect(),
    };
    let parsed = parse::parse(&input.skill_md, files).map_err(|p| problems_error(&p))?;
    if parsed.slug != current.slug {
        return Err(Error::invalid([(
            "skill_md",
            format!(
                "SKILL.md: `name` must stay {} (to rename, create a new skill and delete this one)",
                current.slug.as_str()
            ),
        )]));
    }
    let new = new_skill(parsed, SkillSource::Written);
    Ok(state
        .store
        .update_skill(caller.ws.id, &current.slug, &new)
        .await?)
}

/// Deletes a skill (owners and admins); it is detached from every agent.
pub async fn delete(state: &Engine, caller: &Caller, raw_slug: &str) -> Result<()> {
    caller.require_manager()?;
    Ok(state
        .store
        .delete_skill(caller.ws.id, &slug(raw_slug)?)
        .await?)
}

/// Imports a `.zip`/`.skill` archive.
pub async fn import_archive(state: &Engine, caller: &Caller, bytes: &[u8]) -> Result<Skill> {
    let parsed = archive::from_zip(bytes).map_err(|p| problems_error(&p))?;
    insert(state, caller, &new_skill(parsed, SkillSource::Imported)).await
}

/// Imports a folder on the server (owners and admins: it reads the server's disk).
pub async fn import_folder(state: &Engine, caller: &Caller, path: &str) -> Result<Skill> {
    caller.require_manager()?;
    let dir = std::path::PathBuf::from(path.trim());
    if path.trim().is_empty() || !dir.is_absolute() {
        return Err(Error::invalid([(
            "path",
            "give the absolute path of a folder on the server".to_owned(),
        )]));
    }
    let parsed = tokio::task::spawn_blocking(move || archive::from_folder(&dir))
        .await
        .map_err(|e| Error::Internal(e.into()))?
        .map_err(|p| problems_error(&p))?;
    insert(state, caller, &new_skill(parsed, SkillSource::Imported)).await
}

/// The skill as a `.zip`: its file name and bytes.
pub async fn export(state: &Engine, caller: &Caller, raw_slug: &str) -> Result<(String, Vec<u8>)> {
    let skill = get(state, caller, raw_slug).await?;
    let bytes = archive::to_zip(&skill)?;
    Ok((format!("{}.zip", skill.slug.as_str()), bytes))
}

/// The skills attached to an agent.
pub async fn of_agent(state: &Engine, caller: &Caller, agent: &str) -> Result<Vec<AgentSkill>> {
    let agent = agents::by_name(state, caller, agent).await?;
    Ok(state.store.agent_skills(agent.id).await?)
}

/// Attaches a skill to an agent, or sets its switch.
pub async fn attach(
    state: &Engine,
    caller: &Caller,
    agent: &str,
    raw_slug: &str,
    enabled: bool,
) -> Result<Vec<AgentSkill>> {
    let agent = agents::by_name(state, caller, agent).await?;
    let skill = get(state, caller, raw_slug).await?;
    state
        .store
        .attach_skill(agent.id, skill.id, enabled)
        .await?;
    Ok(state.store.agent_skills(agent.id).await?)
}

/// Detaches a skill from an agent.
pub async fn detach(
    state: &Engine,
    caller: &Caller,
    agent: &str,
    raw_slug: &str,
) -> Result<Vec<AgentSkill>> {
    let agent = agents::by_name(state, caller, agent).await?;
    let skill = get(state, caller, raw_slug).await?;
    state.store.detach_skill(agent.id, skill.id).await?;
    Ok(state.store.agent_skills(agent.id).await?)
}

/// The SKILL.md's instructions rendered as sanitised HTML, with its problems if any (for the editor's
/// preview: it shows both).
pub fn preview(skill_md: &str) -> (String, Vec<String>) {
    let problems = match parse::parse(skill_md, Vec::new()) {
        Ok(_) => Vec::new(),
        Err(p) => p.iter().map(ToString::to_string).collect(),
    };
    (
        crate::markdown::to_safe_html(parse::instructions(skill_md)),
        problems,
    )
}
