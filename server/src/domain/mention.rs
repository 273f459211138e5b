//! `@name` mentions: where they are in a text, and whom they name in a workspace.
//!
//! Grammar: `@` at the start of the text or after a character that cannot be part of an address (so
//! `a@b.example` is no mention), then `A-Z a-z 0-9 - _ .` (an agent name's characters, see
//! [`super::AgentName`]); a trailing `.` ends the sentence, not the name.
//!
//! Whom a name names ([`Mentionable::resolve`]), case-insensitively:
//! - an agent, by its name (the exact spelling first, since `Coder` and `coder` may both exist);
//! - else a member, by their **handle**: the local part of their email address, lower-cased, cut at a
//!   `+` (sub-addressing) and without the characters a name cannot hold (`ada.l+muster@x.test` is
//!   `@ada.l`). Agents win a clash; a handle two members share names neither of them.

use std::ops::Range;

use super::{AgentId, UserId};

/// The byte range (including the `@`) and the name of each mention in `text`, in order.
pub fn mention_spans(text: &str) -> Vec<(Range<usize>, &str)> {
    let mut found = Vec::new();
    let mut prev: Option<char> = None;
    for (i, c) in text.char_indices() {
        let after_address_char = prev.is_some_and(|p| p.is_alphanumeric() || "._-@".contains(p));
        prev = Some(c);
        if c != '@' || after_address_char {
            continue;
        }
        let rest = &text[i + 1..];
        let len = rest.find(|c: char| !is_name_char(c)).unwrap_or(rest.len());
        // A sentence may end right after the name ("thanks @reviewer.").
        let name = rest[..len].trim_end_matches('.');
        if !name.is_empty() {
            found.push((i..i + 1 + name.len(), name));
        }
    }
    found
}

fn is_name_char(c: char) -> bool {
    c.is_alphanumeric() || matches!(c, '-' | '_' | '.')
}

/// A member's handle (see the module doc), or `None` when nothing of the local part is left.
pub fn handle(email: &str) -> Option<String> {
    let local = email.split('@').next().unwrap_or_default();
    let local = local.split('+').next().unwrap_or_default();
    let handle: String = local
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
        .collect::<String>()
        .trim_matches('.')
        .to_lowercase();
    (!handle.is_empty()).then_some(handle)
}

/// Whom a mention names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mentioned<'a> {
    /// An agent, with its name as written in the workspace.
    Agent(AgentId, &'a str),
    /// A member, with their handle.
    Person(UserId, &'a str),
}

/// The names a workspace answers to: its agents' names and its members' handles.
#[derive(Debug, Clone, Default)]
pub struct Mentionable {
    agents: Vec<(AgentId, String)>,
    people: Vec<(UserId, String)>,
}

impl Mentionable {
    /// The agents (id, name) and members (id, email) of one workspace.
    pub fn new<'a>(
        agents: impl IntoIterator<Item = (AgentId, &'a str)>,
        members: impl IntoIterator<Item = (UserId, &'a str)>,
    ) -> Self {
        let agents: Vec<(AgentId, String)> = agents
            .into_iter()
            .map(|(id, name)| (id, name.to_owned()))
            .collect();
        let all: Vec<(UserId, String)> = members
            .into_iter()
            .filter_map(|(id, email)| handle(email).map(|h| (id, h)))
            .collect();
        let people = all
            .iter()
            .filter(|(_, h)| all.iter().filter(|(_, o)| o == h).count() == 1)
            .filter(|(_, h)| !agents.iter().any(|(_, a)| a.eq_ignore_ascii_case(h)))
            .cloned()
            .collect();
        Self { agents, people }
    }

    /// Whom `@name` names here, if anyone.
    pub fn resolve(&self, name: &str) -> Option<Mentioned<'_>> {
        let agent = self.agents.iter().find(|(_, a)| a == name).or_else(|| {
            let mut folded = self
                .agents
                .iter()
                .filter(|(_, a)| a.eq_ignore_ascii_case(name));
            folded.next().filter(|_| folded.next().is_none())
        });
        if let Some((id, a)) = agent {
            return Some(Mentioned::Agent(*id, a));
        }
        self.people
            .iter()
            .find(|(_, h)| h.eq_ignore_ascii_case(name))
            .map(|(id, h)| Mentioned::Person(*id, h))
    }

    /// Everyone mentioned in `text`, in order, each once.
    pub fn in_text(&self, text: &str) -> Vec<Mentioned<'_>> {
        let mut found: Vec<Mentioned<'_>> = Vec::new();
        for (_, name) in mention_spans(text) {
            if let Some(m) = self.resolve(name)
                && !found.contains(&m)
            {
                found.push(m);
            }
        }
        found
    }

    /// The agents' names and the members' handles that can be mentioned (for autocompletion).
    pub fn agents(&self) -> impl Iterator<Item = (AgentId, &str)> {
        self.agents.iter().map(|(id, n)| (*id, n.as_str()))
    }

    /// The members that can be mentioned, with their handles.
    pub fn people(&self) -> impl Iterator<Item = (UserId, &str)> {
        self.people.iter().map(|(id, h)| (*id, h.as_str()))
    }
}

