//! Runners, runs (queue, claim, lease, finish) and the run event log.

use std::collections::HashSet;
use std::sync::Arc;

use chrono::{TimeDelta, Utc};
use muster::domain::*;
use muster::store::{ClaimScope, Store};
use serde_json::json;

use super::{agent, assert_conflict, assert_not_found, fixture, issue, store_cases, user};
use muster_tests::engine::bare_outcome;

store_cases!(
    run_lifecycle,
    claims_respect_agent_concurrency_and_backoff,
    eight_claimers_take_two_hundred_runs_exactly_once,
    expired_leases_are_interrupted,
    run_events_append_idempotently,
    inbox,
    list_runs_filters_and_orders,
    run_tokens_live_with_their_run,
    a_runner_finds_the_runs_it_left,
    notifications_reach_listeners,
    a_failure_detail_and_an_unknown_cost_are_kept,
);

/// Issue 17: the decisive error and "some tokens had no price" survive the round trip, apart from
/// a known cost of zero.
async fn a_failure_detail_and_an_unknown_cost_are_kept(store: Arc<dyn Store>) {
    let f = fixture(&store, "kept", "KPT").await;
    let coder = agent(&store, f.ws.id, "coder", 2).await;
    let i = issue(&store, f.ws.id, "Do it", IssueStatus::Todo).await;
    let j = issue(&store, f.ws.id, "Do that", IssueStatus::Todo).await;
    let failed = store
        .create_run(&NewRun::assignment(f.ws.id, i.id, coder.id))
        .await
        .unwrap();
    let usage = Usage {
        input_tokens: 10,
        output_tokens: 5,
        cost_unknown: true,
        ..Usage::default()
    };
    let outcome = RunOutcome {
        exit_code: Some(1),
        failure_reason: Some(FailureReason::Auth),
        failure_detail: Some("unexpected status 401 Unauthorized".into()),
        usage,
        ..bare_outcome(RunStatus::Failed)
    };
    let done = store.finish_run(failed.id, &outcome).await.unwrap();
    let read = store.get_run(failed.id).await.unwrap();
    for run in [&done, &read] {
        assert_eq!(
            run.failure_detail.as_deref(),
            Some("unexpected status 401 Unauthorized")
        );
        assert!(run.usage.cost_unknown, "{run:?}");
        assert_eq!(run.usage, usage);
    }
    // A run that cost nothing known stays a known zero; a queued run knows no failure.
    let priced = store
        .create_run(&NewRun::assignment(f.ws.id, j.id, coder.id))
        .await
        .unwrap();
    assert_eq!(
        (priced.failure_detail.as_deref(), priced.usage.cost_unknown),
        (None, false)
    );
    let zero = store
        .finish_run(
            priced.id,
            &RunOutcome {
                status: RunStatus::Succeeded,
                failure_reason: None,
                failure_detail: None,
                usage: Usage::default(),
                ..outcome
            },
        )
        .await
        .unwrap();
    assert_eq!(
        (zero.failure_detail, zero.usage.cost_unknown),
        (None, false)
    );
}

/// Every workspace and kind, as an embedded runner claims (agents in these cases are bound to no runner).
fn any() -> ClaimScope {
    ClaimScope::anything("embedded")
}

async fn runner(store: &Arc<dyn Store>, name: &str) -> Runner {
    store
        .register_runner(
            name,
            "0.1.0",
            &json!([{"kind": "claude", "version": "2.1.197"}]),
        )
        .await
        .unwrap()
}

