//! Runner tokens, the runner registry, claim scopes, lease epochs and the queue a runner waits on.

use std::sync::Arc;

use chrono::{DateTime, TimeDelta, Utc};
use muster::domain::*;
use muster::store::{ClaimScope, LeasedEvents, Store};
use serde_json::json;

use super::{agent, assert_conflict, assert_not_found, fixture, issue, store_cases};
use muster_tests::engine::bare_outcome;

store_cases!(
    runner_tokens_are_scoped_and_revocable,
    remote_runners_keep_their_identity,
    claims_stay_within_their_scope,
    stale_lease_epochs_write_nothing,
    one_group_commit_stores_several_runs,
    one_heartbeat_renews_every_lease_still_held,
    queued_runs_are_listed_oldest_first,
    agents_keep_their_runner_binding,
);

fn new_token(ws: WorkspaceId, by: UserId, name: &str, hash: &str) -> NewRunnerToken {
    NewRunnerToken {
        workspace_id: ws,
        name: name.to_owned(),
        prefix: format!("mrt_{}", &hash[..4]),
        token_hash: hash.to_owned(),
        created_by: by,
    }
}

/// A whole second in 2020 (before any `now()` of the store): exact on both backends.
fn at(seconds: i64) -> DateTime<Utc> {
    let t = DateTime::from_timestamp(1_600_000_000 + seconds, 0).unwrap();
    assert_eq!(t.timestamp_subsec_micros(), 0);
    t
}

fn outcome(status: RunStatus) -> RunOutcome {
    RunOutcome {
        exit_code: Some(0),
        summary: Some("done".into()),
        ..bare_outcome(status)
    }
}

fn event(seq: i64, text: &str) -> NewRunEvent {
    NewRunEvent {
        seq,
        at: Utc::now(),
        kind: "text".into(),
        payload: json!({ "text": text }),
    }
}

async fn runner_tokens_are_scoped_and_revocable(store: Arc<dyn Store>) {
    let f = fixture(&store, "team", "MUS").await;
    let other = fixture(&store, "other", "OTH").await;
    let first = store
        .create_runner_token(&new_token(f.ws.id, f.owner.id, "gpu box", "hash-gpu"))
        .await
        .unwrap();
    assert_eq!(
        (
            first.workspace_id,
            first.name.as_str(),
            first.prefix.as_str(),
            first.created_by
        ),
        (f.ws.id, "gpu box", "mrt_hash", Some(f.owner.id))
    );
    assert_eq!((first.last_used_at, first.revoked_at), (None, None));
    let second = store
        .create_runner_token(&new_token(f.ws.id, f.owner.id, "mac", "hash-mac"))
        .await
        .unwrap();
    let theirs = store
        .create_runner_token(&new_token(
            other.ws.id,
            other.owner.id,
            "theirs",
            "hash-theirs",
        ))
        .await
        .unwrap();
    assert_conflict(
        store
            .create_runner_token(&new_token(f.ws.id, f.owner.id, "again", "hash-gpu"))
            .await,
        "runner_token_token_hash_key",
    );

    let ids = |tokens: Vec<RunnerToken>| tokens.into_iter().map(|t| t.id).collect::<Vec<_>>();
    assert_eq!(
        ids(store.list_runner_tokens(f.ws.id).await.unwrap()),
        vec![second.id, first.id],
        "newest first, only this workspace's"
    );

    let used = store.use_runner_token("hash-gpu", at(10)).await.unwrap();
    assert_eq!((used.id, used.last_used_at), (first.id, Some(at(10))));
    let used = store.use_runner_token("hash-gpu", at(20)).await.unwrap();
    assert_eq!(used.last_used_at, Some(at(20)), "every use is noted");
    assert_not_found(store.use_runner_token("hash-unknown", at(20)).await);

    assert_not_found(store.revoke_runner_token(f.ws.id, theirs.id, at(30)).await);
    assert_not_found(
        store
            .revoke_runner_token(f.ws.id, RunnerTokenId::new(), at(30))
            .await,
    );
    let revoked = store
        .revoke_runner_token(f.ws.id, first.id, at(30))
        .await
        .unwrap();
    assert_eq!(revoked.revoked_at, Some(at(30)));
    assert!(revoked.is_revoked());
    let again = store
        .revoke_runner_token(f.ws.id, first.id, at(40))
        .await
        .unwrap();
    assert_eq!(again.revoked_at, Some(at(30)), "the first revocation stays");
    assert_not_found(store.use_runner_token("hash-gpu", at(50)).await);
    store.use_runner_token("hash-mac", at(50)).await.unwrap();
    store.use_runner_token("hash-theirs", at(50)).await.unwrap();

    let listed = store.list_runner_tokens(f.ws.id).await.unwrap();
    assert_eq!(
        listed
            .iter()
            .map(|t| (t.id, t.revoked_at))
            .collect::<Vec<_>>(),
        vec![(second.id, None), (first.id, Some(at(30)))],
        "revoked tokens are listed, flagged"
    );
    assert_eq!(listed[0].last_used_at, Some(at(50)));
}

