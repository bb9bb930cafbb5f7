//! Why a message crossing a process boundary was refused.

use crate::core::event_kind::EventKind;

/// A message of the wrong shape.
#[derive(Debug, thiserror::Error)]
pub enum ProtocolError {
    /// A goal's context is not a JSON object of the known fields.
    #[error("the goal's context is malformed: {0}")]
    Context(String),
    /// An event was read as a payload of another kind.
    #[error("event {event} is `{found}`, not `{expected}`")]
    WrongKind {
        /// The event's id.
        event: String,
        /// The kind the reader expected.
        expected: EventKind,
        /// The kind it is.
        found: EventKind,
    },
    /// An event's payload does not have its kind's shape.
    #[error("event {event} (`{kind}`) has a malformed payload: {source}")]
    Payload {
        /// The event's id.
        event: String,
        /// Its kind.
        kind: EventKind,
        /// What serde found.
        #[source]
        source: serde_json::Error,
    },
    /// An expert's result does not carry its report.
    #[error("the expert's report is malformed: {0}")]
    Report(#[source] serde_json::Error),
    /// A task outcome that is none of the known ones.
    #[error("unknown task outcome {0:?}")]
    Outcome(String),
}