async fn run_lifecycle(store: Arc<dyn Store>) {
    let f = fixture(&store, "team", "MUS").await;
    let coder = agent(&store, f.ws.id, "coder", 1).await;
    let i = issue(&store, f.ws.id, "Do it", IssueStatus::Todo).await;
    let r1 = runner(&store, "embedded").await;
    let again = store
        .register_runner("embedded", "0.2.0", &json!([]))
        .await
        .unwrap();
    assert_eq!(
        (again.id, again.version.as_str(), &again.detected),
        (r1.id, "0.2.0", &json!([])),
        "re-registering updates in place"
    );
    let r2 = runner(&store, "remote").await;

    let run = store
        .create_run(&NewRun::assignment(f.ws.id, i.id, coder.id))
        .await
        .unwrap();
    assert_eq!(
        (run.status, run.attempt, run.runner_id),
        (RunStatus::Queued, 1, None)
    );
    assert_conflict(
        store
            .create_run(&NewRun::assignment(f.ws.id, i.id, coder.id))
            .await,
        "run_one_active_key",
    );
    assert_eq!(store.get_run(run.id).await.unwrap(), run);

    let now = Utc::now();
    let lease = now + TimeDelta::seconds(20);
    let claimed = store
        .claim_next_run(r1.id, &any(), now, lease)
        .await
        .unwrap()
        .expect("a queued run");
    assert_eq!(
        (claimed.id, claimed.status, claimed.runner_id),
        (run.id, RunStatus::Claimed, Some(r1.id))
    );
    assert!(claimed.lease_expires_at.is_some() && claimed.started_at.is_some());
    assert!(
        store
            .claim_next_run(r2.id, &any(), now, lease)
            .await
            .unwrap()
            .is_none(),
        "nothing else is queued"
    );

    store
        .renew_lease(
            run.id,
            r1.id,
            claimed.lease_epoch,
            lease + TimeDelta::seconds(5),
        )
        .await
        .unwrap();
    assert_conflict(
        store
            .renew_lease(run.id, r2.id, claimed.lease_epoch, lease)
            .await,
        "run_lease",
    );
    assert_conflict(
        store
            .start_run(run.id, r2.id, claimed.lease_epoch, Some(1), None, None)
            .await,
        "run_lease",
    );
    let running = store
        .start_run(
            run.id,
            r1.id,
            claimed.lease_epoch,
            Some(4242),
            Some("/tmp/wt"),
            Some("muster/MUS-1-r1"),
        )
        .await
        .unwrap();
    assert_eq!(
        (running.status, running.pid, running.branch.as_deref()),
        (RunStatus::Running, Some(4242), Some("muster/MUS-1-r1"))
    );

    let stalled_at = Utc::now();
    store
        .set_run_stalled(run.id, Some(stalled_at))
        .await
        .unwrap();
    assert!(store.get_run(run.id).await.unwrap().stalled_at.is_some());
    store.set_run_stalled(run.id, None).await.unwrap();
    assert_not_found(store.set_run_stalled(RunId::new(), None).await);

    let outcome = RunOutcome {
        exit_code: Some(0),
        usage: Usage {
            input_tokens: 1200,
            output_tokens: 340,
            cache_read_tokens: 50,
            cache_write_tokens: 7,
            cost_usd: 0.0123,
            cost_unknown: false,
            cost_estimated: true,
        },
        summary: Some("Fixed it".into()),
        diff_stat: Some("1 file changed, 2 insertions(+)".into()),
        session_id: Some("sess-1".into()),
        ..bare_outcome(RunStatus::Succeeded)
    };
    let done = store.finish_run(run.id, &outcome).await.unwrap();
    assert_eq!(
        (done.status, done.usage, done.summary.as_deref()),
        (RunStatus::Succeeded, outcome.usage, Some("Fixed it"))
    );
    assert_eq!(
        (done.lease_expires_at, done.session_id.as_deref()),
        (None, Some("sess-1"))
    );
    assert!(done.finished_at.is_some());
    assert_conflict(store.finish_run(run.id, &outcome).await, "run_lease");
    assert_not_found(store.finish_run(RunId::new(), &outcome).await);
    assert!(
        store
            .finish_run(
                run.id,
                &RunOutcome {
                    status: RunStatus::Running,
                    ..outcome.clone()
                }
            )
            .await
            .is_err()
    );

    // The issue can be run again once the first run is over.
    let retry = store
        .create_run(&NewRun {
            attempt: 2,
            ..NewRun::assignment(f.ws.id, i.id, coder.id)
        })
        .await
        .unwrap();
    let cancelled = store
        .finish_run(
            retry.id,
            &RunOutcome {
                status: RunStatus::Cancelled,
                failure_reason: None,
                failure_detail: None,
                ..outcome
            },
        )
        .await
        .expect("a queued run can be cancelled");
    assert_eq!(cancelled.status, RunStatus::Cancelled);
    let history: Vec<_> = store
        .list_runs_for_issue(i.id)
        .await
        .unwrap()
        .into_iter()
        .map(|r| r.id)
        .collect();
    assert_eq!(history, vec![run.id, retry.id]);
}