async fn remote_runners_keep_their_identity(store: Arc<dyn Store>) {
    let f = fixture(&store, "team", "MUS").await;
    let other = fixture(&store, "other", "OTH").await;
    let t1 = store
        .create_runner_token(&new_token(f.ws.id, f.owner.id, "one", "hash-one"))
        .await
        .unwrap();
    let t2 = store
        .create_runner_token(&new_token(f.ws.id, f.owner.id, "two", "hash-two"))
        .await
        .unwrap();
    let t3 = store
        .create_runner_token(&new_token(other.ws.id, other.owner.id, "three", "hash-3"))
        .await
        .unwrap();
    let gpu = RunnerName::parse("gpu").unwrap();
    let detected = json!([{ "kind": "codex", "version": "0.50.0" }]);

    let embedded = store
        .register_runner("embedded-0a1b2c3d4e5f", "1.0.0", &json!([]))
        .await
        .unwrap();
    assert_eq!(
        (embedded.workspace_id, embedded.token_id, embedded.revoked),
        (None, None, false)
    );
    let remote = store
        .register_remote_runner(&t1, &gpu, "1.0.0", &detected, at(10))
        .await
        .unwrap();
    assert_eq!(
        (
            remote.name.as_str(),
            remote.workspace_id,
            remote.token_id,
            remote.revoked
        ),
        ("gpu", Some(f.ws.id), Some(t1.id), false)
    );
    assert_eq!(
        (
            &remote.detected,
            remote.last_heartbeat_at,
            remote.created_at
        ),
        (&detected, at(10), at(10))
    );
    assert_eq!(store.get_runner(remote.id).await.unwrap(), remote);
    assert_not_found(store.get_runner(RunnerId::new()).await);

    // A runner holding a run reconnects: same id, refreshed version, CLIs and heartbeat; the run is still its.
    let coder = agent(&store, f.ws.id, "coder", 1).await;
    let i = issue(&store, f.ws.id, "Held", IssueStatus::Todo).await;
    store
        .create_run(&NewRun::assignment(f.ws.id, i.id, coder.id))
        .await
        .unwrap();
    let scope = ClaimScope {
        workspace: Some(f.ws.id),
        kinds: None,
        runner_name: "gpu".into(),
    };
    let held = store
        .claim_next_run(
            remote.id,
            &scope,
            Utc::now(),
            Utc::now() + TimeDelta::seconds(20),
        )
        .await
        .unwrap()
        .expect("a queued run");
    let again = store
        .register_remote_runner(&t1, &gpu, "1.1.0", &json!([]), at(20))
        .await
        .unwrap();
    assert_eq!(again.id, remote.id, "same token and name: same runner");
    assert_eq!(
        (
            again.version.as_str(),
            &again.detected,
            again.last_heartbeat_at,
            again.created_at
        ),
        ("1.1.0", &json!([]), at(20), at(10))
    );
    assert_eq!(
        store
            .list_live_runs_of_runner(again.id)
            .await
            .unwrap()
            .iter()
            .map(|r| r.id)
            .collect::<Vec<_>>(),
        vec![held.id]
    );

    // The same name under another token (of this workspace or another) is another runner; so is an
    // embedded runner's name taken by a remote one.
    let twin = store
        .register_remote_runner(&t2, &gpu, "1.0.0", &detected, at(30))
        .await
        .unwrap();
    let foreign = store
        .register_remote_runner(&t3, &gpu, "1.0.0", &detected, at(40))
        .await
        .unwrap();
    let named_like_embedded = store
        .register_remote_runner(
            &t2,
            &RunnerName::parse("embedded-0a1b2c3d4e5f").unwrap(),
            "1.0.0",
            &detected,
            at(5),
        )
        .await
        .unwrap();
    let distinct: std::collections::HashSet<_> = [
        remote.id,
        twin.id,
        foreign.id,
        named_like_embedded.id,
        embedded.id,
    ]
    .into_iter()
    .collect();
    assert_eq!(distinct.len(), 5);
    assert_eq!(foreign.workspace_id, Some(other.ws.id));

    // Heartbeats order the list; a workspace sees its own remote runners and the embedded ones.
    store.runner_heartbeat(twin.id, at(50)).await.unwrap();
    assert_eq!(
        store.get_runner(twin.id).await.unwrap().last_heartbeat_at,
        at(50)
    );
    assert_not_found(store.runner_heartbeat(RunnerId::new(), at(50)).await);
    let listed: Vec<RunnerId> = store
        .list_runners(f.ws.id)
        .await
        .unwrap()
        .into_iter()
        .map(|r| r.id)
        .collect();
    // The embedded runner's heartbeat is now, after every fixed time above.
    assert_eq!(
        listed,
        vec![embedded.id, twin.id, remote.id, named_like_embedded.id]
    );
    assert_eq!(
        store
            .list_runners(other.ws.id)
            .await
            .unwrap()
            .iter()
            .map(|r| r.id)
            .collect::<Vec<_>>(),
        vec![embedded.id, foreign.id]
    );

    // A revoked token: its runners show as revoked, and it registers nothing more.
    store
        .revoke_runner_token(f.ws.id, t1.id, at(60))
        .await
        .unwrap();
    assert!(store.get_runner(remote.id).await.unwrap().revoked);
    assert!(!store.get_runner(twin.id).await.unwrap().revoked);
    assert_not_found(
        store
            .register_remote_runner(&t1, &gpu, "1.2.0", &detected, at(70))
            .await,
    );
    assert_not_found(
        store
            .register_remote_runner(
                &t1,
                &RunnerName::parse("new-name").unwrap(),
                "1.2.0",
                &detected,
                at(70),
            )
            .await,
    );
    assert_eq!(
        store.get_runner(remote.id).await.unwrap().version,
        "1.1.0",
        "a refused registration changes nothing"
    );
}

