//! Deleting issues and editing or deleting comments over `/api/v1`: who may, and what each refusal says.

use chrono::TimeDelta;
use muster::domain::{IssueKey, NewApiToken, NewRun, RunPurpose, RunStatus, RuntimeKind};
use muster_tests::engine::claim_next;
use serde_json::{Value, json};

use super::{Env, api_cases, field};
use muster_tests::seed;

api_cases!(
    comment_edits_and_deletes,
    agents_touch_only_their_own_comments,
    issue_deletes,
);

async fn new_issue(api: &super::Api, title: &str) -> String {
    let issue = api
        .post("/api/v1/issues", json!({"title": title}))
        .await
        .expect(201);
    issue["key"].as_str().unwrap().to_owned()
}

async fn comment(api: &super::Api, key: &str, body: &str) -> String {
    let c = api
        .post(
            &format!("/api/v1/issues/{key}/comments"),
            json!({"body": body}),
        )
        .await
        .expect(201);
    assert_eq!(c["edited_at"], Value::Null, "a new comment is not edited");
    c["id"].as_str().unwrap().to_owned()
}

async fn bodies(api: &super::Api, key: &str) -> Vec<String> {
    field(
        &api.get(&format!("/api/v1/issues/{key}/comments"))
            .await
            .expect(200)["comments"],
        "body",
    )
}

/// The author edits and deletes their own comment; another member may do neither; an owner or admin
/// may delete anyone's but edit nobody else's; a deleted comment is gone for every verb.
async fn comment_edits_and_deletes(t: &Env) {
    let key = new_issue(&t.member.api, "Talk").await;
    let mine = comment(&t.member.api, &key, "Frist").await;
    let url = format!("/api/v1/issues/{key}/comments/{mine}");

    let edited = t
        .member
        .api
        .patch(&url, json!({"body": "First"}))
        .await
        .expect(200);
    assert_eq!(
        (edited["id"].as_str(), edited["body"].as_str()),
        (Some(mine.as_str()), Some("First"))
    );
    assert!(edited["edited_at"].is_string(), "{edited}");
    let detail = t
        .member
        .api
        .get(&format!("/api/v1/issues/{key}"))
        .await
        .expect(200);
    assert_eq!(detail["comments"][0]["edited_at"], edited["edited_at"]);
    t.member
        .api
        .patch(&url, json!({"body": "  "}))
        .await
        .error_contains(422, "body", "must not be empty");
    t.member
        .api
        .patch(&url, json!({}))
        .await
        .rejected(422, "missing field `body`");

    // Someone else's comment.
    let other = t
        .add_person("other@alpha.test", muster::domain::Role::Member)
        .await;
    other
        .api
        .patch(&url, json!({"body": "Hijacked"}))
        .await
        .error_contains(403, "comment", "only its author may edit this comment");
    other.api.delete(&url).await.error_contains(
        403,
        "comment",
        "only its author or an owner or admin may delete this comment",
    );
    t.owner
        .api
        .patch(&url, json!({"body": "Owner's words"}))
        .await
        .error_contains(403, "comment", "only its author may edit this comment");
    assert_eq!(bodies(&t.owner.api, &key).await, ["First"]);

    // The author deletes; then it is gone for everyone, with a message naming it.
    t.member.api.delete(&url).await.expect(204);
    assert!(bodies(&t.owner.api, &key).await.is_empty());
    let gone = format!("{mine} is not a comment on {key}");
    t.member
        .api
        .patch(&url, json!({"body": "Back"}))
        .await
        .error_contains(404, "comment", &gone);
    t.member
        .api
        .delete(&url)
        .await
        .error_contains(404, "comment", &gone);

    // Owners and admins delete anyone's comment.
    for moderator in [&t.owner, &t.admin] {
        let id = comment(&other.api, &key, "spam").await;
        moderator
            .api
            .delete(&format!("/api/v1/issues/{key}/comments/{id}"))
            .await
            .expect(204);
    }
    assert!(bodies(&t.owner.api, &key).await.is_empty());

    // Malformed ids and other issues' comments are unknown.
    let elsewhere = new_issue(&t.member.api, "Elsewhere").await;
    let there = comment(&t.member.api, &elsewhere, "there").await;
    t.member
        .api
        .delete(&format!("/api/v1/issues/{key}/comments/{there}"))
        .await
        .error_contains(
            404,
            "comment",
            &format!("{there} is not a comment on {key}"),
        );
    t.member
        .api
        .patch(
            &format!("/api/v1/issues/{key}/comments/not-a-uuid"),
            json!({"body": "x"}),
        )
        .await
        .error_contains(404, "comment", "not-a-uuid is not a comment on");
    assert_eq!(bodies(&t.member.api, &elsewhere).await, ["there"]);
}

/// A token for a claimed run of a new agent `name` on `key`, as the supervisor hands one to an agent.
pub(crate) async fn run_token(t: &Env, key: &str, name: &str) -> String {
    run_token_for(t, key, name, RunPurpose::Work).await
}

