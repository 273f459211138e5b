//! Forms in real headless Chromium (issue 17): the agent form shows every error at once next to its
//! field and keeps the input; a server-folder import's error shows in the import form; the light/dark
//! switch changes the page and survives a reload; a person changes their password on the account page,
//! which signs out their other session. Screenshots land in `target/screenshots/forms-*.png`.

use std::time::Duration;

use muster_tests::browser::Browser;
use muster_tests::seed;
use muster_tests::{Backend, TestApp, TestDb, spawn_app};
use reqwest::StatusCode;
use serde_json::{Value, json};

/// Generous: a cold Chromium on a loaded 2-core machine.
const LIVE: Duration = Duration::from_secs(20);
use muster_tests::seed::PASSWORD;
const NEW_PASSWORD: &str = "an-even-longer-passphrase";

/// A server with Ada, owner of `acme`; sign-in limits raised so the flows' several sign-ins all count.
async fn server() -> Option<(TestDb, TestApp)> {
    let db = TestDb::new(Backend::Sqlite).await?;
    let mut config = db.config();
    config.login_limits = muster::config::LoginLimits {
        per_ip_per_minute: 100,
        per_account_per_15_minutes: 100,
    };
    let app = spawn_app(config).await;
    seed::acme(&app.store).await;
    Some((db, app))
}

/// A browser with Ada signed in, on her board; `None` without Chromium.
async fn signed_in_ada(app: &TestApp) -> Option<Browser> {
    Browser::signed_in(&app.url(""), "ada@acme.test", LIVE).await
}

async fn js(browser: &Browser, script: &str) -> Value {
    browser.execute(script, vec![]).await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs Chromium and chromedriver; run with --include-ignored"]
async fn agent_form_skill_import_and_theme_in_chromium() {
    let Some((_db, app)) = server().await else {
        return;
    };
    let Some(ada) = signed_in_ada(&app).await else {
        return;
    };

    // Three mistakes, one submit: all three shown, each next to its field, and the input kept.
    ada.goto(&app.url("/w/acme/agents/new")).await.unwrap();
    ada.fill("#agent-name", "bad name").await.unwrap();
    ada.fill("#agent-instructions", "Keep what I typed.")
        .await
        .unwrap();
    ada.fill("#agent-max_concurrent_runs", "99").await.unwrap();
    ada.fill("#agent-base_url", "ftp://models.example")
        .await
        .unwrap();
    ada.click("form.agent-form button[type=submit]")
        .await
        .unwrap();
    ada.wait_for_text(".agent-form", "Fix the 3 highlighted fields below.", LIVE)
        .await
        .unwrap();
    let errors = js(
        &ada,
        r#"return [...document.querySelectorAll('.agent-form [aria-invalid="true"]')].map(input => {
            const box = document.getElementById(input.getAttribute('aria-describedby'));
            return [input.name, input.value, input.closest('.field') === box.closest('.field'), box.textContent];
        });"#,
    )
    .await;
    assert_eq!(
        errors,
        json!([
            [
                "name",
                "bad name",
                true,
                "may contain only letters, digits, '-', '_' and '.' (found ' ')"
            ],
            [
                "base_url",
                "ftp://models.example",
                true,
                "must start with http:// or https://"
            ],
            [
                "max_concurrent_runs",
                "99",
                true,
                "must be between 1 and 32"
            ],
        ]),
        "every error, next to its own field, with what was typed"
    );
    assert_eq!(
        js(
            &ada,
            "return document.getElementById('agent-instructions').value;"
        )
        .await,
        "Keep what I typed."
    );
    ada.screenshot("forms-agent-errors").await.unwrap();

    // A folder import that fails says so in the import form, not under the upload form.
    ada.goto(&app.url("/w/acme/skills")).await.unwrap();
    let path_input = "form[action$='/skills/import-path'] input[name=path]";
    ada.fill(path_input, "/no/such/skill-folder").await.unwrap();
    ada.click("form[action$='/skills/import-path'] button[type=submit]")
        .await
        .unwrap();
    ada.wait_for_text("#skill-import-path", "cannot be read", LIVE)
        .await
        .unwrap();
    let upload = ada.text("#skill-upload").await.unwrap();
    assert!(!upload.contains("cannot be read"), "{upload}");
    assert_eq!(
        js(
            &ada,
            "const ids = [...document.querySelectorAll('[id]')].map(e => e.id); \
             return ids.length - new Set(ids).size;"
        )
        .await,
        0,
        "no id is used twice"
    );
    assert_eq!(
        js(
            &ada,
            &format!("return document.querySelector(\"{path_input}\").value;")
        )
        .await,
        "/no/such/skill-folder"
    );
    ada.screenshot("forms-skill-import-error").await.unwrap();

    // The light/dark switch: the page changes at once and stays so after a reload.
    let background = "return getComputedStyle(document.body).backgroundColor;";
    ada.goto(&app.url("/w/acme")).await.unwrap();
    let system = js(&ada, background).await;
    ada.click("[data-theme-choice=dark]").await.unwrap();
    assert_eq!(js(&ada, background).await, "rgb(14, 16, 20)");
    ada.goto(&app.url("/w/acme")).await.unwrap();
    ada.find_within(".board", LIVE).await.unwrap();
    assert_eq!(js(&ada, background).await, "rgb(14, 16, 20)", "remembered");
    assert_eq!(
        js(&ada, "return document.querySelector('[data-theme-choice=dark]').getAttribute('aria-pressed');").await,
        "true"
    );
    ada.screenshot("forms-theme-dark").await.unwrap();
    ada.click("[data-theme-choice=light]").await.unwrap();
    assert_eq!(js(&ada, background).await, "rgb(245, 246, 248)");
    ada.click("[data-theme-choice=system]").await.unwrap();
    assert_eq!(js(&ada, background).await, system);
    assert_eq!(
        js(
            &ada,
            "return document.documentElement.hasAttribute('data-theme');"
        )
        .await,
        false
    );

    ada.close().await.unwrap();
    app.shutdown.cancel();
    app.handle.await.unwrap().unwrap();
}

