//! Issue 11, "Login and sessions" and "Limits": live connections outlived the session they were opened
//! with, and nothing capped them.
//!
//! - Signing out left the board socket, the run page socket and the run's event stream open: now they end
//!   at once, and the old cookie is sent to the login page.
//! - A member removed from a workspace kept watching it live and kept using their token there: now their
//!   connections to it close, their token is refused (403) and its pages are gone (404), while their
//!   other workspaces and everyone else's connections carry on.
//! - Anyone could open any number of sockets and streams: now past the per-person cap (configurable) the
//!   next one gets 429 before the upgrade, with the reason.

use std::time::Duration;

use futures_util::StreamExt as _;
use muster::config::Config;
use muster::domain::*;
use muster_tests::seed;
use muster_tests::{Backend, TestApp, TestDb, spawn_app};
use reqwest::StatusCode;
use tokio_tungstenite::tungstenite::{self, Message};

use super::login::{PASSWORD, client_from};

/// How long a connection may take to end after it must.
const DEADLINE: Duration = Duration::from_secs(10);

pub(super) use muster_tests::Socket;

both_backends!(
    signing_out_ends_the_sessions_live_connections,
    removing_a_member_ends_their_access_to_the_workspace_at_once,
    live_connections_are_capped_per_person,
);

/// Acme (owner Ada, member Bob, with a queued run on ACM-1) and Other (owner Eve, member Bob).
pub(super) struct Team {
    pub app: TestApp,
    pub acme: Workspace,
    pub other: Workspace,
    pub ada: User,
    pub bob: User,
    pub run: Run,
    pub db: TestDb,
}

impl Team {
    pub async fn start(backend: Backend, tune: impl FnOnce(&mut Config)) -> Option<Team> {
        let db = TestDb::new(backend).await?;
        let mut config = db.config();
        tune(&mut config);
        let app = spawn_app(config).await;
        let s = &app.store;
        let (ada, acme) = seed::owner_of(s, seed::person("ada@acme.test", "ada"), seed::ACME).await;
        let bob = seed::person("bob@acme.test", "bob");
        let bob = seed::member(s, acme.id, bob, Role::Member).await.user;
        let other = ("Other", "other", "OTH");
        let (_, other) = seed::owner_of(s, seed::person("eve@other.test", "eve"), other).await;
        s.add_member(other.id, bob.id, Role::Member).await.unwrap();
        let agent = seed::agent(s, acme.id, "coder", RuntimeKind::Claude).await;
        let issue = s
            .create_issue(
                acme.id,
                &NewIssue::new(IssueTitle::parse("Watch me").unwrap()),
            )
            .await
            .unwrap();
        let run = s
            .create_run(&NewRun::assignment(acme.id, issue.id, agent.id))
            .await
            .unwrap();
        Some(Team {
            app,
            acme,
            other,
            ada,
            bob,
            run,
            db,
        })
    }

    /// Signs `email` in through the form; returns the `muster_session=…` cookie pair.
    pub async fn sign_in(&self, email: &str) -> String {
        self.app
            .sign_in_cookie(&client_from([127, 0, 0, 1]), email, PASSWORD)
            .await
    }

    /// An API token of `user` in `ws`.
    pub async fn token(&self, ws: &Workspace, user: &User) -> String {
        muster_tests::mint_token(self.app.store.as_ref(), ws.id, user.id, "test").await
    }

