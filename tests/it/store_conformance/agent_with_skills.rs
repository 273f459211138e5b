//! `create_agent_with_skills`: a new agent and its default skills in one transaction (issue 28).

use std::sync::Arc;

use muster::domain::*;
use muster::store::Store;

use super::{assert_conflict, fixture, store_cases};

store_cases!(an_agent_is_created_with_the_skills_its_workspace_has);

fn written(slug: &str) -> NewSkill {
    NewSkill {
        slug: Slug::parse(slug).unwrap(),
        name: slug.to_owned(),
        description: format!("How to {slug}"),
        body: format!("---\nname: {slug}\ndescription: How to {slug}\n---\nSteps."),
        files: Vec::new(),
        source: SkillSource::Written,
        content_hash: format!("hash-{slug}"),
    }
}

fn attached(skills: &[AgentSkill]) -> Vec<(&str, bool)> {
    skills
        .iter()
        .map(|a| (a.skill.slug.as_str(), a.enabled))
        .collect()
}

/// The named skills the workspace has are attached and enabled; a name it lacks is skipped, as is a
/// same-named skill of another workspace; a name given twice attaches once. A taken name is the
/// usual conflict and attaches nothing more.
async fn an_agent_is_created_with_the_skills_its_workspace_has(store: Arc<dyn Store>) {
    let f = fixture(&store, "team", "MUS").await;
    let other = fixture(&store, "other", "OTH").await;
    store
        .create_skill(f.ws.id, &written("report"))
        .await
        .unwrap();
    store.create_skill(f.ws.id, &written("tdd")).await.unwrap();
    store
        .create_skill(other.ws.id, &written("elsewhere"))
        .await
        .unwrap();
    let slugs = ["report", "missing", "elsewhere", "report"].map(|s| Slug::parse(s).unwrap());
    let new = NewAgent::new(AgentName::parse("coder").unwrap(), RuntimeKind::Claude);

    let created = store
        .create_agent_with_skills(f.ws.id, &new, &slugs)
        .await
        .unwrap();
    assert_eq!(created.profile, new, "the profile is stored as given");
    assert_eq!(store.get_agent(f.ws.id, created.id).await.unwrap(), created);
    let skills = store.agent_skills(created.id).await.unwrap();
    assert_eq!(attached(&skills), [("report", true)]);

    assert_conflict(
        store
            .create_agent_with_skills(f.ws.id, &new, &[Slug::parse("tdd").unwrap()])
            .await,
        "agent_workspace_name_key",
    );
    assert_eq!(store.list_agents(f.ws.id).await.unwrap().len(), 1);
    let skills = store.agent_skills(created.id).await.unwrap();
    assert_eq!(
        attached(&skills),
        [("report", true)],
        "a refused create attaches nothing"
    );

    let bare = NewAgent::new(AgentName::parse("bare").unwrap(), RuntimeKind::Codex);
    let bare = store
        .create_agent_with_skills(f.ws.id, &bare, &[])
        .await
        .unwrap();
    assert!(store.agent_skills(bare.id).await.unwrap().is_empty());
}
