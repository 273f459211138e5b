//! The scripted forge's API: the endpoints Muster's forge clients call, in each forge's shape.

use std::collections::HashMap;

use axum::body::Bytes;
use axum::extract::{Query, State};
use axum::http::{HeaderMap, Method, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use muster::domain::{ForgeKind, PrState};
use serde_json::{Value, json};

use super::{Ctx, Recorded, ScriptedPull, branch_sha, git};

/// Where the log blobs GitHub redirects job logs to live (outside the API, no token needed).
const BLOBS: &str = "/blobs/job-logs/";

/// The API root's path for `kind`.
pub(super) fn prefix(kind: ForgeKind) -> &'static str {
    match kind {
        ForgeKind::Github => "/api/v3",
        ForgeKind::Gitlab => "/api/v4",
        ForgeKind::Gitea => "/api/v1",
    }
}

/// Every request: git, a log blob, or the API; recorded with the status it got.
pub(super) async fn handle(
    State(ctx): State<Ctx>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let path = uri.path();
    let response = if path.starts_with("/git/") {
        git::serve(&ctx, &method, &uri, &headers, body).await
    } else if let Some(job) = path.strip_prefix(BLOBS).and_then(|j| j.parse().ok()) {
        job_log(&ctx, job)
    } else {
        api(&ctx, &method, &uri, &headers, &body)
    };
    let recorded = Recorded {
        method: method.to_string(),
        path: uri
            .path_and_query()
            .map_or_else(|| path.to_owned(), ToString::to_string),
        headers: headers
            .iter()
            .map(|(k, v)| (k.to_string(), String::from_utf8_lossy(v.as_bytes()).into()))
            .collect(),
        status: response.status().as_u16(),
    };
    ctx.lock().requests.push(recorded);
    response
}

/// What an API request asks for.
enum Op {
    Repo,
    TokenSelf,
    Branch(String),
    CreatePull,
    ListPulls,
    GetPull(i64),
    Comment(i64),
    JobLog(i64),
}

fn route(kind: ForgeKind, method: &Method, rest: &str, repo: &str) -> Option<Op> {
    use ForgeKind::{Gitea, Github, Gitlab};
    if kind == Gitlab && rest == "/personal_access_tokens/self" && method == Method::GET {
        return Some(Op::TokenSelf);
    }
    let repo_prefix = match kind {
        Gitlab => format!("/projects/{}", repo.replace('/', "%2F")),
        Github | Gitea => format!("/repos/{repo}"),
    };
    let head = rest.get(..repo_prefix.len())?;
    if !head.eq_ignore_ascii_case(&repo_prefix) {
        return None;
    }
    let tail = &rest[repo_prefix.len()..];
    let segments: Vec<String> = tail.split('/').skip(1).map(decode).collect();
    let segments: Vec<&str> = segments.iter().map(String::as_str).collect();
    let get = method == Method::GET;
    let post = method == Method::POST;
    Some(match (kind, segments.as_slice()) {
        (_, []) if get => Op::Repo,
        (Github, ["git", "ref", "heads", branch @ ..]) if get => Op::Branch(branch.join("/")),
        (Gitlab, ["repository", "branches", branch]) if get => Op::Branch((*branch).to_owned()),
        (Gitea, ["branches", branch @ ..]) if get => Op::Branch(branch.join("/")),
        (Github | Gitea, ["pulls"]) | (Gitlab, ["merge_requests"]) if post => Op::CreatePull,
        (Github | Gitea, ["pulls"]) | (Gitlab, ["merge_requests"]) if get => Op::ListPulls,
        (Github | Gitea, ["pulls", n]) | (Gitlab, ["merge_requests", n]) if get => {
            Op::GetPull(n.parse().ok()?)
        }
        (Github | Gitea, ["issues", n, "comments"]) | (Gitlab, ["merge_requests", n, "notes"])
            if post =>
        {
            Op::Comment(n.parse().ok()?)
        }
        (Github | Gitea, ["actions", "jobs", id, "logs"]) | (Gitlab, ["jobs", id, "trace"])
            if get =>
        {
            Op::JobLog(id.parse().ok()?)
        }
        _ => return None,
    })
}

