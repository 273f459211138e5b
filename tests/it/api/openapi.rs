//! The OpenAPI document: public, well-formed, and every route in it is listed in [`ROUTES`] with tests
//! that exist, so a new route without a test fails here.

use std::collections::BTreeSet;

use serde_json::Value;

use super::{Env, api_cases};

/// Every route of the API (method, path as in the OpenAPI document) and the tests that exercise it.
/// Every route is also swept without credentials by `auth::every_route_needs_credentials`.
pub const ROUTES: &[(&str, &str, &[&str])] = &[
    (
        "get",
        "/api/v1/ensembles",
        &["ensembles::ensemble_definitions"],
    ),
    (
        "post",
        "/api/v1/ensembles",
        &["ensembles::ensemble_definitions"],
    ),
    (
        "get",
        "/api/v1/ensembles/{name}",
        &["ensembles::ensemble_definitions"],
    ),
    (
        "patch",
        "/api/v1/ensembles/{name}",
        &["ensembles::ensemble_definitions"],
    ),
    (
        "delete",
        "/api/v1/ensembles/{name}",
        &["ensembles::ensemble_definitions"],
    ),
    (
        "post",
        "/api/v1/issues/{key}/ensemble",
        &["ensembles::ensemble_runs_through_the_api"],
    ),
    (
        "get",
        "/api/v1/issues/{key}/ensemble",
        &["ensembles::ensemble_runs_through_the_api"],
    ),
    (
        "post",
        "/api/v1/issues/{key}/ensemble/choose",
        &["ensembles::ensemble_runs_through_the_api"],
    ),
    ("get", "/api/v1/usage", &["usage::usage_report_reading"]),
    ("get", "/api/v1/usage/caps", &["usage::caps_setting"]),
    ("put", "/api/v1/usage/caps", &["usage::caps_setting"]),
    ("put", "/api/v1/agents/{name}/cap", &["usage::caps_setting"]),
    ("get", "/api/v1/rates", &["usage::rate_table_setting"]),
    ("put", "/api/v1/rates", &["usage::rate_table_setting"]),
    (
        "get",
        "/api/v1/skills",
        &["skills::skill_lifecycle", "skills::skill_validation"],
    ),
    (
        "post",
        "/api/v1/skills",
        &["skills::skill_lifecycle", "skills::skill_validation"],
    ),
    ("post", "/api/v1/skills/import", &["skills::skill_imports"]),
    (
        "post",
        "/api/v1/skills/import-path",
        &["skills::skill_imports"],
    ),
    ("get", "/api/v1/skills/{slug}", &["skills::skill_lifecycle"]),
    (
        "put",
        "/api/v1/skills/{slug}",
        &[
            "skills::skill_lifecycle",
            "skills::built_ins_are_seeded_and_edits_survive",
        ],
    ),
    (
        "delete",
        "/api/v1/skills/{slug}",
        &["skills::skill_lifecycle"],
    ),
    (
        "get",
        "/api/v1/skills/{slug}/export",
        &["skills::skill_lifecycle"],
    ),
    (
        "get",
        "/api/v1/agents/{name}/skills",
        &["skills::agent_skill_attachments"],
    ),
    (
        "put",
        "/api/v1/agents/{name}/skills/{slug}",
        &["skills::agent_skill_attachments"],
    ),
    (
        "delete",
        "/api/v1/agents/{name}/skills/{slug}",
        &["skills::agent_skill_attachments"],
    ),
    ("get", "/api/v1/me", &["auth::me_for_each_role"]),
    (
        "put",
        "/api/v1/account/password",
        &[
            "account::password_change_signs_out_other_sessions",
            "account::password_change_validation_and_limits",
        ],
    ),
    (
        "get",
        "/api/v1/runtimes",
        &["runtimes::runtimes_are_listed_and_redetected"],
    ),
    (
        "post",
        "/api/v1/runtimes/detect",
        &["runtimes::runtimes_are_listed_and_redetected"],
    ),
    (
        "get",
        "/api/v1/issues",
        &["issues::issue_lifecycle", "issues::issue_list_filters"],
    ),
    (
        "get",
        "/api/v1/issues/search",
        &[
            "search::issue_search",
            "search::run_tokens_search_their_own_workspace",
        ],
    ),
    (
        "post",
        "/api/v1/issues",
        &[
            "issues::issue_lifecycle",
            "issue_validation::issue_create_validation",
        ],
    ),
    (
        "get",
        "/api/v1/issues/{key}",
        &[
            "issues::issue_lifecycle",
            "auth::other_workspace_issues_are_not_found",
        ],
    ),
    (
        "patch",
        "/api/v1/issues/{key}",
        &[
            "issues::issue_lifecycle",
            "issue_validation::issue_update_validation",
        ],
    ),
    (
        "post",
        "/api/v1/issues/{key}/move",
        &["issues::issue_lifecycle", "issues::move_reorders_columns"],
    ),
    (
        "get",
        "/api/v1/issues/{key}/comments",
        &["issues::issue_lifecycle", "issues::comments"],
    ),
    (
        "post",
        "/api/v1/issues/{key}/comments",
        &["issues::issue_lifecycle", "issues::comments"],
    ),
    (
        "delete",
        "/api/v1/issues/{key}",
        &[
            "deletes::issue_deletes",
            "deletes::agents_touch_only_their_own_comments",
        ],
    ),
    (
        "patch",
        "/api/v1/issues/{key}/comments/{id}",
        &[
            "deletes::comment_edits_and_deletes",
            "deletes::agents_touch_only_their_own_comments",
        ],
    ),
    (
        "delete",
        "/api/v1/issues/{key}/comments/{id}",
        &[
            "deletes::comment_edits_and_deletes",
            "deletes::agents_touch_only_their_own_comments",
        ],
    ),
    ("get", "/api/v1/agents", &["agents::agent_lifecycle"]),
    (
        "post",
        "/api/v1/agents",
        &[
            "agents::agent_lifecycle",
            "agents::agent_field_validation",
            "agents::agent_name_conflicts",
        ],
    ),
    (
        "get",
        "/api/v1/agents/{name}",
        &[
            "agents::agent_lifecycle",
            "agent_secrets::agent_secrets_are_write_only",
        ],
    ),
    (
        "patch",
        "/api/v1/agents/{name}",
        &[
            "agents::agent_lifecycle",
            "agent_secrets::agent_secrets_are_write_only",
            "agents::agent_name_conflicts",
        ],
    ),
    (
        "delete",
        "/api/v1/agents/{name}",
        &["agents::agent_lifecycle", "agents::agent_delete_rules"],
    ),
    ("get", "/api/v1/members", &["members::members_list_and_add"]),
    (
        "post",
        "/api/v1/members",
        &[
            "members::members_list_and_add",
            "members::member_add_validation",
            "members::member_permissions",
            "members::invitation_routes",
        ],
    ),
    (
        "get",
        "/api/v1/members/invitations",
        &["members::invitation_routes"],
    ),
    (
        "delete",
        "/api/v1/members/invitations/{id}",
        &["members::invitation_routes"],
    ),
    (
        "get",
        "/api/v1/invitations",
        &["members::invitation_routes"],
    ),
    (
        "post",
        "/api/v1/invitations/{id}/accept",
        &[
            "members::invitation_routes",
            "members::members_list_and_add",
        ],
    ),
    (
        "post",
        "/api/v1/invitations/{id}/decline",
        &["members::invitation_routes"],
    ),
    (
        "patch",
        "/api/v1/members/{user_id}",
        &[
            "members::role_changes_and_last_owner",
            "members::member_permissions",
        ],
    ),
    (
        "delete",
        "/api/v1/members/{user_id}",
        &["members::member_removal", "members::member_permissions"],
    ),
    (
        "get",
        "/api/v1/runners",
        &[
            "runners::runners_list_what_they_reported",
            "runners::runner_token_lifecycle",
        ],
    ),
    (
        "get",
        "/api/v1/runner-tokens",
        &[
            "runners::runner_token_lifecycle",
            "runners::runner_token_roles_and_validation",
        ],
    ),
    (
        "post",
        "/api/v1/runner-tokens",
        &[
            "runners::runner_token_lifecycle",
            "runners::runner_token_roles_and_validation",
        ],
    ),
    (
        "delete",
        "/api/v1/runner-tokens/{id}",
        &[
            "runners::runner_token_lifecycle",
            "runners::runner_token_roles_and_validation",
        ],
    ),
    ("get", "/api/v1/tokens", &["tokens::token_lifecycle"]),
    (
        "post",
        "/api/v1/tokens",
        &[
            "tokens::token_lifecycle",
            "tokens::token_validation_and_ownership",
        ],
    ),
    (
        "delete",
        "/api/v1/tokens/{id}",
        &[
            "tokens::token_lifecycle",
            "tokens::token_validation_and_ownership",
        ],
    ),
    (
        "get",
        "/api/v1/workspace",
        &["workspace::workspace_repo_setting"],
    ),
    (
        "patch",
        "/api/v1/workspace",
        &["workspace::workspace_repo_setting"],
    ),
    (
        "get",
        "/api/v1/openapi.json",
        &["openapi::openapi_document_is_public"],
    ),
    (
        "get",
        "/api/v1/runs",
        &["runs::run_list_and_show", "runs::run_list_validation"],
    ),
    (
        "get",
        "/api/v1/runs/{id}",
        &[
            "runs::run_list_and_show",
            "runs::runs_of_other_workspaces_are_not_found",
        ],
    ),
    (
        "get",
        "/api/v1/runs/{id}/events",
        &["runs::run_events_paging"],
    ),
    (
        "get",
        "/api/v1/runs/{id}/events/stream",
        &["runs::run_event_stream_replays_and_ends"],
    ),
    (
        "post",
        "/api/v1/runs/{id}/cancel",
        &["runs::run_cancel_and_retry"],
    ),
    (
        "post",
        "/api/v1/runs/{id}/retry",
        &["runs::run_cancel_and_retry"],
    ),
    (
        "get",
        "/api/v1/issues/{key}/runs",
        &["runs::run_list_and_show"],
    ),
    (
        "get",
        "/api/v1/issues/{key}/thread",
        &["thread::issue_thread"],
    ),
    (
        "post",
        "/api/v1/issues/batch",
        &[
            "lists::a_batch_changes_every_issue_through_the_single_edit_path",
            "lists::a_refused_batch_names_the_problem_and_changes_nothing",
            "lists::a_run_token_may_not_batch",
        ],
    ),
    (
        "get",
        "/api/v1/views",
        &["lists::saved_views_are_created_listed_and_deleted"],
    ),
    (
        "post",
        "/api/v1/views",
        &["lists::saved_views_are_created_listed_and_deleted"],
    ),
    (
        "delete",
        "/api/v1/views/{name}",
        &["lists::saved_views_are_created_listed_and_deleted"],
    ),
    (
        "get",
        "/api/v1/issues/{key}/plan",
        &["plans::plan_routes_answer_as_documented"],
    ),
    (
        "post",
        "/api/v1/issues/{key}/relations",
        &["plans::plan_routes_answer_as_documented"],
    ),
    (
        "delete",
        "/api/v1/issues/{key}/relations/{kind}/{other}",
        &["plans::plan_routes_answer_as_documented"],
    ),
    (
        "post",
        "/api/v1/issues/{key}/plan",
        &["proposals::proposal_routes_answer_as_documented"],
    ),
    (
        "get",
        "/api/v1/issues/{key}/proposals",
        &["proposals::proposal_routes_answer_as_documented"],
    ),
    (
        "post",
        "/api/v1/issues/{key}/proposals",
        &["proposals::proposal_routes_answer_as_documented"],
    ),
    (
        "get",
        "/api/v1/proposals/{id}",
        &["proposals::proposal_routes_answer_as_documented"],
    ),
    (
        "post",
        "/api/v1/proposals/{id}/approve",
        &["proposals::proposal_routes_answer_as_documented"],
    ),
    (
        "post",
        "/api/v1/proposals/{id}/discard",
        &["proposals::proposal_routes_answer_as_documented"],
    ),
    (
        "get",
        "/api/v1/projects",
        &["projects::project_routes_answer_as_documented"],
    ),
    (
        "post",
        "/api/v1/projects",
        &["projects::project_routes_answer_as_documented"],
    ),
    (
        "get",
        "/api/v1/projects/{key}",
        &["projects::project_routes_answer_as_documented"],
    ),
    (
        "patch",
        "/api/v1/projects/{key}",
        &["projects::project_routes_answer_as_documented"],
    ),
    (
        "delete",
        "/api/v1/projects/{key}",
        &["projects::project_routes_answer_as_documented"],
    ),
    (
        "get",
        "/api/v1/forges",
        &["forges::forge_routes_answer_as_documented"],
    ),
    (
        "post",
        "/api/v1/forges",
        &["forges::forge_routes_answer_as_documented"],
    ),
    (
        "get",
        "/api/v1/forges/{id}",
        &["forges::forge_routes_answer_as_documented"],
    ),
    (
        "patch",
        "/api/v1/forges/{id}",
        &["forges::forge_routes_answer_as_documented"],
    ),
    (
        "delete",
        "/api/v1/forges/{id}",
        &["forges::forge_routes_answer_as_documented"],
    ),
    (
        "post",
        "/api/v1/forges/{id}/test",
        &["forges::forge_routes_answer_as_documented"],
    ),
    (
        "get",
        "/api/v1/pull-requests",
        &["forges::forge_routes_answer_as_documented"],
    ),
    (
        "get",
        "/api/v1/pull-requests/{id}",
        &["forges::forge_routes_answer_as_documented"],
    ),
    (
        "post",
        "/api/v1/runs/{id}/pull-request",
        &["forges::forge_routes_answer_as_documented"],
    ),
    (
        "post",
        "/api/v1/issues/{key}/pull-request",
        &["forges::forge_routes_answer_as_documented"],
    ),
];

