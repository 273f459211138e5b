//! Runs in a git worktree, with a run-scoped token: a stand-in agent (a shell script) that edits files,
//! calls the real `muster` binary to comment on and move its issue, and is refused on another issue.
//! Also: no survivors after a normal exit, and cancelling on unassignment.

use std::path::Path;

use muster::domain::*;
use muster_tests::engine::*;
use muster_tests::{Backend, git, git_commit_all};
use serde_json::json;

/// Runs git in `dir`, asserting success; returns stdout.
/// A repository with one commit (`README.md`, `src/lib.rs`) in `dir`.
fn repo_in(dir: &Path) -> std::path::PathBuf {
    let repo = dir.join("repo");
    std::fs::create_dir_all(repo.join("src")).unwrap();
    git(&repo, &["init", "-q", "-b", "main"]);
    std::fs::write(repo.join("README.md"), "# Demo\n").unwrap();
    std::fs::write(repo.join("src/lib.rs"), "pub fn one() -> u8 { 1 }\n").unwrap();
    git_commit_all(&repo, "first");
    repo
}

async fn worktree_run_with_its_own_token(backend: Backend) {
    let Some(env) = Env::start(backend).await else {
        return;
    };
    let repo = repo_in(env.scripts.path());
    env.use_repo(&repo).await;
    let base = git(&repo, &["rev-parse", "HEAD"]).trim().to_owned();
    let other = env.issue("Somebody else's").await;
    let out = env.scripts.path().join("out");
    let muster = muster_tests::muster_bin().display().to_string();
    let script = env.script(
        "agent.sh",
        &format!(
            r#"cat >/dev/null
set -u
out='{out}'
echo "$MUSTER_TOKEN" > "$out.token"
echo "my token is $MUSTER_TOKEN"
git status --porcelain > "$out.status"
echo 'pub fn two() -> u8 {{ 2 }}' >> src/lib.rs
echo 'notes' > NOTES.md
rm README.md
'{muster}' issue comment "$MUSTER_ISSUE" "hello from the agent" > "$out.comment" 2>&1 || exit 3
'{muster}' issue status "$MUSTER_ISSUE" in_review > "$out.status-move" 2>&1 || exit 4
if '{muster}' issue comment {other} "sneaky" > "$out.refused" 2>&1; then exit 5; fi
if '{muster}' issue create --title "more work" >> "$out.refused" 2>&1; then exit 6; fi
exit 0"#,
            out = out.display(),
            other = other.key,
        ),
    );
    let agent = env.agent("gitter", &script).await;
    let (issue, run) = env.assign_new("Add two", &agent).await;
    let run = env.finished(run.id).await;
    let read =
        |ext: &str| std::fs::read_to_string(format!("{}.{ext}", out.display())).unwrap_or_default();
    assert_eq!(
        run.status,
        RunStatus::Succeeded,
        "{run:?} {}",
        read("refused")
    );

    // The worktree: its line's branch (issue × agent) from HEAD, the brief hidden from git, removed at
    // the end; the commit the run made is recorded, and it is the branch's tip.
    let branch = format!("muster/{}-gitter", issue.key);
    assert_eq!(run.branch.as_deref(), Some(branch.as_str()));
    assert_eq!(run.base_commit.as_deref(), Some(base.as_str()));
    let tip = git(&repo, &["rev-parse", &branch]).trim().to_owned();
    assert_eq!(run.head_commit.as_deref(), Some(tip.as_str()));
    assert_eq!(read("status"), "", "the brief is not an untracked file");
    let worktree = Path::new(run.worktree.as_deref().unwrap());
    assert!(!worktree.exists(), "the worktree directory is removed");
    let files = git(&repo, &["ls-tree", "-r", "--name-only", &branch]);
    assert_eq!(
        files.lines().collect::<Vec<_>>(),
        ["NOTES.md", "src/lib.rs"],
        "the agent's work is committed on its branch, without the brief"
    );
    assert_eq!(
        git(&repo, &["rev-parse", "main"]).trim(),
        base,
        "main untouched"
    );
    let stat = run.diff_stat.as_deref().unwrap();
    assert!(stat.contains("3 files changed"), "{stat}");

    // The diff is the run's last event.
    let events = env.events(run.id).await;
    let diff = events.last().unwrap();
    assert_eq!(diff.kind, "diff", "{events:?}");
    assert_eq!(diff.payload["base"], base.as_str());
    assert_eq!(diff.payload["branch"], branch.as_str());
    assert_eq!(diff.payload["commit"], tip.as_str());
    assert_eq!(diff.payload["truncated"], false);
    assert_eq!(diff.payload["stat"], stat);
    let patch = diff.payload["patch"].as_str().unwrap();
    assert!(
        patch.contains("+pub fn two() -> u8 { 2 }") && patch.contains("-# Demo"),
        "{patch}"
    );
    assert!(!patch.contains("AGENTS.md"), "{patch}");

    // The token: acted as the agent on its issue, refused elsewhere, redacted, dead after the run.
    let comments = env.store.list_comments(issue.id).await.unwrap();
    let said = comments
        .iter()
        .find(|c| c.body == "hello from the agent")
        .unwrap_or_else(|| panic!("{comments:?} {}", read("comment")));
    assert_eq!(said.author, CommentAuthor::Agent(agent.id));
    assert_eq!(said.run_id, Some(run.id));
    let activity = env.store.list_activity(issue.id).await.unwrap();
    assert!(
        activity
            .iter()
            .any(|a| a.actor == CommentAuthor::Agent(agent.id)
                && a.detail.to_string().contains("in_review")),
        "the agent moved its issue itself: {activity:?}"
    );
    let refused = read("refused");
    let expected = format!(
        "this token belongs to run {} and may only act on issue {}",
        run.id, issue.key
    );
    assert_eq!(refused.matches(&expected).count(), 2, "{refused}");
    assert!(
        env.store.list_comments(other.id).await.unwrap().is_empty(),
        "nothing reached the other issue"
    );
    let token = read("token").trim().to_owned();
    assert!(token.starts_with("mst_"), "{token}");
    let log =
        serde_json::to_string(&events.iter().map(|e| &e.payload).collect::<Vec<_>>()).unwrap();
    assert!(!log.contains(&token), "the run's token leaked into its log");
    let after = reqwest::Client::new()
        .get(format!("http://{}/api/v1/issues/{}", env.addr, issue.key))
        .bearer_auth(&token)
        .send()
        .await
        .unwrap();
    assert_eq!(after.status(), 401, "the token dies with the run");
    env.stop().await;
}