async fn claims_stay_within_their_scope(store: Arc<dyn Store>) {
    let f = fixture(&store, "team", "MUS").await;
    let other = fixture(&store, "other", "OTH").await;
    let claude = agent(&store, f.ws.id, "claude-any", 4).await;
    let mut codex = NewAgent::new(AgentName::parse("codex-any").unwrap(), RuntimeKind::Codex);
    codex.max_concurrent_runs = 4;
    let codex = store.create_agent(f.ws.id, &codex).await.unwrap();
    let mut bound = NewAgent::new(
        AgentName::parse("claude-bound").unwrap(),
        RuntimeKind::Claude,
    );
    bound.max_concurrent_runs = 4;
    bound.runners = vec!["gpu".into(), "big-box".into()];
    let bound = store.create_agent(f.ws.id, &bound).await.unwrap();
    let theirs = agent(&store, other.ws.id, "claude-any", 4).await;
    // Oldest first: the bound run, the other workspace's, the codex run, the unbound claude run.
    let i = issue(&store, f.ws.id, "Work", IssueStatus::Todo).await;
    let j = issue(&store, other.ws.id, "Theirs", IssueStatus::Todo).await;
    let bound_run = store
        .create_run(&NewRun::assignment(f.ws.id, i.id, bound.id))
        .await
        .unwrap();
    let their_run = store
        .create_run(&NewRun::assignment(other.ws.id, j.id, theirs.id))
        .await
        .unwrap();
    let codex_run = store
        .create_run(&NewRun::assignment(f.ws.id, i.id, codex.id))
        .await
        .unwrap();
    let claude_run = store
        .create_run(&NewRun::assignment(f.ws.id, i.id, claude.id))
        .await
        .unwrap();

    let r = store
        .register_runner("embedded-scope", "1.0.0", &json!([]))
        .await
        .unwrap();
    let (rid, now, lease) = (r.id, Utc::now(), Utc::now() + TimeDelta::seconds(20));
    let scope = |kinds: Option<Vec<RuntimeKind>>, name: &str| ClaimScope {
        workspace: Some(f.ws.id),
        kinds,
        runner_name: name.to_owned(),
    };
    let claim = |scope: ClaimScope| {
        let store = store.clone();
        async move {
            store
                .claim_next_run(rid, &scope, now, lease)
                .await
                .unwrap()
                .map(|run| run.id)
        }
    };
    assert_eq!(claim(scope(Some(vec![]), "gpu")).await, None, "no CLIs");
    assert_eq!(
        claim(scope(Some(vec![RuntimeKind::Opencode]), "gpu")).await,
        None
    );
    assert_eq!(
        claim(scope(
            Some(vec![RuntimeKind::Codex, RuntimeKind::Llama]),
            "mac"
        ))
        .await,
        Some(codex_run.id),
        "only its kinds, and not the older run bound elsewhere"
    );
    assert_eq!(
        claim(scope(Some(vec![RuntimeKind::Claude]), "mac")).await,
        Some(claude_run.id),
        "an unbound agent goes to any runner; a bound one only to its own"
    );
    assert_eq!(claim(scope(None, "mac")).await, None);
    assert_eq!(
        claim(scope(Some(vec![RuntimeKind::Claude]), "big-box")).await,
        Some(bound_run.id),
        "a runner the agent lists"
    );
    assert_eq!(
        claim(scope(None, "gpu")).await,
        None,
        "this workspace has nothing left"
    );
    assert_eq!(
        claim(ClaimScope::anything("gpu")).await,
        Some(their_run.id),
        "an embedded runner serves every workspace"
    );
}

