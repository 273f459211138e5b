//! Security attacks: limits (see mod.rs). What went through: `GET /api/v1/issues` and an issue's comments
//! answered with every row at once, however many.
//!
//! Now the issue list and an issue's comments come in pages of at most 200 (`limit`, default 50) with a
//! cursor (`after` = the previous page's `next_after`): 250 rows are never one response, following the
//! cursor reads each exactly once, and a bad `limit` or `after` is a precise 400.

use muster::domain::*;
use muster_tests::{Backend, TestApp, TestDb, spawn_app};
use reqwest::StatusCode;
use serde_json::{Value, json};

/// How many rows the paging attacks create: more than the largest page.
const ROWS: usize = 250;

/// A server with workspace `LIM`, its owner and the owner's API token.
struct Team {
    app: TestApp,
    ws: Workspace,
    owner: User,
    token: String,
    _db: TestDb,
}

impl Team {
    async fn start(backend: Backend) -> Option<Team> {
        let db = TestDb::new(backend).await?;
        let app = spawn_app(db.config()).await;
        let (owner, ws) = seed(&app.store).await;
        let token = muster_tests::mint_token(app.store.as_ref(), ws.id, owner.id, "limits").await;
        Some(Team {
            app,
            ws,
            owner,
            token,
            _db: db,
        })
    }

    /// GET `path` with `query` and the owner's token: status and JSON body.
    async fn get(&self, path: &str, query: &[(&str, &str)]) -> (StatusCode, Value) {
        let mut url = reqwest::Url::parse(&self.app.url(path)).unwrap();
        if !query.is_empty() {
            url.query_pairs_mut().extend_pairs(query);
        }
        let resp = self
            .app
            .client
            .get(url)
            .bearer_auth(&self.token)
            .send()
            .await
            .unwrap();
        let status = resp.status();
        (status, resp.json().await.unwrap())
    }

    /// Follows `next_after` from the first page of `path` with pages of `limit`: the items read and the
    /// number of pages.
    async fn read_all(&self, path: &str, key: &str, limit: &str) -> (Vec<Value>, usize) {
        let (mut items, mut pages, mut after) = (Vec::new(), 0, None::<String>);
        loop {
            let mut query = vec![("limit", limit)];
            query.extend(after.as_deref().map(|a| ("after", a)));
            let (status, page) = self.get(path, &query).await;
            assert_eq!(status, 200, "{page}");
            let got = page[key].as_array().unwrap();
            assert!(
                got.len() <= limit.parse().unwrap(),
                "a page holds at most `limit`"
            );
            items.extend(got.iter().cloned());
            pages += 1;
            match page["next_after"].as_str() {
                Some(next) => after = Some(next.to_owned()),
                None => return (items, pages),
            }
        }
    }

    /// Asserts that `path?name=raw` is a 400 with exactly `message` for `name`.
    async fn refused(&self, path: &str, name: &str, raw: &str, message: &str) {
        let (status, body) = self.get(path, &[(name, raw)]).await;
        assert_eq!(status, 400, "{name}={raw:?} is refused: {body}");
        assert_eq!(
            body,
            json!({ "errors": { name: [message] } }),
            "{name}={raw:?}"
        );
    }
}

async fn seed(store: &std::sync::Arc<dyn muster::store::Store>) -> (User, Workspace) {
    store
        .create_owner_and_workspace(
            &NewUser {
                email: Email::parse("owner@limits.test").unwrap(),
                display_name: "Owner".into(),
                password_hash: muster::auth::hash_password("correct-horse").unwrap(),
            },
            &NewWorkspace::parse("Limits", "limits", "LIM").unwrap(),
        )
        .await
        .unwrap()
}

fn strings(items: &[Value], field: &str) -> Vec<String> {
    items
        .iter()
        .map(|i| i[field].as_str().unwrap().to_owned())
        .collect()
}

macro_rules! both_backends {
    ($($case:ident),+ $(,)?) => {
        mod sqlite {$(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $case() { super::$case(muster_tests::Backend::Sqlite).await }
        )+}
        mod postgres {$(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $case() { super::$case(muster_tests::Backend::Postgres).await }
        )+}
    };
}

both_backends!(the_issue_list_comes_in_pages, comments_come_in_pages,);

