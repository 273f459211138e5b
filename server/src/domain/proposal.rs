//! The planner's output: a tree of sub-issues an agent proposes for an issue (through a plan run's
//! token), which a person reviews, edits (drop, rename, re-assign, re-wire) and approves in one step.
//!
//! A proposal is kept as sent, in plain strings, so a person sees exactly what the agent said; it is
//! checked ([`check_tree`]) when it is proposed and again, as edited, when it is approved.

use chrono::{DateTime, Utc};

use super::{AgentId, IssueId, IssueTitle, ProposalId, RunId, UserId, WorkspaceId, string_enum};

/// The most sub-issues one proposal may hold.
pub const MAX_PROPOSED: usize = 50;
/// The longest item reference (`"api"`, `"2"`, `"tests-e2e"`).
pub const REF_MAX_CHARS: usize = 32;
/// The longest proposal summary, in bytes.
pub const SUMMARY_MAX_BYTES: usize = 4096;

string_enum!(
    /// Where a proposal is: waiting for review, approved into issues, or discarded (by a person, or by
    /// a newer proposal for the same issue).
    ProposalStatus, "status" {
        Pending => "pending",
        Approved => "approved",
        Discarded => "discarded",
    }
);

/// One proposed sub-issue, as the agent sent it and as a person edited it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize, utoipa::ToSchema)]
pub struct ProposedIssue {
    /// A short name the other items' `blocked_by` use: letters, digits, `-` and `_`.
    #[serde(rename = "ref")]
    #[schema(example = "api")]
    pub reference: String,
    #[schema(example = "Add the /health endpoint")]
    pub title: String,
    #[serde(default)]
    pub description: String,
    /// How to tell it is done (a check a reviewer or a test can run).
    #[serde(default)]
    pub acceptance: String,
    /// The agent suggested for it (by name); none leaves it unassigned.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    /// The refs of the items that must be done before this one starts.
    #[serde(default)]
    pub blocked_by: Vec<String>,
}

impl ProposedIssue {
    /// The body of the issue it becomes: its description, then its acceptance check.
    pub fn body(&self) -> String {
        let description = self.description.trim();
        let acceptance = self.acceptance.trim();
        match (description.is_empty(), acceptance.is_empty()) {
            (_, true) => description.to_owned(),
            (true, false) => format!("## Acceptance\n\n{acceptance}"),
            (false, false) => format!("{description}\n\n## Acceptance\n\n{acceptance}"),
        }
    }

    /// The suggested agent's name, when one is named (`"none"` and blank name none).
    pub fn agent_name(&self) -> Option<&str> {
        self.agent
            .as_deref()
            .map(str::trim)
            .filter(|a| !a.is_empty() && !a.eq_ignore_ascii_case("none"))
    }
}

/// A stored proposal.
#[derive(Debug, Clone, PartialEq)]
pub struct Proposal {
    pub id: ProposalId,
    pub workspace_id: WorkspaceId,
    /// The issue it breaks down: its items become that issue's sub-issues.
    pub issue_id: IssueId,
    /// The plan run that proposed it (gone when that run was deleted).
    pub run_id: Option<RunId>,
    /// The agent that proposed it.
    pub agent_id: Option<AgentId>,
    pub status: ProposalStatus,
    /// What the agent said of its plan.
    pub summary: String,
    /// The items as proposed; once approved, as approved.
    pub items: Vec<ProposedIssue>,
    /// The issues approval made, in the items' creation order.
    pub created: Vec<IssueId>,
    pub created_at: DateTime<Utc>,
    pub decided_at: Option<DateTime<Utc>>,
    pub decided_by: Option<UserId>,
}

/// A proposal to record (it replaces the issue's pending one, which is discarded).
#[derive(Debug, Clone)]
pub struct NewProposal {
    pub workspace_id: WorkspaceId,
    pub issue_id: IssueId,
    pub run_id: Option<RunId>,
    pub agent_id: Option<AgentId>,
    pub summary: String,
    pub items: Vec<ProposedIssue>,
}

/// One issue approval creates, checked: blockers are indexes of issues created before it.
#[derive(Debug, Clone, PartialEq)]
pub struct PlannedIssue {
    pub title: IssueTitle,
    pub body: String,
    pub assignee: Option<AgentId>,
    pub blocked_by: Vec<usize>,
}

