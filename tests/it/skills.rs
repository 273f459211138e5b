//! Skills end to end: the built-ins are there after a start, and a real Claude Code (the pinned npm build,
//! against the scripted model server, offline) lists an attached, enabled skill in its `system/init`
//! event, and no longer lists it once detached; Muster's copy is gone after the run.
//!
//! The Claude half skips loudly without the CLI unless `MUSTER_REQUIRE_AGENT_CLIS=1` (see `agent_clis`).

mod on_disk;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use muster::domain::{AgentName, NewAgent, NewSkill, RuntimeKind, SkillSource, Workspace};
use muster::skills::parse;
use muster::store::Store;
use muster_agents::process::{self, CappedLines};
use muster_agents::{PermissionMode, RunSpec, adapter_for};
use muster_tests::model_server::ModelServer;
use muster_tests::{Backend, TestDb, spawn_app};
use tokio::io::BufReader;

const DEADLINE: Duration = Duration::from_secs(120);
const SKILL: &str = "---\nname: our-migrations\ndescription: How this team writes database migrations.\n---\n\n# Migrations\n\nWrite both dialects.\n";

/// A workspace `X` (`/w/x`) owned by `o@x.test`, made straight with `create_user` and
/// `create_workspace`: nothing else is seeded into it.
async fn plain_workspace(store: &Arc<dyn Store>) -> Workspace {
    let owner = store
        .create_user(&muster::domain::NewUser {
            email: muster::domain::Email::parse("o@x.test").unwrap(),
            display_name: "o".into(),
            password_hash: "x".into(),
        })
        .await
        .unwrap();
    store
        .create_workspace(
            &muster::domain::NewWorkspace::parse("X", "x", "XX").unwrap(),
            owner.id,
        )
        .await
        .unwrap()
}

async fn built_ins_are_seeded_at_start(backend: Backend) {
    let Some(db) = TestDb::new(backend).await else {
        return;
    };
    let app = spawn_app(db.config()).await;
    let ws = plain_workspace(&app.store).await;
    assert!(app.store.list_skills(ws.id).await.unwrap().is_empty());
    app.shutdown.cancel();
    app.handle.await.unwrap().unwrap();

    let again = spawn_app(db.config()).await;
    let skills = again.store.list_skills(ws.id).await.unwrap();
    let built_in: Vec<&str> = skills
        .iter()
        .filter(|s| s.source == SkillSource::BuiltIn)
        .map(|s| s.slug.as_str())
        .collect();
    assert_eq!(
        built_in,
        [
            "fix-failing-ci",
            "report-to-the-board",
            "review-a-diff",
            "small-honest-commits",
            "test-first-fix"
        ]
    );
    again.shutdown.cancel();
    again.handle.await.unwrap().unwrap();
}

both_backends!(built_ins_are_seeded_at_start,);

/// The `claude` binary, or `None` after a loud skip.
fn claude() -> Option<PathBuf> {
    muster_tests::agent_cli("claude", "the real-Claude skills test")
}

fn running_as_root() -> bool {
    std::fs::read_to_string("/proc/self/status").is_ok_and(|s| {
        s.lines()
            .find(|l| l.starts_with("Uid:"))
            .and_then(|l| l.split_whitespace().nth(1))
            == Some("0")
    })
}

/// Runs Claude Code in `workdir` with `home`, as the adapter launches it; returns the `skills` of its
/// `system/init` event.
/// Writes `agent`'s enabled skills for Claude Code into `work` and `home`, as a run's start does.
async fn write_skills(
    state: &muster::state::AppState,
    agent: muster::domain::AgentId,
    work: &Path,
    home: &Path,
    brief: &Path,
) -> muster::skills::Materialized {
    let bundles = muster::engine::order::skill_bundles(state.store.as_ref(), agent)
        .await
        .unwrap();
    muster::skills::materialize(RuntimeKind::Claude, &bundles, work, home, brief)
        .await
        .unwrap()
}