api_cases!(
    openapi_document_is_public,
    every_route_is_listed_and_tested,
    parameters_are_typed,
    every_operation_documents_its_errors,
    bodies_are_typed,
    the_document_s_promises_hold,
);

async fn document(t: &Env) -> Value {
    t.anon.get("/api/v1/openapi.json").await.expect(200)
}

/// Served without credentials, OpenAPI 3, bearer security, the error schema.
async fn openapi_document_is_public(t: &Env) {
    let reply = t.anon.get("/api/v1/openapi.json").await;
    assert!(reply.content_type.starts_with("application/json"));
    let doc = reply.expect(200);
    assert!(
        doc["openapi"].as_str().unwrap().starts_with("3."),
        "{}",
        doc["openapi"]
    );
    assert_eq!(doc["info"]["title"], "Muster API");
    assert_eq!(
        doc["components"]["securitySchemes"]["bearer"]["scheme"],
        "bearer"
    );
    assert_eq!(doc["security"][0]["bearer"], serde_json::json!([]));
    assert!(doc["components"]["schemas"]["ErrorBody"].is_object());
    // A token caller sees the same document.
    assert_eq!(
        t.owner.api.get("/api/v1/openapi.json").await.expect(200),
        doc
    );
}

/// Every path+method of the document is in `ROUTES`, every entry of `ROUTES` is in the document, and
/// every test it names exists.
async fn every_route_is_listed_and_tested(t: &Env) {
    let doc = document(t).await;
    let mut documented: BTreeSet<(String, String)> = BTreeSet::new();
    for (path, item) in doc["paths"].as_object().unwrap() {
        for method in item.as_object().unwrap().keys() {
            if [
                "get", "post", "put", "patch", "delete", "head", "options", "trace",
            ]
            .contains(&method.as_str())
            {
                documented.insert((method.clone(), path.clone()));
            }
        }
    }
    // The document describes itself too.
    documented.insert(("get".into(), "/api/v1/openapi.json".into()));
    let listed: BTreeSet<(String, String)> = ROUTES
        .iter()
        .map(|(m, p, _)| ((*m).to_owned(), (*p).to_owned()))
        .collect();
    assert_eq!(listed.len(), ROUTES.len(), "ROUTES has duplicates");
    let untested: Vec<_> = documented.difference(&listed).collect();
    assert!(
        untested.is_empty(),
        "routes in the OpenAPI document without tests in api::ROUTES: {untested:?}"
    );
    let stale: Vec<_> = listed.difference(&documented).collect();
    assert!(
        stale.is_empty(),
        "api::ROUTES lists routes the document does not have: {stale:?}"
    );
    assert_eq!(documented.len(), 100, "the API has 100 routes");

    let cases: BTreeSet<String> = [
        ("account", super::account::CASES),
        ("agents", super::agents::CASES),
        ("agent_secrets", super::agent_secrets::CASES),
        ("auth", super::auth::CASES),
        ("deletes", super::deletes::CASES),
        ("ensembles", super::ensembles::CASES),
        ("forges", super::forges::CASES),
        ("plans", super::plans::CASES),
        ("projects", super::projects::CASES),
        ("lists", super::lists::CASES),
        ("issues", super::issues::CASES),
        ("issue_validation", super::issue_validation::CASES),
        ("members", super::members::CASES),
        ("openapi", super::openapi::CASES),
        ("tokens", super::tokens::CASES),
        ("runners", super::runners::CASES),
        ("runtimes", super::runtimes::CASES),
        ("search", super::search::CASES),
        ("skills", super::skills::CASES),
        ("runs", super::runs::CASES),
        ("thread", super::thread::CASES),
        ("workspace", super::workspace::CASES),
        ("usage", super::usage::CASES),
        ("proposals", super::proposals::CASES),
    ]
    .iter()
    .flat_map(|(module, cases)| cases.iter().map(move |c| format!("{module}::{c}")))
    .collect();
    for (method, path, tests) in ROUTES {
        assert!(!tests.is_empty(), "{method} {path} names no test");
        for test in *tests {
            assert!(
                cases.contains(*test),
                "{method} {path} names {test}, which is not an api case"
            );
        }
    }
}

