//! Issue 15: usage and spend, end to end on both backends. Runs go through the real engine (embedded
//! runner) with stand-in agents — shell scripts printing a Claude-style result line with known usage —
//! and are then moved to past days through the store's test hook. Every expected figure is computed here
//! from the scripts' constants, never read back from the code under test:
//! - the API (`/api/v1/usage`), `muster usage` (table, `--json`, `--csv`) and the Usage page agree on
//!   the exact totals, per agent, per runtime and per day;
//! - monthly caps: an agent's token cap and the workspace's USD cap refuse the next run with the reason
//!   on the run, its issue and in the owners'/admins' inbox; 80% of a cap warns once a month.

use std::time::Duration;

use chrono::{TimeDelta, Utc};
use muster::domain::*;
use muster::runner::executor::RunTiming;
use muster_tests::engine::Env;
use muster_tests::seed;
use muster_tests::{Backend, TestDb};
use serde_json::{Value, json};

/// The owner's password.
pub(crate) use muster_tests::seed::PASSWORD;
/// The longest a stand-in run may take.
const DEADLINE: Duration = Duration::from_secs(60);

/// What one stand-in run reports.
#[derive(Clone, Copy)]
pub(crate) struct Spend {
    pub(crate) input: i64,
    pub(crate) output: i64,
    pub(crate) cache_read: i64,
    pub(crate) cache_write: i64,
    pub(crate) cost: f64,
}

impl Spend {
    fn tokens(&self) -> i64 {
        self.input + self.output + self.cache_read + self.cache_write
    }

    /// A Claude-style `result` line reporting this usage.
    fn line(&self) -> String {
        json!({
            "type": "result", "subtype": "success", "is_error": false, "result": "Done.",
            "session_id": "s-1", "total_cost_usd": self.cost,
            "usage": {
                "input_tokens": self.input, "output_tokens": self.output,
                "cache_read_input_tokens": self.cache_read,
                "cache_creation_input_tokens": self.cache_write,
            }
        })
        .to_string()
    }
}

/// `4220` → `"4,220"`: how pages show token counts (written out here rather than taken from the code
/// under test). For the counts these tests make (under a million).
fn grouped(n: i64) -> String {
    assert!(
        (0..1_000_000).contains(&n),
        "grouped() is for counts under a million, not {n}"
    );
    if n < 1000 {
        n.to_string()
    } else {
        format!("{},{:03}", n / 1000, n % 1000)
    }
}

pub(crate) const ALPHA: Spend = Spend {
    input: 1000,
    output: 200,
    cache_read: 30,
    cache_write: 10,
    cost: 0.25,
};
pub(crate) const BETA: Spend = Spend {
    input: 400,
    output: 100,
    cache_read: 0,
    cache_write: 0,
    cost: 0.5,
};

/// The run engine's [`Env`] on Ada's `acme` (she signs in with [`PASSWORD`]), with the usage tests' own
/// helpers.
pub(crate) struct World(Env);

impl std::ops::Deref for World {
    type Target = Env;

    fn deref(&self) -> &Env {
        &self.0
    }
}

impl World {
    pub(crate) async fn start(backend: Backend) -> Option<World> {
        Self::start_with(backend, |_| {}).await
    }

    /// [`World::start`] with the server's configuration changed by `tweak`.
    pub(crate) async fn start_with(
        backend: Backend,
        tweak: impl FnOnce(&mut muster::config::Config),
    ) -> Option<World> {
        let db = TestDb::new(backend).await?;
        let store = db.store().await;
        let ada = seed::person("ada@acme.test", "Ada");
        let (owner, ws) = seed::owner_of(&store, ada, seed::ACME).await;
        let env = Env::boot_with(db, store, ws, owner.id, tweak, RunTiming::default()).await;
        Some(World(env))
    }

    /// `PUT path` with the JSON `body` as the owner, which must answer `status`: the answer's text.
    pub(crate) async fn put(&self, path: &str, body: Value, status: u16) -> String {
        let (got, text) = self.call(reqwest::Method::PUT, path, Some(body)).await;
        assert_eq!(got, status, "PUT {path}: {text}");
        text
    }

