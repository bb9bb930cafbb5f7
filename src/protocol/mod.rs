//! The typed protocol between Iron's processes: what a goal's context carries
//! ([`TaskContext`]), how a task ended ([`TaskOutcome`]), and the shape of each event's payload
//! read back from the log ([`Payload`], through [`Envelope::payload`]).
//!
//! Both ends of every seam go through these types, so a field renamed on one side is a
//! compile error on the other, and a message of the wrong shape is refused with a
//! [`ProtocolError`] that names what was wrong, never read as empty. What goes on the wire is
//! unchanged: each type writes exactly the JSON the processes exchanged before it existed
//! (`tests/spine/protocol_golden.rs` reads recorded goals and events and writes them back
//! byte-equal).
//!
//! [`Envelope::payload`]: crate::core::envelope::Envelope::payload

pub mod context;
mod error;
pub mod outcome;
pub mod payload;
pub mod report;
pub mod tool;

pub use context::{Fork, TaskContext};
pub use error::ProtocolError;
pub use outcome::TaskOutcome;
pub use payload::Payload;
pub use report::TaskReport;

/// The fence that opens a structured task's data in an instruction: an `iron-task` block of
/// JSON, which the newsroom's flow writes and the offline backend performs
/// (`crate::llm::offline`). What comes before it is the instruction's prose.
pub const TASK_FENCE: &str = "```iron-task";

/// The prose of `instruction`: what comes before its first task block (all of it without one).
/// What is searched for and indexed of an instruction: a block can hold a whole window of
/// thousands of items, which would make both slow and no better.
pub fn instruction_prose(instruction: &str) -> &str {
    instruction.split(TASK_FENCE).next().unwrap_or(instruction)
}
