//! Issue 11, "Login and sessions": a token made for one workspace drove the pages of the user's other
//! workspaces (the page check ignored the token's workspace, and bearer callers skip CSRF). Now every
//! authenticated extractor compares the token's workspace with the one the request names: another
//! workspace's pages, forms, sockets and API answer 403 with the reason; the token's own still work.

use muster_tests::Backend;
use reqwest::StatusCode;

use super::sessions::Team;

macro_rules! both_backends {
    ($($case:ident),+ $(,)?) => {
        mod sqlite {$(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $case() {
                super::$case(muster_tests::Backend::Sqlite).await;
            }
        )+}
        mod postgres {$(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $case() {
                super::$case(muster_tests::Backend::Postgres).await;
            }
        )+}
    };
}

both_backends!(a_token_works_only_in_its_own_workspace);

const REFUSAL: &str = "this token was made for another workspace and cannot be used in other";

async fn a_token_works_only_in_its_own_workspace(backend: Backend) {
    let Some(t) = Team::start(backend, |_| {}).await else {
        return;
    };
    // Bob is a member of both Acme and Other; this token was made in Acme.
    let token = t.token(&t.acme, &t.bob).await;
    let http = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let get = |path: &str| http.get(t.app.url(path)).bearer_auth(&token).send();

    // Other's pages: refused, with the reason.
    for path in ["/w/other", "/w/other/members", "/w/other/agents"] {
        let resp = get(path).await.unwrap();
        assert_eq!(resp.status(), StatusCode::FORBIDDEN, "{path}");
        let page = resp.text().await.unwrap();
        assert!(page.contains(REFUSAL), "{path}: {page}");
    }
    // A form post (bearer callers need no CSRF token) writes nothing there.
    let post = http
        .post(t.app.url("/w/other/issues"))
        .bearer_auth(&token)
        .form(&[
            ("_csrf", ""),
            ("title", "Planted"),
            ("status", "todo"),
            ("priority", "high"),
        ])
        .send()
        .await
        .unwrap();
    assert_eq!(post.status(), StatusCode::FORBIDDEN);
    let planted = t
        .app
        .store
        .list_issues(t.other.id, &Default::default())
        .await
        .unwrap();
    assert!(planted.is_empty(), "nothing was written in Other");
    // Other's live board: refused before the upgrade.
    let bearer = format!("Bearer {token}");
    assert!(
        t.socket("/w/other/live", ("authorization", &bearer))
            .await
            .is_err()
    );
    // The API, asked to act in Other: refused, with the reason.
    let resp = http
        .get(t.app.url("/api/v1/issues"))
        .bearer_auth(&token)
        .header("x-muster-workspace", "other")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::FORBIDDEN);
    let body: serde_json::Value = resp.json().await.unwrap();
    assert_eq!(
        body["errors"]["token"][0],
        "this token belongs to workspace acme and cannot act in another one"
    );

    // In its own workspace the same token works: pages, forms, sockets, API.
    assert_eq!(get("/w/acme").await.unwrap().status(), StatusCode::OK);
    assert_eq!(get("/").await.unwrap().headers()["location"], "/w/acme");
    let post = http
        .post(t.app.url("/w/acme/issues"))
        .bearer_auth(&token)
        .form(&[
            ("_csrf", ""),
            ("title", "Honest"),
            ("status", "todo"),
            ("priority", "high"),
        ])
        .send()
        .await
        .unwrap();
    assert_eq!(post.status(), StatusCode::SEE_OTHER);
    assert!(
        t.socket("/w/acme/live", ("authorization", &bearer))
            .await
            .is_ok()
    );
    for wanted in [None, Some("acme")] {
        let mut req = http.get(t.app.url("/api/v1/me")).bearer_auth(&token);
        if let Some(slug) = wanted {
            req = req.header("x-muster-workspace", slug);
        }
        let me: serde_json::Value = req.send().await.unwrap().json().await.unwrap();
        assert_eq!(me["workspace"], "acme", "{me}");
    }
    // A browser session of the same person still moves between both workspaces.
    let cookie = t.sign_in("bob@acme.test").await;
    for path in ["/w/acme", "/w/other"] {
        let resp = http
            .get(t.app.url(path))
            .header("cookie", &cookie)
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), StatusCode::OK, "{path}");
    }
}