/// Query, path and header parameters that carry numbers: always `integer` in the document.
const INTEGER_PARAMS: &[&str] = &[
    "limit",
    "before",
    "seq",
    "attempt",
    "index",
    "offset",
    "Last-Event-ID",
];
/// Parameters and body fields that name one of a fixed set of values: an `enum` (or an array of one).
const ENUM_NAMES: &[&str] = &["status", "kind", "role", "priority", "permission_mode"];
/// Path parameters that are UUIDs.
const UUID_PARAMS: &[&str] = &["id", "user_id"];

/// Every operation of the document: (method, path, operation).
fn operations(doc: &Value) -> Vec<(String, String, &Value)> {
    let mut out = Vec::new();
    for (path, item) in doc["paths"].as_object().unwrap() {
        for (method, op) in item.as_object().unwrap() {
            if ["get", "post", "put", "patch", "delete"].contains(&method.as_str()) {
                out.push((method.clone(), path.clone(), op));
            }
        }
    }
    out
}

/// A schema with `$ref`s to components followed.
fn resolve<'a>(doc: &'a Value, schema: &'a Value) -> &'a Value {
    match schema["$ref"].as_str() {
        Some(r) => resolve(
            doc,
            &doc["components"]["schemas"][r.trim_start_matches("#/components/schemas/")],
        ),
        None => schema,
    }
}

