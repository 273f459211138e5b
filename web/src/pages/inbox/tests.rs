use super::*;
use crate::samples;

#[test]
fn lists_items_with_links_read_state_and_actions() {
    let html = inbox(&samples::inbox()).into_string();
    assert!(
        html.contains(r#"<li class="inbox-item unread" id="inbox-i1" data-kind="run_failed">"#)
    );
    assert!(html.contains(r#"<li class="inbox-item" id="inbox-i2" data-kind="run_stalled">"#));
    assert!(html.contains(r#"<a class="issue-key" href="/w/acme/issues/MUS-26">MUS-26</a>"#));
    assert!(html.contains(r#"href="/w/acme/runs/r9""#));
    assert!(html.contains(r#"action="/w/acme/inbox/i1/retry""#));
    assert!(html.contains(r#"action="/w/acme/inbox/i1/read""#));
    assert!(
        !html.contains("/inbox/i2/read"),
        "a read item has no mark-read button"
    );
    assert!(
        html.contains(r#"action="/w/acme/inbox/read""#),
        "mark all read"
    );
    assert!(
        html.contains("&lt;b&gt;tests&lt;/b&gt;"),
        "messages are escaped"
    );
    assert!(html.contains(r#"<a href="/w/acme/inbox?show=all" aria-current="page">All</a>"#));
    assert!(html.contains("1 unread item."));
}

#[test]
fn the_header_shows_the_unread_count_or_loads_it() {
    let mut v = samples::inbox();
    let html = inbox(&v).into_string();
    assert!(html.contains(r#"<a class="inbox-link" href="/w/acme/inbox" aria-current="page">Inbox<span class="inbox-count" id="inbox-count" title="2 unread">2</span></a>"#), "{html}");
    v.nav.inbox_unread = None;
    v.items.clear();
    v.unread_only = true;
    v.unread_count = 0;
    let html = inbox(&v).into_string();
    assert!(html.contains(r#"hx-get="/w/acme/inbox/count" hx-trigger="load""#));
    assert!(html.contains("You are all caught up."));
    assert!(!html.contains("Mark all read"));
}

#[test]
fn invitations_to_other_workspaces_show_a_banner() {
    let mut v = samples::inbox();
    assert!(!inbox(&v).into_string().contains("invitations-banner"));
    v.invitations = 1;
    let html = inbox(&v).into_string();
    assert!(
        html.contains("A workspace invited you.")
            && html.contains(r#"<a href="/invitations">Answer the invitation</a>"#),
        "{html}"
    );
    v.invitations = 2;
    assert!(
        inbox(&v)
            .into_string()
            .contains("2 workspaces invited you.")
    );
}