async fn claims_respect_agent_concurrency_and_backoff(store: Arc<dyn Store>) {
    let f = fixture(&store, "team", "MUS").await;
    let pair = agent(&store, f.ws.id, "pair", 2).await;
    let r = runner(&store, "embedded").await;
    for n in 0..4 {
        let i = issue(&store, f.ws.id, &format!("i{n}"), IssueStatus::Todo).await;
        store
            .create_run(&NewRun::assignment(f.ws.id, i.id, pair.id))
            .await
            .unwrap();
    }
    let later = issue(&store, f.ws.id, "later", IssueStatus::Todo).await;
    let solo = agent(&store, f.ws.id, "solo", 1).await;
    let now = Utc::now();
    let backoff = store
        .create_run(&NewRun {
            not_before: Some(now + TimeDelta::seconds(60)),
            ..NewRun::assignment(f.ws.id, later.id, solo.id)
        })
        .await
        .unwrap();
    let lease = now + TimeDelta::seconds(20);
    let mut claimed = Vec::new();
    while let Some(run) = store
        .claim_next_run(r.id, &any(), now, lease)
        .await
        .unwrap()
    {
        claimed.push(run);
    }
    assert_eq!(claimed.len(), 2, "max_concurrent_runs = 2 caps the claims");
    assert!(claimed.iter().all(|c| c.agent_id == pair.id));
    // Finishing one frees a slot; the backoff run becomes claimable once its time comes.
    let outcome = RunOutcome {
        exit_code: Some(1),
        failure_reason: Some(FailureReason::Exit),
        ..bare_outcome(RunStatus::Failed)
    };
    store.finish_run(claimed[0].id, &outcome).await.unwrap();
    let next = store
        .claim_next_run(r.id, &any(), now, lease)
        .await
        .unwrap()
        .expect("a freed slot");
    assert_eq!(next.agent_id, pair.id);
    assert!(
        store
            .claim_next_run(r.id, &any(), now, lease)
            .await
            .unwrap()
            .is_none()
    );
    let future = now + TimeDelta::seconds(61);
    let late = store
        .claim_next_run(r.id, &any(), future, future + TimeDelta::seconds(20))
        .await
        .unwrap()
        .expect("backoff over");
    assert_eq!(late.id, backoff.id);
}

async fn eight_claimers_take_two_hundred_runs_exactly_once(store: Arc<dyn Store>) {
    let f = fixture(&store, "team", "MUS").await;
    let mut agents = Vec::new();
    for n in 0..10 {
        agents.push(agent(&store, f.ws.id, &format!("agent{n}"), 32).await);
    }
    let mut queued = HashSet::new();
    for n in 0..20 {
        let i = issue(&store, f.ws.id, &format!("issue {n}"), IssueStatus::Todo).await;
        for a in &agents {
            queued.insert(
                store
                    .create_run(&NewRun::assignment(f.ws.id, i.id, a.id))
                    .await
                    .unwrap()
                    .id,
            );
        }
    }
    assert_eq!(queued.len(), 200);
    let now = Utc::now();
    let tasks: Vec<_> = (0..8)
        .map(|n| {
            let store = store.clone();
            tokio::spawn(async move {
                let r = store
                    .register_runner(&format!("runner-{n}"), "0.1.0", &json!([]))
                    .await
                    .unwrap();
                let mut mine = Vec::new();
                while let Some(run) = store
                    .claim_next_run(r.id, &any(), now, now + TimeDelta::seconds(20))
                    .await
                    .unwrap()
                {
                    assert_eq!(run.runner_id, Some(r.id));
                    mine.push(run.id);
                }
                mine
            })
        })
        .collect();
    let mut all = Vec::new();
    let mut busy_claimers = 0;
    for t in tasks {
        let mine = t.await.unwrap();
        busy_claimers += usize::from(!mine.is_empty());
        all.extend(mine);
    }
    let unique: HashSet<_> = all.iter().copied().collect();
    assert_eq!(all.len(), 200, "every run claimed once: no double claims");
    assert_eq!(unique, queued, "and every queued run claimed");
    assert!(
        busy_claimers >= 2,
        "claims were really concurrent ({busy_claimers} claimers got work)"
    );
    for id in unique {
        assert_eq!(store.get_run(id).await.unwrap().status, RunStatus::Claimed);
    }
}

