//! `/api/v1/workspace`: reading the workspace and setting its git repository and loop guard limits,
//! with precise refusals.

use muster_tests::{git, git_commit_all};
use serde_json::json;

use super::{Env, api_cases};

api_cases!(workspace_repo_setting, loop_guard_limits_setting);

/// Runs git in `dir`, asserting success.
/// Only managers set it; the path must be absolute, exist, be a folder, be a repository and have a
/// commit; it is stored as the repository's top folder; `null` clears it.
async fn workspace_repo_setting(t: &Env) {
    let shown = t.member.api.get("/api/v1/workspace").await.expect(200);
    assert_eq!(shown["slug"], "alpha");
    assert_eq!(shown["repo_path"], serde_json::Value::Null);

    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path().join("repo");
    std::fs::create_dir_all(repo.join("src")).unwrap();
    git(&repo, &["init", "-q", "-b", "main"]);
    let plain = dir.path().join("plain");
    std::fs::create_dir(&plain).unwrap();
    let file = dir.path().join("file.txt");
    std::fs::write(&file, "x").unwrap();

    let set = |p: String| json!({ "repo_path": p });
    let api = &t.owner.api;
    let cases = [
        ("relative/path".to_owned(), "is not an absolute path"),
        (
            dir.path().join("missing").display().to_string(),
            "does not exist",
        ),
        (file.display().to_string(), "is not a folder"),
        (plain.display().to_string(), "is not a git repository"),
        (repo.display().to_string(), "has no commit yet"),
    ];
    for (path, needle) in cases {
        api.patch("/api/v1/workspace", set(path))
            .await
            .error_contains(422, "repo_path", needle);
    }
    std::fs::write(repo.join("src/lib.rs"), "// hi\n").unwrap();
    git_commit_all(&repo, "first");
    t.member
        .api
        .patch("/api/v1/workspace", set(repo.display().to_string()))
        .await
        .expect(403);
    // A folder inside the repository stands for the repository.
    let saved = t
        .admin
        .api
        .patch(
            "/api/v1/workspace",
            set(repo.join("src").display().to_string()),
        )
        .await
        .expect(200);
    let top = std::fs::canonicalize(&repo).unwrap();
    assert_eq!(saved["repo_path"], top.display().to_string());
    let shown = t.member.api.get("/api/v1/workspace").await.expect(200);
    assert_eq!(shown["repo_path"], top.display().to_string());
    let cleared = api
        .patch("/api/v1/workspace", json!({ "repo_path": null }))
        .await
        .expect(200);
    assert_eq!(cleared["repo_path"], serde_json::Value::Null);
}

/// Issue 13: the loop guard's limits default to 3 and 10; only managers change them, within 1–20 and
/// 1–1000; changing them leaves the repository alone and the other way round.
async fn loop_guard_limits_setting(t: &Env) {
    let shown = t.member.api.get("/api/v1/workspace").await.expect(200);
    assert_eq!(shown["mention_depth_limit"], 3);
    assert_eq!(shown["agent_runs_per_issue_per_hour"], 10);
    let api = &t.owner.api;
    t.member
        .api
        .patch("/api/v1/workspace", json!({ "mention_depth_limit": 5 }))
        .await
        .expect(403);
    for (body, field, needle) in [
        (
            json!({ "mention_depth_limit": 21 }),
            "mention_depth_limit",
            "from 1 to 20, got 21",
        ),
        (
            json!({ "mention_depth_limit": 2.5 }),
            "mention_depth_limit",
            "got 2.5",
        ),
        (
            json!({ "agent_runs_per_issue_per_hour": "" }),
            "agent_runs_per_issue_per_hour",
            "from 1 to 1000",
        ),
    ] {
        api.patch("/api/v1/workspace", body)
            .await
            .error_contains(422, field, needle);
    }
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path().join("repo");
    std::fs::create_dir_all(&repo).unwrap();
    git(&repo, &["init", "-q", "-b", "main"]);
    std::fs::write(repo.join("a.txt"), "a").unwrap();
    git_commit_all(&repo, "first");
    let top = std::fs::canonicalize(&repo).unwrap().display().to_string();
    api.patch("/api/v1/workspace", json!({ "repo_path": top }))
        .await
        .expect(200);
    let saved = api
        .patch(
            "/api/v1/workspace",
            json!({ "mention_depth_limit": "20", "agent_runs_per_issue_per_hour": 1 }),
        )
        .await
        .expect(200);
    assert_eq!(saved["mention_depth_limit"], 20);
    assert_eq!(saved["agent_runs_per_issue_per_hour"], 1);
    assert_eq!(saved["repo_path"], top, "the repository is kept");
    let cleared = api
        .patch("/api/v1/workspace", json!({ "repo_path": null }))
        .await
        .expect(200);
    assert_eq!(cleared["repo_path"], serde_json::Value::Null);
    assert_eq!(cleared["mention_depth_limit"], 20, "the limits are kept");
}
