//! `muster issue search QUERY`: the workspace's issues that match, best first, with where each matched.

use clap::Args;
use serde::Deserialize;

use super::Client;
use super::output::{self, print_json};
use super::shape;

/// `muster issue search` arguments.
#[derive(Debug, Args)]
pub struct SearchArgs {
    /// Words to find in titles, bodies and comments (each as a word prefix), or an issue key
    /// (`ACM-12`; `acm-1` also finds the keys it begins).
    pub query: String,
    /// Show at most this many hits, 1 to 100.
    #[arg(long, default_value_t = 20, value_parser = clap::value_parser!(u32).range(1..=100))]
    pub limit: u32,
}

#[derive(Debug, Deserialize)]
struct Hit {
    key: String,
    status: String,
    title: String,
    matched_in: String,
    snippet: String,
}

/// Prints the hits as a table (KEY, STATUS, TITLE, MATCHED), a snippet under body and comment matches;
/// `--json` prints the API's answer.
pub async fn run(client: &Client, json: bool, args: &SearchArgs) -> anyhow::Result<()> {
    let query = serde_urlencoded::to_string([
        ("q", args.query.clone()),
        ("limit", args.limit.to_string()),
    ])?;
    let found = client
        .get(&format!("/api/v1/issues/search?{query}"))
        .await?;
    if json {
        return print_json(&found);
    }
    let hits: Vec<Hit> = shape(&found["hits"])?;
    if hits.is_empty() {
        eprintln!("no issue matches {:?}", args.query);
        return Ok(());
    }
    let rows: Vec<Vec<String>> = hits
        .into_iter()
        .map(|h| {
            let matched = match h.matched_in.as_str() {
                "body" | "comment" => format!("{}: {}", h.matched_in, h.snippet),
                _ => h.matched_in,
            };
            vec![h.key, h.status, h.title, matched]
        })
        .collect();
    print!(
        "{}",
        output::table(&["KEY", "STATUS", "TITLE", "MATCHED"], &rows)
    );
    Ok(())
}
