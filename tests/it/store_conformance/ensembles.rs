//! Ensembles: the team definitions, an issue's ensemble runs with their candidates, the guarded
//! steps (review once, decide once, choose once), live spend, and the workspace's check command.

use std::sync::Arc;

use muster::domain::*;
use muster::store::{ClaimScope, Store};
use serde_json::json;

use super::{agent, assert_conflict, assert_not_found, fixture, issue, store_cases};
use muster_tests::engine::bare_outcome;

store_cases!(
    ensembles_are_named_per_workspace,
    an_ensemble_run_queues_its_candidates_atomically,
    review_decide_and_choose_happen_once,
    live_spend_and_the_last_event_of_a_kind,
    the_workspace_check_command_round_trips,
);

fn settings(members: &[AgentId]) -> EnsembleSettings {
    EnsembleSettings {
        members: members.to_vec(),
        check: Some(CheckSpec {
            command: "cargo test".to_owned(),
            timeout_secs: 120,
        }),
        early_stop: EarlyStop::Quorum(2),
        reviewer: None,
        budget: Budget {
            usd: Some(3.0),
            tokens: None,
        },
        share: Some(0.5),
    }
}

fn name(raw: &str) -> EnsembleName {
    EnsembleName::parse(raw).unwrap()
}

async fn ensembles_are_named_per_workspace(store: Arc<dyn Store>) {
    let f = fixture(&store, "ens", "ENS").await;
    let g = fixture(&store, "other", "OTH").await;
    let a = agent(&store, f.ws.id, "a", 1).await;
    let b = agent(&store, f.ws.id, "b", 1).await;
    let trio = store
        .create_ensemble(f.ws.id, &name("trio"), &settings(&[a.id, b.id]))
        .await
        .unwrap();
    assert_eq!(trio.settings, settings(&[a.id, b.id]));
    assert_eq!(trio.name.as_str(), "trio");
    assert_conflict(
        store
            .create_ensemble(f.ws.id, &name("trio"), &settings(&[a.id]))
            .await,
        "ensemble_workspace_name_key",
    );
    // The same name in another workspace is another ensemble; neither sees the other's.
    store
        .create_ensemble(g.ws.id, &name("trio"), &settings(&[]))
        .await
        .unwrap();
    assert_eq!(
        store
            .get_ensemble_by_name(f.ws.id, &name("trio"))
            .await
            .unwrap(),
        trio
    );
    assert_not_found(store.get_ensemble_by_name(f.ws.id, &name("duo")).await);
    let mut changed = settings(&[b.id, a.id]);
    changed.early_stop = EarlyStop::FirstGreen;
    let renamed = store
        .update_ensemble(f.ws.id, trio.id, &name("duo"), &changed)
        .await
        .unwrap();
    assert_eq!(
        (renamed.name.as_str(), &renamed.settings),
        ("duo", &changed)
    );
    assert!(renamed.updated_at >= trio.updated_at);
    assert_not_found(
        store
            .update_ensemble(g.ws.id, trio.id, &name("x"), &changed)
            .await,
    );
    let names: Vec<String> = store
        .list_ensembles(f.ws.id)
        .await
        .unwrap()
        .iter()
        .map(|e| e.name.as_str().to_owned())
        .collect();
    assert_eq!(names, ["duo"]);
    assert_not_found(store.delete_ensemble(g.ws.id, trio.id).await);
    store.delete_ensemble(f.ws.id, trio.id).await.unwrap();
    assert!(store.list_ensembles(f.ws.id).await.unwrap().is_empty());
}

fn new_ensemble_run(ws: WorkspaceId, issue: IssueId, e: &Ensemble) -> NewEnsembleRun {
    NewEnsembleRun {
        workspace_id: ws,
        issue_id: issue,
        ensemble_id: e.id,
        name: e.name.as_str().to_owned(),
        settings: e.settings.clone(),
        base_commit: Some("0123abcd".to_owned()),
        base_branch: Some("main".to_owned()),
    }
}

