//! Memory: `emit()` writes envelopes to the log; the projector derives `projection.db` from it;
//! the background workers (extractor, consolidator, semantic index, knowledge graph, procedural
//! reviewer) derive facts, vectors, entities and lessons from the log; recall and replay read
//! the projection read-only.

pub mod bridge;
pub mod cli;
pub mod consolidator;
pub mod documents;
pub mod emit;
pub mod eval;
pub mod extractor;
pub mod fetch;
pub mod graph;
pub mod node;
pub mod projector;
pub mod recall;
pub mod reviewer;
pub mod semantic;
pub mod text;
pub mod worker;

pub use emit::{EmitError, EmitPolicy, Emitted, Emitter, emit};
pub use projector::{ProjectorDeps, ProjectorError, ProjectorExit};
pub use recall::{Recall, RecallError, RecallFilter, Recalled};
