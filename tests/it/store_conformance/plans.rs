//! Planning: relations between issues (and the cycles refused), the sub-issue tree, fan-in, and the
//! run claim holding a blocked issue's runs — including a property run over a thousand random DAGs
//! completed in random orders.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use chrono::{TimeDelta, Utc};
use muster::domain::*;
use muster::store::{ClaimScope, Store};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use super::{agent, assert_conflict, assert_not_found, fixture, issue, store_cases};

store_cases!(
    relations_read_from_both_ends_and_refuse_duplicates,
    a_blocks_cycle_is_refused_with_the_cycle_named,
    parents_refuse_cycles_and_count_their_children,
    fan_in_is_taken_once_per_completion_of_the_children,
    a_blocked_issues_run_is_claimed_only_once_its_blockers_are_met,
    random_dags_start_every_run_once_and_never_before_its_blockers
);

fn blocks(from: &Issue, to: &Issue) -> NewRelation {
    NewRelation {
        from: from.id,
        to: to.id,
        kind: RelationKind::Blocks,
        until: BlockUntil::Done,
        stacked: false,
        created_by: None,
    }
}

fn any() -> ClaimScope {
    ClaimScope::anything("embedded")
}

async fn done(store: &Arc<dyn Store>, i: &Issue) {
    store
        .move_issue(
            i.workspace_id,
            &i.key,
            IssueStatus::Done,
            None,
            Actor::System,
        )
        .await
        .unwrap();
}

async fn relations_read_from_both_ends_and_refuse_duplicates(store: Arc<dyn Store>) {
    let f = fixture(&store, "team", "ACM").await;
    let other = fixture(&store, "other", "OTH").await;
    let a = issue(&store, f.ws.id, "Schema", IssueStatus::Todo).await;
    let b = issue(&store, f.ws.id, "API", IssueStatus::Todo).await;
    let c = issue(&store, f.ws.id, "Same as API", IssueStatus::Todo).await;
    let foreign = issue(&store, other.ws.id, "Elsewhere", IssueStatus::Todo).await;

    store
        .add_relation(f.ws.id, &blocks(&a, &b))
        .await
        .unwrap()
        .unwrap();
    let relates = NewRelation {
        kind: RelationKind::Relates,
        ..blocks(&a, &c)
    };
    store
        .add_relation(f.ws.id, &relates)
        .await
        .unwrap()
        .unwrap();
    let dup = NewRelation {
        kind: RelationKind::Duplicates,
        ..blocks(&c, &b)
    };
    store.add_relation(f.ws.id, &dup).await.unwrap().unwrap();

    let of = |links: Vec<IssueLink>| -> Vec<(LinkKind, String, bool)> {
        links
            .into_iter()
            .map(|l| (l.link, l.other.key.to_string(), l.met))
            .collect()
    };
    assert_eq!(
        of(store.list_links(a.id).await.unwrap()),
        vec![
            (LinkKind::Blocks, b.key.to_string(), false),
            (LinkKind::RelatesTo, c.key.to_string(), false)
        ]
    );
    assert_eq!(
        of(store.list_links(b.id).await.unwrap()),
        vec![
            (LinkKind::BlockedBy, a.key.to_string(), false),
            (LinkKind::DuplicatedBy, c.key.to_string(), false)
        ]
    );
    done(&store, &a).await;
    // Met is the blocked side's word; from the blocker's side a done blocker "blocks" still reads false.
    assert_eq!(
        of(store.list_links(b.id).await.unwrap())[0],
        (LinkKind::BlockedBy, a.key.to_string(), true)
    );
    assert_eq!(
        of(store.list_links(a.id).await.unwrap())[0],
        (LinkKind::Blocks, b.key.to_string(), false)
    );
    let blockers = store.blockers_of(&[b.id, c.id]).await.unwrap();
    assert_eq!(blockers.len(), 1);
    assert_eq!(blockers[0].blocker.key, a.key);
    assert!(blockers[0].met(), "a done blocker is met");

    // The same edge again, or relates the other way round: a conflict.
    assert_conflict(
        store.add_relation(f.ws.id, &blocks(&a, &b)).await,
        "issue_relation_pkey",
    );
    let back = NewRelation {
        kind: RelationKind::Relates,
        ..blocks(&c, &a)
    };
    assert_conflict(
        store.add_relation(f.ws.id, &back).await,
        "issue_relation_pkey",
    );
    // Another workspace's issue is not found; nothing was written.
    assert_not_found(store.add_relation(f.ws.id, &blocks(&a, &foreign)).await);
    assert_eq!(store.list_links(foreign.id).await.unwrap(), vec![]);

    // Removing: relates in either direction; an absent edge is not found.
    store
        .remove_relation(f.ws.id, c.id, a.id, RelationKind::Relates)
        .await
        .unwrap();
    assert_not_found(
        store
            .remove_relation(f.ws.id, b.id, a.id, RelationKind::Blocks)
            .await,
    );
    store
        .remove_relation(f.ws.id, a.id, b.id, RelationKind::Blocks)
        .await
        .unwrap();
    assert_eq!(of(store.list_links(a.id).await.unwrap()), vec![]);
    // Deleting an issue takes its edges.
    store.delete_issue(f.ws.id, &c.key).await.unwrap();
    assert_eq!(of(store.list_links(b.id).await.unwrap()), vec![]);
}

