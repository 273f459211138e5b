//! The JSON API under `/api/v1` on a real server, as scripts and the CLI call it.
//!
//! Each case is `async fn case(t: &Env)`: a fresh server on a fresh database, with a workspace (`ALP`)
//! holding an owner, an admin and a plain member, each with an API token. `api_cases!` emits a
//! `sqlite::case` and a `postgres::case` test for each (Postgres skips loudly when absent). `ROUTES`
//! (in `openapi.rs`) lists every route with the tests that exercise it; `openapi::every_route_is_listed_and_tested`
//! fails when the OpenAPI document gains a route that is not in it.

mod account;
mod agent_secrets;
mod agents;
mod auth;
mod client;
pub(crate) mod deletes;
mod ensembles;
mod forges;
mod issue_validation;
mod issues;
mod lists;
mod members;
mod openapi;
mod plans;
mod projects;
mod proposals;
mod runners;
mod runs;
mod runtimes;
mod search;
mod skills;
mod thread;
mod tokens;
mod usage;
mod workspace;

use std::sync::LazyLock;

use muster::domain::{Email, NewIssue, NewUser, NewWorkspace, Role, UserId, Workspace};
use muster_tests::{Backend, TestApp, TestDb, spawn_app};
use reqwest::StatusCode;
use reqwest::header::{CONTENT_TYPE, SET_COOKIE};
use serde_json::Value;

pub use client::{Api, Auth, Reply};
pub use openapi::ROUTES;

/// The password of every account the fixture creates.
pub const PASSWORD: &str = "correct horse battery";

/// Argon2 is slow in debug builds: hash the shared password once per test binary.
static PASSWORD_HASH: LazyLock<String> =
    LazyLock::new(|| muster::auth::hash_password(PASSWORD).unwrap());

