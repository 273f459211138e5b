//! What started a run, for its page: the assignment, a person's reply, an agent's or person's mention
//! (with the chain depth a mention by an agent carries) or a retry; and the run it continues.

use muster_web::views::RunOriginView;

use super::run_url;
use crate::domain::{Issue, Run, RunId, RunTrigger};
use crate::http::pages::views::People;
use crate::state::AppState;
use crate::store;

/// How many characters of a run id the page shows (`muster run show` takes any unique prefix).
const SHORT_ID: usize = 8;

/// The origin line of `run` on `issue`. A trigger comment deleted since reads "a comment".
pub(super) async fn origin_view(
    state: &AppState,
    slug: &str,
    run: &Run,
    issue: &Issue,
    people: &People,
) -> crate::http::Result<RunOriginView> {
    let comment = match run.trigger_comment_id {
        Some(id) => match state.store.get_comment(issue.id, id).await {
            Ok(c) => Some(c),
            Err(store::Error::NotFound) => None,
            Err(e) => return Err(e.into()),
        },
        None => None,
    };
    let author = comment.as_ref().map(|c| people.person(c.author).name);
    let comment_url = comment
        .as_ref()
        .map(|c| format!("/w/{slug}/issues/{}#comment-{}", issue.key, c.id));
    let depth = match run.chain_depth {
        0 => String::new(),
        d => format!(" (chain depth {d})"),
    };
    let (trigger, trigger_url) = match (run.trigger, author) {
        (RunTrigger::Assignment, _) => ("assignment".to_owned(), None),
        (RunTrigger::Comment, Some(who)) => (format!("{who}\u{2019}s comment"), comment_url),
        (RunTrigger::Comment, None) => ("a comment".to_owned(), None),
        (RunTrigger::Mention, Some(who)) => (format!("mention by {who}{depth}"), comment_url),
        (RunTrigger::Mention, None) => (format!("a mention{depth}"), None),
        (RunTrigger::Retry, _) => match run.previous_run_id {
            Some(prev) => (
                format!("retry of run {}", short(prev)),
                Some(run_url(slug, prev)),
            ),
            None => ("retry".to_owned(), None),
        },
    };
    // A retry's previous run is the one it retries (said above), not a session it continues.
    let continues = run
        .previous_run_id
        .filter(|_| run.trigger != RunTrigger::Retry)
        .map(|prev| (short(prev), run_url(slug, prev)));
    Ok(RunOriginView {
        trigger,
        trigger_url,
        continues,
    })
}

fn short(id: RunId) -> String {
    id.to_string().chars().take(SHORT_ID).collect()
}