async fn a_blocks_cycle_is_refused_with_the_cycle_named(store: Arc<dyn Store>) {
    let f = fixture(&store, "team", "ACM").await;
    let mut chain = Vec::new();
    for n in 0..4 {
        chain.push(issue(&store, f.ws.id, &format!("Step {n}"), IssueStatus::Todo).await);
    }
    for pair in chain.windows(2) {
        store
            .add_relation(f.ws.id, &blocks(&pair[0], &pair[1]))
            .await
            .unwrap()
            .unwrap();
    }
    // ACM-4 blocks ACM-1 would close ACM-1 → ACM-2 → ACM-3 → ACM-4 → ACM-1.
    let cycle = store
        .add_relation(f.ws.id, &blocks(&chain[3], &chain[0]))
        .await
        .unwrap()
        .expect_err("a cycle");
    assert_eq!(cycle.to_string(), "ACM-4 → ACM-1 → ACM-2 → ACM-3 → ACM-4");
    let self_loop = store
        .add_relation(f.ws.id, &blocks(&chain[1], &chain[1]))
        .await
        .unwrap()
        .expect_err("a self-loop");
    assert_eq!(self_loop.to_string(), "ACM-2 → ACM-2");
    assert!(store.blockers_of(&[chain[0].id]).await.unwrap().is_empty());
    // Relates and duplicates are no schedule: they may go round.
    let relates = NewRelation {
        kind: RelationKind::Relates,
        ..blocks(&chain[3], &chain[0])
    };
    store
        .add_relation(f.ws.id, &relates)
        .await
        .unwrap()
        .unwrap();
}

