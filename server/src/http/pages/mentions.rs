//! Mentions on pages: the names a comment box completes, and markdown with the workspace's `@name`s
//! marked (agents link to their page, people get a titled span). Who a name names is
//! `domain::Mentionable`'s rule, the same the triggers and the inbox follow.

use muster_web::views::{MentionOptionView, PersonKind};

use super::views::People;
use crate::domain::{Actor, Mentionable, Mentioned};
use crate::markdown::{MentionLink, to_safe_html_with_mentions};

/// The names `people`'s workspace answers to.
pub fn names(people: &People) -> Mentionable {
    Mentionable::new(
        people
            .agents
            .iter()
            .map(|a| (a.id, a.profile.name.as_str())),
        people
            .members
            .iter()
            .map(|m| (m.user.id, m.user.email.as_str())),
    )
}

/// What `@` offers in a comment box: the agents (labelled with their runtime), then the people
/// (labelled with their display name).
pub fn options(people: &People) -> Vec<MentionOptionView> {
    let names = names(people);
    let agents = names.agents().map(|(id, name)| MentionOptionView {
        name: name.to_owned(),
        label: people
            .agents
            .iter()
            .find(|a| a.id == id)
            .map(|a| a.profile.kind.to_string())
            .unwrap_or_default(),
        kind: PersonKind::Agent,
    });
    let persons = names.people().map(|(id, handle)| MentionOptionView {
        name: handle.to_owned(),
        label: people.person(Actor::User(id)).name,
        kind: PersonKind::User,
    });
    agents.chain(persons).collect()
}

/// `text` rendered as safe HTML with the mentions `names` knows marked.
pub fn markdown(text: &str, names: &Mentionable, people: &People, slug: &str) -> String {
    to_safe_html_with_mentions(text, &|name| {
        Some(match names.resolve(name)? {
            Mentioned::Agent(_, agent) => MentionLink::Agent {
                href: format!("/w/{slug}/agents/{agent}"),
            },
            Mentioned::Person(user, _) => MentionLink::Person {
                name: people.person(Actor::User(user)).name,
            },
        })
    })
}
