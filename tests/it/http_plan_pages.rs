//! Planning on the pages over real HTTP on both backends: the issue page's Plan panel and its forms
//! (sub-issue, parent, fan-in, relations and their removal), the refusals shown beside the form that
//! was sent (a cycle named, an unknown key, the same relation twice), "Make sub-issue" on a comment,
//! and the board card's and run page's marks ("1/2", "blocked by ACM-2", "waiting on ACM-2").

use muster::domain::{Issue, IssueKey, IssueTitle, NewIssue, NewRun, RuntimeKind, WorkspaceId};
use muster_tests::seed::{self, PASSWORD};
use muster_tests::{Backend, Session, TestApp, TestDb, spawn_app};
use reqwest::StatusCode;

async fn issue(app: &TestApp, ws: WorkspaceId, title: &str) -> Issue {
    app.store
        .create_issue(ws, &NewIssue::new(IssueTitle::parse(title).unwrap()))
        .await
        .unwrap()
}

async fn by_key(app: &TestApp, ws: WorkspaceId, key: &str) -> Issue {
    app.store
        .get_issue(ws, &IssueKey::parse(key).unwrap())
        .await
        .unwrap()
}

/// Posts a plan form of `key`; the answer's status and page.
async fn plan_post(
    app: &TestApp,
    s: &Session,
    key: &str,
    tail: &str,
    form: &[(&str, &str)],
) -> (StatusCode, String, Option<String>) {
    let mut fields = vec![("_csrf", s.csrf.as_str())];
    fields.extend_from_slice(form);
    let res = s
        .post(app, &format!("/w/acme/issues/{key}/{tail}"), &fields)
        .await;
    let status = res.status();
    let location = res
        .headers()
        .get("location")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    (status, res.text().await.unwrap(), location)
}

