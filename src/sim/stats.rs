//! Summaries of a metric over many runs.

use serde::Serialize;

/// Mean, median, tail percentiles and maximum of a metric over runs.
/// Percentiles use the nearest-rank method: p99 is the smallest value that at
/// least 99 % of the runs do not exceed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct Stats {
    /// How many values (runs, operations) the summary is over.
    pub samples: u64,
    /// Arithmetic mean.
    pub mean: f64,
    /// Median.
    pub p50: f64,
    /// 99th percentile.
    pub p99: f64,
    /// 99.9th percentile.
    pub p999: f64,
    /// Maximum.
    pub max: f64,
}

impl Stats {
    /// The summary of `values` (all zeros if empty).
    pub fn of(values: impl IntoIterator<Item = f64>) -> Stats {
        let mut v: Vec<f64> = values.into_iter().collect();
        if v.is_empty() {
            return Stats::default();
        }
        v.sort_by(f64::total_cmp);
        let rank = |p: f64| v[((p * v.len() as f64).ceil() as usize).clamp(1, v.len()) - 1];
        Stats {
            samples: v.len() as u64,
            mean: v.iter().sum::<f64>() / v.len() as f64,
            p50: rank(0.5),
            p99: rank(0.99),
            p999: rank(0.999),
            max: v[v.len() - 1],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank_percentiles() {
        let s = Stats::of((1..=1000).map(f64::from));
        assert_eq!((s.p50, s.p99, s.p999, s.max), (500.0, 990.0, 999.0, 1000.0));
        assert!((s.mean - 500.5).abs() < 1e-9);
        assert_eq!(s.samples, 1000);
        let one = Stats::of([7.0]);
        assert_eq!((one.p50, one.p999, one.max), (7.0, 7.0, 7.0));
        assert_eq!(Stats::of([]), Stats::default());
    }
}