async fn stale_lease_epochs_write_nothing(store: Arc<dyn Store>) {
    let f = fixture(&store, "team", "MUS").await;
    let coder = agent(&store, f.ws.id, "coder", 1).await;
    let i = issue(&store, f.ws.id, "Lease", IssueStatus::Todo).await;
    let r1 = store
        .register_runner("embedded-one", "1.0.0", &json!([]))
        .await
        .unwrap();
    let r2 = store
        .register_runner("embedded-two", "1.0.0", &json!([]))
        .await
        .unwrap();
    let run = store
        .create_run(&NewRun::assignment(f.ws.id, i.id, coder.id))
        .await
        .unwrap();
    assert_eq!(run.lease_epoch, 0);
    // Nothing holds a queued run: no epoch writes to it.
    assert_conflict(
        store
            .append_leased_run_events(run.id, 0, &[event(1, "x")])
            .await,
        "run_lease",
    );
    assert_conflict(
        store
            .finish_leased_run(run.id, 0, &outcome(RunStatus::Succeeded))
            .await,
        "run_lease",
    );

    let (now, lease) = (Utc::now(), Utc::now() + TimeDelta::seconds(20));
    let scope = ClaimScope::anything("any");
    let first = store
        .claim_next_run(r1.id, &scope, now, lease)
        .await
        .unwrap()
        .expect("the queued run");
    assert_eq!(first.lease_epoch, 1);
    assert_conflict(store.release_run(run.id, r1.id, 2).await, "run_lease");
    assert_conflict(store.release_run(run.id, r2.id, 1).await, "run_lease");
    let released = store.release_run(run.id, r1.id, 1).await.unwrap();
    assert_eq!(
        (
            released.status,
            released.runner_id,
            released.lease_expires_at,
            released.started_at,
            released.lease_epoch
        ),
        (RunStatus::Queued, None, None, None, 1)
    );
    let second = store
        .claim_next_run(r2.id, &scope, now, lease)
        .await
        .unwrap()
        .expect("the re-queued run");
    assert_eq!(
        (second.id, second.lease_epoch, second.runner_id),
        (run.id, 2, Some(r2.id)),
        "a second claim gets a higher epoch"
    );

    // The first holder, at its old epoch, can do nothing; neither can another runner at the new one.
    assert_conflict(
        store.renew_lease(run.id, r1.id, 1, lease).await,
        "run_lease",
    );
    assert_conflict(
        store.renew_lease(run.id, r1.id, 2, lease).await,
        "run_lease",
    );
    assert_conflict(
        store.renew_lease(run.id, r2.id, 1, lease).await,
        "run_lease",
    );
    assert_conflict(
        store.start_run(run.id, r1.id, 1, Some(7), None, None).await,
        "run_lease",
    );
    assert_conflict(
        store.start_run(run.id, r2.id, 1, Some(7), None, None).await,
        "run_lease",
    );
    assert_conflict(
        store
            .append_leased_run_events(run.id, 1, &[event(1, "stale")])
            .await,
        "run_lease",
    );
    assert_conflict(
        store
            .finish_leased_run(run.id, 1, &outcome(RunStatus::Failed))
            .await,
        "run_lease",
    );
    let unchanged = store.get_run(run.id).await.unwrap();
    assert_eq!(
        (unchanged.status, unchanged.pid, unchanged.lease_epoch),
        (RunStatus::Claimed, None, 2)
    );
    assert!(
        store
            .run_events_since(run.id, 0, 10)
            .await
            .unwrap()
            .is_empty(),
        "a refused append writes nothing"
    );

    // The holder at the current epoch: events (idempotently), start, renew, finish.
    let batch: Vec<_> = (1..=3).map(|n| event(n, &format!("line {n}"))).collect();
    assert_eq!(
        store
            .append_leased_run_events(run.id, 2, &batch)
            .await
            .unwrap(),
        3
    );
    assert_eq!(
        store
            .append_leased_run_events(run.id, 2, &[event(2, "changed")])
            .await
            .unwrap(),
        3,
        "a resend of older events still returns the highest seq"
    );
    assert_eq!(
        store
            .append_leased_run_events(run.id, 2, &[])
            .await
            .unwrap(),
        3
    );
    let running = store
        .start_run(run.id, r2.id, 2, Some(4242), Some("/tmp/wt"), None)
        .await
        .unwrap();
    assert_eq!(
        (running.status, running.lease_epoch),
        (RunStatus::Running, 2)
    );
    assert_conflict(store.release_run(run.id, r2.id, 2).await, "run_lease");
    store
        .renew_lease(run.id, r2.id, 2, lease + TimeDelta::seconds(5))
        .await
        .unwrap();
    assert_eq!(
        store
            .append_leased_run_events(run.id, 2, &[event(3, "again"), event(4, "line 4")])
            .await
            .unwrap(),
        4
    );
    let events = store.run_events_since(run.id, 0, 10).await.unwrap();
    assert_eq!(
        events
            .iter()
            .map(|e| (e.seq, e.payload["text"].as_str().unwrap()))
            .collect::<Vec<_>>(),
        [(1, "line 1"), (2, "line 2"), (3, "line 3"), (4, "line 4")]
    );
    assert!(
        store
            .append_leased_run_events(run.id, 2, &[event(0, "x")])
            .await
            .is_err(),
        "seq starts at 1"
    );
    assert!(
        store
            .finish_leased_run(run.id, 2, &outcome(RunStatus::Running))
            .await
            .is_err(),
        "a final status is needed"
    );
    let done = store
        .finish_leased_run(run.id, 2, &outcome(RunStatus::Succeeded))
        .await
        .unwrap();
    assert_eq!(
        (done.status, done.summary.as_deref(), done.lease_expires_at),
        (RunStatus::Succeeded, Some("done"), None)
    );
    assert!(done.finished_at.is_some());

    // A finished run takes nothing more, at any epoch.
    assert_conflict(
        store
            .finish_leased_run(run.id, 2, &outcome(RunStatus::Failed))
            .await,
        "run_lease",
    );
    assert_conflict(
        store
            .append_leased_run_events(run.id, 2, &[event(5, "late")])
            .await,
        "run_lease",
    );
    assert_eq!(
        store.run_events_since(run.id, 0, 10).await.unwrap().len(),
        4
    );
    assert_eq!(
        store.get_run(run.id).await.unwrap().status,
        RunStatus::Succeeded
    );
    assert_not_found(
        store
            .finish_leased_run(RunId::new(), 1, &outcome(RunStatus::Failed))
            .await,
    );
    assert_not_found(
        store
            .append_leased_run_events(RunId::new(), 1, &[event(1, "x")])
            .await,
    );
}

