//! Issue 15: per-run usage for reports, spend sums for caps, the caps, their monthly warnings and the
//! workspace's rate table. Expected sums are written out here, never read back from the code under test.

use std::sync::Arc;

use chrono::{TimeDelta, Utc};
use muster::domain::*;
use muster::store::Store;

use super::{agent, assert_not_found, fixture, issue, store_cases};
use muster_tests::engine::bare_outcome;

store_cases!(
    usage_runs_and_spend_sum_exactly,
    caps_and_their_monthly_warnings,
    a_workspace_keeps_its_own_rate_table,
    metrics_read_runs_queue_and_runners,
);

fn outcome(status: RunStatus, input: i64, output: i64, cost: f64, unknown: bool) -> RunOutcome {
    RunOutcome {
        exit_code: Some(0),
        failure_reason: (status == RunStatus::Failed).then_some(FailureReason::OverBudget),
        usage: Usage {
            input_tokens: input,
            output_tokens: output,
            cache_read_tokens: 7,
            cache_write_tokens: 3,
            cost_usd: cost,
            cost_unknown: unknown,
            cost_estimated: false,
        },
        ..bare_outcome(status)
    }
}

async fn usage_runs_and_spend_sum_exactly(store: Arc<dyn Store>) {
    let f = fixture(&store, "spend", "SPD").await;
    let other = fixture(&store, "elsewhere", "ELS").await;
    let mut new = NewAgent::new(AgentName::parse("coder").unwrap(), RuntimeKind::Codex);
    new.model = Some("gpt-5".into());
    let coder = store.create_agent(f.ws.id, &new).await.unwrap();
    let helper = agent(&store, f.ws.id, "helper", 3).await;
    let stranger = agent(&store, other.ws.id, "stranger", 1).await;
    let i = issue(&store, f.ws.id, "One", IssueStatus::Todo).await;
    let j = issue(&store, f.ws.id, "Two", IssueStatus::Todo).await;
    let k = issue(&store, other.ws.id, "Theirs", IssueStatus::Todo).await;
    let run =
        |ws: WorkspaceId, issue: IssueId, agent: AgentId| NewRun::assignment(ws, issue, agent);

    let a = store
        .create_run(&run(f.ws.id, i.id, coder.id))
        .await
        .unwrap();
    // The model is the one the run was queued with, whatever the agent says later.
    new.model = Some("gpt-5-mini".into());
    store.update_agent(f.ws.id, coder.id, &new).await.unwrap();
    store
        .finish_run(a.id, &outcome(RunStatus::Succeeded, 1000, 200, 0.25, false))
        .await
        .unwrap();
    let b = store
        .create_run(&run(f.ws.id, j.id, coder.id))
        .await
        .unwrap();
    store
        .finish_run(b.id, &outcome(RunStatus::Failed, 500, 100, 0.5, false))
        .await
        .unwrap();
    let c = store
        .create_run(&run(f.ws.id, i.id, helper.id))
        .await
        .unwrap();
    store
        .finish_run(c.id, &outcome(RunStatus::Succeeded, 40, 60, 0.0, true))
        .await
        .unwrap();
    // A live run counts with what it has so far (nothing yet); another workspace's never does.
    let live = store
        .create_run(&run(f.ws.id, j.id, helper.id))
        .await
        .unwrap();
    let theirs = store
        .create_run(&run(other.ws.id, k.id, stranger.id))
        .await
        .unwrap();
    store
        .finish_run(
            theirs.id,
            &outcome(RunStatus::Succeeded, 9999, 9999, 99.0, false),
        )
        .await
        .unwrap();

    let now = Utc::now();
    let window = UsageFilter {
        from: now - TimeDelta::hours(1),
        to: now + TimeDelta::hours(1),
        agent: None,
        issue: None,
        project: None,
        parent: None,
    };
    let runs = store.usage_runs(f.ws.id, &window).await.unwrap();
    let ids: Vec<RunId> = runs.iter().map(|r| r.run_id).collect();
    assert_eq!(ids, vec![a.id, b.id, c.id, live.id]);
    let first = &runs[0];
    assert_eq!(first.agent_name, "coder");
    assert_eq!(first.kind, RuntimeKind::Codex);
    assert_eq!(first.model.as_deref(), Some("gpt-5"));
    assert_eq!(first.issue_key, i.key.to_string());
    assert_eq!(first.status, RunStatus::Succeeded);
    assert_eq!(
        first.usage,
        Usage {
            input_tokens: 1000,
            output_tokens: 200,
            cache_read_tokens: 7,
            cache_write_tokens: 3,
            cost_usd: 0.25,
            cost_unknown: false,
            cost_estimated: false
        }
    );
    assert!(first.started_at.is_none() && first.finished_at.is_some());
    assert_eq!(runs[1].failure_reason, Some(FailureReason::OverBudget));
    assert_eq!(runs[2].model, None, "helper has no model set");
    assert!(runs[2].usage.cost_unknown);
    assert_eq!(runs[3].status, RunStatus::Queued);

    // Filters: by agent, by issue, and a window that ends before the runs.
    let of_helper = UsageFilter {
        agent: Some(helper.id),
        ..window.clone()
    };
    let got: Vec<RunId> = store
        .usage_runs(f.ws.id, &of_helper)
        .await
        .unwrap()
        .iter()
        .map(|r| r.run_id)
        .collect();
    assert_eq!(got, vec![c.id, live.id]);
    let of_i = UsageFilter {
        issue: Some(i.id),
        ..window.clone()
    };
    let got: Vec<RunId> = store
        .usage_runs(f.ws.id, &of_i)
        .await
        .unwrap()
        .iter()
        .map(|r| r.run_id)
        .collect();
    assert_eq!(got, vec![a.id, c.id]);
    let before = UsageFilter {
        to: window.from,
        ..window.clone()
    };
    assert!(store.usage_runs(f.ws.id, &before).await.unwrap().is_empty());

    // Sums: the workspace's and each agent's, since a moment; nothing since later.
    let spent = store.spend_since(f.ws.id, None, window.from).await.unwrap();
    assert_eq!(
        spent,
        Usage {
            input_tokens: 1540,
            output_tokens: 360,
            cache_read_tokens: 21,
            cache_write_tokens: 9,
            cost_usd: 0.75,
            cost_unknown: true,
            cost_estimated: false
        }
    );
    let coder_spent = store
        .spend_since(f.ws.id, Some(coder.id), window.from)
        .await
        .unwrap();
    assert_eq!(
        (
            coder_spent.input_tokens,
            coder_spent.cost_usd,
            coder_spent.cost_unknown
        ),
        (1500, 0.75, false)
    );
    let none = store.spend_since(f.ws.id, None, window.to).await.unwrap();
    assert_eq!(none, Usage::default());
}

