//! Agents and skills: agent profiles, skills with their files, and which skills an agent has attached.

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use sqlx::types::Json;

use super::Result;
use crate::domain::{
    Agent, AgentId, AgentName, AgentSkill, Budget, EnvVar, HostPattern, NewAgent, NewSkill,
    PermissionMode, RuntimeKind, Skill, SkillFile, SkillId, SkillSource, Slug, WorkspaceId,
};

/// The agent use-cases: agents, skills and their attachments.
#[async_trait]
pub trait AgentStore: Send + Sync {
    /// Creates an agent (`agent_workspace_name_key` on a duplicate name).
    async fn create_agent(&self, ws: WorkspaceId, new: &NewAgent) -> Result<Agent>;
    /// Creates an agent with the workspace's skills named in `skills` attached and enabled (a name the
    /// workspace has no skill for is skipped), in one transaction: the agent never exists without them.
    async fn create_agent_with_skills(
        &self,
        ws: WorkspaceId,
        new: &NewAgent,
        skills: &[Slug],
    ) -> Result<Agent>;
    /// An agent by id within `ws`.
    async fn get_agent(&self, ws: WorkspaceId, id: AgentId) -> Result<Agent>;
    /// An agent by name within `ws`.
    async fn get_agent_by_name(&self, ws: WorkspaceId, name: &AgentName) -> Result<Agent>;
    /// All agents, by name.
    async fn list_agents(&self, ws: WorkspaceId) -> Result<Vec<Agent>>;
    /// Replaces an agent's profile.
    async fn update_agent(&self, ws: WorkspaceId, id: AgentId, new: &NewAgent) -> Result<Agent>;
    /// Deletes an agent; refused (`foreign_key`) while runs of it exist.
    async fn delete_agent(&self, ws: WorkspaceId, id: AgentId) -> Result<()>;
    /// Creates a skill with its files.
    async fn create_skill(&self, ws: WorkspaceId, new: &NewSkill) -> Result<Skill>;
    /// A skill by slug.
    async fn get_skill(&self, ws: WorkspaceId, slug: &Slug) -> Result<Skill>;
    /// All skills, by slug.
    async fn list_skills(&self, ws: WorkspaceId) -> Result<Vec<Skill>>;
    /// Replaces a skill's content and files (its slug stays).
    async fn update_skill(&self, ws: WorkspaceId, slug: &Slug, new: &NewSkill) -> Result<Skill>;
    /// Deletes a skill (and detaches it everywhere).
    async fn delete_skill(&self, ws: WorkspaceId, slug: &Slug) -> Result<()>;
    /// Attaches a skill to an agent, or changes its switch if already attached.
    async fn attach_skill(&self, agent: AgentId, skill: SkillId, enabled: bool) -> Result<()>;
    /// Detaches a skill (`NotFound` if it was not attached).
    async fn detach_skill(&self, agent: AgentId, skill: SkillId) -> Result<()>;
    /// The skills attached to an agent, by slug.
    async fn agent_skills(&self, agent: AgentId) -> Result<Vec<AgentSkill>>;
}

#[derive(sqlx::FromRow)]
pub(super) struct AgentRow {
    agent_id: AgentId,
    workspace_id: WorkspaceId,
    name: AgentName,
    color: String,
    kind: super::codec::Named<RuntimeKind>,
    model: Option<String>,
    instructions: String,
    env: Json<Vec<EnvVar>>,
    extra_args: Json<Vec<String>>,
    permission_mode: super::codec::Named<PermissionMode>,
    max_concurrent_runs: i32,
    stall_timeout_secs: i32,
    max_retries: i32,
    budget_usd: Option<f64>,
    budget_tokens: Option<i64>,
    command: Option<String>,
    base_url: Option<String>,
    runner_names: Json<Vec<String>>,
    created_at: DateTime<Utc>,
    updated_at: DateTime<Utc>,
    egress_hosts: Json<Vec<HostPattern>>,
    no_network: bool,
}

impl From<AgentRow> for Agent {
    fn from(r: AgentRow) -> Self {
        Agent {
            id: r.agent_id,
            workspace_id: r.workspace_id,
            profile: NewAgent {
                name: r.name,
                color: r.color,
                kind: r.kind.0,
                model: r.model,
                instructions: r.instructions,
                env: r.env.0,
                extra_args: r.extra_args.0,
                permission_mode: r.permission_mode.0,
                max_concurrent_runs: r.max_concurrent_runs,
                stall_timeout_secs: r.stall_timeout_secs,
                max_retries: r.max_retries,
                budget: Budget {
                    usd: r.budget_usd,
                    tokens: r.budget_tokens,
                },
                command: r.command,
                base_url: r.base_url,
                runners: r.runner_names.0,
                egress_hosts: r.egress_hosts.0,
                no_network: r.no_network,
            },
            created_at: r.created_at,
            updated_at: r.updated_at,
        }
    }
}

