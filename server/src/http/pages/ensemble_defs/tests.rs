use super::*;

/// The form's fields as a browser would send these pairs.
fn form(pairs: &[(&str, &str)]) -> Typed {
    let body = serde_urlencoded::to_string(pairs).unwrap();
    serde_html_form::from_str(&body).unwrap()
}

fn fields(problems: Problems) -> Vec<String> {
    match problems.finish() {
        Ok(()) => Vec::new(),
        Err(crate::service::Error::Invalid(m)) => m.into_keys().collect(),
        Err(other) => panic!("{other:?}"),
    }
}

#[test]
fn money_shows_cents_unless_they_would_hide_a_share() {
    assert_eq!(money(3.0), "$3.00");
    assert_eq!(money(1.5), "$1.50");
    assert_eq!(money(0.07), "$0.07");
    assert_eq!(money(1.0 / 3.0), "$0.3333");
    assert_eq!(amount(None, None), None);
    assert_eq!(
        amount(Some(3.0), Some(200_000)).as_deref(),
        Some("$3.00 · 200,000 tokens")
    );
    assert_eq!(amount(None, Some(5)).as_deref(), Some("5 tokens"));
}

#[test]
fn the_form_becomes_the_services_input() {
    let (input, problems) = ensemble_input(&form(&[
        ("name", "trio"),
        ("members", "a"),
        ("members", "b"),
        ("check", "  cargo test "),
        ("check_timeout", "120"),
        ("early_stop", "quorum"),
        ("quorum", "2"),
        ("reviewer", ""),
        ("budget_usd", "$2.50"),
        ("budget_tokens", "200,000"),
        ("share", "60%"),
    ]));
    assert!(fields(problems).is_empty());
    assert_eq!(input.name.as_deref(), Some("trio"));
    assert_eq!(input.members, Some(vec!["a".to_owned(), "b".to_owned()]));
    assert_eq!(input.check.as_deref(), Some("cargo test"));
    assert_eq!(input.check_timeout_secs, Some(120));
    assert_eq!(input.early_stop.as_deref(), Some("quorum 2"));
    assert_eq!(input.reviewer.as_deref(), Some(""));
    assert_eq!(input.budget_usd, Some(2.5));
    assert_eq!(input.budget_tokens, Some(200_000));
    assert_eq!(input.share, Some(0.6));
}

#[test]
fn empty_fields_clear_and_a_timeout_without_a_check_is_dropped() {
    let (input, problems) = ensemble_input(&form(&[
        ("name", "pair"),
        ("check", ""),
        ("check_timeout", "600"),
        ("early_stop", "all"),
        ("quorum", "junk, ignored"),
    ]));
    assert!(fields(problems).is_empty());
    assert_eq!(input.members, Some(Vec::new()), "no box ticked: no members");
    assert_eq!(input.check_timeout_secs, None);
    assert_eq!(input.early_stop.as_deref(), Some("all"));
    assert_eq!(input.budget_usd, Some(0.0), "0 is the service's none");
    assert_eq!(input.budget_tokens, Some(0));
    assert_eq!(input.share, Some(0.0));
}

#[test]
fn what_does_not_parse_is_a_problem_of_its_own_field() {
    let (_, problems) = ensemble_input(&form(&[
        ("check", "cargo test"),
        ("check_timeout", "soon"),
        ("early_stop", "quorum"),
        ("quorum", "9"),
        ("budget_usd", "lots"),
        ("budget_tokens", "1.5"),
        ("share", "half"),
    ]));
    assert_eq!(
        fields(problems),
        [
            "budget_tokens",
            "budget_usd",
            "check_timeout",
            "quorum",
            "share"
        ]
    );
}
