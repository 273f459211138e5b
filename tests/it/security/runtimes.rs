//! The runtimes boundary (issue 11): the cross-workspace leak, SSRF through probes, credentials in base
//! URLs, and unbounded re-detects.
//!
//! - Cross-workspace: one server-wide cache showed workspace A's members workspace B's llama agent names
//!   and base URLs, credentials included. Now each workspace's scan is its own.
//! - SSRF: a base URL made the server GET `/props`, `/api/version`, `/v1/models`, `/api/tags` anywhere and
//!   echo the answers, following redirects. Now probes and the llama loop follow no redirect and show only
//!   status codes and validated fields, never bodies.
//! - Credentials: `http://user:pass@host` is shown without `user:pass@` everywhere but the owners' and
//!   admins' edit form.
//! - Re-detect spawns processes and sends requests: owners and admins only, once per 10 s per workspace
//!   (429 with `Retry-After`; the page shows the cached result with a note).
//!
//! Real server, real HTTP, real loopback servers, and for the llama loop the real `muster` binary; both
//! backends.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use muster::domain::*;
use muster::store::Store;
use muster_tests::{Backend, TestDb, spawn_app};
use reqwest::redirect::Policy;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

/// What the hostile servers answer with: never to be shown. Not a valid model name or version.
const MARKER: &str = "internal secret: XYZZY-4242 <do not show>";
/// The password in workspace B's base URL.
const B_PASSWORD: &str = "pa55word-of-beta";
const PASSWORD: &str = "correct-horse";

both_backends!(
    one_workspace_never_sees_another_workspaces_model_servers,
    probes_and_the_llama_loop_never_echo_bodies_nor_follow_redirects,
    redetect_is_for_managers_and_at_most_every_ten_seconds_per_workspace,
);

/// A loopback HTTP server counting the requests it gets.
struct Loopback {
    addr: SocketAddr,
    hits: Arc<AtomicUsize>,
}

impl Loopback {
    async fn start(answer: fn(&str, SocketAddr) -> Response, arg: Option<SocketAddr>) -> Loopback {
        let hits = Arc::new(AtomicUsize::new(0));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let counted = hits.clone();
        let target = arg.unwrap_or(addr);
        let app = axum::Router::new().fallback(move |uri: axum::http::Uri| {
            let counted = counted.clone();
            async move {
                counted.fetch_add(1, Ordering::SeqCst);
                answer(uri.path(), target)
            }
        });
        tokio::spawn(async move { axum::serve(listener, app).await });
        Loopback { addr, hits }
    }

    fn hits(&self) -> usize {
        self.hits.load(Ordering::SeqCst)
    }
}

/// A small OpenAI-compatible model server that lists one model.
fn model_server(path: &str, _: SocketAddr) -> Response {
    match path {
        "/v1/models" => axum::Json(json!({"data": [{"id": "b-private-model"}]})).into_response(),
        _ => StatusCode::NOT_FOUND.into_response(),
    }
}

/// Every path: a redirect to the collector, with the marker in a JSON body.
fn redirector(_: &str, collector: SocketAddr) -> Response {
    (
        StatusCode::FOUND,
        [
            (header::LOCATION, format!("http://{collector}/collect")),
            (header::CONTENT_TYPE, "application/json".to_owned()),
        ],
        json!({"version": MARKER, "build_info": MARKER, "data": [{"id": MARKER}], "error": {"message": MARKER}})
            .to_string(),
    )
        .into_response()
}

/// Every path: 200 with the marker where a model server puts names and versions, or as plain text.
fn liar(path: &str, _: SocketAddr) -> Response {
    match path {
        "/props" => axum::Json(json!({"build_info": MARKER, "model_path": format!("/m/{MARKER}")}))
            .into_response(),
        "/api/version" => axum::Json(json!({"version": MARKER})).into_response(),
        "/v1/models" | "/api/tags" => {
            axum::Json(json!({"data": [{"id": MARKER}], "models": [{"name": MARKER}]}))
                .into_response()
        }
        _ => (StatusCode::INTERNAL_SERVER_ERROR, MARKER).into_response(),
    }
}

