//! Memory: `emit()` writes envelopes to the log; the projector derives `projection.db` from it;
//! recall and replay read that projection read-only.

pub mod bench;
pub mod cli;
pub mod emit;
pub mod node;
pub mod projector;
pub mod recall;

pub use emit::{EmitError, EmitPolicy, Emitted, Emitter, emit};
pub use projector::{ProjectorDeps, ProjectorError, ProjectorExit};
pub use recall::{Recall, RecallError, RecallFilter, Recalled};
