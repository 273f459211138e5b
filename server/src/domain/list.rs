//! The issue list: its sort orders, groupings, the keyset cursor of its pages, and saved views.
//!
//! **The order** of a list is (group, sort key, number): groups always ascend in their rank (the board's
//! column order for status, urgent first for priority, members then agents then nobody for assignee,
//! parents then none for parent), and within a group the sort key and then the issue number go in the
//! chosen direction. Every key is a stored column or a fixed function of one, so both backends and
//! [`IssueOrder::compare`] give one order, and a page is read from an index after a [`ListCursor`],
//! never skipped over with an offset.

use std::cmp::Ordering;

use chrono::{DateTime, Utc};
use uuid::Uuid;

use super::{
    Assignee, Issue, IssueId, IssueStatus, Priority, UserId, ValidationError, WorkspaceId,
    bounded_text, string_enum,
};

string_enum!(
    /// Which column a list is sorted by.
    IssueSort, "sort" {
        Updated => "updated",
        Created => "created",
        Priority => "priority",
        Status => "status",
        Title => "title",
        Key => "key",
    }
);

string_enum!(
    /// The direction of a list's sort.
    SortDir, "dir" {
        Asc => "asc",
        Desc => "desc",
    }
);

string_enum!(
    /// What a list's issues are grouped by. A new grouping (a project, say) is a variant here, its rank
    /// and id in [`IssueGrouping::value_of`], its key in [`GroupKey`], and its SQL expressions in the
    /// store's `group_exprs`.
    IssueGrouping, "group" {
        None => "none",
        Status => "status",
        Assignee => "assignee",
        Priority => "priority",
        Project => "project",
        Parent => "parent",
    }
);

/// The rank of a status in list order: the board's column order.
pub fn status_rank(status: IssueStatus) -> i64 {
    let at = IssueStatus::ALL.iter().position(|s| *s == status);
    i64::try_from(at.unwrap_or(IssueStatus::ALL.len())).unwrap_or(i64::MAX)
}

/// The rank of a priority in list order: urgent first, no priority last.
pub fn priority_rank(priority: Priority) -> i64 {
    match priority {
        Priority::Urgent => 0,
        Priority::High => 1,
        Priority::Medium => 2,
        Priority::Low => 3,
        Priority::None => 4,
    }
}

/// Which group an issue is in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GroupKey {
    /// No grouping: one group of everything.
    All,
    Status(IssueStatus),
    Priority(Priority),
    /// `None`: unassigned.
    Assignee(Option<Assignee>),
    /// `None`: top-level issues.
    Parent(Option<IssueId>),
    /// `None`: in no project.
    Project(Option<super::ProjectId>),
}

/// A group's place in list order: its rank, then (for assignee and parent) the id, `None` in the group
/// of nobody / no parent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct GroupValue {
    pub rank: i64,
    pub id: Option<Uuid>,
}

impl GroupKey {
    /// Where the group goes in list order.
    pub fn value(self) -> GroupValue {
        let (rank, id) = match self {
            GroupKey::All => (0, None),
            GroupKey::Status(s) => (status_rank(s), None),
            GroupKey::Priority(p) => (priority_rank(p), None),
            GroupKey::Assignee(Some(Assignee::User(u))) => (0, Some(u.0)),
            GroupKey::Assignee(Some(Assignee::Agent(a))) => (1, Some(a.0)),
            GroupKey::Assignee(None) => (2, None),
            GroupKey::Parent(Some(p)) => (0, Some(p.0)),
            GroupKey::Parent(None) => (1, None),
            GroupKey::Project(Some(p)) => (0, Some(p.0)),
            GroupKey::Project(None) => (1, None),
        };
        GroupValue { rank, id }
    }
}

impl IssueGrouping {
    /// The group `issue` is in.
    pub fn key_of(self, issue: &Issue) -> GroupKey {
        match self {
            IssueGrouping::None => GroupKey::All,
            IssueGrouping::Status => GroupKey::Status(issue.status),
            IssueGrouping::Priority => GroupKey::Priority(issue.priority),
            IssueGrouping::Assignee => GroupKey::Assignee(issue.assignee),
            IssueGrouping::Parent => GroupKey::Parent(issue.parent),
            IssueGrouping::Project => GroupKey::Project(issue.project),
        }
    }