async fn expired_leases_are_interrupted(store: Arc<dyn Store>) {
    let f = fixture(&store, "team", "MUS").await;
    let a = agent(&store, f.ws.id, "a", 4).await;
    let r = runner(&store, "embedded").await;
    let i1 = issue(&store, f.ws.id, "one", IssueStatus::Todo).await;
    let i2 = issue(&store, f.ws.id, "two", IssueStatus::Todo).await;
    store
        .create_run(&NewRun::assignment(f.ws.id, i1.id, a.id))
        .await
        .unwrap();
    store
        .create_run(&NewRun::assignment(f.ws.id, i2.id, a.id))
        .await
        .unwrap();
    let now = Utc::now();
    let short = store
        .claim_next_run(r.id, &any(), now, now + TimeDelta::seconds(5))
        .await
        .unwrap()
        .unwrap();
    let long = store
        .claim_next_run(r.id, &any(), now, now + TimeDelta::seconds(60))
        .await
        .unwrap()
        .unwrap();
    store
        .start_run(long.id, r.id, long.lease_epoch, Some(1), None, None)
        .await
        .unwrap();
    assert!(store.interrupt_expired_runs(now).await.unwrap().is_empty());
    let lost = store
        .interrupt_expired_runs(now + TimeDelta::seconds(10))
        .await
        .unwrap();
    assert_eq!(
        lost.iter().map(|r| r.id).collect::<Vec<_>>(),
        vec![short.id]
    );
    assert_eq!(
        (lost[0].status, lost[0].failure_reason),
        (RunStatus::Interrupted, Some(FailureReason::RunnerLost))
    );
    assert_eq!(
        store.get_run(long.id).await.unwrap().status,
        RunStatus::Running
    );
    let all_lost = store
        .interrupt_expired_runs(now + TimeDelta::seconds(61))
        .await
        .unwrap();
    assert_eq!(
        all_lost.iter().map(|r| r.id).collect::<Vec<_>>(),
        vec![long.id]
    );
    assert_conflict(
        store
            .renew_lease(long.id, r.id, long.lease_epoch, now)
            .await,
        "run_lease",
    );
}

fn event(seq: i64, text: &str) -> NewRunEvent {
    NewRunEvent {
        seq,
        at: Utc::now(),
        kind: "text".into(),
        payload: json!({ "text": text, "n": seq, "nested": { "ok": true } }),
    }
}

