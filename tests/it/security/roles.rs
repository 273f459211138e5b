//! Issue 11, "Any member owns the server" and "Members read other people's secrets": the fields that
//! decide what runs on the server (kind, command, extra args, env and secrets, base URL, permission
//! mode) are owners' and admins' alone, and a re-pointed agent loses the secrets it was given.
//! Issue 26, finding 7, "Members can raise an agent's budget (`{"budget_usd":100000}` → 200), stall
//! timeout, model and name": those are owners' and admins' too, on the API, the page and the CLI; a
//! member may only lower a budget.
//!
//! Every attack goes through the real server over real HTTP, on both backends; next to each, what an
//! honest member can still do.

use std::time::Duration;

use muster::domain::{AgentName, NewAgent};
use serde_json::{Value, json};

use crate::api::Reply;
use crate::api::{Env, api_cases, page_client, post_form};

api_cases!(
    a_member_cannot_create_an_agent,
    a_member_cannot_change_what_runs,
    a_member_may_change_the_rest,
    a_member_sees_the_runtime_read_only_on_the_page,
    a_member_cannot_raise_a_budget_or_change_name_model_or_stall_timeout,
    a_member_cannot_raise_a_budget_from_the_page_or_the_cli,
);

/// With the embedded runner on, so the re-pointed agent really runs.
mod with_runner {
    async fn check(backend: muster_tests::Backend) {
        let started = crate::api::Env::start_with(backend, |c| c.embedded_runner = true).await;
        if let Some(env) = started {
            super::repointing_drops_secrets_unless_entered_again(&env).await;
            env.finish().await;
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn sqlite_repointing_drops_secrets() {
        check(muster_tests::Backend::Sqlite).await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    #[ignore = "needs PostgreSQL (MUSTER_TEST_PG_URL); run with --include-ignored"]
    async fn postgres_repointing_drops_secrets() {
        check(muster_tests::Backend::Postgres).await;
    }
}

/// The owner's agent every attack below goes after: a Codex agent with a stored secret.
async fn owners_agent(t: &Env) -> Value {
    t.owner
        .api
        .post(
            "/api/v1/agents",
            json!({"name": "coder", "kind": "codex", "model": "o4", "instructions": "Be careful.",
                   "base_url": "https://llm.internal.test", "extra_args": ["--search"],
                   "env": [{"key": "OPENAI_API_KEY", "value": "sk-owner-secret", "secret": true},
                           {"key": "REGION", "value": "eu"}]}),
        )
        .await
        .expect(201)
}

/// [`owners_agent`], given the budget `budget` by the owner; returns it as stored.
async fn owners_agent_with_budget(t: &Env, budget: Value) -> NewAgent {
    owners_agent(t).await;
    t.owner
        .api
        .patch("/api/v1/agents/coder", budget)
        .await
        .expect(200);
    stored(t, "coder").await
}

async fn stored(t: &Env, name: &str) -> NewAgent {
    t.app
        .store
        .get_agent_by_name(t.ws.id, &AgentName::parse(name).unwrap())
        .await
        .unwrap()
        .profile
}

/// The refusal of a member's change to `what`: "only owners and admins may change the `what`".
fn owners_may_change(what: &str) -> String {
    format!("only owners and admins may change the {what}")
}

/// Each `(field, body, message)`: the member's `PATCH` of agent `coder` with `body` is refused (403)
/// with `message` on `field`, and `coder` stays `before`.
async fn refused_to_the_member(
    t: &Env,
    attacks: &[(&str, Value, impl AsRef<str>)],
    before: &NewAgent,
) {
    for (field, body, message) in attacks {
        let message = message.as_ref();
        let reply = t
            .member
            .api
            .patch("/api/v1/agents/coder", body.clone())
            .await;
        assert_eq!(reply.error(403, field), [message], "{body}");
        assert_eq!(&stored(t, "coder").await, before, "{body} changed nothing");
    }
}

/// The refusal `reply` of a request changing several owners' fields names exactly `fields`, and agent
/// `coder` stays `before`: none of the request is applied.
async fn names_each_and_applies_none(t: &Env, reply: &Reply, fields: &[&str], before: &NewAgent) {
    let named: Vec<&String> = reply.body["errors"].as_object().unwrap().keys().collect();
    assert_eq!(named, fields);
    assert_eq!(&stored(t, "coder").await, before);
}

/// The original attack: a member's `custom` agent whose run read `secret.key` and rewrote the database.
/// Creating any agent is now owners' and admins' (403 naming who may); nothing is stored.
async fn a_member_cannot_create_an_agent(t: &Env) {
    let attack = json!({"name": "pwn", "kind": "custom",
        "command": "sh -c 'cat ../../secret.key; sqlite3 ../../../muster.db \"update member set role=owner\"'"});
    let reply = t.member.api.post("/api/v1/agents", attack.clone()).await;
    assert_eq!(
        reply.error(403, "role"),
        ["only owners and admins may create agents"]
    );
    // Harmless-looking agents too: every agent decides what runs.
    t.member
        .api
        .post(
            "/api/v1/agents",
            json!({"name": "helper", "kind": "claude"}),
        )
        .await
        .error_contains(403, "role", "only owners and admins may create agents");
    assert!(t.app.store.list_agents(t.ws.id).await.unwrap().is_empty());
    t.member
        .api
        .get("/api/v1/agents/pwn")
        .await
        .error(404, "resource");
    // The member's role is untouched.
    assert_eq!(
        t.member.api.get("/api/v1/me").await.expect(200)["role"],
        "member"
    );

    // The API document says so.
    let doc = t.anon.get("/api/v1/openapi.json").await.expect(200);
    for method in ["post", "patch"] {
        let path = if method == "post" {
            "/api/v1/agents"
        } else {
            "/api/v1/agents/{name}"
        };
        assert!(
            doc["paths"][path][method]["responses"]["403"].is_object(),
            "{method} {path} documents its 403"
        );
    }

    // Owners and admins still create agents.
    t.owner
        .api
        .post("/api/v1/agents", json!({"name": "a1", "kind": "claude"}))
        .await
        .expect(201);
    t.admin
        .api
        .post(
            "/api/v1/agents",
            json!({"name": "a2", "kind": "custom", "command": "/usr/bin/true"}),
        )
        .await
        .expect(201);
}

/// A member changes each runtime field of the owner's agent: 403 on exactly that field, and the stored
/// agent is the same as before, secret included.
async fn a_member_cannot_change_what_runs(t: &Env) {
    owners_agent(t).await;
    let before = stored(t, "coder").await;
    let env = "environment and its secrets";
    let attacks: [(&str, Value, &str); 9] = [
        (
            "kind",
            json!({"kind": "custom", "command": "/tmp/evil"}),
            "runtime kind",
        ),
        ("command", json!({"command": "/tmp/evil"}), "command"),
        (
            "extra_args",
            json!({"extra_args": ["-c", "sandbox_mode=danger-full-access"]}),
            "extra arguments",
        ),
        (
            "env",
            json!({"env": [{"key": "OPENAI_API_KEY", "secret": true}, {"key": "REGION", "value": "eu"},
                           {"key": "LD_PRELOAD", "value": "/tmp/evil.so"}]}),
            env,
        ),
        (
            "env",
            json!({"env": [{"key": "OPENAI_API_KEY", "secret": true},
                           {"key": "REGION", "value": "eu"}, {"key": "PATH", "value": "/tmp/evil-bin"}]}),
            env,
        ),
        (
            "env",
            json!({"env": [{"key": "OPENAI_API_KEY", "value": "sk-mine", "secret": true},
                           {"key": "REGION", "value": "eu"}]}),
            env,
        ),
        (
            "base_url",
            json!({"base_url": "http://attacker.test:8080"}),
            "base URL",
        ),
        (
            "permission_mode",
            json!({"permission_mode": "bypass"}),
            "permission mode",
        ),
        (
            "permission_mode",
            json!({"permission_mode": "read_only"}),
            "permission mode",
        ),
    ];
    let attacks = attacks.map(|(field, body, what)| (field, body, owners_may_change(what)));
    refused_to_the_member(t, &attacks, &before).await;
    // One request changing several runtime fields names each; the allowed ones in it are not applied.
    let reply = t
        .member
        .api
        .patch(
            "/api/v1/agents/coder",
            json!({"kind": "custom", "command": "/tmp/evil", "base_url": "http://x.test", "model": "o5"}),
        )
        .await;
    let errors = reply.error(403, "kind");
    assert_eq!(
        errors,
        ["only owners and admins may change the runtime kind"]
    );
    names_each_and_applies_none(
        t,
        &reply,
        &["base_url", "command", "kind", "model"],
        &before,
    )
    .await;

    // Re-sending the current values is not a change: the CLI and scripts may send whole profiles.
    let same = t
        .member
        .api
        .patch(
            "/api/v1/agents/coder",
            json!({"kind": "codex", "base_url": "https://llm.internal.test", "extra_args": ["--search"],
                   "permission_mode": "workspace_write",
                   "env": [{"key": "OPENAI_API_KEY", "secret": true}, {"key": "REGION", "value": "eu"}]}),
        )
        .await
        .expect(200);
    assert_eq!(same["kind"], "codex");
    assert_eq!(stored(t, "coder").await.env, before.env);

    // An admin changes all of it.
    let changed = t
        .admin
        .api
        .patch(
            "/api/v1/agents/coder",
            json!({"permission_mode": "bypass", "extra_args": ["--fast"],
                   "env": [{"key": "OPENAI_API_KEY", "secret": true}, {"key": "PATH", "value": "/opt/bin"}]}),
        )
        .await
        .expect(200);
    assert_eq!(
        (
            changed["permission_mode"].as_str(),
            changed["extra_args"][0].as_str()
        ),
        (Some("bypass"), Some("--fast"))
    );
}

/// An honest member still edits instructions, colour, concurrency and retries, lowers budgets, and attaches
/// skills; deleting stays owners' and admins'.
async fn a_member_may_change_the_rest(t: &Env) {
    let before =
        owners_agent_with_budget(t, json!({"budget_usd": 5.0, "budget_tokens": 100000})).await;
    let edited = t
        .member
        .api
        .patch(
            "/api/v1/agents/coder",
            json!({"instructions": "Write tests first.", "color": "#112233",
                   "max_concurrent_runs": 2, "max_retries": 1,
                   "budget_usd": 1.5, "budget_tokens": 50000,
                   // The owners' fields, sent as they are, are no change.
                   "name": "coder", "model": "o4", "stall_timeout_secs": before.stall_timeout_secs}),
        )
        .await
        .expect(200);
    assert_eq!(edited["instructions"], "Write tests first.");
    assert_eq!(edited["model"], "o4");
    assert_eq!(
        (
            edited["max_concurrent_runs"].as_i64(),
            edited["budget_usd"].as_f64(),
            edited["budget_tokens"].as_i64()
        ),
        (Some(2), Some(1.5), Some(50000))
    );
    let after = stored(t, "coder").await;
    assert_eq!(
        (&after.env, &after.kind, &after.base_url),
        (&before.env, &before.kind, &before.base_url),
        "the runtime and the secret stay as the owner set them"
    );
    // Skills: attach and detach.
    t.owner
        .api
        .post(
            "/api/v1/skills",
            json!({"skill_md": "---\nname: tdd\ndescription: Tests first.\n---\n\nWrite the test first.\n"}),
        )
        .await
        .expect(201);
    t.member
        .api
        .json(
            reqwest::Method::PUT,
            "/api/v1/agents/coder/skills/tdd",
            &json!({"enabled": true}),
        )
        .await
        .expect(200);
    assert_eq!(
        t.member
            .api
            .delete("/api/v1/agents/coder/skills/tdd")
            .await
            .expect(200),
        json!([])
    );
    t.member
        .api
        .delete("/api/v1/agents/coder")
        .await
        .error(403, "auth");
    // An admin renames it and changes the rest.
    let renamed = t
        .admin
        .api
        .patch(
            "/api/v1/agents/coder",
            json!({"name": "coder2", "model": "o5", "stall_timeout_secs": 120, "budget_usd": 0}),
        )
        .await
        .expect(200);
    assert_eq!(
        (
            renamed["name"].as_str(),
            renamed["model"].as_str(),
            renamed["stall_timeout_secs"].as_i64(),
            renamed["budget_usd"].as_f64()
        ),
        (Some("coder2"), Some("o5"), Some(120), None)
    );
}

/// The attack of issue 26: a member raises the owner's agent's budget to 100000 USD (and, separately,
/// removes it, raises the token budget, renames the agent, changes its model or its stall timeout).
/// Each is 403 naming the field, and the stored agent is unchanged.
async fn a_member_cannot_raise_a_budget_or_change_name_model_or_stall_timeout(t: &Env) {
    let before =
        owners_agent_with_budget(t, json!({"budget_usd": 5.0, "budget_tokens": 100000})).await;
    let usd = "only owners and admins may raise or remove the budget; a member may only lower it";
    let tokens =
        "only owners and admins may raise or remove the token budget; a member may only lower it";
    let attacks: [(&str, Value, &str); 8] = [
        ("budget_usd", json!({"budget_usd": 100000}), usd),
        ("budget_usd", json!({"budget_usd": 5.01}), usd),
        ("budget_usd", json!({"budget_usd": 0}), usd),
        ("budget_tokens", json!({"budget_tokens": 100001}), tokens),
        ("budget_tokens", json!({"budget_tokens": 0}), tokens),
        (
            "name",
            json!({"name": "ceo-bot"}),
            &owners_may_change("name"),
        ),
        (
            "model",
            json!({"model": "o3-pro"}),
            &owners_may_change("model"),
        ),
        (
            "stall_timeout_secs",
            json!({"stall_timeout_secs": 86400}),
            &owners_may_change("stall timeout"),
        ),
    ];
    refused_to_the_member(t, &attacks, &before).await;
    // One request with several: each named, nothing applied (not even the lowered token budget).
    let reply = t
        .member
        .api
        .patch(
            "/api/v1/agents/coder",
            json!({"budget_usd": 100000, "model": "o3-pro", "budget_tokens": 10, "instructions": "x"}),
        )
        .await;
    reply.error(403, "budget_usd");
    names_each_and_applies_none(t, &reply, &["budget_usd", "model"], &before).await;
    // Lowering is the member's.
    let lowered = t
        .member
        .api
        .patch(
            "/api/v1/agents/coder",
            json!({"budget_usd": 4.99, "budget_tokens": 99999}),
        )
        .await
        .expect(200);
    assert_eq!(
        (
            lowered["budget_usd"].as_f64(),
            lowered["budget_tokens"].as_i64()
        ),
        (Some(4.99), Some(99999))
    );
    // And an agent with no budget may be given one by a member (a limit where there was none).
    t.owner
        .api
        .post("/api/v1/agents", json!({"name": "free", "kind": "claude"}))
        .await
        .expect(201);
    t.member
        .api
        .patch("/api/v1/agents/free", json!({"budget_usd": 2}))
        .await
        .expect(200);
    t.member
        .api
        .patch("/api/v1/agents/free", json!({"budget_usd": 3}))
        .await
        .error(403, "budget_usd");
}

/// The same attack through the member's form (a crafted post re-enabling the disabled fields, and the
/// budget field the form leaves open) and through `muster agent edit` with the member's token.
async fn a_member_cannot_raise_a_budget_from_the_page_or_the_cli(t: &Env) {
    let before = owners_agent_with_budget(t, json!({"budget_usd": 5.0})).await;
    let (csrf, page) = member_pages(t).await;
    let form = |extra: &str| {
        format!(
            "_csrf={csrf}&color=%23334455&instructions=Be+careful.&max_concurrent_runs=1&max_retries=2&budget_tokens={extra}"
        )
    };
    for (field, crafted) in [
        ("budget_usd", form("&budget_usd=100000")),
        // The form's empty budget means "no limit": removing it is raising it.
        ("budget_usd", form("&budget_usd=")),
        ("name", form("&budget_usd=5&name=ceo-bot")),
        ("model", form("&budget_usd=5&model=o3-pro")),
        (
            "stall_timeout_secs",
            form("&budget_usd=5&stall_timeout_secs=86400"),
        ),
    ] {
        let reply = post_form(&page, &t.app, "/w/alpha/agents/coder", crafted.clone()).await;
        assert_eq!(reply.status(), 403, "{crafted}");
        let body = reply.text().await.unwrap();
        assert!(
            body.contains("only owners and admins may"),
            "{field}: {body}"
        );
        assert_eq!(stored(t, "coder").await, before, "{crafted}");
    }
    // The honest member's form (owners' fields disabled, so not sent) lowers the budget.
    let reply = post_form(
        &page,
        &t.app,
        "/w/alpha/agents/coder",
        form("&budget_usd=2.5"),
    )
    .await;
    assert_eq!(reply.status(), 303);
    let after = stored(t, "coder").await;
    assert_eq!(after.budget.usd, Some(2.5));
    assert_eq!(
        (&after.name, &after.model, after.stall_timeout_secs),
        (&before.name, &before.model, before.stall_timeout_secs)
    );

    // The CLI, with the member's token.
    let cli = |args: &[&str]| {
        let out = std::process::Command::new(muster_tests::muster_bin())
            .args(args)
            .env_clear()
            .env("MUSTER_URL", t.app.url(""))
            .env("MUSTER_TOKEN", &t.member.token)
            .env("MUSTER_CONFIG_DIR", t.app.data_dir.join("client"))
            .output()
            .expect("run muster");
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let (ok, stderr) = cli(&["agent", "edit", "coder", "--budget-usd", "100000"]);
    assert!(!ok);
    assert!(
        stderr.contains("only owners and admins may raise or remove the budget"),
        "{stderr}"
    );
    let (ok, stderr) = cli(&[
        "agent",
        "edit",
        "coder",
        "--model",
        "o3-pro",
        "--stall-timeout",
        "86400",
    ]);
    assert!(!ok);
    assert!(
        stderr.contains("only owners and admins may change the model")
            && stderr.contains("only owners and admins may change the stall timeout"),
        "{stderr}"
    );
    let (ok, stderr) = cli(&["agent", "edit", "coder", "--rename", "ceo-bot"]);
    assert!(
        !ok && stderr.contains("only owners and admins may change the name"),
        "{stderr}"
    );
    assert_eq!(stored(t, "coder").await.budget.usd, Some(2.5));
    let (ok, stderr) = cli(&["agent", "edit", "coder", "--budget-usd", "1"]);
    assert!(ok, "{stderr}");
    assert_eq!(stored(t, "coder").await.budget.usd, Some(1.0));
}

/// The member signed in on the pages: their CSRF token and a client with their cookie.
async fn member_pages(t: &Env) -> (String, reqwest::Client) {
    let cookie = t
        .login(&t.member.email, crate::api::PASSWORD)
        .await
        .unwrap();
    (muster::auth::csrf_token(&cookie), page_client(&cookie))
}

/// The page of agent `coder`, as `client` sees it.
async fn agent_page(client: &reqwest::Client, t: &Env) -> String {
    let page = client.get(t.app.url("/w/alpha/agents/coder")).send().await;
    page.unwrap().text().await.unwrap()
}

/// The pages: a member's form shows the runtime read-only with the reason; a crafted form post that
/// changes the command is refused (403) and changes nothing; the member's own fields save; the new-agent
/// page and its post are refused.
async fn a_member_sees_the_runtime_read_only_on_the_page(t: &Env) {
    owners_agent(t).await;
    let before = stored(t, "coder").await;
    let (csrf, page) = member_pages(t).await;
    let html = agent_page(&page, t).await;
    assert!(html.contains(r#"<fieldset class="panel agent-runtime" disabled>"#));
    assert!(html.contains(r#"<fieldset class="panel agent-env" disabled>"#));
    assert!(html.contains("Only owners and admins may change the runtime and environment"));
    assert!(
        html.contains(r#"value="https://llm.internal.test""#),
        "shown, not hidden"
    );

    // What a browser sends for the member's form: the disabled owners' fields are absent.
    let honest = format!(
        "_csrf={csrf}&color=%23334455&instructions=Mind+the+tests&max_concurrent_runs=1&max_retries=2&budget_usd=&budget_tokens="
    );
    let reply = post_form(&page, &t.app, "/w/alpha/agents/coder", honest).await;
    assert_eq!(reply.status(), 303);
    let after = stored(t, "coder").await;
    assert_eq!(
        (after.model.as_deref(), after.instructions.as_str()),
        (Some("o4"), "Mind the tests")
    );
    assert_eq!(
        (
            &after.env,
            &after.extra_args,
            &after.base_url,
            &after.command
        ),
        (
            &before.env,
            &before.extra_args,
            &before.base_url,
            &before.command
        )
    );

    // A crafted post that re-enables the fields.
    let crafted = format!(
        "_csrf={csrf}&name=coder&color=%23334455&kind=custom&model=o3&instructions=x&command=%2Ftmp%2Fevil&base_url=&extra_args=&env_key=LD_PRELOAD&env_value=%2Ftmp%2Fevil.so&max_concurrent_runs=1&stall_timeout_secs=600&max_retries=2"
    );
    let reply = post_form(&page, &t.app, "/w/alpha/agents/coder", crafted).await;
    assert_eq!(reply.status(), 403);
    let body = reply.text().await.unwrap();
    assert!(
        body.contains("only owners and admins may change the command"),
        "{body}"
    );
    assert_eq!(stored(t, "coder").await, after);

    let new = page
        .get(t.app.url("/w/alpha/agents/new"))
        .send()
        .await
        .unwrap();
    assert_eq!(new.status(), 403);
    assert!(
        new.text()
            .await
            .unwrap()
            .contains("only owners and admins may create agents")
    );
    let create = format!("_csrf={csrf}&name=pwn&kind=custom&command=%2Ftmp%2Fevil");
    assert_eq!(
        post_form(&page, &t.app, "/w/alpha/agents", create)
            .await
            .status(),
        403
    );
    assert_eq!(t.app.store.list_agents(t.ws.id).await.unwrap().len(), 1);

    // The owner's form is editable.
    let owner_cookie = t.login(&t.owner.email, crate::api::PASSWORD).await.unwrap();
    let html = agent_page(&page_client(&owner_cookie), t).await;
    assert!(html.contains(r#"<fieldset class="panel agent-runtime">"#));
    assert!(!html.contains("Only owners and admins may change the runtime"));
}

/// "A member re-pointed an owner's agent and the stored secret env went along." Re-pointing is an
/// admin's action now, and even then the secrets stay behind unless entered again in the same request:
/// the store no longer holds them and the next run's environment has none.
async fn repointing_drops_secrets_unless_entered_again(t: &Env) {
    let scripts = tempfile::tempdir().unwrap();
    // The run prints only whether it got the secret and its length, never the value.
    let probe = "#!/bin/sh\ncat >/dev/null\necho \"has-key:${API_KEY:+yes} len:${#API_KEY}\"\n";
    let script = |name: &str| {
        use std::os::unix::fs::PermissionsExt as _;
        let path = scripts.path().join(name);
        std::fs::write(&path, probe).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        path.display().to_string()
    };
    let (first, second, third) = (script("first"), script("second"), script("third"));
    let api = &t.owner.api;
    api.post(
        "/api/v1/agents",
        json!({"name": "probe", "kind": "custom", "command": first, "max_retries": 0,
               "env": [{"key": "API_KEY", "value": "sk-owner-secret-1234", "secret": true},
                       {"key": "REGION", "value": "eu"}]}),
    )
    .await
    .expect(201);
    let secret_keys = |a: &NewAgent| {
        a.env
            .iter()
            .filter(|v| v.secret)
            .map(|v| v.key.clone())
            .collect::<Vec<_>>()
    };
    assert_eq!(secret_keys(&stored(t, "probe").await), ["API_KEY"]);

    // Edits that keep the destination keep the secret.
    t.admin
        .api
        .patch("/api/v1/agents/probe", json!({"instructions": "x"}))
        .await
        .expect(200);
    assert_eq!(secret_keys(&stored(t, "probe").await), ["API_KEY"]);

    // The admin re-points the command (and, separately, the base URL and the kind) without re-entering.
    let moved = t
        .admin
        .api
        .patch("/api/v1/agents/probe", json!({"command": second}))
        .await
        .expect(200);
    assert_eq!(
        moved["env"],
        json!([{"key": "REGION", "value": "eu", "secret": false}]),
        "the secret is gone, the plain variable stays"
    );
    assert!(secret_keys(&stored(t, "probe").await).is_empty());
    assert_eq!(
        run_output(t, "probe", "after re-point").await,
        "has-key: len:0"
    );

    for repoint in [
        json!({"base_url": "http://other.test:9000"}),
        json!({"kind": "custom", "command": first}),
    ] {
        api.patch(
            "/api/v1/agents/probe",
            json!({"env": [{"key": "API_KEY", "value": "sk-again", "secret": true}]}),
        )
        .await
        .expect(200);
        t.admin
            .api
            .patch("/api/v1/agents/probe", repoint.clone())
            .await
            .expect(200);
        assert!(
            secret_keys(&stored(t, "probe").await).is_empty(),
            "{repoint}"
        );
    }
    // A kind change drops it too.
    api.patch(
        "/api/v1/agents/probe",
        json!({"env": [{"key": "API_KEY", "value": "sk-again", "secret": true}]}),
    )
    .await
    .expect(200);
    api.patch(
        "/api/v1/agents/probe",
        json!({"kind": "claude", "command": ""}),
    )
    .await
    .expect(200);
    assert!(secret_keys(&stored(t, "probe").await).is_empty());

    // Re-entered in the same request, it stays: the admin means this destination to have it.
    let kept = t
        .admin
        .api
        .patch(
            "/api/v1/agents/probe",
            json!({"kind": "custom", "command": third,
                   "env": [{"key": "API_KEY", "value": "sk-new-secret-99", "secret": true}]}),
        )
        .await
        .expect(200);
    assert_eq!(
        kept["env"],
        json!([{"key": "API_KEY", "value": null, "secret": true}])
    );
    let boxed = muster::secrets::SecretBox::load_or_create(&t.app.data_dir).unwrap();
    let sealed = stored(t, "probe").await.env[0].value.clone();
    assert_eq!(boxed.open(&sealed).unwrap(), "sk-new-secret-99");
    assert_eq!(
        run_output(t, "probe", "after re-entering").await,
        "has-key:yes len:16"
    );
}

/// Assigns a new issue to `agent` through the API, waits for its run to end and returns the line the
/// probe printed.
async fn run_output(t: &Env, agent: &str, title: &str) -> String {
    let issue = t
        .owner
        .api
        .post(
            "/api/v1/issues",
            json!({"title": title, "status": "todo", "assignee": agent}),
        )
        .await
        .expect(201);
    let key = issue["key"].as_str().unwrap().to_owned();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    let run = loop {
        let runs = t
            .owner
            .api
            .get(&format!("/api/v1/issues/{key}/runs"))
            .await
            .expect(200);
        if let Some(run) = runs
            .as_array()
            .and_then(|r| r.first())
            .filter(|r| !matches!(r["status"].as_str(), Some("queued" | "claimed" | "running")))
        {
            break run.clone();
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the run did not end: {runs}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let events = t
        .owner
        .api
        .get(&format!(
            "/api/v1/runs/{}/events",
            run["id"].as_str().unwrap()
        ))
        .await
        .expect(200);
    let text = events.to_string();
    let start = text
        .find("has-key:")
        .unwrap_or_else(|| panic!("no probe line in {text}"));
    let line = &text[start..];
    let end = line.find(['"', '\\']).unwrap_or(line.len());
    line[..end].trim().to_owned()
}
