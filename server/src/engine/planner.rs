//! Plan runs: an agent asked to break an issue down proposes a tree of sub-issues through its run's
//! token (`POST /api/v1/issues/{key}/proposals`) instead of changing code. Its prompt says how; its end
//! leaves the issue where it is, and says so in the thread when it proposed nothing.

use crate::domain::{Agent, Issue, Run};
use crate::store;

use super::Engine;

/// A plan run's prompt: what to propose, in which shape, and where to send it.
pub(crate) fn prompt(issue: &Issue, brief_file: &str, api_url: Option<&str>) -> String {
    let api = api_url.unwrap_or("$MUSTER_URL");
    format!(
        "Plan issue {key}: {title}. The full brief is in {brief_file} in the current directory. Do not \
         change any file: read the code and the brief, then propose how to break the issue into \
         sub-issues that each agent can finish on its own. Search first so that nothing duplicates an \
         existing issue.\n\n\
         Propose the plan with one request (a person reviews it before anything is created):\n\
         curl -sS -X POST -H \"Authorization: Bearer $MUSTER_TOKEN\" -H 'content-type: application/json' \
         {api}/api/v1/issues/{key}/proposals --data @plan.json\n\n\
         where plan.json is {{\"summary\": \"the plan in a sentence or two\", \"items\": [{{\"ref\": \"api\", \
         \"title\": \"…\", \"description\": \"…\", \"acceptance\": \"how to tell it is done\", \"agent\": \
         \"an agent's name, or omit it\", \"blocked_by\": [\"refs of items that must be done first\"]}}]}}. \
         At most 50 items; refs are short words unique in the plan; no cycles. The agents of the workspace \
         are listed by `GET {api}/api/v1/agents`. A 422 answer names what to fix: fix it and send again. \
         Write plan.json outside the repository (for example in /tmp) or delete it after sending. Finish \
         with a short summary of the plan.",
        key = issue.key,
        title = issue.title.as_str(),
    )
}

/// After a plan run succeeded: nothing more when it proposed a plan (the proposal said so in the
/// thread); otherwise the thread says it proposed none, so nobody waits for a review that will not come.
pub(crate) async fn plan_ended(
    state: &Engine,
    run: &Run,
    issue: &Issue,
    agent: &Agent,
) -> store::Result<()> {
    let proposed = state
        .store
        .list_proposals(issue.id)
        .await?
        .iter()
        .any(|p| p.run_id == Some(run.id));
    if proposed {
        return Ok(());
    }
    let note = format!(
        "{}'s plan run ended without proposing a plan. Ask again with \"Plan with agent\", or break {} \
         down by hand.",
        agent.profile.name.as_str(),
        issue.key
    );
    state.note_on_issue(issue.id, Some(run.id), &note).await
}