async fn run_events_append_idempotently(store: Arc<dyn Store>) {
    let f = fixture(&store, "team", "MUS").await;
    let a = agent(&store, f.ws.id, "a", 1).await;
    let i = issue(&store, f.ws.id, "log", IssueStatus::Todo).await;
    let run = store
        .create_run(&NewRun::assignment(f.ws.id, i.id, a.id))
        .await
        .unwrap();
    assert_eq!(store.append_run_events(run.id, &[]).await.unwrap(), 0);
    let batch: Vec<_> = (1..=3).map(|n| event(n, &format!("line {n}"))).collect();
    assert_eq!(store.append_run_events(run.id, &batch).await.unwrap(), 3);
    // A resend after a reconnect (overlapping seqs) stores nothing twice and keeps the first payload.
    let resend = vec![event(3, "changed"), event(4, "line 4")];
    assert_eq!(store.append_run_events(run.id, &resend).await.unwrap(), 4);
    let all = store.run_events_since(run.id, 0, 100).await.unwrap();
    assert_eq!(all.iter().map(|e| e.seq).collect::<Vec<_>>(), [1, 2, 3, 4]);
    assert_eq!(
        all[2].payload,
        json!({ "text": "line 3", "n": 3, "nested": { "ok": true } })
    );
    assert_eq!((all[0].run_id, all[0].kind.as_str()), (run.id, "text"));
    // Cursor and limit.
    let page = store.run_events_since(run.id, 1, 2).await.unwrap();
    assert_eq!(page.iter().map(|e| e.seq).collect::<Vec<_>>(), [2, 3]);
    assert!(
        store
            .run_events_since(run.id, 4, 10)
            .await
            .unwrap()
            .is_empty()
    );
    // A big batch crosses the insert chunk size.
    let big: Vec<_> = (5..=704).map(|n| event(n, "x")).collect();
    assert_eq!(store.append_run_events(run.id, &big).await.unwrap(), 704);
    assert_eq!(
        store.run_events_since(run.id, 0, 1000).await.unwrap().len(),
        704
    );
    // Bad input.
    assert_not_found(
        store
            .append_run_events(RunId::new(), &[event(1, "x")])
            .await,
    );
    assert!(
        store
            .append_run_events(run.id, &[event(0, "x")])
            .await
            .is_err(),
        "seq starts at 1"
    );
    assert!(
        store
            .run_events_since(RunId::new(), 0, 10)
            .await
            .unwrap()
            .is_empty()
    );
}

async fn inbox(store: Arc<dyn Store>) {
    let f = fixture(&store, "team", "MUS").await;
    let bob = user(&store, "bob@example.com").await;
    store
        .add_member(f.ws.id, bob.id, Role::Member)
        .await
        .unwrap();
    let i = issue(&store, f.ws.id, "x", IssueStatus::Todo).await;
    let mine = store
        .create_inbox_item(&NewInboxItem {
            workspace_id: f.ws.id,
            user_id: Some(f.owner.id),
            kind: InboxKind::RunFailed,
            issue_id: Some(i.id),
            run_id: None,
            comment_id: None,
            message: "MUS-1 failed".into(),
        })
        .await
        .unwrap();
    let everyone = store
        .create_inbox_item(&NewInboxItem {
            workspace_id: f.ws.id,
            user_id: None,
            kind: InboxKind::RunStalled,
            issue_id: None,
            run_id: None,
            comment_id: None,
            message: "stalled".into(),
        })
        .await
        .unwrap();
    assert_eq!((mine.kind, mine.resolved_at), (InboxKind::RunFailed, None));
    let owner_sees = store.list_inbox(f.ws.id, f.owner.id).await.unwrap();
    assert_eq!(
        owner_sees.iter().map(|x| x.id).collect::<Vec<_>>(),
        vec![everyone.id, mine.id],
        "newest first"
    );
    let bob_sees = store.list_inbox(f.ws.id, bob.id).await.unwrap();
    assert_eq!(bob_sees, vec![everyone]);
}