/// The schema's `type`, whether written as one name or as a list with "null".
fn types(schema: &Value) -> Vec<&str> {
    match &schema["type"] {
        Value::String(t) => vec![t.as_str()],
        Value::Array(ts) => ts.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    }
}

/// Whether a schema is an enum, an array of an enum, or a nullable wrapper of one.
fn is_enum(doc: &Value, schema: &Value) -> bool {
    let schema = resolve(doc, schema);
    if schema["enum"].is_array() {
        return true;
    }
    if types(schema).contains(&"array") {
        return is_enum(doc, &schema["items"]);
    }
    ["oneOf", "anyOf", "allOf"].iter().any(|k| {
        schema[*k].as_array().is_some_and(|parts| {
            parts
                .iter()
                .filter(|p| types(resolve(doc, p)) != ["null"])
                .all(|p| is_enum(doc, p))
        })
    })
}

/// `limit`, `after` and friends are integers with a lower bound; `status`, `kind`, `role` are enums; ids
/// are UUIDs; issue keys, agent names and skill slugs have their pattern. So a generated request that
/// fits the document is one the server takes.
async fn parameters_are_typed(t: &Env) {
    let doc = document(t).await;
    let mut seen = BTreeSet::new();
    for (method, path, op) in operations(&doc) {
        for param in op["parameters"].as_array().into_iter().flatten() {
            let name = param["name"].as_str().unwrap();
            let schema = resolve(&doc, &param["schema"]);
            let at = format!("{method} {path} parameter {name}: {schema}");
            if INTEGER_PARAMS.contains(&name) {
                assert!(types(schema).contains(&"integer"), "{at} is not an integer");
                assert!(schema["minimum"].is_number(), "{at} has no minimum");
                seen.insert(name);
            }
            if name == "after" {
                // A run's events page after a seq; issues after an opaque board cursor; comments after
                // a comment id: each says its shape.
                assert!(
                    (types(schema).contains(&"integer") && schema["minimum"].is_number())
                        || schema["format"] == "uuid"
                        || schema["pattern"].is_string(),
                    "{at} has no shape"
                );
                seen.insert(name);
            }
            if ENUM_NAMES.contains(&name) {
                assert!(is_enum(&doc, schema), "{at} is not an enum");
                if types(schema).contains(&"array") {
                    assert_eq!(param["style"], "form", "{at}: comma-separated");
                    assert_eq!(param["explode"], false, "{at}: comma-separated");
                }
                seen.insert(name);
            }
            if param["in"] == "path" {
                assert_eq!(param["required"], true, "{at}");
                if UUID_PARAMS.contains(&name) {
                    assert_eq!(schema["format"], "uuid", "{at} is not a UUID");
                } else {
                    // A pattern, or a closed list of values (stricter still).
                    assert!(
                        schema["pattern"].is_string() || is_enum(&doc, schema),
                        "{at} has no pattern"
                    );
                }
            }
        }
    }
    for name in ["limit", "after", "Last-Event-ID", "status"] {
        assert!(seen.contains(name), "no parameter {name} was checked");
    }
}