fn api(ctx: &Ctx, method: &Method, uri: &Uri, headers: &HeaderMap, body: &[u8]) -> Response {
    let (kind, repo) = {
        let s = ctx.lock();
        (s.kind, s.repo.clone())
    };
    let Some(rest) = uri.path().strip_prefix(prefix(kind)) else {
        return error(StatusCode::NOT_FOUND, "Not Found");
    };
    if !authorized(ctx, kind, headers) {
        let message = match kind {
            ForgeKind::Github => "Bad credentials",
            ForgeKind::Gitlab => "401 Unauthorized",
            ForgeKind::Gitea => "token is required",
        };
        return error(StatusCode::UNAUTHORIZED, message);
    }
    let query: HashMap<String, String> = Query::try_from_uri(uri).map(|q| q.0).unwrap_or_default();
    match route(kind, method, rest, &repo) {
        None => error(StatusCode::NOT_FOUND, "Not Found"),
        Some(Op::Repo) => axum::Json(repository(ctx, kind)).into_response(),
        Some(Op::TokenSelf) => {
            let scopes = if ctx.lock().can_push {
                json!(["api", "write_repository"])
            } else {
                json!(["read_api", "read_repository"])
            };
            axum::Json(json!({"id": 1, "name": "muster", "active": true, "scopes": scopes})).into_response()
        }
        Some(Op::Branch(branch)) => match branch_sha(&ctx.repo_dir(), &branch) {
            Some(sha) => axum::Json(match kind {
                ForgeKind::Github => json!({"ref": format!("refs/heads/{branch}"), "object": {"sha": sha, "type": "commit"}}),
                ForgeKind::Gitlab | ForgeKind::Gitea => json!({"name": branch, "commit": {"id": sha}}),
            })
            .into_response(),
            None => error(StatusCode::NOT_FOUND, "Branch Not Found"),
        },
        Some(Op::CreatePull) => create_pull(ctx, kind, body),
        Some(Op::ListPulls) => {
            let owner = repo.split('/').next().unwrap_or_default();
            let wanted_head = match kind {
                ForgeKind::Github => query
                    .get("head")
                    .map(|h| h.strip_prefix(&format!("{owner}:")).unwrap_or(h).to_owned()),
                ForgeKind::Gitlab => query.get("source_branch").cloned(),
                ForgeKind::Gitea => None,
            };
            let page: usize = query.get("page").and_then(|p| p.parse().ok()).unwrap_or(1);
            let open_only = matches!(
                query.get("state").map(String::as_str),
                None | Some("open" | "opened")
            );
            // Cloned first: rendering locks the state again.
            let all = ctx.lock().pulls.clone();
            let pulls: Vec<Value> = all
                .into_iter()
                .filter(|p| !open_only || p.state == PrState::Open)
                .filter(|p| wanted_head.as_ref().is_none_or(|h| *h == p.head))
                .filter(|_| page == 1)
                .map(|p| pull_json(ctx, kind, &p))
                .collect();
            axum::Json(pulls).into_response()
        }
        Some(Op::GetPull(number)) => match find(ctx, number) {
            Some(pull) => axum::Json(pull_json(ctx, kind, &pull)).into_response(),
            None => error(StatusCode::NOT_FOUND, "Not Found"),
        },
        Some(Op::Comment(number)) => comment(ctx, number, body),
        Some(Op::JobLog(job)) => match kind {
            // GitHub redirects to a short-lived blob URL.
            ForgeKind::Github if ctx.lock().job_logs.contains_key(&job) => (
                StatusCode::FOUND,
                [(header::LOCATION, format!("{}{BLOBS}{job}", ctx.base))],
            )
                .into_response(),
            ForgeKind::Github => error(StatusCode::NOT_FOUND, "Not Found"),
            ForgeKind::Gitlab | ForgeKind::Gitea => job_log(ctx, job),
        },
    }
}

