//! What a runner is sent for a run it was given: the [`Order`] (the brief and prompt rendered here, the
//! agent's secrets opened here and nowhere else, its enabled skills as bundles, the repository setting,
//! a token valid for that run only), and what it is told about runs its previous life left behind.

use crate::domain::{Agent, FailureReason, NewApiToken, Role, Run, RunPurpose, RunTrigger};
use crate::runner::protocol::{AgentSpec, Order, Orphan, Resume, SkillBundle, SpecEnv};

use super::Engine;

/// Why a claimed run cannot be ordered; it is recorded as failed with this reason and message.
#[derive(Debug)]
pub(crate) struct Refusal {
    pub reason: FailureReason,
    pub message: String,
}

/// A store read that shaping an order needs failed; `what` names what was read.
#[derive(Debug, thiserror::Error)]
#[error("cannot read {what}: {source}")]
pub(crate) struct Unread {
    pub what: &'static str,
    #[source]
    pub source: crate::store::Error,
}

impl Unread {
    /// Turns a store error into this, for `map_err`.
    pub(crate) fn of(what: &'static str) -> impl FnOnce(crate::store::Error) -> Unread {
        move |source| Unread { what, source }
    }
}

impl From<Unread> for Refusal {
    fn from(e: Unread) -> Self {
        config(e.to_string())
    }
}

fn config(message: impl Into<String>) -> Refusal {
    Refusal {
        reason: FailureReason::Config,
        message: message.into(),
    }
}

/// The branch of a line of work — one agent on one issue — which each of its runs (follow-ups, retries,
/// a new assignment) advances: `muster/<KEY>-<agent>`. An agent's name that is not all ASCII letters,
/// digits and dashes is written with dashes for the others and the end of the agent's id appended, so
/// two agents never share a line. Nothing in it depends on timing.
pub(crate) fn line_branch(issue_key: &str, agent: &Agent) -> String {
    let name = agent.profile.name.as_str();
    let slug = branch_slug(name);
    if slug == name {
        return format!("muster/{issue_key}-{slug}");
    }
    let id = agent.id.to_string();
    let tail = id.get(id.len().saturating_sub(8)..).unwrap_or(&id);
    format!("muster/{issue_key}-{slug}-{tail}")
}

/// An agent's name as a branch name takes it: ASCII letters, digits and dashes, anything else a dash.
pub(crate) fn branch_slug(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' {
                c
            } else {
                '-'
            }
        })
        .collect()
}

/// An agent's enabled skills, as orders carry them.
pub async fn skill_bundles(
    store: &dyn crate::store::Store,
    agent: crate::domain::AgentId,
) -> crate::store::Result<Vec<SkillBundle>> {
    let attached = store.agent_skills(agent).await?;
    Ok(attached
        .into_iter()
        .filter(|a| a.enabled)
        .map(|a| SkillBundle::of(&a.skill))
        .collect())
}