/// The agents a person's comment sets to work, in order: a comment that mentions somebody is addressed
/// to them, so it wakes the agents it mentions and nobody else; one that mentions nobody is a reply to
/// the assigned agent (`assignee`, when the issue takes replies). A comment that mentions only
/// people wakes no agent.
pub fn woken_by_comment(mentions: &[Mentioned<'_>], assignee: Option<AgentId>) -> Vec<AgentId> {
    if mentions.is_empty() {
        return assignee.into_iter().collect();
    }
    mentions
        .iter()
        .filter_map(|m| match m {
            Mentioned::Agent(id, _) => Some(*id),
            Mentioned::Person(..) => None,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_comment_wakes_whom_it_addresses() {
        let (coder, reviewer, grace) = (AgentId::new(), AgentId::new(), UserId::new());
        let m = Mentionable::new(
            [(coder, "coder"), (reviewer, "reviewer")],
            [(grace, "grace@a.test")],
        );
        let woken = |text: &str| woken_by_comment(&m.in_text(text), Some(coder));
        assert_eq!(woken("please also cover the empty case"), vec![coder]);
        assert_eq!(
            woken("@grace can you confirm the spec?"),
            Vec::<AgentId>::new()
        );
        assert_eq!(woken("@grace @reviewer have a look"), vec![reviewer]);
        assert_eq!(woken("@coder @grace one more thing"), vec![coder]);
        assert_eq!(woken("mail grace@a.test, @nobody knows"), vec![coder]);
        assert_eq!(
            woken_by_comment(&m.in_text("no mention"), None),
            Vec::<AgentId>::new()
        );
    }

    fn names(text: &str) -> Vec<&str> {
        mention_spans(text).into_iter().map(|(_, n)| n).collect()
    }

    #[test]
    fn spans_cover_the_at_sign_and_the_name_but_not_a_closing_period() {
        let text = "thanks @reviewer. and (@a-1_x) — é@no, x@y.z, @";
        let spans = mention_spans(text);
        assert_eq!(names(text), vec!["reviewer", "a-1_x"]);
        assert_eq!(&text[spans[0].0.clone()], "@reviewer");
        assert_eq!(&text[spans[1].0.clone()], "@a-1_x");
        assert_eq!(names("@@double"), Vec::<&str>::new());
        assert_eq!(names("no one here @ all"), Vec::<&str>::new());
        assert_eq!(
            names("@coder please, then @Reviewer. cc @coder and mail a@b.example"),
            vec!["coder", "Reviewer", "coder"],
            "every span, in order (Mentionable::in_text keeps each one once)"
        );
    }

    #[test]
    fn handles_are_the_cleaned_local_part() {
        assert_eq!(handle("Ada.L+muster@x.test").as_deref(), Some("ada.l"));
        assert_eq!(handle("o'brien@x.test").as_deref(), Some("obrien"));
        assert_eq!(handle("+tag@x.test"), None);
    }

    #[test]
    fn agents_win_clashes_and_shared_handles_name_no_one() {
        let (coder, upper) = (AgentId::new(), AgentId::new());
        let (ada, bob, bob2, cody) = (UserId::new(), UserId::new(), UserId::new(), UserId::new());
        let m = Mentionable::new(
            [(coder, "coder"), (upper, "Reviewer")],
            [
                (ada, "ada@a.test"),
                (bob, "bob@a.test"),
                (bob2, "bob@b.test"),
                (cody, "coder@a.test"),
            ],
        );
        assert_eq!(m.resolve("CODER"), Some(Mentioned::Agent(coder, "coder")));
        assert_eq!(
            m.resolve("reviewer"),
            Some(Mentioned::Agent(upper, "Reviewer"))
        );
        assert_eq!(m.resolve("Ada"), Some(Mentioned::Person(ada, "ada")));
        assert_eq!(m.resolve("bob"), None, "two members share it");
        assert_eq!(m.resolve("nobody"), None);
        assert_eq!(m.people().count(), 1, "cody's handle is an agent's name");
        assert_eq!(
            m.in_text("@ada @coder and @Ada again, mail ada@a.test"),
            vec![
                Mentioned::Person(ada, "ada"),
                Mentioned::Agent(coder, "coder")
            ]
        );
    }

    #[test]
    fn an_exact_spelling_beats_a_folded_one() {
        let (lower, upper) = (AgentId::new(), AgentId::new());
        let m = Mentionable::new([(lower, "coder"), (upper, "Coder")], []);
        assert_eq!(m.resolve("Coder"), Some(Mentioned::Agent(upper, "Coder")));
        assert_eq!(m.resolve("coder"), Some(Mentioned::Agent(lower, "coder")));
        assert_eq!(m.resolve("CODER"), None, "ambiguous");
    }
}