/// Signs in over plain HTTP: another session of the same account.
async fn other_session(app: &TestApp) -> (reqwest::Client, String) {
    let http = muster_tests::no_redirects();
    let cookie = app.sign_in_cookie(&http, "ada@acme.test", PASSWORD).await;
    (http, cookie)
}

async fn login_status(app: &TestApp, password: &str) -> StatusCode {
    muster_tests::no_redirects()
        .post(app.url("/login"))
        .form(&[
            ("email", "ada@acme.test"),
            ("password", password),
            ("next", ""),
        ])
        .send()
        .await
        .unwrap()
        .status()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs Chromium and chromedriver; run with --include-ignored"]
async fn a_person_changes_their_password_in_chromium() {
    let Some((_db, app)) = server().await else {
        return;
    };
    let (laptop, laptop_cookie) = other_session(&app).await;
    let Some(ada) = signed_in_ada(&app).await else {
        return;
    };

    // From the top bar to the account page.
    ada.click("a.user-name").await.unwrap();
    ada.wait_for_text("main h1", "Your account", LIVE)
        .await
        .unwrap();
    // Every mistake at once.
    ada.fill("#account-current_password", "not-my-password")
        .await
        .unwrap();
    ada.fill("#account-new_password", "short").await.unwrap();
    ada.fill("#account-new_password_again", "shorter")
        .await
        .unwrap();
    // The browser's own minlength check would stop the form before the server sees it.
    js(
        &ada,
        "document.querySelector('#change-password form').noValidate = true; return null;",
    )
    .await;
    ada.click("#change-password button[type=submit]")
        .await
        .unwrap();
    ada.wait_for_text("#change-password", "is not your current password", LIVE)
        .await
        .unwrap();
    let text = ada.text("#change-password").await.unwrap();
    assert!(text.contains("must be at least 12 characters"), "{text}");
    assert!(text.contains("does not match the new password"), "{text}");
    ada.screenshot("forms-password-errors").await.unwrap();

    ada.fill("#account-current_password", PASSWORD)
        .await
        .unwrap();
    ada.fill("#account-new_password", NEW_PASSWORD)
        .await
        .unwrap();
    ada.fill("#account-new_password_again", NEW_PASSWORD)
        .await
        .unwrap();
    ada.click("#change-password button[type=submit]")
        .await
        .unwrap();
    ada.wait_for_text("#change-password", "Your password was changed", LIVE)
        .await
        .unwrap();
    ada.screenshot("forms-password-changed").await.unwrap();

    // This browser stays signed in; the other session is signed out.
    ada.goto(&app.url("/w/acme")).await.unwrap();
    ada.find_within(".board", LIVE).await.unwrap();
    let res = laptop
        .get(app.url("/w/acme"))
        .header("cookie", &laptop_cookie)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::SEE_OTHER);
    assert!(
        res.headers()["location"]
            .to_str()
            .unwrap()
            .starts_with("/login"),
        "the other session goes to the login page"
    );
    assert_eq!(login_status(&app, PASSWORD).await, StatusCode::UNAUTHORIZED);
    assert_eq!(
        login_status(&app, NEW_PASSWORD).await,
        StatusCode::SEE_OTHER
    );

    ada.close().await.unwrap();
    app.shutdown.cancel();
    app.handle.await.unwrap().unwrap();
}