async fn caps_and_their_monthly_warnings(store: Arc<dyn Store>) {
    let f = fixture(&store, "caps", "CAP").await;
    let other = fixture(&store, "other", "OTH").await;
    let coder = agent(&store, f.ws.id, "coder", 1).await;
    let helper = agent(&store, f.ws.id, "helper", 1).await;
    let stranger = agent(&store, other.ws.id, "stranger", 1).await;
    assert_eq!(store.caps(f.ws.id).await.unwrap(), Caps::default());

    let ws_cap = Cap {
        usd: Some(100.0),
        tokens: None,
    };
    let coder_cap = Cap {
        usd: Some(2.5),
        tokens: Some(50_000),
    };
    store.set_workspace_cap(f.ws.id, ws_cap).await.unwrap();
    store
        .set_agent_cap(f.ws.id, coder.id, coder_cap)
        .await
        .unwrap();
    store
        .set_agent_cap(
            f.ws.id,
            helper.id,
            Cap {
                usd: None,
                tokens: Some(10),
            },
        )
        .await
        .unwrap();
    // Cleared again: an agent with no bound has no cap.
    store
        .set_agent_cap(f.ws.id, helper.id, Cap::default())
        .await
        .unwrap();
    let caps = store.caps(f.ws.id).await.unwrap();
    assert_eq!(caps.workspace, ws_cap);
    assert_eq!(caps.agents.len(), 1);
    assert_eq!(caps.agents.get(&coder.id), Some(&coder_cap));
    assert_eq!(store.caps(other.ws.id).await.unwrap(), Caps::default());
    // Another workspace's agent, an unknown workspace.
    assert_not_found(store.set_agent_cap(f.ws.id, stranger.id, coder_cap).await);
    assert_not_found(store.set_workspace_cap(WorkspaceId::new(), ws_cap).await);
    assert_not_found(store.caps(WorkspaceId::new()).await);

    let now = Utc::now();
    let scope = format!("agent:{}", coder.id);
    assert!(
        store
            .record_cap_warning(f.ws.id, &scope, "2026-12", now)
            .await
            .unwrap()
    );
    assert!(
        !store
            .record_cap_warning(f.ws.id, &scope, "2026-12", now)
            .await
            .unwrap()
    );
    assert!(
        store
            .record_cap_warning(f.ws.id, "workspace", "2026-12", now)
            .await
            .unwrap()
    );
    assert!(
        store
            .record_cap_warning(f.ws.id, &scope, "2027-01", now)
            .await
            .unwrap()
    );
    assert!(
        store
            .record_cap_warning(other.ws.id, &scope, "2026-12", now)
            .await
            .unwrap()
    );
}

