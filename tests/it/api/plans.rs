//! `/api/v1/issues/{key}/plan` and `/relations`, and the planning fields of `POST`/`PATCH
//! /api/v1/issues`: each answers as documented, and bad input (unknown keys and kinds, cycles, the same
//! relation twice) gets a precise error and changes nothing.

use serde_json::json;

use super::{Env, api_cases};

api_cases!(plan_routes_answer_as_documented);

async fn plan_routes_answer_as_documented(t: &Env) {
    let api = &t.member.api;
    let mut keys = Vec::new();
    for title in ["Launch", "Schema", "API", "Docs"] {
        let made = api
            .post(
                "/api/v1/issues",
                json!({ "title": title, "status": "backlog" }),
            )
            .await
            .expect(201);
        keys.push(made["key"].as_str().unwrap().to_owned());
    }
    let [launch, schema, apis, docs] = [&keys[0], &keys[1], &keys[2], &keys[3]];

    // A sub-issue at creation and by an edit; the parent's plan counts them.
    let child = api
        .post(
            "/api/v1/issues",
            json!({ "title": "Rollout", "parent": launch, "status": "backlog" }),
        )
        .await
        .expect(201);
    let rollout = child["key"].as_str().unwrap().to_owned();
    api.patch(
        &format!("/api/v1/issues/{schema}"),
        json!({ "parent": launch }),
    )
    .await
    .expect(200);
    api.patch(
        &format!("/api/v1/issues/{launch}"),
        json!({ "wake_on_children": true }),
    )
    .await
    .expect(200);
    let plan = api
        .get(&format!("/api/v1/issues/{launch}/plan"))
        .await
        .expect(200);
    assert_eq!(plan["progress"]["total"], 2);
    assert_eq!(plan["wake_on_children"], true);
    let children: Vec<&str> = plan["children"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["key"].as_str().unwrap())
        .collect();
    assert_eq!(children, [schema.as_str(), rollout.as_str()]);
    // The parent's parent cannot be its child; an unknown parent is named.
    api.patch(
        &format!("/api/v1/issues/{launch}"),
        json!({ "parent": schema }),
    )
    .await
    .error_contains(
        422,
        "parent",
        &format!("cycle: {launch} → {schema} → {launch}"),
    );
    api.post(
        "/api/v1/issues",
        json!({ "title": "Orphan", "parent": "ALP-999" }),
    )
    .await
    .error_contains(422, "parent", "no issue \"ALP-999\"");

    // Relations: API is blocked by Schema; the plan says what it waits on, from both ends.
    let made = api
        .post(
            &format!("/api/v1/issues/{apis}/relations"),
            json!({ "kind": "blocked_by", "issue": schema }),
        )
        .await
        .expect(201);
    assert_eq!(made["waiting_on"], json!([schema]));
    assert_eq!(made["relations"][0]["relation"], "blocked_by");
    assert_eq!(made["relations"][0]["met"], false);
    api.post(
        &format!("/api/v1/issues/{docs}/relations"),
        json!({ "kind": "blocked_by", "issue": apis, "until": "merged", "stacked": true }),
    )
    .await
    .expect(201);
    let seen_from_schema = api
        .get(&format!("/api/v1/issues/{schema}"))
        .await
        .expect(200);
    assert_eq!(
        seen_from_schema["plan"]["relations"][0]["relation"],
        "blocks"
    );
    assert_eq!(seen_from_schema["plan"]["parent"]["key"], launch.as_str());

    // Refusals: a cycle (named), the same relation twice, unknown kinds, keys and until values.
    api.post(
        &format!("/api/v1/issues/{schema}/relations"),
        json!({ "kind": "blocked_by", "issue": docs }),
    )
    .await
    .error_contains(
        422,
        "issue",
        &format!("{docs} → {schema} → {apis} → {docs}"),
    );
    api.post(
        &format!("/api/v1/issues/{apis}/relations"),
        json!({ "kind": "blocked_by", "issue": schema }),
    )
    .await
    .error_contains(409, "issue", "already blocked by");
    api.post(
        &format!("/api/v1/issues/{apis}/relations"),
        json!({ "kind": "depends", "issue": schema }),
    )
    .await
    .error_contains(
        422,
        "kind",
        "blocked_by, blocks, relates_to or duplicate_of",
    );
    api.post(
        &format!("/api/v1/issues/{apis}/relations"),
        json!({ "kind": "relates_to", "issue": "nope" }),
    )
    .await
    .error_contains(422, "issue", "no issue");
    api.post(
        &format!("/api/v1/issues/{apis}/relations"),
        json!({ "kind": "blocks", "issue": launch, "until": "someday" }),
    )
    .await
    .error(422, "until");
    api.post(
        &format!("/api/v1/issues/{apis}/relations"),
        json!({ "kind": "relates_to", "issue": launch, "stacked": true }),
    )
    .await
    .error(422, "until");
    api.post(
        "/api/v1/issues/ALP-999/relations",
        json!({ "kind": "relates_to", "issue": launch }),
    )
    .await
    .expect(404);

    // Removing: 204, then 404; the blocked issue no longer waits.
    api.delete(&format!(
        "/api/v1/issues/{apis}/relations/blocked_by/{schema}"
    ))
    .await
    .expect(204);
    api.delete(&format!(
        "/api/v1/issues/{apis}/relations/blocked_by/{schema}"
    ))
    .await
    .expect(404);
    api.delete(&format!(
        "/api/v1/issues/{apis}/relations/sideways/{schema}"
    ))
    .await
    .error(422, "kind");
    let plan = api
        .get(&format!("/api/v1/issues/{apis}/plan"))
        .await
        .expect(200);
    assert_eq!(plan["waiting_on"], json!([]));
    api.get("/api/v1/issues/ALP-999/plan").await.expect(404);
}