both_backends!(
    worktree_run_with_its_own_token,
    an_agent_can_touch_neither_main_nor_another_runs_branch_nor_the_objects,
    follow_ups_advance_their_lines_branch,
);

/// A run token reads its workspace's issues (what `muster issue list` and `show` need) but writes only
/// its own issue's status and comments: not another issue, not other fields than the status, no tokens,
/// settings, agents or pages. (Issue 26: it also sees people and agents by name only, see
/// `tests/it/security/run_tokens.rs`.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_token_is_confined_to_its_issue() {
    let env = Env::start(Backend::Sqlite).await.unwrap();
    let other = env.issue("Not yours").await;
    let held = env.hold_run("holder", "Yours").await;
    let (issue, run) = (&held.issue, &held.run);
    let (url, token, key) = (held.url.as_str(), held.token.as_str(), held.key.as_str());
    assert_eq!(url, format!("http://{}", env.addr));
    let client = reqwest::Client::new();
    let held = &held;
    let call = |method: reqwest::Method, path: String, body: serde_json::Value| async move {
        let (status, text) = held.call(method, &path, body).await;
        (
            status,
            serde_json::from_str::<serde_json::Value>(&text).unwrap_or_default(),
        )
    };
    use reqwest::Method;
    let (status, body) = call(Method::GET, format!("/api/v1/issues/{key}"), json!({})).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        call(Method::GET, "/api/v1/agents".into(), json!({}))
            .await
            .0,
        200
    );
    assert_eq!(
        call(Method::GET, "/api/v1/members".into(), json!({}))
            .await
            .0,
        200
    );
    for path in [
        format!("/api/v1/issues/{}", other.key),
        "/api/v1/issues".to_owned(),
    ] {
        let (status, body) = call(Method::GET, path.clone(), json!({})).await;
        assert_eq!(status, 200, "GET {path}: {body}");
    }
    let refusal = format!(
        "this token belongs to run {} and may only act on issue {}",
        run.id, issue.key
    );
    for (method, path, body) in [
        (
            Method::POST,
            format!("/api/v1/issues/{}/move", other.key),
            json!({"status": "done"}),
        ),
        (Method::GET, "/api/v1/tokens".to_owned(), json!({})),
        (
            Method::POST,
            "/api/v1/tokens".to_owned(),
            json!({"name": "escape"}),
        ),
        (
            Method::PATCH,
            "/api/v1/workspace".to_owned(),
            json!({"repo_path": null}),
        ),
        (
            Method::POST,
            "/api/v1/agents".to_owned(),
            json!({"name": "x"}),
        ),
    ] {
        let (status, body) = call(method.clone(), path.clone(), body).await;
        assert_eq!(status, 403, "{method} {path}: {body}");
        assert_eq!(
            body["errors"]["token"][0],
            refusal.as_str(),
            "{method} {path}"
        );
    }
    let (status, body) = call(
        Method::PATCH,
        format!("/api/v1/issues/{key}"),
        json!({"assignee": ""}),
    )
    .await;
    assert_eq!(status, 403, "only the status may change: {body}");
    let page = client
        .get(format!("{url}/w/runs"))
        .bearer_auth(token)
        .send()
        .await
        .unwrap();
    assert_eq!(page.status(), 403, "pages are for people");
    env.state.cancel(run.id).await.unwrap();
    env.finished(run.id).await;
    let (status, _) = call(Method::GET, format!("/api/v1/issues/{key}"), json!({})).await;
    assert_eq!(status, 401, "revoked with the run");
    env.stop().await;
}

