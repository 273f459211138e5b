//! Reading a paged list of the API (`{"<items>": [...], "next_after": "<cursor>" | null}`) one page after
//! the other, up to a number of items or to its end.

use serde_json::Value;

use super::Client;

/// The most items the server returns in one page.
pub const MAX_PAGE: usize = 200;

/// What was read of a paged list.
#[derive(Debug, Default)]
pub struct Read {
    pub items: Vec<Value>,
    /// Where the list goes on, when `want` stopped the reading before its end.
    pub next_after: Option<String>,
}

/// Reads the list at `path` (with or without a query) from `after` on, following `next_after`, until
/// `want` items are read (all of them when `None`).
pub async fn read(
    client: &Client,
    path: &str,
    key: &str,
    mut after: Option<String>,
    want: Option<usize>,
) -> anyhow::Result<Read> {
    let mut read = Read::default();
    loop {
        let left = want.map_or(MAX_PAGE, |w| w.saturating_sub(read.items.len()));
        if left == 0 {
            read.next_after = after;
            return Ok(read);
        }
        let mut query = vec![("limit", left.min(MAX_PAGE).to_string())];
        query.extend(after.take().map(|a| ("after", a)));
        let separator = if path.contains('?') { '&' } else { '?' };
        let query = serde_urlencoded::to_string(&query)?;
        let mut page = client.get(&format!("{path}{separator}{query}")).await?;
        let Some(items) = page.get_mut(key).and_then(Value::as_array_mut) else {
            anyhow::bail!("the server's answer has no {key:?} list; is muster up to date?");
        };
        read.items.append(items);
        match page.get("next_after").and_then(Value::as_str) {
            Some(next) => after = Some(next.to_owned()),
            None => return Ok(read),
        }
    }
}