    /// [`IssueGrouping::key_of`]'s place in list order.
    pub fn value_of(self, issue: &Issue) -> GroupValue {
        self.key_of(issue).value()
    }
}

/// An issue's sort key, as a cursor carries it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SortValue {
    Time(DateTime<Utc>),
    Rank(i64),
    Text(String),
    /// Sorting by key: the number is the whole key.
    Number,
}

impl IssueSort {
    /// `issue`'s sort key.
    pub fn value_of(self, issue: &Issue) -> SortValue {
        match self {
            IssueSort::Updated => SortValue::Time(issue.updated_at),
            IssueSort::Created => SortValue::Time(issue.created_at),
            IssueSort::Priority => SortValue::Rank(priority_rank(issue.priority)),
            IssueSort::Status => SortValue::Rank(status_rank(issue.status)),
            IssueSort::Title => SortValue::Text(issue.title.as_str().to_owned()),
            IssueSort::Key => SortValue::Number,
        }
    }

    /// The direction a list sorted by this column starts in when its header is clicked: newest first
    /// for times, ascending otherwise.
    pub fn natural_dir(self) -> SortDir {
        match self {
            IssueSort::Updated | IssueSort::Created => SortDir::Desc,
            _ => SortDir::Asc,
        }
    }
}

/// How a list is ordered: grouping, then sort column and direction, then number in that direction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IssueOrder {
    pub sort: IssueSort,
    pub dir: SortDir,
    pub group: IssueGrouping,
}

impl Default for IssueOrder {
    /// Most recently updated first, ungrouped.
    fn default() -> Self {
        Self {
            sort: IssueSort::Updated,
            dir: SortDir::Desc,
            group: IssueGrouping::None,
        }
    }
}

impl IssueOrder {
    /// The list order of two issues (what the store's pages give, page after page).
    pub fn compare(&self, a: &Issue, b: &Issue) -> Ordering {
        let group = self.group.value_of(a).cmp(&self.group.value_of(b));
        let within = match (self.sort.value_of(a), self.sort.value_of(b)) {
            (SortValue::Time(x), SortValue::Time(y)) => x.cmp(&y),
            (SortValue::Rank(x), SortValue::Rank(y)) => x.cmp(&y),
            // Byte order, as the store's `C` collation.
            (SortValue::Text(x), SortValue::Text(y)) => x.as_bytes().cmp(y.as_bytes()),
            _ => Ordering::Equal,
        }
        .then(a.key.number.cmp(&b.key.number));
        group.then(match self.dir {
            SortDir::Asc => within,
            SortDir::Desc => within.reverse(),
        })
    }
}

/// Where a list page ended: the last issue's group, sort key and number. Clients see it as an opaque
/// string, `<group>:<number>:<sort key>` (the sort key last, as a title may hold `:`), read back only
/// together with the order it was made for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListCursor {
    pub group: GroupValue,
    pub sort: SortValue,
    pub number: i64,
}

impl ListCursor {
    /// The cursor just past `issue` in `order`.
    pub fn after(order: &IssueOrder, issue: &Issue) -> Self {
        Self {
            group: order.group.value_of(issue),
            sort: order.sort.value_of(issue),
            number: issue.key.number,
        }
    }

