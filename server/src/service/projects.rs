//! Projects: create, edit, delete, list with their progress; and the project an issue is put in.
//!
//! Any member may lay out projects. Their repository and check command say what runs execute and read
//! on the server, so only owners and admins set them (as for the workspace's own).

use serde::Deserialize;

use super::{Caller, Error, Problems, Result};
use crate::domain::{
    Assignee, CHECK_TIMEOUT_DEFAULT_SECS, CheckSpec, NewProject, Project, ProjectId, ProjectKey,
    ProjectName, ProjectPatch, ProjectStats, ProjectStatus, ValidationError,
};
use crate::engine::Engine;

/// A project's fields as typed or sent; `None` leaves a field unset (create) or as it is (edit), `""`
/// clears an optional one.
#[derive(Debug, Clone, Default, Deserialize, utoipa::ToSchema)]
pub struct ProjectInput {
    /// 2–10 letters or digits starting with a letter, unique in the workspace: `WEB`.
    #[schema(example = "WEB", pattern = r"^\s*[A-Za-z][A-Za-z0-9]{1,9}\s*$")]
    pub key: Option<String>,
    /// 1–100 characters, unique in the workspace.
    #[schema(
        example = "Website relaunch",
        min_length = 1,
        max_length = 100,
        pattern = r"\S"
    )]
    pub name: Option<String>,
    /// Markdown, at most 10,000 characters.
    pub description: Option<String>,
    /// A member's email or name (or `user:<id>`); "" or `none` for nobody.
    pub lead: Option<String>,
    /// On create, `planned` when left out.
    #[schema(value_type = Option<ProjectStatus>)]
    pub status: Option<String>,
    /// `YYYY-MM-DD`; "" clears it.
    #[schema(example = "2027-03-31")]
    pub target_date: Option<String>,
    /// Owners and admins: the project's own repository (an absolute path to a git repository with a
    /// commit, or a git URL without credentials); "" means the workspace's.
    pub repo_path: Option<String>,
    /// Owners and admins: the check command ensembles of its issues run; "" means the workspace's.
    #[schema(example = "cargo test")]
    pub check_command: Option<String>,
    /// Seconds before that check is stopped (1–3600, default 600).
    #[serde(default, deserialize_with = "crate::domain::serde_util::whole_number")]
    #[schema(minimum = 1, maximum = 3600)]
    pub check_timeout_secs: Option<u64>,
}

/// What a project is and how far it is.
pub struct ProjectSummary {
    pub project: Project,
    pub stats: ProjectStats,
}

/// Parses a key from the URL or command line.
pub fn parse_key(raw: &str) -> Result<ProjectKey> {
    ProjectKey::parse(raw).map_err(|_| Error::NotFound)
}

fn non_empty(raw: &str) -> Option<&str> {
    Some(raw.trim()).filter(|r| !r.is_empty() && *r != "none")
}

/// The fields of `input`, checked; the repository is looked at on disk.
async fn patch_of(state: &Engine, caller: &Caller, input: &ProjectInput) -> Result<ProjectPatch> {
    let mut problems = Problems::default();
    let mut patch = ProjectPatch::default();
    if input.repo_path.is_some() || input.check_command.is_some() {
        if caller.run.is_none() && !caller.role.can_manage() {
            let fields = [
                input.repo_path.as_ref().map(|_| "repo_path"),
                input.check_command.as_ref().map(|_| "check_command"),
            ];
            return Err(Error::not_allowed(fields.into_iter().flatten().map(|f| {
                (
                    f,
                    "only owners and admins set a project's repository and check".to_owned(),
                )
            })));
        }
        caller.require_manager()?;
    }
    if let Some(k) = &input.key {
        patch.key = problems.take(ProjectKey::parse(k));
    }
    if let Some(n) = &input.name {
        patch.name = problems.take(ProjectName::parse(n));
    }
    if let Some(d) = &input.description
        && problems
            .take(crate::domain::project_description_ok(d))
            .is_some()
    {
        patch.description = Some(d.trim().to_owned());
    }
    if let Some(s) = &input.status {
        patch.status = problems.take(s.parse());
    }
    if let Some(raw) = &input.target_date {
        patch.target_date = match non_empty(raw) {
            None => Some(None),
            Some(d) => problems
                .take(
                    chrono::NaiveDate::parse_from_str(d, "%Y-%m-%d").map_err(|_| {
                        ValidationError::new(
                            "target_date",
                            format!("must be a date as YYYY-MM-DD (e.g. 2027-03-31), not {d:?}"),
                        )
                    }),
                )
                .map(Some),
        };
    }
    if let Some(raw) = &input.lead {
        patch.lead = match non_empty(raw) {
            None => Some(None),
            Some(who) => match super::issues::resolve_assignee(state, caller, who).await? {
                Ok(Some(Assignee::User(u))) => Some(Some(u)),
                Ok(_) => {
                    problems.add(
                        "lead",
                        format!("{who:?} is an agent; a project's lead is a member"),
                    );
                    None
                }
                Err(_) => {
                    problems.add(
                        "lead",
                        format!("no member called {who:?} in this workspace"),
                    );
                    None
                }
            },
        };
    }
    if let Some(secs) = input.check_timeout_secs
        && !(1..=crate::domain::CHECK_TIMEOUT_MAX_SECS).contains(&secs)
    {
        problems.add(
            "check_timeout_secs",
            format!(
                "must be from 1 to {} seconds, not {secs}",
                crate::domain::CHECK_TIMEOUT_MAX_SECS
            ),
        );
    }
    if let Some(raw) = &input.check_command {
        patch.check = match non_empty(raw) {
            None => Some(None),
            Some(command) => {
                let check = CheckSpec {
                    command: command.to_owned(),
                    timeout_secs: input
                        .check_timeout_secs
                        .unwrap_or(CHECK_TIMEOUT_DEFAULT_SECS),
                };
                problems.take(check.validate()).map(|()| Some(check))
            }
        };
    }
    problems.finish()?;
    if let Some(raw) = &input.repo_path {
        patch.repo_path = match non_empty(raw) {
            None => Some(None),
            Some(path) => Some(Some(
                crate::runner::executor::git::check_repo(path)
                    .await
                    .map_err(|e| Error::invalid([("repo_path", e.to_string())]))?,
            )),
        };
    }
    Ok(patch)
}

