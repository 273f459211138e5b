//! `/api/v1/workspace`: reading the workspace and setting its git repository, with precise refusals.

use muster_tests::{git, git_commit_all};
use serde_json::json;

use super::{Env, api_cases};

api_cases!(workspace_repo_setting);

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