    /// Reads a cursor made for `order`.
    pub fn parse(raw: &str, order: &IssueOrder) -> Result<Self, ValidationError> {
        let bad = || {
            ValidationError::new(
                "after",
                format!(
                    "{raw:?} is not a cursor of this list (sorted by {}, grouped by {}); pass the `next_after` of the previous page",
                    order.sort, order.group
                ),
            )
        };
        let mut parts = raw.splitn(3, ':');
        let (Some(group), Some(number), Some(sort)) = (parts.next(), parts.next(), parts.next())
        else {
            return Err(bad());
        };
        let group = match (order.group, group.split_once('.')) {
            (IssueGrouping::None, _) if group == "0" => GroupValue { rank: 0, id: None },
            (IssueGrouping::None, _) => return Err(bad()),
            (_, Some((rank, id))) => GroupValue {
                rank: rank.parse().map_err(|_| bad())?,
                id: Some(Uuid::parse_str(id).map_err(|_| bad())?),
            },
            (_, None) => GroupValue {
                rank: group.parse().map_err(|_| bad())?,
                id: None,
            },
        };
        let sort = match order.sort {
            IssueSort::Updated | IssueSort::Created => SortValue::Time(
                DateTime::parse_from_rfc3339(sort)
                    .map_err(|_| bad())?
                    .with_timezone(&Utc),
            ),
            IssueSort::Priority | IssueSort::Status => {
                SortValue::Rank(sort.parse().map_err(|_| bad())?)
            }
            IssueSort::Title => SortValue::Text(sort.to_owned()),
            IssueSort::Key if sort.is_empty() => SortValue::Number,
            IssueSort::Key => return Err(bad()),
        };
        Ok(Self {
            group,
            sort,
            number: number.parse().map_err(|_| bad())?,
        })
    }
}

impl std::fmt::Display for ListCursor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.group.id {
            Some(id) => write!(f, "{}.{}", self.group.rank, id)?,
            None => write!(f, "{}", self.group.rank)?,
        }
        write!(f, ":{}:", self.number)?;
        match &self.sort {
            SortValue::Time(t) => write!(
                f,
                "{}",
                t.to_rfc3339_opts(chrono::SecondsFormat::AutoSi, true)
            ),
            SortValue::Rank(r) => write!(f, "{r}"),
            SortValue::Text(t) => f.write_str(t),
            SortValue::Number => Ok(()),
        }
    }
}

/// A saved view's name: trimmed, 1–80 characters.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(transparent)]
pub struct ViewName(String);

impl ViewName {
    /// Validates a name.
    pub fn parse(raw: &str) -> Result<Self, ValidationError> {
        bounded_text("name", raw, 1, 80).map(Self)
    }

    /// The name.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// The longest query string a saved view keeps.
pub const MAX_VIEW_QUERY: usize = 2000;

/// A named list URL of a workspace: its query string (filter, sort, grouping) is the view.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct SavedView {
    pub workspace_id: WorkspaceId,
    pub name: ViewName,
    /// Without a leading `?`, and without `after`.
    pub query: String,
    pub created_by: Option<UserId>,
    pub created_at: DateTime<Utc>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cursor_reads_back_as_written_for_its_order_only() {
        let order = IssueOrder {
            sort: IssueSort::Title,
            dir: SortDir::Asc,
            group: IssueGrouping::Assignee,
        };
        let cursor = ListCursor {
            group: GroupValue {
                rank: 1,
                id: Some(Uuid::nil()),
            },
            sort: SortValue::Text("a: b".into()),
            number: 7,
        };
        let raw = cursor.to_string();
        assert_eq!(ListCursor::parse(&raw, &order).unwrap(), cursor);
        let by_time = IssueOrder {
            sort: IssueSort::Updated,
            ..order
        };
        assert!(ListCursor::parse(&raw, &by_time).is_err());
        let at = Utc::now();
        let timed = ListCursor {
            group: GroupValue { rank: 0, id: None },
            sort: SortValue::Time(at),
            number: 3,
        };
        let flat = IssueOrder::default();
        assert_eq!(ListCursor::parse(&timed.to_string(), &flat).unwrap(), timed);
        assert!(ListCursor::parse("x:1:", &flat).is_err());
    }

    #[test]
    fn ranks_follow_the_board_and_urgency() {
        assert!(status_rank(IssueStatus::Backlog) < status_rank(IssueStatus::Done));
        assert!(priority_rank(Priority::Urgent) < priority_rank(Priority::Low));
        assert!(priority_rank(Priority::Low) < priority_rank(Priority::None));
    }
}
