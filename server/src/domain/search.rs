//! Full-text issue search: the query as typed, its words, and what a hit says.
//!
//! The query is tokenized here, in Rust, and only these words (letters and digits, lower-cased) reach
//! the database, where each backend builds its own `MATCH` / `tsquery` from them: quotes, operators
//! (`AND`, `NEAR`, `*`, `"`, `-`, `:`), SQL-looking text and the like are separators, never syntax.
//! Both backends index text split the same way (runs of letters and digits), so a query finds the same
//! issues on either (see `store::search` for the ranking rule).

use super::{Issue, IssueKey, IssueStatus, ValidationError};

/// Longest accepted query, in characters.
pub const MAX_QUERY_CHARS: usize = 200;
/// At most this many words of a query are searched for (the rest are ignored).
pub const MAX_TERMS: usize = 8;
/// Hits per answer unless asked otherwise.
pub const DEFAULT_SEARCH_LIMIT: i64 = 20;
/// Most hits one answer may ask for.
pub const MAX_SEARCH_LIMIT: i64 = 100;
/// Characters of a snippet around the first matched word.
const SNIPPET_CHARS: usize = 140;

/// A validated search: trimmed text, how many hits, and optionally which statuses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SearchQuery {
    /// The text as typed, trimmed (1 to [`MAX_QUERY_CHARS`] characters).
    pub text: String,
    /// At most this many hits (1 to [`MAX_SEARCH_LIMIT`]).
    pub limit: i64,
    /// Only issues in these statuses (all when empty).
    pub statuses: Vec<IssueStatus>,
}

impl SearchQuery {
    /// Validates the text and the limit (default [`DEFAULT_SEARCH_LIMIT`]). An empty query, one over
    /// [`MAX_QUERY_CHARS`] characters, or one with nothing to search for (no letter or digit) is refused
    /// with a message naming the field.
    pub fn parse(text: &str, limit: Option<i64>) -> Result<Self, ValidationError> {
        let text = text.trim();
        if text.is_empty() {
            return Err(ValidationError::new("q", "must not be empty"));
        }
        let chars = text.chars().count();
        if chars > MAX_QUERY_CHARS {
            return Err(ValidationError::new(
                "q",
                format!("must be at most {MAX_QUERY_CHARS} characters (got {chars})"),
            ));
        }
        if terms(text).is_empty() {
            return Err(ValidationError::new(
                "q",
                "must contain a letter or a digit to search for",
            ));
        }
        let limit = limit.unwrap_or(DEFAULT_SEARCH_LIMIT);
        if !(1..=MAX_SEARCH_LIMIT).contains(&limit) {
            return Err(ValidationError::new(
                "limit",
                format!("must be between 1 and {MAX_SEARCH_LIMIT} (got {limit})"),
            ));
        }
        Ok(Self {
            text: text.to_owned(),
            limit,
            statuses: Vec::new(),
        })
    }

    /// The words searched for: see [`terms`].
    pub fn terms(&self) -> Vec<String> {
        terms(&self.text)
    }

    /// The issue key the whole query names (`ACM-12`, `acm-1`), if it is one: it is matched exactly and
    /// as the start of longer keys.
    pub fn key(&self) -> Option<IssueKey> {
        let (prefix, digits) = self.text.rsplit_once('-')?;
        let shaped = prefix.chars().all(|c| c.is_ascii_alphabetic())
            && digits.chars().all(|c| c.is_ascii_digit())
            && !digits.starts_with('0');
        if !shaped {
            return None;
        }
        IssueKey::parse(&self.text).ok()
    }
}

/// The distinct words of `text`, lower-cased, in order, at most [`MAX_TERMS`]: runs of letters and
/// digits; everything else separates them.
pub fn terms(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for word in words(text) {
        let word = word.1.to_lowercase();
        if !out.contains(&word) {
            out.push(word);
            if out.len() == MAX_TERMS {
                break;
            }
        }
    }
    out
}

/// The words of `text` (runs of letters and digits) with their byte offsets.
fn words(text: &str) -> impl Iterator<Item = (usize, &str)> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(move |w| (w.as_ptr() as usize - text.as_ptr() as usize, w))
}

/// Where a hit matched, best first: the key, the title, the body, a comment.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum MatchedIn {
    Key,
    Title,
    Body,
    Comment,
}

