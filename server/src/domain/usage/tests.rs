use chrono::{TimeZone, Utc};

use super::*;

fn at(d: u32, h: u32) -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 11, d, h, 0, 0).unwrap()
}

fn run(
    agent: (AgentId, &str, RuntimeKind),
    day: u32,
    status: RunStatus,
    secs: i64,
    cost: f64,
) -> RunUsage {
    let created = at(day, 10);
    RunUsage {
        run_id: RunId::new(),
        agent_id: agent.0,
        agent_name: agent.1.to_owned(),
        kind: agent.2,
        model: None,
        issue_id: IssueId::new(),
        issue_key: "MUS-1".into(),
        status,
        failure_reason: None,
        created_at: created,
        started_at: Some(created),
        finished_at: status
            .is_terminal()
            .then(|| created + TimeDelta::seconds(secs)),
        usage: Usage {
            input_tokens: 100,
            output_tokens: 10,
            cost_usd: cost,
            ..Usage::default()
        },
    }
}

#[test]
fn report_groups_rates_quantiles_and_days() {
    let a = (AgentId::new(), "alpha", RuntimeKind::Claude);
    let b = (AgentId::new(), "beta", RuntimeKind::Llama);
    let mut over = run(a, 2, RunStatus::Failed, 30, 0.5);
    over.failure_reason = Some(FailureReason::OverBudget);
    let runs = vec![
        run(a, 1, RunStatus::Succeeded, 10, 0.25),
        run(a, 1, RunStatus::Failed, 20, 0.25),
        over,
        run(a, 3, RunStatus::Running, 0, 0.125),
        run(b, 3, RunStatus::Succeeded, 4, 0.0),
        // Outside the period: not counted.
        run(a, 9, RunStatus::Succeeded, 10, 8.0),
    ];
    let r = report(&runs, at(1, 0), at(4, 0), GroupBy::Agent);
    assert_eq!(r.total.runs, 5);
    assert_eq!(r.total.cost_usd, 1.125);
    assert_eq!(r.total.input_tokens, 500);
    assert_eq!(r.days.len(), 3);
    assert_eq!(r.days[0].total.runs, 2);
    assert_eq!(r.days[2].groups.len(), 2);
    let alpha = &r.groups[0];
    assert_eq!((alpha.label.as_str(), alpha.totals.runs), ("alpha", 4));
    assert_eq!(
        (alpha.succeeded, alpha.failed, alpha.over_budget, alpha.live),
        (1, 1, 1, 1)
    );
    assert_eq!(alpha.rate(alpha.succeeded), Some(1.0 / 3.0));
    assert_eq!(alpha.median_secs, Some(20.0));
    assert_eq!(alpha.p90_secs, Some(30.0));
    assert_eq!(alpha.cost_per_delivered(), Some(1.125));
    assert_eq!(alpha.tokens_per_sec, None);
    let beta = &r.groups[1];
    assert_eq!(beta.tokens_per_sec, Some(2.5));
}

/// An agent with no price (a custom model nobody priced) costs an unknown amount per run, never $0;
/// mixed with priced runs, the unpriced ones are left out of the average.
#[test]
fn unpriced_runs_cost_an_unknown_amount_per_run() {
    let a = (AgentId::new(), "custom", RuntimeKind::Codex);
    let unpriced = |day| {
        let mut r = run(a, day, RunStatus::Succeeded, 10, 0.0);
        r.usage.cost_unknown = true;
        r
    };
    let r = report(
        &[unpriced(1), unpriced(2)],
        at(1, 0),
        at(4, 0),
        GroupBy::Agent,
    );
    let g = &r.groups[0];
    assert!(g.all_unpriced());
    assert_eq!(g.cost_per_run(), None);
    assert_eq!(g.cost_per_delivered(), None);
    let runs = [unpriced(1), run(a, 2, RunStatus::Succeeded, 10, 0.5)];
    let r = report(&runs, at(1, 0), at(4, 0), GroupBy::Agent);
    let g = &r.groups[0];
    assert!(!g.all_unpriced());
    assert_eq!(g.cost_per_run(), Some(0.5));
}

#[test]
fn quantiles_use_the_nearest_rank() {
    let v = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0];
    assert_eq!(quantile(&v, 0.5), Some(5.0));
    assert_eq!(quantile(&v, 0.9), Some(9.0));
    assert_eq!(quantile(&[7.0], 0.9), Some(7.0));
    assert_eq!(quantile(&[], 0.5), None);
}