/// The agent exits 0 but leaves `sleep 1000 &` behind: afterwards nothing of its group is alive.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_survivors_after_a_normal_exit() {
    let env = Env::start(Backend::Sqlite).await.unwrap();
    let pids = env.scripts.path().join("pids");
    let script = env.script(
        "leaver.sh",
        &format!(
            "cat >/dev/null\nsleep 1000 &\n{}\necho done\nexit 0",
            report_to(&pids, "\"$(cut -d' ' -f5 /proc/$$/stat) $!\"")
        ),
    );
    let agent = env.agent("leaver", &script).await;
    let (_, run) = env.assign_new("Leave a mess", &agent).await;
    let run = env.finished(run.id).await;
    assert_eq!(run.status, RunStatus::Succeeded, "{run:?}");
    let pids = std::fs::read_to_string(&pids).unwrap();
    let pids: Vec<&str> = pids.split_whitespace().collect();
    assert_eq!(pids.len(), 2);
    // The pids it wrote are its PID namespace's own; the run records the group the runner started.
    let pgid = u32::try_from(run.pid.expect("the run recorded its pid")).unwrap();
    let id = run.id.to_string();
    poll("the background child to be gone", || async {
        run_processes(&id).is_empty().then_some(())
    })
    .await;
    assert!(
        muster_agents::process::group_members(pgid).is_empty(),
        "no process of the group is alive"
    );
    env.stop().await;
}

/// Unassigning the agent, or a person moving the issue to done, cancels the agent's live run.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unassigning_or_closing_cancels_the_live_run() {
    let env = Env::start(Backend::Sqlite).await.unwrap();
    let script = env.script(
        "ticker.sh",
        "cat >/dev/null\nwhile :; do echo tick; sleep 0.2; done",
    );
    let agent = env.agent("ticker", &script).await;
    let running = |issue: Issue| {
        let env = &env;
        async move {
            let run = env.the_run(&issue).await;
            poll("the run to be running", || async {
                let r = env.store.get_run(run.id).await.unwrap();
                (r.status == RunStatus::Running).then_some(r)
            })
            .await
        }
    };
    let first = env.issue("Unassign me").await;
    env.assign(&first, &agent).await;
    let run = running(first.clone()).await;
    let path = format!("/api/v1/issues/{}", first.key);
    env.api(reqwest::Method::PATCH, &path, json!({ "assignee": "" }))
        .await;
    let run = env.finished(run.id).await;
    assert_eq!(run.status, RunStatus::Cancelled, "{run:?}");

    let second = env.issue("Close me").await;
    env.assign(&second, &agent).await;
    let run = running(second.clone()).await;
    let path = format!("/api/v1/issues/{}/move", second.key);
    env.api(reqwest::Method::POST, &path, json!({ "status": "done" }))
        .await;
    let run = env.finished(run.id).await;
    assert_eq!(run.status, RunStatus::Cancelled, "{run:?}");
    let second = env.store.get_issue_by_id(second.id).await.unwrap();
    assert_eq!(second.status, IssueStatus::Done, "the person's move stands");
    env.stop().await;
}

/// The issue's runs once none is live and there are at least `count`.
async fn runs_settled(env: &Env, issue: &Issue, count: usize) -> Vec<Run> {
    poll(&format!("{count} runs of {} to end", issue.key), || async {
        let runs = env.store.list_runs_for_issue(issue.id).await.unwrap();
        (runs.len() >= count && runs.iter().all(|r| r.status.is_terminal())).then_some(runs)
    })
    .await
}

