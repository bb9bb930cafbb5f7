//! Limits of one task: model calls, tokens and estimated cost.

use serde::{Deserialize, Serialize};

use crate::aem::TaskBudget;

/// Model calls a task may make when the caller gives no bound (the catalog's default).
pub use crate::aem::DEFAULT_MAX_ITERATIONS;

/// The per-task budget. `None` means unbounded on that axis.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Budget {
    /// Input plus output tokens over all model calls.
    #[serde(default)]
    pub max_tokens: Option<u64>,
    /// Estimated cost in US dollars (from the backends' configured prices; unpriced calls
    /// count as zero).
    #[serde(default)]
    pub max_cost_usd: Option<f64>,
}

/// Bounds of one task.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Limits {
    /// Model calls, at most.
    #[serde(default = "default_iterations")]
    pub max_iterations: u32,
    /// Tokens and cost.
    #[serde(default)]
    pub budget: Budget,
}

fn default_iterations() -> u32 {
    DEFAULT_MAX_ITERATIONS
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_iterations: DEFAULT_MAX_ITERATIONS,
            budget: Budget::default(),
        }
    }
}

impl From<&TaskBudget> for Limits {
    /// The limits an expert's declared budget sets.
    fn from(b: &TaskBudget) -> Self {
        Self {
            max_iterations: b.max_iterations,
            budget: Budget {
                max_tokens: b.max_tokens,
                max_cost_usd: b.max_cost_usd(),
            },
        }
    }
}

pub use crate::protocol::payload::Spend;

/// Which bound a task passed.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(tag = "limit", rename_all = "snake_case")]
pub enum BudgetLimit {
    /// The token bound.
    Tokens {
        /// The bound.
        max: u64,
        /// Tokens spent.
        spent: u64,
    },
    /// The cost bound.
    Cost {
        /// The bound, US dollars.
        max: f64,
        /// Estimated dollars spent.
        spent: f64,
    },
}

impl std::fmt::Display for BudgetLimit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            BudgetLimit::Tokens { max, spent } => {
                write!(f, "the budget of {max} tokens is spent ({spent} used)")
            }
            BudgetLimit::Cost { max, spent } => {
                write!(
                    f,
                    "the budget of ${max:.4} is spent (${spent:.4} estimated)"
                )
            }
        }
    }
}

impl Budget {
    /// The bound `spend` has gone past, if any.
    pub fn exceeded(&self, spend: &Spend) -> Option<BudgetLimit> {
        self.check(spend, |spent, max| spent > max, |spent, max| spent > max)
    }

    /// The bound `spend` has reached (nothing left for another call), if any.
    pub fn exhausted(&self, spend: &Spend) -> Option<BudgetLimit> {
        self.check(spend, |spent, max| spent >= max, |spent, max| spent >= max)
    }

    fn check(
        &self,
        spend: &Spend,
        tokens_over: impl Fn(u64, u64) -> bool,
        cost_over: impl Fn(f64, f64) -> bool,
    ) -> Option<BudgetLimit> {
        if let Some(max) = self.max_tokens
            && tokens_over(spend.tokens(), max)
        {
            return Some(BudgetLimit::Tokens {
                max,
                spent: spend.tokens(),
            });
        }
        if let Some(max) = self.max_cost_usd
            && cost_over(spend.cost_usd, max)
        {
            return Some(BudgetLimit::Cost {
                max,
                spent: spend.cost_usd,
            });
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exceeded_is_strict_and_exhausted_is_not() {
        let b = Budget {
            max_tokens: Some(100),
            max_cost_usd: Some(0.5),
        };
        let mut s = Spend {
            input_tokens: 60,
            output_tokens: 40,
            ..Default::default()
        };
        assert!(b.exceeded(&s).is_none());
        assert!(matches!(
            b.exhausted(&s),
            Some(BudgetLimit::Tokens {
                max: 100,
                spent: 100
            })
        ));
        s.input_tokens = 10;
        s.cost_usd = 0.6;
        assert!(matches!(b.exceeded(&s), Some(BudgetLimit::Cost { .. })));
        assert!(Budget::default().exceeded(&s).is_none());
    }
}
