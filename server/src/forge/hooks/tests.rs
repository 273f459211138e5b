use axum::http::{HeaderMap, HeaderName, HeaderValue};
use serde_json::{Value, json};

use super::*;

const SECRET: &str = "s3cret-hook";

/// The headers `kind` sends for `body`, as a `HeaderMap`.
fn headers(kind: ForgeKind, event: &str, body: &[u8]) -> HeaderMap {
    outgoing_headers(kind, SECRET, event, "delivery-1", body)
        .into_iter()
        .map(|(name, value)| {
            (
                HeaderName::from_static(leak_lowercase(name)),
                HeaderValue::from_str(&value).unwrap(),
            )
        })
        .collect()
}

fn leak_lowercase(name: &str) -> &'static str {
    Box::leak(name.to_ascii_lowercase().into_boxed_str())
}

/// Verifies and parses `payload` as `kind` sends it; returns every event.
fn deliver(kind: ForgeKind, event: &str, payload: &Value) -> Vec<ForgeEvent> {
    let body = serde_json::to_vec(payload).unwrap();
    let headers = headers(kind, event, &body);
    verify(kind, &headers, &body, SECRET).unwrap();
    let delivery = parse(kind, &headers, &body).unwrap();
    assert_eq!(delivery.id, "delivery-1");
    assert_eq!(delivery.repo, "acme/app");
    delivery.events().cloned().collect()
}

fn one(kind: ForgeKind, event: &str, payload: &Value) -> ForgeEvent {
    let mut events = deliver(kind, event, payload);
    assert_eq!(events.len(), 1, "{events:?}");
    events.remove(0)
}

#[test]
fn a_good_signature_passes_and_a_changed_byte_fails() {
    let body = br#"{"zen":"Keep it logically awesome.","repository":{"full_name":"acme/app"}}"#;
    for kind in ForgeKind::ALL.iter().copied() {
        let headers = headers(kind, "ping", body);
        assert_eq!(verify(kind, &headers, body, SECRET), Ok(()), "{kind}");
        let mut changed = body.to_vec();
        changed[10] ^= 1;
        let expected = match kind {
            // GitLab signs nothing: its token does not depend on the body.
            ForgeKind::Gitlab => Ok(()),
            _ => Err(HookError::BadSignature),
        };
        assert_eq!(verify(kind, &headers, &changed, SECRET), expected, "{kind}");
        assert_eq!(
            verify(kind, &headers, body, "another-secret"),
            Err(HookError::BadSignature),
            "{kind}"
        );
        assert_eq!(
            verify(kind, &headers, body, ""),
            Err(HookError::BadSignature),
            "{kind}"
        );
    }
}

#[test]
fn a_missing_signature_says_which_header() {
    let body = b"{}";
    let cases = [
        (ForgeKind::Github, "X-Hub-Signature-256"),
        (ForgeKind::Gitea, "X-Gitea-Signature"),
        (ForgeKind::Gitlab, "X-Gitlab-Token"),
    ];
    for (kind, header) in cases {
        assert_eq!(
            verify(kind, &HeaderMap::new(), body, SECRET),
            Err(HookError::Unsigned(header))
        );
    }
}

#[test]
fn gitea_signatures_are_read_from_forgejo_and_github_headers_too() {
    let body = b"{}";
    let hex = signature(SECRET, body);
    for (name, value) in [
        ("x-forgejo-signature", hex.clone()),
        ("x-hub-signature-256", format!("sha256={hex}")),
    ] {
        let mut headers = HeaderMap::new();
        headers.insert(name, HeaderValue::from_str(&value).unwrap());
        assert_eq!(verify(ForgeKind::Gitea, &headers, body, SECRET), Ok(()));
    }
    let mut malformed = HeaderMap::new();
    malformed.insert("x-gitea-signature", HeaderValue::from_static("not-hex"));
    assert_eq!(
        verify(ForgeKind::Gitea, &malformed, body, SECRET),
        Err(HookError::BadSignature)
    );
}

#[test]
fn a_delivery_without_an_id_or_json_is_refused() {
    let mut headers = HeaderMap::new();
    headers.insert("x-github-event", HeaderValue::from_static("ping"));
    assert_eq!(
        parse(ForgeKind::Github, &headers, b"{}"),
        Err(HookError::NoDeliveryId("X-GitHub-Delivery"))
    );
    headers.insert("x-github-delivery", HeaderValue::from_static("d"));
    assert!(matches!(
        parse(ForgeKind::Github, &headers, b"not json"),
        Err(HookError::Unreadable(_))
    ));
    // GitLab's older servers send only the idempotency key.
    let mut gitlab = HeaderMap::new();
    gitlab.insert("x-gitlab-event", HeaderValue::from_static("Push Hook"));
    gitlab.insert("idempotency-key", HeaderValue::from_static("k-1"));
    let delivery = parse(ForgeKind::Gitlab, &gitlab, br#"{"object_kind":"push"}"#).unwrap();
    assert_eq!(delivery.id, "k-1");
    assert!(matches!(delivery.event, ForgeEvent::Ignored { .. }));
}

mod gitea;
mod github;
mod gitlab;

/// A `Check` event's fields, for comparing.
fn check(
    pulls: &[i64],
    branch: Option<&str>,
    sha: &str,
    name: &str,
    state: CheckState,
    url: Option<&str>,
    log: LogRef,
) -> ForgeEvent {
    ForgeEvent::Check {
        pulls: pulls.to_vec(),
        branch: branch.map(str::to_owned),
        head_sha: sha.to_owned(),
        name: name.to_owned(),
        state,
        url: url.map(str::to_owned),
        log,
    }
}

fn repository() -> Value {
    json!({"id": 1, "name": "app", "full_name": "acme/app", "private": true})
}