/// Every authenticated operation documents 401 and 403; one with parameters or a body documents 400;
/// one with a body documents 413, 415 and 422; every one documents 500; and every error's body is the
/// shared `ErrorBody`.
async fn every_operation_documents_its_errors(t: &Env) {
    let doc = document(t).await;
    for (method, path, op) in operations(&doc) {
        let responses = op["responses"].as_object().unwrap();
        let has = |status: &str| responses.contains_key(status);
        let at = format!("{method} {path}");
        let public = op["security"] == serde_json::json!([{}]);
        if !public {
            for status in ["401", "403"] {
                assert!(has(status), "{at} does not document {status}");
            }
        }
        let has_params = op["parameters"].as_array().is_some_and(|p| !p.is_empty());
        let has_body = op["requestBody"].is_object();
        if has_params || has_body {
            assert!(has("400"), "{at} takes input but does not document 400");
        }
        if has_body {
            for status in ["413", "415", "422"] {
                assert!(
                    has(status),
                    "{at} takes a body but does not document {status}"
                );
            }
        }
        assert!(has("500"), "{at} does not document 500");
        for (status, response) in responses {
            if status.starts_with('4') || status.starts_with('5') {
                assert_eq!(
                    response["content"]["application/json"]["schema"]["$ref"],
                    "#/components/schemas/ErrorBody",
                    "{at} {status} is not an ErrorBody"
                );
            }
        }
    }
    let redetect = &doc["paths"]["/api/v1/runtimes/detect"]["post"]["responses"];
    assert!(redetect["429"].is_object(), "re-detect documents 429");
    for (method, path) in [
        ("post", "/api/v1/agents"),
        ("patch", "/api/v1/agents/{name}"),
    ] {
        assert!(
            doc["paths"][path][method]["responses"]["403"]["description"]
                .as_str()
                .unwrap()
                .contains("owners and admins"),
            "{method} {path} says why a member gets 403"
        );
    }
}