/// An agent owns nothing of the workspace's repository: its attempts to point the commit at `main`
/// (its worktree's `HEAD`), to move another run's branch (a ref file, `update-ref`, a push into the
/// repository) and to delete the repository's objects all fail; `main`, the other line's branch and
/// every object are intact, and the attacker's work lands on its own line only.
async fn an_agent_can_touch_neither_main_nor_another_runs_branch_nor_the_objects(backend: Backend) {
    let Some(env) = Env::start(backend).await else {
        return;
    };
    // Outside the scripts folder, which these tests let agents write (as `--agent-rw-path` would).
    let home = tempfile::tempdir().unwrap();
    let repo = repo_in(home.path());
    env.use_repo(&repo).await;
    let base = git(&repo, &["rev-parse", "main"]).trim().to_owned();
    let victim_script = env.script("victim.sh", "cat >/dev/null\necho real > victim.txt");
    let victim = env.agent("victim", &victim_script).await;
    let first = env.issue("The victim's work").await;
    env.assign(&first, &victim).await;
    let victim_run = env.finished(env.the_run(&first).await.id).await;
    assert_eq!(victim_run.status, RunStatus::Succeeded, "{victim_run:?}");
    let victim_branch = format!("muster/{}-victim", first.key);
    let victim_commit = victim_run.head_commit.clone().unwrap();
    assert_eq!(
        git(&repo, &["rev-parse", &victim_branch]).trim(),
        victim_commit
    );

    let out = env.scripts.path().join("attack.out");
    let r = repo.join(".git");
    let attack = env.script(
        "attacker.sh",
        &format!(
            r#"cat >/dev/null
exec >'{out}' 2>&1
echo mine > mine.txt && git add mine.txt && git commit -qm 'attacker commit' && echo COMMITTED
gd=$(git rev-parse --absolute-git-dir)
echo "gitdir $gd"
echo /nonexistent > "$(git rev-parse --git-common-dir)/objects/info/alternates" && echo ALTERNATES-WRITTEN
echo 'ref: refs/heads/main' > "$gd/HEAD" && echo HEAD-WRITTEN
echo 'ref: refs/heads/main' > '{r}/HEAD' && echo REPO-HEAD-WRITTEN
echo '{base}' > '{r}/refs/heads/{victim_branch}' && echo REF-WRITTEN
git --git-dir='{r}' update-ref refs/heads/{victim_branch} '{base}' && echo UPDATE-REF-DONE
git push -q '{repo}' HEAD:refs/heads/{victim_branch} && echo PUSHED
git push -q -f '{repo}' HEAD:refs/heads/main && echo PUSHED-MAIN
for f in $(find '{r}/objects' -type f); do rm -f "$f" && echo "DELETED $f"; done
echo backdoor > hijack.txt
echo done"#,
            out = out.display(),
            r = r.display(),
            repo = repo.display(),
        ),
    );
    let attacker = env.agent("hijack", &attack).await;
    let second = env.issue("The attacker's work").await;
    env.assign(&second, &attacker).await;
    let run = env.finished(env.the_run(&second).await.id).await;
    let said = std::fs::read_to_string(&out).unwrap_or_default();
    assert!(said.contains("done"), "the attack ran to its end: {said}");
    assert!(
        said.contains("HEAD-WRITTEN"),
        "its own HEAD is its to write: {said}"
    );
    assert!(
        said.contains("COMMITTED") && said.contains("ALTERNATES-WRITTEN"),
        "{said}"
    );
    for success in [
        "REPO-HEAD-WRITTEN",
        "REF-WRITTEN",
        "UPDATE-REF-DONE",
        "PUSHED",
        "DELETED",
    ] {
        assert!(!said.contains(success), "{success}: {said}");
    }
    assert_eq!(run.status, RunStatus::Succeeded, "{run:?} {said}");

    assert_eq!(
        git(&repo, &["rev-parse", "main"]).trim(),
        base,
        "main untouched"
    );
    assert_eq!(
        git(&repo, &["symbolic-ref", "HEAD"]).trim(),
        "refs/heads/main"
    );
    assert_eq!(
        git(&repo, &["rev-parse", &victim_branch]).trim(),
        victim_commit,
        "the other run's branch untouched"
    );
    let fsck = std::process::Command::new("git")
        .args(["fsck", "--full", "--no-dangling"])
        .current_dir(&repo)
        .output()
        .unwrap();
    assert!(
        fsck.status.success(),
        "every object is still there: {}",
        String::from_utf8_lossy(&fsck.stderr)
    );
    let line = format!("muster/{}-hijack", second.key);
    let files = git(&repo, &["ls-tree", "-r", "--name-only", &line]);
    assert!(files.lines().any(|f| f == "hijack.txt"), "{files}");
    assert!(files.lines().any(|f| f == "mine.txt"), "{files}");
    // Its own commit is kept: the server read its private repository with the alternates it set, not
    // the ones the agent wrote.
    let log = git(&repo, &["log", "--format=%s", &line]);
    assert!(log.lines().any(|l| l == "attacker commit"), "{log}");
    assert_eq!(
        git(&repo, &["rev-parse", &line]).trim(),
        run.head_commit.as_deref().unwrap()
    );
    env.stop().await;
}

