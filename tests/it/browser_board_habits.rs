//! Board habits in real headless Chromium: the keyboard shortcuts and their `?` overlay, the Ctrl-K
//! command palette (jump, assign, change status), the card menu (status and assignee without leaving
//! the board), instant filters with a shareable URL, and avatars that tell look-alike agents apart.
//! Screenshots: `board-habits`, `shortcuts`, `palette`, `card-menu`.

use std::sync::Arc;
use std::time::Duration;

use fantoccini::actions::{InputSource as _, KeyAction, KeyActions};
use fantoccini::key::Key;
use muster::domain::{
    Assignee, IssueKey, IssueStatus, IssueTitle, NewIssue, Role, RuntimeKind, UserId,
};
use muster::store::Store;
use muster_tests::browser::Browser;
use muster_tests::seed;
use muster_tests::{Backend, TestDb, spawn_app};
use serde_json::Value;

/// Generous: a cold Chromium on a loaded 2-core machine.
const LIVE: Duration = Duration::from_secs(20);

/// Presses each key in turn (down, up) on whatever has focus, as a person would.
async fn press(browser: &Browser, keys: &[char]) {
    let mut seq = KeyActions::new("keyboard".into());
    for k in keys {
        seq = seq
            .then(KeyAction::Down { value: *k })
            .then(KeyAction::Up { value: *k });
    }
    browser.client().perform_actions(seq).await.unwrap();
}

/// Ctrl+`key`.
async fn ctrl(browser: &Browser, key: char) {
    let ctrl: char = Key::Control.into();
    let seq = KeyActions::new("keyboard".into())
        .then(KeyAction::Down { value: ctrl })
        .then(KeyAction::Down { value: key })
        .then(KeyAction::Up { value: key })
        .then(KeyAction::Up { value: ctrl });
    browser.client().perform_actions(seq).await.unwrap();
}

async fn js(browser: &Browser, script: &str) -> Value {
    browser.execute(script, vec![]).await.unwrap()
}

/// Polls `script` (a function body returning a value) until it returns `want`.
async fn until(browser: &Browser, script: &str, want: Value) {
    browser.until_js(script, &want, LIVE).await.unwrap();
}

async fn wait_for_path(browser: &Browser, suffix: &str) {
    browser.wait_for_path(suffix, LIVE).await.unwrap();
}

/// Polls the store until `key` satisfies `ok`.
async fn until_stored(
    store: &Arc<dyn Store>,
    ws: muster::domain::WorkspaceId,
    key: &str,
    ok: impl Fn(&muster::domain::Issue) -> bool,
) {
    let started = std::time::Instant::now();
    loop {
        let issue = store
            .get_issue(ws, &IssueKey::parse(key).unwrap())
            .await
            .unwrap();
        if ok(&issue) {
            return;
        }
        assert!(started.elapsed() < LIVE, "{key} never got there: {issue:?}");
        tokio::time::sleep(muster_tests::browser::POLL).await;
    }
}

const OPEN_DIALOG: &str =
    "const d = document.querySelector('dialog[open]'); return d ? d.id : null;";
const FOCUSED: &str = "return document.activeElement ? document.activeElement.id : null;";
const SELECTED: &str = "const o = document.querySelector('#palette-list [aria-selected=true]'); return o ? o.textContent : null;";