/// A new issue with a run of `agent` on it, claimed by `runner` until `lease`.
async fn claimed_run(
    store: &Arc<dyn Store>,
    ws: WorkspaceId,
    agent: AgentId,
    runner: RunnerId,
    title: &str,
    lease: DateTime<Utc>,
) -> Run {
    let i = issue(store, ws, title, IssueStatus::Todo).await;
    store
        .create_run(&NewRun::assignment(ws, i.id, agent))
        .await
        .unwrap();
    store
        .claim_next_run(runner, &ClaimScope::anything("any"), Utc::now(), lease)
        .await
        .unwrap()
        .expect("a queued run")
}

/// The runner session's group commit: several runs' events in one call, each checked against its own
/// lease; a run not live under its epoch is refused without costing the others their events.
async fn one_group_commit_stores_several_runs(store: Arc<dyn Store>) {
    let f = fixture(&store, "team", "MUS").await;
    let coder = agent(&store, f.ws.id, "coder", 3).await;
    let runner = store
        .register_runner("embedded-group", "1.0.0", &json!([]))
        .await
        .unwrap();
    let lease = Utc::now() + TimeDelta::seconds(20);
    let mut held = Vec::new();
    for title in ["One", "Two", "Three"] {
        held.push(claimed_run(&store, f.ws.id, coder.id, runner.id, title, lease).await);
    }
    let (a, b, c) = (&held[0], &held[1], &held[2]);
    store
        .append_leased_run_events(b.id, b.lease_epoch, &[event(1, "b1"), event(2, "b2")])
        .await
        .unwrap();
    let a_events: Vec<_> = (1..=300).map(|n| event(n, &format!("a{n}"))).collect();
    let b_events = [event(2, "b2 again"), event(3, "b3")];
    let c_events = [event(1, "c1")];
    let unknown = RunId::new();
    let outcomes = store
        .append_leased_events(&[
            LeasedEvents {
                run: a.id,
                epoch: a.lease_epoch,
                events: &a_events,
            },
            LeasedEvents {
                run: b.id,
                epoch: b.lease_epoch,
                events: &b_events,
            },
            LeasedEvents {
                run: c.id,
                epoch: c.lease_epoch + 1,
                events: &c_events,
            },
            LeasedEvents {
                run: unknown,
                epoch: 1,
                events: &c_events,
            },
        ])
        .await
        .unwrap();
    assert_eq!(outcomes.len(), 4);
    let mut outcomes = outcomes.into_iter();
    let mut next = || outcomes.next().unwrap();
    assert_eq!(next().unwrap(), 300, "more rows than one insert chunk");
    assert_eq!(next().unwrap(), 3, "a resent event is ignored");
    assert_conflict(next(), "run_lease");
    assert_not_found(next());
    let texts = |events: Vec<RunEvent>| {
        events
            .iter()
            .map(|e| e.payload["text"].as_str().unwrap().to_owned())
            .collect::<Vec<_>>()
    };
    let stored_a = store.run_events_since(a.id, 0, 1000).await.unwrap();
    assert_eq!(
        texts(stored_a.clone()),
        a_events
            .iter()
            .map(|e| e.payload["text"].as_str().unwrap().to_owned())
            .collect::<Vec<_>>()
    );
    assert_eq!(
        stored_a[299].at.timestamp_micros(),
        a_events[299].at.timestamp_micros()
    );
    assert_eq!(
        texts(store.run_events_since(b.id, 0, 10).await.unwrap()),
        ["b1", "b2", "b3"]
    );
    assert!(
        store
            .run_events_since(c.id, 0, 10)
            .await
            .unwrap()
            .is_empty(),
        "the refused run got nothing"
    );
    assert!(store.append_leased_events(&[]).await.unwrap().is_empty());
    assert!(
        store
            .append_leased_events(&[LeasedEvents {
                run: c.id,
                epoch: c.lease_epoch,
                events: &[event(0, "x")]
            }])
            .await
            .is_err(),
        "seq starts at 1"
    );
}

