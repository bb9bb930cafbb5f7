//! What a task may take: its timeouts (wall time included) and its spending budget, declared
//! for a whole mesh in `AEM.md` (`defaults.timeouts`, `defaults.budget`) and per expert in
//! `capabilities.md` (`timeouts`, `budget`), field by field over the mesh's values. A value the
//! runtime cannot honour (zero, past its bound, not a number) is refused with its line.

use super::error::{AemError, Sink};
use super::frontmatter::Document;
use super::model::{TaskBudget, Timeouts};
use super::raw::{RawBudget, RawTimeouts};

/// Upper bound for any timeout or lifetime (one day).
pub const MAX_SECS: u64 = 86_400;
/// Model calls a task may make unless a budget says otherwise.
pub const DEFAULT_MAX_ITERATIONS: u32 = 24;
/// Upper bound of `max_iterations`.
pub const MAX_ITERATIONS: u32 = 1_000;
/// Upper bound of `max_tokens`.
pub const MAX_TOKENS: u64 = 1_000_000_000;
/// Upper bound of `max_cost_usd`.
pub const MAX_COST_USD: f64 = 10_000.0;

/// Where the values being read are written: the document, the front-matter section holding
/// the keys (for line numbers) and the field path reported (`defaults.budget`, `budget`).
pub(crate) struct Place<'a> {
    pub(crate) doc: &'a Document,
    pub(crate) section: &'a str,
    pub(crate) field: &'a str,
}

impl Place<'_> {
    fn refuse(
        &self,
        sink: &mut Sink,
        key: &str,
        value: String,
        unit: &'static str,
        expected: String,
    ) {
        sink.push(
            &self.doc.path,
            self.doc.line_of_key_in(self.section, key),
            format!("{}.{key}", self.field),
            AemError::OutOfRange { value, unit },
            Some(expected),
        );
    }

    /// `value` when it lies in `1..=max`; `None` (with an error) when not.
    fn checked<T: Copy + PartialOrd + From<u8> + std::fmt::Display>(
        &self,
        sink: &mut Sink,
        (key, unit): (&str, &'static str),
        value: T,
        max: T,
    ) -> Option<T> {
        if value >= T::from(1) && value <= max {
            return Some(value);
        }
        let expected = format!("a number of {unit} from 1 to {max}");
        self.refuse(sink, key, value.to_string(), unit, expected);
        None
    }
}

/// A number of seconds in 1..=[`MAX_SECS`], or `base` (with an error) when out of range.
pub(crate) fn secs(value: Option<u64>, base: u64, key: &str, at: &Place, sink: &mut Sink) -> u64 {
    value
        .and_then(|v| at.checked(sink, (key, "seconds"), v, MAX_SECS))
        .unwrap_or(base)
}

/// `raw` over `base`, field by field.
pub(crate) fn timeouts(raw: &RawTimeouts, base: Timeouts, at: &Place, sink: &mut Sink) -> Timeouts {
    Timeouts {
        task_secs: secs(raw.task_secs, base.task_secs, "task_secs", at, sink),
        tool_secs: secs(raw.tool_secs, base.tool_secs, "tool_secs", at, sink),
        delegation_secs: secs(
            raw.delegation_secs,
            base.delegation_secs,
            "delegation_secs",
            at,
            sink,
        ),
    }
}

/// `raw` over `base`, field by field.
pub(crate) fn budget(raw: &RawBudget, base: TaskBudget, at: &Place, sink: &mut Sink) -> TaskBudget {
    let max_iterations = raw
        .max_iterations
        .and_then(|n| at.checked(sink, ("max_iterations", "model calls"), n, MAX_ITERATIONS))
        .unwrap_or(base.max_iterations);
    let max_tokens = raw
        .max_tokens
        .and_then(|n| at.checked(sink, ("max_tokens", "tokens"), n, MAX_TOKENS))
        .or(base.max_tokens);
    let max_cost_micro_usd = match raw.max_cost_usd {
        None => base.max_cost_micro_usd,
        Some(usd) if usd.is_finite() && usd > 0.0 && usd <= MAX_COST_USD => {
            Some((usd * 1e6).round().max(1.0) as u64)
        }
        Some(usd) => {
            at.refuse(
                sink,
                "max_cost_usd",
                usd.to_string(),
                "US dollars",
                format!("US dollars above 0 and at most {MAX_COST_USD}"),
            );
            base.max_cost_micro_usd
        }
    };
    TaskBudget {
        max_iterations,
        max_tokens,
        max_cost_micro_usd,
    }
}

impl TaskBudget {
    /// The cost bound in US dollars, when bounded.
    pub fn max_cost_usd(&self) -> Option<f64> {
        self.max_cost_micro_usd.map(|m| m as f64 / 1e6)
    }
}

impl Default for TaskBudget {
    fn default() -> Self {
        Self {
            max_iterations: DEFAULT_MAX_ITERATIONS,
            max_tokens: None,
            max_cost_micro_usd: None,
        }
    }
}
