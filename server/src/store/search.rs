//! Full-text issue search over keys, titles, bodies and comments, one workspace at a time.
//!
//! SQLite indexes with FTS5 (`search_fts`, kept in step by triggers), PostgreSQL with generated
//! `tsvector` columns and GIN indexes (migration `0017_search`). Both split text into runs of letters and
//! digits and match each query word as a word prefix (`pars` finds `parser`); the words come from
//! [`crate::domain::terms`], never the raw query, so no query text is ever FTS or SQL syntax.
//!
//! **The ranking rule**, the same on both backends because every tier is a plain SQL filter and the order
//! uses only stored columns:
//! 1. the issue whose key is the whole query (`acm-12` → ACM-12), score 5;
//! 2. issues whose key the query begins (`acm-1` → ACM-10, ACM-11, …, ACM-100), score 4, by number;
//! 3. issues whose title holds every word, score 3;
//! 4. issues whose body holds every word, score 2;
//! 5. issues with a comment that holds every word, score 1.
//!
//! An issue appears once, in its best tier. Within tiers 3 to 5: most recently updated first, then the
//! higher number. Each tier is read with `limit` rows at most, best first, and a tier is read only while
//! the answer is not full, so a common word never loads more than `limit` rows per tier. PostgreSQL
//! sorts a tier's matches by `updated_at`; SQLite reads title and body matches newest first straight
//! from FTS5 (an issue's document is renumbered when its `updated_at` changes, so rowid order is update
//! order) and stops at the limit. Each tier's rows are then sorted in Rust by the same key on both.

use async_trait::async_trait;

use super::Result;
use crate::domain::{SearchHit, SearchQuery, WorkspaceId};

/// The search use-case.
#[async_trait]
pub trait SearchStore: Send + Sync {
    /// The issues of `ws` (in `query.statuses`, if any) that `query` finds, best first by the module's
    /// ranking rule, at most `query.limit`, each with where it matched and a snippet.
    async fn search_issues(&self, ws: WorkspaceId, query: &SearchQuery) -> Result<Vec<SearchHit>>;
}

/// Which text a word must be in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Field {
    Title,
    Body,
    /// Any comment of the issue.
    Comment,
}

/// What each backend writes differently: a condition around the bound match text.
pub(super) trait SearchDialect {
    /// The condition "issue `i` has every word in `field`", as (before, after) the bound match text.
    fn issue_matches(field: Field) -> (&'static str, &'static str);
    /// The condition "comment `c` has every word", as (before, after) the bound match text.
    const COMMENT_MATCHES: (&'static str, &'static str);
    /// The match text for `field` built from `terms` (letters and digits only): every word as a prefix.
    fn match_text(field: Field, terms: &[String]) -> String;
    /// How a backend reads a tier from its full-text index first when that beats filtering the
    /// workspace's issues: title and body matches in update order without a sort, say.
    /// (`from …` up to the bound match text, what closes it, `order by …` after the filters).
    fn indexed_tier(_: Field) -> Option<(&'static str, &'static str, &'static str)> {
        None
    }
    /// A backend whose planner cannot tell a rare word from a common one reads at most this many
    /// matches from its full-text index first: fewer means that is all of them, and they are sorted
    /// (cheap); as many means the word is common, and walking the issues in update order finds the
    /// first ones soon. `None`: the tier's own query decides.
    const MATCHES_FIRST: Option<i64> = None;
}

