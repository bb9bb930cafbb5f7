//! What a result reports beside its text (the `result_json` of `AolTask`): an expert's, what
//! its task spent against what it was allowed ([`TaskReport`]); the engine's, each routed
//! step's expert, status and spend ([`RunReport`]), built from its experts' reports.

use serde::{Deserialize, Serialize};

use super::{ProtocolError, TaskOutcome};

/// An expert's report on its task.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskReport {
    /// The expert (`<mesh>/<role>`).
    pub expert: String,
    /// What the task spent.
    pub spent: Spent,
    /// What it was allowed.
    pub budget: Allowed,
}

/// What a task spent.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Spent {
    /// Model calls made.
    pub model_calls: u32,
    /// Prompt tokens.
    pub input_tokens: u64,
    /// Completion tokens.
    pub output_tokens: u64,
    /// Estimated cost in US dollars.
    pub cost_usd: f64,
    /// Wall time, in seconds.
    pub secs: f64,
}

/// What a task was allowed; an unbounded axis is `null`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Allowed {
    /// Model calls.
    pub max_iterations: u32,
    /// Tokens, in and out.
    pub max_tokens: Option<u64>,
    /// US dollars.
    pub max_cost_usd: Option<f64>,
    /// Seconds.
    pub task_secs: u64,
}

/// The engine's report on a task it routed: the expert of its last step, whether every step
/// answered, and each step.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunReport {
    /// The node of the last step's expert process (empty when none ran).
    pub expert: String,
    /// The last step's expert (`<mesh>/<role>`).
    pub domain: String,
    /// Whether every routed step ran and answered.
    pub answered: bool,
    /// The steps that ran, in order.
    pub steps: Vec<StepReport>,
}

/// One routed step of a task, as the engine reports it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StepReport {
    /// Its expert (`<mesh>/<role>`).
    pub domain: String,
    /// The node of its expert process (empty when none ran).
    pub expert: String,
    /// How it ended.
    pub status: TaskOutcome,
    /// What it spent, as its expert reported (none when it reported nothing).
    pub spent: Option<Spent>,
    /// What it was allowed, as its expert reported.
    pub budget: Option<Allowed>,
}

impl RunReport {
    /// As `result_json` carries it (sorted keys, as before it had a type).
    pub fn to_json(&self) -> String {
        serde_json::to_value(self)
            .expect("a report serialises")
            .to_string()
    }
}

impl TaskReport {
    /// Reads a result's `result_json`: `None` when the expert reported nothing (empty, or
    /// `{}` from a task refused before it started); refused when it is anything but a report.
    pub fn parse(json: &str) -> Result<Option<TaskReport>, ProtocolError> {
        let trimmed = json.trim();
        if trimmed.is_empty() || trimmed == "{}" {
            return Ok(None);
        }
        serde_json::from_str(trimmed)
            .map(Some)
            .map_err(ProtocolError::Report)
    }

    /// As `result_json` carries it: an object with sorted keys, as it was written before
    /// the report had a type.
    pub fn to_json(&self) -> String {
        serde_json::to_value(self)
            .expect("a report serialises")
            .to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_report_is_read_back_as_written_and_anything_else_is_refused() {
        let written = r#"{"budget":{"max_cost_usd":null,"max_iterations":24,"max_tokens":null,"task_secs":300},"expert":"core/assistant","spent":{"cost_usd":0.0,"input_tokens":10,"model_calls":1,"output_tokens":2,"secs":0.5}}"#;
        let report = TaskReport::parse(written).unwrap().unwrap();
        assert_eq!(report.spent.model_calls, 1);
        assert_eq!(report.to_json(), written);
        assert_eq!(TaskReport::parse("{}").unwrap(), None);
        assert_eq!(TaskReport::parse("").unwrap(), None);
        let wrong = TaskReport::parse(r#"{"expert": "a/b"}"#).unwrap_err();
        assert!(wrong.to_string().contains("missing field"), "{wrong}");
    }
}
