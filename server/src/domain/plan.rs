//! Planning: relations between issues (blocks, relates to, duplicate of), the sub-issue tree's progress,
//! and the parents that wake their agent once every child has ended.
//!
//! A blocks edge has meaning for the scheduler: a queued run of the blocked issue is never claimed while
//! a blocker is unmet ([`Blocker::met`]), so it starts exactly once, when the last blocker is met.

use chrono::{DateTime, Utc};

use super::{IssueId, IssueKey, IssueStatus, IssueTitle, UserId, string_enum};

string_enum!(
    /// What an edge says of its `from` issue, read "from <kind> to": ACM-2 blocks ACM-4.
    RelationKind, "kind" {
        Blocks => "blocks",
        Relates => "relates",
        Duplicates => "duplicates",
    }
);

string_enum!(
    /// When a blocker stops holding: once it is done, or once it is done with a merged pull request.
    BlockUntil, "until" {
        Done => "done",
        Merged => "merged",
    }
);

/// The most blockers, parents' depth or children a planning walk follows: a bound on hostile graphs.
pub const MAX_TREE_DEPTH: usize = 64;

/// An edge to record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewRelation {
    pub from: IssueId,
    pub to: IssueId,
    pub kind: RelationKind,
    pub until: BlockUntil,
    /// For blocks: the blocked issue's first run starts from the blocker's branch (stacked work).
    pub stacked: bool,
    pub created_by: Option<UserId>,
}

/// Another issue as a relation shows it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct IssueBrief {
    pub id: IssueId,
    pub key: IssueKey,
    pub title: IssueTitle,
    pub status: IssueStatus,
}

/// How an edge reads from one of its two issues.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum LinkKind {
    Blocks,
    BlockedBy,
    RelatesTo,
    DuplicateOf,
    DuplicatedBy,
}

impl LinkKind {
    /// The edge of `kind`, seen from its `from` issue (`outgoing`) or from its `to` issue.
    pub fn of(kind: RelationKind, outgoing: bool) -> Self {
        match (kind, outgoing) {
            (RelationKind::Blocks, true) => Self::Blocks,
            (RelationKind::Blocks, false) => Self::BlockedBy,
            (RelationKind::Relates, _) => Self::RelatesTo,
            (RelationKind::Duplicates, true) => Self::DuplicateOf,
            (RelationKind::Duplicates, false) => Self::DuplicatedBy,
        }
    }

    /// How a person reads it: "blocked by".
    pub fn label(self) -> &'static str {
        match self {
            Self::Blocks => "blocks",
            Self::BlockedBy => "blocked by",
            Self::RelatesTo => "relates to",
            Self::DuplicateOf => "duplicate of",
            Self::DuplicatedBy => "duplicated by",
        }
    }
}

/// One edge as one of its issues sees it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct IssueLink {
    pub link: LinkKind,
    pub other: IssueBrief,
    pub until: BlockUntil,
    pub stacked: bool,
    /// Blocked-by only (false otherwise): whether the blocker no longer holds (see [`Blocker::met`]).
    pub met: bool,
    pub created_at: DateTime<Utc>,
}

/// A blocker of an issue, with what decides whether it still holds.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Blocker {
    pub blocked: IssueId,
    pub blocker: IssueBrief,
    pub until: BlockUntil,
    pub stacked: bool,
    /// Whether one of the blocker's pull requests was merged.
    pub merged: bool,
    /// Whether a run of the blocker is claimed or running: its work is not delivered yet.
    pub working: bool,
}

impl Blocker {
    /// Whether it no longer holds ([`BlockUntil::met_by`]).
    pub fn met(&self) -> bool {
        self.until
            .met_by(self.blocker.status, self.merged, self.working)
    }
}

impl BlockUntil {
    /// Whether a blocker in `status` (`merged`: one of its pull requests was merged; `working`: one of
    /// its runs is claimed or running) no longer holds: it is done, no run of it is still at work (an
    /// agent that marks its own issue done delivers its commit only when its run ends), and, for
    /// `until = merged`, merged. The same rule as the run claim's SQL (`store::plans::UNBLOCKED`).
    pub fn met_by(self, status: IssueStatus, merged: bool, working: bool) -> bool {
        status == IssueStatus::Done && !working && (self == BlockUntil::Done || merged)
    }
}

/// How far a parent's children are: by status, for the "2/5" on cards and the parent's progress bar.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct ChildProgress {
    pub total: i64,
    pub done: i64,
    pub cancelled: i64,
}

impl ChildProgress {
    /// Every child is done or cancelled (and there is at least one).
    pub fn all_ended(&self) -> bool {
        self.total > 0 && self.done + self.cancelled == self.total
    }

    /// The share done, 0–100, cancelled children left out of both sides.
    pub fn percent(&self) -> i64 {
        let counted = self.total - self.cancelled;
        if counted <= 0 {
            return if self.total > 0 { 100 } else { 0 };
        }
        self.done * 100 / counted
    }
}

/// A cycle refused: the keys around it, starting and ending with the same issue.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cycle(pub Vec<IssueKey>);

impl std::fmt::Display for Cycle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let keys: Vec<String> = self.0.iter().map(ToString::to_string).collect();
        f.write_str(&keys.join(" → "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn progress_leaves_cancelled_children_out() {
        let p = ChildProgress {
            total: 5,
            done: 2,
            cancelled: 1,
        };
        assert_eq!(p.percent(), 50);
        assert!(!p.all_ended());
        let all = ChildProgress {
            total: 3,
            done: 1,
            cancelled: 2,
        };
        assert!(all.all_ended());
        assert_eq!(ChildProgress::default().percent(), 0);
        assert!(!ChildProgress::default().all_ended());
    }

    #[test]
    fn an_edge_reads_from_both_ends() {
        assert_eq!(
            LinkKind::of(RelationKind::Blocks, false).label(),
            "blocked by"
        );
        assert_eq!(
            LinkKind::of(RelationKind::Duplicates, true).label(),
            "duplicate of"
        );
        assert_eq!(
            LinkKind::of(RelationKind::Relates, false),
            LinkKind::of(RelationKind::Relates, true)
        );
    }
}
