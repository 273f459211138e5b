//! Webhooks from the scripted forge's builders, sent with `send_hook` to a receiver that runs the
//! server's `verify` and `parse`, once per forge kind.

use std::sync::{Arc, Mutex};

use axum::body::Bytes;
use axum::http::{HeaderMap, StatusCode};
use muster::domain::{CheckState, ForgeKind, ReviewVerdict};
use muster::forge::hooks::{self, Delivery, ForgeEvent};
use muster_tests::forge as scripted;

use super::{BRANCH, REPO, log_ref};

const SECRET: &str = "hook-secret-7";

per_kind!(hooks_round_trip_through_verify_and_parse);

/// A webhook receiver: verifies and parses each delivery as `kind`, keeps what it parsed.
async fn receiver(
    kind: ForgeKind,
) -> (
    String,
    Arc<Mutex<Vec<Delivery>>>,
    tokio_util::sync::CancellationToken,
) {
    let received = Arc::new(Mutex::new(Vec::new()));
    let kept = received.clone();
    let app = axum::Router::new().route(
        "/hook",
        axum::routing::post(move |headers: HeaderMap, body: Bytes| {
            let kept = kept.clone();
            async move {
                if hooks::verify(kind, &headers, &body, SECRET).is_err() {
                    return StatusCode::UNAUTHORIZED;
                }
                match hooks::parse(kind, &headers, &body) {
                    Ok(delivery) => {
                        kept.lock().unwrap().push(delivery);
                        StatusCode::OK
                    }
                    Err(_) => StatusCode::BAD_REQUEST,
                }
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/hook", listener.local_addr().unwrap());
    let stop = tokio_util::sync::CancellationToken::new();
    let until = stop.clone();
    tokio::spawn(async move {
        axum::serve(listener, app)
            .with_graceful_shutdown(until.cancelled_owned())
            .await
    });
    (url, received, stop)
}

async fn hooks_round_trip_through_verify_and_parse(kind: ForgeKind) {
    let (url, received, stop) = receiver(kind).await;
    let sha = "0123456789abcdef0123456789abcdef01234567";
    let deliver = async |payload: serde_json::Value, delivery: &str| -> Vec<ForgeEvent> {
        let event = scripted::event_for(kind, &payload);
        let status = scripted::send_hook(kind, &url, SECRET, event, delivery, &payload)
            .await
            .unwrap();
        assert_eq!(status, 200, "{event}: {payload}");
        let last = received.lock().unwrap().last().cloned().unwrap();
        assert_eq!((last.id.as_str(), last.repo.as_str()), (delivery, REPO));
        last.events().cloned().collect()
    };
    let checks = |events: &[ForgeEvent], state: CheckState| {
        let found = events.iter().find_map(|e| match e {
            ForgeEvent::Check {
                name,
                pulls,
                branch,
                head_sha,
                state: s,
                log,
                ..
            } if name == "test" => Some((
                pulls.clone(),
                branch.clone(),
                head_sha.clone(),
                *s,
                log.clone(),
            )),
            _ => None,
        });
        let pulls = if kind == ForgeKind::Gitea {
            vec![]
        } else {
            vec![1]
        };
        assert_eq!(
            found,
            Some((
                pulls,
                Some(BRANCH.to_owned()),
                sha.to_owned(),
                state,
                log_ref(kind, 17)
            )),
            "{events:?}"
        );
    };
    checks(
        &deliver(
            scripted::check_failed(kind, REPO, 1, BRANCH, sha, "test", 17),
            "d-1",
        )
        .await,
        CheckState::Failure,
    );
    checks(
        &deliver(
            scripted::check_passed(kind, REPO, 1, BRANCH, sha, "test", 17),
            "d-2",
        )
        .await,
        CheckState::Success,
    );

    let changes = deliver(
        scripted::review(
            kind,
            REPO,
            1,
            "octocat",
            ReviewVerdict::ChangesRequested,
            "Add a test.",
        ),
        "d-3",
    )
    .await;
    let expected = match kind {
        // GitLab has no "changes requested" webhook: the builder sends a note.
        ForgeKind::Gitlab => ForgeEvent::Comment {
            pull: 1,
            author: "octocat".into(),
            body: "Add a test.".into(),
            path: None,
            line: None,
        },
        _ => ForgeEvent::Review {
            pull: 1,
            author: "octocat".into(),
            verdict: ReviewVerdict::ChangesRequested,
            body: "Add a test.".into(),
        },
    };
    assert_eq!(changes, vec![expected]);
    let approved = deliver(
        scripted::review(kind, REPO, 1, "octocat", ReviewVerdict::Approved, ""),
        "d-4",
    )
    .await;
    assert_eq!(
        approved,
        vec![ForgeEvent::Review {
            pull: 1,
            author: "octocat".into(),
            verdict: ReviewVerdict::Approved,
            body: String::new()
        }]
    );

    let line = deliver(
        scripted::line_comment(kind, REPO, 1, "octocat", "src/lib.rs", 12, "Off by one."),
        "d-5",
    )
    .await;
    let expected = match kind {
        ForgeKind::Gitea => ForgeEvent::Review {
            pull: 1,
            author: "octocat".into(),
            verdict: ReviewVerdict::Commented,
            body: "Off by one.".into(),
        },
        _ => ForgeEvent::Comment {
            pull: 1,
            author: "octocat".into(),
            body: "Off by one.".into(),
            path: Some("src/lib.rs".into()),
            line: Some(12),
        },
    };
    assert_eq!(line, vec![expected]);
    let mention = deliver(
        scripted::pr_comment(kind, REPO, 1, "octocat", "@muster please update the docs"),
        "d-6",
    )
    .await;
    assert_eq!(
        mention,
        vec![ForgeEvent::Comment {
            pull: 1,
            author: "octocat".into(),
            body: "@muster please update the docs".into(),
            path: None,
            line: None
        }]
    );

    assert_eq!(
        deliver(scripted::closed(kind, REPO, 1, true), "d-7").await,
        vec![ForgeEvent::Closed {
            pull: 1,
            merged: true
        }]
    );
    assert_eq!(
        deliver(scripted::closed(kind, REPO, 1, false), "d-8").await,
        vec![ForgeEvent::Closed {
            pull: 1,
            merged: false
        }]
    );

    let payload = scripted::closed(kind, REPO, 1, true);
    let forged = scripted::send_hook(
        kind,
        &url,
        "wrong-secret",
        scripted::event_for(kind, &payload),
        "d-9",
        &payload,
    )
    .await
    .unwrap();
    assert_eq!(forged, 401);
    assert_eq!(received.lock().unwrap().len(), 8);
    stop.cancel();
}
