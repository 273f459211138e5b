//! `muster issue plan|proposal|approve|discard` against a real server: asking an agent for a plan, the
//! proposal printed as a tree, an approval with an item dropped and another re-assigned, and the clear
//! errors of an unknown agent, a decided proposal and an issue without one.

use muster::domain::*;
use muster_tests::cli::Cli;
use muster_tests::seed;
use muster_tests::{Backend, TestDb, spawn_app};

fn proposed(reference: &str, agent: Option<&str>, blocked_by: &[&str]) -> ProposedIssue {
    ProposedIssue {
        reference: reference.to_owned(),
        title: format!("Build the {reference}"),
        description: String::new(),
        acceptance: format!("the {reference} works"),
        agent: agent.map(str::to_owned),
        blocked_by: blocked_by.iter().map(|b| (*b).to_owned()).collect(),
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn plans_from_the_command_line() {
    let db = TestDb::new(Backend::Sqlite).await.unwrap();
    let app = spawn_app(db.config()).await;
    let store = app.state.store.clone();
    let (_, ws, cli) = Cli::ada_on_alpha(&app).await;
    let planner = seed::agent(&store, ws.id, "planner", RuntimeKind::Custom).await;
    seed::agent(&store, ws.id, "coder", RuntimeKind::Custom).await;
    let parent = store
        .create_issue(
            ws.id,
            &NewIssue::new(IssueTitle::parse("Relaunch").unwrap()),
        )
        .await
        .unwrap();
    let key = parent.key.to_string();

    let none = cli.run(&["issue", "proposal", &key]).await;
    assert_eq!(none.code, 1, "{none:?}");
    assert!(none.stderr.contains("has no plan proposal"), "{none:?}");
    let ghost = cli.run(&["issue", "plan", &key, "--agent", "ghost"]).await;
    assert_eq!(ghost.code, 1, "{ghost:?}");
    assert!(
        ghost.stderr.contains("no agent called \"ghost\""),
        "{ghost:?}"
    );
    let asked = cli
        .run(&["issue", "plan", &key, "--agent", "planner"])
        .await;
    assert_eq!(asked.code, 0, "{asked:?}");
    assert!(
        asked
            .stdout
            .starts_with(&format!("planner is planning {key} (run ")),
        "{asked:?}"
    );
    let runs = store.list_runs_for_issue(parent.id).await.unwrap();
    assert_eq!(runs.len(), 1);
    assert_eq!(runs[0].purpose, RunPurpose::Plan);

    // What the plan run would send, recorded as it would be.
    store
        .create_proposal(&NewProposal {
            workspace_id: ws.id,
            issue_id: parent.id,
            run_id: Some(runs[0].id),
            agent_id: Some(planner.id),
            summary: "Schema, endpoints, docs.".to_owned(),
            items: vec![
                proposed("db", Some("coder"), &[]),
                proposed("api", Some("coder"), &["db"]),
                proposed("docs", None, &["api"]),
            ],
        })
        .await
        .unwrap();
    let shown = cli.run(&["issue", "proposal", &key]).await;
    assert_eq!(shown.code, 0, "{shown:?}");
    assert!(
        shown.stdout.contains(&format!(
            "Plan for {key} by planner — pending (3 sub-issues)"
        )),
        "{}",
        shown.stdout
    );
    assert!(
        shown
            .stdout
            .contains("- [api] Build the api  agent: coder  after: db"),
        "{}",
        shown.stdout
    );
    assert!(
        shown.stdout.contains("    done when: the api works"),
        "{}",
        shown.stdout
    );
    let json = cli.run(&["issue", "proposal", &key, "--json"]).await;
    let value: serde_json::Value = serde_json::from_str(&json.stdout).unwrap();
    assert_eq!(value["items"].as_array().unwrap().len(), 3);

    let bad = cli.run(&["issue", "approve", &key, "--drop", "nope"]).await;
    assert_eq!(bad.code, 1, "{bad:?}");
    assert!(
        bad.stderr.contains("no item has the ref \"nope\""),
        "{bad:?}"
    );
    let approved = cli
        .run(&[
            "issue", "approve", &key, "--drop", "docs", "--agent", "api=none",
        ])
        .await;
    assert_eq!(approved.code, 0, "{approved:?}");
    assert!(
        approved
            .stdout
            .starts_with(&format!("approved the plan for {key}: created ")),
        "{approved:?}"
    );
    let children = store.list_children(parent.id).await.unwrap();
    assert_eq!(
        children
            .iter()
            .map(|c| c.title.as_str())
            .collect::<Vec<_>>(),
        ["Build the db", "Build the api"]
    );
    assert!(children[0].assignee.is_some());
    assert_eq!(children[1].assignee, None, "re-assigned to none");
    let again = cli.run(&["issue", "approve", &key]).await;
    assert_eq!(again.code, 1, "{again:?}");
    assert!(again.stderr.contains("is approved"), "{again:?}");
    let discard = cli.run(&["issue", "discard", &key]).await;
    assert_eq!(discard.code, 1, "{discard:?}");
    let shown = cli.run(&["issue", "proposal", &key]).await;
    assert!(
        shown.stdout.contains(&format!("→ {}", children[0].key)),
        "{}",
        shown.stdout
    );
}