/// `list_runs`: newest first, only the workspace's own, filtered by issue, agent, statuses and id prefix,
/// limited.
async fn list_runs_filters_and_orders(store: Arc<dyn Store>) {
    use muster::store::RunFilter;
    let f = fixture(&store, "team", "MUS").await;
    let other = fixture(&store, "other", "OTH").await;
    let coder = agent(&store, f.ws.id, "coder", 4).await;
    let tester = agent(&store, f.ws.id, "tester", 4).await;
    let i1 = issue(&store, f.ws.id, "One", IssueStatus::Todo).await;
    let i2 = issue(&store, f.ws.id, "Two", IssueStatus::Todo).await;
    let cancelled = bare_outcome(RunStatus::Cancelled);
    // Oldest to newest: coder on i1 (cancelled), tester on i1, coder on i1 again, coder on i2.
    let mut made = Vec::new();
    for (i, a) in [(&i1, &coder), (&i1, &tester), (&i1, &coder), (&i2, &coder)] {
        let run = store
            .create_run(&NewRun::assignment(f.ws.id, i.id, a.id))
            .await
            .unwrap();
        if made.is_empty() {
            store.finish_run(run.id, &cancelled).await.unwrap();
        }
        made.push(run.id);
    }
    let o_agent = agent(&store, other.ws.id, "coder", 1).await;
    let o_issue = issue(&store, other.ws.id, "Theirs", IssueStatus::Todo).await;
    let o_run = store
        .create_run(&NewRun::assignment(other.ws.id, o_issue.id, o_agent.id))
        .await
        .unwrap();

    let ids = |runs: Vec<Run>| runs.into_iter().map(|r| r.id).collect::<Vec<_>>();
    let all = ids(store
        .list_runs(f.ws.id, &RunFilter::default())
        .await
        .unwrap());
    let newest_first: Vec<RunId> = made.iter().rev().copied().collect();
    assert_eq!(
        all, newest_first,
        "newest first, only this workspace's runs"
    );

    let on_i1 = RunFilter {
        issue: Some(i1.id),
        ..RunFilter::default()
    };
    assert_eq!(
        ids(store.list_runs(f.ws.id, &on_i1).await.unwrap()),
        vec![made[2], made[1], made[0]]
    );
    let coder_on_i1 = RunFilter {
        agent: Some(coder.id),
        ..on_i1.clone()
    };
    assert_eq!(
        ids(store.list_runs(f.ws.id, &coder_on_i1).await.unwrap()),
        vec![made[2], made[0]]
    );
    let queued_coder = RunFilter {
        statuses: vec![RunStatus::Queued],
        agent: Some(coder.id),
        ..RunFilter::default()
    };
    assert_eq!(
        ids(store.list_runs(f.ws.id, &queued_coder).await.unwrap()),
        vec![made[3], made[2]]
    );
    let ended = RunFilter {
        statuses: vec![RunStatus::Cancelled, RunStatus::Failed],
        ..RunFilter::default()
    };
    assert_eq!(
        ids(store.list_runs(f.ws.id, &ended).await.unwrap()),
        vec![made[0]]
    );
    let two = RunFilter {
        limit: 2,
        ..RunFilter::default()
    };
    assert_eq!(
        ids(store.list_runs(f.ws.id, &two).await.unwrap()),
        vec![made[3], made[2]]
    );
    let foreign_issue = RunFilter {
        issue: Some(o_issue.id),
        ..RunFilter::default()
    };
    assert!(
        store
            .list_runs(f.ws.id, &foreign_issue)
            .await
            .unwrap()
            .is_empty(),
        "another workspace's issue yields nothing"
    );

    // By id prefix, in the hyphenated lowercase form (`muster run show 01a2…`): exactly the runs whose id
    // starts with it, newest first (ids are time-ordered UUIDv7, so short prefixes are shared).
    let by_prefix = |prefix: String| RunFilter {
        id_prefix: Some(prefix),
        ..RunFilter::default()
    };
    let text = made[1].to_string();
    for len in [1, 8, 13, 24, 36] {
        let prefix = &text[..len];
        let expected: Vec<RunId> = newest_first
            .iter()
            .copied()
            .filter(|id| id.to_string().starts_with(prefix))
            .collect();
        assert!(expected.contains(&made[1]));
        assert_eq!(
            ids(store
                .list_runs(f.ws.id, &by_prefix(prefix.to_owned()))
                .await
                .unwrap()),
            expected,
            "runs starting with {prefix}"
        );
    }
    assert_eq!(
        ids(store
            .list_runs(f.ws.id, &by_prefix(text.clone()))
            .await
            .unwrap()),
        vec![made[1]],
        "a whole id is one run"
    );
    // UUIDv7 ids start with 0 until the year 2527.
    assert!(
        store
            .list_runs(f.ws.id, &by_prefix("f".to_owned()))
            .await
            .unwrap()
            .is_empty(),
        "a prefix no run has matches nothing"
    );
    assert!(
        store
            .list_runs(f.ws.id, &by_prefix(o_run.id.to_string()))
            .await
            .unwrap()
            .is_empty(),
        "another workspace's run is not found by its id"
    );
}