/// The collector a redirect points at: it must never be reached.
fn collector(_: &str, _: SocketAddr) -> Response {
    (StatusCode::OK, "collected").into_response()
}

/// A server with workspaces and people; `runner` switches the embedded runner on (the llama loop is
/// then the real `muster` binary).
struct World {
    _db: TestDb,
    addr: SocketAddr,
    store: Arc<dyn Store>,
    shutdown: CancellationToken,
    handle: tokio::task::JoinHandle<anyhow::Result<()>>,
}

/// Someone with an API token and a signed-in browser session.
struct Person {
    token: String,
    cookie: String,
    csrf: String,
}

impl World {
    async fn start(backend: Backend, runner: bool) -> Option<World> {
        let db = TestDb::new(backend).await?;
        let mut config = db.config();
        config.embedded_runner = runner;
        if runner {
            config.self_exe = muster_tests::muster_bin();
        }
        let app = spawn_app(config).await;
        Some(World {
            _db: db,
            addr: app.addr,
            store: app.store,
            shutdown: app.shutdown,
            handle: app.handle,
        })
    }

    fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    /// A workspace and its owner.
    async fn workspace(&self, slug: &str, prefix: &str) -> (Workspace, Person) {
        let (user, ws) = self
            .store
            .create_owner_and_workspace(
                &user(&format!("owner@{slug}.test")),
                &NewWorkspace::parse(slug, slug, prefix).unwrap(),
            )
            .await
            .unwrap();
        let owner = self
            .person(&ws, user.id, &format!("owner@{slug}.test"))
            .await;
        (ws, owner)
    }

    /// A new account in `ws` with `role`.
    async fn member(&self, ws: &Workspace, email: &str, role: Role) -> Person {
        let m = self
            .store
            .add_new_member(ws.id, &user(email), role)
            .await
            .unwrap();
        self.person(ws, m.user.id, email).await
    }

    async fn person(&self, ws: &Workspace, id: UserId, email: &str) -> Person {
        let token = muster_tests::mint_token(self.store.as_ref(), ws.id, id, "t").await;
        let http = reqwest::Client::builder()
            .redirect(Policy::none())
            .build()
            .unwrap();
        let res = http
            .post(self.url("/login"))
            .form(&[("email", email), ("password", PASSWORD), ("next", "")])
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), 303, "login of {email}");
        let cookie = res.headers()["set-cookie"]
            .to_str()
            .unwrap()
            .split(';')
            .next()
            .unwrap()
            .to_owned();
        let mut person = Person {
            token,
            cookie,
            csrf: String::new(),
        };
        let page = self
            .page(&person, &format!("/w/{}", ws.slug.as_str()))
            .await;
        person.csrf = page
            .1
            .split(r#"<meta name="csrf-token" content=""#)
            .nth(1)
            .and_then(|r| r.split('"').next())
            .unwrap()
            .to_owned();
        person
    }

    /// An API call with the person's token: status, `Retry-After`, body.
    async fn api(
        &self,
        who: &Person,
        method: reqwest::Method,
        path: &str,
    ) -> (u16, Option<String>, String) {
        self.api_with(who, method, path, json!({})).await
    }

    async fn api_with(
        &self,
        who: &Person,
        method: reqwest::Method,
        path: &str,
        body: Value,
    ) -> (u16, Option<String>, String) {
        let mut req = reqwest::Client::new()
            .request(method.clone(), self.url(path))
            .bearer_auth(&who.token);
        if method != reqwest::Method::GET {
            req = req.json(&body);
        }
        let resp = req.send().await.unwrap();
        let retry = resp
            .headers()
            .get(header::RETRY_AFTER)
            .map(|v| v.to_str().unwrap().to_owned());
        (resp.status().as_u16(), retry, resp.text().await.unwrap())
    }

    /// A page as the signed-in person: status and HTML.
    async fn page(&self, who: &Person, path: &str) -> (u16, String) {
        let resp = reqwest::Client::new()
            .get(self.url(path))
            .header("cookie", &who.cookie)
            .send()
            .await
            .unwrap();
        (resp.status().as_u16(), resp.text().await.unwrap())
    }

    /// A form POST as the signed-in person (with the CSRF token): status, `Location`, HTML.
    async fn post_page(&self, who: &Person, path: &str) -> (u16, Option<String>, String) {
        let resp = reqwest::Client::builder()
            .redirect(Policy::none())
            .build()
            .unwrap()
            .post(self.url(path))
            .header("cookie", &who.cookie)
            .form(&[("_csrf", who.csrf.as_str())])
            .send()
            .await
            .unwrap();
        let location = resp
            .headers()
            .get(header::LOCATION)
            .map(|v| v.to_str().unwrap().to_owned());
        (resp.status().as_u16(), location, resp.text().await.unwrap())
    }

    /// A llama agent with `base_url`, straight in the store (as its owner would make it).
    async fn llama_agent(&self, ws: &Workspace, name: &str, base_url: &str) -> Agent {
        let mut new = NewAgent::new(AgentName::parse(name).unwrap(), RuntimeKind::Llama);
        new.base_url = Some(base_url.to_owned());
        new.model = Some("m".to_owned());
        new.max_retries = 0;
        self.store.create_agent(ws.id, &new).await.unwrap()
    }

    async fn stop(self) {
        self.shutdown.cancel();
        self.handle.await.unwrap().unwrap();
    }
}

