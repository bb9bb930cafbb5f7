//! How long to wait before trying again: exponential backoff, the one schedule every retry in
//! Iron uses (restarts of nodes, hand-over to the engine, the gateway, triggers, model calls).

use std::time::Duration;

/// Pauses that double from `initial` up to `max`, counted by failures since the last success.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Backoff {
    initial: Duration,
    max: Duration,
    failures: u32,
}

impl Backoff {
    /// A schedule starting at `initial` and never above `max`.
    pub const fn new(initial: Duration, max: Duration) -> Self {
        Self {
            initial,
            max,
            failures: 0,
        }
    }

    /// The pause after failed attempt `attempt` (1-based): `initial × 2^(attempt − 1)`, at
    /// most `max` (`initial` for attempt 0).
    pub fn delay(&self, attempt: u32) -> Duration {
        let factor = 1u32 << attempt.saturating_sub(1).min(31);
        self.initial.saturating_mul(factor).min(self.max)
    }

    /// Counts one more failure and returns the pause before the next try.
    pub fn fail(&mut self) -> Duration {
        self.failures = self.failures.saturating_add(1);
        self.delay(self.failures)
    }

    /// After a success: the next failure waits `initial` again.
    pub fn reset(&mut self) {
        self.failures = 0;
    }

    /// Failures since the last success.
    pub fn failures(&self) -> u32 {
        self.failures
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn doubles_up_to_the_cap_and_starts_over_after_a_success() {
        let ms = Duration::from_millis;
        let mut b = Backoff::new(ms(100), ms(500));
        assert_eq!(
            [b.fail(), b.fail(), b.fail(), b.fail()],
            [ms(100), ms(200), ms(400), ms(500)]
        );
        assert_eq!(b.failures(), 4);
        b.reset();
        assert_eq!(b.fail(), ms(100));
        assert_eq!(b.delay(0), ms(100));
        assert_eq!(b.delay(u32::MAX), ms(500), "no overflow");
    }
}
