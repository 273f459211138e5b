//! Scenario `forge` (issue 29): on loopback against the scripted GitHub-shaped forge, how long Muster
//! takes from "open pull request" on a delivered run to the pull request recorded (push checked on the
//! forge, the forge asked for the branch, the project and an open pull request, the pull request
//! opened), and from a signed red-check webhook to the follow-up run queued (verified, de-duplicated,
//! the log fetched from the forge, the round counted, the comment recorded and the run queued: all
//! before the 202). Each is shown against what it cannot beat, measured in the same run: one API call
//! to the scripted forge, and one refused webhook delivery (the HTTP round trip alone).

use std::process::ExitCode;
use std::time::{Duration, Instant};

use muster::domain::ForgeKind;
use muster_tests::Backend;
use muster_tests::bench::{Figure, Mode, Prepared, ServerOptions, Stats, backend_name};
use muster_tests::forge::{self as scripted, ScriptedForge};
use serde_json::json;

const TOKEN: &str = "bench-forge-token-0123456789abcdef";
const REPO: &str = "acme/app";

fn main() -> ExitCode {
    muster_tests::bench::main("forge", scenario)
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

async fn scenario(mode: Mode, backend: Backend) -> anyhow::Result<Option<Vec<Figure>>> {
    let b = backend_name(backend);
    let Some(prepared) = Prepared::new(backend).await? else {
        return Ok(None);
    };
    let world = prepared.serve(ServerOptions::default()).await?;
    let forge = ScriptedForge::start(ForgeKind::Github, REPO, TOKEN).await?;
    let made = world
        .api(
            reqwest::Method::POST,
            "/api/v1/forges",
            Some(
                json!({ "kind": "github", "api_url": forge.api_url(), "repo": REPO,
                         "token": TOKEN, "max_rounds": 20 }),
            ),
            201,
        )
        .await?;
    let conn = made["connection"]["id"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let secret = made["webhook_secret"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let hook = world.url(&format!("/hooks/github/{conn}"));
    // Each run leaves one new file: work to push.
    world
        .custom_agent(
            "pr",
            "cat >/dev/null; echo \"$MUSTER_RUN_ID\" > \"work-$MUSTER_RUN_ID.txt\"",
            4,
        )
        .await?;
    forge.set_job_log(1, "test parser ... FAILED\nerror: expected 3, got 2\n");

    let samples = mode.pick(3, 30);
    let (mut opens, mut hooks, mut api_floor, mut hook_floor) = (vec![], vec![], vec![], vec![]);
    for i in 0..samples {
        let key = world.assign(&format!("forge {i}"), "pr").await?;
        let run = world.run_of(&key).await?;
        world
            .wait_run_end(&run, Duration::from_secs(60), Duration::from_millis(20))
            .await?;

        let started = Instant::now();
        let pr = world
            .api(
                reqwest::Method::POST,
                &format!("/api/v1/runs/{run}/pull-request"),
                Some(json!({ "draft": true })),
                200,
            )
            .await?;
        opens.push(ms(started.elapsed()));
        let started = Instant::now();
        let resp = world
            .http
            .get(format!("{}/repos/{REPO}", forge.api_url()))
            .bearer_auth(TOKEN)
            .send()
            .await?;
        anyhow::ensure!(resp.status().is_success(), "the forge: {}", resp.status());
        api_floor.push(ms(started.elapsed()));

        let number = pr["number"].as_i64().unwrap_or_default();
        let branch = pr["branch"].as_str().unwrap_or_default();
        let sha = pr["head_sha"].as_str().unwrap_or_default();
        let failed =
            scripted::check_failed(ForgeKind::Github, REPO, number, branch, sha, "test", 1);
        let started = Instant::now();
        let status = scripted::send_hook(
            ForgeKind::Github,
            &hook,
            &secret,
            "check_run",
            &format!("b-{i}"),
            &failed,
        )
        .await?;
        hooks.push(ms(started.elapsed()));
        anyhow::ensure!(status == 202, "the webhook was answered {status}");
        let runs = world
            .api(
                reqwest::Method::GET,
                &format!("/api/v1/issues/{key}/runs"),
                None,
                200,
            )
            .await?;
        anyhow::ensure!(
            runs.as_array().map_or(0, Vec::len) == 2,
            "no follow-up queued for {key}: {runs}"
        );
        let started = Instant::now();
        let refused = scripted::send_hook(
            ForgeKind::Github,
            &hook,
            "not-the-secret-at-all",
            "check_run",
            &format!("f-{i}"),
            &failed,
        )
        .await?;
        hook_floor.push(ms(started.elapsed()));
        anyhow::ensure!(refused == 401, "a forged webhook was answered {refused}");
        // Let the follow-up run end before the next sample.
        let follow_up = runs[1]["id"].as_str().unwrap_or_default().to_owned();
        world
            .wait_run_settled(
                &follow_up,
                Duration::from_secs(60),
                Duration::from_millis(20),
            )
            .await?;
    }
    anyhow::ensure!(
        forge.pulls().len() == samples,
        "pull requests on the forge: {}",
        forge.pulls().len()
    );
    let (o, a, h, f) = (
        Stats::of(&mut opens),
        Stats::of(&mut api_floor),
        Stats::of(&mut hooks),
        Stats::of(&mut hook_floor),
    );
    Ok(Some(vec![
        Figure::new(
            b,
            format!("open pull request, p50 ({samples})"),
            o.p50,
            "ms",
        )
        .against("one forge API call, p50", a.p50),
        Figure::new(
            b,
            format!("open pull request, p99 ({samples})"),
            o.p99,
            "ms",
        )
        .against("one forge API call, p99", a.p99),
        Figure::new(
            b,
            format!("red-check webhook → follow-up queued, p50 ({samples})"),
            h.p50,
            "ms",
        )
        .against("a refused delivery, p50", f.p50),
        Figure::new(
            b,
            format!("red-check webhook → follow-up queued, p99 ({samples})"),
            h.p99,
            "ms",
        )
        .against("a refused delivery, p99", f.p99),
    ]))
}