async fn init_skills(
    binary: &Path,
    server: &ModelServer,
    workdir: &Path,
    home: &Path,
) -> Vec<String> {
    let spec = RunSpec {
        binary: binary.to_path_buf(),
        prompt: "Say hello to Muster.".into(),
        base_url: Some(server.base_url().to_owned()),
        api_key: Some("muster-fake-key".into()),
        permission_mode: PermissionMode::Bypass,
        workdir: workdir.to_path_buf(),
        home_dir: home.to_path_buf(),
        running_as_root: running_as_root(),
        ..RunSpec::default()
    };
    let launch = adapter_for(RuntimeKind::Claude).command(&spec).unwrap();
    let mut child = process::spawn(&launch).await.unwrap();
    let stdout = child.stdout.take().unwrap();
    let mut init = None;
    let read = async {
        let mut lines = CappedLines::new(BufReader::new(stdout));
        while let Some(line) = lines.next_line().await? {
            let v: serde_json::Value = serde_json::from_str(&line).unwrap_or_default();
            if init.is_none() && v["type"] == "system" && v["subtype"] == "init" {
                init = Some(v);
            }
        }
        child.wait().await
    };
    let status = match tokio::time::timeout(DEADLINE, read).await {
        Ok(status) => status.unwrap(),
        Err(_) => {
            let _ = process::stop_group(&mut child).await;
            panic!("claude did not finish within {DEADLINE:?}");
        }
    };
    let init = init.unwrap_or_else(|| panic!("no system/init event (exit {status})"));
    init["skills"]
        .as_array()
        .unwrap_or_else(|| panic!("init has no skills: {init}"))
        .iter()
        .filter_map(|s| s.as_str().map(str::to_owned))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the agent CLIs (MUSTER_AGENT_CLIS_DIR, installed by .ci/run); run with --include-ignored"]
async fn claude_code_lists_an_attached_skill_and_not_a_detached_one() {
    let Some(binary) = claude() else {
        return;
    };
    let db = TestDb::new(Backend::Sqlite).await.unwrap();
    let config = db.config();
    muster::host::prepare_data_dir(&config.data_dir).unwrap();
    let store = db.store().await;
    let ws = plain_workspace(&store).await;
    let parsed = parse::parse(SKILL, Vec::new()).unwrap();
    let skill = store
        .create_skill(
            ws.id,
            &NewSkill {
                name: parsed.slug.as_str().into(),
                slug: parsed.slug.clone(),
                description: parsed.description,
                body: parsed.body,
                files: parsed.files,
                source: SkillSource::Imported,
                content_hash: parsed.content_hash,
            },
        )
        .await
        .unwrap();
    let profile = NewAgent::new(AgentName::parse("coder").unwrap(), RuntimeKind::Claude);
    let agent = store.create_agent(ws.id, &profile).await.unwrap();
    store.attach_skill(agent.id, skill.id, true).await.unwrap();
    let state = muster::state::AppState::new(store.clone(), config)
        .await
        .unwrap();
    let server = ModelServer::start().await.unwrap();

    // Attached and enabled: written into .claude/skills, listed by Claude Code, removed afterwards.
    let (work, home) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let brief = work.path().join("CLAUDE.md");
    std::fs::write(&brief, "# brief\n").unwrap();
    let written = write_skills(&state, agent.id, work.path(), home.path(), &brief).await;
    assert!(
        work.path()
            .join(".claude/skills/our-migrations/SKILL.md")
            .is_file()
    );
    let listed = init_skills(&binary, &server, work.path(), home.path()).await;
    assert!(
        listed.iter().any(|s| s == "our-migrations"),
        "init skills: {listed:?}"
    );
    drop(written);
    assert!(
        !work.path().join(".claude/skills").exists(),
        "Muster's skill folder is removed after the run"
    );

    // Disabled, then detached: not written, not listed.
    store.attach_skill(agent.id, skill.id, false).await.unwrap();
    let (work2, home2) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let off = write_skills(&state, agent.id, work2.path(), home2.path(), &brief).await;
    assert!(off.manifest().is_empty(), "a disabled skill is not written");
    store.detach_skill(agent.id, skill.id).await.unwrap();
    let none = write_skills(&state, agent.id, work2.path(), home2.path(), &brief).await;
    assert!(none.manifest().is_empty());
    let listed = init_skills(&binary, &server, work2.path(), home2.path()).await;
    assert!(
        !listed.iter().any(|s| s == "our-migrations"),
        "init skills: {listed:?}"
    );
    store.close().await;
}
