//! Writes every page as a static `.html` file for screenshots and manual review, when
//! `MUSTER_WEB_SAMPLES_DIR` is set:
//!
//! ```sh
//! MUSTER_WEB_SAMPLES_DIR=/tmp/muster-web-samples cargo test -p muster-web write_samples
//! ```
//!
//! Asset URLs are rewritten to `assets/…` beside the pages, so they open from `file://`.

use std::path::Path;

use crate::views::{ErrorPageView, LoginView, NavItem, SetupView};
use crate::{assets, pages};

fn pages() -> Vec<(&'static str, String)> {
    let mut setup = SetupView {
        token: "setup-token".into(),
        workspace_name: "Acme Robotics".into(),
        issue_prefix: "mu".into(),
        name: "Ada Lovelace".into(),
        email: "ada@acme.test".into(),
        ..Default::default()
    };
    setup.errors = super::err("issue_prefix", "must be 2–10 capital letters, like MUS");
    let login = LoginView {
        email: "ada@acme.test".into(),
        next: "/w/acme".into(),
        errors: super::err("form", "Wrong email or password."),
    };
    let not_found = ErrorPageView {
        status: 404,
        title: "Issue not found".into(),
        message: "MUS-404 does not exist in Acme Robotics, or it was deleted.".into(),
        back_url: "/w/acme".into(),
    };
    let mut board_with_errors = super::board();
    board_with_errors.new_issue = super::issue_form(
        "",
        "Steps to reproduce…",
        super::err("title", "must not be empty"),
    );
    vec![
        ("board", pages::board(&super::board()).into_string()),
        (
            "board-new-issue",
            pages::board(&board_with_errors).into_string(),
        ),
        ("issue", pages::issue(&super::issue()).into_string()),
        ("agents", pages::agents(&super::agents()).into_string()),
        (
            "agent-form",
            pages::agent_form(&super::agent_form()).into_string(),
        ),
        (
            "ensembles",
            pages::ensembles(&super::ensembles()).into_string(),
        ),
        (
            "ensemble-form",
            pages::ensemble_form(&super::ensemble_form()).into_string(),
        ),
        ("members", pages::members(&super::members()).into_string()),
        ("tokens", pages::tokens(&super::tokens()).into_string()),
        ("run", pages::run(&super::run_page()).into_string()),
        (
            "run-failed",
            pages::run(&super::failed_run_page()).into_string(),
        ),
        ("inbox", pages::inbox(&super::inbox()).into_string()),
        ("setup", pages::setup(&setup).into_string()),
        ("login", pages::login(&login).into_string()),
        (
            "error",
            pages::error(&not_found, Some(&super::nav(NavItem::Board))).into_string(),
        ),
    ]
}

#[test]
fn write_samples() {
    let written = pages();
    assert!(
        written
            .iter()
            .all(|(_, html)| html.contains(&assets::url("app.css")))
    );
    #[allow(
        clippy::disallowed_methods,
        reason = "an opt-in developer switch for this test, not configuration"
    )]
    let Some(dir) = std::env::var_os("MUSTER_WEB_SAMPLES_DIR") else {
        return;
    };
    let dir = Path::new(&dir);
    std::fs::create_dir_all(dir.join("assets")).unwrap();
    for name in assets::names() {
        std::fs::write(
            dir.join("assets").join(name),
            assets::get(name).unwrap().bytes,
        )
        .unwrap();
    }
    for (name, html) in written {
        let html = html.replace(&assets::prefix(), "assets/");
        std::fs::write(dir.join(format!("{name}.html")), html).unwrap();
    }
}