    pub(crate) async fn json(&self, path: &str) -> Value {
        serde_json::from_str(&self.page(path).await).unwrap()
    }

    /// A custom agent whose run prints `spend`'s result line.
    pub(crate) async fn agent(&self, name: &str, spend: Spend) {
        self.agent_printing(name, &spend.line()).await;
    }

    /// A custom agent whose run prints `output`.
    pub(crate) async fn agent_printing(&self, name: &str, output: &str) {
        self.script_agent(name, &format!("cat <<'EOF'\n{output}\nEOF\n"))
            .await;
    }

    /// Files a todo issue assigned to `agent` (which queues a run) and returns the run once it ended
    /// and the issue settled in `settled`.
    pub(crate) async fn run(&self, title: &str, agent: &str, settled: IssueStatus) -> Run {
        let key = self.file_assigned(title, "", agent).await;
        self.settled(&key, settled, DEADLINE).await
    }

    /// Moves `run` to noon UTC `days_ago` days before today.
    pub(crate) async fn move_to(&self, run: &Run, days_ago: i64) -> chrono::NaiveDate {
        let day = Utc::now().date_naive() - TimeDelta::days(days_ago);
        let at = day.and_hms_opt(12, 0, 0).unwrap().and_utc();
        muster::store::testing::move_run_to(&self.db.url, run.id, at)
            .await
            .unwrap();
        day
    }

    pub(crate) async fn stop(self) {
        self.0.stop().await;
    }
}

/// Sums of `runs` of one spend each, as the API writes them.
fn expect_totals(runs: &[Spend]) -> Value {
    let sum = |f: fn(&Spend) -> i64| runs.iter().map(f).sum::<i64>();
    json!({
        "runs": runs.len(),
        "input_tokens": sum(|s| s.input),
        "output_tokens": sum(|s| s.output),
        "cache_read_tokens": sum(|s| s.cache_read),
        "cache_write_tokens": sum(|s| s.cache_write),
        "tokens": sum(Spend::tokens),
        "cost_usd": runs.iter().map(|s| s.cost).sum::<f64>(),
    })
}

/// Asserts that `got` has every field of `want` with the same value.
#[track_caller]
fn assert_has(got: &Value, want: &Value) {
    for (k, v) in want.as_object().unwrap() {
        assert_eq!(&got[k], v, "{k} in {got}");
    }
}

/// A CSV document as maps from header to cell.
fn csv_rows(text: &str) -> Vec<std::collections::HashMap<String, String>> {
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    lines
        .map(|l| {
            header
                .iter()
                .zip(l.split(','))
                .map(|(h, c)| ((*h).to_owned(), c.to_owned()))
                .collect()
        })
        .collect()
}

