//! Agents and skills.

use std::sync::Arc;

use muster::domain::*;
use muster::store::Store;

use super::{agent, assert_conflict, assert_not_found, fixture, issue, store_cases};

store_cases!(
    agents_crud,
    skills_and_attachments,
    every_workspace_is_listed,
    egress_allow_lists
);

async fn agents_crud(store: Arc<dyn Store>) {
    let f = fixture(&store, "team", "MUS").await;
    let mut new = NewAgent::new(AgentName::parse("reviewer").unwrap(), RuntimeKind::Codex);
    new.model = Some("gpt-5-codex".into());
    new.instructions = "Review diffs.".into();
    new.env = vec![EnvVar {
        key: "OPENAI_API_KEY".into(),
        value: "sealed:abc".into(),
        secret: true,
    }];
    new.extra_args = vec!["--full-auto".into()];
    new.budget = Budget {
        usd: Some(2.5),
        tokens: Some(100_000),
    };
    new.base_url = Some("http://127.0.0.1:8080/v1".into());
    let created = store.create_agent(f.ws.id, &new).await.unwrap();
    assert_eq!(created.profile, new, "every profile field round-trips");
    assert_eq!(store.get_agent(f.ws.id, created.id).await.unwrap(), created);
    assert_eq!(
        store
            .get_agent_by_name(f.ws.id, &AgentName::parse("reviewer").unwrap())
            .await
            .unwrap(),
        created
    );
    assert_conflict(
        store.create_agent(f.ws.id, &new).await,
        "agent_workspace_name_key",
    );

    let other = fixture(&store, "other", "OTH").await;
    assert_not_found(store.get_agent(other.ws.id, created.id).await);
    store
        .create_agent(other.ws.id, &new)
        .await
        .expect("names are unique per workspace only");

    let alpha = agent(&store, f.ws.id, "alpha", 2).await;
    let names: Vec<_> = store
        .list_agents(f.ws.id)
        .await
        .unwrap()
        .into_iter()
        .map(|a| a.profile.name.as_str().to_owned())
        .collect();
    assert_eq!(names, ["alpha", "reviewer"]);

    let mut changed = new.clone();
    changed.kind = RuntimeKind::Llama;
    changed.budget = Budget::default();
    changed.model = None;
    let updated = store
        .update_agent(f.ws.id, created.id, &changed)
        .await
        .unwrap();
    assert_eq!(updated.profile, changed);
    assert!(updated.updated_at >= created.updated_at);
    let mut clash = changed.clone();
    clash.name = AgentName::parse("alpha").unwrap();
    assert_conflict(
        store.update_agent(f.ws.id, created.id, &clash).await,
        "agent_workspace_name_key",
    );
    assert_not_found(store.update_agent(other.ws.id, created.id, &changed).await);

    // An agent with run history cannot be deleted; one without can.
    let i = issue(&store, f.ws.id, "x", IssueStatus::Todo).await;
    store
        .create_run(&NewRun::assignment(f.ws.id, i.id, alpha.id))
        .await
        .unwrap();
    assert_conflict(store.delete_agent(f.ws.id, alpha.id).await, "foreign_key");
    store.delete_agent(f.ws.id, created.id).await.unwrap();
    assert_not_found(store.delete_agent(f.ws.id, created.id).await);
    assert_not_found(store.get_agent(f.ws.id, created.id).await);
}

fn skill(slug: &str, files: &[(&str, &str)]) -> NewSkill {
    NewSkill {
        slug: Slug::parse(slug).unwrap(),
        name: slug.to_owned(),
        description: format!("How to {slug}"),
        body: format!("---\nname: {slug}\ndescription: How to {slug}\n---\nSteps."),
        files: files
            .iter()
            .map(|(p, c)| SkillFile {
                path: (*p).into(),
                content: (*c).into(),
            })
            .collect(),
        source: SkillSource::Written,
        content_hash: format!("hash-{slug}"),
    }
}