/// A run's token works only while the run is claimed or running, and `revoke_run_tokens` revokes it (and
/// no other token) for good.
async fn run_tokens_live_with_their_run(store: Arc<dyn Store>) {
    let f = fixture(&store, "team", "MUS").await;
    let coder = agent(&store, f.ws.id, "coder", 1).await;
    let i = issue(&store, f.ws.id, "Token", IssueStatus::Todo).await;
    let r = runner(&store, "embedded").await;
    let run = store
        .create_run(&NewRun::assignment(f.ws.id, i.id, coder.id))
        .await
        .unwrap();
    let token = |name: &str, hash: &str, run_id: Option<RunId>| NewApiToken {
        workspace_id: f.ws.id,
        user_id: f.owner.id,
        name: name.to_owned(),
        prefix: "mst_0000".to_owned(),
        token_hash: hash.to_owned(),
        run_id,
    };
    store
        .create_api_token(&token("run", "hash-run", Some(run.id)))
        .await
        .unwrap();
    store
        .create_api_token(&token("person", "hash-person", None))
        .await
        .unwrap();
    let now = Utc::now();
    assert_not_found(store.use_api_token("hash-run", now).await);
    store
        .claim_next_run(r.id, &any(), now, now + TimeDelta::seconds(20))
        .await
        .unwrap()
        .unwrap();
    let used = store.use_api_token("hash-run", now).await.unwrap();
    assert_eq!(used.run_id, Some(run.id));
    assert!(
        store
            .list_api_tokens(f.ws.id, f.owner.id)
            .await
            .unwrap()
            .iter()
            .all(|t| t.run_id.is_none()),
        "run tokens are not listed as a person's"
    );
    assert_eq!(store.revoke_run_tokens(run.id).await.unwrap(), ["hash-run"]);
    assert!(
        store.revoke_run_tokens(run.id).await.unwrap().is_empty(),
        "already revoked"
    );
    assert_not_found(store.use_api_token("hash-run", now).await);
    store.use_api_token("hash-person", now).await.unwrap();

    // A token of a run that ended without revoking it (a crash) is dead too.
    let j = issue(&store, f.ws.id, "Crash", IssueStatus::Todo).await;
    let crashed = store
        .create_run(&NewRun::assignment(f.ws.id, j.id, coder.id))
        .await
        .unwrap();
    store
        .create_api_token(&token("crashed", "hash-crashed", Some(crashed.id)))
        .await
        .unwrap();
    store
        .finish_run(run.id, &bare_outcome(RunStatus::Cancelled))
        .await
        .unwrap();
    store
        .claim_next_run(r.id, &any(), now, now + TimeDelta::seconds(20))
        .await
        .unwrap()
        .unwrap();
    store.use_api_token("hash-crashed", now).await.unwrap();
    store
        .finish_run(crashed.id, &bare_outcome(RunStatus::Cancelled))
        .await
        .unwrap();
    assert_not_found(store.use_api_token("hash-crashed", now).await);
}

