//! Projects with real runs: an issue's runs work in its project's own repository (and the others in the
//! workspace's), a sub-issue an agent files lands in its parent's project, and a run's token can neither
//! read nor change projects.

use muster::domain::*;
use muster_tests::Backend;
use muster_tests::engine::*;
use serde_json::json;

both_backends!(
    runs_work_in_their_projects_repository,
    a_run_token_cannot_touch_projects
);

/// An active project `WEB` ("Website"), with its own repository when `repo_path` is given.
fn website(repo_path: Option<String>) -> NewProject {
    NewProject {
        key: ProjectKey::parse("WEB").unwrap(),
        name: ProjectName::parse("Website").unwrap(),
        description: String::new(),
        lead: None,
        status: ProjectStatus::Active,
        target_date: None,
        repo_path,
        check: None,
        created_by: None,
    }
}

/// An issue created through the API, as a person would.
async fn create(env: &Env, body: serde_json::Value) -> Issue {
    let (status, text) = env
        .call(reqwest::Method::POST, "/api/v1/issues", Some(body))
        .await;
    assert_eq!(status, 201, "{text}");
    let made: serde_json::Value = serde_json::from_str(&text).unwrap();
    let key = IssueKey::parse(made["key"].as_str().unwrap()).unwrap();
    env.store.get_issue(env.ws.id, &key).await.unwrap()
}

async fn runs_work_in_their_projects_repository(backend: Backend) {
    let Some(env) = Env::start(backend).await else {
        return;
    };
    let workspace_repo = muster_tests::repo_named(env.scripts.path(), "workspace-repo");
    let project_repo = muster_tests::repo_named(env.scripts.path(), "project-repo");
    env.use_repo(&workspace_repo).await;
    let project = env
        .store
        .create_project(
            env.ws.id,
            &website(Some(project_repo.display().to_string())),
        )
        .await
        .unwrap();
    // The agent says which repository its worktree came from, and leaves a file there.
    let out = env.scripts.path().display().to_string();
    let script = env.script(
        "where.sh",
        &format!(
            "cat >/dev/null\ncp which.txt '{out}/which-'\"$MUSTER_ISSUE\"\necho work > \"done-$MUSTER_ISSUE.txt\"\necho '{}'\nexit 0",
            muster_tests::ensemble::result_line(5, 0.001, "Done.")
        ),
    );
    let agent = env.agent("worker", &script).await;
    let in_project = create(&env, json!({ "title": "Hero image", "project": "WEB" })).await;
    let loose = create(&env, json!({ "title": "Loose end" })).await;
    assert_eq!(in_project.project, Some(project.id));
    assert_eq!(loose.project, None);
    for issue in [&in_project, &loose] {
        env.assign(issue, &agent).await;
        let run = env.the_run(issue).await;
        let run = env.finished(run.id).await;
        assert_eq!(run.status, RunStatus::Succeeded, "{run:?}");
    }
    let which = |issue: &Issue| {
        std::fs::read_to_string(env.scripts.path().join(format!("which-{}", issue.key)))
            .unwrap_or_default()
    };
    assert_eq!(which(&in_project).trim(), "project-repo");
    assert_eq!(which(&loose).trim(), "workspace-repo");
    // The work was committed on a branch of the repository the run came from.
    let project_branches = muster_tests::git(&project_repo, &["branch", "--list", "muster/*"]);
    assert!(
        project_branches.contains(&in_project.key.to_string()),
        "{project_branches}"
    );
    let workspace_branches = muster_tests::git(&workspace_repo, &["branch", "--list", "muster/*"]);
    assert!(
        workspace_branches.contains(&loose.key.to_string())
            && !workspace_branches.contains(&in_project.key.to_string()),
        "{workspace_branches}"
    );
}

async fn a_run_token_cannot_touch_projects(backend: Backend) {
    let Some(env) = Env::start(backend).await else {
        return;
    };
    let project = env
        .store
        .create_project(env.ws.id, &website(None))
        .await
        .unwrap();
    let held = env.hold_run("holder", "Break it down").await;
    let key = held.key.clone();
    // Its own issue joins the project by a person's edit; the agent's sub-issue follows it there.
    env.store
        .update_issue(
            env.ws.id,
            &held.issue.key,
            &IssuePatch {
                project: Some(Some(project.id)),
                ..IssuePatch::default()
            },
            Actor::System,
        )
        .await
        .unwrap();
    let attacks = [
        (
            reqwest::Method::GET,
            "/api/v1/projects".to_owned(),
            json!({}),
        ),
        (
            reqwest::Method::GET,
            "/api/v1/projects/WEB".to_owned(),
            json!({}),
        ),
        (
            reqwest::Method::POST,
            "/api/v1/projects".to_owned(),
            json!({ "key": "EVIL", "name": "Mine", "repo_path": "/etc" }),
        ),
        (
            reqwest::Method::PATCH,
            "/api/v1/projects/WEB".to_owned(),
            json!({ "repo_path": "/" }),
        ),
        (
            reqwest::Method::DELETE,
            "/api/v1/projects/WEB".to_owned(),
            json!({}),
        ),
        (
            reqwest::Method::PATCH,
            format!("/api/v1/issues/{key}"),
            json!({ "project": "" }),
        ),
        (
            reqwest::Method::POST,
            "/api/v1/issues".to_owned(),
            json!({ "title": "Elsewhere", "parent": key, "project": "" }),
        ),
    ];
    for (method, path, body) in attacks {
        let (status, text) = held.call(method.clone(), &path, body).await;
        assert_eq!(status, 403, "{method} {path}: {text}");
    }
    let unchanged = env
        .store
        .get_project(env.ws.id, &project.key)
        .await
        .unwrap();
    assert_eq!(unchanged, project);
    assert_eq!(env.store.list_projects(env.ws.id).await.unwrap().len(), 1);
    // What it may do: file a sub-issue of its own issue, which lands in the issue's project.
    let (status, text) = held
        .call(
            reqwest::Method::POST,
            "/api/v1/issues",
            json!({ "title": "A part", "parent": key }),
        )
        .await;
    assert_eq!(status, 201, "{text}");
    let made: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(made["project"], "WEB");
}
