//! The payloads of the planes under the tasks: perception sources' health, triggers, the
//! inbox's dead letters and the projector's stops.

use serde::{Deserialize, Serialize};

use super::Payload;
use crate::core::event_kind::EventKind;

/// `source_health`: how each input of a perception source is doing, written when it changes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SourceHealth {
    /// The mesh the source belongs to.
    pub mesh: String,
    /// The source.
    pub source: String,
    /// Whether every input is failing.
    pub failing: bool,
    /// Each input's health.
    pub feeds: Vec<FeedHealth>,
}

impl Payload for SourceHealth {
    const KIND: EventKind = EventKind::SourceHealth;
}

/// How an input did on its last read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// Read whole.
    Ok,
    /// Read up to a limit; what came after it was left out.
    Truncated,
    /// Not read.
    Failing,
}

impl Status {
    /// The word a person reads.
    pub fn word(self) -> &'static str {
        match self {
            Status::Ok => "ok",
            Status::Truncated => "truncated",
            Status::Failing => "failing",
        }
    }
}

/// One input's health.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FeedHealth {
    /// The input (a feed's path or URL).
    pub feed: String,
    /// Where it is listed: `<list>:<line>`.
    pub at: String,
    /// How its last read went.
    pub status: Status,
    /// Why, when not [`Status::Ok`].
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub reason: String,
    /// Items it gave on its last read (0 when failing).
    #[serde(default)]
    pub items: usize,
    /// Since when the status holds (Unix ms).
    #[serde(default)]
    pub since_ms: i64,
    /// Its last successful read, whole or in part (Unix ms).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_ok_ms: Option<i64>,
    /// Its last failed read (Unix ms).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_failure_ms: Option<i64>,
    /// Why that read failed (kept after it recovers).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub last_failure: String,
}

/// `trigger_fired`: a trigger started a job.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TriggerFired {
    /// The mesh that declares the trigger.
    pub mesh: String,
    /// The trigger.
    pub trigger: String,
    /// The job it started.
    pub job: String,
    /// The flow the job runs (`<mesh>/<role>/<flow>`).
    pub flow: String,
    /// What fired it, in words (`8 new item(s)`).
    pub what: String,
}

impl Payload for TriggerFired {
    const KIND: EventKind = EventKind::TriggerFired;
}

/// `dead_letter`: a message the inbox could not hand on, set aside with why.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DeadLetter {
    /// Its session.
    pub session_id: String,
    /// The channel it came in on.
    pub source: String,
    /// Who sent it.
    pub user_id: String,
    /// Where a reply would have gone.
    pub destination: String,
    /// Its size: text and attachments.
    pub bytes: usize,
    /// Why it was set aside.
    pub reason: String,
    /// The event id it would have had.
    pub event_id: String,
}

impl Payload for DeadLetter {
    const KIND: EventKind = EventKind::DeadLetter;
}

/// `projector_gap`: the projector stopped because the stream's sequence did not follow on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProjectorGap {
    /// The stream.
    pub stream: String,
    /// The projector's consumer.
    pub consumer: String,
    /// What it found.
    #[serde(flatten)]
    pub problem: SequenceProblem,
}

impl Payload for ProjectorGap {
    const KIND: EventKind = EventKind::ProjectorGap;
}

/// How a stream's sequence failed to follow on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "problem", rename_all = "snake_case")]
pub enum SequenceProblem {
    /// A sequence was skipped.
    Gap {
        /// The sequence expected.
        expected: u64,
        /// The one found.
        found: u64,
    },
    /// A sequence at or before the last one handled.
    Backwards {
        /// The one found.
        found: u64,
        /// The last one handled.
        last: u64,
    },
}
