//! The planner's proposals: at most one pending per issue (a newer one discards it), approval makes
//! every sub-issue and dependency in one transaction — in the planned issue's project, assigned as
//! planned, blockers first — and a proposal is decided once; an approval that fails half-way leaves
//! nothing behind and the proposal still pending.

use std::sync::Arc;

use muster::domain::*;
use muster::store::Store;

use super::{agent, assert_conflict, assert_not_found, fixture, issue, store_cases};

store_cases!(
    a_newer_proposal_discards_the_pending_one_and_each_is_decided_once,
    approval_creates_the_tree_at_once_in_the_project_blockers_first,
    an_approval_that_fails_half_way_writes_nothing
);

fn proposed(reference: &str, blocked_by: &[&str]) -> ProposedIssue {
    ProposedIssue {
        reference: reference.to_owned(),
        title: format!("Do {reference}"),
        description: format!("About {reference}."),
        acceptance: String::new(),
        agent: None,
        blocked_by: blocked_by.iter().map(|b| (*b).to_owned()).collect(),
    }
}

fn new_proposal(f: &super::Fixture, issue: &Issue, items: Vec<ProposedIssue>) -> NewProposal {
    NewProposal {
        workspace_id: f.ws.id,
        issue_id: issue.id,
        run_id: None,
        agent_id: None,
        summary: "Split it.".to_owned(),
        items,
    }
}

fn planned(title: &str, assignee: Option<AgentId>, blocked_by: &[usize]) -> PlannedIssue {
    PlannedIssue {
        title: IssueTitle::parse(title).unwrap(),
        body: format!("Body of {title}"),
        assignee,
        blocked_by: blocked_by.to_vec(),
    }
}

async fn a_newer_proposal_discards_the_pending_one_and_each_is_decided_once(store: Arc<dyn Store>) {
    let f = fixture(&store, "team", "ACM").await;
    let other = fixture(&store, "other", "OTH").await;
    let parent = issue(&store, f.ws.id, "Ship it", IssueStatus::Todo).await;
    let first = store
        .create_proposal(&new_proposal(&f, &parent, vec![proposed("a", &[])]))
        .await
        .unwrap();
    assert_eq!(first.status, ProposalStatus::Pending);
    assert_eq!(first.items[0].reference, "a");
    assert!(first.created.is_empty());
    let second = store
        .create_proposal(&new_proposal(
            &f,
            &parent,
            vec![proposed("a", &[]), proposed("b", &["a"])],
        ))
        .await
        .unwrap();
    let listed = store.list_proposals(parent.id).await.unwrap();
    assert_eq!(
        listed.iter().map(|p| (p.id, p.status)).collect::<Vec<_>>(),
        vec![
            (second.id, ProposalStatus::Pending),
            (first.id, ProposalStatus::Discarded)
        ],
        "newest first; the older one discarded"
    );
    assert_eq!(
        store.get_proposal(f.ws.id, second.id).await.unwrap(),
        listed[0]
    );
    assert_not_found(store.get_proposal(other.ws.id, second.id).await);
    // Decided once: a discarded one can be neither discarded nor approved again.
    assert_conflict(
        store.discard_proposal(f.ws.id, first.id, f.owner.id).await,
        "plan_proposal_status",
    );
    assert_conflict(
        store
            .approve_proposal(
                f.ws.id,
                first.id,
                &first.items,
                &[planned("A", None, &[])],
                f.owner.id,
            )
            .await,
        "plan_proposal_status",
    );
    assert_not_found(
        store
            .discard_proposal(other.ws.id, second.id, other.owner.id)
            .await,
    );
    let discarded = store
        .discard_proposal(f.ws.id, second.id, f.owner.id)
        .await
        .unwrap();
    assert_eq!(discarded.status, ProposalStatus::Discarded);
    assert_eq!(discarded.decided_by, Some(f.owner.id));
    assert!(discarded.decided_at.is_some());
    assert!(store.list_children(parent.id).await.unwrap().is_empty());
}

