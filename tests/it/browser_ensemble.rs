//! An ensemble in real headless Chromium: a person starts an ensemble of three stand-in agents from the
//! issue page, watches the compare page follow them live (one passes its check, one fails it, one is
//! still at work), then — after the blind review — reads the recommendation and chooses a candidate with
//! merge, which puts its work on the repository's main branch.
//! Screenshots `ensemble-live.png` and `ensemble.png` land in `target/screenshots/`.

use muster::domain::*;
use muster_tests::browser::Browser;
use muster_tests::ensemble::{judge_body, repo_with_check, result_line};
use muster_tests::{Backend, git};

use crate::browser_runs::{LIVE, Server, js, sign_in};

/// A candidate script: waits for `gate` (when given), logs a little, writes `answer`, reports its cost.
fn candidate(
    server: &Server,
    name: &str,
    answer: &str,
    usd: f64,
    gate: Option<&std::path::Path>,
) -> std::path::PathBuf {
    let wait = gate
        .map(|g| format!("while [ ! -f '{}' ]; do sleep 0.1; done\n", g.display()))
        .unwrap_or_default();
    let text = serde_json::json!({"type": "assistant", "message": {"id": "m1", "type": "message", "role": "assistant",
        "model": "claude-sonnet-4-5", "content": [{"type": "text", "text": format!("Working out the answer ({name}).")}]},
        "session_id": "s"});
    server.script(
        &format!("{name}.sh"),
        &format!(
            "cat >/dev/null\necho '{text}'\n{wait}echo '{answer}' > answer.txt\necho '{}'",
            result_line(1200, usd, "Wrote the answer.")
        ),
    )
}

async fn compare_and_choose(backend: Backend) {
    let Some(server) = Server::start(backend).await else {
        return;
    };
    let Some(browser) = Browser::start().await else {
        return;
    };
    let repo = repo_with_check(server.scripts.path());
    server
        .store
        .set_workspace_repo(server.ws.id, Some(&repo.display().to_string()))
        .await
        .unwrap();
    let go = server.scripts.path().join("go");
    let quick = server
        .agent(
            "claude-quick",
            &candidate(&server, "quick", "42", 0.0412, None),
        )
        .await;
    let wrong = server
        .agent(
            "codex-wrong",
            &candidate(&server, "wrong", "41", 0.0233, None),
        )
        .await;
    let slow = server
        .agent(
            "opencode-slow",
            &candidate(&server, "slow", "42", 0.0671, Some(&go)),
        )
        .await;
    let prompt = server.scripts.path().join("judge.prompt");
    let judge = server
        .agent("judge", &server.script("judge.sh", &judge_body(&prompt)))
        .await;
    let settings = EnsembleSettings {
        members: vec![quick.id, wrong.id, slow.id],
        check: Some(CheckSpec {
            command: "sh check.sh".into(),
            timeout_secs: 60,
        }),
        early_stop: EarlyStop::All,
        reviewer: Some(judge.id),
        budget: Budget {
            usd: Some(0.5),
            tokens: None,
        },
        share: None,
    };
    server
        .store
        .create_ensemble(
            server.ws.id,
            &EnsembleName::parse("trio").unwrap(),
            &settings,
        )
        .await
        .unwrap();
    let issue = server.issue("Find the answer to everything").await;

    sign_in(&browser, &server).await;
    browser
        .goto(&server.url(&format!("/w/acme/issues/{}", issue.key)))
        .await
        .unwrap();
    browser.select("#ensemble-pick", "trio").await.unwrap();
    browser
        .click("form[action$='/ensemble'] button[type=submit]")
        .await
        .unwrap();
    browser.find_within("#ensemble", LIVE).await.unwrap();
    // Live: the quick one passes, the wrong one fails, the slow one still works.
    browser
        .find_within("article[data-agent='claude-quick'][data-gate='pass']", LIVE)
        .await
        .unwrap();
    browser
        .find_within("article[data-agent='codex-wrong'][data-gate='fail']", LIVE)
        .await
        .unwrap();
    let slow_text = browser
        .text("article[data-agent='opencode-slow']")
        .await
        .unwrap();
    assert!(
        slow_text.contains("running")
            || slow_text.contains("claimed")
            || slow_text.contains("queued"),
        "{slow_text}"
    );
    assert_eq!(browser.text("#ensemble-status").await.unwrap(), "running");
    browser.screenshot("ensemble-live").await.unwrap();

    // The slow one ends green too: two pass, so the blind review decides.
    std::fs::write(&go, "").unwrap();
    browser
        .wait_for_text("#review-state", "judged best", LIVE * 2)
        .await
        .unwrap();
    let recommendation = browser.text("#recommendation").await.unwrap();
    assert!(
        recommendation.contains("by opinion only"),
        "{recommendation}"
    );
    // The review's pick is the recommendation: the page never names two.
    let review = browser.text("#review-state").await.unwrap();
    let judged = ["claude-quick", "opencode-slow"]
        .into_iter()
        .find(|a| review.contains(&format!("({a})")))
        .unwrap_or_else(|| panic!("{review}"));
    assert!(
        recommendation.contains(&format!("Recommended: {judged}"))
            && recommendation.contains("judged it best"),
        "{review} / {recommendation}"
    );
    let spent = browser.text("#ensemble-spent").await.unwrap();
    assert!(spent.contains("of $0.5000"), "{spent}");
    for agent in ["claude-quick", "codex-wrong", "opencode-slow"] {
        let column = browser
            .text(&format!("article[data-agent='{agent}']"))
            .await
            .unwrap();
        assert!(column.contains("Check:"), "{column}");
    }
    let prompt_text = std::fs::read_to_string(&prompt).unwrap();
    for name in ["claude-quick", "opencode-slow", "codex-wrong", "trio"] {
        assert!(!prompt_text.contains(name), "the reviewer saw {name}");
    }
    browser.screenshot("ensemble").await.unwrap();

    // Choose the quick one, merged.
    js(&browser, "document.querySelector(\"article[data-agent='claude-quick'] input[name=merge]\").checked = true;").await;
    browser
        .click("article[data-agent='claude-quick'] form.choose button[type=submit]")
        .await
        .unwrap();
    browser.find_within("#merged", LIVE).await.unwrap();
    assert_eq!(browser.text("#ensemble-status").await.unwrap(), "chosen");
    assert_eq!(git(&repo, &["show", "main:answer.txt"]).trim(), "42");
    // The board card says how it went.
    browser.goto(&server.url("/w/acme")).await.unwrap();
    let card = browser
        .wait_for_text(".card-ensemble", "ensemble: 2/3 green", LIVE)
        .await
        .unwrap();
    drop(card);
    browser.screenshot("ensemble-board").await.unwrap();
    // The issue page's panel lists the ensemble run and links to the comparison.
    browser
        .goto(&server.url(&format!("/w/acme/issues/{}", issue.key)))
        .await
        .unwrap();
    let panel = browser.text("section.issue-ensembles").await.unwrap();
    assert!(panel.contains("Compare"), "{panel}");
    browser.screenshot("ensemble-issue").await.unwrap();
    browser.close().await.unwrap();
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs Chromium and chromedriver; run with --include-ignored"]
async fn an_ensemble_is_compared_live_and_the_winner_merged() {
    compare_and_choose(Backend::Sqlite).await;
}