impl MatchedIn {
    /// The word for it (`key`, `title`, `body`, `comment`).
    pub fn as_str(self) -> &'static str {
        match self {
            MatchedIn::Key => "key",
            MatchedIn::Title => "title",
            MatchedIn::Body => "body",
            MatchedIn::Comment => "comment",
        }
    }
}

/// One issue a search found.
#[derive(Debug, Clone, PartialEq)]
pub struct SearchHit {
    pub issue: Issue,
    /// The rank's tier: 5 the exact key, 4 a longer key it begins, 3 the title, 2 the body, 1 a comment.
    pub score: i32,
    pub matched_in: MatchedIn,
    /// A short plain-text excerpt of what matched (the title for a key or title match).
    pub snippet: String,
}

/// About [`SNIPPET_CHARS`] characters of `text` around its first word that begins with one of
/// `terms`, on one line, with `…` where it was cut.
pub fn snippet(text: &str, terms: &[String]) -> String {
    let at = words(text)
        .find(|(_, w)| {
            let w = w.to_lowercase();
            terms.iter().any(|t| w.starts_with(t.as_str()))
        })
        .map_or(0, |(at, _)| at);
    // Up to a third of the snippet before the match, from the start of a character.
    let start = text[..at]
        .char_indices()
        .rev()
        .nth(SNIPPET_CHARS / 3 - 1)
        .map_or(0, |(i, _)| i);
    let piece: String = text[start..].chars().take(SNIPPET_CHARS).collect();
    let mut out = piece.split_whitespace().collect::<Vec<_>>().join(" ");
    if start > 0 {
        out.insert(0, '…');
    }
    if start + piece.len() < text.len() {
        out.push('…');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queries_are_trimmed_bounded_and_need_a_word() {
        let q = SearchQuery::parse("  parser crash ", None).unwrap();
        assert_eq!((q.text.as_str(), q.limit), ("parser crash", 20));
        assert_eq!(
            SearchQuery::parse("   ", None).unwrap_err().message,
            "must not be empty"
        );
        let long = "a".repeat(201);
        assert_eq!(
            SearchQuery::parse(&long, None).unwrap_err().message,
            "must be at most 200 characters (got 201)"
        );
        assert_eq!(
            SearchQuery::parse("\"*-:", None).unwrap_err().message,
            "must contain a letter or a digit to search for"
        );
        let e = SearchQuery::parse("x", Some(0)).unwrap_err();
        assert_eq!(
            (e.field, e.message.as_str()),
            ("limit", "must be between 1 and 100 (got 0)")
        );
    }

    #[test]
    fn operators_and_quotes_are_separators() {
        assert_eq!(
            terms("\"Parser\" AND crash* NEAR(x) -y title:z 'a' OR 1=1; drop"),
            [
                "parser", "and", "crash", "near", "x", "y", "title", "z", "a", "or", "1", "drop"
            ][..MAX_TERMS]
        );
        assert_eq!(terms("Café ÉCOLE 東京"), ["café", "école", "東京"]);
        assert_eq!(terms("a a A"), ["a"]);
    }

    #[test]
    fn a_key_is_the_whole_query() {
        let key = |t: &str| {
            SearchQuery::parse(t, None)
                .unwrap()
                .key()
                .map(|k| k.to_string())
        };
        assert_eq!(key("acm-12"), Some("ACM-12".into()));
        assert_eq!(key("ACM-1"), Some("ACM-1".into()));
        assert_eq!(key("acm-012"), None);
        assert_eq!(key("acm 12"), None);
        assert_eq!(key("fix acm-12"), None);
    }

    #[test]
    fn snippets_center_on_the_first_match() {
        let text = format!(
            "{} the parser crashed\n on   empty input {}",
            "x ".repeat(100),
            "y ".repeat(100)
        );
        let s = snippet(&text, &["pars".to_owned()]);
        assert!(s.starts_with('…') && s.ends_with('…'), "{s}");
        assert!(s.contains("the parser crashed on empty input"), "{s}");
        assert_eq!(snippet("short body", &["body".to_owned()]), "short body");
        assert_eq!(snippet("nothing here", &["zzz".to_owned()]), "nothing here");
    }
}