async fn totals_agree_on_the_api_the_cli_and_the_page(backend: Backend) {
    let Some(w) = World::start(backend).await else {
        return;
    };
    w.agent("alpha", ALPHA).await;
    w.agent("beta", BETA).await;
    let mut days = Vec::new();
    for (title, agent, days_ago) in [
        ("One", "alpha", Some(2)),
        ("Two", "alpha", Some(6)),
        ("Three", "alpha", None),
        ("Four", "beta", Some(1)),
        ("Five", "beta", Some(20)),
        ("Six", "alpha", Some(40)),
    ] {
        let run = w.run(title, agent, IssueStatus::InReview).await;
        assert_eq!(run.status, RunStatus::Succeeded, "{run:?}");
        let day = match days_ago {
            Some(n) => w.move_to(&run, n).await,
            None => Utc::now().date_naive(),
        };
        days.push((agent, day));
    }

    // Seven days: alpha's runs 1-3 and beta's run 4.
    let week = w.json("/api/v1/usage?since=7d&by=agent").await;
    assert_has(&week["total"], &expect_totals(&[ALPHA, ALPHA, ALPHA, BETA]));
    assert_eq!(week["total"]["cost"], "$1.2500");
    let groups = week["groups"].as_array().unwrap();
    assert_eq!(groups.len(), 2, "{week}");
    // Most expensive first.
    assert_eq!(groups[0]["label"], "alpha");
    assert_has(&groups[0], &expect_totals(&[ALPHA, ALPHA, ALPHA]));
    assert_eq!(groups[0]["succeeded"], 3);
    assert_eq!(groups[0]["success_rate"], 1.0);
    assert_eq!(groups[0]["delivered_issues"], 3);
    assert_eq!(groups[0]["cost_per_run_usd"], 0.25);
    assert_eq!(groups[1]["label"], "beta");
    assert_has(&groups[1], &expect_totals(&[BETA]));
    let week_days = week["days"].as_array().unwrap();
    assert_eq!(week_days.len(), 7, "{week}");
    for (agent, day) in &days[..4] {
        let entry = week_days
            .iter()
            .find(|d| d["day"] == day.to_string())
            .unwrap_or_else(|| panic!("no {day} in {week}"));
        let spend = if *agent == "alpha" { ALPHA } else { BETA };
        assert_has(entry, &expect_totals(&[spend]));
    }

    // Thirty days add beta's run 5 (run 6 is older); by runtime, all are custom.
    let month = w.json("/api/v1/usage?since=30d&by=runtime").await;
    assert_has(
        &month["total"],
        &expect_totals(&[ALPHA, ALPHA, ALPHA, BETA, BETA]),
    );
    assert_eq!(month["groups"].as_array().unwrap().len(), 1, "{month}");
    assert_eq!(month["groups"][0]["label"], "custom");
    // One agent, a custom period ending yesterday (alpha's runs 1 and 2).
    let until = (Utc::now().date_naive() - TimeDelta::days(1)).to_string();
    let custom = w
        .json(&format!("/api/v1/usage?since=7d&until={until}&agent=alpha"))
        .await;
    assert_has(&custom["total"], &expect_totals(&[ALPHA, ALPHA]));
    // Bad input says what is accepted.
    let (status, text) = w
        .call(
            reqwest::Method::GET,
            "/api/v1/usage?since=week&by=colour",
            None,
        )
        .await;
    assert_eq!(status, 422, "{text}");
    assert!(text.contains("today, a number of days"), "{text}");
    assert!(text.contains("colour"), "{text}");

    // The CLI: CSV, JSON and the table say the same.
    let csv = w.muster(&["usage", "--since", "7d", "--csv"]).await;
    let rows = csv_rows(&csv);
    assert_eq!(rows.len(), 2, "{csv}");
    assert_eq!(rows[0]["label"], "alpha");
    assert_eq!(rows[0]["runs"], "3");
    assert_eq!(rows[0]["input_tokens"], (3 * ALPHA.input).to_string());
    assert_eq!(rows[0]["tokens"], (3 * ALPHA.tokens()).to_string());
    assert_eq!(rows[0]["cost_usd"], (3.0 * ALPHA.cost).to_string());
    assert_eq!(rows[1]["label"], "beta");
    assert_eq!(rows[1]["cost_usd"], BETA.cost.to_string());
    let json: Value =
        serde_json::from_str(&w.muster(&["usage", "--since", "30d", "--json"]).await).unwrap();
    assert_eq!(
        json["total"]["cost_usd"],
        3.0 * ALPHA.cost + 2.0 * BETA.cost
    );
    let text = w.muster(&["usage", "--since", "7d", "--by", "agent"]).await;
    let tokens = 3 * ALPHA.tokens() + BETA.tokens();
    assert!(
        text.contains(&format!("total: 4 runs, {tokens} tokens")),
        "{text}"
    );
    assert!(text.contains("$1.2500"), "{text}");
    assert!(text.contains("alpha") && text.contains("beta"), "{text}");

    // The page: the same totals, a chart with a label per agent, and its table view.
    let page = w.page("/w/acme/usage?since=7d").await;
    assert!(page.contains("$1.2500"), "{page}");
    assert!(page.contains(&grouped(tokens)), "{page}");
    assert!(page.contains("<svg"), "{page}");
    assert!(page.contains("role=\"img\""), "{page}");
    assert!(
        page.contains(">alpha<") && page.contains(">beta<"),
        "{page}"
    );

    // alpha's page: its runs (newest first, paged, filtered by status) and its 30-day sparkline.
    let section = w.page("/w/acme/agents/alpha/usage").await;
    assert_eq!(section.matches("/w/acme/runs/").count(), 4, "{section}");
    let spark = format!(
        "Daily cost over the last 30 days, ${:.4} in all",
        3.0 * ALPHA.cost
    );
    assert!(section.contains(&spark), "{section}");
    let failed = w.page("/w/acme/agents/alpha/usage?status=failed").await;
    assert!(failed.contains("No runs."), "{failed}");
    let paged = w.page("/w/acme/agents/alpha/usage?limit=3").await;
    assert_eq!(paged.matches("/w/acme/runs/").count(), 3, "{paged}");
    assert!(paged.contains("limit=23"), "{paged}");
    // An issue's side panel sums its runs.
    let issue = w.page("/w/acme/issues/ACM-1").await;
    assert!(
        issue.contains(&format!(
            "1 run · ${:.4} · {} tokens",
            ALPHA.cost,
            grouped(ALPHA.tokens())
        )),
        "{issue}"
    );
    w.stop().await;
}

