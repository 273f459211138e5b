//! Forms over real HTTP on both backends (issue 17): the one password rule, a used setup link, and the
//! built-in `report-to-the-board` skill attached to a new agent.

use muster_tests::{Backend, TestApp, TestDb, spawn_app};
use reqwest::StatusCode;
use reqwest::redirect::Policy;

const USED: &str = "This setup link was already used — sign in";

fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(Policy::none())
        .build()
        .unwrap()
}

async fn post_setup(app: &TestApp, token: &str, password: &str) -> reqwest::Response {
    client()
        .post(app.url("/setup"))
        .form(&[
            ("token", token),
            ("workspace_name", "Acme"),
            ("issue_prefix", ""),
            ("name", "Ada"),
            ("email", "ada@acme.test"),
            ("password", password),
        ])
        .send()
        .await
        .unwrap()
}

/// The session cookie (`muster_session=…`) a response sets.
fn session_cookie(res: &reqwest::Response) -> String {
    res.headers()
        .get_all("set-cookie")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .find(|v| v.starts_with("muster_session="))
        .and_then(|v| v.split(';').next())
        .unwrap()
        .to_owned()
}

/// Setup refuses a password shorter than the hint says, with the hint's number; once done, the link
/// (and any other) answers 410 with a page that says so and links to the login page; the first agent
/// has `report-to-the-board` attached and enabled.
async fn setup_link_and_first_agent(backend: Backend) {
    let Some(db) = TestDb::new(backend).await else {
        return;
    };
    let app = spawn_app(db.config()).await;
    let link = app
        .setup_url
        .clone()
        .expect("a fresh database offers setup");
    let token = link.split("token=").nth(1).unwrap().to_owned();

    let page = client()
        .get(&link)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(page.contains("At least 12 characters."), "{page}");
    let short = post_setup(&app, &token, "eleven-char").await;
    assert_eq!(short.status(), StatusCode::UNPROCESSABLE_ENTITY);
    let body = short.text().await.unwrap();
    assert!(body.contains("must be at least 12 characters"), "{body}");
    assert!(
        body.contains("At least 12 characters."),
        "the hint says the rule"
    );

    let done = post_setup(&app, &token, "twelve-chars").await;
    assert_eq!(done.status(), StatusCode::SEE_OTHER);
    let cookie = session_cookie(&done);

    for reused in [
        client().get(&link).send().await.unwrap(),
        post_setup(&app, &token, "another-long-one").await,
        client()
            .get(app.url("/setup?token=guess"))
            .send()
            .await
            .unwrap(),
    ] {
        assert_eq!(reused.status(), StatusCode::GONE);
        let body = reused.text().await.unwrap();
        assert!(body.contains(USED), "{body}");
        assert!(body.contains(r#"href="/login""#), "{body}");
    }
    assert_eq!(app.store.count_users().await.unwrap(), 1, "no second owner");

    // The first agent, made on the page, starts with the built-in skill every run should use.
    let csrf = muster::auth::csrf_token(cookie.trim_start_matches("muster_session="));
    let created = client()
        .post(app.url("/w/acme/agents"))
        .header("cookie", &cookie)
        .form(&[
            ("_csrf", csrf.as_str()),
            ("name", "coder"),
            ("kind", "claude"),
            ("max_concurrent_runs", "1"),
            ("stall_timeout_secs", "600"),
            ("max_retries", "2"),
        ])
        .send()
        .await
        .unwrap();
    assert_eq!(created.status(), StatusCode::SEE_OTHER);
    let skills: serde_json::Value = client()
        .get(app.url("/api/v1/agents/coder/skills"))
        .header("cookie", &cookie)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(
        skills,
        serde_json::json!([{
            "slug": "report-to-the-board",
            "description": skills[0]["description"],
            "source": "built_in",
            "enabled": true,
        }])
    );
    // Its form names the runtime and the permission mode in words, and says what each mode allows.
    let html = client()
        .get(app.url("/w/acme/agents/coder"))
        .header("cookie", &cookie)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        html.contains(r#"<option value="claude" selected>Claude Code</option>"#),
        "{html}"
    );
    assert!(
        html.contains(r#"<option value="workspace_write" selected>Edit the worktree</option>"#),
        "{html}"
    );
    assert!(
        html.contains("refuses shell commands it cannot vet"),
        "{html}"
    );

    // A secret typed into a form that comes back with errors is kept (sealed, never shown), so it
    // needs no typing again; a sealed value made for anything else opens to nothing.
    let secret = "sk-typed-before-the-error-4242";
    let post = async |name: &str, fields: &[(&str, &str)]| {
        let mut form = vec![
            ("_csrf", csrf.as_str()),
            ("name", name),
            ("kind", "claude"),
            ("stall_timeout_secs", "600"),
            ("max_retries", "2"),
            ("env_key", "ANTHROPIC_API_KEY"),
            ("env_secret", "0"),
        ];
        form.extend_from_slice(fields);
        let res = client()
            .post(app.url("/w/acme/agents"))
            .header("cookie", &cookie)
            .form(&form)
            .send()
            .await
            .unwrap();
        (res.status(), res.text().await.unwrap())
    };
    let kept_of = |html: &str| {
        let at = html
            .find(r#"name="env_kept" value=""#)
            .expect("a kept field")
            + 23;
        html[at..at + html[at..].find('"').unwrap()].to_owned()
    };
    let (status, html) = post(
        "keeper",
        &[
            ("max_concurrent_runs", "many"),
            ("env_value", secret),
            ("env_kept", ""),
        ],
    )
    .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{html}");
    assert!(!html.contains(secret), "the secret is never shown: {html}");
    assert!(
        html.contains("as you typed it; leave empty to keep"),
        "{html}"
    );
    let kept = kept_of(&html);
    assert!(!kept.is_empty() && !kept.contains(secret), "{kept}");
    // Another error: still kept, from the sealed copy alone.
    let (status, html) = post(
        "keeper",
        &[
            ("max_concurrent_runs", "many"),
            ("env_value", ""),
            ("env_kept", &kept),
        ],
    )
    .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(!html.contains(secret));
    let kept = kept_of(&html);
    let (status, html) = post(
        "keeper",
        &[
            ("max_concurrent_runs", "1"),
            ("env_value", ""),
            ("env_kept", &kept),
        ],
    )
    .await;
    assert_eq!(status, StatusCode::SEE_OTHER, "{html}");
    let secrets = muster::secrets::SecretBox::load_or_create(&app.data_dir).unwrap();
    let ws = app
        .store
        .get_workspace_by_slug(&muster::domain::Slug::parse("acme").unwrap())
        .await
        .unwrap();
    let stored_secret = async |name: &str| {
        let agent = app
            .store
            .get_agent_by_name(ws.id, &muster::domain::AgentName::parse(name).unwrap())
            .await
            .ok()?;
        let var = agent
            .profile
            .env
            .iter()
            .find(|v| v.key == "ANTHROPIC_API_KEY")
            .cloned()?;
        Some(secrets.open(&var.value).unwrap_or_default())
    };
    assert_eq!(stored_secret("keeper").await.as_deref(), Some(secret));
    // A sealed value of the server's that is not this form's (an agent's stored secret, say) is no key
    // to anything: it opens to nothing.
    let foreign = secrets.seal("sk-someone-elses").unwrap();
    let (_, html) = post(
        "stranger",
        &[
            ("max_concurrent_runs", "1"),
            ("env_value", ""),
            ("env_kept", &foreign),
        ],
    )
    .await;
    assert!(!html.contains("sk-someone-elses"));
    assert_ne!(
        stored_secret("stranger").await.as_deref(),
        Some("sk-someone-elses")
    );
    app.shutdown.cancel();
    app.handle.await.unwrap().unwrap();
}

both_backends!(setup_link_and_first_agent,);
