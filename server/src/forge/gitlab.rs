//! GitLab REST v4 (gitlab.com and self-managed): merge requests by iid, projects by their url-encoded
//! path (`group%2Fsub%2Fname`).

use reqwest::Method;
use serde::{Deserialize, Serialize};

use super::{Access, Api, Forge, ForgeError, ForgeKind, LogRef, NewPull, PrState, Pull, encode};

/// The access level from which a member may push and open merge requests (Developer).
const DEVELOPER: u32 = 30;
/// The access level from which a member reads pipelines and jobs of a private project (Reporter).
const REPORTER: u32 = 20;
/// The title prefix GitLab reads as a draft.
const DRAFT_PREFIX: &str = "Draft: ";

pub(super) struct Gitlab {
    api: Api,
    /// The project's id in URLs: its url-encoded path.
    project: String,
}

impl Gitlab {
    pub(super) fn new(api: Api) -> Gitlab {
        let project = encode(api.repo());
        Gitlab { api, project }
    }

    fn project_path(&self, rest: &str) -> String {
        format!("/projects/{}{rest}", self.project)
    }
}

#[derive(Deserialize)]
struct Project {
    http_url_to_repo: String,
    #[serde(default)]
    default_branch: Option<String>,
    #[serde(default)]
    permissions: Option<Permissions>,
}

#[derive(Deserialize)]
struct Permissions {
    #[serde(default)]
    project_access: Option<AccessLevel>,
    #[serde(default)]
    group_access: Option<AccessLevel>,
}

#[derive(Deserialize)]
struct AccessLevel {
    access_level: u32,
}

#[derive(Deserialize)]
struct TokenInfo {
    #[serde(default)]
    scopes: Vec<String>,
}

#[derive(Deserialize)]
struct Branch {
    commit: Commit,
}

#[derive(Deserialize)]
struct Commit {
    id: String,
}

#[derive(Serialize)]
struct CreateMergeRequest<'a> {
    source_branch: &'a str,
    target_branch: &'a str,
    title: String,
    description: &'a str,
    remove_source_branch: bool,
}

#[derive(Deserialize)]
struct MergeRequest {
    iid: i64,
    web_url: String,
    state: String,
    #[serde(default)]
    draft: Option<bool>,
    #[serde(default)]
    work_in_progress: Option<bool>,
    title: String,
    source_branch: String,
    target_branch: String,
    #[serde(default)]
    sha: Option<String>,
    #[serde(default)]
    has_conflicts: Option<bool>,
    #[serde(default)]
    merge_status: Option<String>,
}

#[derive(Serialize)]
struct CreateNote<'a> {
    body: &'a str,
}

impl From<MergeRequest> for Pull {
    fn from(mr: MergeRequest) -> Pull {
        let state = match mr.state.as_str() {
            "opened" | "locked" => PrState::Open,
            "merged" => PrState::Merged,
            _ => PrState::Closed,
        };
        let checking = matches!(
            mr.merge_status.as_deref(),
            Some("unchecked" | "checking" | "cannot_be_merged_recheck")
        );
        let draft = mr
            .draft
            .or(mr.work_in_progress)
            .unwrap_or_else(|| super::is_draft_title(&mr.title));
        Pull {
            number: mr.iid,
            url: mr.web_url,
            state,
            draft,
            head: mr.source_branch,
            head_sha: mr.sha.unwrap_or_default(),
            base: mr.target_branch,
            mergeable: if checking {
                None
            } else {
                mr.has_conflicts.map(|c| !c)
            },
        }
    }
}

#[async_trait::async_trait]
impl Forge for Gitlab {
    fn kind(&self) -> ForgeKind {
        ForgeKind::Gitlab
    }

    async fn access(&self) -> Result<Access, ForgeError> {
        let request = self.api.request(Method::GET, &self.project_path(""));
        let project: Project = self.api.json(request, self.api.repo()).await?;
        // Personal, project and group tokens say their scopes here; OAuth tokens cannot.
        let request = self
            .api
            .request(Method::GET, "/personal_access_tokens/self");
        let scopes = match self.api.json::<TokenInfo>(request, "the token").await {
            Ok(info) => Some(info.scopes),
            Err(ForgeError::Unreachable { url, reason }) => {
                return Err(ForgeError::Unreachable { url, reason });
            }
            Err(_) => None,
        };
        Ok(access(project, scopes.as_deref()))
    }