/// The order for a run just claimed.
pub(crate) async fn build(engine: &Engine, run: &Run) -> Result<Order, Refusal> {
    let store = &engine.store;
    let issue = store
        .get_issue_by_id(run.issue_id)
        .await
        .map_err(|e| config(format!("cannot read the run's issue: {e}")))?;
    let agent = store
        .get_agent(run.workspace_id, run.agent_id)
        .await
        .map_err(|e| config(format!("cannot read the run's agent: {e}")))?;
    if let Some(problem) = agent.profile.model_problem() {
        // Saved before the rule: refuse to start rather than run an agent that can do nothing.
        return Err(config(format!(
            "the agent's model is not set: {problem}; set it on the agent's page"
        )));
    }
    // A monthly cap reached since the run was queued: it does not start.
    let breach = crate::engine::caps::cap_breach(
        store.as_ref(),
        run.workspace_id,
        agent.id,
        chrono::Utc::now(),
    )
    .await
    .map_err(|e| config(format!("cannot read the monthly caps: {e}")))?;
    if let Some(why) = breach {
        return Err(Refusal {
            reason: FailureReason::OverCap,
            message: why,
        });
    }
    let comments = store.list_comments(issue.id).await.unwrap_or_default();
    let ws = store
        .get_workspace(run.workspace_id)
        .await
        .map_err(|e| config(format!("cannot read the workspace: {e}")))?;
    let skills = skill_bundles(store.as_ref(), agent.id)
        .await
        .map_err(|e| config(format!("cannot load the agent's skills: {e}")))?;
    let mut spec = agent_spec(engine, &agent)?;
    if !spec.no_network {
        for host in &ws.egress_hosts {
            if !spec.egress_hosts.contains(host) {
                spec.egress_hosts.push(host.clone());
            }
        }
    }
    let place = work_place(engine, &ws, &issue)
        .await
        .map_err(|e| config(format!("cannot read the issue's project: {e}")))?;
    let token = run_token(engine, run).await?;
    let answered = new_comments(engine, run, &comments).await?;
    let api_url = engine
        .config
        .public_url
        .clone()
        .map(|u| u.trim_end_matches('/').to_owned());
    let mut prompt = match run.purpose {
        RunPurpose::Work => crate::runner::executor::brief_prompt(&issue, agent.profile.kind),
        RunPurpose::Plan => {
            super::planner::prompt(&issue, agent.profile.kind.brief_file(), api_url.as_deref())
        }
    };
    prompt.push_str(&answered);
    let resume = continued(engine, run, &answered).await?;
    let mut order = Order {
        run_id: run.id,
        epoch: run.lease_epoch,
        workspace_id: run.workspace_id,
        attempt: run.attempt,
        issue_key: issue.key.to_string(),
        branch: line_branch(&issue.key.to_string(), &agent),
        brief: crate::runner::executor::render_brief(&issue, &comments, &agent),
        prompt,
        agent: spec,
        skills,
        repo: place.repo,
        token,
        api_url,
        max_events: engine.config.max_events_per_run,
        next_seq: 1,
        resume,
        check: None,
        base: None,
        rates: store
            .rate_table(run.workspace_id)
            .await
            .map_err(|e| config(format!("cannot read the workspace's rate table: {e}")))?,
        blind: false,
        // The workspace's forge connection is for the workspace's repository, not a project's own.
        forge: if place.own_repo {
            None
        } else {
            super::forge::push_order(engine, run.workspace_id)
                .await
                .map_err(|e| config(format!("cannot read the workspace's forge connection: {e}")))?
        },
    };
    let blockers = super::plan::blockers_brief(engine, &issue)
        .await
        .map_err(|e| config(format!("cannot read the issue's blockers: {e}")))?;
    order.brief.push_str(&blockers);
    // Stacked work: a new line starts from its blocker's delivered commit (a plan reads the base).
    if run.purpose == RunPurpose::Work && order.resume.as_ref().is_none_or(|r| r.branch.is_none()) {
        order.base = super::plan::stacked_base(engine, &issue)
            .await
            .map_err(|e| config(format!("cannot read the issue's blockers: {e}")))?;
    }
    order
        .brief
        .push_str(&search_first(order.api_url.as_deref()));
    super::ensemble::shape_order(engine, run, &issue, agent.profile.name.as_str(), &mut order)
        .await?;
    Ok(order)
}

/// The brief's line that offers search to the agent, so that it does not file a duplicate: the exact
/// URL when the server knows its public one, else the run's `$MUSTER_URL`. A run's token may call it.
pub(crate) fn search_first(api_url: Option<&str>) -> String {
    format!(
        "\nSearch before you create an issue: `muster issue search \"some words\"`, or `GET \
         {}/api/v1/issues/search?q=some+words` with `Authorization: Bearer $MUSTER_TOKEN`.\n",
        api_url.unwrap_or("$MUSTER_URL")
    )
}

/// How far back a follow-up looks past runs that never started for one to continue.
const MAX_HOPS: usize = 5;