fn user(email: &str) -> NewUser {
    static HASH: std::sync::LazyLock<String> =
        std::sync::LazyLock::new(|| muster::auth::hash_password(PASSWORD).unwrap());
    NewUser {
        email: Email::parse(email).unwrap(),
        display_name: email.split('@').next().unwrap().to_owned(),
        password_hash: HASH.clone(),
    }
}

async fn one_workspace_never_sees_another_workspaces_model_servers(backend: Backend) {
    let Some(w) = World::start(backend, false).await else {
        return;
    };
    let server = Loopback::start(model_server, None).await;
    let (alpha, alpha_owner) = w.workspace("alpha", "ALP").await;
    let alpha_member = w.member(&alpha, "member@alpha.test", Role::Member).await;
    let (beta, beta_owner) = w.workspace("beta", "BET").await;
    let beta_member = w.member(&beta, "member@beta.test", Role::Member).await;
    let port = server.addr.port();
    let url = format!("http://agent:{B_PASSWORD}@127.0.0.1:{port}/v1");
    w.llama_agent(&beta, "b-llama", &url).await;

    // B sees its own server (first, so that a shared cache would now hold it), without credentials.
    let (status, _, listed) = w
        .api(&beta_member, reqwest::Method::GET, "/api/v1/runtimes")
        .await;
    assert_eq!(status, 200, "{listed}");
    let listed: Value = serde_json::from_str(&listed).unwrap();
    let ours = listed["model_servers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["source"] == "agent b-llama")
        .unwrap_or_else(|| panic!("{listed:#}"));
    assert_eq!(ours["url"], format!("http://127.0.0.1:{port}"));
    assert_eq!(ours["models"], json!(["b-private-model"]));
    assert!(!listed.to_string().contains(B_PASSWORD), "{listed}");
    let (status, page) = w.page(&beta_member, "/w/beta/runtimes").await;
    assert_eq!(status, 200);
    assert!(page.contains("b-private-model") && !page.contains(B_PASSWORD));
    // B's member sees the agent's URL without credentials; B's owner edits it with them.
    let (_, _, agent) = w
        .api(&beta_member, reqwest::Method::GET, "/api/v1/agents/b-llama")
        .await;
    assert!(
        agent.contains(&format!(r#""base_url":"http://127.0.0.1:{port}/v1""#)),
        "{agent}"
    );
    let (_, form) = w.page(&beta_member, "/w/beta/agents/b-llama").await;
    assert!(form.contains(&format!("http://127.0.0.1:{port}/v1")) && !form.contains(B_PASSWORD));
    let (_, form) = w.page(&beta_owner, "/w/beta/agents/b-llama").await;
    assert!(
        form.contains(&url),
        "the owners' edit form keeps the credentials"
    );
    let (_, _, agent) = w
        .api(&beta_owner, reqwest::Method::GET, "/api/v1/agents/b-llama")
        .await;
    assert!(!agent.contains(B_PASSWORD), "{agent}");

    // Everything A's people get from the runtimes API and page, re-detects included.
    let hits = server.hits();
    let mut seen = vec![
        w.api(&alpha_member, reqwest::Method::GET, "/api/v1/runtimes")
            .await
            .2,
        w.page(&alpha_member, "/w/alpha/runtimes").await.1,
        w.api(
            &alpha_owner,
            reqwest::Method::POST,
            "/api/v1/runtimes/detect",
        )
        .await
        .2,
        w.api(&alpha_owner, reqwest::Method::GET, "/api/v1/runtimes")
            .await
            .2,
        w.page(&alpha_owner, "/w/alpha/runtimes").await.1,
        // Within the window: the cached result, with a note.
        w.post_page(&alpha_owner, "/w/alpha/runtimes/detect")
            .await
            .2,
    ];
    seen.push(
        w.api(&alpha_member, reqwest::Method::GET, "/api/v1/runtimes")
            .await
            .2,
    );
    for text in &seen {
        for leak in [
            "b-llama",
            "b-private-model",
            B_PASSWORD,
            &format!("127.0.0.1:{port}"),
        ] {
            assert!(
                !text.contains(leak),
                "{leak:?} shown to workspace alpha: {text}"
            );
        }
    }
    assert_eq!(
        server.hits(),
        hits,
        "alpha's re-detect never probes beta's URLs"
    );
    // A still sees its own machine: the CLIs and the probed ports.
    assert!(seen[0].contains(r#""kind":"claude""#), "{}", seen[0]);
    assert!(seen[1].contains(r#"id="runtime-claude""#));
    w.stop().await;
}

async fn probes_and_the_llama_loop_never_echo_bodies_nor_follow_redirects(backend: Backend) {
    let Some(w) = World::start(backend, true).await else {
        return;
    };
    let collect = Loopback::start(collector, None).await;
    let redirect = Loopback::start(redirector, Some(collect.addr)).await;
    let lying = Loopback::start(liar, None).await;
    let (ws, owner) = w.workspace("ssrf", "SSR").await;
    let creds = "agent:s3cr3t-pass-77";
    w.llama_agent(
        &ws,
        "redirected",
        &format!("http://{creds}@{}/v1", redirect.addr),
    )
    .await;
    w.llama_agent(&ws, "lying", &format!("http://{}", lying.addr))
        .await;

    // The probes: status codes and nothing else.
    let (status, _, detected) = w
        .api(&owner, reqwest::Method::POST, "/api/v1/runtimes/detect")
        .await;
    assert_eq!(status, 200, "{detected}");
    let (_, page) = w.page(&owner, "/w/ssrf/runtimes").await;
    for text in [&detected, &page] {
        assert!(!text.contains("XYZZY"), "a probe echoed a body: {text}");
        assert!(
            !text.contains("s3cr3t-pass-77"),
            "credentials shown: {text}"
        );
    }
    let detected: Value = serde_json::from_str(&detected).unwrap();
    let server = |source: &str| {
        detected["model_servers"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["source"] == source)
            .unwrap_or_else(|| panic!("{detected:#}"))
            .clone()
    };
    let r = server("agent redirected");
    assert_eq!(r["url"], format!("http://{}", redirect.addr));
    assert_eq!(r["status"], "unrecognized");
    assert!(
        r["reason"].as_str().unwrap().contains("HTTP 302, 302, 302"),
        "{r}"
    );
    let l = server("agent lying");
    assert_eq!(
        (l["models"].clone(), l["version"].clone()),
        (json!([]), Value::Null),
        "{l}"
    );

    // The llama loop: its chat request is redirected; the run fails on the status alone.
    let (status, _, body) = w
        .api_with(
            &owner,
            reqwest::Method::POST,
            "/api/v1/issues",
            json!({"title": "Say hi", "status": "todo", "assignee": "redirected"}),
        )
        .await;
    assert_eq!(status, 201, "{body}");
    let key = IssueKey::parse(
        serde_json::from_str::<Value>(&body).unwrap()["key"]
            .as_str()
            .unwrap(),
    )
    .unwrap();
    let issue = w.store.get_issue(ws.id, &key).await.unwrap();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    let run = loop {
        let runs = w.store.list_runs_for_issue(issue.id).await.unwrap();
        if let Some(run) = runs.into_iter().find(|r| r.status.is_terminal()) {
            break run;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the llama run did not end"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(run.status, RunStatus::Failed, "{run:?}");
    let (_, _, events) = w
        .api(
            &owner,
            reqwest::Method::GET,
            &format!("/api/v1/runs/{}/events", run.id),
        )
        .await;
    let (_, run_page) = w.page(&owner, &format!("/w/ssrf/runs/{}", run.id)).await;
    for text in [&events, &run_page] {
        assert!(!text.contains("XYZZY"), "the loop echoed a body: {text}");
        assert!(
            !text.contains("s3cr3t-pass-77"),
            "credentials shown: {text}"
        );
    }
    assert!(
        events.contains("the model server answered 302 Found"),
        "{events}"
    );
    assert_eq!(collect.hits(), 0, "no redirect was followed");
    assert!(
        redirect.hits() >= 4,
        "the probes and the loop did reach the server itself"
    );
    w.stop().await;
}

async fn redetect_is_for_managers_and_at_most_every_ten_seconds_per_workspace(backend: Backend) {
    let Some(w) = World::start(backend, false).await else {
        return;
    };
    let (alpha, owner) = w.workspace("alpha", "ALP").await;
    let member = w.member(&alpha, "member@alpha.test", Role::Member).await;
    let (_, other_owner) = w.workspace("beta", "BET").await;
    let post = reqwest::Method::POST;

    // Members: the cached result, no re-detect.
    let (status, _, body) = w
        .api(&member, post.clone(), "/api/v1/runtimes/detect")
        .await;
    assert_eq!(status, 403, "{body}");
    let (status, _, _) = w.post_page(&member, "/w/alpha/runtimes/detect").await;
    assert_eq!(status, 403);
    let (status, _, _) = w
        .api(&member, reqwest::Method::GET, "/api/v1/runtimes")
        .await;
    assert_eq!(status, 200);

    // The owner: once, then 429 with Retry-After until 10 s have passed.
    let (status, _, body) = w.api(&owner, post.clone(), "/api/v1/runtimes/detect").await;
    assert_eq!(status, 200, "{body}");
    let (status, retry, body) = w.api(&owner, post.clone(), "/api/v1/runtimes/detect").await;
    assert_eq!(status, 429, "{body}");
    let retry: u64 = retry.expect("a Retry-After header").parse().unwrap();
    assert!((1..=10).contains(&retry), "Retry-After: {retry}");
    let errors: Value = serde_json::from_str(&body).unwrap();
    let message = errors["errors"]["runtimes"][0].as_str().unwrap();
    assert!(
        message.starts_with("re-detected less than 10 s ago"),
        "{message}"
    );
    // The page: the cached result, with a note, and no new detection.
    let (status, location, html) = w.post_page(&owner, "/w/alpha/runtimes/detect").await;
    assert_eq!((status, location), (200, None), "{html}");
    assert!(
        html.contains(r#"id="redetect-note""#) && html.contains("Re-detected less than 10 s ago")
    );
    assert!(html.contains(r#"id="runtime-claude""#));

    // Another workspace has its own window.
    let (status, _, body) = w
        .api(&other_owner, post.clone(), "/api/v1/runtimes/detect")
        .await;
    assert_eq!(status, 200, "{body}");
    let (status, location, _) = w.post_page(&other_owner, "/w/beta/runtimes/detect").await;
    assert_eq!((status, location.as_deref()), (200, None));
    w.stop().await;
}