#[test]
fn periods_parse_or_say_what_is_accepted() {
    let now = Utc.with_ymd_and_hms(2026, 12, 3, 15, 30, 0).unwrap();
    let midnight = Utc.with_ymd_and_hms(2026, 12, 3, 0, 0, 0).unwrap();
    assert_eq!(parse_since("today", now).unwrap(), midnight);
    assert_eq!(parse_since("1d", now).unwrap(), midnight);
    assert_eq!(
        parse_since("7d", now).unwrap(),
        midnight - TimeDelta::days(6)
    );
    assert_eq!(parse_since("12h", now).unwrap(), now - TimeDelta::hours(12));
    assert_eq!(
        parse_since("2026-11-01", now).unwrap(),
        Utc.with_ymd_and_hms(2026, 11, 1, 0, 0, 0).unwrap()
    );
    for bad in ["", "0d", "week", "2027-01-01", "7x"] {
        let e = parse_since(bad, now).unwrap_err();
        assert_eq!(e.field, "since", "{bad}");
    }
}

#[test]
fn caps_measure_the_larger_share_and_months_start_on_the_first() {
    let spent = Usage {
        input_tokens: 600,
        output_tokens: 200,
        cost_usd: 4.0,
        ..Usage::default()
    };
    let cap = Cap {
        usd: Some(5.0),
        tokens: Some(1000),
    };
    assert_eq!(cap.used(&spent), 0.8);
    assert_eq!(cap.describe(&spent), "$4.00 of $5.00, 800 of 1000 tokens");
    assert_eq!(Cap::default().used(&spent), 0.0);
    // A bound of 0 is reached from the start, and stays a finite figure (JSON has no infinity).
    let zero = Cap {
        usd: None,
        tokens: Some(0),
    };
    assert_eq!(zero.used(&Usage::default()), 1.0);
    assert_eq!(
        Cap {
            usd: Some(0.0),
            tokens: Some(1000)
        }
        .used(&spent),
        1.0
    );
    let now = Utc.with_ymd_and_hms(2026, 12, 3, 15, 30, 0).unwrap();
    assert_eq!(
        month_start(now),
        Utc.with_ymd_and_hms(2026, 12, 1, 0, 0, 0).unwrap()
    );
    assert_eq!(month_key(now), "2026-12");
}

#[test]
fn costs_read_estimated_unpriced_or_local_as_they_were_priced() {
    let priced = Usage {
        input_tokens: 10,
        cost_usd: 0.0421,
        ..Usage::default()
    };
    // What the CLI reported reads plain, whatever the runtime; what Muster priced reads estimated.
    assert_eq!(priced.cost_label(Some(RuntimeKind::Codex)).0, "$0.0421");
    let mut estimated = Usage::default();
    let rates = muster_agents::RateTable::default();
    let (model, _) = rates.iter().next().expect("the built-in table has models");
    let tokens = muster_agents::TokenUsage {
        input: 1_000_000,
        ..Default::default()
    };
    estimated.add_priced(tokens, Some(model), &rates);
    assert!(
        estimated.cost_estimated && estimated.cost_usd > 0.0,
        "{estimated:?}"
    );
    let (label, title) = estimated.cost_label(Some(RuntimeKind::Opencode));
    assert!(label.ends_with(" · estimated"), "{label}");
    assert!(title.unwrap().starts_with("Estimated"));
    // Reported costs stay plain when added to.
    let mut reported = Usage::default();
    let with_cost = muster_agents::TokenUsage {
        input: 10,
        cost_usd: Some(0.5),
        ..Default::default()
    };
    reported.add_priced(with_cost, Some(model), &rates);
    assert!(!reported.cost_estimated);
    let unknown = Usage {
        cost_usd: 0.0,
        cost_unknown: true,
        ..priced
    };
    assert_eq!(unknown.cost_label(Some(RuntimeKind::Codex)).0, "unpriced");
    let mut both = unknown;
    both += &estimated;
    assert!(both.cost_estimated && both.cost_unknown);
    assert_eq!(
        Usage::default().cost_label(Some(RuntimeKind::Llama)).0,
        "$0 · local"
    );
}

#[test]
fn usages_add_up_and_an_unknown_cost_stays_unknown() {
    let priced = Usage {
        input_tokens: 10,
        output_tokens: 5,
        cache_read_tokens: 2,
        cache_write_tokens: 1,
        cost_usd: 0.5,
        cost_unknown: false,
        cost_estimated: false,
    };
    let unpriced = Usage {
        input_tokens: 100,
        cost_unknown: true,
        ..Usage::default()
    };
    let sum: Usage = [priced, unpriced].iter().sum();
    assert_eq!(sum.tokens(), 118);
    assert_eq!((sum.input_tokens, sum.cost_usd), (110, 0.5));
    assert!(sum.cost_unknown);
    let mut only_priced = priced;
    only_priced += &priced;
    assert_eq!((only_priced.tokens(), only_priced.cost_usd), (36, 1.0));
    assert!(!only_priced.cost_unknown);
}
