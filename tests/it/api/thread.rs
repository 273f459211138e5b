//! `GET /api/v1/issues/{key}/thread`: an issue's conversation as one timeline, oldest first — a finished
//! run with its summary folded in (not repeated as a comment), a status change, a person's reply and the
//! live follow-up it queued; 404 for a missing key; a run's token reads only its own issue's thread.

use muster::domain::*;
use muster_tests::engine::succeed_in_store;
use serde_json::{Value, json};

use super::{Env, api_cases, field};
use muster_tests::seed;

api_cases!(issue_thread);

async fn queue(
    t: &Env,
    issue: &Issue,
    agent: &Agent,
    trigger: RunTrigger,
    comment: Option<CommentId>,
) -> Run {
    t.app
        .store
        .create_run(&NewRun {
            trigger,
            trigger_comment_id: comment,
            ..NewRun::assignment(t.ws.id, issue.id, agent.id)
        })
        .await
        .unwrap()
}

fn kinds(thread: &Value) -> Vec<String> {
    field(&thread["entries"], "kind")
}

async fn issue_thread(t: &Env) {
    let api = &t.member.api;
    api.post("/api/v1/issues", json!({"title": "Fix the parser"}))
        .await
        .expect(201);
    let store = &t.app.store;
    let issue = store
        .get_issue(t.ws.id, &IssueKey::parse("ALP-1").unwrap())
        .await
        .unwrap();
    let coder = seed::agent(store, t.ws.id, "coder", RuntimeKind::Custom).await;
    let first = queue(t, &issue, &coder, RunTrigger::Assignment, None).await;
    succeed_in_store(
        t.app.store.as_ref(),
        &first,
        "Fixed the parser.\nAll tests pass.",
    )
    .await;
    api.post("/api/v1/issues/ALP-1/move", json!({"status": "in_review"}))
        .await
        .expect(200);

    // A run's token reads its own issue's thread, not another's.
    api.post("/api/v1/issues", json!({"title": "Elsewhere"}))
        .await
        .expect(201);
    let token = t.bearer(&super::deletes::run_token(t, "ALP-2", "reviewer").await);
    token.get("/api/v1/issues/ALP-2/thread").await.expect(200);
    token
        .get("/api/v1/issues/ALP-1/thread")
        .await
        .error_contains(403, "token", "may only act on issue ALP-2");

    let reply = api
        .post(
            "/api/v1/issues/ALP-1/comments",
            json!({"body": "Now the empty file, please."}),
        )
        .await
        .expect(201);
    let reply_id: CommentId = reply["id"].as_str().unwrap().parse().unwrap();
    let second = queue(t, &issue, &coder, RunTrigger::Comment, Some(reply_id)).await;

    let thread = api.get("/api/v1/issues/alp-1/thread").await.expect(200);
    assert_eq!(thread["issue"], "ALP-1");
    assert_eq!(
        kinds(&thread),
        ["change", "run", "status", "comment", "run"],
        "{thread:#}"
    );
    let e = &thread["entries"];
    assert_eq!(
        (e[0]["what"].as_str(), e[0]["actor"]["name"].as_str()),
        (Some("created"), Some("member"))
    );

    // The finished run carries its summary; the summary comment is not repeated as a comment.
    let run = &e[1];
    assert_eq!(run["run"]["id"], first.id.to_string());
    assert_eq!(run["run"]["status"], "succeeded");
    assert_eq!(run["run"]["summary"], "Fixed the parser.\nAll tests pass.");
    assert_eq!(run["run"]["cost"], "$0.0123");
    assert_eq!(run["run"]["trigger"], "assignment");
    assert_eq!(run["live"], false);
    assert_eq!(run["triggered_by"], Value::Null);
    assert!(run["duration_secs"].as_i64().is_some());
    let summary_id = run["summary_comment_id"].as_str().unwrap();
    let comments: Vec<&Value> = e
        .as_array()
        .unwrap()
        .iter()
        .filter(|x| x["kind"] == "comment")
        .collect();
    assert_eq!(comments.len(), 1);
    assert_ne!(comments[0]["comment"]["id"], summary_id);
    let all = api.get("/api/v1/issues/ALP-1/comments").await.expect(200);
    assert!(
        field(&all["comments"], "id").contains(&summary_id.to_owned()),
        "it is a comment of the issue"
    );

    let status = &e[2];
    assert_eq!(
        (status["from"].as_str(), status["to"].as_str()),
        (Some("todo"), Some("in_review"))
    );
    assert_eq!(status["actor"]["name"], "member");
    assert_eq!(e[3]["comment"]["body"], "Now the empty file, please.");
    assert_eq!(e[3]["comment"]["author"]["name"], "member");

    // The follow-up the reply queued is live, and says who queued it.
    let live = &e[4];
    assert_eq!(live["run"]["id"], second.id.to_string());
    assert_eq!(live["run"]["status"], "queued");
    assert_eq!(live["live"], true);
    assert_eq!(live["run"]["trigger"], "comment");
    assert_eq!(live["run"]["trigger_comment_id"], reply["id"]);
    assert_eq!(live["triggered_by"]["name"], "member");
    assert_eq!(live["summary_comment_id"], Value::Null);
    assert_eq!(live["duration_secs"], Value::Null, "not started");
    let at = |i: usize| {
        e[i]["at"]
            .as_str()
            .unwrap()
            .parse::<chrono::DateTime<chrono::Utc>>()
            .unwrap()
    };
    assert!((1..5).all(|i| at(i - 1) <= at(i)), "oldest first");

    for missing in ["ALP-99", "BET-1", "nonsense"] {
        api.get(&format!("/api/v1/issues/{missing}/thread"))
            .await
            .expect(404);
    }
}