async fn queued_runs_are_listed_oldest_first(store: Arc<dyn Store>) {
    let f = fixture(&store, "team", "MUS").await;
    let other = fixture(&store, "other", "OTH").await;
    let coder = agent(&store, f.ws.id, "coder", 1).await;
    let tester = agent(&store, f.ws.id, "tester", 1).await;
    let i = issue(&store, f.ws.id, "One", IssueStatus::Todo).await;
    let j = issue(&store, f.ws.id, "Two", IssueStatus::Todo).await;
    let mut made = Vec::new();
    for (issue, agent) in [(&i, &coder), (&i, &tester), (&j, &coder), (&j, &tester)] {
        made.push(
            store
                .create_run(&NewRun::assignment(f.ws.id, issue.id, agent.id))
                .await
                .unwrap()
                .id,
        );
    }
    let theirs = agent(&store, other.ws.id, "coder", 1).await;
    let k = issue(&store, other.ws.id, "Theirs", IssueStatus::Todo).await;
    store
        .create_run(&NewRun::assignment(other.ws.id, k.id, theirs.id))
        .await
        .unwrap();
    // One claimed (coder's oldest), one cancelled: neither waits any more.
    let r = store
        .register_runner("embedded-queue", "1.0.0", &json!([]))
        .await
        .unwrap();
    let scope = ClaimScope {
        workspace: Some(f.ws.id),
        kinds: None,
        runner_name: r.name.clone(),
    };
    let claimed = store
        .claim_next_run(
            r.id,
            &scope,
            Utc::now(),
            Utc::now() + TimeDelta::seconds(20),
        )
        .await
        .unwrap()
        .unwrap();
    assert_eq!(claimed.id, made[0]);
    store
        .finish_run(made[3], &outcome(RunStatus::Cancelled))
        .await
        .unwrap();
    let waiting: Vec<_> = store
        .list_queued_runs(f.ws.id)
        .await
        .unwrap()
        .into_iter()
        .map(|run| (run.id, run.status))
        .collect();
    assert_eq!(
        waiting,
        vec![(made[1], RunStatus::Queued), (made[2], RunStatus::Queued)],
        "oldest first, queued only, this workspace only"
    );
    assert!(
        store
            .list_queued_runs(WorkspaceId::new())
            .await
            .unwrap()
            .is_empty()
    );
}