/// The Settings page: the repository and the loop guard's two limits, refused out of range with the
/// field's message, saved in range.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs Chromium and chromedriver; run with --include-ignored"]
async fn the_settings_page_sets_the_loop_guard_in_chromium() {
    let Some((_db, app)) = server().await else {
        return;
    };
    let Some(ada) = signed_in_ada(&app).await else {
        return;
    };
    ada.goto(&app.url("/w/acme/settings")).await.unwrap();
    ada.wait_for_text("main h1", "Settings", LIVE)
        .await
        .unwrap();
    let depth = ada
        .execute(
            "return document.querySelector('[name=mention_depth_limit]').value",
            vec![],
        )
        .await
        .unwrap();
    assert_eq!(depth, serde_json::json!("3"), "the default depth");
    js(
        &ada,
        "document.querySelector('main form').noValidate = true; return null;",
    )
    .await;
    ada.fill("[name=mention_depth_limit]", "0").await.unwrap();
    ada.click("main form button[type=submit]").await.unwrap();
    ada.wait_for_text("main form", "1 to 20", LIVE)
        .await
        .unwrap();
    ada.screenshot("settings-errors").await.unwrap();
    ada.fill("[name=mention_depth_limit]", "5").await.unwrap();
    ada.fill("[name=agent_runs_per_issue_per_hour]", "40")
        .await
        .unwrap();
    ada.click("main form button[type=submit]").await.unwrap();
    let deadline = std::time::Instant::now() + LIVE;
    loop {
        let ws = app.store.list_workspaces().await.unwrap();
        if ws
            .iter()
            .any(|w| w.mention_depth_limit == 5 && w.agent_runs_per_issue_per_hour == 40)
        {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the limits are saved: {ws:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    ada.screenshot("settings").await.unwrap();
    ada.close().await.unwrap();
}

/// Issue 27: Ctrl+Enter in the New issue panel creates the issue once, in this tab: the board shows it
/// with the panel closed and empty (the browser's own Ctrl+Enter submitted into a new tab and left this
/// one filled in, so the next click duplicated the issue).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs Chromium and chromedriver; run with --include-ignored"]
async fn ctrl_enter_creates_one_issue_in_this_tab() {
    let Some((_db, app)) = server().await else {
        return;
    };
    let Some(ada) = signed_in_ada(&app).await else {
        return;
    };
    js(&ada, "window.__stayed = true").await;
    ada.click("details.new-issue > summary").await.unwrap();
    ada.fill("#new-issue-title", "Keyboard first")
        .await
        .unwrap();
    let title = ada.find("#new-issue-title").await.unwrap();
    title
        .send_keys(&(fantoccini::key::Key::Control + &fantoccini::key::Key::Enter))
        .await
        .unwrap();
    ada.wait_for_text(".board", "Keyboard first", LIVE)
        .await
        .unwrap();
    let after = js(
        &ada,
        "return [document.querySelector('details.new-issue').open, \
         document.querySelector('#new-issue-title').value, \
         document.querySelectorAll('.card').length]",
    )
    .await;
    assert_eq!(
        after,
        json!([false, "", 1]),
        "the panel, its title, the cards"
    );
    let windows = ada.client().windows().await.unwrap();
    assert_eq!(windows.len(), 1, "no second tab");
    ada.close().await.unwrap();
}