both_backends!(
    totals_agree_on_the_api_the_cli_and_the_page,
    caps_refuse_runs_and_warn_once,
    workspace_rates_price_runs,
    a_cap_reached_while_queued_refuses_the_claim,
);

/// The owner's inbox items of `kind`.
async fn inbox_of(w: &World, kind: InboxKind) -> Vec<InboxItem> {
    w.store
        .list_inbox(w.ws.id, w.owner)
        .await
        .unwrap()
        .into_iter()
        .filter(|i| i.kind == kind)
        .collect()
}

async fn caps_refuse_runs_and_warn_once(backend: Backend) {
    let Some(w) = World::start(backend).await else {
        return;
    };
    w.agent("gamma", ALPHA).await;
    let month = Utc::now().format("%B %Y").to_string();
    // gamma: at most 1000 tokens a month; the workspace: $0.30.
    w.put("/api/v1/agents/gamma/cap", json!({ "tokens": 1000 }), 200)
        .await;
    w.put("/api/v1/usage/caps", json!({ "usd": 0.3 }), 200)
        .await;
    // Bad caps are refused precisely.
    let text = w.put("/api/v1/usage/caps", json!({ "usd": -1 }), 422).await;
    assert!(text.contains("\"usd\""), "{text}");

    // The first run starts (nothing spent yet) and goes past both 80% marks: one warning each.
    let first = w.run("First", "gamma", IssueStatus::InReview).await;
    assert_eq!(first.status, RunStatus::Succeeded, "{first:?}");
    let warnings = inbox_of(&w, InboxKind::CapWarning).await;
    assert_eq!(warnings.len(), 2, "{warnings:?}");
    let used = ALPHA.tokens() * 100 / 1000;
    assert!(
        warnings.iter().any(|i| i.message.starts_with(&format!(
            "gamma has used {used}% of its monthly cap for {month} (UTC): {} of 1000 tokens.",
            ALPHA.tokens()
        ))),
        "{warnings:?}"
    );
    let ws_used = (ALPHA.cost * 100.0 / 0.3).floor();
    assert!(
        warnings.iter().any(|i| i.message.starts_with(&format!(
            "The workspace has used {ws_used}% of its monthly cap for {month} (UTC): ${:.2} of $0.30.",
            ALPHA.cost
        ))),
        "{warnings:?}"
    );

    // The second is refused: gamma's tokens are over its cap. The reason is on the run, the API, the
    // issue page and in the inbox.
    let refused = w.run("Second", "gamma", IssueStatus::Todo).await;
    let reason = format!(
        "gamma reached its monthly cap for {month} (UTC): {} of 1000 tokens",
        ALPHA.tokens()
    );
    assert_eq!(refused.status, RunStatus::Failed, "{refused:?}");
    assert_eq!(refused.failure_reason, Some(FailureReason::OverCap));
    assert_eq!(refused.summary.as_deref(), Some(reason.as_str()));
    assert_eq!(refused.usage, Usage::default());
    let api = w.json(&format!("/api/v1/runs/{}", refused.id)).await;
    assert!(
        api["failure_message"]
            .as_str()
            .unwrap()
            .starts_with(&format!("Over a monthly spend cap: {reason}")),
        "{api}"
    );
    let over: Vec<InboxItem> = inbox_of(&w, InboxKind::OverBudget)
        .await
        .into_iter()
        .filter(|i| i.run_id == Some(refused.id))
        .collect();
    assert_eq!(over.len(), 1, "{over:?}");
    assert!(over[0].user_id.is_none(), "addressed to owners and admins");
    assert!(over[0].message.contains(&reason), "{over:?}");
    let issue = w.store.get_issue_by_id(refused.issue_id).await.unwrap();
    let page = w.page(&format!("/w/acme/issues/{}", issue.key)).await;
    assert!(page.contains("reached its monthly cap"), "{page}");

    // Without gamma's cap, the workspace's ($0.25 of $0.30 spent) lets one more run start; the one
    // after is refused by the workspace's cap, and no second warning comes.
    w.put("/api/v1/agents/gamma/cap", json!({}), 200).await;
    let third = w.run("Third", "gamma", IssueStatus::InReview).await;
    assert_eq!(third.status, RunStatus::Succeeded, "{third:?}");
    let fourth = w.run("Fourth", "gamma", IssueStatus::Todo).await;
    assert_eq!(fourth.failure_reason, Some(FailureReason::OverCap));
    assert_eq!(
        fourth.summary.as_deref(),
        Some(
            format!("the workspace reached its monthly cap for {month} (UTC): $0.50 of $0.30")
                .as_str()
        )
    );
    assert_eq!(inbox_of(&w, InboxKind::CapWarning).await.len(), 2);
    let caps = w.json("/api/v1/usage/caps").await;
    assert_eq!(caps["workspace"]["usd"], 0.3);
    assert_eq!(caps["workspace"]["spent_usd"], 2.0 * ALPHA.cost);
    assert_eq!(caps["agents"][0]["agent"], "gamma");
    assert_eq!(caps["agents"][0]["tokens"], Value::Null);
    assert_eq!(caps["agents"][0]["spent_tokens"], 2 * ALPHA.tokens());
    let section = w.page("/w/acme/agents/gamma/usage").await;
    assert!(
        section.contains(&format!(
            "${:.4} · {} tokens",
            2.0 * ALPHA.cost,
            grouped(2 * ALPHA.tokens())
        )),
        "{section}"
    );
    assert!(section.contains("no monthly cap"), "{section}");
    w.stop().await;
}