/// A tree that passed [`check_tree`]: the items' indexes in creation order (every item after its
/// blockers, otherwise as listed), and each item's blockers as indexes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckedTree {
    pub order: Vec<usize>,
    pub blockers: Vec<Vec<usize>>,
    /// Each item's title, checked.
    pub titles: Vec<IssueTitle>,
}

impl CheckedTree {
    /// How deep each item sits: 0 for an item nothing blocks, else one more than its deepest blocker.
    pub fn depths(&self) -> Vec<usize> {
        let mut depth = vec![0; self.blockers.len()];
        for &i in &self.order {
            depth[i] = self.blockers[i]
                .iter()
                .map(|&b| depth[b] + 1)
                .max()
                .unwrap_or(0);
        }
        depth
    }
}

/// Checks a proposed tree: 1 to [`MAX_PROPOSED`] items; refs present, well formed and unique; titles and
/// bodies valid; every `blocked_by` naming another item once; no cycle (the cycle is named). The
/// problems come as (field, message), the field naming the item (`items[2].title`).
pub fn check_tree(items: &[ProposedIssue]) -> Result<CheckedTree, Vec<(String, String)>> {
    let mut problems = Vec::new();
    if items.is_empty() {
        problems.push((
            "items".to_owned(),
            "a plan needs at least one sub-issue".to_owned(),
        ));
    }
    if items.len() > MAX_PROPOSED {
        problems.push((
            "items".to_owned(),
            format!(
                "a plan holds at most {MAX_PROPOSED} sub-issues, not {}",
                items.len()
            ),
        ));
    }
    if !problems.is_empty() {
        return Err(problems);
    }
    let mut index = std::collections::HashMap::new();
    let mut titles = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let reference = item.reference.trim();
        let field = format!("items[{i}].ref");
        if reference.is_empty() {
            problems.push((field, "must not be empty".to_owned()));
        } else if reference.chars().count() > REF_MAX_CHARS
            || !reference
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        {
            problems.push((
                field,
                format!(
                    "{reference:?} is not a ref: up to {REF_MAX_CHARS} letters, digits, '-' or '_'"
                ),
            ));
        } else if index.insert(reference.to_owned(), i).is_some() {
            problems.push((field, format!("{reference:?} names two items")));
        }
        match IssueTitle::parse(&item.title) {
            Ok(title) => titles.push(title),
            Err(e) => problems.push((format!("items[{i}].title"), e.message)),
        }
        if let Err(e) = super::issue_body_ok(&item.body()) {
            problems.push((format!("items[{i}].description"), e.message));
        }
    }
    let mut blockers = vec![Vec::new(); items.len()];
    for (i, item) in items.iter().enumerate() {
        for blocker in &item.blocked_by {
            let field = format!("items[{i}].blocked_by");
            match index.get(blocker.trim()) {
                None => problems.push((field, format!("{blocker:?} is not the ref of an item"))),
                Some(&b) if b == i => {
                    problems.push((field, "an item cannot block itself".to_owned()))
                }
                Some(&b) if blockers[i].contains(&b) => {
                    problems.push((field, format!("{blocker:?} is named twice")));
                }
                Some(&b) => blockers[i].push(b),
            }
        }
    }
    if !problems.is_empty() {
        return Err(problems);
    }
    match creation_order(&blockers) {
        Ok(order) => Ok(CheckedTree {
            order,
            blockers,
            titles,
        }),
        Err(cycle) => {
            let names: Vec<&str> = cycle.iter().map(|&i| items[i].reference.trim()).collect();
            Err(vec![(
                "items".to_owned(),
                format!("the dependencies form a cycle: {}", names.join(" → ")),
            )])
        }
    }
}

/// Every item after its blockers, otherwise in list order (Kahn's algorithm, lowest index first); or a
/// cycle, as the indexes around it, first and last the same.
fn creation_order(blockers: &[Vec<usize>]) -> Result<Vec<usize>, Vec<usize>> {
    let n = blockers.len();
    let mut waiting: Vec<usize> = blockers.iter().map(Vec::len).collect();
    let mut order = Vec::with_capacity(n);
    let mut placed = vec![false; n];
    while order.len() < n {
        let Some(next) = (0..n).find(|&i| !placed[i] && waiting[i] == 0) else {
            return Err(a_cycle(blockers, &placed));
        };
        placed[next] = true;
        order.push(next);
        for (i, bs) in blockers.iter().enumerate() {
            if !placed[i] && bs.contains(&next) {
                waiting[i] -= 1;
            }
        }
    }
    Ok(order)
}

