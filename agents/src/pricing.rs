//! Token prices, for CLIs that report tokens but no cost (Codex).
//!
//! A [`RateTable`] maps model names to USD per million tokens. It is edited as JSON:
//! `{"gpt-5": {"input": 1.25, "output": 10.0, "cached": 0.125}}` (`cached` defaults to `input`).
//! Lookup is exact first, then the longest table entry that prefixes the model name at a `-`,
//! `[`, `@` or `:` boundary (`gpt-5-codex` falls back to `gpt-5`, `gpt-5.5` does not), after
//! dropping a `provider/` prefix. Unknown models have no price rather than a guessed one.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::{Error, TokenUsage};

/// Characters that may follow a table entry used as a model-name prefix.
const PREFIX_BOUNDARIES: [char; 4] = ['-', '[', '@', ':'];
const TOKENS_PER_MILLION: f64 = 1_000_000.0;

/// Built-in list prices in USD per million tokens (input, output, cached input), as published by
/// the vendors when this table was written. Edit or replace them with [`RateTable::from_json`].
const DEFAULT_RATES: &[(&str, f64, f64, f64)] = &[
    ("gpt-5", 1.25, 10.0, 0.125),
    ("gpt-5-mini", 0.25, 2.0, 0.025),
    ("gpt-5-nano", 0.05, 0.4, 0.005),
    ("gpt-5-codex", 1.25, 10.0, 0.125),
    ("gpt-5.1", 1.25, 10.0, 0.125),
    ("gpt-5.1-codex", 1.25, 10.0, 0.125),
    ("gpt-4.1", 2.0, 8.0, 0.5),
    ("gpt-4.1-mini", 0.4, 1.6, 0.1),
    ("o3", 2.0, 8.0, 0.5),
    ("o4-mini", 1.1, 4.4, 0.275),
    ("claude-opus-4-5", 5.0, 25.0, 0.5),
    ("claude-sonnet-4-5", 3.0, 15.0, 0.3),
    ("claude-haiku-4-5", 1.0, 5.0, 0.1),
];

/// The price of one model, in USD per million tokens.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ModelRate {
    /// Uncached input tokens (also used for cache writes).
    pub input: f64,
    /// Output tokens, reasoning included.
    pub output: f64,
    /// Input tokens read from the cache; the input price when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cached: Option<f64>,
}

/// The highest price a rate table accepts, USD per million tokens: far above any real model's, low
/// enough that no run's cost overflows.
pub const MAX_PRICE_PER_MILLION: f64 = 1_000_000.0;

impl ModelRate {
    /// Every price is an amount from 0 to [`MAX_PRICE_PER_MILLION`].
    pub fn is_valid(&self) -> bool {
        let ok = |p: f64| (0.0..=MAX_PRICE_PER_MILLION).contains(&p);
        ok(self.input) && ok(self.output) && self.cached.is_none_or(ok)
    }

    /// The cost of `usage` at this rate, in USD.
    pub fn cost(&self, usage: &TokenUsage) -> f64 {
        let per_token = |tokens: u64, rate: f64| tokens as f64 * rate / TOKENS_PER_MILLION;
        per_token(usage.input + usage.cache_write, self.input)
            + per_token(usage.cache_read, self.cached.unwrap_or(self.input))
            + per_token(usage.output, self.output)
    }
}

/// An editable model → price table.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct RateTable {
    rates: BTreeMap<String, ModelRate>,
}

impl Default for RateTable {
    fn default() -> Self {
        let rates = DEFAULT_RATES
            .iter()
            .map(|&(model, input, output, cached)| {
                let rate = ModelRate {
                    input,
                    output,
                    cached: Some(cached),
                };
                (model.to_owned(), rate)
            })
            .collect();
        Self { rates }
    }
}

impl RateTable {
    /// An empty table (every model unpriced).
    pub fn empty() -> Self {
        Self {
            rates: BTreeMap::new(),
        }
    }

    /// Parses a table from JSON; the error names the offending line.
    pub fn from_json(text: &str) -> Result<Self, Error> {
        serde_json::from_str(text).map_err(|e| {
            let line = text.lines().nth(e.line().saturating_sub(1)).unwrap_or(text);
            Error::parse(line, format!("invalid rate table: {e}"))
        })
    }

    /// The table as pretty JSON, ready to edit.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_else(|_| "{}".to_owned())
    }

    /// Every model and its rate, by model name.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &ModelRate)> {
        self.rates
            .iter()
            .map(|(model, rate)| (model.as_str(), rate))
    }

    /// Sets (or replaces) the rate of `model`.
    pub fn set(&mut self, model: impl Into<String>, rate: ModelRate) {
        self.rates.insert(model.into(), rate);
    }

    /// The rate for `model` (see the module docs for the lookup rule).
    pub fn rate(&self, model: &str) -> Option<&ModelRate> {
        let name = model.rsplit('/').next().unwrap_or(model);
        if let Some(rate) = self.rates.get(name) {
            return Some(rate);
        }
        self.rates
            .iter()
            .filter(|(key, _)| {
                name.strip_prefix(key.as_str())
                    .and_then(|rest| rest.chars().next())
                    .is_some_and(|c| PREFIX_BOUNDARIES.contains(&c))
            })
            .max_by_key(|(key, _)| key.len())
            .map(|(_, rate)| rate)
    }

    /// The cost of `usage` on `model` in USD, or `None` for an unknown model.
    pub fn price(&self, model: &str, usage: &TokenUsage) -> Option<f64> {
        self.rate(model).map(|rate| rate.cost(usage))
    }

    /// `usage` with its cost filled in from the table when the CLI reported none.
    pub fn with_cost(&self, model: &str, usage: TokenUsage) -> TokenUsage {
        TokenUsage {
            cost_usd: usage.cost_usd.or_else(|| self.price(model, &usage)),
            ..usage
        }
    }
}

#[cfg(test)]
mod tests;
