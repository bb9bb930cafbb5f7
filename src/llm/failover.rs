//! An ordered list of backends behind one name: a retryable failure is retried with
//! exponential backoff up to a bound, then the next backend is tried; a failure that is not
//! retryable ends the call at once with that backend's error.

use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use super::error::LlmError;
use super::model::{BoxFuture, ChatModel};
use super::types::{ChatRequest, ChatResponse};
use crate::core::backoff::Backoff;

/// How often and how patiently one backend is retried.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RetryPolicy {
    /// Calls per backend, the first included (at least 1).
    pub max_attempts: u32,
    /// Pause after the first failure, in milliseconds; doubled after each further one.
    pub initial_backoff_ms: u64,
    /// Longest pause, in milliseconds (also caps a server's `retry-after`).
    pub max_backoff_ms: u64,
    /// Randomise each pause to between half and all of it, so clients that failed together
    /// do not retry together.
    pub jitter: bool,
    /// Seed of the jitter sequence; `None` seeds from the clock. Set it for reproducible
    /// pauses (tests).
    pub jitter_seed: Option<u64>,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            max_attempts: 3,
            initial_backoff_ms: 500,
            max_backoff_ms: 8_000,
            jitter: true,
            jitter_seed: None,
        }
    }
}

impl RetryPolicy {
    /// The pause after failed attempt `attempt` (1-based), before jitter.
    pub fn backoff(&self, attempt: u32) -> Duration {
        Backoff::new(
            Duration::from_millis(self.initial_backoff_ms),
            Duration::from_millis(self.max_backoff_ms),
        )
        .delay(attempt)
    }
}

/// Waits between attempts. [`TokioSleeper`] in production; tests pass one that records the
/// pauses and returns at once.
pub trait Sleeper: Send + Sync {
    /// Waits `duration`.
    fn sleep(&self, duration: Duration) -> BoxFuture<'_, ()>;
}

/// Sleeps on the tokio timer.
#[derive(Debug, Clone, Copy, Default)]
pub struct TokioSleeper;

impl Sleeper for TokioSleeper {
    fn sleep(&self, duration: Duration) -> BoxFuture<'_, ()> {
        Box::pin(tokio::time::sleep(duration))
    }
}

/// Backends tried in order under one (logical) name.
pub struct Failover {
    name: String,
    backends: Vec<Arc<dyn ChatModel>>,
    policy: RetryPolicy,
    sleeper: Arc<dyn Sleeper>,
    rng: Mutex<u64>,
}

impl std::fmt::Debug for Failover {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<&str> = self.backends.iter().map(|b| b.name()).collect();
        f.debug_struct("Failover")
            .field("name", &self.name)
            .field("backends", &names)
            .field("policy", &self.policy)
            .finish()
    }
}

impl Failover {
    /// `backends` in the order to try them.
    pub fn new(
        name: impl Into<String>,
        backends: Vec<Arc<dyn ChatModel>>,
        policy: RetryPolicy,
        sleeper: Arc<dyn Sleeper>,
    ) -> Self {
        let seed = policy.jitter_seed.unwrap_or_else(|| {
            SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0x9e37_79b9, |d| d.as_nanos() as u64)
        });
        Self {
            name: name.into(),
            backends,
            policy,
            sleeper,
            // xorshift needs a non-zero state.
            rng: Mutex::new(seed | 1),
        }
    }

    /// Names of the backends, in order.
    pub fn backend_names(&self) -> Vec<&str> {
        self.backends.iter().map(|b| b.name()).collect()
    }

    fn pause(&self, attempt: u32, error: &LlmError) -> Duration {
        let mut pause = self.policy.backoff(attempt);
        if self.policy.jitter {
            let r = {
                let mut state = self.rng.lock().unwrap_or_else(|p| p.into_inner());
                *state ^= *state << 13;
                *state ^= *state >> 7;
                *state ^= *state << 17;
                *state
            };
            let half = pause.as_millis() as u64 / 2;
            pause = Duration::from_millis(half + r % (half + 1));
        }
        if let Some(after) = error.retry_after() {
            pause = pause.max(after);
        }
        pause.min(Duration::from_millis(self.policy.max_backoff_ms))
    }

    async fn call(&self, request: &ChatRequest) -> Result<ChatResponse, LlmError> {
        let mut attempts = Vec::new();
        let mut last = None;
        let max = self.policy.max_attempts.max(1);
        for backend in &self.backends {
            for attempt in 1..=max {
                match backend.chat(request).await {
                    Ok(response) => return Ok(response),
                    Err(e) if !e.is_retryable() => return Err(e),
                    Err(e) => {
                        tracing::warn!(model = %self.name, backend = backend.name(), attempt, error = %e, "model call failed; will retry or fail over");
                        attempts.push(format!("{} attempt {attempt}: {e}", backend.name()));
                        if attempt < max {
                            self.sleeper.sleep(self.pause(attempt, &e)).await;
                        }
                        last = Some(e);
                    }
                }
            }
        }
        Err(match last {
            Some(last) => LlmError::Exhausted {
                name: self.name.clone(),
                attempts,
                last: Box::new(last),
            },
            None => LlmError::Rejected {
                backend: self.name.clone(),
                status: 0,
                message: "no backend is configured for this model name".into(),
            },
        })
    }
}

impl ChatModel for Failover {
    fn name(&self) -> &str {
        &self.name
    }

    fn chat<'a>(
        &'a self,
        request: &'a ChatRequest,
    ) -> BoxFuture<'a, Result<ChatResponse, LlmError>> {
        Box::pin(self.call(request))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_up_to_the_cap() {
        let p = RetryPolicy {
            max_attempts: 5,
            initial_backoff_ms: 100,
            max_backoff_ms: 350,
            jitter: false,
            jitter_seed: None,
        };
        let ms: Vec<u128> = (1..=4).map(|a| p.backoff(a).as_millis()).collect();
        assert_eq!(ms, [100, 200, 350, 350]);
    }

    #[test]
    fn seeded_jitter_is_reproducible_and_within_half_to_full() {
        let p = RetryPolicy {
            max_attempts: 3,
            initial_backoff_ms: 1000,
            max_backoff_ms: 10_000,
            jitter: true,
            jitter_seed: Some(42),
        };
        let err = LlmError::Timeout {
            backend: "b".into(),
            after: Duration::from_secs(1),
        };
        let a = Failover::new("m", vec![], p, Arc::new(TokioSleeper));
        let b = Failover::new("m", vec![], p, Arc::new(TokioSleeper));
        let xs: Vec<Duration> = (1..=3).map(|i| a.pause(i, &err)).collect();
        let ys: Vec<Duration> = (1..=3).map(|i| b.pause(i, &err)).collect();
        assert_eq!(xs, ys);
        for (i, d) in xs.iter().enumerate() {
            let full = p.backoff(i as u32 + 1);
            assert!(*d >= full / 2 && *d <= full, "{d:?} vs {full:?}");
        }
    }
}
