//! Who may call the API: tokens, sessions with CSRF, roles, workspaces; and malformed requests.

use muster::domain::Role;
use reqwest::Method;
use serde_json::json;

use super::{Auth, Env, ROUTES, api_cases};

api_cases!(
    me_for_each_role,
    every_route_needs_credentials,
    revoked_and_removed_callers_are_refused,
    session_writes_need_the_csrf_token,
    other_workspace_issues_are_not_found,
    malformed_bodies_get_json_errors,
    rejections_name_the_body_field,
    oversized_bodies_get_413,
);

/// `GET /api/v1/me` names the caller, their role and their workspace.
async fn me_for_each_role(t: &Env) {
    for (person, role) in [
        (&t.owner, "owner"),
        (&t.admin, "admin"),
        (&t.member, "member"),
    ] {
        let me = person.api.get("/api/v1/me").await.expect(200);
        assert_eq!(me["user_id"], person.id.to_string());
        assert_eq!(me["email"], person.email);
        assert_eq!(me["name"], person.name);
        assert_eq!(me["role"], role);
        assert_eq!(me["workspace"], "alpha");
        assert_eq!(me["workspace_name"], "Alpha Team");
        assert_eq!(me["issue_prefix"], "ALP");
    }
}

/// A concrete URL for a route template.
fn concrete(path: &str) -> String {
    path.replace("{key}", "ALP-1")
        .replace("{name}", "coder")
        .replace("{user_id}", &uuid::Uuid::now_v7().to_string())
        .replace("{id}", &uuid::Uuid::now_v7().to_string())
}

/// Every route but the OpenAPI document answers 401 with a JSON error to no credentials, a garbage
/// token, a non-bearer `Authorization` header and an unknown session cookie — before looking at the body.
async fn every_route_needs_credentials(t: &Env) {
    let callers = [
        Auth::None,
        Auth::Bearer("mst_0000000000000000000000000000000000000000000000000000000000000000".into()),
        Auth::Bearer("garbage".into()),
        Auth::Header(format!("Basic {}", t.owner.token)),
        Auth::Header(t.owner.token.clone()),
        Auth::Session {
            cookie: "ses_forged".into(),
            csrf: Some("0".repeat(32)),
        },
    ];
    let mut checked = 0;
    for (method, path, _) in ROUTES {
        if *path == "/api/v1/openapi.json" {
            continue;
        }
        let method: Method = method.to_uppercase().parse().unwrap();
        for auth in &callers {
            let reply = t
                .client(auth.clone())
                .json(method.clone(), &concrete(path), &json!({"title": "x"}))
                .await;
            let messages = reply.error(401, "auth");
            assert_eq!(
                messages,
                ["authentication required"],
                "{method} {path} as {auth:?}"
            );
            checked += 1;
        }
    }
    assert_eq!(checked, (ROUTES.len() - 1) * callers.len());
    assert!(t.issue_titles().await.is_empty(), "nothing was created");
}

/// A revoked token is 401; the token of someone removed from the workspace is 403.
async fn revoked_and_removed_callers_are_refused(t: &Env) {
    let created = t
        .member
        .api
        .post("/api/v1/tokens", json!({"name": "laptop"}))
        .await
        .expect(201);
    let laptop = t.bearer(created["token"].as_str().unwrap());
    laptop.get("/api/v1/me").await.expect(200);
    t.member
        .api
        .delete(&format!(
            "/api/v1/tokens/{}",
            created["id"].as_str().unwrap()
        ))
        .await
        .expect(204);
    laptop.get("/api/v1/me").await.error(401, "auth");
    laptop
        .post("/api/v1/issues", json!({"title": "after revoke"}))
        .await
        .error(401, "auth");
    // The member's other token still works.
    t.member.api.get("/api/v1/me").await.expect(200);

    let leaver = t.add_person("leaver@alpha.test", Role::Member).await;
    leaver.api.get("/api/v1/me").await.expect(200);
    t.admin
        .api
        .delete(&format!("/api/v1/members/{}", leaver.id))
        .await
        .expect(204);
    leaver.api.get("/api/v1/me").await.error(403, "auth");
    leaver
        .api
        .post("/api/v1/issues", json!({"title": "after removal"}))
        .await
        .error(403, "auth");
    assert!(t.issue_titles().await.is_empty());
}