    async fn branch_head(&self, branch: &str) -> Result<Option<String>, ForgeError> {
        let path = self.project_path(&format!("/repository/branches/{}", encode(branch)));
        let request = self.api.request(Method::GET, &path);
        let found: Option<Branch> = self.api.json_opt(request, branch).await?;
        Ok(found.map(|b| b.commit.id))
    }

    async fn open_pull(&self, new: &NewPull) -> Result<Pull, ForgeError> {
        let title = if new.draft && !super::is_draft_title(&new.title) {
            format!("{DRAFT_PREFIX}{}", new.title)
        } else {
            new.title.clone()
        };
        let request = self
            .api
            .request(Method::POST, &self.project_path("/merge_requests"))
            .json(&CreateMergeRequest {
                source_branch: &new.head,
                target_branch: &new.base,
                title,
                description: &new.body,
                remove_source_branch: false,
            });
        let mr: MergeRequest = self.api.json(request, self.api.repo()).await?;
        Ok(mr.into())
    }

    async fn pull(&self, number: i64) -> Result<Pull, ForgeError> {
        let path = self.project_path(&format!("/merge_requests/{number}"));
        let request = self.api.request(Method::GET, &path);
        let mr: MergeRequest = self
            .api
            .json(request, &format!("merge request !{number}"))
            .await?;
        Ok(mr.into())
    }

    async fn pulls_for_branch(&self, branch: &str) -> Result<Vec<Pull>, ForgeError> {
        let path = self.project_path(&format!(
            "/merge_requests?state=all&source_branch={}&per_page=100",
            encode(branch)
        ));
        let request = self.api.request(Method::GET, &path);
        let mrs: Vec<MergeRequest> = self.api.json(request, self.api.repo()).await?;
        Ok(mrs
            .into_iter()
            .filter(|mr| mr.source_branch == branch)
            .map(Pull::from)
            .collect())
    }

    async fn comment(&self, number: i64, body: &str) -> Result<(), ForgeError> {
        let path = self.project_path(&format!("/merge_requests/{number}/notes"));
        let request = self
            .api
            .request(Method::POST, &path)
            .json(&CreateNote { body });
        self.api
            .send(request, &format!("merge request !{number}"))
            .await?;
        Ok(())
    }

    async fn check_log(&self, log: &LogRef) -> Result<String, ForgeError> {
        let LogRef::GitlabJob(job) = log else {
            return Ok(String::new());
        };
        let path = self.project_path(&format!("/jobs/{job}/trace"));
        let request = self.api.request(Method::GET, &path);
        self.api.log(request, &format!("job {job}")).await
    }
}

/// A merge request as GitLab's API renders it (for tests of the mapping).
#[cfg(test)]
pub(super) fn pull_from_json(json: &str) -> serde_json::Result<Pull> {
    serde_json::from_str::<MergeRequest>(json).map(Pull::from)
}

/// What the member's access level (and the token's scopes, when known) allow.
fn access(project: Project, scopes: Option<&[String]>) -> Access {
    let level = project
        .permissions
        .map(|p| {
            let project = p.project_access.map_or(0, |a| a.access_level);
            let group = p.group_access.map_or(0, |a| a.access_level);
            project.max(group)
        })
        .unwrap_or(0);
    let has = |scope: &str| scopes.is_none_or(|s| s.iter().any(|x| x == scope));
    let api_write = has("api");
    let can_push = level >= DEVELOPER && (has("write_repository") || api_write);
    let can_read_checks = level >= REPORTER && (api_write || has("read_api"));
    let mut notes = Vec::new();
    if level < DEVELOPER {
        notes.push(format!(
            "the token's user has access level {level} on the project; pushing and opening merge requests need Developer (30)"
        ));
    }
    match scopes {
        None => notes.push(
            "GitLab did not say what the token's scopes are: Muster assumes it has api and write_repository".to_owned(),
        ),
        Some(_) if !api_write => notes.push(
            "the token lacks the api scope: it cannot open merge requests or comment".to_owned(),
        ),
        Some(_) => {}
    }
    if !can_push {
        notes.push("the token is read-only here: it cannot push branches".to_owned());
    }
    Access {
        clone_url: project.http_url_to_repo,
        default_branch: project.default_branch.unwrap_or_else(|| "main".to_owned()),
        can_push,
        can_open_prs: level >= DEVELOPER && api_write,
        can_read_checks,
        can_comment: level >= REPORTER && api_write,
        notes,
    }
}