/// [`both_backends!`] with each case on a fresh [`Env`] ([`on_env`]), and the list of the module's cases.
macro_rules! api_cases {
    ($($(#[$meta:meta])* $case:ident),+ $(,)?) => {
        /// This module's cases, for the route coverage check.
        #[allow(dead_code)] // modules outside `api` have no coverage list
        pub const CASES: &[&str] = &[$(stringify!($case)),+];

        both_backends!(with = crate::api::on_env; $($(#[$meta])* $case),+);
    };
}
pub(crate) use api_cases;

/// Runs `case` on a fresh [`Env`] on `backend` (skips loudly when Postgres is unavailable and optional).
pub async fn on_env(backend: Backend, case: impl AsyncFnOnce(&Env)) {
    if let Some(env) = Env::start(backend).await {
        case(&env).await;
        env.finish().await;
    }
}

/// A member of a workspace with an API token.
#[derive(Debug, Clone)]
pub struct Person {
    pub id: UserId,
    pub email: String,
    pub name: String,
    pub token: String,
    pub api: Api,
}

/// A running server with one workspace (`alpha`, prefix `ALP`) and its owner, admin and member.
pub struct Env {
    pub app: TestApp,
    pub ws: Workspace,
    pub owner: Person,
    pub admin: Person,
    pub member: Person,
    /// A client without credentials.
    pub anon: Api,
    db: TestDb,
}

fn new_user(email: &str) -> NewUser {
    NewUser {
        email: Email::parse(email).unwrap(),
        display_name: email.split('@').next().unwrap().to_owned(),
        password_hash: PASSWORD_HASH.clone(),
    }
}

impl Env {
    /// A fresh server and fixture on `backend`, or `None` when that backend is unavailable.
    pub async fn start(backend: Backend) -> Option<Env> {
        Self::start_with(backend, |_| {}).await
    }

    /// The same fixture on a server whose configuration `configure` adjusts first (say, the embedded
    /// runner switched on).
    pub async fn start_with(
        backend: Backend,
        configure: impl FnOnce(&mut muster::config::Config),
    ) -> Option<Env> {
        let db = TestDb::new(backend).await?;
        let mut config = db.config();
        configure(&mut config);
        let app = spawn_app(config).await;
        let (owner, ws) = app
            .store
            .create_owner_and_workspace(
                &new_user("owner@alpha.test"),
                &NewWorkspace::parse("Alpha Team", "alpha", "ALP").unwrap(),
            )
            .await
            .unwrap();
        let owner = person(&app, &ws, owner.id, "owner@alpha.test").await;
        let admin = add_person(&app, &ws, "admin@alpha.test", Role::Admin).await;
        let member = add_person(&app, &ws, "member@alpha.test", Role::Member).await;
        let anon = Api::new(&app, Auth::None);
        Some(Env {
            app,
            ws,
            owner,
            admin,
            member,
            anon,
            db,
        })
    }

    /// A client sending `auth`.
    pub fn client(&self, auth: Auth) -> Api {
        Api::new(&self.app, auth)
    }

    /// A client with a bearer token.
    pub fn bearer(&self, token: &str) -> Api {
        self.client(Auth::Bearer(token.to_owned()))
    }

    /// Adds a new account to this workspace with `role` and a token.
    pub async fn add_person(&self, email: &str, role: Role) -> Person {
        add_person(&self.app, &self.ws, email, role).await
    }

    /// A second workspace (`beta`, prefix `BET`) with its own owner and one issue, `BET-1`.
    pub async fn other_workspace(&self) -> (Workspace, Person) {
        let (user, ws) = self
            .app
            .store
            .create_owner_and_workspace(
                &new_user("owner@beta.test"),
                &NewWorkspace::parse("Beta Team", "beta", "BET").unwrap(),
            )
            .await
            .unwrap();
        let issue = self
            .app
            .store
            .create_issue(
                ws.id,
                &NewIssue::new(muster::domain::IssueTitle::parse("Beta's secret plan").unwrap()),
            )
            .await
            .unwrap();
        assert_eq!(issue.key.to_string(), "BET-1");
        let owner = person(&self.app, &ws, user.id, "owner@beta.test").await;
        (ws, owner)
    }

    /// Signs in through the login form and returns the session cookie's value.
    pub async fn login(&self, email: &str, password: &str) -> Option<String> {
        let client = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .unwrap();
        let form = format!(
            "email={}&password={}",
            form_encode(email),
            form_encode(password)
        );
        let resp = client
            .post(self.app.url("/login"))
            .header(CONTENT_TYPE, "application/x-www-form-urlencoded")
            .body(form)
            .send()
            .await
            .unwrap();
        let cookie = resp
            .headers()
            .get_all(SET_COOKIE)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .find_map(|v| v.strip_prefix("muster_session="))
            .map(|v| v.split(';').next().unwrap_or_default().to_owned());
        match cookie {
            Some(c) => {
                assert_eq!(resp.status(), StatusCode::SEE_OTHER, "a login redirects");
                Some(c)
            }
            None => {
                assert_eq!(
                    resp.status(),
                    StatusCode::UNAUTHORIZED,
                    "a failed login is 401"
                );
                None
            }
        }
    }

    /// The titles of the workspace's issues, as the API lists them.
    pub async fn issue_titles(&self) -> Vec<String> {
        let page = self.owner.api.get("/api/v1/issues").await.expect(200);
        assert_eq!(page["next_after"], Value::Null, "one page holds them all");
        titles(&page["issues"])
    }

    /// Shuts the server down cleanly, then drops the database.
    pub async fn finish(self) {
        self.app.shutdown.cancel();
        self.app.handle.await.unwrap().unwrap();
        drop(self.db);
    }
}

async fn person(app: &TestApp, ws: &Workspace, id: UserId, email: &str) -> Person {
    let token = muster_tests::mint_token(app.store.as_ref(), ws.id, id, "test").await;
    Person {
        id,
        email: email.to_owned(),
        name: email.split('@').next().unwrap().to_owned(),
        api: Api::new(app, Auth::Bearer(token.clone())),
        token,
    }
}

async fn add_person(app: &TestApp, ws: &Workspace, email: &str, role: Role) -> Person {
    let member = app
        .store
        .add_new_member(ws.id, &new_user(email), role)
        .await
        .unwrap();
    person(app, ws, member.user.id, email).await
}

/// A client of the pages signed in with the session `cookie` (its value): it sends the cookie and does
/// not follow redirects, so that tests see them.
pub fn page_client(cookie: &str) -> reqwest::Client {
    let mut headers = reqwest::header::HeaderMap::new();
    headers.insert(
        reqwest::header::COOKIE,
        format!("muster_session={cookie}").parse().unwrap(),
    );
    reqwest::Client::builder()
        .default_headers(headers)
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap()
}

/// Posts the form-encoded `body` to `path` of `app` with `client`.
pub async fn post_form(
    client: &reqwest::Client,
    app: &TestApp,
    path: &str,
    body: String,
) -> reqwest::Response {
    client
        .post(app.url(path))
        .header(CONTENT_TYPE, "application/x-www-form-urlencoded")
        .body(body)
        .send()
        .await
        .unwrap()
}

/// `application/x-www-form-urlencoded` encoding of one value.
pub fn form_encode(raw: &str) -> String {
    raw.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'*' => {
                (b as char).to_string()
            }
            b' ' => "+".to_owned(),
            other => format!("%{other:02X}"),
        })
        .collect()
}

/// The `title` of each issue in a list.
pub fn titles(list: &Value) -> Vec<String> {
    list.as_array()
        .unwrap_or_else(|| panic!("expected a list, got {list}"))
        .iter()
        .map(|i| i["title"].as_str().unwrap().to_owned())
        .collect()
}

/// The `name` (or any `field`) of each object in a list.
pub fn field(list: &Value, field: &str) -> Vec<String> {
    list.as_array()
        .unwrap_or_else(|| panic!("expected a list, got {list}"))
        .iter()
        .map(|i| i[field].as_str().unwrap_or_default().to_owned())
        .collect()
}