/// [`run_token`] for a run of `purpose` (a plan run proposes sub-issues).
pub(crate) async fn run_token_for(t: &Env, key: &str, name: &str, purpose: RunPurpose) -> String {
    let store = &t.app.store;
    let issue = store
        .get_issue(t.ws.id, &IssueKey::parse(key).unwrap())
        .await
        .unwrap();
    let agent = seed::agent(store, t.ws.id, name, RuntimeKind::Custom).await;
    let run = store
        .create_run(&NewRun {
            purpose,
            ..NewRun::assignment(t.ws.id, issue.id, agent.id)
        })
        .await
        .unwrap();
    let claimed = claim_next(
        store.as_ref(),
        &format!("test-{name}"),
        TimeDelta::minutes(10),
    )
    .await
    .unwrap();
    assert_eq!((claimed.id, claimed.status), (run.id, RunStatus::Claimed));
    let secret = muster::auth::new_secret(muster::auth::API_TOKEN_KIND);
    store
        .create_api_token(&NewApiToken {
            workspace_id: t.ws.id,
            user_id: t.owner.id,
            name: format!("run {}", run.id),
            prefix: secret.prefix,
            token_hash: secret.hash,
            run_id: Some(run.id),
        })
        .await
        .unwrap();
    secret.secret
}

/// An agent, with its run's token, edits and deletes only its own comments on its issue.
async fn agents_touch_only_their_own_comments(t: &Env) {
    let key = new_issue(&t.owner.api, "Agent work").await;
    let person = comment(&t.member.api, &key, "A person's comment").await;
    let coder = t.bearer(&run_token(t, &key, "coder").await);
    let own = comment(&coder, &key, "Working on it").await;
    let other_agent = t.bearer(&run_token(t, &key, "reviewer").await);

    let edited = coder
        .patch(
            &format!("/api/v1/issues/{key}/comments/{own}"),
            json!({"body": "Done: see the branch"}),
        )
        .await
        .expect(200);
    assert!(edited["edited_at"].is_string());
    assert_eq!(edited["author"]["name"], "coder");
    for url in [
        format!("/api/v1/issues/{key}/comments/{person}"),
        format!("/api/v1/issues/{key}/comments/{own}"),
    ] {
        let api = if url.ends_with(&own) {
            &other_agent
        } else {
            &coder
        };
        api.patch(&url, json!({"body": "overwritten"}))
            .await
            .error_contains(403, "comment", "an agent may edit only its own comments");
        api.delete(&url).await.error_contains(
            403,
            "comment",
            "an agent may delete only its own comments",
        );
    }
    assert_eq!(
        bodies(&t.owner.api, &key).await,
        ["A person's comment", "Done: see the branch"]
    );
    // Never another issue's comments, and never the issue itself.
    let elsewhere = new_issue(&t.owner.api, "Elsewhere").await;
    let there = comment(&t.owner.api, &elsewhere, "there").await;
    coder
        .delete(&format!("/api/v1/issues/{elsewhere}/comments/{there}"))
        .await
        .error(403, "token");
    coder
        .delete(&format!("/api/v1/issues/{key}"))
        .await
        .error(403, "token");
    coder
        .delete(&format!("/api/v1/issues/{key}/comments/{own}"))
        .await
        .expect(204);
    assert_eq!(bodies(&t.owner.api, &key).await, ["A person's comment"]);
}

/// Owners, admins and the issue's creator delete it, with its comments and runs; a queued run is
/// cancelled first; anyone else is refused with a message saying who may.
async fn issue_deletes(t: &Env) {
    let key = new_issue(&t.member.api, "Mine").await;
    comment(&t.owner.api, &key, "a comment").await;
    let other = t
        .add_person("other@alpha.test", muster::domain::Role::Member)
        .await;
    other
        .api
        .delete(&format!("/api/v1/issues/{key}"))
        .await
        .error_contains(
            403,
            "issue",
            &format!("only owners, admins and the person who created {key} may delete it"),
        );
    // An agent assigned to it has a queued run (no runner here claims it).
    seed::agent(&t.app.store, t.ws.id, "coder", RuntimeKind::Custom).await;
    t.owner
        .api
        .patch(
            &format!("/api/v1/issues/{key}"),
            json!({"assignee": "coder", "status": "todo"}),
        )
        .await
        .expect(200);
    let issue = t
        .app
        .store
        .get_issue(t.ws.id, &IssueKey::parse(&key).unwrap())
        .await
        .unwrap();
    let runs = t.app.store.list_runs_for_issue(issue.id).await.unwrap();
    assert_eq!(
        runs.iter().map(|r| r.status).collect::<Vec<_>>(),
        [RunStatus::Queued]
    );
    // The creator deletes it.
    t.member
        .api
        .delete(&format!("/api/v1/issues/{key}"))
        .await
        .expect(204);
    t.member
        .api
        .get(&format!("/api/v1/issues/{key}"))
        .await
        .error(404, "resource");
    t.member
        .api
        .delete(&format!("/api/v1/issues/{key}"))
        .await
        .error(404, "resource");
    for run in runs {
        assert!(
            matches!(
                t.app.store.get_run(run.id).await,
                Err(muster::store::Error::NotFound)
            ),
            "its runs go with it"
        );
    }
    // Owners and admins delete anyone's issue.
    for moderator in [&t.owner, &t.admin] {
        let key = new_issue(&other.api, "Someone's").await;
        moderator
            .api
            .delete(&format!("/api/v1/issues/{key}"))
            .await
            .expect(204);
    }
    assert!(t.issue_titles().await.is_empty());
}
