//! Ensembles end to end, with real processes: stand-in agents (shell scripts speaking stream-json) take one
//! issue blind on their own branches from one base commit; each candidate's change is checked in its
//! worktree; the one budget stops a spender after at most one more turn; `first_green` stops the rest;
//! the reviewer sees neutral labels and no agent names, and an invalid verdict stays invalid; Choose
//! with merge puts the chosen work on the base branch and removes the other branches.

use std::path::PathBuf;

use muster::domain::*;
use muster_tests::engine::*;
use muster_tests::{Backend, git};
use serde_json::{Value, json};

/// Tokens one turn of the spender reports.
const TURN_TOKENS: i64 = 100;
/// The ensembles' token budget in these tests.
const BUDGET_TOKENS: i64 = 500;

fn result_line(tokens: i64, text: &str) -> String {
    muster_tests::ensemble::result_line(tokens, 0.001, text)
}

/// A candidate that writes `answer` into `answer.txt` and reports 10 tokens.
fn writer(env: &Env, name: &str, answer: &str) -> PathBuf {
    env.script(
        &format!("{name}.sh"),
        &format!(
            "cat >/dev/null\necho '{answer}' > answer.txt\necho '{}'",
            result_line(10, "done")
        ),
    )
}

/// A candidate that writes a change, then keeps reporting turns of [`TURN_TOKENS`] input tokens.
/// Seconds between two of the spender's turns: the time the server's stop has to reach the runner for
/// the spend to end within one turn. Two, so a machine busy with other tests still makes it.
const TURN_SECS: u64 = 2;

/// The test server for a spender: the usual clocks, but a spender quiet for [`TURN_SECS`] between turns
/// is not stalled.
async fn spending_env(backend: Backend) -> Option<Env> {
    let timing = muster::runner::executor::RunTiming {
        stall_override: Some(std::time::Duration::from_secs(TURN_SECS * 5)),
        ..muster_tests::engine::test_timing()
    };
    Env::start_with_timing(backend, timing).await
}

