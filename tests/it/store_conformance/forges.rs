//! Forge connections, pull requests and webhook deliveries.

use std::sync::Arc;

use chrono::Utc;
use muster::domain::*;
use muster::store::{ForgeSettings, Store};

use super::{agent, assert_conflict, assert_not_found, fixture, issue, store_cases};

store_cases!(
    a_workspace_has_one_forge_connection_whose_secrets_stay_sealed,
    a_delivery_id_is_taken_once_per_connection,
    pull_requests_keep_the_latest_check_per_name_and_review_per_author,
    rounds_stop_at_the_limit_and_a_new_pull_request_supersedes_a_merged_one,
    deleting_a_connection_takes_its_pull_requests_and_deliveries
);

fn connection(ws: WorkspaceId, by: UserId) -> NewForgeConnection {
    NewForgeConnection {
        workspace_id: ws,
        kind: ForgeKind::Github,
        api_url: "https://api.github.com".into(),
        repo: "acme/app".into(),
        token_sealed: "sealed-token".into(),
        webhook_secret_sealed: "sealed-secret".into(),
        auto_open: true,
        max_rounds: 2,
        on_close: OnClose::Todo,
        created_by: by,
    }
}

/// A connection, an agent, an issue and a run of it, ready for pull requests.
async fn line(store: &Arc<dyn Store>, slug: &str) -> (ForgeConnection, Run) {
    let f = fixture(store, slug, "MUS").await;
    let conn = store
        .create_forge_connection(&connection(f.ws.id, f.owner.id))
        .await
        .unwrap();
    let a = agent(store, f.ws.id, "coder", 1).await;
    let i = issue(store, f.ws.id, "Fix it", IssueStatus::Todo).await;
    let run = store
        .create_run(&NewRun::assignment(f.ws.id, i.id, a.id))
        .await
        .unwrap();
    (conn, run)
}

fn pull(conn: &ForgeConnection, run: &Run, number: i64, branch: &str) -> NewPullRequest {
    NewPullRequest {
        workspace_id: conn.workspace_id,
        connection_id: conn.id,
        issue_id: run.issue_id,
        agent_id: run.agent_id,
        run_id: run.id,
        number,
        url: format!("https://github.com/acme/app/pull/{number}"),
        branch: branch.into(),
        base: "main".into(),
        draft: true,
        head_sha: "aaa".into(),
    }
}

async fn a_workspace_has_one_forge_connection_whose_secrets_stay_sealed(store: Arc<dyn Store>) {
    let f = fixture(&store, "team", "MUS").await;
    let made = store
        .create_forge_connection(&connection(f.ws.id, f.owner.id))
        .await
        .unwrap();
    assert_eq!(made.kind, ForgeKind::Github);
    assert_eq!(made.token_sealed, "sealed-token");
    assert_eq!(made.max_rounds, 2);
    assert!(made.auto_open);
    assert_eq!(store.get_forge_connection(made.id).await.unwrap(), made);
    assert_eq!(
        store.list_forge_connections(f.ws.id).await.unwrap(),
        vec![made.clone()]
    );
    assert_conflict(
        store
            .create_forge_connection(&connection(f.ws.id, f.owner.id))
            .await,
        "forge_connection_workspace_key",
    );
    // Serialized for the API, it shows neither sealed value.
    let json = serde_json::to_string(&made).unwrap();
    assert!(
        !json.contains("sealed-token") && !json.contains("sealed-secret"),
        "{json}"
    );

    let settings = ForgeSettings {
        auto_open: false,
        max_rounds: 5,
        on_close: OnClose::Cancelled,
    };
    let changed = store
        .update_forge_settings(f.ws.id, made.id, settings)
        .await
        .unwrap();
    assert_eq!(
        (changed.auto_open, changed.max_rounds, changed.on_close),
        (false, 5, OnClose::Cancelled)
    );
    // Another workspace cannot change or remove it.
    let other = fixture(&store, "other", "OTH").await;
    assert_not_found(
        store
            .update_forge_settings(other.ws.id, made.id, settings)
            .await,
    );
    assert_not_found(store.delete_forge_connection(other.ws.id, made.id).await);
    store
        .delete_forge_connection(f.ws.id, made.id)
        .await
        .unwrap();
    assert_not_found(store.get_forge_connection(made.id).await);
}

async fn a_delivery_id_is_taken_once_per_connection(store: Arc<dyn Store>) {
    let (conn, _) = line(&store, "team").await;
    let (other, _) = line(&store, "other").await;
    let now = Utc::now();
    assert!(
        store
            .take_forge_delivery(conn.id, "d-1", now)
            .await
            .unwrap()
    );
    assert!(
        !store
            .take_forge_delivery(conn.id, "d-1", now)
            .await
            .unwrap()
    );
    assert!(
        store
            .take_forge_delivery(conn.id, "d-2", now)
            .await
            .unwrap()
    );
    // The same id on another connection is another delivery.
    assert!(
        store
            .take_forge_delivery(other.id, "d-1", now)
            .await
            .unwrap()
    );
}