async fn skills_and_attachments(store: Arc<dyn Store>) {
    let f = fixture(&store, "team", "MUS").await;
    let tdd = store
        .create_skill(
            f.ws.id,
            &skill(
                "tdd",
                &[("scripts/run.sh", "cargo test"), ("README.md", "read me")],
            ),
        )
        .await
        .unwrap();
    assert_eq!(
        tdd.files
            .iter()
            .map(|f| f.path.as_str())
            .collect::<Vec<_>>(),
        ["README.md", "scripts/run.sh"]
    );
    assert_eq!(tdd.description, "How to tdd");
    let review = store
        .create_skill(f.ws.id, &skill("review", &[]))
        .await
        .unwrap();
    assert_conflict(
        store.create_skill(f.ws.id, &skill("tdd", &[])).await,
        "skill_workspace_slug_key",
    );
    assert_eq!(store.get_skill(f.ws.id, &tdd.slug).await.unwrap(), tdd);
    let listed = store.list_skills(f.ws.id).await.unwrap();
    assert_eq!(listed, vec![review.clone(), tdd.clone()]);

    let mut edited = skill("tdd", &[("notes.md", "new")]);
    edited.source = SkillSource::Imported;
    edited.content_hash = "hash-2".into();
    let updated = store
        .update_skill(f.ws.id, &tdd.slug, &edited)
        .await
        .unwrap();
    assert_eq!(updated.id, tdd.id);
    assert_eq!(
        (updated.source, updated.content_hash.as_str()),
        (SkillSource::Imported, "hash-2")
    );
    assert_eq!(
        updated.files,
        vec![SkillFile {
            path: "notes.md".into(),
            content: "new".into()
        }],
        "files are replaced"
    );
    assert_not_found(
        store
            .update_skill(f.ws.id, &Slug::parse("nope").unwrap(), &edited)
            .await,
    );

    let coder = agent(&store, f.ws.id, "coder", 1).await;
    store.attach_skill(coder.id, tdd.id, true).await.unwrap();
    store.attach_skill(coder.id, review.id, true).await.unwrap();
    store
        .attach_skill(coder.id, review.id, false)
        .await
        .expect("re-attaching flips the switch");
    let attached = store.agent_skills(coder.id).await.unwrap();
    assert_eq!(
        attached
            .iter()
            .map(|a| (a.skill.slug.as_str(), a.enabled))
            .collect::<Vec<_>>(),
        [("review", false), ("tdd", true)]
    );
    assert_eq!(
        attached[1].skill, updated,
        "attached skills carry their files"
    );
    store.detach_skill(coder.id, review.id).await.unwrap();
    assert_not_found(store.detach_skill(coder.id, review.id).await);
    assert_eq!(store.agent_skills(coder.id).await.unwrap().len(), 1);

    store.delete_skill(f.ws.id, &tdd.slug).await.unwrap();
    assert!(
        store.agent_skills(coder.id).await.unwrap().is_empty(),
        "deleting a skill detaches it"
    );
    assert_not_found(store.get_skill(f.ws.id, &tdd.slug).await);
    assert_not_found(store.delete_skill(f.ws.id, &tdd.slug).await);
}

/// `list_workspaces`: all of them, oldest first (seeding built-in skills at start-up walks this list).
async fn every_workspace_is_listed(store: Arc<dyn Store>) {
    assert!(store.list_workspaces().await.unwrap().is_empty());
    let first = fixture(&store, "first", "FIR").await;
    let second = fixture(&store, "second", "SEC").await;
    let slugs: Vec<String> = store
        .list_workspaces()
        .await
        .unwrap()
        .into_iter()
        .map(|w| w.slug.to_string())
        .collect();
    assert_eq!(
        slugs,
        [first.ws.slug.to_string(), second.ws.slug.to_string()]
    );
}

/// An agent's egress allow-list and network switch, and the workspace's default list, round-trip; the
/// default list belongs to its workspace alone.
async fn egress_allow_lists(store: Arc<dyn Store>) {
    let f = fixture(&store, "team", "MUS").await;
    let hosts = |list: &[&str]| -> Vec<HostPattern> {
        list.iter()
            .map(|h| HostPattern::parse_field("egress_hosts", h).unwrap())
            .collect()
    };
    let mut new = NewAgent::new(AgentName::parse("fetcher").unwrap(), RuntimeKind::Claude);
    new.egress_hosts = hosts(&["github.com", "*.npmjs.org", "10.0.0.7:8443"]);
    let created = store.create_agent(f.ws.id, &new).await.unwrap();
    assert_eq!(created.profile, new);
    assert!(!created.profile.no_network);
    new.egress_hosts = hosts(&["gitlab.com"]);
    new.no_network = true;
    let updated = store.update_agent(f.ws.id, created.id, &new).await.unwrap();
    assert_eq!(updated.profile, new);
    assert_eq!(
        store.get_agent(f.ws.id, created.id).await.unwrap().profile,
        new
    );
    // A new agent has none and may use the network.
    let plain = agent(&store, f.ws.id, "plain", 1).await;
    assert!(plain.profile.egress_hosts.is_empty() && !plain.profile.no_network);

    assert!(f.ws.egress_hosts.is_empty());
    let other = fixture(&store, "other", "OTH").await;
    let ws = store
        .set_workspace_egress(f.ws.id, &hosts(&["pypi.org", "*.pythonhosted.org"]))
        .await
        .unwrap();
    assert_eq!(ws.egress_hosts, hosts(&["pypi.org", "*.pythonhosted.org"]));
    assert_eq!(store.get_workspace(f.ws.id).await.unwrap(), ws);
    assert!(
        store
            .get_workspace(other.ws.id)
            .await
            .unwrap()
            .egress_hosts
            .is_empty()
    );
    let cleared = store.set_workspace_egress(f.ws.id, &[]).await.unwrap();
    assert!(cleared.egress_hosts.is_empty());
    assert_not_found(
        store
            .set_workspace_egress(WorkspaceId(uuid::Uuid::new_v4()), &[])
            .await,
    );
}
