//! `/api/v1/ensembles` and an issue's ensemble routes: who may define what, precise refusals, and the
//! assign → compare → choose path up to what needs runs to end (the end-to-end path with real processes
//! is in `tests/it/ensembles.rs`).

use serde_json::json;

use super::{Env, api_cases};

api_cases!(ensemble_definitions, ensemble_runs_through_the_api);

async fn agents(t: &Env) {
    for name in ["a", "b", "c"] {
        t.owner
            .api
            .post("/api/v1/agents", json!({"name": name, "kind": "claude"}))
            .await
            .expect(201);
    }
}

/// Owners and admins define ensembles; members read them; every rule has its own message.
async fn ensemble_definitions(t: &Env) {
    agents(t).await;
    let body = json!({"name": "trio", "members": ["a", "b"], "check": "cargo test", "early_stop": "quorum 2",
        "reviewer": "c", "budget_usd": 3.0});
    t.member
        .api
        .post("/api/v1/ensembles", body.clone())
        .await
        .expect(403);
    let made = t
        .admin
        .api
        .post("/api/v1/ensembles", body.clone())
        .await
        .expect(201);
    assert_eq!(made["members"], json!(["a", "b"]));
    assert_eq!(made["reviewer"], "c");
    assert_eq!(made["early_stop"], "quorum 2");
    assert_eq!(made["candidate_budget_usd"], 1.5);
    t.owner
        .api
        .post("/api/v1/ensembles", body)
        .await
        .error_contains(409, "name", "exists already");
    let bad = t
        .owner
        .api
        .post(
            "/api/v1/ensembles",
            json!({"name": "x", "members": ["a", "nobody"], "early_stop": "sometimes"}),
        )
        .await;
    bad.error_contains(422, "members", "no agent called \"nobody\"");
    bad.error_contains(422, "early_stop", "expected all, first_green or quorum K");
    t.owner
        .api
        .post(
            "/api/v1/ensembles",
            json!({"name": "solo", "members": ["a"]}),
        )
        .await
        .error_contains(422, "members", "2 to 8 members");
    t.owner
        .api
        .post(
            "/api/v1/ensembles",
            json!({"name": "self", "members": ["a", "b"], "reviewer": "a"}),
        )
        .await
        .error_contains(422, "reviewer", "may not be one of the members");
    t.owner
        .api
        .post(
            "/api/v1/ensembles",
            json!({"name": "q", "members": ["a", "b"], "early_stop": "quorum 3"}),
        )
        .await
        .error_contains(422, "early_stop", "needs at least 3 members");
    t.owner
        .api
        .post(
            "/api/v1/ensembles",
            json!({"name": "share", "members": ["a", "b"], "share": 1.5}),
        )
        .await
        .error_contains(422, "share", "at most 1");
    let listed = t.member.api.get("/api/v1/ensembles").await.expect(200);
    assert_eq!(listed.as_array().unwrap().len(), 1, "{listed}");
    assert_eq!(
        t.member.api.get("/api/v1/ensembles/trio").await.expect(200)["check"],
        "cargo test"
    );
    t.member.api.get("/api/v1/ensembles/nope").await.expect(404);
    t.member
        .api
        .patch("/api/v1/ensembles/trio", json!({"early_stop": "all"}))
        .await
        .expect(403);
    let edited = t
        .owner
        .api
        .patch(
            "/api/v1/ensembles/trio",
            json!({"name": "duo", "reviewer": "", "check": ""}),
        )
        .await
        .expect(200);
    assert_eq!(edited["name"], "duo");
    assert!(
        edited["reviewer"].is_null() && edited["check"].is_null(),
        "{edited}"
    );
    assert_eq!(edited["early_stop"], "quorum 2", "absent fields stay");
    t.member
        .api
        .delete("/api/v1/ensembles/duo")
        .await
        .expect(403);
    t.owner
        .api
        .delete("/api/v1/ensembles/duo")
        .await
        .expect(204);
    t.owner
        .api
        .delete("/api/v1/ensembles/duo")
        .await
        .expect(404);
}

/// Assign queues one run per member; a second assignment, an unknown ensemble, comparing an issue
/// without one and choosing a candidate still queued are refused precisely.
async fn ensemble_runs_through_the_api(t: &Env) {
    agents(t).await;
    t.owner
        .api
        .post(
            "/api/v1/ensembles",
            json!({"name": "pair", "members": ["a", "b"], "budget_tokens": 1000}),
        )
        .await
        .expect(201);
    let issue = t
        .member
        .api
        .post("/api/v1/issues", json!({"title": "Two ways"}))
        .await
        .expect(201);
    let key = issue["key"].as_str().unwrap().to_owned();
    let path = format!("/api/v1/issues/{key}/ensemble");
    t.member
        .api
        .get(&path)
        .await
        .error_contains(404, "ensemble", "has no ensemble run");
    t.member
        .api
        .post(&path, json!({"ensemble": "nope"}))
        .await
        .error_contains(422, "ensemble", "no ensemble called");
    let assigned = t
        .member
        .api
        .post(&path, json!({"ensemble": "pair"}))
        .await
        .expect(201);
    assert_eq!(assigned["number"], 1);
    assert_eq!(assigned["runs"].as_array().unwrap().len(), 2);
    assert_eq!(assigned["estimates"].as_array().unwrap().len(), 2);
    t.member
        .api
        .post(&path, json!({"ensemble": "pair"}))
        .await
        .error_contains(409, "ensemble", "already being worked on");
    let compared = t.member.api.get(&path).await.expect(200);
    assert_eq!(compared["status"], "running");
    assert_eq!(compared["budget_tokens"], 1000);
    let agents: Vec<&str> = compared["candidates"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["agent"].as_str().unwrap())
        .collect();
    assert_eq!(agents, ["a", "b"]);
    t.member
        .api
        .get(&format!("{path}?number=2"))
        .await
        .error_contains(404, "ensemble", "has no ensemble run r2");
    // A number out of range is a 400 in the API's error format, like every other bad query.
    t.member
        .api
        .get(&format!("{path}?number=2147483648"))
        .await
        .error_contains(400, "query", "number");
    let choose = format!("{path}/choose");
    t.member
        .api
        .post(&choose, json!({"candidate": "z"}))
        .await
        .error_contains(422, "candidate", "the candidates are a, b");
    t.member
        .api
        .post(&choose, json!({"candidate": "a"}))
        .await
        .error_contains(409, "candidate", "still queued");
}