/// A run whose CLI reports tokens but no cost is priced from the workspace's own rate table once there
/// is one (the runner gets it with the order), and is "unpriced" while no table knows its model.
async fn workspace_rates_price_runs(backend: Backend) {
    let Some(w) = World::start(backend).await else {
        return;
    };
    let (input, output, cache_read) = (12_000_i64, 3_000_i64, 5_000_i64);
    let lines = [
        json!({ "type": "system", "subtype": "init", "session_id": "s-1", "model": "house-model-7" }),
        json!({
            "type": "result", "subtype": "success", "is_error": false, "result": "Done.",
            "session_id": "s-1",
            "usage": { "input_tokens": input, "output_tokens": output,
                       "cache_read_input_tokens": cache_read, "cache_creation_input_tokens": 0 }
        }),
    ]
    .map(|l| l.to_string())
    .join("\n");
    w.agent_printing("delta", &lines).await;

    let before = w.run("Unpriced", "delta", IssueStatus::InReview).await;
    assert_eq!(before.status, RunStatus::Succeeded, "{before:?}");
    assert_eq!(before.usage.cost_usd, 0.0);
    assert!(before.usage.cost_unknown, "no built-in price: {before:?}");

    w.put(
        "/api/v1/rates",
        json!({ "rates": { "house-model": { "input": 2.0, "output": 10.0, "cached": 0.5 } } }),
        200,
    )
    .await;
    let after = w.run("Priced", "delta", IssueStatus::InReview).await;
    assert_eq!(after.status, RunStatus::Succeeded, "{after:?}");
    let want = (input as f64 * 2.0 + output as f64 * 10.0 + cache_read as f64 * 0.5) / 1e6;
    assert!(
        (after.usage.cost_usd - want).abs() < 1e-9,
        "priced {} instead of {want}: {after:?}",
        after.usage.cost_usd
    );
    assert!(!after.usage.cost_unknown, "{after:?}");
    assert!(after.usage.cost_estimated, "{after:?}");
    assert!(!before.usage.cost_estimated, "{before:?}");
    // The API and the run page say it is an estimate.
    let api = w.json(&format!("/api/v1/runs/{}", after.id)).await;
    assert_eq!(api["cost"], format!("${want:.4} · estimated"), "{api}");
    assert_eq!(api["cost_estimated"], true, "{api}");
    let page = w.page(&format!("/w/acme/runs/{}", after.id)).await;
    assert!(page.contains(&format!("${want:.4} · estimated")), "{page}");
    w.stop().await;
}