/// What `run` continues: the run named by its `previous_run_id` (for a retry, what the retried run
/// continued), with that run's session and branch. The resumed session's prompt is the new comments
/// alone, or a plain "continue" for a retry or an assignment, which answer none.
async fn continued(engine: &Engine, run: &Run, answered: &str) -> Result<Option<Resume>, Refusal> {
    let cannot = |e: crate::store::Error| config(format!("cannot read the run it continues: {e}"));
    let mut previous = match run.previous_run_id {
        Some(id) => engine.store.get_run(id).await.map_err(cannot)?,
        None => return Ok(None),
    };
    let retry = run.trigger == RunTrigger::Retry;
    if retry {
        // The retried attempt's own session is left alone: it ended in a failure.
        previous = match previous.previous_run_id {
            Some(id) => engine.store.get_run(id).await.map_err(cannot)?,
            None => return Ok(None),
        };
    }
    // A run that never started (cancelled while queued, refused) left nothing: look further back.
    for _ in 0..MAX_HOPS {
        match previous.previous_run_id {
            Some(id) if previous.session_id.is_none() && previous.branch.is_none() => {
                previous = engine.store.get_run(id).await.map_err(cannot)?;
            }
            _ => break,
        }
    }
    let prompt = match answered.trim() {
        "" => {
            "Continue your work on the issue; your brief (the context file) has the thread so far."
                .to_owned()
        }
        text => text.to_owned(),
    };
    // A retry continues the branch but not the session: the attempt it repeats may have failed
    // because the CLI could not resume it, and a fresh session's brief carries the thread anyway.
    let fresh_because = (retry && previous.session_id.is_some())
        .then(|| "a retry starts a fresh session".to_owned());
    Ok(Some(Resume {
        previous_run_id: previous.id,
        session_id: previous.session_id.filter(|_| !retry),
        fresh_because,
        branch: previous.branch,
        prompt,
    }))
}

/// The prompt's part for a follow-up: "New comments since your last run:" and each comment the run
/// answers (its set, see `engine::triggers`), oldest first, with its author's name; empty when the run
/// answers none (an assignment). Deleted comments are left out.
async fn new_comments(
    engine: &Engine,
    run: &Run,
    thread: &[crate::domain::Comment],
) -> Result<String, Refusal> {
    use crate::domain::CommentAuthor;
    let cannot = |e: crate::store::Error| config(format!("cannot read the run's comments: {e}"));
    let ids = engine
        .store
        .list_run_comments(run.id)
        .await
        .map_err(cannot)?;
    let answered: Vec<_> = thread.iter().filter(|c| ids.contains(&c.id)).collect();
    if answered.is_empty() {
        return Ok(String::new());
    }
    let members = engine
        .store
        .list_members(run.workspace_id)
        .await
        .map_err(cannot)?;
    let agents = engine
        .store
        .list_agents(run.workspace_id)
        .await
        .map_err(cannot)?;
    let mut out = String::from("\n\nNew comments since your last run:\n");
    for c in answered {
        let who = match c.author {
            CommentAuthor::User(id) => members
                .iter()
                .find(|m| m.user.id == id)
                .map_or("a former member", |m| m.user.display_name.as_str()),
            CommentAuthor::Agent(id) if id == run.agent_id => "you",
            CommentAuthor::Agent(id) => agents
                .iter()
                .find(|a| a.id == id)
                .map_or("a deleted agent", |a| a.profile.name.as_str()),
            CommentAuthor::System => "Muster",
        };
        out.push_str(&format!("\n{who}:\n{}\n", c.body.trim_end()));
    }
    Ok(out)
}

/// What a runner is told about a run its previous life left behind.
pub(crate) async fn orphan(engine: &Engine, run: &Run) -> Result<Orphan, crate::store::Error> {
    let issue = engine.store.get_issue_by_id(run.issue_id).await?;
    let agent = engine
        .store
        .get_agent(run.workspace_id, run.agent_id)
        .await
        .ok();
    let mut next_seq = 1;
    loop {
        let page = engine
            .store
            .run_events_since(run.id, next_seq - 1, 1000)
            .await?;
        match page.last() {
            Some(last) => next_seq = last.seq + 1,
            None => break,
        }
    }
    let secrets = agent
        .as_ref()
        .and_then(|a| agent_spec(engine, a).ok())
        .map(|spec| {
            spec.env
                .into_iter()
                .filter(|v| v.secret)
                .map(|v| v.value)
                .collect()
        })
        .unwrap_or_default();
    Ok(Orphan {
        run_id: run.id,
        epoch: run.lease_epoch,
        pid: run.pid,
        next_seq,
        issue_key: issue.key.to_string(),
        agent_name: agent
            .map(|a| a.profile.name.as_str().to_owned())
            .unwrap_or_default(),
        secrets,
        forge: super::forge::push_order(engine, run.workspace_id)
            .await
            .ok()
            .flatten(),
    })
}

