//! Security attacks: limits (see mod.rs). What went through: `GET /api/v1/issues` and an issue's comments
//! answered with every row at once, however many; a run could write events without end.
//!
//! Now the issue list and an issue's comments come in pages of at most 200 (`limit`, default 50) with a
//! cursor (`after` = the previous page's `next_after`): 250 rows are never one response, following the
//! cursor reads each exactly once, and a bad `limit` or `after` is a precise 400. A run that prints
//! forever is stopped at the per-run event cap: it fails with reason `event_cap`, stores exactly the cap
//! (the last event says why) and its whole process group is gone; a run under the cap is untouched.

use std::path::Path;
use std::time::Duration;

use muster::domain::*;
use muster_tests::seed;
use muster_tests::{AppBuilder, Backend, TestApp, TestDb, spawn_app};
use reqwest::StatusCode;
use serde_json::{Value, json};
use tokio::time::Instant;

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
    seed::owner_of(
        store,
        seed::person("owner@limits.test", "Owner"),
        ("Limits", "limits", "LIM"),
    )
    .await
}

fn strings(items: &[Value], field: &str) -> Vec<String> {
    items
        .iter()
        .map(|i| i[field].as_str().unwrap().to_owned())
        .collect()
}

both_backends!(
    the_issue_list_comes_in_pages,
    comments_come_in_pages,
    a_runaway_run_is_stopped_at_the_event_cap,
);

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

/// The longest a run test waits for the run engine.
const RUN_DEADLINE: Duration = Duration::from_secs(60);
/// The cap the run test sets.
const CAP: i64 = 40;

/// A custom agent printing lines as fast as it can, with a helper process in its group: the run is
/// stopped at the cap and fails saying so (run, run page, inbox, issue comment), its log holds exactly
/// the cap, and nothing of its process group lives on. A short run under the same cap succeeds.
async fn a_runaway_run_is_stopped_at_the_event_cap(backend: Backend) {
    let Some(db) = TestDb::new(backend).await else {
        return;
    };
    let store = db.store().await;
    let (owner, ws) = seed(&store).await;
    store.close().await;
    let TestApp {
        addr,
        store,
        state,
        shutdown,
        handle,
        ..
    } = AppBuilder::new(db.config())
        .embedded_runner()
        .configure(|config| config.max_events_per_run = CAP)
        .timing(muster_tests::engine::quick_stops())
        .spawn()
        .await;
    let scripts = tempfile::tempdir().unwrap();

    let runaway = agent(
        &state,
        ws.id,
        "runaway",
        &script(
            scripts.path(),
            "runaway.sh",
            "cat >/dev/null\nsleep 600 &\necho \"helper $!\"\ni=0\nwhile :; do i=$((i+1)); echo \"line $i\"; done",
        ),
    )
    .await;
    let issue = todo(&state, ws.id, "Print forever").await;
    let run = state
        .queue(&issue, runaway.id)
        .await
        .unwrap()
        .expect("a run is queued");
    let run = finished(&state, run.id).await;
    let why = format!("stopped: the run reached the cap of {CAP} events");
    assert_eq!(
        (run.status, run.failure_reason, run.summary.as_deref()),
        (
            RunStatus::Failed,
            Some(FailureReason::EventCap),
            Some(why.as_str())
        )
    );
    let events = store.run_events_since(run.id, 0, 10 * CAP).await.unwrap();
    let seqs: Vec<i64> = events.iter().map(|e| e.seq).collect();
    assert_eq!(
        seqs,
        (1..=CAP).collect::<Vec<_>>(),
        "exactly the cap is stored"
    );
    let last = events.last().unwrap();
    assert_eq!(
        (last.kind.as_str(), &last.payload),
        ("error", &json!({ "message": why }))
    );
    // Nothing of the process group is left: neither the script nor its helper.
    let pgid = u32::try_from(run.pid.expect("the run recorded its pid")).unwrap();
    assert_eq!(
        muster_agents::process::group_members(pgid),
        Vec::<u32>::new()
    );
    // The pid it printed is its PID namespace's own: look for the helper by the run id it carries.
    events
        .iter()
        .find_map(|e| helper_pid(&e.payload))
        .expect("the script printed its helper's pid");
    let left = run_processes(&run.id.to_string());
    assert!(
        left.is_empty(),
        "the helper was stopped with its group: {left:?}"
    );

    // The person sees why: the inbox item and the issue's comment, and the run page.
    let message = format!(
        "runaway failed on {}. {why}: the agent was looping or very verbose; look at its last events.",
        issue.key
    );
    poll("the inbox item", || async {
        let inbox = store.list_inbox(ws.id, owner.id).await.unwrap();
        inbox
            .iter()
            .any(|i| {
                i.kind == InboxKind::RunFailed && i.message == message && i.run_id == Some(run.id)
            })
            .then_some(())
    })
    .await;
    let comments = store.list_comments(issue.id).await.unwrap();
    assert!(comments.iter().any(|c| c.body == message), "{comments:?}");
    let page = run_page(addr, &run).await;
    assert!(page.contains(&why), "{page}");

    // The honest agent under the same cap: untouched.
    let short = agent(
        &state,
        ws.id,
        "short",
        &script(
            scripts.path(),
            "short.sh",
            "cat >/dev/null\necho one\necho two\necho three",
        ),
    )
    .await;
    let issue = todo(&state, ws.id, "Say three things").await;
    let run = state
        .queue(&issue, short.id)
        .await
        .unwrap()
        .expect("a run is queued");
    let run = finished(&state, run.id).await;
    assert_eq!(
        (run.status, run.failure_reason),
        (RunStatus::Succeeded, None)
    );
    let events = store.run_events_since(run.id, 0, 10 * CAP).await.unwrap();
    assert!(events.len() < usize::try_from(CAP).unwrap());
    assert!(events.iter().all(|e| e.kind != "error"), "{events:?}");

    shutdown.cancel();
    handle.await.unwrap().unwrap();
}