/// What a taken key or name means to the person who sent it.
fn taken(e: crate::store::Error) -> Error {
    match e {
        crate::store::Error::Conflict { constraint } if constraint == "project_key_key" => {
            Error::conflict("key", "another project already has this key")
        }
        crate::store::Error::Conflict { constraint } if constraint == "project_name_key" => {
            Error::conflict("name", "another project already has this name")
        }
        other => other.into(),
    }
}

fn refuse_runs(caller: &Caller) -> Result<()> {
    match &caller.run {
        Some(scope) => Err(scope.refusal()),
        None => Ok(()),
    }
}

/// Creates a project (`key` and `name` required).
pub async fn create(state: &Engine, caller: &Caller, input: &ProjectInput) -> Result<Project> {
    refuse_runs(caller)?;
    let mut missing = Vec::new();
    if input.key.as_deref().is_none_or(|k| k.trim().is_empty()) {
        missing.push(("key", "a project needs a key (e.g. WEB)".to_owned()));
    }
    if input.name.as_deref().is_none_or(|n| n.trim().is_empty()) {
        missing.push(("name", "a project needs a name".to_owned()));
    }
    if !missing.is_empty() {
        return Err(Error::invalid(missing));
    }
    let patch = patch_of(state, caller, input).await?;
    let (Some(key), Some(name)) = (patch.key, patch.name) else {
        return Err(Error::invalid([("form", "invalid input".to_owned())]));
    };
    let new = NewProject {
        key,
        name,
        description: patch.description.unwrap_or_default(),
        lead: patch.lead.flatten(),
        status: patch.status.unwrap_or(ProjectStatus::Planned),
        target_date: patch.target_date.flatten(),
        repo_path: patch.repo_path.flatten(),
        check: patch.check.flatten(),
        created_by: Some(caller.user.id),
    };
    let project = state
        .store
        .create_project(caller.ws.id, &new)
        .await
        .map_err(taken)?;
    tracing::info!(project = %project.key, "project created");
    Ok(project)
}

/// Edits the fields present in `input`.
pub async fn update(
    state: &Engine,
    caller: &Caller,
    key: &ProjectKey,
    input: &ProjectInput,
) -> Result<Project> {
    refuse_runs(caller)?;
    let current = state.store.get_project(caller.ws.id, key).await?;
    let patch = patch_of(state, caller, input).await?;
    if patch.is_empty() {
        return Ok(current);
    }
    state
        .store
        .update_project(caller.ws.id, current.id, &patch)
        .await
        .map_err(taken)
}

/// Deletes a project (owners and admins); its issues stay, in no project.
pub async fn delete(state: &Engine, caller: &Caller, key: &ProjectKey) -> Result<Project> {
    caller.require_manager()?;
    let project = state.store.get_project(caller.ws.id, key).await?;
    state.store.delete_project(caller.ws.id, project.id).await?;
    tracing::info!(project = %project.key, "project deleted");
    Ok(project)
}

/// Every project of the workspace with how far it is.
pub async fn list(state: &Engine, caller: &Caller) -> Result<Vec<ProjectSummary>> {
    let projects = state.store.list_projects(caller.ws.id).await?;
    let mut stats = state.store.project_stats(caller.ws.id).await?;
    Ok(projects
        .into_iter()
        .map(|project| {
            let at = stats.iter().position(|(id, _)| *id == project.id);
            let stats = at.map(|i| stats.swap_remove(i).1).unwrap_or_default();
            ProjectSummary { project, stats }
        })
        .collect())
}

/// One project with how far it is.
pub async fn get(state: &Engine, caller: &Caller, key: &ProjectKey) -> Result<ProjectSummary> {
    let project = state.store.get_project(caller.ws.id, key).await?;
    let stats = state
        .store
        .project_stats(caller.ws.id)
        .await?
        .into_iter()
        .find(|(id, _)| *id == project.id)
        .map(|(_, s)| s)
        .unwrap_or_default();
    Ok(ProjectSummary { project, stats })
}

/// The project a typed key names (`""` / `none`: no project), or a message naming the field and the
/// workspace's projects.
pub async fn typed_project(
    state: &Engine,
    caller: &Caller,
    raw: &str,
) -> Result<std::result::Result<Option<ProjectId>, ValidationError>> {
    let Some(raw) = non_empty(raw) else {
        return Ok(Ok(None));
    };
    let found = match ProjectKey::parse(raw) {
        Ok(key) => match state.store.get_project(caller.ws.id, &key).await {
            Ok(p) => Some(p.id),
            Err(crate::store::Error::NotFound) => None,
            Err(e) => return Err(e.into()),
        },
        Err(_) => None,
    };
    match found {
        Some(id) => Ok(Ok(Some(id))),
        None => {
            let keys: Vec<String> = state
                .store
                .list_projects(caller.ws.id)
                .await?
                .into_iter()
                .map(|p| p.key.to_string())
                .collect();
            let known = if keys.is_empty() {
                "this workspace has no projects yet".to_owned()
            } else {
                format!("its projects are {}", keys.join(", "))
            };
            Ok(Err(ValidationError::new(
                "project",
                format!("no project {raw:?} in this workspace; {known}"),
            )))
        }
    }
}
