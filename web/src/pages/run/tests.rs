use super::*;
use crate::samples;
use crate::views::RunLiveFrame;

#[test]
fn a_live_run_connects_after_its_last_seq_and_offers_cancel() {
    let v = samples::run_page();
    let html = run(&v).into_string();
    let id = &v.header.id;
    assert!(html.contains(&format!(
        r#"hx-ext="ws" ws-connect="/w/acme/runs/{id}/live?after=10""#
    )));
    assert!(html.contains(&format!(r#"id="run-{id}-cursor" data-seq="10""#)));
    assert!(html.contains(&format!(r#"<ol class="run-log" id="run-{id}-log""#)));
    assert!(html.contains(&format!(r#"action="/w/acme/runs/{id}/cancel""#)));
    assert!(html.contains(r#"<input type="hidden" name="_csrf" value="csrf-123">"#));
    assert!(!html.contains("/retry"), "no retry while running");
    assert!(html.contains(r#"data-started="2025-03-04T16:30:00.000Z""#));
    assert!(!html.contains("data-finished="), "the clock ticks");
    assert!(html.contains("12,840") && html.contains("$0.0912"));
}

#[test]
fn each_kind_of_entry_has_its_look() {
    let html = run(&samples::run_page()).into_string();
    assert!(html.contains(r#"<li class="ev ev-thinking" id="run-entry-2" data-seq="2"><details><summary>Thinking</summary>"#));
    assert!(
        html.contains("<p>I'll read <code>hub.rs</code> first.</p>"),
        "text is the server's sanitised HTML"
    );
    assert!(html.contains(r#"<code class="tool-name">Bash</code>"#));
    assert!(html.contains(r#"<span class="exit exit-bad">exit 101</span>"#));
    assert!(html.contains(
        r#"<span class="file-change file-update">changed</span> <code>server/src/hub.rs</code>"#
    ));
    assert!(html.contains(r#"<li class="ev ev-stderr""#));
    assert!(
        html.contains(r#"<li class="ev ev-error""#) && html.contains("API Error: 529 overloaded")
    );
    // The result sits inside its call's block; a pending call has an empty slot to swap into.
    let call = html.find("id=\"run-entry-4\"").unwrap();
    let slot = html.find("-result-toolu_1\"").unwrap();
    let next = html.find("id=\"run-entry-6\"").unwrap();
    assert!(call < slot && slot < next);
    assert!(html.contains("Show all 60 lines"));
    assert!(html.contains("waiting for the result…"));
}

#[test]
fn a_failed_run_shows_why_retry_and_the_coloured_diff() {
    let v = samples::failed_run_page();
    let html = run(&v).into_string();
    assert!(!html.contains("ws-connect"), "a finished run has no socket");
    assert!(html.contains(
        "Did not succeed. </strong><span class=\"failure-what\">The agent's command exited with code 1</span>"
    ));
    // The raw diagnostic is there, escaped, behind a closed toggle.
    assert!(html.contains(
        "<details class=\"failure-details\"><summary>details</summary><pre class=\"failure-diagnostic\">last output: &lt;b&gt;tests&lt;/b&gt; fail"
    ));
    assert!(html.contains(&format!(r#"action="{}/retry""#, v.header.url)));
    assert!(!html.contains("/cancel\""));
    assert!(html.contains(r#"<span class="diff-line diff-add">+let rx = hub.subscribe(topic);"#));
    assert!(html.contains(r#"<span class="diff-line diff-del">-let rx = None;"#));
    assert!(html.contains("1 file changed, 3 insertions(+)"));
    assert!(html.contains("data-finished="));
}

#[test]
fn agent_text_is_escaped_everywhere_but_in_sanitised_html() {
    let mut v = samples::run_page();
    v.items = vec![crate::views::RunItemView {
        seq: 1,
        at: samples::at(1, 1, 1),
        kind: RunItemKind::Command {
            cmd: "<script>alert(1)</script>".into(),
            exit_code: Some(0),
            output: LongTextView {
                shown: "<img src=x onerror=alert(1)>".into(),
                full: None,
                lines: 1,
            },
        },
    }];
    v.header.stalled_at = Some(samples::at(4, 16, 31));
    let html = run(&v).into_string();
    assert!(!html.contains("<script>alert") && !html.contains("<img src=x"));
    assert!(html.contains("&lt;script&gt;alert(1)&lt;/script&gt;"));
    assert!(html.contains("Stalled. "));
}

#[test]
fn a_live_frame_appends_swaps_results_and_moves_the_cursor() {
    let page = samples::run_page();
    let frame = RunLiveFrame {
        run_id: "r1".into(),
        items: page.items[..2].to_vec(),
        results: vec![(
            "run-r1-result-x".into(),
            ToolResultView {
                output: LongTextView {
                    shown: "done".into(),
                    full: None,
                    lines: 1,
                },
                is_error: true,
                exit_code: None,
            },
        )],
        replaced: Vec::new(),
        counters: Some(page.counters.clone()),
        header: Some(page.header.clone()),
        diff: None,
        last_seq: 12,
    };
    let html = run_live_frame(&frame, "tok").into_string();
    assert!(html.starts_with(r##"<div hx-swap-oob="beforeend:#run-r1-log"><li class="ev ev-started" id="run-entry-1""##), "{html}");
    assert!(html.contains(r#"<div class="tool-result-slot" id="run-r1-result-x" hx-swap-oob="outerHTML"><div class="tool-result tool-error">"#));
    assert!(html.contains(r#"id="run-r1-counters" hx-swap-oob="outerHTML""#));
    assert!(html.contains(r#"hx-swap-oob="outerHTML" data-status="running""#));
    assert!(
        html.contains(r#"value="tok""#),
        "the header's forms carry the socket's CSRF token"
    );
    assert!(html.contains(r#"<span class="run-cursor" id="run-r1-cursor" data-seq="12" hidden hx-swap-oob="outerHTML">"#));
    assert!(!html.contains("run-r1-diff"));
}

#[test]
fn a_local_model_run_shows_its_speed_and_others_do_not() {
    let mut v = samples::run_page();
    assert!(!run(&v).into_string().contains("Tokens/s"));
    v.counters.tokens_per_second = Some("110.4".into());
    let html = run(&v).into_string();
    assert!(html.contains(r#"<dt>Tokens/s</dt><dd class="counter-speed">110.4</dd>"#));
}

#[test]
fn a_grown_entry_replaces_itself_and_a_result_shows_its_exit_code() {
    let page = samples::run_page();
    let text = page
        .items
        .iter()
        .find(|i| matches!(i.kind, RunItemKind::Text { .. }))
        .unwrap()
        .clone();
    let frame = RunLiveFrame {
        run_id: "r1".into(),
        replaced: vec![text.clone()],
        last_seq: 12,
        ..RunLiveFrame::default()
    };
    let html = run_live_frame(&frame, "tok").into_string();
    assert!(
        html.starts_with(&format!(
            r#"<li class="ev ev-text" id="run-entry-{0}" data-seq="{0}" hx-swap-oob="outerHTML">"#,
            text.seq
        )),
        "{html}"
    );
    assert!(!html.contains("beforeend"), "nothing appended: {html}");
    let full = run(&page).into_string();
    assert!(full.contains(r#"<div class="tool-result"><span class="exit exit-ok">exit 0</span>"#));
    assert!(
        !full.contains(r#"data-seq="3" hx-swap-oob"#),
        "the first render swaps nothing"
    );
}

#[test]
fn a_waiting_run_says_why_under_its_header() {
    let mut v = samples::run_page();
    assert!(!run(&v).into_string().contains("run-waiting-banner"));
    v.header.status = "queued".into();
    v.header.waiting = Some("waiting for runner gpu-box (offline)".into());
    let html = run(&v).into_string();
    assert!(html.contains(
        r#"<p class="run-waiting-banner muted" role="status">waiting for runner gpu-box (offline). <a href="../runners">See the runners</a>.</p>"#
    ), "{html}");
}

#[test]
fn a_check_is_a_gate_with_its_badge_counts_and_collapsed_output() {
    let item = |ok: bool, ending: &str, counts: Option<&str>, tail: &str| RunItemView {
        seq: 42,
        at: chrono::Utc::now(),
        kind: RunItemKind::Check {
            ok,
            command: "cargo test <all>".to_owned(),
            ending: ending.to_owned(),
            duration: Some("4.2 s".to_owned()),
            counts: counts.map(str::to_owned),
            tail: tail.to_owned(),
        },
    };
    let green = timeline_item(
        &item(true, "exit 0", Some("12/12 passed"), "test result: ok. <b>"),
        false,
    )
    .into_string();
    assert!(
        green.contains(r#"<li class="ev ev-check ev-ok" id="run-entry-42""#),
        "{green}"
    );
    assert!(green.contains(r#"<span class="check-badge check-pass">passed</span>"#));
    assert!(green.contains(r#"<code class="cmd">cargo test &lt;all&gt;</code>"#));
    assert!(green.contains(r#"<span class="check-ending">exit 0</span>"#));
    assert!(green.contains("4.2 s"));
    assert!(green.contains(r#"<span class="check-counts">12/12 passed</span>"#));
    // The output is collapsed (no `open`) and escaped.
    assert!(green.contains(r#"<details class="check-tail"><summary>Last lines of its output</summary><pre>test result: ok. &lt;b&gt;</pre></details>"#), "{green}");
    let red = timeline_item(&item(false, "timed out", None, ""), false).into_string();
    assert!(red.contains(r#"<li class="ev ev-check ev-bad""#));
    assert!(red.contains(r#"<span class="check-badge check-fail">failed</span>"#));
    assert!(red.contains("timed out"));
    assert!(!red.contains("check-counts") && !red.contains("<details"));
}