/// An executable shell script.
fn script(dir: &Path, name: &str, body: &str) -> String {
    use std::os::unix::fs::PermissionsExt as _;
    let path = dir.join(name);
    std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path.display().to_string()
}

/// A `custom` agent running `command`, never retried.
async fn agent(
    state: &muster::state::AppState,
    ws: WorkspaceId,
    name: &str,
    command: &str,
) -> Agent {
    let mut new = NewAgent::new(AgentName::parse(name).unwrap(), RuntimeKind::Custom);
    new.command = Some(command.to_owned());
    new.max_retries = 0;
    state.store.create_agent(ws, &new).await.unwrap()
}

async fn todo(state: &muster::state::AppState, ws: WorkspaceId, title: &str) -> Issue {
    let mut new = NewIssue::new(IssueTitle::parse(title).unwrap());
    new.status = IssueStatus::Todo;
    state.store.create_issue(ws, &new).await.unwrap()
}

/// Polls `check` until it yields a value, failing after [`RUN_DEADLINE`].
async fn poll<T, F: std::future::Future<Output = Option<T>>>(
    what: &str,
    mut check: impl FnMut() -> F,
) -> T {
    let deadline = Instant::now() + RUN_DEADLINE;
    loop {
        if let Some(found) = check().await {
            return found;
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The run once it is final.
async fn finished(state: &muster::state::AppState, run: RunId) -> Run {
    poll("the run to finish", || async {
        let found = state.store.get_run(run).await.unwrap();
        found.status.is_terminal().then_some(found)
    })
    .await
}

/// The pid in a `helper <pid>` line, wherever the payload holds it.
fn helper_pid(payload: &Value) -> Option<u32> {
    match payload {
        Value::String(s) => s.trim().strip_prefix("helper ")?.trim().parse().ok(),
        Value::Array(items) => items.iter().find_map(helper_pid),
        Value::Object(map) => map.values().find_map(helper_pid),
        _ => None,
    }
}

/// The live processes whose environment holds `MUSTER_RUN_ID=<run>` (every process of a run's agent).
fn run_processes(run: &str) -> Vec<u32> {
    let wanted = format!("MUSTER_RUN_ID={run}");
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            let state = stat.rsplit(')').next().unwrap_or_default().trim_start();
            !stat.is_empty() && !state.starts_with('Z') && !state.starts_with('X')
        })
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/environ"))
                .is_ok_and(|env| env.split(|b| *b == 0).any(|v| v == wanted.as_bytes()))
        })
        .collect()
}

/// The run page's HTML, signed in as the owner through the login form.
async fn run_page(addr: std::net::SocketAddr, run: &Run) -> String {
    let client = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let login = client
        .post(format!("http://{addr}/login"))
        .form(&[
            ("email", "owner@limits.test"),
            ("password", "correct-horse"),
        ])
        .send()
        .await
        .unwrap();
    assert_eq!(login.status(), StatusCode::SEE_OTHER);
    let cookie = seed::session_cookie(&login);
    let page = client
        .get(format!("http://{addr}/w/limits/runs/{}", run.id))
        .header("cookie", cookie)
        .send()
        .await
        .unwrap();
    assert_eq!(page.status(), 200);
    page.text().await.unwrap()
}