/// A browser session can read the API, but writes need `x-csrf-token`: the one in the board page's
/// meta tag, which is the first 32 hex chars of sha256("muster-csrf:" + cookie).
async fn session_writes_need_the_csrf_token(t: &Env) {
    assert_eq!(t.login("member@alpha.test", "wrong password").await, None);
    let cookie = t.login("member@alpha.test", super::PASSWORD).await.unwrap();
    let csrf = muster::auth::csrf_token(&cookie);
    assert_eq!(csrf.len(), 32);

    let page = t
        .client(Auth::Session {
            cookie: cookie.clone(),
            csrf: None,
        })
        .send(Method::GET, "/w/alpha", None)
        .await;
    assert_eq!(page.status, 200);
    let html = page.body.as_str().unwrap();
    let meta = html
        .split(r#"<meta name="csrf-token" content=""#)
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .unwrap();
    assert_eq!(meta, csrf, "the page's token is the derived one");

    let no_csrf = t.client(Auth::Session {
        cookie: cookie.clone(),
        csrf: None,
    });
    let me = no_csrf.get("/api/v1/me").await.expect(200);
    assert_eq!(
        (me["email"].as_str(), me["role"].as_str()),
        (Some("member@alpha.test"), Some("member"))
    );
    no_csrf.get("/api/v1/issues").await.expect(200);

    let refused = no_csrf
        .post("/api/v1/issues", json!({"title": "forged"}))
        .await;
    refused.error_contains(403, "csrf", "CSRF");
    let wrong = t.client(Auth::Session {
        cookie: cookie.clone(),
        csrf: Some(muster::auth::csrf_token("another session")),
    });
    wrong
        .post("/api/v1/issues", json!({"title": "forged"}))
        .await
        .error_contains(403, "csrf", "CSRF");
    wrong
        .post("/api/v1/tokens", json!({"name": "forged"}))
        .await
        .error_contains(403, "csrf", "CSRF");
    assert!(
        t.issue_titles().await.is_empty(),
        "refused writes left nothing"
    );

    let good = t.client(Auth::Session {
        cookie,
        csrf: Some(csrf),
    });
    let issue = good
        .post("/api/v1/issues", json!({"title": "from the browser"}))
        .await
        .expect(201);
    assert_eq!(issue["key"], "ALP-1");
    assert_eq!(t.issue_titles().await, ["from the browser"]);
    good.get("/api/v1/tokens").await.expect(200);
}

/// An issue key of another workspace is 404 on every issue route, and nothing there changes.
async fn other_workspace_issues_are_not_found(t: &Env) {
    let (_, beta_owner) = t.other_workspace().await;
    t.owner
        .api
        .post("/api/v1/issues", json!({"title": "alpha's own"}))
        .await
        .expect(201);
    for key in ["BET-1", "bet-1", "ALP-2", "ALP-0", "not-a-key", "ALP"] {
        let api = &t.owner.api;
        let base = format!("/api/v1/issues/{key}");
        api.get(&base).await.error(404, "resource");
        api.patch(&base, json!({"title": "hijacked"}))
            .await
            .error(404, "resource");
        api.post(&format!("{base}/move"), json!({"status": "done"}))
            .await
            .error(404, "resource");
        api.get(&format!("{base}/comments"))
            .await
            .error(404, "resource");
        api.post(&format!("{base}/comments"), json!({"body": "hi"}))
            .await
            .error(404, "resource");
    }
    // The other workspace's owner still sees their issue untouched, and not alpha's.
    let theirs = beta_owner.api.get("/api/v1/issues/BET-1").await.expect(200);
    assert_eq!(
        (theirs["title"].as_str(), theirs["status"].as_str()),
        (Some("Beta's secret plan"), Some("backlog"))
    );
    assert!(theirs["comments"].as_array().unwrap().is_empty());
    let their_list = beta_owner.api.get("/api/v1/issues").await.expect(200);
    assert_eq!(super::titles(&their_list["issues"]), ["Beta's secret plan"]);
    beta_owner
        .api
        .get("/api/v1/issues/ALP-1")
        .await
        .error(404, "resource");
}

/// Bodies that are not the JSON a route expects: 400 (syntax), 415 (content type), 422 (shape), each
/// with a JSON error saying what is wrong; nothing is written.
async fn malformed_bodies_get_json_errors(t: &Env) {
    let api = &t.owner.api;
    for (path, content_type, body, status, needle) in MALFORMED {
        let body = Some((*content_type, body.as_bytes().to_vec()));
        api.send(Method::POST, path, body)
            .await
            .rejected(*status, needle);
    }
    assert!(t.issue_titles().await.is_empty());
    let agents = api.get("/api/v1/agents").await.expect(200);
    assert_eq!(agents, json!([]));
}

/// (path, content type, body, status, part of the message) of requests whose body cannot be read.
const MALFORMED: &[(&str, &str, &str, u16, &str)] = &[
    (
        "/api/v1/issues",
        "application/json",
        r#"{"title": "#,
        400,
        "Failed to parse the request body as JSON",
    ),
    (
        "/api/v1/issues",
        "application/json",
        "not json",
        400,
        "Failed to parse the request body as JSON",
    ),
    (
        "/api/v1/issues",
        "text/plain",
        r#"{"title": "x"}"#,
        415,
        "Content-Type",
    ),
    (
        "/api/v1/issues",
        "application/json",
        r#"{"title": 42}"#,
        422,
        "title: invalid type: integer `42`",
    ),
    (
        "/api/v1/issues",
        "application/json",
        r#"["title"]"#,
        422,
        "the body must be a JSON object, not an array",
    ),
    (
        "/api/v1/agents",
        "application/json",
        "{",
        400,
        "EOF while parsing",
    ),
    (
        "/api/v1/members",
        "application/json",
        r#"{"name": "no email"}"#,
        422,
        "missing field `email`",
    ),
    (
        "/api/v1/tokens",
        "application/json",
        r#"{"name": ["x"]}"#,
        422,
        "name: invalid type: sequence",
    ),
];

/// A body the server cannot read is reported on the field the server names for it, `body`, with the
/// bare message — as every other error names its field.
async fn rejections_name_the_body_field(t: &Env) {
    for (path, content_type, body, status, needle) in MALFORMED {
        let reply = t
            .owner
            .api
            .send(
                Method::POST,
                path,
                Some((*content_type, body.as_bytes().to_vec())),
            )
            .await;
        let messages = reply.error(*status, "body");
        assert!(
            messages[0].contains(needle) && !messages[0].starts_with("body "),
            "{messages:?}"
        );
        assert!(
            reply.body["errors"].get("auth").is_none(),
            "not an auth error: {}",
            reply.body
        );
    }
}

/// A 10 MB title is refused by the body limit with 413 and a JSON error; so are 10 MB edits and
/// comments. Nothing is written.
async fn oversized_bodies_get_413(t: &Env) {
    let api = &t.owner.api;
    let huge = "a".repeat(10 * 1024 * 1024);
    api.send_oversized(Method::POST, "/api/v1/issues", &json!({"title": huge}))
        .await
        .rejected(413, "length limit exceeded");
    assert!(t.issue_titles().await.is_empty());
    api.post("/api/v1/issues", json!({"title": "small"}))
        .await
        .expect(201);
    api.send_oversized(
        Method::PATCH,
        "/api/v1/issues/ALP-1",
        &json!({"title": huge}),
    )
    .await
    .rejected(413, "length limit exceeded");
    let comment = json!({"body": huge});
    api.send_oversized(Method::POST, "/api/v1/issues/ALP-1/comments", &comment)
        .await
        .rejected(413, "length limit exceeded");
    // Just over the 2 MiB limit is refused as well.
    let over = "b".repeat(2 * 1024 * 1024);
    let agent = json!({"name": "a", "kind": "claude", "instructions": over});
    api.send_oversized(Method::POST, "/api/v1/agents", &agent)
        .await
        .rejected(413, "length limit exceeded");
    let issue = api.get("/api/v1/issues/ALP-1").await.expect(200);
    assert_eq!(issue["title"], "small");
    assert_eq!(issue["comments"], json!([]));
    assert_eq!(t.issue_titles().await, ["small"]);
    assert_eq!(api.get("/api/v1/agents").await.expect(200), json!([]));
}
