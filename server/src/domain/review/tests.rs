use super::*;

fn check(exit: Option<i32>, passed: Option<u64>, failed: Option<u64>, tail: &str) -> CheckResult {
    CheckResult {
        command: "cargo test".to_owned(),
        exit_code: exit,
        timed_out: false,
        duration_ms: 48_213,
        passed,
        failed,
        total: passed.zip(failed).map(|(p, f)| p + f),
        tail: tail.to_owned(),
        error: None,
    }
}

fn candidates() -> Vec<ReviewCandidate> {
    vec![
        ReviewCandidate {
            label: 'B',
            diff: "--- a/src/lib.rs\n+++ b/src/lib.rs\n@@ -1 +1,2 @@\n pub fn one() -> u8 { 1 }\n+pub fn two() -> u8 { 3 }\n".to_owned(),
            diff_truncated: false,
            check: Some(check(
                Some(101),
                Some(3),
                Some(1),
                "test two_is_two ... FAILED\ntest result: FAILED. 3 passed; 1 failed",
            )),
        },
        ReviewCandidate {
            label: 'A',
            diff: "--- a/src/lib.rs\n+++ b/src/lib.rs\n@@ -1 +1,2 @@\n pub fn one() -> u8 { 1 }\n+pub fn two() -> u8 { 2 }\n".to_owned(),
            diff_truncated: true,
            check: Some(check(Some(0), Some(4), Some(0), "test result: ok. 4 passed; 0 failed")),
        },
        ReviewCandidate {
            label: 'C',
            diff: String::new(),
            diff_truncated: false,
            check: None,
        },
    ]
}

#[test]
fn the_prompt_shows_evidence_under_labels_only() {
    let names = ["claude-fast", "codex-mini", "gemini-pro"];
    let mut rng = rand::rng();
    let labelled = assign_labels(&names, &mut rng).unwrap();
    let mut cands = candidates();
    // The labels the agents were given decide nothing the prompt shows about them.
    for c in &mut cands {
        let name = labelled.iter().find(|(l, _)| *l == c.label).unwrap().1;
        c.hide(&[name]);
    }
    let prompt = review_prompt("Add two", "We need `two()`.", &cands);
    for name in names {
        assert!(!prompt.contains(name), "{name} in\n{prompt}");
    }
    // Neither costs, tokens nor run times: the check's duration (48213 ms) is left out.
    for word in [
        "$", "cost", "token", "48213", "48.2", "duration", "took", "seconds", "vote",
    ] {
        assert!(
            !prompt.to_lowercase().contains(word),
            "{word:?} in\n{prompt}"
        );
    }
    // Label order, whatever order they came in.
    let (a, b, c) = (
        prompt.find("# Candidate A").unwrap(),
        prompt.find("# Candidate B").unwrap(),
        prompt.find("# Candidate C").unwrap(),
    );
    assert!(a < b && b < c);
    assert!(prompt.contains("Title: Add two"));
    assert!(prompt.contains("We need `two()`."));
    assert!(prompt.contains("Result: FAILED (exit code 101)"));
    assert!(prompt.contains("Tests: 3 of 4 passed, 1 failed"));
    assert!(prompt.contains("test two_is_two ... FAILED"));
    assert!(prompt.contains("Result: passed (exit code 0)"));
    assert!(prompt.contains("Not checked."));
    assert!(prompt.contains("(no change)"));
    assert!(prompt.contains("+pub fn two() -> u8 { 3 }"));
    // Only A's diff is truncated, and the prompt says so once, in A's section.
    assert_eq!(prompt.matches("TRUNCATED").count(), 1);
    assert!(prompt.find("TRUNCATED").unwrap() > a && prompt.find("TRUNCATED").unwrap() < b);
    // The exact answer asked for.
    assert!(prompt.contains(
        r#"{"candidates":[{"label":"A","score":0,"reasons":["..."]},{"label":"B","score":0,"reasons":["..."]},{"label":"C","score":0,"reasons":["..."]}],"best":"A"}"#
    ), "{prompt}");
    assert!(prompt.contains("path:line"));
}

#[test]
fn hiding_a_name_scrubs_diffs_and_check_output_ignoring_case() {
    let mut c = ReviewCandidate {
        label: 'A',
        diff: "+// Written by Claude-Fast, reviewed by claude-fast\n".to_owned(),
        diff_truncated: false,
        check: Some(check(Some(0), None, None, "hello from CLAUDE-FAST")),
    };
    c.hide(&["claude-fast", ""]);
    assert_eq!(c.diff, "+// Written by [hidden], reviewed by [hidden]\n");
    assert_eq!(c.check.unwrap().tail, "hello from [hidden]");
}

#[test]
fn fences_outlast_backticks_in_the_diff() {
    let f = fenced("diff", "+```rust\n+code\n+```");
    assert!(f.starts_with("````diff\n"), "{f}");
    assert!(f.ends_with("\n````\n\n"), "{f}");
}