#[derive(sqlx::FromRow)]
pub(super) struct SkillRow {
    pub(super) skill_id: SkillId,
    workspace_id: WorkspaceId,
    slug: Slug,
    name: String,
    description: String,
    body: String,
    source: SkillSource,
    content_hash: String,
    created_at: DateTime<Utc>,
    updated_at: DateTime<Utc>,
}

impl SkillRow {
    pub(super) fn into_skill(self, files: Vec<SkillFile>) -> Skill {
        Skill {
            id: self.skill_id,
            workspace_id: self.workspace_id,
            slug: self.slug,
            name: self.name,
            description: self.description,
            body: self.body,
            files,
            source: self.source,
            content_hash: self.content_hash,
            created_at: self.created_at,
            updated_at: self.updated_at,
        }
    }
}

#[derive(sqlx::FromRow)]
pub(super) struct SkillFileRow {
    pub(super) skill_id: SkillId,
    pub(super) path: String,
    pub(super) content: String,
}

#[derive(sqlx::FromRow)]
pub(super) struct AgentSkillRow {
    pub(super) enabled: bool,
    #[sqlx(flatten)]
    pub(super) skill: SkillRow,
}

/// Pairs skills with their files (both sorted by the queries).
pub(super) fn with_files(rows: Vec<SkillRow>, files: &[SkillFileRow]) -> Vec<Skill> {
    let mut out = Vec::with_capacity(rows.len());
    for row in rows {
        let own = files
            .iter()
            .filter(|f| f.skill_id == row.skill_id)
            .map(|f| SkillFile {
                path: f.path.clone(),
                content: f.content.clone(),
            })
            .collect();
        out.push(row.into_skill(own));
    }
    out
}

macro_rules! agent_cols { () => {
    "agent_id, workspace_id, name, color, kind, model, instructions, env, extra_args, permission_mode, \
     max_concurrent_runs, stall_timeout_secs, max_retries, budget_usd, budget_tokens, command, base_url, \
     runner_names, created_at, updated_at, egress_hosts, no_network"
} }
pub(super) use agent_cols;

macro_rules! skill_cols { () => {
    "s.skill_id, s.workspace_id, s.slug, s.name, s.description, s.body, s.source, s.content_hash, \
     s.created_at, s.updated_at"
} }
pub(super) use skill_cols;

/// Binds the profile columns `$3..=$18` of an agent insert or update.
macro_rules! bind_agent {
    ($query:expr, $new:expr) => {{
        let new: &NewAgent = $new;
        $query
            .bind(&new.name)
            .bind(&new.color)
            .bind($crate::store::codec::Named(new.kind))
            .bind(new.model.as_deref())
            .bind(&new.instructions)
            .bind(sqlx::types::Json(&new.env))
            .bind(sqlx::types::Json(&new.extra_args))
            .bind($crate::store::codec::Named(new.permission_mode))
            .bind(new.max_concurrent_runs)
            .bind(new.stall_timeout_secs)
            .bind(new.max_retries)
            .bind(new.budget.usd)
            .bind(new.budget.tokens)
            .bind(new.command.as_deref())
            .bind(new.base_url.as_deref())
            .bind(sqlx::types::Json(&new.runners))
    }};
}
pub(super) use bind_agent;

macro_rules! insert_skill_files {
    ($db:ty, $tx:ident, $id:expr, $files:expr) => {
        for file in $files {
            sqlx::query::<$db>(
                "insert into skill_file (skill_id, path, content) values ($1, $2, $3)",
            )
            .bind($id)
            .bind(&file.path)
            .bind(&file.content)
            .execute(&mut *$tx)
            .await?;
        }
    };
}
pub(super) use insert_skill_files;