/// `list_live_runs_of_runner` returns the claimed and running runs of that runner only, oldest first.
async fn a_runner_finds_the_runs_it_left(store: Arc<dyn Store>) {
    let f = fixture(&store, "team", "MUS").await;
    let r1 = runner(&store, "one").await;
    let r2 = runner(&store, "two").await;
    let now = Utc::now();
    let lease = now + TimeDelta::seconds(20);
    let mut mine = Vec::new();
    for n in 0..4 {
        let a = agent(&store, f.ws.id, &format!("agent-{n}"), 1).await;
        let i = issue(&store, f.ws.id, &format!("Issue {n}"), IssueStatus::Todo).await;
        store
            .create_run(&NewRun::assignment(f.ws.id, i.id, a.id))
            .await
            .unwrap();
        let claimer = if n == 2 { r2.id } else { r1.id };
        let run = store
            .claim_next_run(claimer, &any(), now, lease)
            .await
            .unwrap()
            .unwrap();
        if n == 1 {
            store
                .start_run(
                    run.id,
                    r1.id,
                    run.lease_epoch,
                    Some(42),
                    Some("/tmp/w"),
                    Some("muster/MUS-2-r1"),
                )
                .await
                .unwrap();
        }
        if n == 3 {
            store
                .finish_run(run.id, &bare_outcome(RunStatus::Cancelled))
                .await
                .unwrap();
        }
        if claimer == r1.id && n != 3 {
            mine.push(run.id);
        }
    }
    let left = store.list_live_runs_of_runner(r1.id).await.unwrap();
    assert_eq!(left.iter().map(|r| r.id).collect::<Vec<_>>(), mine);
    assert_eq!(left[1].status, RunStatus::Running);
    assert_eq!(left[1].pid, Some(42));
    assert_eq!(
        store.list_live_runs_of_runner(r2.id).await.unwrap().len(),
        1
    );
    assert!(
        store
            .list_live_runs_of_runner(RunnerId::new())
            .await
            .unwrap()
            .is_empty()
    );
}

/// Postgres: a notification reaches every listener, in order. SQLite: nothing to listen to (one process),
/// and notifying is a harmless no-op.
async fn notifications_reach_listeners(store: Arc<dyn Store>) {
    let listened = store.listen().await.unwrap();
    let Some(mut notes) = listened else {
        assert_eq!(store.backend(), muster::store::Backend::Sqlite);
        store.notify("x run-queued 1").await.unwrap();
        return;
    };
    let mut second = store.listen().await.unwrap().unwrap();
    store.notify("a run-queued 1").await.unwrap();
    store.notify("a run-queued 2").await.unwrap();
    for rx in [&mut notes, &mut second] {
        for want in ["a run-queued 1", "a run-queued 2"] {
            let got = tokio::time::timeout(std::time::Duration::from_secs(10), rx.recv()).await;
            assert_eq!(got.unwrap().as_deref(), Some(want));
        }
    }
}

/// A queued run that an open transaction references (the note on a just-queued plan run, an inbox item,
/// a follow-up's answered comments: each insert holds a key-share lock on the run until it commits) is
/// still claimed: the claim's row lock does not conflict with it. With `for update skip locked` the claim
/// passed over such a run, which then waited for the idle tick. PostgreSQL only: SQLite has no row locks.
#[tokio::test]
#[ignore = "needs PostgreSQL (MUSTER_TEST_PG_URL); run with --include-ignored"]
async fn a_run_referenced_by_an_open_transaction_is_still_claimed() {
    let Some(db) = muster_tests::TestDb::new(muster_tests::Backend::Postgres).await else {
        return;
    };
    let store = db.store().await;
    let f = fixture(&store, "team", "ACM").await;
    let coder = agent(&store, f.ws.id, "coder", 1).await;
    let i = issue(&store, f.ws.id, "Fix it", IssueStatus::Todo).await;
    let run = store
        .create_run(&NewRun::assignment(f.ws.id, i.id, coder.id))
        .await
        .unwrap();
    let muster::store::DatabaseUrl::Postgres(url) = &db.url else {
        unreachable!("a PostgreSQL test database")
    };
    let lock = muster::store::testing::key_share_lock_on_run(url, run.id)
        .await
        .unwrap();
    let claimed =
        muster_tests::engine::claim_next(store.as_ref(), "runner-1", chrono::TimeDelta::minutes(5))
            .await;
    assert_eq!(
        claimed.map(|r| r.id),
        Some(run.id),
        "claimed while referenced"
    );
    drop(lock);
}