async fn parents_refuse_cycles_and_count_their_children(store: Arc<dyn Store>) {
    let f = fixture(&store, "team", "ACM").await;
    let root = issue(&store, f.ws.id, "Launch", IssueStatus::Todo).await;
    let mid = issue(&store, f.ws.id, "Backend", IssueStatus::Todo).await;
    let leaf = issue(&store, f.ws.id, "Schema", IssueStatus::Todo).await;
    let leaf2 = issue(&store, f.ws.id, "Index", IssueStatus::Todo).await;
    let set = |i: &Issue, p: &Issue| {
        let store = store.clone();
        let (ws, i, p) = (f.ws.id, i.id, p.id);
        async move {
            store
                .set_parent(ws, i, Some(p), Actor::System)
                .await
                .unwrap()
        }
    };
    set(&mid, &root).await.unwrap();
    set(&leaf, &mid).await.unwrap();
    let moved = set(&leaf2, &mid).await.unwrap();
    assert_eq!(moved.parent, Some(mid.id));

    let cycle = set(&root, &leaf)
        .await
        .expect_err("root under its grandchild");
    assert_eq!(cycle.to_string(), "ACM-1 → ACM-3 → ACM-2 → ACM-1");
    let own = set(&mid, &mid).await.expect_err("its own parent");
    assert_eq!(own.to_string(), "ACM-2 → ACM-2");
    assert_eq!(store.get_issue_by_id(root.id).await.unwrap().parent, None);

    let keys: Vec<String> = store
        .list_children(mid.id)
        .await
        .unwrap()
        .iter()
        .map(|c| c.key.to_string())
        .collect();
    assert_eq!(keys, ["ACM-3", "ACM-4"]);
    done(&store, &leaf).await;
    let progress: HashMap<IssueId, ChildProgress> = store
        .child_progress(&[root.id, mid.id, leaf.id])
        .await
        .unwrap()
        .into_iter()
        .collect();
    assert_eq!(progress.len(), 2, "a childless issue has no progress row");
    assert_eq!(
        progress[&mid.id],
        ChildProgress {
            total: 2,
            done: 1,
            cancelled: 0
        }
    );
    assert_eq!(progress[&root.id].total, 1);

    // Cleared; another workspace's issue is not found.
    let other = fixture(&store, "other", "OTH").await;
    let foreign = issue(&store, other.ws.id, "Elsewhere", IssueStatus::Todo).await;
    assert_not_found(
        store
            .set_parent(f.ws.id, leaf2.id, Some(foreign.id), Actor::System)
            .await,
    );
    let cleared = store
        .set_parent(f.ws.id, leaf2.id, None, Actor::System)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(cleared.parent, None);
    // A deleted parent leaves its children at the top.
    store.delete_issue(f.ws.id, &mid.key).await.unwrap();
    assert_eq!(store.get_issue_by_id(leaf.id).await.unwrap().parent, None);
}

async fn fan_in_is_taken_once_per_completion_of_the_children(store: Arc<dyn Store>) {
    let f = fixture(&store, "team", "ACM").await;
    let parent = issue(&store, f.ws.id, "Coordinate", IssueStatus::Todo).await;
    assert!(!store.fan_in(parent.id).await.unwrap());
    store.set_fan_in(parent.id, true).await.unwrap();
    store.set_fan_in(parent.id, true).await.unwrap();
    assert!(store.fan_in(parent.id).await.unwrap());
    assert!(
        !store.take_fan_in(parent.id).await.unwrap(),
        "no children: nothing to wake for"
    );

    let mut new = NewIssue::new(IssueTitle::parse("Part one").unwrap());
    new.status = IssueStatus::Todo;
    new.parent = Some(parent.id);
    let one = store.create_issue(f.ws.id, &new).await.unwrap();
    new.title = IssueTitle::parse("Part two").unwrap();
    let two = store.create_issue(f.ws.id, &new).await.unwrap();
    done(&store, &one).await;
    assert!(
        !store.take_fan_in(parent.id).await.unwrap(),
        "one child is open"
    );
    assert!(store.fan_ins_due(10).await.unwrap().is_empty());
    store
        .move_issue(
            f.ws.id,
            &two.key,
            IssueStatus::Cancelled,
            None,
            Actor::System,
        )
        .await
        .unwrap();
    assert_eq!(store.fan_ins_due(10).await.unwrap(), vec![parent.id]);
    assert!(store.take_fan_in(parent.id).await.unwrap());
    assert!(!store.take_fan_in(parent.id).await.unwrap(), "taken once");
    assert!(store.fan_ins_due(10).await.unwrap().is_empty());

    // A child reopened and ended again: woken again, once.
    store
        .move_issue(
            f.ws.id,
            &one.key,
            IssueStatus::InProgress,
            None,
            Actor::System,
        )
        .await
        .unwrap();
    assert!(!store.take_fan_in(parent.id).await.unwrap());
    // Its agent marks it done while its run still works: the parent waits for the run's end (the
    // digest tells what it delivered).
    let coder = agent(&store, f.ws.id, "coder", 10).await;
    let runner = store
        .register_runner("embedded", "0.1.0", &serde_json::json!([]))
        .await
        .unwrap();
    let run = store
        .create_run(&NewRun::assignment(f.ws.id, one.id, coder.id))
        .await
        .unwrap();
    let lease = Utc::now() + TimeDelta::seconds(30);
    let claimed = store
        .claim_next_run(runner.id, &any(), Utc::now(), lease)
        .await
        .unwrap();
    assert_eq!(claimed.map(|r| r.id), Some(run.id));
    done(&store, &one).await;
    assert!(
        !store.take_fan_in(parent.id).await.unwrap(),
        "a child's run is still at work"
    );
    assert!(store.fan_ins_due(10).await.unwrap().is_empty());
    store
        .finish_leased_run(run.id, 1, &RunOutcome::bare(RunStatus::Succeeded))
        .await
        .unwrap();
    assert_eq!(store.fan_ins_due(10).await.unwrap(), vec![parent.id]);
    assert!(store.take_fan_in(parent.id).await.unwrap());
    // A new child (created under it, or moved under it) arms it again.
    new.title = IssueTitle::parse("Part three").unwrap();
    new.status = IssueStatus::Done;
    store.create_issue(f.ws.id, &new).await.unwrap();
    assert!(store.take_fan_in(parent.id).await.unwrap());
    let late = issue(&store, f.ws.id, "Late part", IssueStatus::Done).await;
    store
        .set_parent(f.ws.id, late.id, Some(parent.id), Actor::System)
        .await
        .unwrap()
        .unwrap();
    assert!(store.take_fan_in(parent.id).await.unwrap());
    // Off: never taken.
    store.set_fan_in(parent.id, false).await.unwrap();
    done(&store, &one).await;
    assert!(!store.take_fan_in(parent.id).await.unwrap());
}

