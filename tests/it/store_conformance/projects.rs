//! Projects: created with unique keys and names per workspace, edited field by field (optional fields
//! cleared), listed active first, deleted with their issues kept; issues join and leave one, are
//! filtered by it, and a project counts its issues by status and its runs' spend.

use std::sync::Arc;

use chrono::NaiveDate;
use muster::domain::*;
use muster::store::Store;

use super::{agent, assert_conflict, assert_not_found, fixture, issue, store_cases};

store_cases!(
    projects_are_unique_per_workspace_and_edited_field_by_field,
    issues_join_projects_and_projects_count_their_work
);

pub(super) fn new_project(key: &str, name: &str) -> NewProject {
    NewProject {
        key: ProjectKey::parse(key).unwrap(),
        name: ProjectName::parse(name).unwrap(),
        description: String::new(),
        lead: None,
        status: ProjectStatus::Planned,
        target_date: None,
        repo_path: None,
        check: None,
        created_by: None,
    }
}

async fn projects_are_unique_per_workspace_and_edited_field_by_field(store: Arc<dyn Store>) {
    let f = fixture(&store, "team", "ACM").await;
    let other = fixture(&store, "other", "OTH").await;
    let web = store
        .create_project(
            f.ws.id,
            &NewProject {
                description: "The **site**.".into(),
                lead: Some(f.owner.id),
                status: ProjectStatus::Active,
                target_date: NaiveDate::from_ymd_opt(2027, 3, 31),
                repo_path: Some("/src/web".into()),
                check: Some(CheckSpec {
                    command: "npm test".into(),
                    timeout_secs: 120,
                }),
                created_by: Some(f.owner.id),
                ..new_project("WEB", "Website")
            },
        )
        .await
        .unwrap();
    assert_eq!(web.key.as_str(), "WEB");
    assert_eq!(web.lead, Some(f.owner.id));
    assert_eq!(web.target_date, NaiveDate::from_ymd_opt(2027, 3, 31));
    assert_eq!(web.check.as_ref().unwrap().timeout_secs, 120);
    assert_eq!(store.get_project(f.ws.id, &web.key).await.unwrap(), web);
    assert_eq!(store.get_project_by_id(web.id).await.unwrap(), web);

    // Keys and names are unique per workspace; another workspace may reuse both.
    assert_conflict(
        store
            .create_project(f.ws.id, &new_project("WEB", "Other"))
            .await,
        "project_key_key",
    );
    assert_conflict(
        store
            .create_project(f.ws.id, &new_project("SITE", "Website"))
            .await,
        "project_name_key",
    );
    store
        .create_project(other.ws.id, &new_project("WEB", "Website"))
        .await
        .unwrap();
    assert_not_found(
        store
            .get_project(other.ws.id, &ProjectKey::parse("API").unwrap())
            .await,
    );

    // A patch changes what it sets; `Some(None)` clears.
    let api = store
        .create_project(f.ws.id, &new_project("API", "Backend"))
        .await
        .unwrap();
    let patched = store
        .update_project(
            f.ws.id,
            web.id,
            &ProjectPatch {
                name: Some(ProjectName::parse("Website v2").unwrap()),
                status: Some(ProjectStatus::Paused),
                target_date: Some(None),
                repo_path: Some(None),
                check: Some(None),
                ..ProjectPatch::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(patched.name.as_str(), "Website v2");
    assert_eq!(patched.status, ProjectStatus::Paused);
    assert_eq!(
        (patched.target_date, patched.repo_path, patched.check),
        (None, None, None)
    );
    assert_eq!(patched.lead, Some(f.owner.id), "not in the patch: kept");
    assert_eq!(patched.description, "The **site**.");
    assert_conflict(
        store
            .update_project(
                f.ws.id,
                api.id,
                &ProjectPatch {
                    key: Some(ProjectKey::parse("WEB").unwrap()),
                    ..ProjectPatch::default()
                },
            )
            .await,
        "project_key_key",
    );
    assert_not_found(
        store
            .update_project(other.ws.id, api.id, &ProjectPatch::default())
            .await,
    );

    // Active first, then by status, then name.
    let done = store
        .create_project(
            f.ws.id,
            &NewProject {
                status: ProjectStatus::Active,
                ..new_project("ADM", "Admin")
            },
        )
        .await
        .unwrap();
    let keys: Vec<String> = store
        .list_projects(f.ws.id)
        .await
        .unwrap()
        .iter()
        .map(|p| p.key.to_string())
        .collect();
    assert_eq!(keys, ["ADM", "API", "WEB"], "active, planned, paused");
    store.delete_project(f.ws.id, done.id).await.unwrap();
    assert_not_found(store.delete_project(f.ws.id, done.id).await);
    assert_not_found(store.delete_project(other.ws.id, api.id).await);
    assert_eq!(store.list_projects(f.ws.id).await.unwrap().len(), 2);
}

async fn issues_join_projects_and_projects_count_their_work(store: Arc<dyn Store>) {
    let f = fixture(&store, "team", "ACM").await;
    let web = store
        .create_project(f.ws.id, &new_project("WEB", "Website"))
        .await
        .unwrap();
    let api = store
        .create_project(f.ws.id, &new_project("API", "Backend"))
        .await
        .unwrap();
    let mut new = NewIssue::new(IssueTitle::parse("Hero image").unwrap());
    new.status = IssueStatus::Todo;
    new.project = Some(web.id);
    let hero = store.create_issue(f.ws.id, &new).await.unwrap();
    assert_eq!(hero.project, Some(web.id));
    new.title = IssueTitle::parse("Footer").unwrap();
    new.status = IssueStatus::Done;
    let footer = store.create_issue(f.ws.id, &new).await.unwrap();
    new.title = IssueTitle::parse("Old idea").unwrap();
    new.status = IssueStatus::Cancelled;
    store.create_issue(f.ws.id, &new).await.unwrap();
    let loose = issue(&store, f.ws.id, "Loose", IssueStatus::Todo).await;
    assert_eq!(loose.project, None);

    // Moved into a project by a patch, and out again.
    let moved = store
        .update_issue(
            f.ws.id,
            &loose.key,
            &IssuePatch {
                project: Some(Some(api.id)),
                ..IssuePatch::default()
            },
            Actor::System,
        )
        .await
        .unwrap();
    assert_eq!(moved.project, Some(api.id));
    let by_project = |p: ProjectId| IssueFilter {
        project: Some(p),
        ..IssueFilter::default()
    };
    let titles = |issues: Vec<Issue>| -> Vec<String> {
        issues.iter().map(|i| i.title.as_str().to_owned()).collect()
    };
    assert_eq!(
        titles(
            store
                .list_issues(f.ws.id, &by_project(api.id))
                .await
                .unwrap()
        ),
        ["Loose"]
    );
    assert_eq!(
        store
            .count_issues(f.ws.id, &by_project(web.id))
            .await
            .unwrap()
            .iter()
            .map(|(_, n)| n)
            .sum::<i64>(),
        3
    );
    let other_patch = IssuePatch {
        title: Some(IssueTitle::parse("Loose end").unwrap()),
        ..IssuePatch::default()
    };
    let renamed = store
        .update_issue(f.ws.id, &loose.key, &other_patch, Actor::System)
        .await
        .unwrap();
    assert_eq!(renamed.project, Some(api.id), "a patch without it keeps it");
    let out = store
        .update_issue(
            f.ws.id,
            &loose.key,
            &IssuePatch {
                project: Some(None),
                ..IssuePatch::default()
            },
            Actor::System,
        )
        .await
        .unwrap();
    assert_eq!(out.project, None);
    // Each move (and only the moves) is in the issue's trail, from and to the project's id.
    let moves: Vec<serde_json::Value> = store
        .list_activity(loose.id)
        .await
        .unwrap()
        .into_iter()
        .filter(|a| a.kind == ActivityKind::Project)
        .map(|a| a.detail)
        .collect();
    assert_eq!(
        moves,
        [
            serde_json::json!({ "from": null, "to": api.id }),
            serde_json::json!({ "from": api.id, "to": null }),
        ]
    );

    // Its issues by status, and what its runs cost.
    let coder = agent(&store, f.ws.id, "coder", 10).await;
    for (on, cost) in [(&hero, 0.25), (&footer, 0.5)] {
        let run = store
            .create_run(&NewRun::assignment(f.ws.id, on.id, coder.id))
            .await
            .unwrap();
        let outcome = RunOutcome {
            usage: Usage {
                input_tokens: 100,
                output_tokens: 20,
                cost_usd: cost,
                ..Usage::default()
            },
            ..RunOutcome::bare(RunStatus::Succeeded)
        };
        store.finish_run(run.id, &outcome).await.unwrap();
    }
    let loose_run = store
        .create_run(&NewRun::assignment(f.ws.id, loose.id, coder.id))
        .await
        .unwrap();
    store
        .finish_run(loose_run.id, &RunOutcome::bare(RunStatus::Failed))
        .await
        .unwrap();
    let stats = store.project_stats(f.ws.id).await.unwrap();
    let web_stats = &stats.iter().find(|(p, _)| *p == web.id).unwrap().1;
    assert_eq!(
        web_stats.by_status,
        [
            (IssueStatus::Todo, 1),
            (IssueStatus::Done, 1),
            (IssueStatus::Cancelled, 1)
        ]
    );
    assert_eq!(web_stats.progress(), (1, 2), "cancelled issues left out");
    assert_eq!(web_stats.runs, 2);
    assert_eq!(web_stats.usage.tokens(), 240);
    assert!((web_stats.usage.cost_usd - 0.75).abs() < 1e-9);
    assert!(
        !stats.iter().any(|(p, _)| *p == api.id),
        "no issues left in API: not listed"
    );
    let runs = store
        .usage_runs(
            f.ws.id,
            &UsageFilter {
                from: chrono::Utc::now() - chrono::TimeDelta::hours(1),
                to: chrono::Utc::now() + chrono::TimeDelta::hours(1),
                agent: None,
                issue: None,
                project: Some(web.id),
                parent: None,
            },
        )
        .await
        .unwrap();
    assert_eq!(runs.len(), 2, "only the project's runs");

    // Deleting the project keeps its issues, in no project.
    store.delete_project(f.ws.id, web.id).await.unwrap();
    let hero = store.get_issue(f.ws.id, &hero.key).await.unwrap();
    assert_eq!(hero.project, None);
}