/// One branch per line of work: follow-ups of an agent on an issue, posted within the same second,
/// advance its one branch (the first run's commit stays under the follow-up's), and a mentioned agent
/// works on a line of its own; no run fails on a branch name, and no other branch is made.
async fn follow_ups_advance_their_lines_branch(backend: Backend) {
    let Some(env) = Env::start(backend).await else {
        return;
    };
    let repo = repo_in(env.scripts.path());
    env.use_repo(&repo).await;
    let body = "cat >/dev/null\necho \"$MUSTER_RUN_ID\" >> log.txt";
    let coder = env.agent("coder", &env.script("coder.sh", body)).await;
    let helper = env.agent("helper", &env.script("helper.sh", body)).await;
    let issue = env.issue("Work in lines").await;
    env.assign(&issue, &coder).await;
    let first = env.finished(env.the_run(&issue).await.id).await;
    assert_eq!(first.status, RunStatus::Succeeded, "{first:?}");
    env.comment(&issue, "one more thing").await;
    env.comment(&issue, "and another").await;
    env.comment(&issue, "@helper have a look too").await;
    let runs = runs_settled(&env, &issue, 3).await;
    for run in &runs {
        assert_eq!(run.status, RunStatus::Succeeded, "{runs:#?}");
    }
    let line = format!("muster/{}-coder", issue.key);
    let coder_runs: Vec<&Run> = runs.iter().filter(|r| r.agent_id == coder.id).collect();
    assert!(coder_runs.len() >= 2, "{runs:#?}");
    for run in &coder_runs {
        assert_eq!(run.branch.as_deref(), Some(line.as_str()), "{run:?}");
    }
    let last = coder_runs.last().unwrap();
    let tip = git(&repo, &["rev-parse", &line]).trim().to_owned();
    assert_eq!(last.head_commit.as_deref(), Some(tip.as_str()));
    let ancestor = std::process::Command::new("git")
        .args([
            "merge-base",
            "--is-ancestor",
            first.head_commit.as_deref().unwrap(),
            &tip,
        ])
        .current_dir(&repo)
        .status()
        .unwrap();
    assert!(
        ancestor.success(),
        "the first run's commit is under the follow-up's"
    );
    let log = git(&repo, &["show", &format!("{line}:log.txt")]);
    let expected: Vec<String> = coder_runs.iter().map(|r| r.id.to_string()).collect();
    assert_eq!(log.lines().collect::<Vec<_>>(), expected, "{log}");

    let helper_line = format!("muster/{}-helper", issue.key);
    let helper_run = runs.iter().find(|r| r.agent_id == helper.id).unwrap();
    assert_eq!(helper_run.branch.as_deref(), Some(helper_line.as_str()));
    // The issue's API names each line with its branch, its commit and its latest run.
    let shown = env.get(&format!("/api/v1/issues/{}", issue.key)).await;
    assert_eq!(
        shown["lines"],
        json!([
            {"agent": "coder", "branch": line, "commit": tip, "run_id": last.id.to_string()},
            {"agent": "helper", "branch": helper_line, "commit": helper_run.head_commit,
             "run_id": helper_run.id.to_string()},
        ]),
        "{shown:#}"
    );
    let branches = git(
        &repo,
        &[
            "for-each-ref",
            "--format=%(refname:short)",
            "refs/heads/muster",
        ],
    );
    let mut branches: Vec<&str> = branches.lines().collect();
    branches.sort_unstable();
    let mut want = vec![line.as_str(), helper_line.as_str()];
    want.sort_unstable();
    assert_eq!(branches, want);

    // Deleting the issue prunes its lines' branches, but not one a person moved since.
    git(
        &repo,
        &["update-ref", &format!("refs/heads/{helper_line}"), "main"],
    );
    let (status, text) = env
        .call(
            reqwest::Method::DELETE,
            &format!("/api/v1/issues/{}", issue.key),
            None,
        )
        .await;
    assert!((200..300).contains(&status), "{text}");
    let branches = git(
        &repo,
        &[
            "for-each-ref",
            "--format=%(refname:short)",
            "refs/heads/muster",
        ],
    );
    assert_eq!(branches.lines().collect::<Vec<_>>(), [helper_line.as_str()]);
    env.stop().await;
}
