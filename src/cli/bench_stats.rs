//! What the `iron bench` commands compute from their samples.

use std::time::Duration;

/// Percentile (0..=100) of sorted samples, nearest rank; zero for no samples.
pub(super) fn pct(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let i = ((sorted.len() - 1) as f64 * p / 100.0).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

/// Microseconds, as a float for printing.
pub(super) fn us(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

/// Milliseconds, as a float for printing.
pub(super) fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_pick_the_nearest_rank() {
        let samples: Vec<Duration> = (1..=101).map(Duration::from_millis).collect();
        assert_eq!(pct(&samples, 0.0), Duration::from_millis(1));
        assert_eq!(pct(&samples, 50.0), Duration::from_millis(51));
        assert_eq!(pct(&samples, 99.0), Duration::from_millis(100));
        assert_eq!(pct(&samples, 100.0), Duration::from_millis(101));
        assert_eq!(pct(&[], 50.0), Duration::ZERO);
        assert_eq!(us(Duration::from_micros(1_500)), 1_500.0);
        assert_eq!(ms(Duration::from_micros(1_500)), 1.5);
    }
}