fn authorized(ctx: &Ctx, kind: ForgeKind, headers: &HeaderMap) -> bool {
    let token = ctx.lock().token.clone();
    let value = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    let authorization = value("authorization");
    match kind {
        ForgeKind::Github => authorization == Some(&format!("Bearer {token}")),
        ForgeKind::Gitlab => value("private-token") == Some(token.as_str()),
        ForgeKind::Gitea => authorization == Some(&format!("token {token}")),
    }
}

fn repository(ctx: &Ctx, kind: ForgeKind) -> Value {
    let (repo, push) = {
        let s = ctx.lock();
        (s.repo.clone(), s.can_push)
    };
    let (clone, web) = (ctx.clone_url(), ctx.web_url());
    match kind {
        ForgeKind::Github => json!({
            "id": 1, "full_name": repo, "private": false, "html_url": web, "clone_url": clone,
            "default_branch": "main",
            "permissions": {"admin": false, "maintain": false, "push": push, "triage": push, "pull": true}
        }),
        ForgeKind::Gitlab => json!({
            "id": 1, "path_with_namespace": repo, "web_url": web, "http_url_to_repo": clone,
            "default_branch": "main",
            "permissions": {
                "project_access": {"access_level": if push { 30 } else { 20 }, "notification_level": 3},
                "group_access": null
            }
        }),
        ForgeKind::Gitea => json!({
            "id": 1, "full_name": repo, "html_url": web, "clone_url": clone, "default_branch": "main",
            "permissions": {"admin": false, "push": push, "pull": true}
        }),
    }
}

/// A new pull request in any forge's field names.
#[derive(serde::Deserialize)]
struct NewPullBody {
    title: String,
    #[serde(default, alias = "description")]
    body: String,
    #[serde(alias = "source_branch")]
    head: String,
    #[serde(alias = "target_branch")]
    base: String,
    #[serde(default)]
    draft: bool,
}

fn create_pull(ctx: &Ctx, kind: ForgeKind, body: &[u8]) -> Response {
    let new: NewPullBody = match serde_json::from_slice(body) {
        Ok(new) => new,
        Err(e) => {
            return error(
                StatusCode::BAD_REQUEST,
                &format!("Problems parsing JSON: {e}"),
            );
        }
    };
    if !ctx.lock().can_push {
        return error(
            StatusCode::FORBIDDEN,
            "Resource not accessible by personal access token",
        );
    }
    let Some(head_sha) = branch_sha(&ctx.repo_dir(), &new.head) else {
        return error(
            StatusCode::UNPROCESSABLE_ENTITY,
            &format!("head branch {} does not exist", new.head),
        );
    };
    if branch_sha(&ctx.repo_dir(), &new.base).is_none() {
        return error(
            StatusCode::UNPROCESSABLE_ENTITY,
            &format!("base branch {} does not exist", new.base),
        );
    }
    let lower = new.title.to_ascii_lowercase();
    let draft = match kind {
        ForgeKind::Github => new.draft,
        ForgeKind::Gitlab => ["draft:", "[draft]", "(draft)"]
            .iter()
            .any(|p| lower.starts_with(p)),
        ForgeKind::Gitea => ["wip:", "[wip]"].iter().any(|p| lower.starts_with(p)),
    };
    let pull = {
        let mut s = ctx.lock();
        if s.pulls
            .iter()
            .any(|p| p.head == new.head && p.state == PrState::Open)
        {
            let status = match kind {
                ForgeKind::Github => StatusCode::UNPROCESSABLE_ENTITY,
                ForgeKind::Gitlab | ForgeKind::Gitea => StatusCode::CONFLICT,
            };
            drop(s);
            return error(
                status,
                &format!("A pull request already exists for {}", new.head),
            );
        }
        let pull = ScriptedPull {
            number: i64::try_from(s.pulls.len()).unwrap_or(i64::MAX) + 1,
            title: new.title,
            body: new.body,
            head: new.head,
            base: new.base,
            draft,
            state: PrState::Open,
            comments: Vec::new(),
            head_sha,
        };
        s.pulls.push(pull.clone());
        pull
    };
    (StatusCode::CREATED, axum::Json(pull_json(ctx, kind, &pull))).into_response()
}