#[test]
fn labels_come_in_a_random_order() {
    let ids: Vec<u32> = (0..8).collect();
    let mut rng = rand::rng();
    let first = assign_labels(&ids, &mut rng).unwrap();
    let labels: Vec<char> = first.iter().map(|(l, _)| *l).collect();
    assert_eq!(labels, ('A'..='H').collect::<Vec<_>>());
    let mut got: Vec<u32> = first.iter().map(|(_, id)| *id).collect();
    got.sort_unstable();
    assert_eq!(got, ids, "every id once");
    // 8! orders: twenty draws all equal to the first would be a broken shuffle.
    let differs = (0..20).any(|_| assign_labels(&ids, &mut rng).unwrap() != first);
    assert!(differs, "the order never changed");
    assert!(assign_labels(&(0..27).collect::<Vec<_>>(), &mut rng).is_err());
}

const GOOD: &str = r#"{"candidates":[
  {"label":"A","score":8,"reasons":["the check passes: 4 of 4 tests","src/lib.rs:2 returns 2 as asked"]},
  {"label":"B","score":2,"reasons":["failing test two_is_two"]},
  {"label":"C","score":0,"reasons":["no change at all; nothing was checked"]}
],"best":"A"}"#;

#[test]
fn a_verdict_is_found_fenced_or_in_prose() {
    let labels = ['A', 'B', 'C'];
    let fenced = format!("I compared them.\n\n```json\n{GOOD}\n```\n\nThat is my verdict.");
    let v = parse_verdict(&fenced, &labels).unwrap();
    assert_eq!(v.best, 'A');
    assert_eq!(
        v.candidates
            .iter()
            .map(|c| (c.label, c.score))
            .collect::<Vec<_>>(),
        vec![('A', 8), ('B', 2), ('C', 0)]
    );
    assert_eq!(v.candidates[0].reasons.len(), 2);
    let prose = format!("Here {{is}} my answer: {GOOD} -- thanks");
    assert_eq!(parse_verdict(&prose, &labels).unwrap(), v);
    // The same object twice (the fence and an echo) is one verdict.
    assert_eq!(
        parse_verdict(&format!("{GOOD}\n{GOOD}"), &labels).unwrap(),
        v
    );
}

fn error(text: &str) -> String {
    parse_verdict(text, &['A', 'B', 'C'])
        .unwrap_err()
        .to_string()
}

#[test]
fn invalid_verdicts_say_what_is_wrong() {
    assert_eq!(
        error("I think A is best."),
        "the answer holds no JSON object with a \"candidates\" field"
    );
    assert_eq!(
        error("```json\n{\"candidates\": [\n```"),
        "the answer holds no JSON object with a \"candidates\" field"
    );
    let other = GOOD.replace("\"best\":\"A\"", "\"best\":\"B\"");
    assert_eq!(
        error(&format!("{GOOD}\n{other}")),
        "the answer holds 2 different verdict objects; exactly one is expected"
    );
    assert_eq!(
        error(&GOOD.replace("\"score\":0", "\"score\":12")),
        "candidate C: score 12 is not in 0..=10"
    );
    assert_eq!(
        error(&GOOD.replace("\"score\":0", "\"score\":-1")),
        "candidate C: score -1 is not in 0..=10"
    );
    assert_eq!(
        error(&GOOD.replace("\"score\":2", "\"score\":7.5")),
        "candidate B: score 7.5 is not an integer"
    );
    assert_eq!(
        error(&GOOD.replace("\"score\":2", "\"score\":\"high\"")),
        "candidate B: score must be an integer from 0 to 10, not \"high\""
    );
    assert_eq!(
        error(&GOOD.replace("\"label\":\"C\"", "\"label\":\"D\"")),
        "unknown candidate D (the candidates are A, B, C); candidate C is missing"
    );
    assert_eq!(
        error(&GOOD.replace("\"label\":\"C\"", "\"label\":\"B\"")),
        "candidate B appears more than once; candidate C is missing"
    );
    assert_eq!(
        error(&GOOD.replace(
            r#""reasons":["failing test two_is_two"]"#,
            r#""reasons":[]"#
        )),
        "candidate B: no reason given"
    );
    assert_eq!(
        error(&GOOD.replace("failing test two_is_two", "  ")),
        "candidate B: reason 1 is empty"
    );
    assert_eq!(
        error(&GOOD.replace("failing test two_is_two", "it feels sloppy")),
        "candidate B: reason 1 cites neither a check nor a path:line of the diff: \"it feels sloppy\""
    );
    assert_eq!(
        error(&GOOD.replace("\"best\":\"A\"", "\"best\":\"Z\"")),
        "\"best\" must be one of A, B, C, not \"Z\""
    );
    assert_eq!(
        error(&GOOD.replace(",\"best\":\"A\"", "")),
        "\"best\" is missing"
    );
    assert_eq!(
        error(r#"{"candidates":"A wins","best":"A"}"#),
        "\"candidates\" must be a list"
    );
}

#[test]
fn a_reason_cites_a_check_or_a_path_and_line() {
    for ok in [
        "src/lib.rs:12 divides by zero",
        "see (server/src/main.rs:3)",
        "Cargo.toml:7 pins an old version",
        "the check failed",
        "2 tests fail",
        "./web/app.ts:120-130 duplicates the loop",
    ] {
        assert!(cites_evidence(ok), "{ok}");
    }
    for bad in [
        "cleaner code",
        "line 12 is wrong",
        "at 10:30 it broke",
        "ratio 3:1",
        "lib.rs: bad",
        "https://example.com is slow",
    ] {
        assert!(!cites_evidence(bad), "{bad}");
    }
}
