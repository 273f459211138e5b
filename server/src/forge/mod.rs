//! TEMPORARY interface stub (replaced by the real module on merge).
#![allow(unused, clippy::all)]
pub use crate::domain::{CheckState, ForgeKind, PrState, ReviewVerdict};

#[derive(Clone)]
pub struct Endpoint {
    pub kind: ForgeKind,
    pub api_url: String,
    pub repo: String,
    pub token: String,
}
#[derive(Debug, Clone, serde::Serialize)]
pub struct Access {
    pub clone_url: String,
    pub default_branch: String,
    pub can_push: bool,
    pub can_open_prs: bool,
    pub can_read_checks: bool,
    pub can_comment: bool,
    pub notes: Vec<String>,
}
#[derive(Debug, Clone)]
pub struct NewPull {
    pub title: String,
    pub body: String,
    pub head: String,
    pub base: String,
    pub draft: bool,
}
#[derive(Debug, Clone, PartialEq)]
pub struct Pull {
    pub number: i64,
    pub url: String,
    pub state: PrState,
    pub draft: bool,
    pub head: String,
    pub head_sha: String,
    pub base: String,
    pub mergeable: Option<bool>,
}
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LogRef {
    GithubJob(i64),
    GitlabJob(i64),
    GiteaJob(i64),
    None,
}
#[derive(Debug, thiserror::Error)]
pub enum ForgeError {
    #[error("the forge refused the token ({status}): {message}")]
    Unauthorized { status: u16, message: String },
    #[error("not found on the forge: {0}")]
    NotFound(String),
    #[error("the forge refused the request ({status}): {message}")]
    Refused { status: u16, message: String },
    #[error("cannot reach the forge at {url}: {reason}")]
    Unreachable { url: String, reason: String },
    #[error("the forge answered something Muster cannot read: {0}")]
    Unreadable(String),
}
#[async_trait::async_trait]
pub trait Forge: Send + Sync {
    fn kind(&self) -> ForgeKind;
    async fn access(&self) -> Result<Access, ForgeError>;
    async fn branch_head(&self, branch: &str) -> Result<Option<String>, ForgeError>;
    async fn open_pull(&self, new: &NewPull) -> Result<Pull, ForgeError>;
    async fn pull(&self, number: i64) -> Result<Pull, ForgeError>;
    async fn pull_for_branch(&self, branch: &str) -> Result<Option<Pull>, ForgeError>;
    async fn pulls_for_branch(&self, branch: &str) -> Result<Vec<Pull>, ForgeError>;
    async fn comment(&self, number: i64, body: &str) -> Result<(), ForgeError>;
    async fn check_log(&self, log: &LogRef) -> Result<String, ForgeError>;
}
#[allow(clippy::needless_pass_by_value)]
pub fn client(endpoint: Endpoint, http: reqwest::Client) -> Box<dyn Forge> {
    unimplemented!()
}
pub fn git_auth_header(kind: ForgeKind, token: &str) -> String {
    unimplemented!()
}
pub fn same_repository(a: &str, b: &str) -> bool {
    unimplemented!()
}
mod push;
pub use push::{http_client, push_target};
pub mod hooks {
    use super::*;
    #[derive(Debug, Clone, PartialEq)]
    pub struct Delivery {
        pub id: String,
        pub repo: String,
        pub event: ForgeEvent,
    }
    #[derive(Debug, Clone, PartialEq)]
    pub enum ForgeEvent {
        Check {
            pulls: Vec<i64>,
            branch: Option<String>,
            head_sha: String,
            name: String,
            state: CheckState,
            url: Option<String>,
            log: LogRef,
        },
        Review {
            pull: i64,
            author: String,
            verdict: ReviewVerdict,
            body: String,
        },
        Comment {
            pull: i64,
            author: String,
            body: String,
            path: Option<String>,
            line: Option<i64>,
        },
        Closed {
            pull: i64,
            merged: bool,
        },
        Updated {
            pull: i64,
            head_sha: Option<String>,
        },
        Ignored {
            what: String,
        },
    }
    #[derive(Debug, thiserror::Error, PartialEq)]
    pub enum HookError {
        #[error("the delivery has no signature ({0})")]
        Unsigned(&'static str),
        #[error("the delivery's signature does not match the connection's secret")]
        BadSignature,
        #[error("the delivery has no delivery id ({0})")]
        NoDeliveryId(&'static str),
        #[error("the delivery is not JSON Muster can read: {0}")]
        Unreadable(String),
    }
    pub fn verify(
        kind: ForgeKind,
        headers: &axum::http::HeaderMap,
        body: &[u8],
        secret: &str,
    ) -> Result<(), HookError> {
        unimplemented!()
    }
    pub fn parse(
        kind: ForgeKind,
        headers: &axum::http::HeaderMap,
        body: &[u8],
    ) -> Result<Delivery, HookError> {
        unimplemented!()
    }
}
