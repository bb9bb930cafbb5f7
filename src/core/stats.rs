//! The one percentile every benchmark reports.

use std::time::Duration;

/// The `p`-th percentile (0 to 100) of `sorted` samples by nearest rank (the sample at
/// rank round((n − 1) · p / 100)); zero for no samples.
pub fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let i = ((sorted.len() - 1) as f64 * p.clamp(0.0, 100.0) / 100.0).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

/// [`percentile`] of samples in any order.
pub fn percentile_of(mut samples: Vec<Duration>, p: f64) -> Duration {
    samples.sort();
    percentile(&samples, p)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_pick_the_nearest_rank() {
        let samples: Vec<Duration> = (1..=101).map(Duration::from_millis).collect();
        assert_eq!(percentile(&samples, 0.0), Duration::from_millis(1));
        assert_eq!(percentile(&samples, 50.0), Duration::from_millis(51));
        assert_eq!(percentile(&samples, 99.0), Duration::from_millis(100));
        assert_eq!(percentile(&samples, 100.0), Duration::from_millis(101));
        assert_eq!(percentile(&[], 50.0), Duration::ZERO);
        let shuffled = vec![
            Duration::from_millis(3),
            Duration::from_millis(1),
            Duration::from_millis(2),
        ];
        assert_eq!(percentile_of(shuffled, 50.0), Duration::from_millis(2));
    }
}
