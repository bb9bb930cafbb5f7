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