async fn a_workspace_keeps_its_own_rate_table(store: Arc<dyn Store>) {
    let f = fixture(&store, "rates", "RAT").await;
    assert_eq!(store.rate_table(f.ws.id).await.unwrap(), None);
    let rates = muster_agents::RateTable::from_json(
        r#"{"house-model": {"input": 2.0, "output": 8.0, "cached": 0.5}, "gpt-5": {"input": 1.0, "output": 4.0}}"#,
    )
    .unwrap();
    store.set_rate_table(f.ws.id, Some(&rates)).await.unwrap();
    assert_eq!(store.rate_table(f.ws.id).await.unwrap(), Some(rates));
    store.set_rate_table(f.ws.id, None).await.unwrap();
    assert_eq!(store.rate_table(f.ws.id).await.unwrap(), None);
    assert_not_found(store.rate_table(WorkspaceId::new()).await);
    assert_not_found(store.set_rate_table(WorkspaceId::new(), None).await);
}

/// What `/metrics` reads: runs by status and runtime, the claimable queue, every runner, the pool.
async fn metrics_read_runs_queue_and_runners(store: Arc<dyn Store>) {
    let f = fixture(&store, "metrics", "MET").await;
    let other = fixture(&store, "metrics-b", "MEB").await;
    let coder = agent(&store, f.ws.id, "coder", 1).await;
    let mut new = NewAgent::new(AgentName::parse("local").unwrap(), RuntimeKind::Llama);
    new.max_concurrent_runs = 1;
    let local = store.create_agent(other.ws.id, &new).await.unwrap();
    let i = issue(&store, f.ws.id, "One", IssueStatus::Todo).await;
    let j = issue(&store, f.ws.id, "Two", IssueStatus::Todo).await;
    let k = issue(&store, other.ws.id, "Three", IssueStatus::Todo).await;
    let now = Utc::now();
    assert_eq!(store.queue_state(now).await.unwrap(), (0, None));
    assert!(store.run_counts().await.unwrap().is_empty());

    let a = store
        .create_run(&NewRun::assignment(f.ws.id, i.id, coder.id))
        .await
        .unwrap();
    let mut later = NewRun::assignment(f.ws.id, j.id, coder.id);
    later.not_before = Some(now + TimeDelta::hours(1));
    store.create_run(&later).await.unwrap();
    let c = store
        .create_run(&NewRun::assignment(other.ws.id, k.id, local.id))
        .await
        .unwrap();
    store
        .finish_run(c.id, &outcome(RunStatus::Succeeded, 1, 1, 0.0, false))
        .await
        .unwrap();
    // Two queued, one of them not claimable for an hour: the queue is the other, since its creation.
    let (depth, oldest) = store.queue_state(Utc::now()).await.unwrap();
    assert_eq!((depth, oldest), (1, Some(a.created_at)));
    let counts = store.run_counts().await.unwrap();
    assert_eq!(
        counts,
        vec![
            (RunStatus::Queued, RuntimeKind::Claude, 2),
            (RunStatus::Succeeded, RuntimeKind::Llama, 1),
        ]
    );
    let runners_before = store.all_runners().await.unwrap().len();
    store
        .register_runner("metrics-embedded", "1.0", &serde_json::json!([]))
        .await
        .unwrap();
    let runners = store.all_runners().await.unwrap();
    assert_eq!(runners.len(), runners_before + 1);
    assert!(runners.iter().any(|r| r.name == "metrics-embedded"));
    let (size, idle) = store.pool_stats();
    assert!(size >= 1 && idle <= size, "{size} {idle}");
}