async fn approval_creates_the_tree_at_once_in_the_project_blockers_first(store: Arc<dyn Store>) {
    let f = fixture(&store, "team", "ACM").await;
    let coder = agent(&store, f.ws.id, "coder", 2).await;
    let web = store
        .create_project(
            f.ws.id,
            &NewProject {
                status: ProjectStatus::Active,
                ..super::projects::new_project("WEB", "Website")
            },
        )
        .await
        .unwrap();
    let mut new = NewIssue::new(IssueTitle::parse("Relaunch").unwrap());
    new.project = Some(web.id);
    let parent = store.create_issue(f.ws.id, &new).await.unwrap();
    store.set_fan_in(parent.id, true).await.unwrap();
    let items = vec![
        proposed("db", &[]),
        proposed("api", &["db"]),
        proposed("ui", &["api", "db"]),
    ];
    let proposal = store
        .create_proposal(&new_proposal(&f, &parent, items.clone()))
        .await
        .unwrap();
    let plan = [
        planned("Schema", None, &[]),
        planned("Endpoints", Some(coder.id), &[0]),
        planned("Screens", Some(coder.id), &[1, 0]),
    ];
    let (approved, issues) = store
        .approve_proposal(f.ws.id, proposal.id, &items, &plan, f.owner.id)
        .await
        .unwrap();
    assert_eq!(approved.status, ProposalStatus::Approved);
    assert_eq!(approved.decided_by, Some(f.owner.id));
    assert_eq!(
        approved.created,
        issues.iter().map(|i| i.id).collect::<Vec<_>>()
    );
    assert_eq!(issues.len(), 3);
    let numbers: Vec<i64> = issues.iter().map(|i| i.key.number).collect();
    assert!(
        numbers.windows(2).all(|w| w[0] < w[1]),
        "created in order: {numbers:?}"
    );
    for (i, made) in issues.iter().enumerate() {
        assert_eq!(made.parent, Some(parent.id));
        assert_eq!(made.project, Some(web.id), "in the planned issue's project");
        assert_eq!(made.status, IssueStatus::Todo);
        assert_eq!(made.created_by, Some(f.owner.id));
        assert_eq!(made.title.as_str(), plan[i].title.as_str());
        assert_eq!(made.body, plan[i].body);
        assert_eq!(made.assignee, plan[i].assignee.map(Assignee::Agent));
    }
    let blockers = store
        .blockers_of(&issues.iter().map(|i| i.id).collect::<Vec<_>>())
        .await
        .unwrap();
    let edges: Vec<(i64, i64)> = blockers
        .iter()
        .map(|b| {
            let blocked = issues.iter().find(|i| i.id == b.blocked).unwrap();
            (b.blocker.key.number, blocked.key.number)
        })
        .collect();
    let (s, e, u) = (numbers[0], numbers[1], numbers[2]);
    let mut want = vec![(s, e), (s, u), (e, u)];
    let mut got = edges.clone();
    want.sort_unstable();
    got.sort_unstable();
    assert_eq!(got, want, "{blockers:?}");
    assert!(
        blockers
            .iter()
            .all(|b| b.until == BlockUntil::Done && !b.stacked)
    );
    assert_eq!(
        store.child_progress(&[parent.id]).await.unwrap()[0].1.total,
        3
    );
    // New children re-arm the parent's fan-in: it is not due while they are open.
    assert!(!store.take_fan_in(parent.id).await.unwrap());
    // Decided once.
    assert_conflict(
        store
            .approve_proposal(f.ws.id, proposal.id, &items, &plan, f.owner.id)
            .await,
        "plan_proposal_status",
    );
    assert_eq!(store.list_children(parent.id).await.unwrap().len(), 3);
}

async fn an_approval_that_fails_half_way_writes_nothing(store: Arc<dyn Store>) {
    let f = fixture(&store, "team", "ACM").await;
    let coder = agent(&store, f.ws.id, "coder", 1).await;
    let parent = issue(&store, f.ws.id, "Ship it", IssueStatus::Todo).await;
    let items = vec![proposed("a", &[]), proposed("b", &["a"])];
    let proposal = store
        .create_proposal(&new_proposal(&f, &parent, items.clone()))
        .await
        .unwrap();
    let before = store.get_workspace(f.ws.id).await.unwrap();
    // The second issue names an agent that does not exist: its insert fails after the first's.
    let plan = [
        planned("First", Some(coder.id), &[]),
        planned("Second", Some(AgentId::new()), &[0]),
    ];
    let failed = store
        .approve_proposal(f.ws.id, proposal.id, &items, &plan, f.owner.id)
        .await;
    assert!(failed.is_err(), "{failed:?}");
    assert!(
        store.list_children(parent.id).await.unwrap().is_empty(),
        "no issue kept"
    );
    let all = store
        .list_issues(f.ws.id, &IssueFilter::default())
        .await
        .unwrap();
    assert_eq!(all.len(), 1, "only the parent: {all:?}");
    assert_eq!(
        store
            .get_proposal(f.ws.id, proposal.id)
            .await
            .unwrap()
            .status,
        ProposalStatus::Pending,
        "still waiting for a good approval"
    );
    // A blocker that does not precede its issue is refused, also with nothing written.
    let out_of_order = [planned("First", None, &[1]), planned("Second", None, &[])];
    assert_conflict(
        store
            .approve_proposal(f.ws.id, proposal.id, &items, &out_of_order, f.owner.id)
            .await,
        "plan_proposal_order",
    );
    assert!(store.list_children(parent.id).await.unwrap().is_empty());
    // The numbers the failed approvals took are given back with their transaction.
    let next = issue(&store, f.ws.id, "Next", IssueStatus::Todo).await;
    assert_eq!(next.key.number, before.issue_counter + 1);
    let (_, made) = store
        .approve_proposal(f.ws.id, proposal.id, &items, &plan[..1], f.owner.id)
        .await
        .unwrap();
    assert_eq!(made.len(), 1);
}