fn find(ctx: &Ctx, number: i64) -> Option<ScriptedPull> {
    ctx.lock()
        .pulls
        .iter()
        .find(|p| p.number == number)
        .cloned()
}

fn pull_json(ctx: &Ctx, kind: ForgeKind, pull: &ScriptedPull) -> Value {
    let sha = branch_sha(&ctx.repo_dir(), &pull.head).unwrap_or_else(|| pull.head_sha.clone());
    let web = ctx.web_url();
    let open = pull.state == PrState::Open;
    let merged = pull.state == PrState::Merged;
    let owner = ctx
        .lock()
        .repo
        .split('/')
        .next()
        .unwrap_or_default()
        .to_owned();
    match kind {
        ForgeKind::Github => json!({
            "number": pull.number, "html_url": format!("{web}/pull/{}", pull.number),
            "state": if open { "open" } else { "closed" }, "draft": pull.draft, "merged": merged,
            "merged_at": if merged { json!("2026-01-01T00:00:00Z") } else { Value::Null },
            "mergeable": if open { json!(true) } else { Value::Null },
            "title": pull.title, "body": pull.body,
            "head": {"ref": pull.head, "sha": sha, "label": format!("{owner}:{}", pull.head)},
            "base": {"ref": pull.base, "sha": ""}
        }),
        ForgeKind::Gitlab => json!({
            "id": 100 + pull.number, "iid": pull.number,
            "web_url": format!("{web}/-/merge_requests/{}", pull.number),
            "state": match pull.state { PrState::Open => "opened", PrState::Merged => "merged", PrState::Closed => "closed" },
            "draft": pull.draft, "work_in_progress": pull.draft, "title": pull.title,
            "description": pull.body, "source_branch": pull.head, "target_branch": pull.base, "sha": sha,
            "has_conflicts": false, "merge_status": "can_be_merged", "detailed_merge_status": "mergeable"
        }),
        ForgeKind::Gitea => json!({
            "id": 100 + pull.number, "number": pull.number,
            "html_url": format!("{web}/pulls/{}", pull.number),
            "state": if open { "open" } else { "closed" }, "merged": merged, "title": pull.title,
            "body": pull.body, "mergeable": open,
            "head": {"ref": pull.head, "sha": sha, "label": pull.head},
            "base": {"ref": pull.base, "label": pull.base}
        }),
    }
}

#[derive(serde::Deserialize)]
struct CommentBody {
    body: String,
}

fn comment(ctx: &Ctx, number: i64, body: &[u8]) -> Response {
    let Ok(comment) = serde_json::from_slice::<CommentBody>(body) else {
        return error(StatusCode::BAD_REQUEST, "body is required");
    };
    let mut s = ctx.lock();
    let Some(pull) = s.pulls.iter_mut().find(|p| p.number == number) else {
        return error(StatusCode::NOT_FOUND, "Not Found");
    };
    pull.comments.push(comment.body.clone());
    let id = pull.comments.len();
    (
        StatusCode::CREATED,
        axum::Json(json!({"id": id, "body": comment.body})),
    )
        .into_response()
}

fn job_log(ctx: &Ctx, job: i64) -> Response {
    match ctx.lock().job_logs.get(&job) {
        Some(text) => (
            [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
            text.clone(),
        )
            .into_response(),
        None => error(StatusCode::NOT_FOUND, "Not Found"),
    }
}

fn error(status: StatusCode, message: &str) -> Response {
    (status, axum::Json(json!({"message": message}))).into_response()
}

/// Percent-decodes one path segment.
fn decode(segment: &str) -> String {
    let bytes = segment.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes
            .get(i + 1..i + 3)
            .and_then(|h| std::str::from_utf8(h).ok());
        match (bytes[i], hex.and_then(|h| u8::from_str_radix(h, 16).ok())) {
            (b'%', Some(byte)) => {
                out.push(byte);
                i += 3;
            }
            (byte, _) => {
                out.push(byte);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}