/// FTS5: the `search_doc` ids whose `search_fts` row matches `{column} : ("a"* AND "b"*)`.
impl SearchDialect for super::sqlite::SqliteStore {
    fn issue_matches(field: Field) -> (&'static str, &'static str) {
        match field {
            Field::Title | Field::Body => (
                "i.issue_id in (select d.issue_id from search_doc d where d.comment_id is null \
                 and d.search_doc_id in (select rowid from search_fts where search_fts match ",
                "))",
            ),
            Field::Comment => (
                "i.issue_id in (select d.issue_id from search_doc d where d.comment_id is not null \
                 and d.search_doc_id in (select rowid from search_fts where search_fts match ",
                "))",
            ),
        }
    }
    const COMMENT_MATCHES: (&'static str, &'static str) = (
        "c.comment_id in (select d.comment_id from search_doc d where d.comment_id is not null \
         and d.search_doc_id in (select rowid from search_fts where search_fts match ",
        "))",
    );
    fn match_text(field: Field, terms: &[String]) -> String {
        let column = if field == Field::Title {
            "title"
        } else {
            "body"
        };
        let words: Vec<String> = terms
            .iter()
            .map(|t| format!("\"{}\"*", t.replace('"', "\"\"")))
            .collect();
        format!("{{{column}}} : ({})", words.join(" AND "))
    }
    /// An issue's document is renumbered whenever its `updated_at` changes (see the migration), so title
    /// and body matches come newest first from the index itself and the read stops at its limit: no
    /// sort of every match of a common word. Comment matches are read from the index first too (the
    /// workspace test is kept off its index with `+`), then sorted: SQLite would otherwise walk every
    /// issue of the workspace in update order looking for the few with such a comment.
    fn indexed_tier(field: Field) -> Option<(&'static str, &'static str, &'static str)> {
        Some(match field {
            Field::Title | Field::Body => (
                " from search_fts f cross join search_doc d on d.search_doc_id = f.rowid \
                 cross join issue i on i.issue_id = d.issue_id \
                 join workspace w on w.workspace_id = i.workspace_id \
                 where d.comment_id is null and search_fts match ",
                "",
                " order by f.rowid desc",
            ),
            Field::Comment => (
                " from issue i join workspace w on w.workspace_id = i.workspace_id \
                 where i.issue_id in (select d.issue_id from search_fts f \
                 cross join search_doc d on d.search_doc_id = f.rowid \
                 where d.comment_id is not null and search_fts match ",
                ")",
                " order by i.updated_at desc, i.number desc",
            ),
        })
    }
}

/// PostgreSQL: `tsvector @@ to_tsquery('simple', 'a':* & 'b':*)`.
impl SearchDialect for super::postgres::PgStore {
    fn issue_matches(field: Field) -> (&'static str, &'static str) {
        match field {
            Field::Title => ("i.search_title @@ to_tsquery('simple', ", ")"),
            Field::Body => ("i.search_body @@ to_tsquery('simple', ", ")"),
            Field::Comment => (
                "i.issue_id in (select c.issue_id from comment c \
                 where c.search_body @@ to_tsquery('simple', ",
                "))",
            ),
        }
    }
    const COMMENT_MATCHES: (&'static str, &'static str) =
        ("c.search_body @@ to_tsquery('simple', ", ")");
    fn match_text(_: Field, terms: &[String]) -> String {
        let words: Vec<String> = terms
            .iter()
            .map(|t| format!("'{}':*", t.replace('\\', "\\\\").replace('\'', "''")))
            .collect();
        words.join(" & ")
    }
    /// PostgreSQL estimates every prefix match (`'w9909':*`) at 2% of the rows, so for a rare word it
    /// walked all 100,000 issues in update order (36 ms a tier) where the GIN index finds its two in 4 ms.
    const MATCHES_FIRST: Option<i64> = Some(1000);
}

