//! Webhooks in: [`verify`] a delivery's signature against the connection's secret, then [`parse`] it
//! into the few [`ForgeEvent`]s Muster acts on. Everything else is [`ForgeEvent::Ignored`], never an
//! error, so a forge that sends more than we asked for is not told to retry.
//!
//! Invariants: every comparison with the secret is constant-time; parsing never looks at the secret
//! and verification never looks at the JSON.

use axum::http::HeaderMap;
use hmac::Mac as _;
use sha2::Sha256;

use super::{CheckState, ForgeKind, LogRef, ReviewVerdict};

mod gitea;
mod github;
mod gitlab;
mod shaped;
#[cfg(test)]
mod tests;

type HmacSha256 = hmac::Hmac<Sha256>;

/// A verified, parsed delivery.
#[derive(Debug, Clone, PartialEq)]
pub struct Delivery {
    /// The delivery id (`X-GitHub-Delivery`, `X-Gitea-Delivery`, GitLab's `X-Gitlab-Event-UUID`), for
    /// recording each delivery once.
    pub id: String,
    /// The project as the payload names it (`full_name`, GitLab `path_with_namespace`); empty when it
    /// names none (a GitHub organisation's ping).
    pub repo: String,
    pub event: ForgeEvent,
    /// Further events of the same delivery, after `event`: a GitLab pipeline is a
    /// [`ForgeEvent::Check`] of its own and one per job. Read all with [`Delivery::events`].
    pub more: Vec<ForgeEvent>,
}

impl Delivery {
    /// `event`, then `more`.
    pub fn events(&self) -> impl Iterator<Item = &ForgeEvent> {
        std::iter::once(&self.event).chain(&self.more)
    }
}

/// What a delivery says happened.
#[derive(Debug, Clone, PartialEq)]
pub enum ForgeEvent {
    /// A check/status/pipeline job reached a state. `pulls` = PR numbers the payload names (may be
    /// empty: then match by branch or sha).
    Check {
        pulls: Vec<i64>,
        branch: Option<String>,
        head_sha: String,
        name: String,
        state: CheckState,
        url: Option<String>,
        log: LogRef,
    },
    /// A review was submitted (GitLab: an approval or its withdrawal).
    Review {
        pull: i64,
        author: String,
        verdict: ReviewVerdict,
        body: String,
    },
    /// A comment on the PR: a line comment on the diff (path, line) or a conversation comment.
    Comment {
        pull: i64,
        author: String,
        body: String,
        path: Option<String>,
        line: Option<i64>,
    },
    /// The PR was closed; merged says whether by a merge.
    Closed { pull: i64, merged: bool },
    /// The PR's head moved or it was opened/reopened/edited: a refresh of its state.
    Updated { pull: i64, head_sha: Option<String> },
    /// Anything else (ping, pushes, events Muster does not act on): recorded and ignored.
    Ignored { what: String },
}

/// Why a delivery was refused.
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

/// GitHub's signature header: `sha256=<hex hmac-sha256(secret, body)>`.
pub const GITHUB_SIGNATURE: &str = "X-Hub-Signature-256";
/// Gitea's signature header: `<hex hmac-sha256(secret, body)>` (Forgejo also sends
/// [`FORGEJO_SIGNATURE`]; both also send [`GITHUB_SIGNATURE`]).
pub const GITEA_SIGNATURE: &str = "X-Gitea-Signature";
/// Forgejo's own name for [`GITEA_SIGNATURE`].
pub const FORGEJO_SIGNATURE: &str = "X-Forgejo-Signature";
/// GitLab's secret token header: the secret itself.
pub const GITLAB_TOKEN: &str = "X-Gitlab-Token";

/// Checks the delivery's signature: GitHub `X-Hub-Signature-256`, Gitea/Forgejo `X-Gitea-Signature`
/// (or `X-Forgejo-Signature`, `X-Hub-Signature-256`), both HMAC-SHA256 of the body; GitLab
/// `X-Gitlab-Token` equal to the secret. An empty secret matches nothing.
pub fn verify(
    kind: ForgeKind,
    headers: &HeaderMap,
    body: &[u8],
    secret: &str,
) -> Result<(), HookError> {
    let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    match kind {
        ForgeKind::Github => {
            let signature =
                header(GITHUB_SIGNATURE).ok_or(HookError::Unsigned(GITHUB_SIGNATURE))?;
            let hex = signature
                .strip_prefix("sha256=")
                .ok_or(HookError::BadSignature)?;
            verify_hmac(secret, body, hex)
        }
        ForgeKind::Gitea => {
            let signature = header(GITEA_SIGNATURE)
                .or_else(|| header(FORGEJO_SIGNATURE))
                .or_else(|| header(GITHUB_SIGNATURE))
                .ok_or(HookError::Unsigned(GITEA_SIGNATURE))?;
            verify_hmac(
                secret,
                body,
                signature.strip_prefix("sha256=").unwrap_or(signature),
            )
        }
        ForgeKind::Gitlab => {
            let token = header(GITLAB_TOKEN).ok_or(HookError::Unsigned(GITLAB_TOKEN))?;
            if secret.is_empty() {
                return Err(HookError::BadSignature);
            }
            // Equal lengths are not leaked either: both sides go through the same MAC first.
            let tag = |value: &str| {
                let mut mac = keyed(b"muster gitlab token");
                mac.update(value.as_bytes());
                mac
            };
            let expected = tag(secret).finalize().into_bytes();
            tag(token)
                .verify_slice(&expected)
                .map_err(|_| HookError::BadSignature)
        }
    }
}

