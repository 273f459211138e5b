use super::*;

fn usage(input: u64, output: u64, cache_read: u64, cache_write: u64) -> TokenUsage {
    TokenUsage {
        input,
        output,
        cache_read,
        cache_write,
        cost_usd: None,
    }
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-12
}

#[test]
fn prices_each_token_class_at_its_rate() {
    let mut table = RateTable::empty();
    table.set(
        "m",
        ModelRate {
            input: 2.0,
            output: 10.0,
            cached: Some(0.5),
        },
    );
    // 1M uncached input ($2) + 1M cache write at the input price ($2) + 2M cached ($1) + 0.5M out ($5).
    let cost = table
        .price("m", &usage(1_000_000, 500_000, 2_000_000, 1_000_000))
        .unwrap();
    assert!(close(cost, 10.0), "{cost}");
    table.set(
        "n",
        ModelRate {
            input: 3.0,
            output: 15.0,
            cached: None,
        },
    );
    let cost = table.price("n", &usage(30, 12, 10, 0)).unwrap();
    assert!(close(cost, (40.0 * 3.0 + 12.0 * 15.0) / 1e6), "{cost}");
}

#[test]
fn lookup_is_exact_then_longest_prefix_at_a_boundary() {
    let table = RateTable::default();
    assert!(close(table.rate("gpt-5").unwrap().input, 1.25));
    assert!(close(table.rate("gpt-5-mini").unwrap().input, 0.25));
    assert!(close(
        table.rate("gpt-5-mini-2025-08-07").unwrap().input,
        0.25
    ));
    assert!(close(table.rate("openai/gpt-4.1").unwrap().input, 2.0));
    assert!(close(
        table.rate("claude-opus-4-5[1m]").unwrap().output,
        25.0
    ));
    assert_eq!(table.rate("gpt-5.5"), None, "a dot is not a boundary");
    assert_eq!(table.rate("mock-model"), None);
    assert_eq!(table.price("mock-model", &usage(1, 1, 0, 0)), None);
}

#[test]
fn with_cost_keeps_a_reported_cost_and_fills_a_missing_one() {
    let table = RateTable::default();
    let reported = TokenUsage {
        cost_usd: Some(0.01),
        ..usage(1_000_000, 0, 0, 0)
    };
    assert_eq!(table.with_cost("gpt-5", reported).cost_usd, Some(0.01));
    let priced = table.with_cost("gpt-5", usage(1_000_000, 0, 0, 0));
    assert!(close(priced.cost_usd.unwrap(), 1.25));
    assert_eq!(table.with_cost("unknown", usage(1, 0, 0, 0)).cost_usd, None);
}

#[test]
fn tables_round_trip_through_json() {
    let table = RateTable::default();
    assert_eq!(RateTable::from_json(&table.to_json()).unwrap(), table);
    let edited = RateTable::from_json(r#"{"local-llama": {"input": 0, "output": 0}}"#).unwrap();
    let rate = edited.rate("local-llama").unwrap();
    assert_eq!(rate.cached, None);
    assert!(close(
        edited.price("local-llama", &usage(5, 5, 5, 5)).unwrap(),
        0.0
    ));
}

#[test]
fn bad_json_names_the_line() {
    let text = "{\n  \"gpt-5\": {\"input\": \"cheap\", \"output\": 1}\n}";
    let err = RateTable::from_json(text).unwrap_err();
    let Error::Parse { line, reason } = err else {
        panic!("expected a parse error, got {err:?}");
    };
    assert_eq!(line, r#"  "gpt-5": {"input": "cheap", "output": 1}"#);
    assert!(
        reason.starts_with("invalid rate table: invalid type"),
        "{reason}"
    );
}
