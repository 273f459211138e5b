//! Gitea and Forgejo API v1 (`https://host/api/v1`). Gitea has no draft flag on create: a `WIP: ` title
//! prefix makes a pull request a work in progress.

use reqwest::Method;
use serde::{Deserialize, Serialize};

use super::{Access, Api, Forge, ForgeError, ForgeKind, LogRef, NewPull, PrState, Pull};

/// The title prefix Gitea reads as a work in progress.
const DRAFT_PREFIX: &str = "WIP: ";
/// Page size when looking through open pull requests (Gitea's list has no head filter).
const PAGE: usize = 50;
/// Pages looked through before giving up on finding a branch's pull request.
const MAX_PAGES: usize = 20;

pub(super) struct Gitea {
    api: Api,
}

impl Gitea {
    pub(super) fn new(api: Api) -> Gitea {
        Gitea { api }
    }

    fn repo_path(&self, rest: &str) -> String {
        format!("/repos/{}{rest}", self.api.repo())
    }
}

#[derive(Deserialize)]
struct Repository {
    clone_url: String,
    default_branch: String,
    #[serde(default)]
    permissions: Option<Permissions>,
}

#[derive(Deserialize, Default)]
struct Permissions {
    #[serde(default)]
    admin: bool,
    #[serde(default)]
    push: bool,
    #[serde(default)]
    pull: bool,
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
struct CreatePull<'a> {
    title: String,
    body: &'a str,
    head: &'a str,
    base: &'a str,
}

#[derive(Deserialize)]
struct PullJson {
    number: i64,
    html_url: String,
    state: String,
    title: String,
    #[serde(default)]
    draft: Option<bool>,
    #[serde(default)]
    merged: bool,
    #[serde(default)]
    mergeable: Option<bool>,
    head: BranchRef,
    base: BranchRef,
}

#[derive(Deserialize)]
struct BranchRef {
    #[serde(rename = "ref")]
    name: String,
    #[serde(default)]
    sha: String,
}

#[derive(Serialize)]
struct CreateComment<'a> {
    body: &'a str,
}

impl From<PullJson> for Pull {
    fn from(p: PullJson) -> Pull {
        let state = match (p.state.as_str(), p.merged) {
            (_, true) => PrState::Merged,
            ("open", _) => PrState::Open,
            _ => PrState::Closed,
        };
        Pull {
            number: p.number,
            url: p.html_url,
            state,
            draft: p.draft.unwrap_or(false) || super::is_draft_title(&p.title),
            head: p.head.name,
            head_sha: p.head.sha,
            base: p.base.name,
            mergeable: p.mergeable,
        }
    }
}

#[async_trait::async_trait]
impl Forge for Gitea {
    fn kind(&self) -> ForgeKind {
        ForgeKind::Gitea
    }

    async fn access(&self) -> Result<Access, ForgeError> {
        let request = self.api.request(Method::GET, &self.repo_path(""));
        let repo: Repository = self.api.json(request, self.api.repo()).await?;
        let perms = repo.permissions.unwrap_or_default();
        let can_push = perms.push || perms.admin;
        let can_read = can_push || perms.pull;
        let mut notes = Vec::new();
        if !can_push {
            notes.push("the token is read-only here: it cannot push branches".to_owned());
        }
        notes.push(
            "Gitea does not say what a token's scopes are: Muster assumes it has write:repository and write:issue".to_owned(),
        );
        Ok(Access {
            clone_url: repo.clone_url,
            default_branch: repo.default_branch,
            can_push,
            can_open_prs: can_push,
            can_read_checks: can_read,
            can_comment: can_read,
            notes,
        })
    }

    async fn branch_head(&self, branch: &str) -> Result<Option<String>, ForgeError> {
        let path = self.repo_path(&format!("/branches/{}", super::encode_path(branch)));
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
            .request(Method::POST, &self.repo_path("/pulls"))
            .json(&CreatePull {
                title,
                body: &new.body,
                head: &new.head,
                base: &new.base,
            });
        let pull: PullJson = self.api.json(request, self.api.repo()).await?;
        Ok(pull.into())
    }

    async fn pull(&self, number: i64) -> Result<Pull, ForgeError> {
        let request = self
            .api
            .request(Method::GET, &self.repo_path(&format!("/pulls/{number}")));
        let pull: PullJson = self
            .api
            .json(request, &format!("pull request #{number}"))
            .await?;
        Ok(pull.into())
    }

    async fn pulls_for_branch(&self, branch: &str) -> Result<Vec<Pull>, ForgeError> {
        let mut found = Vec::new();
        for page in 1..=MAX_PAGES {
            let path = self.repo_path(&format!("/pulls?state=all&limit={PAGE}&page={page}"));
            let request = self.api.request(Method::GET, &path);
            let pulls: Vec<PullJson> = self.api.json(request, self.api.repo()).await?;
            let last = pulls.len() < PAGE;
            found.extend(
                pulls
                    .into_iter()
                    .filter(|p| p.head.name == branch)
                    .map(Pull::from),
            );
            if last {
                break;
            }
        }
        Ok(found)
    }

    async fn comment(&self, number: i64, body: &str) -> Result<(), ForgeError> {
        let path = self.repo_path(&format!("/issues/{number}/comments"));
        let request = self
            .api
            .request(Method::POST, &path)
            .json(&CreateComment { body });
        self.api
            .send(request, &format!("pull request #{number}"))
            .await?;
        Ok(())
    }

    async fn check_log(&self, log: &LogRef) -> Result<String, ForgeError> {
        let LogRef::GiteaJob(job) = log else {
            return Ok(String::new());
        };
        // Gitea 1.24+ and Forgejo serve Actions job logs here; older servers answer 404 (empty).
        let path = self.repo_path(&format!("/actions/jobs/{job}/logs"));
        let request = self.api.request(Method::GET, &path);
        self.api.log(request, &format!("job {job}")).await
    }
}
