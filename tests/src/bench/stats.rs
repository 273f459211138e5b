//! Percentiles of a sample.

/// p50, p99 and max of a sample (nearest rank), in the sample's unit.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Stats {
    pub count: usize,
    pub p50: f64,
    pub p99: f64,
    pub max: f64,
}

impl Stats {
    /// The statistics of `values` (sorted here); all zero when empty.
    pub fn of(values: &mut [f64]) -> Self {
        if values.is_empty() {
            return Self::default();
        }
        values.sort_by(f64::total_cmp);
        let rank = |q: f64| {
            let i = ((q * values.len() as f64).ceil() as usize).clamp(1, values.len());
            values[i - 1]
        };
        Self {
            count: values.len(),
            p50: rank(0.50),
            p99: rank(0.99),
            max: values[values.len() - 1],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Stats;

    #[test]
    fn nearest_rank_percentiles() {
        let mut v: Vec<f64> = (1..=100).rev().map(f64::from).collect();
        let s = Stats::of(&mut v);
        assert_eq!((s.count, s.p50, s.p99, s.max), (100, 50.0, 99.0, 100.0));
        assert_eq!(Stats::of(&mut []), Stats::default());
        assert_eq!(Stats::of(&mut [7.0]).p99, 7.0);
    }
}