async fn agents_keep_their_runner_binding(store: Arc<dyn Store>) {
    let f = fixture(&store, "team", "MUS").await;
    let plain = agent(&store, f.ws.id, "plain", 1).await;
    assert!(plain.profile.runners.is_empty(), "any runner by default");
    let mut new = NewAgent::new(AgentName::parse("bound").unwrap(), RuntimeKind::Codex);
    new.runners = vec!["gpu".into(), "mac.local".into()];
    let bound = store.create_agent(f.ws.id, &new).await.unwrap();
    assert_eq!(bound.profile, new);
    assert_eq!(
        store
            .get_agent(f.ws.id, bound.id)
            .await
            .unwrap()
            .profile
            .runners,
        ["gpu", "mac.local"]
    );
    let mut changed = new.clone();
    changed.runners = vec!["build_2".into()];
    changed.model = Some("gpt-5".into());
    let updated = store
        .update_agent(f.ws.id, bound.id, &changed)
        .await
        .unwrap();
    assert_eq!(updated.profile, changed);
    changed.runners.clear();
    store
        .update_agent(f.ws.id, bound.id, &changed)
        .await
        .unwrap();
    let listed = store.list_agents(f.ws.id).await.unwrap();
    assert_eq!(
        listed
            .iter()
            .map(|a| (a.profile.name.as_str(), a.profile.runners.len()))
            .collect::<Vec<_>>(),
        [("bound", 0), ("plain", 0)]
    );
}

