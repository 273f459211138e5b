use chrono::TimeDelta;

use super::*;
use crate::domain::{ActivityId, AgentId, IssueId, RunId, RunPurpose, Usage, UserId, WorkspaceId};

fn t(secs: i64) -> DateTime<Utc> {
    DateTime::from_timestamp(1_700_000_000, 0).unwrap() + TimeDelta::seconds(secs)
}

fn comment(issue: IssueId, author: Actor, body: &str, at: i64, run: Option<RunId>) -> Comment {
    Comment {
        id: CommentId::new(),
        issue_id: issue,
        author,
        body: body.into(),
        run_id: run,
        created_at: t(at),
        edited_at: None,
    }
}

fn run(issue: IssueId, agent: AgentId, at: i64, status: RunStatus, summary: Option<&str>) -> Run {
    Run {
        id: RunId::new(),
        workspace_id: WorkspaceId::new(),
        issue_id: issue,
        agent_id: agent,
        status,
        attempt: 1,
        chain_depth: 0,
        runner_id: None,
        lease_expires_at: None,
        not_before: None,
        pid: None,
        worktree: None,
        branch: None,
        base_commit: None,
        head_commit: None,
        session_id: None,
        exit_code: None,
        failure_reason: None,
        failure_detail: None,
        usage: Usage::default(),
        summary: summary.map(str::to_owned),
        diff_stat: None,
        stalled_at: None,
        created_at: t(at),
        started_at: Some(t(at + 1)),
        finished_at: status.is_terminal().then(|| t(at + 43)),
        lease_epoch: 1,
        trigger: RunTrigger::Assignment,
        trigger_comment_id: None,
        previous_run_id: None,
        ensemble_run_id: None,
        purpose: RunPurpose::Work,
    }
}

fn activity(
    issue: IssueId,
    actor: Actor,
    kind: ActivityKind,
    detail: serde_json::Value,
    at: i64,
) -> Activity {
    Activity {
        id: ActivityId::new(),
        issue_id: issue,
        actor,
        kind,
        detail,
        at: t(at),
    }
}

fn kinds(entries: &[Entry]) -> Vec<&'static str> {
    entries
        .iter()
        .map(|e| match e {
            Entry::Comment(_) => "comment",
            Entry::Run(_) => "run",
            Entry::Status(_) => "status",
            Entry::Change(_) => "change",
        })
        .collect()
}

#[test]
fn a_conversation_reads_in_order_with_summaries_inside_their_runs() {
    let issue = IssueId::new();
    let ada = Actor::User(UserId::new());
    let coder = AgentId::new();
    let first = run(
        issue,
        coder,
        10,
        RunStatus::Succeeded,
        Some("Fixed the parser."),
    );
    let reply = comment(issue, ada, "Now the empty file, please.", 60, None);
    let mut second = run(issue, coder, 61, RunStatus::Running, None);
    second.trigger = RunTrigger::Comment;
    second.trigger_comment_id = Some(reply.id);
    let comments = vec![
        // Written by the agent during its run: a comment, not the summary.
        comment(issue, Actor::Agent(coder), "Starting.", 12, Some(first.id)),
        comment(
            issue,
            Actor::Agent(coder),
            "Fixed the parser.",
            53,
            Some(first.id),
        ),
        reply,
    ];
    let trail = vec![
        activity(
            issue,
            ada,
            ActivityKind::Created,
            serde_json::json!({"status": "todo"}),
            0,
        ),
        activity(
            issue,
            Actor::Agent(coder),
            ActivityKind::Status,
            serde_json::json!({"from": "todo", "to": "in_review"}),
            53,
        ),
    ];
    let entries = build(comments, vec![first.clone(), second], trail);
    assert_eq!(
        kinds(&entries),
        ["change", "run", "comment", "status", "comment", "run"]
    );
    let Entry::Run(r) = &entries[1] else { panic!() };
    assert_eq!(r.run.id, first.id);
    assert_eq!(r.summary.as_ref().unwrap().body, "Fixed the parser.");
    assert_eq!(r.duration_secs(), Some(42));
    let Entry::Comment(c) = &entries[2] else {
        panic!()
    };
    assert_eq!(c.body, "Starting.");
    let Entry::Status(s) = &entries[3] else {
        panic!()
    };
    assert_eq!((s.from, s.to), (IssueStatus::Todo, IssueStatus::InReview));
    let Entry::Run(r) = &entries[5] else { panic!() };
    assert!(r.is_live() && r.summary.is_none());
    assert_eq!(r.trigger_author, Some(ada), "the reply's author queued it");
}

#[test]
fn a_summary_needs_its_own_run_agent_and_text() {
    let issue = IssueId::new();
    let coder = AgentId::new();
    let done = run(issue, coder, 0, RunStatus::Succeeded, Some("Done."));
    let other = AgentId::new();
    let comments = vec![
        comment(issue, Actor::Agent(other), "Done.", 50, Some(done.id)),
        comment(issue, Actor::Agent(coder), "Done.", 51, None),
    ];
    let entries = build(comments, vec![done], Vec::new());
    assert_eq!(kinds(&entries), ["run", "comment", "comment"]);
    let Entry::Run(r) = &entries[0] else { panic!() };
    assert!(r.summary.is_none());
}