async fn wait_selected(browser: &Browser, text: &str) {
    let started = std::time::Instant::now();
    loop {
        let got = js(browser, SELECTED).await;
        if got.as_str().is_some_and(|t| t.contains(text)) {
            return;
        }
        assert!(
            started.elapsed() < LIVE,
            "selected option is {got}, not {text:?}"
        );
        tokio::time::sleep(muster_tests::browser::POLL).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs Chromium and chromedriver; run with --include-ignored"]
async fn keyboard_palette_card_menu_and_instant_filters() {
    let Some(db) = TestDb::new(Backend::Sqlite).await else {
        return;
    };
    let app = spawn_app(db.config()).await;
    let store = app.store.clone();
    let ada = seed::person("ada@acme.test", "Ada Lovelace");
    let (ada, ws) = seed::owner_of(&store, ada, ("Acme Robots", "acme", "ACM")).await;
    let grace = seed::person("grace@acme.test", "Grace Hopper");
    let grace = seed::member(&store, ws.id, grace, Role::Member).await;
    let grace_id: UserId = grace.user.id;
    let claude = seed::agent(&store, ws.id, "claude-coder", RuntimeKind::Claude).await;
    let codex = seed::agent(&store, ws.id, "codex-coder", RuntimeKind::Codex).await;
    let issue = |title: &str, status, assignee| {
        let mut new = NewIssue::new(IssueTitle::parse(title).unwrap());
        new.status = status;
        new.assignee = assignee;
        new
    };
    for new in [
        issue("Rate-limit the public API", IssueStatus::Todo, None),
        issue(
            "Nightly export of the board to CSV",
            IssueStatus::Todo,
            None,
        ),
        issue(
            "Fuzz the markdown parser",
            IssueStatus::Backlog,
            Some(Assignee::Agent(claude.id)),
        ),
        issue(
            "Review the queue code",
            IssueStatus::Backlog,
            Some(Assignee::Agent(codex.id)),
        ),
    ] {
        store.create_issue(ws.id, &new).await.unwrap();
    }

    let Some(browser) = Browser::signed_in(&app.url(""), "ada@acme.test", LIVE).await else {
        return;
    };
    browser.find_within("#card-ACM-4", LIVE).await.unwrap();

    // Two "CC" agents: same initials, different colours, and each its runtime badge.
    let faces = js(
        &browser,
        r"return ['ACM-3', 'ACM-4'].map(k => {
            const card = document.querySelector('#card-' + k);
            const face = card.querySelector('.avatar-agent');
            return [face.textContent.trim(), getComputedStyle(face).backgroundColor,
                    card.querySelector('.avatar-rt').textContent];
        });",
    )
    .await;
    assert_eq!(faces[0][0], "CC");
    assert_eq!(faces[1][0], "CC");
    assert_ne!(
        faces[0][1], faces[1][1],
        "look-alikes differ in colour: {faces}"
    );
    assert_eq!(
        (faces[0][2].as_str(), faces[1][2].as_str()),
        (Some("claude"), Some("codex"))
    );
    browser.screenshot("board-habits").await.unwrap();

    // `?` opens the overlay that lists every shortcut; Esc closes it.
    press(&browser, &['?']).await;
    until(&browser, OPEN_DIALOG, "shortcuts".into()).await;
    let overlay = browser.text("#shortcuts").await.unwrap();
    for what in [
        "Open the command palette",
        "New issue",
        "Search the board",
        "Go to the board",
        "Go to agents",
        "Go to the inbox",
        "Show these shortcuts",
    ] {
        assert!(overlay.contains(what), "{what} missing from {overlay}");
    }
    browser.screenshot("shortcuts").await.unwrap();
    press(&browser, &[Key::Escape.into()]).await;
    until(&browser, OPEN_DIALOG, Value::Null).await;

    // Inside a text field the single keys are just text.
    js(
        &browser,
        "document.querySelector('#filter-q').focus(); return null;",
    )
    .await;
    press(&browser, &['c', '?', 'g', 'a']).await;
    until(
        &browser,
        "return document.querySelector('#filter-q').value;",
        "c?ga".into(),
    )
    .await;
    assert_eq!(js(&browser, OPEN_DIALOG).await, Value::Null);
    assert_eq!(
        js(
            &browser,
            "return document.querySelector('details.new-issue').open;"
        )
        .await,
        false
    );
    assert!(browser.current_url().await.unwrap().contains("/w/acme"));
    assert!(!browser.current_url().await.unwrap().contains("/agents"));
    browser.goto(&app.url("/w/acme")).await.unwrap();
    browser.find_within("#card-ACM-1", LIVE).await.unwrap();

    // `/` focuses the search, `c` opens the new-issue form, `g a` / `g b` go to agents and back.
    press(&browser, &['/']).await;
    until(&browser, FOCUSED, "filter-q".into()).await;
    js(&browser, "document.activeElement.blur(); return null;").await;
    press(&browser, &['c']).await;
    until(&browser, FOCUSED, "new-issue-title".into()).await;
    js(
        &browser,
        "document.querySelector('details.new-issue').open = false; document.activeElement.blur(); return null;",
    )
    .await;
    press(&browser, &['g', 'a']).await;
    wait_for_path(&browser, "/w/acme/agents").await;
    let badges = browser.text(".agent-grid").await.unwrap();
    assert!(
        badges.contains("claude") && badges.contains("codex"),
        "{badges}"
    );
    press(&browser, &['g', 'b']).await;
    wait_for_path(&browser, "/w/acme").await;
    browser.find_within("#card-ACM-1", LIVE).await.unwrap();

    // Ctrl-K opens the palette; Esc closes it and gives focus back.
    js(
        &browser,
        "document.querySelector('#filter-q').focus(); return null;",
    )
    .await;
    ctrl(&browser, 'k').await;
    until(&browser, OPEN_DIALOG, "palette".into()).await;
    until(&browser, FOCUSED, "palette-input".into()).await;
    press(&browser, &[Key::Escape.into()]).await;
    until(&browser, OPEN_DIALOG, Value::Null).await;
    until(&browser, FOCUSED, "filter-q".into()).await;
    js(&browser, "document.activeElement.blur(); return null;").await;

    // Type a key, Enter: the issue page.
    ctrl(&browser, 'k').await;
    until(&browser, FOCUSED, "palette-input".into()).await;
    press(&browser, &['a', 'c', 'm', '-', '1']).await;
    wait_selected(&browser, "Rate-limit the public API").await;
    browser.screenshot("palette").await.unwrap();
    press(&browser, &[Key::Enter.into()]).await;
    wait_for_path(&browser, "/w/acme/issues/ACM-1").await;

    // On the issue page: assign it to Grace through the palette.
    browser.find_within("main", LIVE).await.unwrap();
    ctrl(&browser, 'k').await;
    until(&browser, FOCUSED, "palette-input".into()).await;
    press(&browser, &['a', 's', 's', 'i', 'g', 'n']).await;
    wait_selected(&browser, "Assign ACM-1 to").await;
    press(&browser, &[Key::Enter.into()]).await;
    until(
        &browser,
        "return document.querySelector('#palette-input').placeholder;",
        "Assign ACM-1 to…".into(),
    )
    .await;
    press(&browser, &['g', 'r', 'a']).await;
    wait_selected(&browser, "Grace Hopper").await;
    press(&browser, &[Key::Enter.into()]).await;
    until_stored(&store, ws.id, "ACM-1", |i| {
        i.assignee == Some(Assignee::User(grace_id))
    })
    .await;

    // On the board: ACM-2 to "In review" through the palette; the board follows live.
    browser.goto(&app.url("/w/acme")).await.unwrap();
    browser.find_within("#card-ACM-2", LIVE).await.unwrap();
    ctrl(&browser, 'k').await;
    until(&browser, FOCUSED, "palette-input".into()).await;
    press(&browser, &['A', 'C', 'M', '-', '2']).await;
    wait_selected(&browser, "Nightly export").await;
    for _ in 0..5 {
        let now = js(&browser, SELECTED).await;
        if now
            .as_str()
            .is_some_and(|t| t.contains("Change status of ACM-2"))
        {
            break;
        }
        press(&browser, &[Key::Down.into()]).await;
    }
    wait_selected(&browser, "Change status of ACM-2").await;
    press(&browser, &[Key::Enter.into()]).await;
    until(
        &browser,
        "return document.querySelector('#palette-input').placeholder;",
        "Move ACM-2 to…".into(),
    )
    .await;
    press(&browser, &['r', 'e', 'v']).await;
    wait_selected(&browser, "In review").await;
    press(&browser, &[Key::Enter.into()]).await;
    until_stored(&store, ws.id, "ACM-2", |i| {
        i.status == IssueStatus::InReview
    })
    .await;
    browser
        .wait_for_text("#column-in_review", "ACM-2", LIVE)
        .await
        .unwrap();

    // The card menu: status and assignee from the card, in one shared popover.
    browser.click("#card-ACM-1 .card-menu").await.unwrap();
    browser
        .find_within("#card-menu button[name=status][value=in_progress]", LIVE)
        .await
        .unwrap();
    browser.screenshot("card-menu").await.unwrap();
    assert_eq!(
        js(
            &browser,
            "return document.querySelectorAll('#card-menu').length;"
        )
        .await,
        1
    );
    browser
        .click("#card-menu button[name=status][value=in_progress]")
        .await
        .unwrap();
    until_stored(&store, ws.id, "ACM-1", |i| {
        i.status == IssueStatus::InProgress
    })
    .await;
    browser
        .wait_for_text("#column-in_progress", "ACM-1", LIVE)
        .await
        .unwrap();
    until(
        &browser,
        "return document.querySelector('#card-menu').hidden;",
        true.into(),
    )
    .await;
    browser.click("#card-ACM-1 .card-menu").await.unwrap();
    let me = format!("#card-menu button[name=assignee][value='user:{}']", ada.id);
    browser.find_within(&me, LIVE).await.unwrap();
    browser.click(&me).await.unwrap();
    until_stored(&store, ws.id, "ACM-1", |i| {
        i.assignee == Some(Assignee::User(ada.id))
    })
    .await;
    // Esc closes the menu and the focus goes back to the card's menu button.
    browser.click("#card-ACM-2 .card-menu").await.unwrap();
    browser
        .find_within("#card-menu button", LIVE)
        .await
        .unwrap();
    press(&browser, &[Key::Escape.into()]).await;
    until(
        &browser,
        "return document.activeElement.matches('#card-ACM-2 .card-menu');",
        true.into(),
    )
    .await;

    // Instant filters: typing narrows the board without a click, and the URL says so.
    browser.fill("#filter-q", "Rate").await.unwrap();
    until(
        &browser,
        "return !!document.querySelector('#card-ACM-1') && !document.querySelector('#card-ACM-2');",
        true.into(),
    )
    .await;
    let url = browser.current_url().await.unwrap();
    assert!(url.contains("q=Rate") && !url.contains("label="), "{url}");
    browser.find_within("#filter-clear a", LIVE).await.unwrap();
    browser.fill("#filter-q", "ACM-4").await.unwrap();
    until(
        &browser,
        "return !!document.querySelector('#card-ACM-4') && !document.querySelector('#card-ACM-1');",
        true.into(),
    )
    .await;
    browser
        .select("#filter-assignee", &format!("agent:{}", codex.id))
        .await
        .unwrap();
    let started = std::time::Instant::now();
    while !browser
        .current_url()
        .await
        .unwrap()
        .contains("assignee=agent")
    {
        assert!(
            started.elapsed() < LIVE,
            "the assignee filter reached the URL"
        );
        tokio::time::sleep(muster_tests::browser::POLL).await;
    }

    let blocked: Vec<Value> = browser
        .console_log()
        .await
        .unwrap()
        .into_iter()
        .filter(|e| e["source"] == "security")
        .collect();
    assert!(blocked.is_empty(), "CSP violations: {blocked:?}");
    browser.close().await.unwrap();
    app.shutdown.cancel();
    app.handle.await.unwrap().unwrap();
}