async fn one_heartbeat_renews_every_lease_still_held(store: Arc<dyn Store>) {
    let f = fixture(&store, "team", "MUS").await;
    let coder = agent(&store, f.ws.id, "coder", 8).await;
    let mine = store
        .register_runner("heartbeat-mine", "1.0.0", &json!([]))
        .await
        .unwrap();
    let theirs = store
        .register_runner("heartbeat-theirs", "1.0.0", &json!([]))
        .await
        .unwrap();
    let lease = Utc::now() + TimeDelta::seconds(20);
    let mut runs = Vec::new();
    for (n, runner) in [mine.id, mine.id, mine.id, theirs.id]
        .into_iter()
        .enumerate()
    {
        let title = format!("Run {n}");
        runs.push(claimed_run(&store, f.ws.id, coder.id, runner, &title, lease).await);
    }
    let (kept, ended, stale, other) = (&runs[0], &runs[1], &runs[2], &runs[3]);
    store
        .finish_leased_run(ended.id, ended.lease_epoch, &outcome(RunStatus::Failed))
        .await
        .unwrap();
    let later = lease + TimeDelta::seconds(30);
    let unknown = RunId::new();
    let lost = store
        .renew_leases(
            mine.id,
            &[
                (kept.id, kept.lease_epoch),
                (ended.id, ended.lease_epoch),
                (stale.id, stale.lease_epoch + 1),
                (other.id, other.lease_epoch),
                (unknown, 1),
            ],
            later,
        )
        .await
        .unwrap();
    assert_eq!(
        lost,
        vec![ended.id, stale.id, other.id, unknown],
        "every run not held by this runner at that epoch is reported lost, in the order given"
    );
    let lease_of = |run: Run| run.lease_expires_at.map(|t| t.timestamp_millis());
    assert_eq!(
        lease_of(store.get_run(kept.id).await.unwrap()),
        Some(later.timestamp_millis()),
        "the lease still held is renewed"
    );
    for (run, why) in [(stale, "a stale epoch"), (other, "another runner's run")] {
        assert_eq!(
            lease_of(store.get_run(run.id).await.unwrap()),
            Some(lease.timestamp_millis()),
            "{why} keeps its lease"
        );
    }
    assert!(
        store
            .renew_leases(mine.id, &[], later)
            .await
            .unwrap()
            .is_empty(),
        "nothing to renew is no error"
    );
}