/// What one tier of the ranking reads.
pub(super) enum Tier<'a> {
    /// The issue with exactly this number (the prefix is checked by the caller's join).
    Key(&'a crate::domain::IssueKey),
    /// Issues whose number's digits begin with this key's, other than the key itself.
    KeyPrefix(&'a crate::domain::IssueKey),
    /// Issues with every word in the field.
    Text(Field, String),
}

/// The number ranges whose decimal digits begin with `n`'s: `n`, `n0..=n9`, `n00..=n99`, … up to the
/// largest number an issue can have.
pub(super) fn number_ranges(n: i64) -> Vec<(i64, i64)> {
    let mut out = Vec::new();
    let (mut lo, mut width) = (n, 1_i64);
    while let (Some(next_lo), Some(next_width)) = (lo.checked_mul(10), width.checked_mul(10)) {
        if next_lo > i64::from(i32::MAX) * 1000 {
            break;
        }
        lo = next_lo;
        width = next_width;
        out.push((lo, lo + width - 1));
    }
    out
}

/// Writes `impl SearchStore for $store` on database `$db`; `impl_store!` expands it once per backend.
macro_rules! impl_search_store {
    ($store:ty, $db:ty) => {
        const _: () = {
            use $crate::domain::*;
            use $crate::store::issues::{IssueRow, issue_select};
            use $crate::store::search::*;
            use $crate::store::Result;

            impl $store {
                /// `and i.status in (…)` when `statuses` names any.
                fn push_statuses(qb: &mut sqlx::QueryBuilder<$db>, statuses: &[IssueStatus]) {
                    if !statuses.is_empty() {
                        qb.push(" and i.status in (");
                        let mut list = qb.separated(", ");
                        for status in statuses {
                            list.push_bind(*status);
                        }
                        list.push_unseparated(")");
                    }
                }

                /// [`SearchDialect::MATCHES_FIRST`]: every match of a rare word, best first, read from the
                /// full-text index; `None` when there are `cap` or more (a common word).
                async fn few_matches(&self, ws: WorkspaceId, statuses: &[IssueStatus], field: Field, text: &str, cap: i64, limit: i64) -> Result<Option<Vec<Issue>>> {
                    let mut qb = sqlx::QueryBuilder::<$db>::new("select i.issue_id from issue i where i.workspace_id = ");
                    qb.push_bind(ws);
                    Self::push_statuses(&mut qb, statuses);
                    let (open, close) = <Self as SearchDialect>::issue_matches(field);
                    qb.push(" and ").push(open).push_bind(text.to_owned()).push(close).push(" limit ").push_bind(cap);
                    let ids = qb.build_query_scalar::<IssueId>().fetch_all(&self.pool).await?;
                    if i64::try_from(ids.len()).unwrap_or(i64::MAX) >= cap {
                        return Ok(None);
                    }
                    if ids.is_empty() {
                        return Ok(Some(Vec::new()));
                    }
                    let mut qb = sqlx::QueryBuilder::<$db>::new(concat!(issue_select!(), " where i.issue_id in ("));
                    let mut list = qb.separated(", ");
                    for id in ids {
                        list.push_bind(id);
                    }
                    qb.push(") order by i.updated_at desc, i.number desc limit ").push_bind(limit);
                    let rows = qb.build_query_as::<IssueRow>().fetch_all(&self.pool).await?;
                    Ok(Some(rows.into_iter().map(Into::into).collect()))
                }

                /// Up to `limit` issues of `ws` (in `statuses`, if any) in `tier`, best first.
                async fn search_tier(&self, ws: WorkspaceId, statuses: &[IssueStatus], tier: Tier<'_>, limit: i64) -> Result<Vec<Issue>> {
                    if let (Tier::Text(field, text), Some(cap)) = (&tier, <Self as SearchDialect>::MATCHES_FIRST)
                        && let Some(few) = self.few_matches(ws, statuses, *field, text, cap, limit).await?
                    {
                        return Ok(few);
                    }
                    let indexed = match &tier {
                        Tier::Text(field, _) => <Self as SearchDialect>::indexed_tier(*field),
                        _ => None,
                    };
                    let mut qb = match (&tier, indexed) {
                        (Tier::Text(_, text), Some((from, close, _))) => {
                            let select = issue_select!();
                            let columns = select.split_once(" from ").map_or(select, |(c, _)| c);
                            let mut qb = sqlx::QueryBuilder::<$db>::new(columns);
                            // `+`: the index drives; the workspace is a filter on what it found.
                            qb.push(from).push_bind(text.clone()).push(close).push(" and +i.workspace_id = ");
                            qb
                        }
                        _ => sqlx::QueryBuilder::<$db>::new(concat!(issue_select!(), " where i.workspace_id = ")),
                    };
                    qb.push_bind(ws);
                    Self::push_statuses(&mut qb, statuses);
                    let text_tier = matches!(tier, Tier::Text(..));
                    match tier {
                        Tier::Key(key) => {
                            qb.push(" and w.issue_prefix = ").push_bind(key.prefix.as_str().to_owned())
                                .push(" and i.number = ").push_bind(key.number);
                        }
                        Tier::KeyPrefix(key) => {
                            let ranges = number_ranges(key.number);
                            // The lowest bound first, so that the (workspace, number) index is read from
                            // there in number order and the read stops at the limit.
                            let from = ranges.first().map_or(i64::MAX, |(lo, _)| *lo);
                            qb.push(" and w.issue_prefix = ").push_bind(key.prefix.as_str().to_owned())
                                .push(" and i.number >= ").push_bind(from).push(" and (1 = 0");
                            for (lo, hi) in ranges {
                                qb.push(" or i.number between ").push_bind(lo).push(" and ").push_bind(hi);
                            }
                            qb.push(") order by i.number");
                        }
                        Tier::Text(_, _) if indexed.is_some() => {
                            qb.push(indexed.map_or("", |(_, _, order)| order));
                        }
                        Tier::Text(field, text) => {
                            let (open, close) = <Self as SearchDialect>::issue_matches(field);
                            qb.push(" and ").push(open).push_bind(text).push(close)
                                .push(" order by i.updated_at desc, i.number desc");
                        }
                    }
                    qb.push(" limit ").push_bind(limit);
                    let rows = qb.build_query_as::<IssueRow>().fetch_all(&self.pool).await?;
                    let mut issues: Vec<Issue> = rows.into_iter().map(Into::into).collect();
                    if text_tier {
                        // One order on every backend, whatever order its index gave.
                        issues.sort_by(|a, b| (b.updated_at, b.key.number).cmp(&(a.updated_at, a.key.number)));
                    }
                    Ok(issues)
                }

                /// For each of `issues`, the body of its latest comment that holds every word.
                async fn matching_comments(&self, issues: &[IssueId], text: String) -> Result<Vec<(IssueId, String)>> {
                    if issues.is_empty() {
                        return Ok(Vec::new());
                    }
                    let mut qb = sqlx::QueryBuilder::<$db>::new(
                        "select issue_id, body from (select c.issue_id, c.body, row_number() over \
                         (partition by c.issue_id order by c.created_at desc, c.comment_id desc) as n \
                         from comment c where c.issue_id in (");
                    let mut list = qb.separated(", ");
                    for id in issues {
                        list.push_bind(*id);
                    }
                    let (open, close) = <Self as SearchDialect>::COMMENT_MATCHES;
                    qb.push(") and ").push(open).push_bind(text).push(close).push(") latest where n = 1");
                    Ok(qb.build_query_as::<(IssueId, String)>().fetch_all(&self.pool).await?)
                }
            }

            #[async_trait::async_trait]
            impl SearchStore for $store {
                #[tracing::instrument(skip_all, fields(workspace.id = %ws), err)]
                async fn search_issues(&self, ws: WorkspaceId, query: &SearchQuery) -> Result<Vec<SearchHit>> {
                    let want = usize::try_from(query.limit).unwrap_or(0);
                    let terms = query.terms();
                    let mut hits: Vec<SearchHit> = Vec::new();
                    let take = |hits: &mut Vec<SearchHit>, issues: Vec<Issue>, score: i32, matched_in: MatchedIn| {
                        for issue in issues {
                            if hits.len() < want && !hits.iter().any(|h| h.issue.id == issue.id) {
                                let snippet = match matched_in {
                                    MatchedIn::Body => snippet(&issue.body, &terms),
                                    _ => issue.title.as_str().to_owned(),
                                };
                                hits.push(SearchHit { issue, score, matched_in, snippet });
                            }
                        }
                    };
                    if let Some(key) = query.key() {
                        let exact = self.search_tier(ws, &query.statuses, Tier::Key(&key), 1).await?;
                        take(&mut hits, exact, 5, MatchedIn::Key);
                        let longer = self.search_tier(ws, &query.statuses, Tier::KeyPrefix(&key), query.limit).await?;
                        take(&mut hits, longer, 4, MatchedIn::Key);
                    }
                    for (field, score, matched_in) in [
                        (Field::Title, 3, MatchedIn::Title),
                        (Field::Body, 2, MatchedIn::Body),
                        (Field::Comment, 1, MatchedIn::Comment),
                    ] {
                        if hits.len() >= want || terms.is_empty() {
                            break;
                        }
                        let text = <Self as SearchDialect>::match_text(field, &terms);
                        let found = self.search_tier(ws, &query.statuses, Tier::Text(field, text), query.limit).await?;
                        take(&mut hits, found, score, matched_in);
                    }
                    let commented: Vec<IssueId> = hits.iter()
                        .filter(|h| h.matched_in == MatchedIn::Comment).map(|h| h.issue.id).collect();
                    let text = <Self as SearchDialect>::match_text(Field::Comment, &terms);
                    for (issue, body) in self.matching_comments(&commented, text).await? {
                        if let Some(hit) = hits.iter_mut().find(|h| h.issue.id == issue) {
                            hit.snippet = snippet(&body, &terms);
                        }
                    }
                    Ok(hits)
                }
            }
        };
    };
}
pub(super) use impl_search_store;

/// The board's text filter (`IssueFilter::text`) on `issue i join workspace w`: the key begins with the
/// text (`ACM-1` finds ACM-1 and ACM-12), or the title or the body holds every word of it (as a word
/// prefix, like search). Expands inside an impl of the store, whose [`SearchDialect`] it uses.
macro_rules! push_text_filter {
    ($qb:ident, $text:expr) => {{
        let text: &str = $text;
        $qb.push(" and (lower(w.issue_prefix) || '-' || i.number like ")
            .push_bind($crate::store::issues::key_prefix_pattern(text))
            .push(" escape '\\'");
        let terms = $crate::domain::terms(text);
        if !terms.is_empty() {
            use $crate::store::search::{Field, SearchDialect};
            for field in [Field::Title, Field::Body] {
                let (open, close) = <Self as SearchDialect>::issue_matches(field);
                $qb.push(" or ")
                    .push(open)
                    .push_bind(<Self as SearchDialect>::match_text(field, &terms))
                    .push(close);
            }
        }
        $qb.push(")");
    }};
}
pub(super) use push_text_filter;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_prefixes_are_number_ranges() {
        let r = number_ranges(12);
        assert_eq!(&r[..3], [(120, 129), (1200, 1299), (12000, 12999)]);
        assert!(
            r.last()
                .is_some_and(|(lo, _)| *lo <= i64::from(i32::MAX) * 1000)
        );
        assert!(number_ranges(i64::MAX / 2).is_empty());
    }

    #[test]
    fn match_texts_quote_every_word() {
        let terms = ["pars".to_owned(), "a\"b".to_owned()];
        assert_eq!(
            <super::super::sqlite::SqliteStore as SearchDialect>::match_text(Field::Title, &terms),
            "{title} : (\"pars\"* AND \"a\"\"b\"*)"
        );
        assert_eq!(
            <super::super::postgres::PgStore as SearchDialect>::match_text(Field::Body, &terms),
            "'pars':* & 'a\"b':*"
        );
    }
}