async fn a_blocked_issues_run_is_claimed_only_once_its_blockers_are_met(store: Arc<dyn Store>) {
    let f = fixture(&store, "team", "ACM").await;
    let coder = agent(&store, f.ws.id, "coder", 10).await;
    let runner = store
        .register_runner("embedded", "0.1.0", &serde_json::json!([]))
        .await
        .unwrap();
    let schema = issue(&store, f.ws.id, "Schema", IssueStatus::Todo).await;
    let review = issue(&store, f.ws.id, "Review", IssueStatus::Todo).await;
    let api = issue(&store, f.ws.id, "API", IssueStatus::Todo).await;
    store
        .add_relation(f.ws.id, &blocks(&schema, &api))
        .await
        .unwrap()
        .unwrap();
    let merged = NewRelation {
        until: BlockUntil::Merged,
        ..blocks(&review, &api)
    };
    store.add_relation(f.ws.id, &merged).await.unwrap().unwrap();
    let run = store
        .create_run(&NewRun::assignment(f.ws.id, api.id, coder.id))
        .await
        .unwrap();
    let (now, lease) = (Utc::now(), Utc::now() + TimeDelta::seconds(30));
    let scope = any();
    let claim = || store.claim_next_run(runner.id, &scope, now, lease);
    assert!(claim().await.unwrap().is_none(), "both blockers are open");
    done(&store, &schema).await;
    done(&store, &review).await;
    assert!(
        claim().await.unwrap().is_none(),
        "review is done but its pull request is not merged"
    );
    // A merged pull request of the review meets the last blocker.
    let conn = store
        .create_forge_connection(&NewForgeConnection {
            workspace_id: f.ws.id,
            kind: ForgeKind::Github,
            api_url: "https://api.github.com".into(),
            repo: "acme/app".into(),
            token_sealed: "t".into(),
            webhook_secret_sealed: "s".into(),
            auto_open: false,
            max_rounds: 3,
            on_close: OnClose::Todo,
            created_by: f.owner.id,
        })
        .await
        .unwrap();
    let review_run = store
        .create_run(&NewRun::assignment(f.ws.id, review.id, coder.id))
        .await
        .unwrap();
    let pr = store
        .create_pull_request(&NewPullRequest {
            workspace_id: f.ws.id,
            connection_id: conn.id,
            issue_id: review.id,
            agent_id: coder.id,
            run_id: review_run.id,
            number: 7,
            url: "https://github.com/acme/app/pull/7".into(),
            branch: "muster/ACM-2-coder".into(),
            base: "main".into(),
            draft: false,
            head_sha: "abc".into(),
        })
        .await
        .unwrap();
    // The review's own run goes first (it is older and unblocked).
    assert_eq!(claim().await.unwrap().map(|r| r.id), Some(review_run.id));
    assert!(claim().await.unwrap().is_none());
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
    // Done and merged, but the review's run is still at work: its commit is delivered when it ends.
    assert!(
        claim().await.unwrap().is_none(),
        "a blocker with a running run holds"
    );
    let held = store.blockers_of(&[api.id]).await.unwrap();
    let review_blocker = held.iter().find(|b| b.blocker.id == review.id).unwrap();
    assert!(review_blocker.working && !review_blocker.met(), "{held:?}");
    store
        .finish_leased_run(review_run.id, 1, &RunOutcome::bare(RunStatus::Succeeded))
        .await
        .unwrap();
    let held = store.blockers_of(&[api.id]).await.unwrap();
    assert!(held.iter().all(|b| !b.working && b.met()), "{held:?}");
    assert_eq!(claim().await.unwrap().map(|r| r.id), Some(run.id));
    // Reopening a blocker holds runs not yet claimed, not the one already started.
    let later = issue(&store, f.ws.id, "Docs", IssueStatus::Todo).await;
    store
        .add_relation(f.ws.id, &blocks(&schema, &later))
        .await
        .unwrap()
        .unwrap();
    store
        .move_issue(
            f.ws.id,
            &schema.key,
            IssueStatus::InProgress,
            None,
            Actor::System,
        )
        .await
        .unwrap();
    store
        .create_run(&NewRun::assignment(f.ws.id, later.id, coder.id))
        .await
        .unwrap();
    assert!(claim().await.unwrap().is_none());
    assert_eq!(
        store.get_run(run.id).await.unwrap().status,
        RunStatus::Claimed
    );
}

