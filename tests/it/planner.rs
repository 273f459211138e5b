//! The planner with real runs: a plan run proposes a tree for its own issue through its token (and for
//! nothing else), leaves its issue's status alone, and people approve the tree (as edited) or discard
//! it; an approved tree's agents then start in dependency order, in the project's own repository, and
//! the coordinator is woken once at the end.

use muster::domain::*;
use muster_tests::Backend;
use muster_tests::engine::*;
use serde_json::{Value, json};

use crate::plans::{create, finisher, lead, order_lines};

both_backends!(a_planned_tree_runs_in_dependency_order_in_its_project_and_wakes_the_lead_once);

fn item(reference: &str, agent: Option<&str>, blocked_by: &[&str]) -> Value {
    json!({
        "ref": reference,
        "title": format!("Build the {reference}"),
        "description": format!("The {reference} part."),
        "acceptance": format!("the {reference} works"),
        "agent": agent,
        "blocked_by": blocked_by,
    })
}

fn body(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("{e}: {text}"))
}

/// A plan run's token proposes for its own issue only; people (and other runs) cannot propose; a bad
/// tree is refused naming the item; a newer proposal replaces the pending one; approval (as edited)
/// creates the tree at once, and a decided proposal is decided for good.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plan_run_proposes_for_its_own_issue_and_people_decide() {
    let env = Env::start(Backend::Sqlite).await.unwrap();
    let coder = env
        .agent(
            "coder",
            &env.script("coder.sh", "cat >/dev/null\nsleep 600"),
        )
        .await;
    let held = env.hold_plan_run("planner", "Relaunch the site").await;
    let key = held.key.clone();
    // The plan run leaves its issue where it was (todo), and reads as a plan.
    let issue = env.store.get_issue_by_id(held.issue.id).await.unwrap();
    assert_eq!(issue.status, IssueStatus::Todo);
    let run = env.get(&format!("/api/v1/runs/{}", held.run.id)).await;
    assert_eq!(run["purpose"], "plan");
    let other = env.issue("Somebody else's").await;
    let worker = env.hold_run("worker", "A work run").await;
    let good = json!({
        "summary": "Three parts, the API first.",
        "items": [item("api", Some("coder"), &[]), item("ui", Some("coder"), &["api"]), item("docs", None, &["api"])],
    });
    let proposals = format!("/api/v1/issues/{key}/proposals");
    // Nobody else proposes: not for another issue, not a work run, not a person.
    let (status, text) = held
        .call(
            reqwest::Method::POST,
            &format!("/api/v1/issues/{}/proposals", other.key),
            good.clone(),
        )
        .await;
    assert_eq!(status, 403, "{text}");
    let (status, text) = worker
        .call(
            reqwest::Method::POST,
            &format!("/api/v1/issues/{}/proposals", worker.key),
            good.clone(),
        )
        .await;
    assert_eq!(status, 403, "a work run's token: {text}");
    assert!(text.contains("plan run"), "{text}");
    let (status, text) = env
        .call(reqwest::Method::POST, &proposals, Some(good.clone()))
        .await;
    assert_eq!(status, 403, "a person: {text}");
    // A bad tree is refused, naming what to fix.
    let bad = [
        (json!({ "items": [] }), "items", "at least one"),
        (
            json!({ "items": [item("a", None, &["b"]), item("b", None, &["a"])] }),
            "items",
            "cycle: ",
        ),
        (
            json!({ "items": [item("a", Some("nobody"), &[])] }),
            "items[0].agent",
            "no agent called",
        ),
        (
            json!({ "items": [item("a", None, &["zz"])] }),
            "items[0].blocked_by",
            "is not the ref of an item",
        ),
        (
            json!({ "items": (0..51).map(|i| item(&format!("i{i}"), None, &[])).collect::<Vec<_>>() }),
            "items",
            "at most 50",
        ),
    ];
    for (sent, field, says) in bad {
        let (status, text) = held.call(reqwest::Method::POST, &proposals, sent).await;
        assert_eq!(status, 422, "{text}");
        let errors = body(&text)["errors"][field].to_string();
        assert!(errors.contains(says), "{field}: {text}");
    }
    assert!(
        env.get(&proposals).await.as_array().unwrap().is_empty(),
        "nothing recorded"
    );
    // A good one, then a newer one that replaces it.
    let (status, text) = held
        .call(
            reqwest::Method::POST,
            &proposals,
            json!({ "items": [item("only", None, &[])] }),
        )
        .await;
    assert_eq!(status, 201, "{text}");
    let first = body(&text);
    let (status, text) = held
        .call(reqwest::Method::POST, &proposals, good.clone())
        .await;
    assert_eq!(status, 201, "{text}");
    let proposal = body(&text);
    assert_eq!(proposal["status"], "pending");
    assert_eq!(proposal["agent"], "planner");
    let listed = env.get(&proposals).await;
    assert_eq!(listed[0]["id"], proposal["id"]);
    assert_eq!(listed[1]["id"], first["id"]);
    assert_eq!(listed[1]["status"], "discarded");
    let thread = env.store.list_comments(held.issue.id).await.unwrap();
    assert!(
        thread.iter().any(
            |c| c.body.contains("planner proposed a plan of 3 sub-issues")
                && c.body.contains(&format!("/issues/{key}/plan"))
        ),
        "{thread:?}"
    );
    let id = proposal["id"].as_str().unwrap();
    // Runs' tokens never decide.
    for path in [
        format!("/api/v1/proposals/{id}/approve"),
        format!("/api/v1/proposals/{id}/discard"),
    ] {
        let (status, text) = held.call(reqwest::Method::POST, &path, json!({})).await;
        assert_eq!(status, 403, "{path}: {text}");
    }
    let (status, text) = held
        .call(
            reqwest::Method::POST,
            &format!("/api/v1/issues/{key}/plan"),
            json!({ "agent": "coder" }),
        )
        .await;
    assert_eq!(status, 403, "{text}");
    // An edited approval: docs dropped, ui renamed and left unassigned, api kept for coder; the edit
    // is checked like a proposal (a cycle is refused and nothing is created).
    let (status, text) = env
        .call(
            reqwest::Method::POST,
            &format!("/api/v1/proposals/{id}/approve"),
            Some(json!({ "items": [item("api", Some("coder"), &["ui"]), item("ui", None, &["api"])] })),
        )
        .await;
    assert_eq!(status, 422, "{text}");
    assert!(
        env.store
            .list_children(held.issue.id)
            .await
            .unwrap()
            .is_empty()
    );
    let mut ui = item("ui", None, &["api"]);
    ui["title"] = json!("Screens, renamed");
    let (status, text) = env
        .call(
            reqwest::Method::POST,
            &format!("/api/v1/proposals/{id}/approve"),
            Some(json!({ "items": [ui, item("api", Some("coder"), &[])], "assign": true })),
        )
        .await;
    assert_eq!(status, 200, "{text}");
    let approved = body(&text);
    assert_eq!(approved["proposal"]["status"], "approved");
    let made = approved["issues"].as_array().unwrap();
    assert_eq!(made.len(), 2);
    // Blockers first: api was created before ui, and ui waits on it.
    assert_eq!(made[0]["title"], "Build the api");
    assert_eq!(made[1]["title"], "Screens, renamed");
    assert_eq!(made[0]["assignee"]["name"], "coder");
    assert!(made[1]["assignee"].is_null());
    assert_eq!(approved["proposal"]["items"][0]["created"], made[0]["key"]);
    let ui_key = made[1]["key"].as_str().unwrap();
    let plan = env.get(&format!("/api/v1/issues/{ui_key}/plan")).await;
    assert_eq!(plan["parent"]["key"], key.as_str());
    assert_eq!(plan["waiting_on"], json!([made[0]["key"]]), "{plan}");
    // The assigned one's agent was started.
    let api_issue = env
        .store
        .get_issue(
            env.ws.id,
            &IssueKey::parse(made[0]["key"].as_str().unwrap()).unwrap(),
        )
        .await
        .unwrap();
    let runs = env.store.list_runs_for_issue(api_issue.id).await.unwrap();
    assert_eq!(runs.len(), 1);
    assert_eq!(runs[0].agent_id, coder.id);
    // Decided for good.
    for path in [
        format!("/api/v1/proposals/{id}/approve"),
        format!("/api/v1/proposals/{id}/discard"),
    ] {
        let (status, text) = env
            .call(reqwest::Method::POST, &path, Some(json!({})))
            .await;
        assert_eq!(status, 409, "{path}: {text}");
    }
    assert_eq!(
        env.store.list_children(held.issue.id).await.unwrap().len(),
        2
    );
    // An unknown agent is named.
    let (status, text) = env
        .call(
            reqwest::Method::POST,
            &format!("/api/v1/issues/{}/plan", other.key),
            Some(json!({ "agent": "ghost" })),
        )
        .await;
    assert_eq!(status, 422, "{text}");
    assert!(text.contains("no agent called"), "{text}");
}

