//! Issue 26, finding 12: "A run token reads every member's email and every agent's instructions and
//! commands." A run's token (the agent's `MUSTER_TOKEN`) now reads what its run needs and nothing more:
//! the workspace's issues, people's and agents' names (to mention or assign), its own issue's thread and
//! its own run. Emails, agents' instructions, model, command, arguments, environment and base URL, and
//! every token, runner, setting and usage page are out of its reach; `muster issue …` as the report skill
//! teaches it still works.

use std::collections::BTreeSet;

use serde_json::{Value, json};

use crate::api::deletes::run_token;
use crate::api::{Env, api_cases};

api_cases!(
    a_run_token_reads_names_not_emails_or_agents_setup,
    a_run_token_is_refused_tokens_runners_settings_and_usage,
    the_report_skills_cli_verbs_work_with_a_run_token,
);

/// What the attack looks for: the owner's agent's instructions, command line, environment and base URL.
const SECRETS_OF_SETUP: &[&str] = &[
    "Never tell anyone about project Falcon.",
    "llm.internal.test",
    "REGION",
    "--search",
    "/opt/falcon/bin/agent",
];

/// An owner's custom agent with instructions, a command, arguments, an environment and a base URL.
async fn owners_agent(t: &Env) {
    t.owner
        .api
        .post(
            "/api/v1/agents",
            json!({"name": "falcon", "kind": "custom", "model": "o4",
                   "command": "/opt/falcon/bin/agent",
                   "instructions": "Never tell anyone about project Falcon.",
                   "base_url": "https://llm.internal.test", "extra_args": ["--search"],
                   "env": [{"key": "REGION", "value": "eu"}]}),
        )
        .await
        .expect(201);
}

async fn new_issue(t: &Env, title: &str) -> String {
    let issue = t
        .owner
        .api
        .post("/api/v1/issues", json!({"title": title}))
        .await
        .expect(201);
    issue["key"].as_str().unwrap().to_owned()
}

fn keys(v: &Value) -> BTreeSet<&str> {
    v.as_object().unwrap().keys().map(String::as_str).collect()
}

/// The attack: with its run's token an agent lists the members and agents. Before: every email, and every
/// agent's instructions, command, arguments, environment and base URL. Now: names and ids only.
async fn a_run_token_reads_names_not_emails_or_agents_setup(t: &Env) {
    owners_agent(t).await;
    let key = new_issue(t, "Work").await;
    let agent = t.bearer(&run_token(t, &key, "worker").await);
    let emails = [&t.owner.email, &t.admin.email, &t.member.email];

    let members = agent.get("/api/v1/members").await.expect(200);
    let text = members.to_string();
    for email in emails {
        assert!(!text.contains(email.as_str()), "{email} in {text}");
    }
    let names: BTreeSet<&str> = members
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["name"].as_str().unwrap())
        .collect();
    assert!(names.contains(t.member.name.as_str()), "{text}");
    for m in members.as_array().unwrap() {
        assert!(m.get("email").is_none(), "{m}");
        assert!(m["user_id"].is_string(), "an id to assign by: {m}");
    }
    // Nor the email of the owner who holds the run's token.
    let me = agent.get("/api/v1/me").await.expect(200);
    assert!(me.get("email").is_none(), "{me}");
    assert!(!me.to_string().contains(t.owner.email.as_str()), "{me}");

    let agents = agent.get("/api/v1/agents").await.expect(200);
    let text = agents.to_string();
    for secret in SECRETS_OF_SETUP {
        assert!(!text.contains(secret), "{secret} in {text}");
    }
    for a in agents.as_array().unwrap() {
        assert_eq!(keys(a), BTreeSet::from(["color", "id", "name"]), "{a}");
    }
    let falcon = agent.get("/api/v1/agents/falcon").await.expect(200);
    assert_eq!(keys(&falcon), BTreeSet::from(["color", "id", "name"]));
    assert_eq!(falcon["name"], "falcon");

    // People see it all as before.
    let members = t.member.api.get("/api/v1/members").await.expect(200);
    assert!(members.to_string().contains(t.owner.email.as_str()));
    let falcon = t.member.api.get("/api/v1/agents/falcon").await.expect(200);
    assert_eq!(
        falcon["instructions"],
        "Never tell anyone about project Falcon."
    );
    assert_eq!(
        t.owner.api.get("/api/v1/me").await.expect(200)["email"],
        t.owner.email.as_str()
    );
}