/// Random DAGs of 2–7 issues (200 by default, `MUSTER_DAG_COUNT` for more) in one workspace, in waves
/// of 100, each issue with one queued run; rounds of "claim everything claimable, then finish a random
/// part of what is claimed" until all are done. At every claim no blocker of its issue is open; after
/// every claim pass nothing queued is claimable by the rule; at the end every run was claimed exactly
/// once. Random back edges are refused as cycles. Each run draws a new seed (printed, and repeatable
/// with `MUSTER_DAG_SEED`), so CI covers new graphs every time.
async fn random_dags_start_every_run_once_and_never_before_its_blockers(store: Arc<dyn Store>) {
    let f = fixture(&store, "team", "DAG").await;
    let coder = agent(&store, f.ws.id, "coder", 1_000_000).await;
    let runner = store
        .register_runner("embedded", "0.1.0", &serde_json::json!([]))
        .await
        .unwrap();
    #[allow(clippy::disallowed_methods)]
    // a test's knob to repeat or widen a run, not configuration
    let env_number = |name: &str| std::env::var(name).ok().and_then(|s| s.parse::<u64>().ok());
    let seed = env_number("MUSTER_DAG_SEED").unwrap_or_else(|| rand::rng().random::<u64>());
    let dags = env_number("MUSTER_DAG_COUNT").unwrap_or(200) as usize;
    eprintln!("random DAGs: seed {seed} (MUSTER_DAG_SEED={seed} repeats this run)");
    let mut rng = StdRng::seed_from_u64(seed);
    const WAVE: usize = 100;
    let (mut issues_n, mut edges_n, mut cycles_refused, mut rounds) = (0, 0, 0, 0);
    for wave in 0..dags.div_ceil(WAVE) {
        let mut issues: Vec<Issue> = Vec::new();
        let mut blockers: HashMap<IssueId, Vec<IssueId>> = HashMap::new();
        let mut run_issue: HashMap<RunId, IssueId> = HashMap::new();
        for _ in 0..WAVE.min(dags - wave * WAVE) {
            let n = rng.random_range(2..=7);
            let mut dag = Vec::with_capacity(n);
            for k in 0..n {
                dag.push(issue(&store, f.ws.id, &format!("node {k}"), IssueStatus::Todo).await);
            }
            // Edges only forward in a shuffled order: a DAG.
            let mut order: Vec<usize> = (0..n).collect();
            for i in (1..n).rev() {
                order.swap(i, rng.random_range(0..=i));
            }
            for i in 0..n {
                for j in i + 1..n {
                    if rng.random_bool(0.35) {
                        let (from, to) = (&dag[order[i]], &dag[order[j]]);
                        store
                            .add_relation(f.ws.id, &blocks(from, to))
                            .await
                            .unwrap()
                            .unwrap();
                        blockers.entry(to.id).or_default().push(from.id);
                        edges_n += 1;
                    }
                }
            }
            // A back edge over an edge closes a cycle: refused, with the cycle going round.
            if let Some((i, j)) =
                (0..n)
                    .flat_map(|i| (i + 1..n).map(move |j| (i, j)))
                    .find(|(i, j)| {
                        blockers
                            .get(&dag[order[*j]].id)
                            .is_some_and(|b| b.contains(&dag[order[*i]].id))
                    })
            {
                let (from, to) = (&dag[order[j]], &dag[order[i]]);
                let cycle = store
                    .add_relation(f.ws.id, &blocks(from, to))
                    .await
                    .unwrap()
                    .expect_err("a back edge closes a cycle");
                assert_eq!(cycle.0.first(), cycle.0.last(), "{cycle}");
                assert!(cycle.0.len() >= 3, "{cycle}");
                cycles_refused += 1;
            }
            for i in &dag {
                let run = store
                    .create_run(&NewRun::assignment(f.ws.id, i.id, coder.id))
                    .await
                    .unwrap();
                run_issue.insert(run.id, i.id);
            }
            issues.extend(dag);
        }
        issues_n += issues.len();

        let mut is_done: HashSet<IssueId> = HashSet::new();
        let mut claimed_once: HashSet<RunId> = HashSet::new();
        let mut running: Vec<RunId> = Vec::new();
        let by_id: HashMap<IssueId, &Issue> = issues.iter().map(|i| (i.id, i)).collect();
        let lease = Utc::now() + TimeDelta::hours(1);
        let mut wave_rounds = 0;
        while is_done.len() < issues.len() {
            wave_rounds += 1;
            assert!(
                wave_rounds < 200,
                "no progress: {} of {} done",
                is_done.len(),
                issues.len()
            );
            while let Some(run) = store
                .claim_next_run(runner.id, &any(), Utc::now(), lease)
                .await
                .unwrap()
            {
                let issue = run_issue[&run.id];
                let open: Vec<_> = blockers
                    .get(&issue)
                    .into_iter()
                    .flatten()
                    .filter(|b| !is_done.contains(b))
                    .collect();
                assert!(
                    open.is_empty(),
                    "run {} started with open blockers {open:?}",
                    run.id
                );
                assert!(claimed_once.insert(run.id), "run {} claimed twice", run.id);
                running.push(run.id);
            }
            // Nothing claimable is left queued: every queued run has an open blocker.
            for (run, issue) in &run_issue {
                if !claimed_once.contains(run) {
                    let held = blockers
                        .get(issue)
                        .is_some_and(|b| b.iter().any(|b| !is_done.contains(b)));
                    assert!(held, "run {run} is claimable but was not claimed");
                }
            }
            // Finish a random part (at least one) of what is running.
            for i in (1..running.len()).rev() {
                running.swap(i, rng.random_range(0..=i));
            }
            let take = rng
                .random_range(1..=running.len().max(1))
                .min(running.len());
            for run in running.drain(..take) {
                store
                    .finish_leased_run(run, 1, &RunOutcome::bare(RunStatus::Succeeded))
                    .await
                    .unwrap();
                let issue = by_id[&run_issue[&run]];
                done(&store, issue).await;
                is_done.insert(issue.id);
            }
        }
        assert_eq!(
            claimed_once.len(),
            run_issue.len(),
            "every run started once"
        );
        rounds += wave_rounds;
    }
    assert!(
        cycles_refused > dags / 3,
        "only {cycles_refused} cycles tried"
    );
    eprintln!(
        "random DAGs: {dags} DAGs, {issues_n} issues, {edges_n} edges, {cycles_refused} cycles refused, \
         {rounds} rounds"
    );
}