/// Request bodies: enum fields are enums, numbers the server reads as whole numbers are integers with
/// their range, required strings cannot be empty, create bodies require what create needs, and the
/// archive upload is binary.
async fn bodies_are_typed(t: &Env) {
    let doc = document(t).await;
    for (method, path, op) in operations(&doc) {
        let Some(content) = op["requestBody"]["content"].as_object() else {
            continue;
        };
        for (media, body) in content {
            let schema = resolve(&doc, &body["schema"]);
            let at = format!("{method} {path} {media}");
            if media != "application/json" {
                assert_eq!(schema["type"], "string", "{at}");
                assert_eq!(schema["format"], "binary", "{at}");
                continue;
            }
            let required: Vec<&str> = schema["required"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .collect();
            for (name, field) in schema["properties"].as_object().unwrap() {
                let field = resolve(&doc, field);
                if ENUM_NAMES.contains(&name.as_str()) {
                    assert!(
                        is_enum(&doc, field),
                        "{at} field {name} is not an enum: {field}"
                    );
                }
                if required.contains(&name.as_str())
                    && types(field) == ["string"]
                    && !field["enum"].is_array()
                {
                    assert!(
                        field["minLength"].as_u64() >= Some(1) || field["pattern"].is_string(),
                        "{at} requires {name} but lets it be empty: {field}"
                    );
                }
            }
        }
    }
    let schemas = &doc["components"]["schemas"];
    for (field, min, max) in [
        ("max_retries", 0, Some(10)),
        ("max_concurrent_runs", 1, Some(32)),
        ("stall_timeout_secs", 10, Some(86400)),
        ("budget_tokens", 0, None),
    ] {
        let f = &schemas["AgentInput"]["properties"][field];
        assert!(types(f).contains(&"integer"), "AgentInput.{field}: {f}");
        assert_eq!(f["minimum"], min, "AgentInput.{field}: {f}");
        if let Some(max) = max {
            assert_eq!(f["maximum"], max, "AgentInput.{field}: {f}");
        }
    }
    for (path, schema, fields) in [
        ("/api/v1/issues", "NewIssue", &["title"][..]),
        ("/api/v1/agents", "NewAgent", &["name", "kind"][..]),
    ] {
        assert_eq!(
            doc["paths"][path]["post"]["requestBody"]["content"]["application/json"]["schema"]["$ref"],
            format!("#/components/schemas/{schema}"),
            "POST {path} documents its own create body"
        );
        assert_eq!(
            schemas[schema]["required"],
            serde_json::json!(fields),
            "{schema}"
        );
    }
    let import = &doc["paths"]["/api/v1/skills/import"]["post"]["requestBody"]["content"];
    assert!(import["application/zip"].is_object(), "{import}");
}

/// What the document promises, the server does: a whole number sent as `2.0` is taken, a fraction is
/// refused naming the field; malformed JSON is 400, a wrong content type 415, an unreadable query 400,
/// each with the shared error body; the archive upload refuses anything but a zip content type.
async fn the_document_s_promises_hold(t: &Env) {
    let api = &t.owner.api;
    let agent = api
        .post(
            "/api/v1/agents",
            serde_json::json!({"name": "floaty", "kind": "claude", "max_retries": 2.0,
                               "max_concurrent_runs": 3, "budget_tokens": 1000.0}),
        )
        .await
        .expect(201);
    assert_eq!(agent["max_retries"], 2, "{agent}");
    assert_eq!(agent["max_concurrent_runs"], 3, "{agent}");
    let reply = api
        .patch(
            "/api/v1/agents/floaty",
            serde_json::json!({"max_retries": 2.5}),
        )
        .await;
    reply.rejected(422, "max_retries: expected a whole number, got 2.5");
    let reply = api
        .patch(
            "/api/v1/agents/floaty",
            serde_json::json!({"max_retries": 1e30}),
        )
        .await;
    reply.rejected(422, "max_retries: expected a whole number");
    let reply = api
        .patch(
            "/api/v1/agents/floaty",
            serde_json::json!({"max_retries": 4294967296_u64}),
        )
        .await;
    reply.rejected(422, "max_retries: 4294967296 is out of range");

    let reply = api
        .send(
            reqwest::Method::POST,
            "/api/v1/issues",
            Some(("application/json", b"{\"title\": ".to_vec())),
        )
        .await;
    reply.error(400, "body");
    let reply = api
        .send(
            reqwest::Method::POST,
            "/api/v1/issues",
            Some(("text/plain", br#"{"title": "x"}"#.to_vec())),
        )
        .await;
    reply.error(415, "body");
    let reply = api.get("/api/v1/issues?status=todo&status=done").await;
    reply.error(400, "query");
    let reply = api.get("/api/v1/issues?status=todo,done").await;
    assert_eq!(
        reply.expect(200),
        serde_json::json!({"issues": [], "next_after": null})
    );

    let reply = api
        .send(
            reqwest::Method::POST,
            "/api/v1/skills/import",
            Some(("text/plain", b"PK".to_vec())),
        )
        .await;
    reply.error_contains(415, "body", "must be sent as application/zip");
    let reply = api
        .send(
            reqwest::Method::POST,
            "/api/v1/skills/import",
            Some(("application/zip", b"not a zip".to_vec())),
        )
        .await;
    assert_eq!(reply.status.as_u16(), 422, "{}", reply.body);
}
