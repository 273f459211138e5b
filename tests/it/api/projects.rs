//! `/api/v1/projects` and the `project` field of `POST`/`PATCH /api/v1/issues` and `GET
//! /api/v1/issues?project=`: each answers as documented, a project counts its issues and runs, and bad
//! input (keys, names, dates, leads, repositories, unknown projects) gets a precise error and changes
//! nothing.

use serde_json::json;

use super::{Env, api_cases};

api_cases!(project_routes_answer_as_documented);

async fn project_routes_answer_as_documented(t: &Env) {
    let member = &t.member.api;
    let owner = &t.owner.api;
    // Any member lays out a project; the lead is a member by email.
    let made = member
        .post(
            "/api/v1/projects",
            json!({
                "key": "web", "name": "Website", "description": "The *site*.",
                "lead": t.admin.email, "status": "active", "target_date": "2027-03-31"
            }),
        )
        .await
        .expect(201);
    assert_eq!(made["key"], "WEB");
    assert_eq!(made["lead"], t.admin.name);
    assert_eq!(made["target_date"], "2027-03-31");
    assert_eq!(made["repo_path"], serde_json::Value::Null);
    assert_eq!(
        (made["done"].as_i64(), made["total"].as_i64()),
        (Some(0), Some(0))
    );

    // Bad input: each field named, nothing created.
    member
        .post("/api/v1/projects", json!({ "name": "No key" }))
        .await
        .error_contains(422, "key", "needs a key");
    member
        .post("/api/v1/projects", json!({ "key": "W-1", "name": "Bad" }))
        .await
        .error_contains(422, "key", "2 to 10 letters");
    member
        .post(
            "/api/v1/projects",
            json!({ "key": "API", "name": "Backend", "target_date": "31/03/2027" }),
        )
        .await
        .error_contains(422, "target_date", "YYYY-MM-DD");
    member
        .post(
            "/api/v1/projects",
            json!({ "key": "API", "name": "Backend", "lead": "nobody@nowhere.test" }),
        )
        .await
        .error_contains(422, "lead", "no member called");
    member
        .post(
            "/api/v1/projects",
            json!({ "key": "API", "name": "Backend", "status": "someday" }),
        )
        .await
        .error_contains(422, "status", "expected one of");
    member
        .post("/api/v1/projects", json!({ "key": "WEB", "name": "Again" }))
        .await
        .error_contains(409, "key", "another project already has this key");
    member
        .post(
            "/api/v1/projects",
            json!({ "key": "SITE", "name": "Website" }),
        )
        .await
        .error_contains(409, "name", "another project already has this name");
    // A repository says what runs read on the server: owners and admins only, and it must be one.
    member
        .patch("/api/v1/projects/WEB", json!({ "repo_path": "/tmp" }))
        .await
        .error_contains(403, "repo_path", "only owners and admins");
    owner
        .patch(
            "/api/v1/projects/WEB",
            json!({ "repo_path": "/definitely/not/a/repo" }),
        )
        .await
        .error_contains(422, "repo_path", "");
    let listed = member.get("/api/v1/projects").await.expect(200);
    assert_eq!(listed.as_array().unwrap().len(), 1, "{listed}");

    // Issues join it, are listed by it, and a sub-issue joins its parent's project.
    let hero = member
        .post(
            "/api/v1/issues",
            json!({ "title": "Hero image", "project": "web", "status": "backlog" }),
        )
        .await
        .expect(201);
    assert_eq!(hero["project"], "WEB");
    let hero_key = hero["key"].as_str().unwrap().to_owned();
    let child = member
        .post(
            "/api/v1/issues",
            json!({ "title": "Crop it", "parent": hero_key, "status": "backlog" }),
        )
        .await
        .expect(201);
    assert_eq!(
        child["project"], "WEB",
        "a sub-issue is in its parent's project"
    );
    let loose = member
        .post(
            "/api/v1/issues",
            json!({ "title": "Loose", "status": "done" }),
        )
        .await
        .expect(201);
    assert_eq!(loose["project"], serde_json::Value::Null);
    let loose_key = loose["key"].as_str().unwrap().to_owned();
    member
        .patch(
            &format!("/api/v1/issues/{loose_key}"),
            json!({ "project": "NOPE" }),
        )
        .await
        .error_contains(
            422,
            "project",
            "no project \"NOPE\" in this workspace; its projects are WEB",
        );
    member
        .post(
            "/api/v1/issues",
            json!({ "title": "Lost", "project": "NOPE" }),
        )
        .await
        .error_contains(422, "project", "no project");
    let moved = member
        .patch(
            &format!("/api/v1/issues/{loose_key}"),
            json!({ "project": "WEB" }),
        )
        .await
        .expect(200);
    assert_eq!(moved["project"], "WEB");
    let page = member.get("/api/v1/issues?project=WEB").await.expect(200);
    let keys: Vec<&str> = page["issues"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["key"].as_str().unwrap())
        .collect();
    assert_eq!(keys.len(), 3, "{page}");
    member
        .get("/api/v1/issues?project=NOPE")
        .await
        .error_contains(422, "project", "no project");
    let shown = member.get("/api/v1/projects/web").await.expect(200);
    assert_eq!(
        (shown["done"].as_i64(), shown["total"].as_i64()),
        (Some(1), Some(3))
    );
    assert_eq!(shown["by_status"][0]["status"], "backlog");
    assert_eq!(shown["by_status"][0]["issues"], 2);

    // Edits: only the fields sent; "" clears.
    let edited = member
        .patch(
            "/api/v1/projects/WEB",
            json!({ "status": "paused", "target_date": "", "lead": "none" }),
        )
        .await
        .expect(200);
    assert_eq!(edited["status"], "paused");
    assert_eq!(edited["target_date"], serde_json::Value::Null);
    assert_eq!(edited["lead"], serde_json::Value::Null);
    assert_eq!(edited["name"], "Website");
    member.get("/api/v1/projects/NOPE").await.expect(404);
    member
        .patch("/api/v1/projects/NOPE", json!({ "name": "x" }))
        .await
        .expect(404);

    // Deleting is for owners and admins; its issues stay, in no project.
    member.delete("/api/v1/projects/WEB").await.expect(403);
    owner.delete("/api/v1/projects/WEB").await.expect(204);
    let hero = member
        .get(&format!("/api/v1/issues/{hero_key}"))
        .await
        .expect(200);
    assert_eq!(hero["project"], serde_json::Value::Null);
    owner.delete("/api/v1/projects/WEB").await.expect(404);
}