/// A run queued before a cap was reached does not start once it is: the claim refuses it (the run that
/// reached the cap was live meanwhile; the agent runs one at a time, so the second waited in the queue).
/// Files a to-do issue assigned to `agent` through the API, and reads it back from the store.
async fn file_assigned(w: &World, title: &str, agent: &str) -> Issue {
    let new = json!({ "title": title, "status": "todo", "assignee": agent });
    let (status, text) = w
        .call(reqwest::Method::POST, "/api/v1/issues", Some(new))
        .await;
    assert_eq!(status, 201, "{text}");
    let filed: Value = serde_json::from_str(&text).unwrap();
    let key = IssueKey::parse(filed["key"].as_str().unwrap()).unwrap();
    w.store.get_issue(w.ws.id, &key).await.unwrap()
}

async fn a_cap_reached_while_queued_refuses_the_claim(backend: Backend) {
    let Some(w) = World::start(backend).await else {
        return;
    };
    let go = w.scripts.path().join("finish");
    w.script_agent(
        "queued",
        &format!(
            "echo '{}'\ni=0; while [ ! -e '{}' ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i+1)); done\n",
            ALPHA.line(),
            go.display()
        ),
    )
    .await;
    let first = file_assigned(&w, "First", "queued").await;
    // The first run has reported what it spent and is still live.
    let deadline = tokio::time::Instant::now() + DEADLINE;
    loop {
        let runs = w.store.list_runs_for_issue(first.id).await.unwrap();
        if runs
            .first()
            .is_some_and(|r| r.status == RunStatus::Running && r.usage.tokens() > 0)
        {
            break;
        }
        assert!(tokio::time::Instant::now() < deadline, "{runs:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // No cap yet: the second run is queued behind the first.
    let second = file_assigned(&w, "Second", "queued").await;
    let queued = w.store.list_runs_for_issue(second.id).await.unwrap();
    assert_eq!(queued.len(), 1, "{queued:?}");
    assert_eq!(queued[0].status, RunStatus::Queued, "{queued:?}");
    // Now the agent gets a cap its live run has already passed, and the first run finishes.
    w.put("/api/v1/agents/queued/cap", json!({ "tokens": 1000 }), 200)
        .await;
    std::fs::write(&go, "go").unwrap();
    let deadline = tokio::time::Instant::now() + DEADLINE;
    let refused = loop {
        let runs = w.store.list_runs_for_issue(second.id).await.unwrap();
        if let Some(run) = runs.first().filter(|r| r.status.is_terminal()) {
            break run.clone();
        }
        assert!(tokio::time::Instant::now() < deadline, "{runs:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let first_run = w.store.list_runs_for_issue(first.id).await.unwrap()[0].clone();
    assert_eq!(first_run.status, RunStatus::Succeeded, "{first_run:?}");
    assert_eq!(
        refused.failure_reason,
        Some(FailureReason::OverCap),
        "{refused:?}"
    );
    assert_eq!(
        refused.usage,
        Usage::default(),
        "it never started: {refused:?}"
    );
    let month = Utc::now().format("%B %Y").to_string();
    assert_eq!(
        refused.summary.as_deref(),
        Some(
            format!(
                "queued reached its monthly cap for {month} (UTC): {} of 1000 tokens",
                ALPHA.tokens()
            )
            .as_str()
        ),
        "{refused:?}"
    );
    w.stop().await;
}