/// 250 issues: no response holds them all; the cursor reads each once, in board order.
async fn the_issue_list_comes_in_pages(backend: Backend) {
    let Some(t) = Team::start(backend).await else {
        return;
    };
    for n in 1..=ROWS {
        let title = IssueTitle::parse(&format!("Issue {n}")).unwrap();
        t.app
            .store
            .create_issue(t.ws.id, &NewIssue::new(title))
            .await
            .unwrap();
    }
    // The attack: everything at once.
    let (status, all) = t.get("/api/v1/issues", &[]).await;
    assert_eq!(status, 200);
    assert_eq!(
        all["issues"].as_array().unwrap().len(),
        50,
        "the default page"
    );
    assert!(all["next_after"].is_string(), "{}", all["next_after"]);
    let (_, largest) = t.get("/api/v1/issues", &[("limit", "200")]).await;
    assert_eq!(largest["issues"].as_array().unwrap().len(), 200);
    for raw in ["0", "-1", "201", "1000", "10001", "abc", "", "2.5"] {
        let message = format!("must be a whole number from 1 to 200, got {raw:?}");
        t.refused("/api/v1/issues", "limit", raw, &message).await;
    }
    let bad = "\"no-such-cursor\" is not a cursor of this list; pass the `next_after` of the previous page";
    t.refused("/api/v1/issues", "after", "no-such-cursor", bad)
        .await;

    // The honest reader: every issue exactly once, in the order of the unpaged list.
    let (issues, pages) = t.read_all("/api/v1/issues", "issues", "70").await;
    assert_eq!(pages, 4);
    let expected: Vec<String> = (1..=ROWS).map(|n| format!("LIM-{n}")).collect();
    assert_eq!(strings(&issues, "key"), expected);
    // Filters page too.
    let (_, done) = t
        .get("/api/v1/issues", &[("status", "done"), ("limit", "5")])
        .await;
    assert_eq!(done, json!({ "issues": [], "next_after": null }));
}

/// 250 comments on one issue: the comment list and the issue itself hold one page; the cursor reads
/// each comment once, oldest first; a cursor from another issue is refused.
async fn comments_come_in_pages(backend: Backend) {
    let Some(t) = Team::start(backend).await else {
        return;
    };
    let store = &t.app.store;
    let talk = store
        .create_issue(t.ws.id, &NewIssue::new(IssueTitle::parse("Talk").unwrap()))
        .await
        .unwrap();
    let other = store
        .create_issue(t.ws.id, &NewIssue::new(IssueTitle::parse("Other").unwrap()))
        .await
        .unwrap();
    let author = CommentAuthor::User(t.owner.id);
    for n in 1..=ROWS {
        let comment = NewComment::parse(author, &format!("Comment {n}")).unwrap();
        store.add_comment(talk.id, &comment).await.unwrap();
    }
    let foreign = store
        .add_comment(other.id, &NewComment::parse(author, "elsewhere").unwrap())
        .await
        .unwrap();
    let path = "/api/v1/issues/LIM-1/comments";

    let (status, first) = t.get(path, &[]).await;
    assert_eq!(status, 200);
    assert_eq!(first["comments"].as_array().unwrap().len(), 50);
    let (_, detail) = t.get("/api/v1/issues/LIM-1", &[]).await;
    assert_eq!(
        detail["comments"], first["comments"],
        "the issue holds the first page"
    );
    assert_eq!(detail["comments_next_after"], first["next_after"]);
    let (_, largest) = t.get(path, &[("limit", "200")]).await;
    assert_eq!(largest["comments"].as_array().unwrap().len(), 200);
    for raw in ["0", "-1", "1000", "abc"] {
        let message = format!("must be a whole number from 1 to 200, got {raw:?}");
        t.refused(path, "limit", raw, &message).await;
    }
    let not_an_id = "\"xyz\" is not a comment id (pass the `next_after` of the previous page)";
    t.refused(path, "after", "xyz", not_an_id).await;
    let foreign_id = foreign.id.to_string();
    let message = format!("{foreign_id} is not a comment on LIM-1");
    t.refused(path, "after", &foreign_id, &message).await;

    let (comments, pages) = t.read_all(path, "comments", "200").await;
    assert_eq!(pages, 2);
    let expected: Vec<String> = (1..=ROWS).map(|n| format!("Comment {n}")).collect();
    assert_eq!(strings(&comments, "body"), expected);
}
