//! The real pinned Claude Code (the npm build) as a Muster agent, end to end through the run engine, against
//! the scripted model server, offline: assign → claim → prepare (brief, skills) → spawn → parse → store →
//! finish. Proves what a stand-in script cannot: the real CLI finds the agent's enabled skill in the run's
//! workspace and says so in its `system/init`, which Muster keeps on the run's `started` event; a disabled
//! skill is not handed over; the answer becomes the summary comment and the issue goes to review.
//!
//! Skips loudly without the CLI unless `MUSTER_REQUIRE_AGENT_CLIS=1` (`.ci/run` sets it).

use std::time::Duration;

use muster::domain::*;
use muster::runner::executor::RunTiming;
use muster_agents::RuntimeKind;
use muster_tests::engine::*;
use muster_tests::model_server::{ModelServer, PLAIN_TEXT};
use muster_tests::{Backend, TestDb};
use tokio::time::Instant;

/// A real CLI start (node) on a loaded machine is slow; this bounds the whole run.
const RUN_DEADLINE: Duration = Duration::from_secs(180);

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[ignore = "needs the agent CLIs (MUSTER_AGENT_CLIS_DIR, installed by .ci/run), and PostgreSQL; run with --include-ignored"]
async fn a_real_claude_code_run_gets_its_enabled_skill_and_lands_in_review() {
    let Some(claude) = muster_tests::agent_cli("claude", "the real Claude Code run") else {
        return;
    };
    for backend in [Backend::Sqlite, Backend::Postgres] {
        let Some(db) = TestDb::new(backend).await else {
            continue;
        };
        let model = ModelServer::start().await.unwrap();
        let store = db.store().await;
        let (user, ws) = seed_workspace(&store).await;
        let timing = RunTiming {
            // The real CLI may be silent for a while as node starts; the default stall guard applies.
            stall_override: None,
            ..test_timing()
        };
        let binary = claude.clone();
        let env = Env::boot_with(
            db,
            store,
            ws,
            user.id,
            move |config| config.runtime_paths = vec![(RuntimeKind::Claude, binary)],
            timing,
        )
        .await;

        let mut new = NewAgent::new(
            AgentName::parse("claude-coder").unwrap(),
            RuntimeKind::Claude,
        );
        new.base_url = Some(model.base_url().to_owned());
        new.permission_mode = PermissionMode::Bypass;
        new.max_retries = 0;
        new.env = vec![
            EnvVar {
                key: "ANTHROPIC_API_KEY".to_owned(),
                value: env.state.secrets.seal("muster-fake-key").unwrap(),
                secret: true,
            },
            // One attempt at the model is enough offline.
            EnvVar {
                key: "CLAUDE_CODE_MAX_RETRIES".to_owned(),
                value: "0".to_owned(),
                secret: false,
            },
        ];
        let agent = env.store.create_agent(env.ws.id, &new).await.unwrap();
        // The built-ins are seeded at start: one enabled, one attached but switched off.
        let skills = env.store.list_skills(env.ws.id).await.unwrap();
        let skill = |slug: &str| {
            skills
                .iter()
                .find(|s| s.slug.as_str() == slug)
                .unwrap_or_else(|| panic!("built-in {slug} is seeded"))
                .id
        };
        env.store
            .attach_skill(agent.id, skill("review-a-diff"), true)
            .await
            .unwrap();
        env.store
            .attach_skill(agent.id, skill("fix-failing-ci"), false)
            .await
            .unwrap();

        let issue = env.issue("Say hello").await;
        env.assign(&issue, &agent).await;
        let run = env.the_run(&issue).await;
        let deadline = Instant::now() + RUN_DEADLINE;
        let run = loop {
            let now = env.store.get_run(run.id).await.unwrap();
            if now.status.is_terminal() {
                break now;
            }
            assert!(
                Instant::now() < deadline,
                "{backend:?}: the run did not end within {RUN_DEADLINE:?} (status {})",
                now.status
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        };
        let events = env.store.run_events_since(run.id, 0, 1000).await.unwrap();
        let kinds: Vec<&str> = events.iter().map(|e| e.kind.as_str()).collect();
        // It ran inside the sandbox (wherever the kernel has one, as CI's does).
        assert_eq!(kinds.first(), Some(&"sandbox"), "{backend:?}: {kinds:?}");
        if let muster::sandbox::Mode::Sandboxed { abi } = muster::sandbox::mode(&env.state.config) {
            assert_eq!(events[0].payload["abi"], abi, "{}", events[0].payload);
        }
        assert_eq!(
            run.status,
            RunStatus::Succeeded,
            "{backend:?}: {:?} {:?}",
            run.failure_reason,
            events.iter().map(|e| &e.payload).collect::<Vec<_>>()
        );

        let started = events
            .iter()
            .find(|e| e.kind == "started")
            .unwrap_or_else(|| panic!("{backend:?}: no started event in {kinds:?}"));
        let listed: Vec<&str> = started.payload["skills"]
            .as_array()
            .unwrap_or_else(|| {
                panic!(
                    "{backend:?}: started carries no skills: {}",
                    started.payload
                )
            })
            .iter()
            .filter_map(|s| s.as_str())
            .collect();
        assert!(
            listed.contains(&"review-a-diff"),
            "{backend:?}: the enabled skill is listed: {listed:?}"
        );
        assert!(
            !listed.contains(&"fix-failing-ci"),
            "{backend:?}: a switched-off skill is not handed over: {listed:?}"
        );
        assert!(
            events
                .iter()
                .any(|e| e.kind == "text" && e.payload["text"] == PLAIN_TEXT),
            "{backend:?}: the model's answer is in the log: {kinds:?}"
        );
        assert!(run.usage.input_tokens > 0 && run.usage.output_tokens > 0);
        assert!(run.session_id.is_some());

        let issue = env.issue_reaches(&issue, IssueStatus::InReview).await;
        let comments = env.store.list_comments(issue.id).await.unwrap();
        assert!(
            comments
                .iter()
                .any(|c| c.run_id == Some(run.id) && c.body.contains(PLAIN_TEXT)),
            "{backend:?}: the summary comment: {:?}",
            comments.iter().map(|c| &c.body).collect::<Vec<_>>()
        );
        assert!(
            model.requests().iter().any(|r| r.route() == "/v1/messages"),
            "{backend:?}: Claude Code talked to the scripted model"
        );
        env.shutdown.cancel();
    }
}
