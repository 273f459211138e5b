//! Pages of the issue and comment lists: `limit` (how many) and `after` (where the previous page ended,
//! its `next_after`). One response never holds more than [`MAX_LIMIT`] items, however long the list.

use axum::http::StatusCode;

use crate::http::{Error, Result};

/// Items per page when no `limit` is given.
pub(super) const DEFAULT_LIMIT: i64 = 50;
/// Most items one page holds.
pub(super) const MAX_LIMIT: i64 = 200;

/// Parses `limit`: a whole number from 1 to [`MAX_LIMIT`], [`DEFAULT_LIMIT`] when absent; 400 otherwise.
pub(super) fn limit(raw: Option<&str>) -> Result<i64> {
    let Some(raw) = raw else {
        return Ok(DEFAULT_LIMIT);
    };
    match raw.trim().parse::<i64>() {
        Ok(n) if (1..=MAX_LIMIT).contains(&n) => Ok(n),
        _ => Err(bad_request(
            "limit",
            format!("must be a whole number from 1 to {MAX_LIMIT}, got {raw:?}"),
        )),
    }
}

/// A 400 about one query parameter.
pub(super) fn bad_request(field: &'static str, message: String) -> Error {
    Error::Rejected(StatusCode::BAD_REQUEST, field, message)
}

/// Keeps the first `limit` of `items` (read as `limit + 1`) and returns the cursor past the last one
/// kept when more follow.
pub(super) fn cut<T, C>(items: &mut Vec<T>, limit: i64, cursor: impl Fn(&T) -> C) -> Option<C> {
    let limit = usize::try_from(limit).unwrap_or(usize::MAX);
    if items.len() <= limit {
        return None;
    }
    items.truncate(limit);
    items.last().map(cursor)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_outside_one_to_the_maximum_are_refused_by_name() {
        assert_eq!(limit(None).unwrap(), DEFAULT_LIMIT);
        assert_eq!(limit(Some("200")).unwrap(), 200);
        assert_eq!(limit(Some(" 1 ")).unwrap(), 1);
        for raw in [
            "0",
            "-1",
            "201",
            "1000",
            "abc",
            "",
            "1.5",
            "99999999999999999999",
        ] {
            let e = limit(Some(raw)).unwrap_err();
            assert_eq!(e.status_code(), StatusCode::BAD_REQUEST, "{raw}");
            assert_eq!(
                e.to_string(),
                format!("limit must be a whole number from 1 to 200, got {raw:?}")
            );
        }
    }

    #[test]
    fn a_cursor_only_when_more_follow() {
        let mut items = vec![1, 2, 3];
        assert_eq!(cut(&mut items, 3, |i| *i), None);
        assert_eq!(items, [1, 2, 3]);
        assert_eq!(cut(&mut items, 2, |i| *i), Some(2));
        assert_eq!(items, [1, 2]);
    }
}