/// The profile as the runner needs it, secrets opened. A key saved as a plain variable is still a key:
/// it is marked secret so the run's log never shows it. Reserved variables stored before that rule are
/// skipped.
fn agent_spec(engine: &Engine, agent: &Agent) -> Result<AgentSpec, Refusal> {
    let p = &agent.profile;
    let mut env = Vec::new();
    for var in &p.env {
        if let Some(why) = crate::domain::reserved_env(&var.key) {
            tracing::warn!(key = %var.key, why, "agent env variable ignored");
            continue;
        }
        let value = if var.secret {
            engine
                .secrets
                .open(&var.value)
                .map_err(|e| config(format!("cannot open the secret {}: {e:#}", var.key)))?
        } else {
            var.value.clone()
        };
        let secret = var.secret || muster_agents::API_KEY_VARS.contains(&var.key.as_str());
        env.push(SpecEnv {
            key: var.key.clone(),
            value,
            secret,
        });
    }
    Ok(AgentSpec {
        name: p.name.as_str().to_owned(),
        kind: p.kind,
        model: p.model.clone(),
        instructions: p.instructions.clone(),
        env,
        extra_args: p.extra_args.clone(),
        permission_mode: p.permission_mode,
        stall_timeout_secs: p.stall_timeout_secs,
        budget: p.budget,
        command: p.command.clone(),
        base_url: p.base_url.clone(),
        egress_hosts: if p.no_network {
            Vec::new()
        } else {
            p.egress_hosts.clone()
        },
        no_network: p.no_network,
    })
}

/// A token valid for this run only (see `http::extract`), held by the workspace's first owner; it dies
/// with the run.
async fn run_token(engine: &Engine, run: &Run) -> Result<String, Refusal> {
    let members = engine
        .store
        .list_members(run.workspace_id)
        .await
        .map_err(|e| config(format!("cannot read the workspace's members: {e}")))?;
    let owner = members
        .iter()
        .find(|m| m.role == Role::Owner)
        .ok_or_else(|| config("the workspace has no owner to hold the run's token"))?;
    let secret = crate::auth::new_secret(crate::auth::API_TOKEN_KIND);
    let new = NewApiToken {
        workspace_id: run.workspace_id,
        user_id: owner.user.id,
        name: format!("run {}", run.id),
        prefix: secret.prefix,
        token_hash: secret.hash,
        run_id: Some(run.id),
    };
    engine
        .store
        .create_api_token(&new)
        .await
        .map_err(|e| config(format!("cannot create the run's token: {e}")))?;
    Ok(secret.secret)
}

/// Where the runs of `issue` work: its project's repository and check when it has them, else the
/// workspace's.
pub(crate) async fn work_place(
    engine: &Engine,
    ws: &crate::domain::Workspace,
    issue: &crate::domain::Issue,
) -> crate::store::Result<crate::domain::WorkPlace> {
    let project = match issue.project {
        Some(id) => Some(engine.store.get_project_by_id(id).await?),
        None => None,
    };
    Ok(crate::domain::work_place(ws, project.as_ref()))
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_line_branch_names_the_issue_and_the_agent_and_nothing_timed() {
        assert_eq!(super::branch_slug("codex-coder"), "codex-coder");
        assert_eq!(super::branch_slug("Claude the 2nd"), "Claude-the-2nd");
        assert_eq!(super::branch_slug("a.b/c"), "a-b-c");
    }

    #[test]
    fn the_brief_offers_search_with_the_exact_url() {
        let line = super::search_first(Some("https://muster.example"));
        assert!(
            line.contains("`GET https://muster.example/api/v1/issues/search?q=some+words`"),
            "{line}"
        );
        assert!(super::search_first(None).contains("`GET $MUSTER_URL/api/v1/issues/search?q="));
    }
}