/// An agent that proposes db → api → ui (each for `worker`) for the issue it plans, then ends.
fn planner_script(env: &Env) -> std::path::PathBuf {
    let plan = json!({
        "summary": "Schema, then endpoints, then screens.",
        "items": [item("db", Some("worker"), &[]), item("api", Some("worker"), &["db"]), item("ui", Some("worker"), &["api"])],
    });
    env.script(
        "planner.sh",
        &format!(
            r#"out='{out}'
cat > "$out/plan-prompt-$MUSTER_RUN_ID"
curl -sS -o "$out/plan-answer" -w '%{{http_code}}' -X POST -H "Authorization: Bearer $MUSTER_TOKEN" \
  -H 'content-type: application/json' --data @- \
  "$MUSTER_URL/api/v1/issues/$MUSTER_ISSUE/proposals" > "$out/plan-status" <<'PLAN'
{plan}
PLAN
echo '{line}'
exit 0"#,
            out = env.scripts.path().display(),
            line = muster_tests::ensemble::result_line(7, 0.002, "Proposed three parts.")
        ),
    )
}

async fn a_planned_tree_runs_in_dependency_order_in_its_project_and_wakes_the_lead_once(
    backend: Backend,
) {
    let Some(env) = Env::start(backend).await else {
        return;
    };
    let workspace_repo = muster_tests::repo_named(env.scripts.path(), "workspace-repo");
    let project_repo = muster_tests::repo_named(env.scripts.path(), "project-repo");
    env.use_repo(&workspace_repo).await;
    let (status, text) = env
        .call(
            reqwest::Method::POST,
            "/api/v1/projects",
            Some(json!({ "key": "WEB", "name": "Website", "repo_path": project_repo.display().to_string() })),
        )
        .await;
    assert_eq!(status, 201, "{text}");
    env.agent("worker", &finisher(&env)).await;
    env.agent("planner", &planner_script(&env)).await;
    env.agent("lead", &lead(&env)).await;
    let parent = create(
        &env,
        json!({ "title": "Relaunch", "project": "WEB", "assignee": "lead", "wake_on_children": true }),
    )
    .await;
    let parent_issue = env
        .store
        .get_issue(env.ws.id, &IssueKey::parse(&parent).unwrap())
        .await
        .unwrap();
    // The lead's own run (its assignment) ends first.
    let first = env.the_run(&parent_issue).await;
    env.finished(first.id).await;
    // Its success put the issue in review (after the run's end is recorded).
    let before_plan = poll("the lead's issue in review", || async {
        let status = env
            .store
            .get_issue_by_id(parent_issue.id)
            .await
            .unwrap()
            .status;
        (status == IssueStatus::InReview).then_some(status)
    })
    .await;
    // Plan with agent.
    let (status, text) = env
        .call(
            reqwest::Method::POST,
            &format!("/api/v1/issues/{parent}/plan"),
            Some(json!({ "agent": "planner" })),
        )
        .await;
    assert_eq!(status, 201, "{text}");
    let plan_run = body(&text)["id"]
        .as_str()
        .unwrap()
        .parse::<uuid::Uuid>()
        .unwrap();
    env.finished(RunId(plan_run)).await;
    let sent = std::fs::read_to_string(env.scripts.path().join("plan-status")).unwrap_or_default();
    assert_eq!(
        sent,
        "201",
        "{}",
        std::fs::read_to_string(env.scripts.path().join("plan-answer")).unwrap_or_default()
    );
    let prompt =
        std::fs::read_to_string(env.scripts.path().join(format!("plan-prompt-{plan_run}")))
            .unwrap();
    assert!(prompt.contains(&format!("Plan issue {parent}")), "{prompt}");
    assert!(prompt.contains("/proposals"), "{prompt}");
    let proposals = env.get(&format!("/api/v1/issues/{parent}/proposals")).await;
    assert_eq!(proposals[0]["status"], "pending");
    // The plan run left the issue where it was, and the lead was not woken by it.
    assert_eq!(
        env.store
            .get_issue_by_id(parent_issue.id)
            .await
            .unwrap()
            .status,
        before_plan
    );
    let id = proposals[0]["id"].as_str().unwrap();
    let (status, text) = env
        .call(
            reqwest::Method::POST,
            &format!("/api/v1/proposals/{id}/approve"),
            Some(json!({})),
        )
        .await;
    assert_eq!(status, 200, "{text}");
    let made: Vec<String> = body(&text)["issues"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["key"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(made.len(), 3);

    let woken = poll_for(
        std::time::Duration::from_secs(120),
        "the lead woken once every planned issue ended",
        || async {
            let runs = env
                .store
                .list_runs_for_issue(parent_issue.id)
                .await
                .unwrap();
            let lead_runs: Vec<Run> = runs
                .into_iter()
                .filter(|r| r.purpose == RunPurpose::Work)
                .collect();
            (lead_runs.len() >= 2 && lead_runs.iter().all(|r| r.status.is_terminal()))
                .then_some(lead_runs)
        },
    )
    .await;
    // In dependency order, each exactly once.
    let mut expected = Vec::new();
    for key in &made {
        expected.push(format!("{key} start"));
        expected.push(format!("{key} end 200"));
    }
    assert_eq!(order_lines(&env), expected);
    // In the project's repository.
    let branches = muster_tests::git(&project_repo, &["branch", "--list", "muster/*"]);
    for key in &made {
        assert!(
            branches.contains(&format!("muster/{key}-worker")),
            "{key}: {branches}"
        );
    }
    let elsewhere = muster_tests::git(&workspace_repo, &["branch", "--list", "muster/*"]);
    assert!(!elsewhere.contains("worker"), "{elsewhere}");
    // The lead, once, with the digest.
    assert_eq!(woken.len(), 2, "woken exactly once: {woken:?}");
    let prompt = std::fs::read_to_string(
        env.scripts
            .path()
            .join(format!("lead-prompt-{}", woken[1].id)),
    )
    .unwrap();
    assert!(
        prompt.contains(&format!("Every sub-issue of {parent} has ended")),
        "{prompt}"
    );
    for key in &made {
        assert!(prompt.contains(key.as_str()), "{key}: {prompt}");
    }
}
