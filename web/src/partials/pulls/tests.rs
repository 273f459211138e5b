use super::*;
use crate::views::{PrCheckView, PrReviewView};

fn sample() -> IssuePullsView {
    IssuePullsView {
        pulls: vec![PullView {
            number: 7,
            url: "https://github.com/acme/app/pull/7".into(),
            state: "draft".into(),
            state_label: "Draft".into(),
            mergeable: "unknown".into(),
            checks: vec![PrCheckView {
                name: "ci/test".into(),
                state: "failure".into(),
                url: Some("https://ci.example/1".into()),
            }],
            reviews: vec![PrReviewView {
                author: "grace".into(),
                verdict: "changes_requested".into(),
                verdict_label: "changes requested".into(),
            }],
            rounds: "round 1 of 3".into(),
            superseded_by: Some(9),
        }],
        open_url: None,
        errors: Default::default(),
        csrf: "tok".into(),
        live_url: Some("/w/acme/issues/ACM-1/live".into()),
    }
}

#[test]
fn the_panel_shows_state_checks_reviews_and_rounds() {
    let html = crate::partials::plan::issue_live(&sample(), &Default::default()).into_string();
    assert!(
        html.contains(r#"ws-connect="/w/acme/issues/ACM-1/live""#),
        "{html}"
    );
    assert!(
        html.contains(r#"<a class="pull-number" href="https://github.com/acme/app/pull/7" target="_blank" rel="noopener">#7</a>"#),
        "{html}"
    );
    assert!(
        html.contains(r#"<span class="pull-state pull-draft">Draft</span>"#),
        "{html}"
    );
    assert!(html.contains("round 1 of 3"), "{html}");
    assert!(html.contains("superseded by #9"), "{html}");
    assert!(
        html.contains(r#"class="pull-check check-failure""#),
        "{html}"
    );
    assert!(html.contains(r#"href="https://ci.example/1""#), "{html}");
    assert!(html.contains("changes requested"), "{html}");
    assert!(!html.contains("hx-swap-oob"), "{html}");
    assert!(!html.contains("Open pull request"), "{html}");
}

#[test]
fn the_open_button_and_its_error_show_when_offered() {
    let mut v = sample();
    v.pulls.clear();
    v.open_url = Some("/w/acme/issues/ACM-1/pull-request".into());
    v.errors
        .insert("run".into(), vec!["no agent delivered work".into()]);
    let html = issue_pulls_oob(&v).into_string();
    assert!(html.contains(r#"hx-swap-oob="true""#), "{html}");
    assert!(
        html.contains(r#"action="/w/acme/issues/ACM-1/pull-request""#),
        "{html}"
    );
    assert!(html.contains("no agent delivered work"), "{html}");
    assert!(html.contains("None yet."), "{html}");
    assert!(!html.contains(" hidden"), "the panel shows: {html}");
}

#[test]
fn the_card_badge_has_the_state_colour() {
    let html = card_pull(&CardPullView {
        number: 12,
        state: "merged".into(),
    })
    .into_string();
    assert!(html.contains(r#"class="card-pull pull-merged""#), "{html}");
    assert!(html.contains("PR #12"), "{html}");
}

#[test]
fn nothing_shows_without_pull_requests_or_a_way_to_open_one() {
    let html = crate::partials::plan::issue_live(&IssuePullsView::default(), &Default::default())
        .into_string();
    assert!(html.contains(" hidden"), "{html}");
    assert!(!html.contains("ws-connect"), "{html}");
}