/// Writes `impl AgentStore for $store` on database `$db`; `impl_store!` expands it once per backend.
macro_rules! impl_agents_store {
    ($store:ty, $db:ty) => {
        const _: () = {
            use $crate::domain::*;
            use $crate::store::agents::*;
            use $crate::store::rows::*;
            use $crate::store::{Error, Result};

            #[async_trait::async_trait]
            impl AgentStore for $store {
                async fn create_agent(&self, ws: WorkspaceId, new: &NewAgent) -> Result<Agent> {
                    self.create_agent_with_skills(ws, new, &[]).await
                }

                async fn create_agent_with_skills(&self, ws: WorkspaceId, new: &NewAgent, skills: &[Slug]) -> Result<Agent> {
                    let now = now();
                    let mut tx = self.begin_write().await?;
                    let row = bind_agent!(sqlx::query_as::<$db, AgentRow>(concat!(
                        "insert into agent (agent_id, workspace_id, name, color, kind, model, instructions, env, extra_args, ",
                        "permission_mode, max_concurrent_runs, stall_timeout_secs, max_retries, budget_usd, budget_tokens, ",
                        "command, base_url, runner_names, created_at, updated_at, egress_hosts, no_network) values ($1, $2, ",
                        "$3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $19, $20, $21) returning ",
                        agent_cols!()))
                        .bind(AgentId::new()).bind(ws), new)
                        .bind(now).bind(sqlx::types::Json(&new.egress_hosts)).bind(new.no_network)
                        .fetch_one(&mut *tx).await?;
                    let agent: Agent = row.into();
                    for slug in skills {
                        sqlx::query::<$db>(
                            "insert into agent_skill (agent_id, skill_id, enabled) \
                             select $1, skill_id, true from skill where workspace_id = $2 and slug = $3 \
                             on conflict (agent_id, skill_id) do nothing")
                            .bind(agent.id).bind(ws).bind(slug).execute(&mut *tx).await?;
                    }
                    tx.commit().await?;
                    Ok(agent)
                }

                async fn get_agent(&self, ws: WorkspaceId, id: AgentId) -> Result<Agent> {
                    let row = sqlx::query_as::<$db, AgentRow>(concat!("select ", agent_cols!(), " from agent where agent_id = $1 and workspace_id = $2"))
                        .bind(id).bind(ws).fetch_one(&self.pool).await?;
                    Ok(row.into())
                }

                async fn get_agent_by_name(&self, ws: WorkspaceId, name: &AgentName) -> Result<Agent> {
                    let row = sqlx::query_as::<$db, AgentRow>(concat!("select ", agent_cols!(), " from agent where workspace_id = $1 and name = $2"))
                        .bind(ws).bind(name).fetch_one(&self.pool).await?;
                    Ok(row.into())
                }

                async fn list_agents(&self, ws: WorkspaceId) -> Result<Vec<Agent>> {
                    let rows = sqlx::query_as::<$db, AgentRow>(concat!("select ", agent_cols!(), " from agent where workspace_id = $1 order by name"))
                        .bind(ws).fetch_all(&self.pool).await?;
                    Ok(rows.into_iter().map(Into::into).collect())
                }

                async fn update_agent(&self, ws: WorkspaceId, id: AgentId, new: &NewAgent) -> Result<Agent> {
                    let row = bind_agent!(sqlx::query_as::<$db, AgentRow>(concat!(
                        "update agent set name = $3, color = $4, kind = $5, model = $6, instructions = $7, env = $8, ",
                        "extra_args = $9, permission_mode = $10, max_concurrent_runs = $11, stall_timeout_secs = $12, ",
                        "max_retries = $13, budget_usd = $14, budget_tokens = $15, command = $16, base_url = $17, ",
                        "runner_names = $18, updated_at = $19, egress_hosts = $20, no_network = $21 ",
                        "where agent_id = $1 and workspace_id = $2 returning ", agent_cols!()))
                        .bind(id).bind(ws), new)
                        .bind(now()).bind(sqlx::types::Json(&new.egress_hosts)).bind(new.no_network)
                        .fetch_one(&self.pool).await?;
                    Ok(row.into())
                }

                async fn delete_agent(&self, ws: WorkspaceId, id: AgentId) -> Result<()> {
                    let done = sqlx::query::<$db>("delete from agent where agent_id = $1 and workspace_id = $2")
                        .bind(id).bind(ws).execute(&self.pool).await?;
                    if done.rows_affected() == 0 { return Err(Error::NotFound); }
                    Ok(())
                }

                async fn create_skill(&self, ws: WorkspaceId, new: &NewSkill) -> Result<Skill> {
                    let (id, now) = (SkillId::new(), now());
                    let mut tx = self.begin_write().await?;
                    sqlx::query::<$db>(concat!(
                        "insert into skill (skill_id, workspace_id, slug, name, description, body, source, content_hash, ",
                        "created_at, updated_at) values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $9)"))
                        .bind(id).bind(ws).bind(&new.slug).bind(&new.name).bind(&new.description).bind(&new.body)
                        .bind(new.source).bind(&new.content_hash).bind(now)
                        .execute(&mut *tx).await?;
                    insert_skill_files!($db, tx, id, &new.files);
                    tx.commit().await?;
                    self.get_skill(ws, &new.slug).await
                }

                async fn get_skill(&self, ws: WorkspaceId, slug: &Slug) -> Result<Skill> {
                    let row = sqlx::query_as::<$db, SkillRow>(concat!("select ", skill_cols!(), " from skill s where s.workspace_id = $1 and s.slug = $2"))
                        .bind(ws).bind(slug).fetch_one(&self.pool).await?;
                    let files = sqlx::query_as::<$db, SkillFileRow>("select skill_id, path, content from skill_file where skill_id = $1 order by path")
                        .bind(row.skill_id).fetch_all(&self.pool).await?;
                    Ok(row.into_skill(files.into_iter().map(|f| SkillFile { path: f.path, content: f.content }).collect()))
                }

                async fn list_skills(&self, ws: WorkspaceId) -> Result<Vec<Skill>> {
                    let rows = sqlx::query_as::<$db, SkillRow>(concat!("select ", skill_cols!(), " from skill s where s.workspace_id = $1 order by s.slug"))
                        .bind(ws).fetch_all(&self.pool).await?;
                    let files = sqlx::query_as::<$db, SkillFileRow>(
                        "select f.skill_id, f.path, f.content from skill_file f join skill s on s.skill_id = f.skill_id \
                         where s.workspace_id = $1 order by f.path")
                        .bind(ws).fetch_all(&self.pool).await?;
                    Ok(with_files(rows, &files))
                }

                async fn update_skill(&self, ws: WorkspaceId, slug: &Slug, new: &NewSkill) -> Result<Skill> {
                    let mut tx = self.begin_write().await?;
                    let id = sqlx::query_scalar::<$db, SkillId>(concat!(
                        "update skill set name = $3, description = $4, body = $5, source = $6, content_hash = $7, ",
                        "updated_at = $8 where workspace_id = $1 and slug = $2 returning skill_id"))
                        .bind(ws).bind(slug).bind(&new.name).bind(&new.description).bind(&new.body).bind(new.source)
                        .bind(&new.content_hash).bind(now())
                        .fetch_one(&mut *tx).await?;
                    sqlx::query::<$db>("delete from skill_file where skill_id = $1").bind(id).execute(&mut *tx).await?;
                    insert_skill_files!($db, tx, id, &new.files);
                    tx.commit().await?;
                    self.get_skill(ws, slug).await
                }

                async fn delete_skill(&self, ws: WorkspaceId, slug: &Slug) -> Result<()> {
                    let done = sqlx::query::<$db>("delete from skill where workspace_id = $1 and slug = $2")
                        .bind(ws).bind(slug).execute(&self.pool).await?;
                    if done.rows_affected() == 0 { return Err(Error::NotFound); }
                    Ok(())
                }

                async fn attach_skill(&self, agent: AgentId, skill: SkillId, enabled: bool) -> Result<()> {
                    sqlx::query::<$db>(
                        "insert into agent_skill (agent_id, skill_id, enabled) values ($1, $2, $3) \
                         on conflict (agent_id, skill_id) do update set enabled = excluded.enabled")
                        .bind(agent).bind(skill).bind(enabled).execute(&self.pool).await?;
                    Ok(())
                }

                async fn detach_skill(&self, agent: AgentId, skill: SkillId) -> Result<()> {
                    let done = sqlx::query::<$db>("delete from agent_skill where agent_id = $1 and skill_id = $2")
                        .bind(agent).bind(skill).execute(&self.pool).await?;
                    if done.rows_affected() == 0 { return Err(Error::NotFound); }
                    Ok(())
                }

                async fn agent_skills(&self, agent: AgentId) -> Result<Vec<AgentSkill>> {
                    let rows = sqlx::query_as::<$db, AgentSkillRow>(concat!(
                        "select a.enabled, ", skill_cols!(), " from agent_skill a join skill s on s.skill_id = a.skill_id ",
                        "where a.agent_id = $1 order by s.slug"))
                        .bind(agent).fetch_all(&self.pool).await?;
                    let files = sqlx::query_as::<$db, SkillFileRow>(
                        "select f.skill_id, f.path, f.content from skill_file f join agent_skill a on a.skill_id = f.skill_id \
                         where a.agent_id = $1 order by f.path")
                        .bind(agent).fetch_all(&self.pool).await?;
                    let enabled: Vec<bool> = rows.iter().map(|r| r.enabled).collect();
                    let skills = with_files(rows.into_iter().map(|r| r.skill).collect(), &files);
                    Ok(skills.into_iter().zip(enabled).map(|(skill, enabled)| AgentSkill { agent_id: agent, skill, enabled }).collect())
                }
            }
        };
    };
}
pub(super) use impl_agents_store;
