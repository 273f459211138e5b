//! The store conformance suite: every `Store` method against both backends.
//!
//! Each case is `async fn case(store: Arc<dyn Store>)`; `store_cases!` emits a `sqlite::case` and a
//! `postgres::case` test for each, on a fresh database. The test names in the summary show that both
//! halves ran.

mod agent_with_skills;
mod board;
mod deletes;
mod ensembles;
mod forges;
mod inbox_read;
mod invitations;
mod issues;
mod lists;
mod people;
mod plans;
mod projects;
mod proposals;
mod runners;
mod runs;
mod search;
mod skills_agents;
mod triggers;
mod usage;

use std::sync::Arc;

use muster::domain::*;
use muster::store::Store;
use muster_tests::{Backend, TestDb};

/// Runs `case` on a fresh database of `backend` (skips loudly when Postgres is unavailable and optional).
pub async fn on<F, Fut>(backend: Backend, case: F)
where
    F: FnOnce(Arc<dyn Store>) -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    let Some(db) = TestDb::new(backend).await else {
        return;
    };
    let store = db.store().await;
    case(store.clone()).await;
    store.close().await;
}

/// [`both_backends!`] with each case on a fresh store ([`on`]).
macro_rules! store_cases {
    ($($cases:tt)+) => {
        both_backends!(runtime (flavor = "multi_thread", worker_threads = 4), with = crate::store_conformance::on; $($cases)+);
    };
}
pub(crate) use store_cases;

/// A user, with a workspace they own.
pub struct Fixture {
    pub owner: User,
    pub ws: Workspace,
}

pub async fn user(store: &Arc<dyn Store>, email: &str) -> User {
    store
        .create_user(&NewUser {
            email: Email::parse(email).unwrap(),
            display_name: email.split('@').next().unwrap().to_owned(),
            password_hash: "$argon2id$fake".to_owned(),
        })
        .await
        .unwrap()
}

pub async fn fixture(store: &Arc<dyn Store>, slug: &str, prefix: &str) -> Fixture {
    let owner = user(store, &format!("owner@{slug}.test")).await;
    let ws = store
        .create_workspace(
            &NewWorkspace::parse("Team", slug, prefix).unwrap(),
            owner.id,
        )
        .await
        .unwrap();
    Fixture { owner, ws }
}

pub async fn agent(
    store: &Arc<dyn Store>,
    ws: WorkspaceId,
    name: &str,
    max_concurrent: i32,
) -> Agent {
    let mut new = NewAgent::new(AgentName::parse(name).unwrap(), RuntimeKind::Claude);
    new.max_concurrent_runs = max_concurrent;
    store.create_agent(ws, &new).await.unwrap()
}

pub async fn issue(
    store: &Arc<dyn Store>,
    ws: WorkspaceId,
    title: &str,
    status: IssueStatus,
) -> Issue {
    let mut new = NewIssue::new(IssueTitle::parse(title).unwrap());
    new.status = status;
    store.create_issue(ws, &new).await.unwrap()
}

/// Asserts a `Conflict` naming `constraint`.
#[track_caller]
pub fn assert_conflict<T: std::fmt::Debug>(result: muster::store::Result<T>, constraint: &str) {
    match result {
        Err(muster::store::Error::Conflict { constraint: c }) => assert_eq!(c, constraint),
        other => panic!("expected a conflict on {constraint}, got {other:?}"),
    }
}

/// Asserts `NotFound`.
#[track_caller]
pub fn assert_not_found<T: std::fmt::Debug>(result: muster::store::Result<T>) {
    match result {
        Err(muster::store::Error::NotFound) => {}
        other => panic!("expected not found, got {other:?}"),
    }
}