async fn an_ensemble_run_queues_its_candidates_atomically(store: Arc<dyn Store>) {
    let f = fixture(&store, "ens", "ENS").await;
    let a = agent(&store, f.ws.id, "a", 1).await;
    let b = agent(&store, f.ws.id, "b", 1).await;
    let e = store
        .create_ensemble(f.ws.id, &name("pair"), &settings(&[a.id, b.id]))
        .await
        .unwrap();
    let i = issue(&store, f.ws.id, "Do it", IssueStatus::Todo).await;
    let runs = [
        NewRun::assignment(f.ws.id, i.id, a.id),
        NewRun::assignment(f.ws.id, i.id, b.id),
    ];
    let (first, queued) = store
        .create_ensemble_run(&new_ensemble_run(f.ws.id, i.id, &e), &runs)
        .await
        .unwrap();
    assert_eq!(first.number, 1);
    assert_eq!(first.status, EnsembleStatus::Running);
    assert_eq!(first.settings, e.settings);
    assert_eq!(first.base_commit.as_deref(), Some("0123abcd"));
    assert_eq!(queued.len(), 2);
    assert!(
        queued
            .iter()
            .all(|r| r.ensemble_run_id == Some(first.id) && r.status == RunStatus::Queued)
    );
    assert_eq!(
        store.list_ensemble_members_runs(first.id).await.unwrap(),
        queued
    );
    // A member with a live run on the issue: nothing at all is written.
    let other = store
        .create_ensemble(f.ws.id, &name("other"), &settings(&[a.id, b.id]))
        .await
        .unwrap();
    assert_conflict(
        store
            .create_ensemble_run(&new_ensemble_run(f.ws.id, i.id, &other), &runs)
            .await,
        "run_one_active_key",
    );
    assert_eq!(
        store.list_ensemble_runs(i.id).await.unwrap(),
        std::slice::from_ref(&first)
    );
    assert_eq!(store.list_runs_for_issue(i.id).await.unwrap().len(), 2);
    // Once they ended, the next one is numbered 2 and is the board's latest; deleting the ensemble
    // keeps its runs with their snapshot.
    for r in &queued {
        store
            .finish_run(r.id, &bare_outcome(RunStatus::Cancelled))
            .await
            .unwrap();
    }
    let (second, _) = store
        .create_ensemble_run(&new_ensemble_run(f.ws.id, i.id, &other), &runs)
        .await
        .unwrap();
    assert_eq!(second.number, 2);
    let latest = store.latest_ensemble_runs(f.ws.id).await.unwrap();
    assert_eq!(latest.iter().map(|e| e.id).collect::<Vec<_>>(), [second.id]);
    store.delete_ensemble(f.ws.id, e.id).await.unwrap();
    let kept = store.get_ensemble_run(first.id).await.unwrap();
    assert_eq!(kept.ensemble_id, None);
    assert_eq!(kept.settings, e.settings);
}

async fn review_decide_and_choose_happen_once(store: Arc<dyn Store>) {
    let f = fixture(&store, "ens", "ENS").await;
    let a = agent(&store, f.ws.id, "a", 1).await;
    let b = agent(&store, f.ws.id, "b", 1).await;
    let judge = agent(&store, f.ws.id, "judge", 1).await;
    let mut s = settings(&[a.id, b.id]);
    s.reviewer = Some(judge.id);
    let e = store
        .create_ensemble(f.ws.id, &name("pair"), &s)
        .await
        .unwrap();
    let i = issue(&store, f.ws.id, "Do it", IssueStatus::Todo).await;
    let (er, runs) = store
        .create_ensemble_run(
            &new_ensemble_run(f.ws.id, i.id, &e),
            &[
                NewRun::assignment(f.ws.id, i.id, a.id),
                NewRun::assignment(f.ws.id, i.id, b.id),
            ],
        )
        .await
        .unwrap();
    let labels = [('A', runs[1].id), ('B', runs[0].id)];
    let review = NewRun::assignment(f.ws.id, i.id, judge.id);
    let queued = store
        .start_ensemble_review(er.id, &review, &labels)
        .await
        .unwrap();
    assert_eq!(queued.ensemble_run_id, Some(er.id));
    assert_eq!(queued.agent_id, judge.id);
    let now = store.get_ensemble_run(er.id).await.unwrap();
    assert_eq!(now.status, EnsembleStatus::Reviewing);
    assert_eq!(now.review_run_id, Some(queued.id));
    assert_eq!(now.review_labels, labels);
    // A second replica's attempt writes nothing: no second review run.
    assert_conflict(
        store.start_ensemble_review(er.id, &review, &labels).await,
        "ensemble_run_status",
    );
    assert_eq!(
        store.list_ensemble_members_runs(er.id).await.unwrap().len(),
        3
    );
    // The stop reason is kept once.
    assert!(
        store
            .note_ensemble_stop(er.id, "budget spent")
            .await
            .unwrap()
    );
    assert!(!store.note_ensemble_stop(er.id, "later").await.unwrap());
    // Decided once, with the review's outcome.
    let outcome = ReviewOutcome::Invalid {
        error: "candidate B: score 12 is not in 0..=10".to_owned(),
        answer: "{}".to_owned(),
    };
    let decided = store
        .decide_ensemble_run(er.id, Some(&outcome))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(decided.status, EnsembleStatus::Decided);
    assert_eq!(decided.review, Some(outcome));
    assert_eq!(decided.stop_reason.as_deref(), Some("budget spent"));
    assert!(decided.decided_at.is_some());
    assert_eq!(store.decide_ensemble_run(er.id, None).await.unwrap(), None);
    // A run of another ensemble run (or none) cannot be chosen; one of its own, once.
    let stranger = store
        .create_run(&NewRun::assignment(f.ws.id, i.id, judge.id))
        .await;
    assert_conflict(stranger, "run_one_active_key");
    assert_conflict(
        store
            .choose_ensemble_candidate(er.id, RunId::new(), f.owner.id, None)
            .await,
        "ensemble_run_chosen",
    );
    let chosen = store
        .choose_ensemble_candidate(er.id, runs[0].id, f.owner.id, Some("feedbeef"))
        .await
        .unwrap();
    assert_eq!(chosen.status, EnsembleStatus::Chosen);
    assert_eq!(chosen.chosen_run_id, Some(runs[0].id));
    assert_eq!(chosen.chosen_by, Some(f.owner.id));
    assert_eq!(chosen.merged_commit.as_deref(), Some("feedbeef"));
    assert_conflict(
        store
            .choose_ensemble_candidate(er.id, runs[1].id, f.owner.id, None)
            .await,
        "ensemble_run_chosen",
    );
    assert_not_found(
        store
            .choose_ensemble_candidate(EnsembleRunId::new(), runs[1].id, f.owner.id, None)
            .await,
    );
}