fn keyed(key: &[u8]) -> HmacSha256 {
    HmacSha256::new_from_slice(key).expect("HMAC takes a key of any length")
}

fn verify_hmac(secret: &str, body: &[u8], hex_signature: &str) -> Result<(), HookError> {
    if secret.is_empty() {
        return Err(HookError::BadSignature);
    }
    let signature = hex::decode(hex_signature.trim()).map_err(|_| HookError::BadSignature)?;
    let mut mac = keyed(secret.as_bytes());
    mac.update(body);
    mac.verify_slice(&signature)
        .map_err(|_| HookError::BadSignature)
}

/// The hex HMAC-SHA256 of `body` under `secret`, as GitHub and Gitea sign deliveries.
pub fn signature(secret: &str, body: &[u8]) -> String {
    let mut mac = keyed(secret.as_bytes());
    mac.update(body);
    hex::encode(mac.finalize().into_bytes())
}

/// The headers `kind` sends with a delivery of `event` (the event header's value) whose id is
/// `delivery`: content type, event, delivery id and signature. For stand-in forges and tests; the
/// inverse of [`verify`] and [`parse`].
pub fn outgoing_headers(
    kind: ForgeKind,
    secret: &str,
    event: &str,
    delivery: &str,
    body: &[u8],
) -> Vec<(&'static str, String)> {
    let json = ("Content-Type", "application/json".to_owned());
    match kind {
        ForgeKind::Github => vec![
            json,
            ("X-GitHub-Event", event.to_owned()),
            ("X-GitHub-Delivery", delivery.to_owned()),
            (
                GITHUB_SIGNATURE,
                format!("sha256={}", signature(secret, body)),
            ),
        ],
        ForgeKind::Gitea => vec![
            json,
            ("X-Gitea-Event", event.to_owned()),
            ("X-Gitea-Delivery", delivery.to_owned()),
            (GITEA_SIGNATURE, signature(secret, body)),
            (
                GITHUB_SIGNATURE,
                format!("sha256={}", signature(secret, body)),
            ),
        ],
        ForgeKind::Gitlab => vec![
            json,
            ("X-Gitlab-Event", event.to_owned()),
            ("X-Gitlab-Event-UUID", delivery.to_owned()),
            (GITLAB_TOKEN, secret.to_owned()),
        ],
    }
}

/// Parses a verified delivery: the event from `X-GitHub-Event`, `X-Gitea-Event` (or
/// `X-Forgejo-Event`) or `X-Gitlab-Event` and the payload's `object_kind`.
pub fn parse(kind: ForgeKind, headers: &HeaderMap, body: &[u8]) -> Result<Delivery, HookError> {
    let header = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::trim)
            .filter(|v| !v.is_empty())
    };
    let (id, event) = match kind {
        ForgeKind::Github => (
            header("X-GitHub-Delivery").ok_or(HookError::NoDeliveryId("X-GitHub-Delivery"))?,
            header("X-GitHub-Event").unwrap_or_default(),
        ),
        ForgeKind::Gitea => (
            header("X-Gitea-Delivery")
                .or_else(|| header("X-Forgejo-Delivery"))
                .ok_or(HookError::NoDeliveryId("X-Gitea-Delivery"))?,
            header("X-Gitea-Event")
                .or_else(|| header("X-Forgejo-Event"))
                .unwrap_or_default(),
        ),
        ForgeKind::Gitlab => (
            header("X-Gitlab-Event-UUID")
                .or_else(|| header("Idempotency-Key"))
                .or_else(|| header("X-Gitlab-Webhook-UUID"))
                .ok_or(HookError::NoDeliveryId("X-Gitlab-Event-UUID"))?,
            header("X-Gitlab-Event").unwrap_or_default(),
        ),
    };
    let (repo, mut events) = match kind {
        ForgeKind::Github => github::parse(event, body)?,
        ForgeKind::Gitea => gitea::parse(event, body)?,
        ForgeKind::Gitlab => gitlab::parse(event, body)?,
    };
    let first = if events.is_empty() {
        ForgeEvent::Ignored {
            what: event.to_owned(),
        }
    } else {
        events.remove(0)
    };
    Ok(Delivery {
        id: id.to_owned(),
        repo,
        event: first,
        more: events,
    })
}

/// Reads `body` as `T`, naming the field that did not fit.
fn read<T: serde::de::DeserializeOwned>(body: &[u8]) -> Result<T, HookError> {
    let mut de = serde_json::Deserializer::from_slice(body);
    serde_path_to_error::deserialize(&mut de).map_err(|e| HookError::Unreadable(e.to_string()))
}

/// An event Muster does not act on, named by its event and action.
fn ignored(event: &str, action: &str) -> Vec<ForgeEvent> {
    let what = if action.is_empty() {
        event.to_owned()
    } else {
        format!("{event} {action}")
    };
    vec![ForgeEvent::Ignored { what }]
}

/// A review verdict from the names forges use (any case).
fn verdict(state: &str) -> Option<ReviewVerdict> {
    match state.to_ascii_lowercase().as_str() {
        "approved" | "approve" => Some(ReviewVerdict::Approved),
        "changes_requested" | "request_changes" | "rejected" => {
            Some(ReviewVerdict::ChangesRequested)
        }
        "commented" | "comment" => Some(ReviewVerdict::Commented),
        _ => None,
    }
}
