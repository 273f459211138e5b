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
];

api_cases!(openapi_document_is_public, every_route_is_listed_and_tested);

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
    assert_eq!(documented.len(), 48, "the API has 48 routes");

    let cases: BTreeSet<String> = [
        ("agents", super::agents::CASES),
        ("agent_secrets", super::agent_secrets::CASES),
        ("auth", super::auth::CASES),
        ("issues", super::issues::CASES),
        ("issue_validation", super::issue_validation::CASES),
        ("members", super::members::CASES),
        ("openapi", super::openapi::CASES),
        ("tokens", super::tokens::CASES),
        ("runtimes", super::runtimes::CASES),
        ("skills", super::skills::CASES),
        ("runs", super::runs::CASES),
        ("workspace", super::workspace::CASES),
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
