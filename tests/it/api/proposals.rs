//! The planner's routes: `POST /api/v1/issues/{key}/plan`, `/api/v1/issues/{key}/proposals` and
//! `/api/v1/proposals/{id}` (`/approve`, `/discard`) answer as documented; bad input gets a precise error
//! and changes nothing; a decided proposal stays decided.

use muster::domain::RunPurpose;
use serde_json::json;

use super::deletes::run_token_for;
use super::{Env, api_cases};

api_cases!(proposal_routes_answer_as_documented);

async fn proposal_routes_answer_as_documented(t: &Env) {
    let api = &t.member.api;
    let planned = api
        .post(
            "/api/v1/issues",
            json!({ "title": "Relaunch", "status": "todo" }),
        )
        .await
        .expect(201);
    let key = planned["key"].as_str().unwrap().to_owned();
    let planner = t.bearer(&run_token_for(t, &key, "planner", RunPurpose::Plan).await);
    let proposals = format!("/api/v1/issues/{key}/proposals");
    assert_eq!(api.get(&proposals).await.expect(200), json!([]));
    api.get("/api/v1/issues/NOPE-1/proposals").await.expect(404);

    // Proposed by the plan run's token; a bad tree names its item.
    planner
        .post(
            &proposals,
            json!({ "summary": "x", "items": [{ "ref": "a", "title": "" }] }),
        )
        .await
        .error_contains(422, "items[0].title", "");
    planner
        .post(&proposals, json!({ "summary": "x" }))
        .await
        .error_contains(422, "items", "send the proposed sub-issues");
    planner
        .post(
            &proposals,
            json!({ "summary": "x".repeat(5000), "items": [{ "ref": "a", "title": "A" }] }),
        )
        .await
        .error_contains(422, "summary", "at most 4096");
    planner
        .post(
            &proposals,
            json!({ "items": [{ "ref": "a", "title": "A", "blocked_by": "b" }] }),
        )
        .await
        .expect(422);
    let proposal = planner
        .post(
            &proposals,
            json!({
                "summary": "Schema first.",
                "items": [
                    { "ref": "db", "title": "Schema", "acceptance": "migrations apply" },
                    { "ref": "api", "title": "Endpoints", "agent": "planner", "blocked_by": ["db"] },
                ],
            }),
        )
        .await
        .expect(201);
    assert_eq!(proposal["status"], "pending");
    assert_eq!(proposal["issue"], key.as_str());
    assert_eq!(proposal["agent"], "planner");
    assert_eq!(proposal["items"][1]["blocked_by"], json!(["db"]));
    assert!(proposal["items"][0]["created"].is_null());
    let id = proposal["id"].as_str().unwrap().to_owned();
    assert_eq!(api.get(&proposals).await.expect(200)[0]["id"], id.as_str());
    assert_eq!(
        api.get(&format!("/api/v1/proposals/{id}"))
            .await
            .expect(200)["summary"],
        "Schema first."
    );
    planner
        .get(&format!("/api/v1/proposals/{id}"))
        .await
        .expect(200);
    api.get("/api/v1/proposals/not-an-id").await.expect(404);
    api.get(&format!("/api/v1/proposals/{}", uuid::Uuid::nil()))
        .await
        .expect(404);
    // People propose nothing; runs decide nothing.
    api.post(
        &proposals,
        json!({ "items": [{ "ref": "a", "title": "A" }] }),
    )
    .await
    .error_contains(403, "token", "plan run");
    planner
        .post(&format!("/api/v1/proposals/{id}/approve"), json!({}))
        .await
        .expect(403);

    // Approval as edited: an unknown agent and a cycle are refused, and nothing is created.
    let approve = format!("/api/v1/proposals/{id}/approve");
    api.post(
        &approve,
        json!({ "items": [{ "ref": "db", "title": "Schema", "agent": "ghost" }] }),
    )
    .await
    .error_contains(422, "items[0].agent", "no agent called \"ghost\"");
    api.post(
        &approve,
        json!({ "items": [
            { "ref": "a", "title": "A", "blocked_by": ["b"] },
            { "ref": "b", "title": "B", "blocked_by": ["a"] },
        ] }),
    )
    .await
    .error_contains(422, "items", "cycle: ");
    api.post(&approve, json!({ "assign": "yes" }))
        .await
        .expect(422);
    assert_eq!(
        api.get(&format!("/api/v1/issues/{key}/plan"))
            .await
            .expect(200)["children"],
        json!([])
    );
    let approved = api
        .post(&approve, json!({ "assign": false }))
        .await
        .expect(200);
    let issues = approved["issues"].as_array().unwrap();
    assert_eq!(issues.len(), 2);
    assert_eq!(issues[0]["title"], "Schema");
    assert!(
        issues[0]["body"]
            .as_str()
            .unwrap()
            .contains("migrations apply")
    );
    assert!(issues[1]["assignee"].is_null(), "assign: false");
    assert_eq!(approved["proposal"]["status"], "approved");
    assert_eq!(
        approved["proposal"]["items"][1]["created"],
        issues[1]["key"]
    );
    let plan = api
        .get(&format!("/api/v1/issues/{key}/plan"))
        .await
        .expect(200);
    assert_eq!(plan["children"].as_array().unwrap().len(), 2);
    api.post(&approve, json!({}))
        .await
        .error_contains(409, "proposal", "already approved");
    api.post(&format!("/api/v1/proposals/{id}/discard"), json!({}))
        .await
        .expect(409);

    // Discard: nothing created.
    let second = planner
        .post(
            &proposals,
            json!({ "items": [{ "ref": "x", "title": "More" }] }),
        )
        .await
        .expect(201);
    let discarded = api
        .post(
            &format!(
                "/api/v1/proposals/{}/discard",
                second["id"].as_str().unwrap()
            ),
            json!({}),
        )
        .await
        .expect(200);
    assert_eq!(discarded["status"], "discarded");
    assert_eq!(
        api.get(&format!("/api/v1/issues/{key}/plan"))
            .await
            .expect(200)["children"]
            .as_array()
            .unwrap()
            .len(),
        2
    );

    // Asking for a plan: an agent by name, once at a time, never by a run's token.
    api.post(&format!("/api/v1/issues/{key}/plan"), json!({}))
        .await
        .error_contains(422, "agent", "name the agent");
    api.post(
        &format!("/api/v1/issues/{key}/plan"),
        json!({ "agent": "ghost" }),
    )
    .await
    .error_contains(422, "agent", "no agent called");
    planner
        .post(
            &format!("/api/v1/issues/{key}/plan"),
            json!({ "agent": "planner" }),
        )
        .await
        .expect(403);
    // The planner's plan run is still live (claimed above): a second one is a conflict.
    api.post(
        &format!("/api/v1/issues/{key}/plan"),
        json!({ "agent": "planner" }),
    )
    .await
    .error_contains(409, "agent", "already has a live run");
    let other = api
        .post("/api/v1/issues", json!({ "title": "Docs" }))
        .await
        .expect(201);
    let run = api
        .post(
            &format!("/api/v1/issues/{}/plan", other["key"].as_str().unwrap()),
            json!({ "agent": "planner" }),
        )
        .await
        .expect(201);
    assert_eq!(run["purpose"], "plan");
    assert_eq!(run["status"], "queued");
    api.post("/api/v1/issues/NOPE-1/plan", json!({ "agent": "planner" }))
        .await
        .expect(404);
}
