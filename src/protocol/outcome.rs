//! How a task ended: the `status` of `AolTask`'s result, and of each step the engine reports.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use super::ProtocolError;

/// How a task ended. On the wire it is the status text each variant names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TaskOutcome {
    /// The expert answered.
    Succeeded,
    /// It ended without an answer for a reason not named below (it could not start, the
    /// engine could not reach it).
    Failed,
    /// Someone canceled it.
    Canceled,
    /// The engine refused it before any expert ran (see `task_rejected`).
    Rejected,
    /// It ran past its time limit.
    TimedOut,
    /// Its model asked the operator a question and the task ended waiting.
    NeedsAnswer,
    /// A token or cost bound was passed.
    BudgetExceeded,
    /// Its model-call bound was spent with work still asked for.
    MaxIterations,
    /// The model failed.
    ModelError,
    /// The log did not take one of its events.
    EventLogFailed,
}

impl TaskOutcome {
    /// Every outcome.
    pub const ALL: [TaskOutcome; 10] = [
        TaskOutcome::Succeeded,
        TaskOutcome::Failed,
        TaskOutcome::Canceled,
        TaskOutcome::Rejected,
        TaskOutcome::TimedOut,
        TaskOutcome::NeedsAnswer,
        TaskOutcome::BudgetExceeded,
        TaskOutcome::MaxIterations,
        TaskOutcome::ModelError,
        TaskOutcome::EventLogFailed,
    ];

    /// Its status text.
    pub fn as_str(self) -> &'static str {
        match self {
            TaskOutcome::Succeeded => "succeeded",
            TaskOutcome::Failed => "failed",
            TaskOutcome::Canceled => "canceled",
            TaskOutcome::Rejected => "rejected",
            TaskOutcome::TimedOut => "timed_out",
            TaskOutcome::NeedsAnswer => "needs_answer",
            TaskOutcome::BudgetExceeded => "budget_exceeded",
            TaskOutcome::MaxIterations => "max_iterations",
            TaskOutcome::ModelError => "model_error",
            TaskOutcome::EventLogFailed => "event_log_failed",
        }
    }

    /// Whether the task answered.
    pub fn succeeded(self) -> bool {
        self == TaskOutcome::Succeeded
    }
}

impl fmt::Display for TaskOutcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for TaskOutcome {
    type Err = ProtocolError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        TaskOutcome::ALL
            .into_iter()
            .find(|o| o.as_str() == s)
            .ok_or_else(|| ProtocolError::Outcome(s.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_outcome_is_its_status_text_both_ways() {
        for outcome in TaskOutcome::ALL {
            let json = serde_json::to_string(&outcome).unwrap();
            assert_eq!(json, format!("\"{outcome}\""));
            assert_eq!(outcome.as_str().parse::<TaskOutcome>().unwrap(), outcome);
            assert_eq!(serde_json::from_str::<TaskOutcome>(&json).unwrap(), outcome);
        }
        assert!("done".parse::<TaskOutcome>().is_err());
    }
}