fn spender(env: &Env) -> PathBuf {
    let turn = json!({"type": "stream_event", "event": {"type": "message_start", "message": {
        "usage": {"input_tokens": TURN_TOKENS, "output_tokens": 0, "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 0}}}, "session_id": "s"});
    env.script(
        "spender.sh",
        &format!(
            "cat >/dev/null\necho 7 > answer.txt\nwhile true; do echo '{turn}'; sleep {TURN_SECS}; done"
        ),
    )
}

/// A reviewer that keeps the prompt it was given beside its script (`<name>.prompt`) and answers
/// `verdict` (a valid one built from the labels it finds when `None`).
fn reviewer(env: &Env, name: &str, verdict: Option<&str>) -> PathBuf {
    let prompt = env.scripts.path().join(format!("{name}.prompt"));
    let body = match verdict {
        Some(text) => format!(
            "cat > '{}'\necho '{}'",
            prompt.display(),
            result_line(5, text)
        ),
        None => muster_tests::ensemble::judge_body(&prompt),
    };
    env.script(&format!("{name}.sh"), &body)
}

async fn post(env: &Env, path: &str, body: Value) -> (u16, Value) {
    let (status, text) = env.call(reqwest::Method::POST, path, Some(body)).await;
    (status, serde_json::from_str(&text).unwrap_or(Value::Null))
}

/// Files an issue called `title` and assigns it to `ensemble`: the issue, and the API's answer (201).
async fn assign_new(env: &Env, title: &str, ensemble: &str) -> (Issue, Value) {
    let issue = env.issue(title).await;
    let path = format!("/api/v1/issues/{}/ensemble", issue.key);
    let (status, body) = post(env, &path, json!({ "ensemble": ensemble })).await;
    assert_eq!(status, 201, "{body}");
    (issue, body)
}

async fn get(env: &Env, path: &str) -> Value {
    serde_json::from_str(&env.page(path).await).unwrap()
}

/// Waits for the issue's latest ensemble run to be decided (or chosen) and returns its comparison.
async fn decided(env: &Env, issue: &Issue) -> Value {
    let path = format!("/api/v1/issues/{}/ensemble", issue.key);
    poll("the ensemble to be decided", || async {
        let c = get(env, &path).await;
        matches!(c["status"].as_str(), Some("decided" | "chosen")).then_some(c)
    })
    .await
}

async fn setup(env: &Env) -> PathBuf {
    let repo = muster_tests::ensemble::repo_with_check(env.scripts.path());
    env.store
        .set_workspace_repo(env.ws.id, Some(&repo.display().to_string()))
        .await
        .unwrap();
    repo
}

async fn one_budget_checks_first_and_a_merged_choice(backend: Backend) {
    let Some(env) = spending_env(backend).await else {
        return;
    };
    let repo = setup(&env).await;
    let base = git(&repo, &["rev-parse", "HEAD"]).trim().to_owned();
    env.agent("right-zq", &writer(&env, "right", "42")).await;
    env.agent("wrong-zq", &writer(&env, "wrong", "41")).await;
    env.agent("spend-zq", &spender(&env)).await;
    let (status, body) = post(
        &env,
        "/api/v1/ensembles",
        json!({"name": "trio", "members": ["right-zq", "wrong-zq", "spend-zq"], "check": "sh check.sh",
               "check_timeout_secs": 60, "early_stop": "all", "budget_tokens": BUDGET_TOKENS, "share": 1.0}),
    )
    .await;
    assert_eq!(status, 201, "{body}");
    let (issue, assigned) = assign_new(&env, "Find the answer", "trio").await;
    assert_eq!(assigned["base_commit"], base.as_str());
    assert_eq!(assigned["runs"].as_array().unwrap().len(), 3);
    // A second assignment while it works is refused, precisely.
    let (status, again) = post(
        &env,
        &format!("/api/v1/issues/{}/ensemble", issue.key),
        json!({"ensemble": "trio"}),
    )
    .await;
    assert_eq!(status, 409, "{again}");

    let c = decided(&env, &issue).await;
    let (r, w, s) = (
        candidate(&c, "right-zq"),
        candidate(&c, "wrong-zq"),
        candidate(&c, "spend-zq"),
    );
    // Checks recorded, with the counts the output showed.
    assert_eq!(r["green"], true, "{c:#}");
    assert_eq!(r["check"]["passed"], 3, "{c:#}");
    assert_eq!(w["green"], false, "{c:#}");
    assert_eq!(w["check"]["failed"], 1, "{c:#}");
    assert_eq!(w["check"]["exit_code"], 1, "{c:#}");
    // The spender: stopped over budget, its partial work kept on its branch, the total at most one
    // turn past the budget.
    assert_eq!(s["status"], "failed", "{c:#}");
    assert_eq!(s["failure_reason"], "over_budget", "{c:#}");
    let spent = c["spent_tokens"].as_i64().unwrap();
    assert!(
        (BUDGET_TOKENS..=BUDGET_TOKENS + TURN_TOKENS).contains(&spent),
        "spent {spent} tokens of {BUDGET_TOKENS}: {c:#}"
    );
    assert!(
        c["stop_reason"].as_str().unwrap().contains("budget"),
        "{c:#}"
    );
    // Branches: one per candidate, from the same base.
    for v in [r, w, s] {
        let branch = v["branch"].as_str().unwrap();
        assert!(
            branch.starts_with(&format!("muster/{}-", issue.key)),
            "{branch}"
        );
        assert!(branch.ends_with("-r1"), "{branch}");
        assert_eq!(
            git(&repo, &["merge-base", branch, "main"]).trim(),
            base,
            "{branch} starts at the base commit"
        );
    }
    // One green: decided by the check, no review.
    assert_eq!(c["review"], "none", "{c:#}");
    assert_eq!(c["recommendation"]["agent"], "right-zq", "{c:#}");
    assert_eq!(c["recommendation"]["by_opinion_only"], false, "{c:#}");
    assert_eq!(c["recommendation"]["decided_by"], "check", "{c:#}");
    let issue_now = env.issue_reaches(&issue, IssueStatus::InReview).await;
    assert_eq!(issue_now.status, IssueStatus::InReview);

    // Someone moves the chosen candidate's branch, and another candidate's, to a commit of their own:
    // the merge still takes the commit the candidate's run made, and a moved branch is never pruned.
    let side = tempfile::tempdir().unwrap();
    let wt = side.path().join("wt");
    git(
        &repo,
        &[
            "worktree",
            "add",
            "-q",
            "--detach",
            &wt.display().to_string(),
            &base,
        ],
    );
    std::fs::write(wt.join("backdoor.txt"), "evil\n").unwrap();
    git(&wt, &["add", "backdoor.txt"]);
    git(
        &wt,
        &[
            "-c",
            "user.name=x",
            "-c",
            "user.email=x@x",
            "commit",
            "-q",
            "-m",
            "backdoor",
        ],
    );
    let evil = git(&wt, &["rev-parse", "HEAD"]).trim().to_owned();
    for v in [r, s] {
        let name = format!("refs/heads/{}", v["branch"].as_str().unwrap());
        git(&repo, &["update-ref", &name, &evil]);
    }
    git(
        &repo,
        &["worktree", "remove", "--force", &wt.display().to_string()],
    );

    // Choose with merge: the chosen work lands on main; the other branches are gone.
    let (status, chosen) = post(
        &env,
        &format!("/api/v1/issues/{}/ensemble/choose", issue.key),
        json!({"candidate": "right-zq", "merge": true}),
    )
    .await;
    assert_eq!(status, 200, "{chosen}");
    let merged = chosen["merged_commit"].as_str().unwrap();
    assert_eq!(git(&repo, &["rev-parse", "main"]).trim(), merged);
    assert_eq!(git(&repo, &["show", "main:answer.txt"]).trim(), "42");
    assert_eq!(
        std::fs::read_to_string(repo.join("answer.txt"))
            .unwrap()
            .trim(),
        "42",
        "the checked-out main was fast-forwarded"
    );
    let branches = git(&repo, &["branch", "--list", "muster/*"]);
    assert!(
        branches.contains(r["branch"].as_str().unwrap()),
        "{branches}"
    );
    assert!(
        !branches.contains(w["branch"].as_str().unwrap()),
        "{branches}"
    );
    assert!(
        branches.contains(s["branch"].as_str().unwrap()),
        "a branch someone moved is theirs, never pruned: {branches}"
    );
    let merged_files = git(&repo, &["ls-tree", "-r", "--name-only", "main"]);
    assert!(
        !merged_files.contains("backdoor.txt"),
        "the merge took the run's commit, not the tampered tip: {merged_files}"
    );
    // The thread records the choice and the merge; the merged work is the issue done.
    let now = env.store.get_issue_by_id(issue.id).await.unwrap();
    assert_eq!(now.status, IssueStatus::Done);
    let comments = env.store.list_comments(issue.id).await.unwrap();
    let note = comments
        .iter()
        .find(|c| c.author == CommentAuthor::System && c.body.starts_with("owner chose"))
        .unwrap_or_else(|| panic!("{comments:?}"));
    assert!(
        note.body
            .starts_with("owner chose right-zq's work from ensemble ")
            && note
                .body
                .ends_with(&format!(" and merged it into main as {}.", &merged[..12])),
        "{}",
        note.body
    );
    // Choosing again is refused.
    let (status, body) = post(
        &env,
        &format!("/api/v1/issues/{}/ensemble/choose", issue.key),
        json!({"candidate": "wrong-zq"}),
    )
    .await;
    assert_eq!(status, 409, "{body}");
    env.stop().await;
}

both_backends!(
    one_budget_checks_first_and_a_merged_choice,
    first_green_stops_the_others,
);

async fn first_green_stops_the_others(backend: Backend) {
    let Some(env) = Env::start(backend).await else {
        return;
    };
    setup(&env).await;
    env.agent("quick-zq", &writer(&env, "quick", "42")).await;
    let slow = env.script(
        "slow.sh",
        "cat >/dev/null\necho 1 > answer.txt\nsleep 120\necho never",
    );
    env.agent("slow-zq", &slow).await;
    let (status, body) = post(
        &env,
        "/api/v1/ensembles",
        json!({"name": "race", "members": ["quick-zq", "slow-zq"], "check": "sh check.sh",
               "early_stop": "first_green"}),
    )
    .await;
    assert_eq!(status, 201, "{body}");
    let (issue, _) = assign_new(&env, "Race", "race").await;
    let c = decided(&env, &issue).await;
    assert_eq!(candidate(&c, "quick-zq")["green"], true, "{c:#}");
    let slow = candidate(&c, "slow-zq");
    assert_eq!(slow["status"], "cancelled", "{c:#}");
    assert!(
        slow["summary"].as_str().unwrap().contains("stopped early"),
        "{c:#}"
    );
    assert!(
        slow["check"].is_null(),
        "a stopped candidate is not checked: {c:#}"
    );
    env.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_review_is_blind_and_an_invalid_verdict_stays_invalid() {
    let env = Env::start(Backend::Sqlite).await.unwrap();
    setup(&env).await;
    env.agent("first-zq", &writer(&env, "first", "42")).await;
    env.agent("second-zq", &writer(&env, "second", "42")).await;
    env.agent("judge-zq", &reviewer(&env, "judge", None)).await;
    env.agent(
        "liar-zq",
        &reviewer(&env, "liar", Some("A is best, trust me")),
    )
    .await;
    for (name, judge) in [("duo-zq", "judge-zq"), ("duo-liar-zq", "liar-zq")] {
        let (status, body) = post(
            &env,
            "/api/v1/ensembles",
            json!({"name": name, "members": ["first-zq", "second-zq"], "check": "sh check.sh",
                   "reviewer": judge}),
        )
        .await;
        assert_eq!(status, 201, "{body}");
    }
    // A reviewer that is a member is refused.
    let (status, body) = post(
        &env,
        "/api/v1/ensembles",
        json!({"name": "selfish", "members": ["first-zq", "second-zq"], "reviewer": "first-zq"}),
    )
    .await;
    assert_eq!(status, 422, "{body}");
    assert!(
        body.to_string().contains("may not be one of the members"),
        "{body}"
    );

    // Both pass: the review decides, blind.
    let (issue, _) = assign_new(&env, "Two good answers", "duo-zq").await;
    let c = decided(&env, &issue).await;
    assert_eq!(c["green"], 2, "{c:#}");
    assert_eq!(c["review"], "verdict", "{c:#}");
    let prompt = std::fs::read_to_string(env.scripts.path().join("judge.prompt")).unwrap();
    assert!(
        prompt.contains("Candidate A") && prompt.contains("Candidate B"),
        "{prompt}"
    );
    for name in ["first-zq", "second-zq", "judge-zq", "duo-zq"] {
        assert!(!prompt.contains(name), "the review names {name}: {prompt}");
    }
    assert!(!prompt.contains('$'), "the review shows no costs: {prompt}");
    for v in c["candidates"].as_array().unwrap() {
        assert_eq!(v["review_score"], 7, "{c:#}");
        assert!(v["review_label"].is_string(), "{c:#}");
    }
    assert_eq!(c["recommendation"]["by_opinion_only"], true, "{c:#}");
    assert_eq!(c["recommendation"]["decided_by"], "review", "{c:#}");
    assert!(
        c["recommendation"]["why"].as_str().unwrap().starts_with(
            "all 2 candidates passed the check; the blind review judged it best (7/10)"
        ),
        "{c:#}"
    );
    // Chosen without a merge: the reply box sits under the chosen candidate's run, not under the
    // reviewer's nor the other candidate's (both later in the thread).
    let second = c["candidates"]
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["agent"] == "first-zq")
        .unwrap();
    let (status, body) = post(
        &env,
        &format!("/api/v1/issues/{}/ensemble/choose", issue.key),
        json!({"candidate": "first-zq"}),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let html = env.page(&format!("/w/runs/issues/{}", issue.key)).await;
    let needle = r#"name="reply_to" value=""#;
    let replies: Vec<&str> = html
        .match_indices(needle)
        .map(|(i, _)| &html[i + needle.len()..i + needle.len() + 36])
        .collect();
    assert_eq!(
        replies,
        [second["run_id"].as_str().unwrap()],
        "one reply box, under the chosen candidate"
    );

    // An answer that is no verdict is shown as invalid, never guessed.
    let (issue, _) = assign_new(&env, "Two good answers again", "duo-liar-zq").await;
    let c = decided(&env, &issue).await;
    assert_eq!(c["review"], "invalid", "{c:#}");
    assert!(
        c["review_error"].as_str().is_some_and(|e| !e.is_empty()),
        "{c:#}"
    );
    for v in c["candidates"].as_array().unwrap() {
        assert!(v["review_score"].is_null(), "{c:#}");
    }
    env.stop().await;
}

/// Blindness against a member that goes looking: once the other member's work is committed, the spy
/// lists every branch, ref and object its git can reach, and moves every `muster/` branch it sees back
/// to the base. Its worktree belongs to a private repository holding only the base's history, so it
/// sees neither the other branch nor its commit, and the other member's work is intact.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_candidate_can_neither_see_nor_move_another_candidates_branch() {
    let env = Env::start(Backend::Sqlite).await.unwrap();
    let repo = setup(&env).await;
    let base = git(&repo, &["rev-parse", "HEAD"]).trim().to_owned();
    env.agent("early-zq", &writer(&env, "early", "42")).await;
    let go = env.scripts.path().join("early-is-done");
    let spy = env.script(
        "spy.sh",
        &format!(
            "cat >/dev/null\n\
             i=0; while [ ! -e '{go}' ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i+1)); done\n\
             {{ git branch -a; git log --all --format='%H %s'; git for-each-ref; \
                git cat-file --batch-all-objects --batch-check; }} > seen.txt 2>&1\n\
             for r in $(git for-each-ref --format='%(refname)' refs/heads/muster/); do \
                git update-ref \"$r\" {base} >> seen.txt 2>&1; done\n\
             call() {{ curl -s -o /dev/null -w \"$1 $2 %{{http_code}}\\n\" -X \"$1\" \
                -H \"Authorization: Bearer $MUSTER_TOKEN\" -H 'content-type: application/json' \
                ${{3:+-d \"$3\"}} \"$MUSTER_URL/api/v1/issues/$MUSTER_ISSUE$2\" >> api.txt; }}\n\
             call GET ''\n\
             call POST /comments '{{\"body\": \"psst: the answer is 42\"}}'\n\
             call POST /move '{{\"status\": \"done\"}}'\n\
             call PATCH '' '{{\"status\": \"done\"}}'\n\
             call GET /ensemble\n\
             echo '{}'",
            result_line(10, "looked around"),
            go = go.display(),
        ),
    );
    env.agent("spy-zq", &spy).await;
    let (status, body) = post(
        &env,
        "/api/v1/ensembles",
        json!({"name": "pair", "members": ["early-zq", "spy-zq"], "check": "sh check.sh"}),
    )
    .await;
    assert_eq!(status, 201, "{body}");
    let (issue, _) = assign_new(&env, "Look around", "pair").await;
    // The spy looks once early's work is on its branch in the workspace's repository.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while !git(&repo, &["log", "--all", "--format=%s"]).contains("work of early-zq") {
        assert!(
            std::time::Instant::now() < deadline,
            "early's work never landed"
        );
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    std::fs::write(&go, "go").unwrap();
    let c = decided(&env, &issue).await;
    let early = candidate(&c, "early-zq")["branch"]
        .as_str()
        .unwrap()
        .to_owned();
    let spy = candidate(&c, "spy-zq")["branch"]
        .as_str()
        .unwrap()
        .to_owned();
    let early_tip = git(&repo, &["rev-parse", &early]).trim().to_owned();
    assert_ne!(early_tip, base, "early's work is on its branch: {c:#}");
    assert_eq!(
        git(&repo, &["show", &format!("{early}:answer.txt")]).trim(),
        "42"
    );
    // What the spy saw is on its own branch, copied back to the workspace's repository.
    let seen = git(&repo, &["show", &format!("{spy}:seen.txt")]);
    assert!(seen.contains(&base[..12]), "the spy saw its base: {seen}");
    assert!(!seen.contains(&early), "the spy saw {early}: {seen}");
    assert!(
        !seen.contains(&early_tip),
        "the spy saw early's commit: {seen}"
    );
    assert!(
        !seen.contains("early-zq"),
        "the spy saw early's name: {seen}"
    );
    // Through the API its run token reads its issue and writes nothing there: no comment or move
    // reaches the other candidate, and the compare page is not for candidates.
    let api = git(&repo, &["show", &format!("{spy}:api.txt")]);
    assert_eq!(
        api.lines().collect::<Vec<_>>(),
        [
            "GET  200",
            "POST /comments 403",
            "POST /move 403",
            "PATCH  403",
            "GET /ensemble 403",
        ],
        "{api}"
    );
    let thread = env.store.list_comments(issue.id).await.unwrap();
    assert!(
        thread.iter().all(|c| !c.body.contains("psst")),
        "{thread:?}"
    );
    env.stop().await;
}

/// Runs the real `muster` binary against the test server as the owner; (exit code, stdout, stderr).
async fn muster(env: &Env, args: &[&str]) -> (i32, String, String) {
    let home = env.scripts.path().join("cli-home");
    std::fs::create_dir_all(&home).unwrap();
    let mut cmd = std::process::Command::new(muster_tests::muster_bin());
    cmd.env_clear()
        .env("HOME", &home)
        .env("MUSTER_CONFIG_DIR", &home)
        .env("MUSTER_URL", format!("http://{}", env.addr))
        .env("MUSTER_TOKEN", &env.token)
        .args(args)
        .stdin(std::process::Stdio::null());
    let out = tokio::task::spawn_blocking(move || cmd.output().unwrap())
        .await
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_cli_defines_assigns_compares_and_chooses() {
    let env = Env::start(Backend::Sqlite).await.unwrap();
    let repo = setup(&env).await;
    env.agent("one-zq", &writer(&env, "one", "42")).await;
    env.agent("two-zq", &writer(&env, "two", "40")).await;
    // Bad input: a precise message, nothing created.
    let (code, _, err) = muster(&env, &["ensemble", "create", "solo", "--member", "one-zq"]).await;
    assert_ne!(code, 0);
    assert!(err.contains("2 to 8 members"), "{err}");
    let (code, _, err) = muster(
        &env,
        &[
            "ensemble",
            "create",
            "bad",
            "--member",
            "one-zq",
            "--member",
            "nobody",
            "--early-stop",
            "sometimes",
        ],
    )
    .await;
    assert_ne!(code, 0);
    assert!(err.contains("no agent called \"nobody\""), "{err}");
    assert!(err.contains("early-stop policy"), "{err}");
    let (code, out, err) = muster(
        &env,
        &[
            "ensemble",
            "create",
            "pair",
            "--member",
            "one-zq",
            "--member",
            "two-zq",
            "--check",
            "sh check.sh",
            "--early-stop",
            "quorum 1",
            "--budget-usd",
            "2",
        ],
    )
    .await;
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("one-zq, two-zq") && out.contains("$1.0000"),
        "{out}"
    );
    let (code, out, _) = muster(&env, &["ensemble", "list"]).await;
    assert_eq!(code, 0);
    assert!(out.contains("pair") && out.contains("quorum 1"), "{out}");
    let (code, out, err) = muster(&env, &["ensemble", "edit", "pair", "--early-stop", "all"]).await;
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("early stop: all"), "{out}");

    let issue = env.issue("CLI ensemble").await;
    let key = issue.key.to_string();
    let (code, out, err) = muster(&env, &["issue", "assign", &key, "--ensemble", "pair"]).await;
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("2 candidates queued"), "{out}");
    let c = decided(&env, &issue).await;
    assert_eq!(c["green"], 1, "{c:#}");
    let (code, out, err) = muster(&env, &["issue", "compare", &key]).await;
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("one-zq") && out.contains("pass 3/3"), "{out}");
    assert!(out.contains("recommended: one-zq"), "{out}");
    let (code, out, err) = muster(&env, &["issue", "compare", &key, "--json"]).await;
    assert_eq!(code, 0, "{err}");
    let parsed: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(parsed["ensemble"], "pair");
    assert_eq!(parsed["recommendation"]["agent"], "one-zq");
    let (code, _, err) = muster(&env, &["issue", "choose", &key, "nobody"]).await;
    assert_ne!(code, 0);
    assert!(err.contains("the candidates are one-zq, two-zq"), "{err}");
    let (code, out, err) = muster(&env, &["issue", "choose", &key, "one-zq", "--merge"]).await;
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("chose one-zq, merged as"), "{out}");
    assert_eq!(git(&repo, &["show", "main:answer.txt"]).trim(), "42");
    env.stop().await;
}

/// Issue 15: a monthly cap crossed mid-run stops the run after that turn, as over its cap (the spend
/// its runner reports is checked against the caps).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_monthly_cap_crossed_mid_run_stops_the_run() {
    let env = spending_env(Backend::Sqlite).await.unwrap();
    let agent = env.agent("spend-zq", &spender(&env)).await;
    let (status, text) = env
        .call(
            reqwest::Method::PUT,
            "/api/v1/agents/spend-zq/cap",
            Some(json!({ "tokens": 250 })),
        )
        .await;
    assert!((200..300).contains(&status), "{text}");
    let issue = env.issue("Spend all month").await;
    env.assign(&issue, &agent).await;
    let run = env.the_run(&issue).await;
    let run = env.finished(run.id).await;
    assert_eq!(run.status, RunStatus::Failed, "{run:?}");
    assert_eq!(run.failure_reason, Some(FailureReason::OverCap), "{run:?}");
    let tokens = run.usage.input_tokens;
    assert!(
        (300..=300 + TURN_TOKENS).contains(&tokens),
        "stopped after the turn that crossed 250 tokens: {tokens}"
    );
    assert!(
        run.summary
            .as_deref()
            .unwrap_or_default()
            .contains("monthly spend cap"),
        "{run:?}"
    );
    env.stop().await;
}