/// The Plan panel of a page.
fn panel(page: &str) -> &str {
    let at = page.find(r#"id="issue-plan""#).expect("the Plan panel");
    &page[at..at + page[at..].find("</section>").unwrap()]
}

/// The message beside the field `id` (`plan-rel-issue`).
fn beside<'a>(page: &'a str, id: &str) -> &'a str {
    let at = page
        .find(&format!(r#"id="{id}-error""#))
        .unwrap_or_else(|| panic!("no error beside {id}: {}", panel(page)));
    page[at..].split("</div>").next().unwrap()
}

async fn the_plan_panel_builds_a_plan(backend: Backend) {
    let Some(db) = TestDb::new(backend).await else {
        return;
    };
    let app = spawn_app(db.config()).await;
    let (_, ws) = seed::acme(&app.store).await;
    let agent = seed::agent(&app.store, ws.id, "coder", RuntimeKind::Custom).await;
    let launch = issue(&app, ws.id, "Launch the beta").await;
    issue(&app, ws.id, "Schema").await;
    issue(&app, ws.id, "Public API").await;
    let owner = app.sign_in("ada@acme.test", PASSWORD, "acme").await;
    let page = owner.page(&app, "/w/acme/issues/ACM-1").await;
    let plan = panel(&page);
    assert!(plan.contains("Plan"), "{plan}");
    for action in ["parent", "children", "fan-in", "relations"] {
        assert!(
            plan.contains(&format!(r#"action="/w/acme/issues/ACM-1/plan/{action}""#)),
            "{action}: {plan}"
        );
    }

    // Two sub-issues from the panel; one is done: "1/2 done".
    for title in ["Write the docs", "Record the demo"] {
        let (status, _, to) =
            plan_post(&app, &owner, "ACM-1", "plan/children", &[("title", title)]).await;
        assert_eq!(status, StatusCode::SEE_OTHER);
        assert_eq!(to.as_deref(), Some("/w/acme/issues/ACM-1#issue-plan"));
    }
    let children = app.store.list_children(launch.id).await.unwrap();
    assert_eq!(children.len(), 2);
    let res = owner
        .post(
            &app,
            &format!("/w/acme/issues/{}", children[0].key),
            &[("_csrf", owner.csrf.as_str()), ("status", "done")],
        )
        .await;
    assert_eq!(res.status(), StatusCode::SEE_OTHER);
    let page = owner.page(&app, "/w/acme/issues/ACM-1").await;
    let plan = panel(&page);
    assert!(plan.contains("1/2 done"), "{plan}");
    assert!(plan.contains(r#"value="50""#), "the bar: {plan}");
    assert!(plan.contains(r#"href="/w/acme/issues/ACM-4""#), "{plan}");
    assert!(plan.contains("Record the demo"), "{plan}");
    assert!(
        page.contains(r#"ws-connect="/w/acme/issues/ACM-1/live""#),
        "a plan with sub-issues follows them live"
    );
    // An empty title is refused beside its field, the page again.
    let (status, page, _) =
        plan_post(&app, &owner, "ACM-1", "plan/children", &[("title", " ")]).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(
        beside(&page, "plan-child-title").contains("must not be"),
        "{}",
        panel(&page)
    );

    // Fan-in on and off.
    let (status, _, _) = plan_post(
        &app,
        &owner,
        "ACM-1",
        "plan/fan-in",
        &[("on", "false"), ("on", "true")],
    )
    .await;
    assert_eq!(status, StatusCode::SEE_OTHER);
    assert!(app.store.fan_in(launch.id).await.unwrap());
    let page = owner.page(&app, "/w/acme/issues/ACM-1").await;
    assert!(panel(&page).contains(r#"value="true" checked"#));
    plan_post(&app, &owner, "ACM-1", "plan/fan-in", &[("on", "false")]).await;
    assert!(!app.store.fan_in(launch.id).await.unwrap());

    // Blocked by ACM-2: the relation holds, the banner says what the agent waits on.
    let blocked = [
        ("kind", "blocked_by"),
        ("issue", "acm-2"),
        ("until", "done"),
    ];
    let (status, _, _) = plan_post(&app, &owner, "ACM-1", "plan/relations", &blocked).await;
    assert_eq!(status, StatusCode::SEE_OTHER);
    let page = owner.page(&app, "/w/acme/issues/ACM-1").await;
    let plan = panel(&page);
    assert!(plan.contains("<h4>Blocked by</h4>"), "{plan}");
    assert!(plan.contains(">holds</span>"), "{plan}");
    assert!(
        plan.contains("Waiting on ACM-2: its agent starts when it is done"),
        "{plan}"
    );
    // The same relation twice, a cycle, an unknown key: each refused beside the key, typed input kept.
    let (status, page, _) = plan_post(&app, &owner, "ACM-1", "plan/relations", &blocked).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(
        beside(&page, "plan-rel-issue").contains("ACM-1 already blocked by ACM-2"),
        "{}",
        panel(&page)
    );
    let cycle = [
        ("kind", "blocked_by"),
        ("issue", "ACM-1"),
        ("until", "merged"),
    ];
    let (status, page, _) = plan_post(&app, &owner, "ACM-2", "plan/relations", &cycle).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
    let message = beside(&page, "plan-rel-issue");
    assert!(message.contains("that would make a cycle"), "{message}");
    assert!(
        message.contains("ACM-1") && message.contains("ACM-2"),
        "{message}"
    );
    assert!(panel(&page).contains(r#"<option value="merged" selected"#));
    let (status, page, _) = plan_post(
        &app,
        &owner,
        "ACM-1",
        "plan/relations",
        &[
            ("kind", "relates_to"),
            ("issue", "ACM-99"),
            ("until", "done"),
        ],
    )
    .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(beside(&page, "plan-rel-issue").contains("in this workspace"));
    assert!(panel(&page).contains(r#"value="ACM-99""#), "kept");
    // Relates to, with the form's "until done" left out for it.
    let (status, _, _) = plan_post(
        &app,
        &owner,
        "ACM-1",
        "plan/relations",
        &[
            ("kind", "relates_to"),
            ("issue", "ACM-3"),
            ("until", "merged"),
        ],
    )
    .await;
    assert_eq!(status, StatusCode::SEE_OTHER);
    let page = owner.page(&app, "/w/acme/issues/ACM-3").await;
    assert!(panel(&page).contains("<h4>Relates to</h4>"));
    // Duplicate of, removed from the other side ("duplicated by").
    let dup = [
        ("kind", "duplicate_of"),
        ("issue", "ACM-2"),
        ("until", "done"),
    ];
    let (status, _, _) = plan_post(&app, &owner, "ACM-3", "plan/relations", &dup).await;
    assert_eq!(status, StatusCode::SEE_OTHER);
    let page = owner.page(&app, "/w/acme/issues/ACM-2").await;
    let remove = "/w/acme/issues/ACM-2/plan/relations/duplicated_by/ACM-3/remove";
    assert!(panel(&page).contains("<h4>Duplicated by</h4>"));
    assert!(panel(&page).contains(remove), "{}", panel(&page));
    let (status, _, to) = plan_post(
        &app,
        &owner,
        "ACM-2",
        "plan/relations/duplicated_by/ACM-3/remove",
        &[],
    )
    .await;
    assert_eq!(status, StatusCode::SEE_OTHER);
    assert_eq!(to.as_deref(), Some("/w/acme/issues/ACM-2#issue-plan"));
    let page = owner.page(&app, "/w/acme/issues/ACM-3").await;
    assert!(!panel(&page).contains("<h4>Duplicate of</h4>"));

    // Parent: set, a cycle refused beside the field, cleared.
    let (status, _, _) =
        plan_post(&app, &owner, "ACM-3", "plan/parent", &[("parent", "ACM-1")]).await;
    assert_eq!(status, StatusCode::SEE_OTHER);
    assert_eq!(by_key(&app, ws.id, "ACM-3").await.parent, Some(launch.id));
    let (status, page, _) =
        plan_post(&app, &owner, "ACM-1", "plan/parent", &[("parent", "ACM-3")]).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(beside(&page, "plan-parent-parent").contains("that would make a cycle"));
    let page = owner.page(&app, "/w/acme/issues/ACM-3").await;
    assert!(panel(&page).contains("Clear parent"));
    plan_post(&app, &owner, "ACM-3", "plan/parent", &[("parent", "")]).await;
    assert_eq!(by_key(&app, ws.id, "ACM-3").await.parent, None);

    // The board: "1/2" on the parent; "blocked by ACM-2" while no run is queued, then "waiting on
    // ACM-2" in place of the queued run's pill; the run page says the same.
    let board = owner.page(&app, "/w/acme").await;
    assert!(
        board.contains(r#"<span class="card-children" title="Sub-issues done: 1/2">"#),
        "the badge"
    );
    assert!(board.contains("blocked by ACM-2"), "the marker");
    let run = app
        .store
        .create_run(&NewRun::assignment(ws.id, launch.id, agent.id))
        .await
        .unwrap();
    let board = owner.page(&app, "/w/acme").await;
    assert!(board.contains("waiting on ACM-2"), "the pill");
    assert!(!board.contains("blocked by ACM-2"), "one or the other");
    let run_page = owner.page(&app, &format!("/w/acme/runs/{}", run.id)).await;
    assert!(run_page.contains("waiting on ACM-2"), "the run page");
    let page = owner.page(&app, "/w/acme/issues/ACM-1").await;
    assert!(
        page.contains("queued — waiting on ACM-2"),
        "the thread's run"
    );

    // Removed: nothing holds it any more.
    let (status, _, _) = plan_post(
        &app,
        &owner,
        "ACM-1",
        "plan/relations/blocked_by/ACM-2/remove",
        &[],
    )
    .await;
    assert_eq!(status, StatusCode::SEE_OTHER);
    let page = owner.page(&app, "/w/acme/issues/ACM-1").await;
    assert!(!panel(&page).contains("Waiting on"), "{}", panel(&page));
    assert!(!panel(&page).contains("<h4>Blocked by</h4>"));
}

async fn a_comment_becomes_a_sub_issue(backend: Backend) {
    let Some(db) = TestDb::new(backend).await else {
        return;
    };
    let app = spawn_app(db.config()).await;
    let (_, ws) = seed::acme(&app.store).await;
    let parent = issue(&app, ws.id, "Parser rewrite").await;
    let owner = app.sign_in("ada@acme.test", PASSWORD, "acme").await;
    let text = "  Split the tokenizer out  \n\nIt is 900 lines and does three things.";
    let res = owner
        .post(
            &app,
            "/w/acme/issues/ACM-1/comments",
            &[("_csrf", owner.csrf.as_str()), ("body", text)],
        )
        .await;
    assert_eq!(res.status(), StatusCode::SEE_OTHER);
    let comment = app.store.list_comments(parent.id).await.unwrap().remove(0);
    let page = owner.page(&app, "/w/acme/issues/ACM-1").await;
    let action = format!("/w/acme/issues/ACM-1/comments/{}/sub-issue", comment.id);
    assert!(
        page.contains(&format!(r#"action="{action}""#)),
        "the button"
    );

    let res = owner
        .post(&app, &action, &[("_csrf", owner.csrf.as_str())])
        .await;
    assert_eq!(res.status(), StatusCode::SEE_OTHER);
    assert_eq!(
        res.headers()["location"].to_str().unwrap(),
        "/w/acme/issues/ACM-2"
    );
    let child = by_key(&app, ws.id, "ACM-2").await;
    assert_eq!(child.title.as_str(), "Split the tokenizer out");
    assert_eq!(child.parent, Some(parent.id));
    assert!(
        child.body.starts_with(&format!(
            "From a comment on ACM-1: /w/acme/issues/ACM-1#comment-{}",
            comment.id
        )),
        "{}",
        child.body
    );
    assert!(child.body.contains("does three things"));
    let page = owner.page(&app, "/w/acme/issues/ACM-1").await;
    assert!(panel(&page).contains("Split the tokenizer out"));

    // A comment of another issue is not found.
    issue(&app, ws.id, "Other").await;
    let res = owner
        .post(
            &app,
            &format!("/w/acme/issues/ACM-3/comments/{}/sub-issue", comment.id),
            &[("_csrf", owner.csrf.as_str())],
        )
        .await;
    assert_eq!(res.status(), StatusCode::NOT_FOUND);
}

both_backends!(the_plan_panel_builds_a_plan, a_comment_becomes_a_sub_issue);