    /// Opens the WebSocket at `path` with the given `cookie` or `authorization` header.
    pub async fn socket(
        &self,
        path: &str,
        header: (&'static str, &str),
    ) -> Result<Socket, tungstenite::Error> {
        self.app.socket(path, &[header]).await
    }

    /// Starts following the run's events (SSE) with the given header; returns the open response.
    pub async fn follow(&self, header: (&'static str, &str)) -> reqwest::Response {
        reqwest::Client::new()
            .get(
                self.app
                    .url(&format!("/api/v1/runs/{}/events/stream", self.run.id)),
            )
            .header(header.0, header.1)
            .send()
            .await
            .unwrap()
    }

    fn run_live(&self) -> String {
        format!("/w/acme/runs/{}/live", self.run.id)
    }

    /// Opens Acme's board socket and the run page's socket with `cookie`, and the run's event stream with
    /// `follow`, which must be accepted.
    async fn watch(
        &self,
        cookie: &str,
        follow: (&'static str, &str),
    ) -> (Socket, Socket, reqwest::Response) {
        let board = self
            .socket("/w/acme/live", ("cookie", cookie))
            .await
            .unwrap();
        let run_page = self
            .socket(&self.run_live(), ("cookie", cookie))
            .await
            .unwrap();
        let events = self.follow(follow).await;
        assert_eq!(events.status(), StatusCode::OK);
        (board, run_page, events)
    }
}

/// The page at `path`, fetched with `cookie`.
async fn get_page(app: &TestApp, path: &str, cookie: &str) -> reqwest::Response {
    let get = client_from([127, 0, 0, 1]).get(app.url(path));
    get.header("cookie", cookie).send().await.unwrap()
}

/// Waits for the server to end `socket`; returns the close frame's code, if one was sent.
pub(super) async fn socket_ends(socket: &mut Socket) -> Option<u16> {
    let mut code = None;
    tokio::time::timeout(DEADLINE, async {
        while let Some(msg) = socket.next().await {
            match msg {
                Ok(Message::Close(frame)) => code = frame.map(|f| u16::from(f.code)),
                Ok(_) => {}
                Err(_) => break,
            }
        }
    })
    .await
    .expect("the server ends the socket");
    code
}

/// Waits for the server to end an event stream (the response body completes).
pub(super) async fn stream_ends(mut resp: reqwest::Response) {
    tokio::time::timeout(DEADLINE, async {
        while let Ok(Some(_)) = resp.chunk().await {}
    })
    .await
    .expect("the server ends the event stream");
}

/// Whether `socket` stays open for a moment (nothing but pings arrives).
pub(super) async fn stays_open(socket: &mut Socket) -> bool {
    let wait = tokio::time::timeout(Duration::from_millis(300), async {
        loop {
            match socket.next().await {
                Some(Ok(Message::Ping(_) | Message::Pong(_) | Message::Text(_))) => {}
                _ => return,
            }
        }
    });
    wait.await.is_err()
}

async fn csrf_of(app: &TestApp, cookie: &str) -> String {
    let page = get_page(app, "/w/acme", cookie).await.text().await.unwrap();
    page.split(r#"<meta name="csrf-token" content=""#)
        .nth(1)
        .and_then(|r| r.split('"').next())
        .unwrap()
        .to_owned()
}

async fn signing_out_ends_the_sessions_live_connections(backend: Backend) {
    let Some(t) = Team::start(backend, |_| {}).await else {
        return;
    };
    let cookie = t.sign_in("ada@acme.test").await;
    let other_browser = t.sign_in("ada@acme.test").await;
    let (mut board, mut run_page, events) = t.watch(&cookie, ("cookie", &cookie)).await;
    let mut elsewhere = t
        .socket("/w/acme/live", ("cookie", &other_browser))
        .await
        .unwrap();
    assert!(stays_open(&mut board).await, "open while signed in");

    let csrf = csrf_of(&t.app, &cookie).await;
    let out = client_from([127, 0, 0, 1])
        .post(t.app.url("/logout"))
        .header("cookie", &cookie)
        .form(&[("_csrf", csrf.as_str())])
        .send()
        .await
        .unwrap();
    assert_eq!(out.status(), StatusCode::SEE_OTHER);
    assert_eq!(out.headers()["location"], "/login");

    assert_eq!(socket_ends(&mut board).await, Some(1008));
    assert_eq!(socket_ends(&mut run_page).await, Some(1008));
    stream_ends(events).await;
    // The old cookie is signed out everywhere: pages go to the login page, live ones are refused.
    let page = get_page(&t.app, "/w/acme", &cookie).await;
    assert_eq!(page.status(), StatusCode::SEE_OTHER);
    assert_eq!(page.headers()["location"], "/login?next=%2Fw%2Facme");
    assert_eq!(
        t.follow(("cookie", &cookie)).await.status(),
        StatusCode::UNAUTHORIZED
    );
    assert!(t.socket("/w/acme/live", ("cookie", &cookie)).await.is_err());
    // Ada's other session (another browser) is not signed out, and its socket still pushes the board.
    assert!(stays_open(&mut elsewhere).await);
    let api = reqwest::Client::new();
    let created = api
        .post(t.app.url("/api/v1/issues"))
        .bearer_auth(t.token(&t.acme, &t.ada).await)
        .json(&serde_json::json!({ "title": "Still live" }))
        .send()
        .await
        .unwrap();
    assert_eq!(created.status(), StatusCode::CREATED);
    let pushed = tokio::time::timeout(DEADLINE, async {
        loop {
            if let Some(Ok(Message::Text(html))) = elsewhere.next().await {
                return html.to_string();
            }
        }
    })
    .await
    .unwrap();
    assert!(pushed.contains("Still live"), "{pushed}");
}

async fn removing_a_member_ends_their_access_to_the_workspace_at_once(backend: Backend) {
    let Some(t) = Team::start(backend, |_| {}).await else {
        return;
    };
    let cookie = t.sign_in("bob@acme.test").await;
    let bob_token = t.token(&t.acme, &t.bob).await;
    let bearer = format!("Bearer {bob_token}");
    let (mut board, mut run_page, events) = t.watch(&cookie, ("authorization", &bearer)).await;
    let mut other_board = t
        .socket("/w/other/live", ("cookie", &cookie))
        .await
        .unwrap();
    let ada_cookie = t.sign_in("ada@acme.test").await;
    let mut ada_board = t
        .socket("/w/acme/live", ("cookie", &ada_cookie))
        .await
        .unwrap();

    let api = reqwest::Client::new();
    let removed = api
        .delete(t.app.url(&format!("/api/v1/members/{}", t.bob.id)))
        .bearer_auth(t.token(&t.acme, &t.ada).await)
        .send()
        .await
        .unwrap();
    assert_eq!(removed.status(), StatusCode::NO_CONTENT);

    assert_eq!(socket_ends(&mut board).await, Some(1008));
    assert_eq!(socket_ends(&mut run_page).await, Some(1008));
    stream_ends(events).await;
    // The token made for Acme is refused there from now on, and so are Acme's pages.
    let me = api
        .get(t.app.url("/api/v1/me"))
        .bearer_auth(&bob_token)
        .send()
        .await
        .unwrap();
    assert_eq!(me.status(), StatusCode::FORBIDDEN);
    assert_eq!(
        t.follow(("authorization", &bearer)).await.status(),
        StatusCode::FORBIDDEN
    );
    let page = get_page(&t.app, "/w/acme", &cookie).await;
    assert_eq!(page.status(), StatusCode::NOT_FOUND);
    assert!(t.socket("/w/acme/live", ("cookie", &cookie)).await.is_err());
    // Bob's other workspace and Ada's own connection are untouched.
    assert!(stays_open(&mut other_board).await);
    assert!(stays_open(&mut ada_board).await);
    let other = get_page(&t.app, "/w/other", &cookie).await;
    assert_eq!(other.status(), StatusCode::OK);
}

async fn live_connections_are_capped_per_person(backend: Backend) {
    let Some(t) = Team::start(backend, |c| c.live_connections_per_user = 3).await else {
        return;
    };
    let cookie = t.sign_in("bob@acme.test").await;
    let bearer = format!("Bearer {}", t.token(&t.acme, &t.bob).await);
    let (mut first, _second, events) = t.watch(&cookie, ("authorization", &bearer)).await;

    // The fourth, socket or stream, by cookie or token, is refused before the upgrade.
    match t.socket("/w/other/live", ("cookie", &cookie)).await {
        Err(tungstenite::Error::Http(resp)) => {
            assert_eq!(resp.status(), 429);
            let body = String::from_utf8_lossy(resp.body().as_deref().unwrap_or_default());
            assert!(
                body.contains("you already have 3 live connections open"),
                "{body}"
            );
        }
        other => panic!("expected 429, got {:?}", other.map(|_| "a socket")),
    }
    let refused = t.follow(("authorization", &bearer)).await;
    assert_eq!(refused.status(), StatusCode::TOO_MANY_REQUESTS);
    let body: serde_json::Value = refused.json().await.unwrap();
    assert!(
        body["errors"]["connections"][0]
            .as_str()
            .unwrap()
            .starts_with("you already have 3 live connections open"),
        "{body}"
    );
    // Someone else is not affected.
    let ada_cookie = t.sign_in("ada@acme.test").await;
    assert!(
        t.socket("/w/acme/live", ("cookie", &ada_cookie))
            .await
            .is_ok()
    );

    // Closing one frees its slot.
    first.close(None).await.unwrap();
    let reopened = tokio::time::timeout(DEADLINE, async {
        loop {
            if let Ok(s) = t.socket("/w/acme/live", ("cookie", &cookie)).await {
                return s;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await;
    assert!(reopened.is_ok(), "a slot frees when a connection closes");
    drop(events);
}