/// A cycle among the items not placed: every one of them waits on another unplaced one, so walking
/// blockers from any of them must come back to an item already seen.
fn a_cycle(blockers: &[Vec<usize>], placed: &[bool]) -> Vec<usize> {
    let start = placed.iter().position(|p| !p).unwrap_or(0);
    let mut path = vec![start];
    let mut at = start;
    loop {
        let Some(&next) = blockers[at].iter().find(|&&b| !placed[b]) else {
            return path;
        };
        if let Some(from) = path.iter().position(|&p| p == next) {
            let mut cycle = path[from..].to_vec();
            cycle.push(next);
            // Read as "blocked by" walked backwards: the first item blocks the second, and so on.
            cycle.reverse();
            return cycle;
        }
        path.push(next);
        at = next;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item(reference: &str, blocked_by: &[&str]) -> ProposedIssue {
        ProposedIssue {
            reference: reference.to_owned(),
            title: format!("Do {reference}"),
            description: String::new(),
            acceptance: String::new(),
            agent: None,
            blocked_by: blocked_by.iter().map(|b| (*b).to_owned()).collect(),
        }
    }

    #[test]
    fn blockers_come_first_and_otherwise_the_list_order_holds() {
        let tree = check_tree(&[
            item("docs", &["api"]),
            item("api", &[]),
            item("ui", &[]),
            item("e2e", &["ui", "api"]),
        ])
        .unwrap();
        assert_eq!(tree.order, vec![1, 0, 2, 3]);
        assert_eq!(tree.blockers[3], vec![2, 1]);
        assert_eq!(tree.depths(), vec![1, 0, 0, 1]);
    }

    #[test]
    fn a_cycle_is_refused_and_named() {
        let problems = check_tree(&[
            item("a", &["c"]),
            item("b", &["a"]),
            item("c", &["b"]),
            item("d", &[]),
        ])
        .unwrap_err();
        assert_eq!(problems.len(), 1);
        let (field, message) = &problems[0];
        assert_eq!(field, "items");
        assert!(message.contains("cycle"), "{message}");
        let cycle = message.split_once("cycle: ").unwrap().1;
        assert_eq!(cycle, "a → b → c → a", "d waits on nothing: {message}");
    }

    #[test]
    fn bad_items_are_named_by_position() {
        let mut untitled = item("x", &["x", "nope"]);
        untitled.title = "  ".to_owned();
        let problems = check_tree(&[
            untitled,
            item("x", &[]),
            item("bad ref!", &[]),
            item("", &[]),
        ])
        .unwrap_err();
        let fields: Vec<&str> = problems.iter().map(|(f, _)| f.as_str()).collect();
        assert!(fields.contains(&"items[0].title"), "{problems:?}");
        assert!(fields.contains(&"items[1].ref"), "{problems:?}");
        assert!(fields.contains(&"items[2].ref"), "{problems:?}");
        assert!(fields.contains(&"items[3].ref"), "{problems:?}");
        assert!(check_tree(&[]).is_err());
        let too_many: Vec<ProposedIssue> = (0..=MAX_PROPOSED)
            .map(|i| item(&i.to_string(), &[]))
            .collect();
        assert!(check_tree(&too_many).unwrap_err()[0].1.contains("at most"));
    }

    #[test]
    fn self_and_unknown_blockers_are_refused() {
        let problems = check_tree(&[item("a", &["a"]), item("b", &["zz", "a", "a"])]).unwrap_err();
        let messages: Vec<&str> = problems.iter().map(|(_, m)| m.as_str()).collect();
        assert!(
            messages.contains(&"an item cannot block itself"),
            "{messages:?}"
        );
        assert!(
            messages.iter().any(|m| m.contains("\"zz\" is not the ref")),
            "{messages:?}"
        );
        assert!(
            messages.iter().any(|m| m.contains("named twice")),
            "{messages:?}"
        );
    }

    #[test]
    fn the_body_carries_the_acceptance_check() {
        let mut i = item("a", &[]);
        i.description = "Wire it.".to_owned();
        i.acceptance = "curl /health says ok".to_owned();
        assert_eq!(
            i.body(),
            "Wire it.\n\n## Acceptance\n\ncurl /health says ok"
        );
        i.description.clear();
        assert!(i.body().starts_with("## Acceptance"));
        i.agent = Some(" none ".to_owned());
        assert_eq!(i.agent_name(), None);
    }
}