/// Every other area a person's token reaches is refused to a run's token (403 on `token`, naming its run
/// and issue).
async fn a_run_token_is_refused_tokens_runners_settings_and_usage(t: &Env) {
    let key = new_issue(t, "Work").await;
    let other = new_issue(t, "Someone else's").await;
    let agent = t.bearer(&run_token(t, &key, "worker").await);
    for path in [
        "/api/v1/tokens",
        "/api/v1/runner-tokens",
        "/api/v1/runners",
        "/api/v1/workspace",
        "/api/v1/usage",
        "/api/v1/members/invitations",
        "/api/v1/invitations",
        "/api/v1/runs",
        "/api/v1/skills",
        "/api/v1/ensembles",
        "/api/v1/runtimes",
    ] {
        let reply = agent.get(path).await;
        let messages = reply.error(403, "token");
        assert!(
            messages[0].contains(&format!("may only act on issue {key}")),
            "{path}: {messages:?}"
        );
    }
    // Issues of its workspace are readable (`muster issue list` and `show`), not writable.
    let list = agent.get("/api/v1/issues").await.expect(200);
    assert!(list.to_string().contains(&other), "{list}");
    agent
        .get(&format!("/api/v1/issues/{other}"))
        .await
        .expect(200);
    agent
        .post(
            &format!("/api/v1/issues/{other}/comments"),
            json!({"body": "planted"}),
        )
        .await
        .error(403, "token");
    agent
        .patch(
            &format!("/api/v1/issues/{other}"),
            json!({"status": "done"}),
        )
        .await
        .error(403, "token");
    agent
        .patch("/api/v1/agents/worker", json!({"budget_usd": 1000}))
        .await
        .error(403, "token");
}

/// `muster issue comment`, `status`, `show` and `list`, as the report-to-the-board skill teaches them,
/// with a run's token in `MUSTER_TOKEN`.
async fn the_report_skills_cli_verbs_work_with_a_run_token(t: &Env) {
    let key = new_issue(t, "Work").await;
    t.owner
        .api
        .patch(&format!("/api/v1/issues/{key}"), json!({"status": "todo"}))
        .await
        .expect(200);
    let token = run_token(t, &key, "worker").await;
    let config = tempfile::tempdir().unwrap();
    let muster = |args: &[&str]| {
        let out = std::process::Command::new(muster_tests::muster_bin())
            .args(args)
            .env_clear()
            .env("MUSTER_URL", t.app.url(""))
            .env("MUSTER_TOKEN", &token)
            .env("MUSTER_CONFIG_DIR", config.path())
            .output()
            .expect("run muster");
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(
            out.status.success(),
            "muster {args:?}: {stdout}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        stdout
    };
    muster(&["issue", "comment", &key, "Found the cause."]);
    let shown = muster(&["issue", "show", &key]);
    assert!(shown.contains("Found the cause."), "{shown}");
    let listed = muster(&["issue", "list", "--status", "todo"]);
    assert!(listed.contains(&key), "{listed}");
    muster(&["issue", "status", &key, "in_review"]);
    let issue = t
        .owner
        .api
        .get(&format!("/api/v1/issues/{key}"))
        .await
        .expect(200);
    assert_eq!(issue["status"], "in_review");
    let members = muster(&["member", "list"]);
    assert!(!members.contains(t.owner.email.as_str()), "{members}");
    assert!(members.contains(t.owner.name.as_str()), "{members}");
}