async fn live_spend_and_the_last_event_of_a_kind(store: Arc<dyn Store>) {
    let f = fixture(&store, "ens", "ENS").await;
    let a = agent(&store, f.ws.id, "a", 1).await;
    let i = issue(&store, f.ws.id, "Do it", IssueStatus::Todo).await;
    let run = store
        .create_run(&NewRun::assignment(f.ws.id, i.id, a.id))
        .await
        .unwrap();
    let runner = store
        .register_runner("embedded", "0.1.0", &json!([]))
        .await
        .unwrap();
    let now = chrono::Utc::now();
    let claimed = store
        .claim_next_run(
            runner.id,
            &ClaimScope::anything("embedded"),
            now,
            now + chrono::TimeDelta::seconds(20),
        )
        .await
        .unwrap()
        .unwrap();
    let spent = Usage {
        input_tokens: 120,
        output_tokens: 30,
        cache_read_tokens: 7,
        cache_write_tokens: 1,
        cost_usd: 0.25,
        cost_unknown: true,
        cost_estimated: true,
    };
    // Under a stale epoch nothing changes; under its own, the run shows what it spent so far.
    store
        .set_live_usage(run.id, claimed.lease_epoch + 1, &spent)
        .await
        .unwrap();
    assert_eq!(store.get_run(run.id).await.unwrap().usage, Usage::default());
    store
        .set_live_usage(run.id, claimed.lease_epoch, &spent)
        .await
        .unwrap();
    assert_eq!(store.get_run(run.id).await.unwrap().usage, spent);
    let event = |seq: i64, kind: &str, n: i64| NewRunEvent {
        seq,
        at: chrono::Utc::now(),
        kind: kind.to_owned(),
        payload: json!({ "n": n }),
    };
    store
        .append_run_events(
            run.id,
            &[
                event(1, "check", 1),
                event(2, "text", 2),
                event(3, "check", 3),
                event(4, "text", 4),
            ],
        )
        .await
        .unwrap();
    let last = store
        .last_run_event_of_kind(run.id, "check")
        .await
        .unwrap()
        .unwrap();
    assert_eq!((last.seq, last.payload["n"].as_i64()), (3, Some(3)));
    assert!(
        store
            .last_run_event_of_kind(run.id, "diff")
            .await
            .unwrap()
            .is_none()
    );
    let tail: Vec<i64> = store
        .run_events_tail(run.id, 3)
        .await
        .unwrap()
        .iter()
        .map(|e| e.seq)
        .collect();
    assert_eq!(tail, [2, 3, 4]);
}

async fn the_workspace_check_command_round_trips(store: Arc<dyn Store>) {
    let f = fixture(&store, "ens", "ENS").await;
    assert_eq!(f.ws.check, None);
    let check = CheckSpec {
        command: "npm test -- --reporter=tap".to_owned(),
        timeout_secs: 900,
    };
    let ws = store
        .set_workspace_check(f.ws.id, Some(&check))
        .await
        .unwrap();
    assert_eq!(ws.check, Some(check.clone()));
    assert_eq!(
        store.get_workspace(f.ws.id).await.unwrap().check,
        Some(check)
    );
    let ws = store.set_workspace_check(f.ws.id, None).await.unwrap();
    assert_eq!(ws.check, None);
}