async fn pull_requests_keep_the_latest_check_per_name_and_review_per_author(store: Arc<dyn Store>) {
    let (conn, run) = line(&store, "team").await;
    let pr = store
        .create_pull_request(&pull(&conn, &run, 7, "muster/MUS-1-coder"))
        .await
        .unwrap();
    assert_eq!(
        (pr.number, pr.state, pr.draft, pr.rounds),
        (7, PrState::Open, true, 0)
    );
    assert!(pr.checks.is_empty() && pr.reviews.is_empty() && pr.mergeable.is_none());
    assert_conflict(
        store
            .create_pull_request(&pull(&conn, &run, 7, "other"))
            .await,
        "pull_request_connection_number_key",
    );
    let check = |name: &str, state| PrCheck {
        name: name.into(),
        state,
        url: None,
    };
    for (name, state) in [
        ("test", CheckState::Pending),
        ("lint", CheckState::Success),
        ("test", CheckState::Failure),
    ] {
        store
            .update_pull_request(
                pr.id,
                &PrUpdate {
                    check: Some(check(name, state)),
                    ..PrUpdate::default()
                },
            )
            .await
            .unwrap();
    }
    let review = |author: &str, verdict| PrReview {
        author: author.into(),
        verdict,
    };
    store
        .update_pull_request(
            pr.id,
            &PrUpdate {
                review: Some(review("ann", ReviewVerdict::ChangesRequested)),
                mergeable: Some(Some(true)),
                ..PrUpdate::default()
            },
        )
        .await
        .unwrap();
    let now = store
        .update_pull_request(
            pr.id,
            &PrUpdate {
                review: Some(review("ann", ReviewVerdict::Approved)),
                ..PrUpdate::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(
        now.checks,
        vec![
            check("test", CheckState::Failure),
            check("lint", CheckState::Success)
        ]
    );
    assert_eq!(now.reviews, vec![review("ann", ReviewVerdict::Approved)]);
    assert_eq!(now.mergeable, Some(true));
    // A new head commit: the old checks were about the old one.
    let moved = store
        .update_pull_request(
            pr.id,
            &PrUpdate {
                head_sha: Some("bbb".into()),
                draft: Some(false),
                ..PrUpdate::default()
            },
        )
        .await
        .unwrap();
    assert_eq!((moved.head_sha.as_str(), moved.draft), ("bbb", false));
    assert!(moved.checks.is_empty() && moved.mergeable.is_none());
    assert_eq!(moved.reviews.len(), 1);

    assert_eq!(
        store.find_pull_request(conn.id, 7).await.unwrap(),
        Some(moved.clone())
    );
    assert_eq!(store.find_pull_request(conn.id, 8).await.unwrap(), None);
    assert_eq!(
        store
            .pull_requests_for_branch(conn.id, "muster/MUS-1-coder")
            .await
            .unwrap(),
        vec![moved.clone()]
    );
    assert_eq!(
        store
            .list_pull_requests(conn.workspace_id, Some(run.issue_id))
            .await
            .unwrap(),
        vec![moved.clone()]
    );
    assert_eq!(
        store
            .list_pull_requests(conn.workspace_id, None)
            .await
            .unwrap(),
        vec![moved]
    );
    assert_not_found(
        store
            .update_pull_request(PullRequestId::new(), &PrUpdate::default())
            .await,
    );
}

async fn rounds_stop_at_the_limit_and_a_new_pull_request_supersedes_a_merged_one(
    store: Arc<dyn Store>,
) {
    let (conn, run) = line(&store, "team").await;
    let pr = store
        .create_pull_request(&pull(&conn, &run, 1, "muster/MUS-1-coder"))
        .await
        .unwrap();
    assert_eq!(store.take_pr_round(pr.id, 2).await.unwrap(), Some(1));
    assert_eq!(store.take_pr_round(pr.id, 2).await.unwrap(), Some(2));
    assert_eq!(store.take_pr_round(pr.id, 2).await.unwrap(), None);
    assert_eq!(store.get_pull_request(pr.id).await.unwrap().rounds, 2);

    store
        .update_pull_request(
            pr.id,
            &PrUpdate {
                state: Some(PrState::Merged),
                ..PrUpdate::default()
            },
        )
        .await
        .unwrap();
    let next = store
        .create_pull_request(&pull(&conn, &run, 2, "muster/MUS-1-coder-2"))
        .await
        .unwrap();
    store.supersede_pull_request(pr.id, next.id).await.unwrap();
    let old = store.get_pull_request(pr.id).await.unwrap();
    assert_eq!(
        (old.state, old.superseded_by),
        (PrState::Merged, Some(next.id))
    );
    assert_not_found(
        store
            .supersede_pull_request(PullRequestId::new(), next.id)
            .await,
    );
    // Newest first.
    let listed: Vec<i64> = store
        .list_pull_requests(conn.workspace_id, None)
        .await
        .unwrap()
        .iter()
        .map(|p| p.number)
        .collect();
    assert_eq!(listed, vec![2, 1]);
}

async fn deleting_a_connection_takes_its_pull_requests_and_deliveries(store: Arc<dyn Store>) {
    let (conn, run) = line(&store, "team").await;
    let pr = store
        .create_pull_request(&pull(&conn, &run, 3, "b"))
        .await
        .unwrap();
    assert!(
        store
            .take_forge_delivery(conn.id, "x", Utc::now())
            .await
            .unwrap()
    );
    store
        .delete_forge_connection(conn.workspace_id, conn.id)
        .await
        .unwrap();
    assert_not_found(store.get_pull_request(pr.id).await);
    // Connected again, the same delivery id is new to the new connection.
    let again = store
        .create_forge_connection(&connection(conn.workspace_id, conn.created_by))
        .await
        .unwrap();
    assert!(
        store
            .take_forge_delivery(again.id, "x", Utc::now())
            .await
            .unwrap()
    );
}
