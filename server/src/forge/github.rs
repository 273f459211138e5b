//! GitHub REST v3 (github.com's `https://api.github.com` and Enterprise Server's `…/api/v3`).

use reqwest::Method;
use serde::{Deserialize, Serialize};

use super::{Access, Api, Forge, ForgeError, ForgeKind, LogRef, NewPull, PrState, Pull, encode};

pub(super) struct Github {
    api: Api,
}

impl Github {
    pub(super) fn new(api: Api) -> Github {
        Github { api }
    }

    fn repo_path(&self, rest: &str) -> String {
        format!("/repos/{}{rest}", self.api.repo())
    }

    fn owner(&self) -> &str {
        self.api.repo().split('/').next().unwrap_or_default()
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
struct GitRef {
    object: GitObject,
}

#[derive(Deserialize)]
struct GitObject {
    sha: String,
}

#[derive(Serialize)]
struct CreatePull<'a> {
    title: &'a str,
    body: &'a str,
    head: &'a str,
    base: &'a str,
    draft: bool,
}

#[derive(Deserialize)]
struct PullJson {
    number: i64,
    html_url: String,
    state: String,
    #[serde(default)]
    draft: bool,
    #[serde(default)]
    merged: Option<bool>,
    #[serde(default)]
    merged_at: Option<String>,
    #[serde(default)]
    mergeable: Option<bool>,
    head: BranchRef,
    base: BranchRef,
}

#[derive(Deserialize)]
struct BranchRef {
    #[serde(rename = "ref")]
    name: String,
    sha: String,
}

#[derive(Serialize)]
struct CreateComment<'a> {
    body: &'a str,
}

impl From<PullJson> for Pull {
    fn from(p: PullJson) -> Pull {
        let merged = p.merged.unwrap_or(false) || p.merged_at.is_some();
        let state = match (p.state.as_str(), merged) {
            (_, true) => PrState::Merged,
            ("open", _) => PrState::Open,
            _ => PrState::Closed,
        };
        Pull {
            number: p.number,
            url: p.html_url,
            state,
            draft: p.draft,
            head: p.head.name,
            head_sha: p.head.sha,
            base: p.base.name,
            mergeable: p.mergeable,
        }
    }
}

#[async_trait::async_trait]
impl Forge for Github {
    fn kind(&self) -> ForgeKind {
        ForgeKind::Github
    }

    async fn access(&self) -> Result<Access, ForgeError> {
        let request = self.api.request(Method::GET, &self.repo_path(""));
        let response = self.api.send(request, self.api.repo()).await?;
        // Classic tokens list their scopes; fine-grained and app tokens send no such header.
        let scopes: Option<Vec<String>> = response
            .headers()
            .get("x-oauth-scopes")
            .and_then(|v| v.to_str().ok())
            .map(|v| v.split(',').map(|s| s.trim().to_owned()).collect());
        let body = response
            .bytes()
            .await
            .map_err(|e| ForgeError::Unreadable(e.to_string()))?;
        let repo: Repository = serde_json::from_slice(&body)
            .map_err(|e| ForgeError::Unreadable(format!("{}: {e}", self.api.repo())))?;
        Ok(access(repo, scopes.as_deref()))
    }

    async fn branch_head(&self, branch: &str) -> Result<Option<String>, ForgeError> {
        let path = self.repo_path(&format!("/git/ref/heads/{}", super::encode_path(branch)));
        let request = self.api.request(Method::GET, &path);
        let found: Option<GitRef> = self.api.json_opt(request, branch).await?;
        Ok(found.map(|r| r.object.sha))
    }

    async fn open_pull(&self, new: &NewPull) -> Result<Pull, ForgeError> {
        let request = self
            .api
            .request(Method::POST, &self.repo_path("/pulls"))
            .json(&CreatePull {
                title: &new.title,
                body: &new.body,
                head: &new.head,
                base: &new.base,
                draft: new.draft,
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
        let head = encode(&format!("{}:{branch}", self.owner()));
        let path = self.repo_path(&format!("/pulls?state=all&head={head}&per_page=100"));
        let request = self.api.request(Method::GET, &path);
        let pulls: Vec<PullJson> = self.api.json(request, self.api.repo()).await?;
        Ok(pulls
            .into_iter()
            .filter(|p| p.head.name == branch)
            .map(Pull::from)
            .collect())
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
        let LogRef::GithubJob(job) = log else {
            return Ok(String::new());
        };
        // Answers with a redirect to the log's blob; reqwest follows it and drops the token when
        // the blob lives on another host.
        let path = self.repo_path(&format!("/actions/jobs/{job}/logs"));
        let request = self.api.request(Method::GET, &path);
        self.api.log(request, &format!("job {job}")).await
    }
}

/// What the repository's permissions (and a classic token's scopes) allow.
fn access(repo: Repository, scopes: Option<&[String]>) -> Access {
    let perms = repo.permissions.unwrap_or_default();
    let mut notes = Vec::new();
    let scoped_write = scopes.is_none_or(|s| s.iter().any(|s| s == "repo" || s == "public_repo"));
    let can_push = (perms.push || perms.admin) && scoped_write;
    let can_read = perms.pull || perms.push || perms.admin;
    match scopes {
        Some(_) if !scoped_write => notes.push(
            "the classic token has neither the repo nor the public_repo scope: it cannot push or open pull requests".to_owned(),
        ),
        Some(_) => {}
        None => notes.push(
            "GitHub does not say what a fine-grained or app token may do: Muster assumes that a token that can push can also open pull requests and comment, and cannot tell whether it can read checks and job logs (that needs read access to Checks and Actions)".to_owned(),
        ),
    }
    if !can_push {
        notes.push("the token is read-only here: it cannot push branches".to_owned());
    }
    Access {
        clone_url: repo.clone_url,
        default_branch: repo.default_branch,
        can_push,
        can_open_prs: can_push,
        can_read_checks: can_read,
        can_comment: can_push,
        notes,
    }
}
