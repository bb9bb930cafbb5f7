//! Iron: an operating layer for teams of AI agents declared as files.
//!
//! The crate is layered (see ARCHITECTURE.md §2); a module may only `use` the layers below it,
//! which `tests/spine/layers.rs` enforces.

pub mod core;
pub mod interfaces;
pub mod protocol;
pub mod spine;

pub mod aem;
pub mod tools;

pub mod msp;

pub mod memory;

pub mod jobs;

pub mod workspace;

pub mod llm;

pub mod cognition;

pub mod view;

pub mod launch;

pub mod bench;

pub mod cli;

// The generated interface code names these paths from the crate root.
use hiroz_msgs::size_estimation;
