//! The benchmarks behind `iron bench …`: one module per bench, each printing lines `bench
//! <name> <value> <unit>` (measured, never asserted), and `stats`, what they share.
//!
//! This module sits above every library layer and below `cli` only: a bench measures a layer
//! through the layer's own API, no layer depends on a bench, and `iron bench` parses its
//! arguments in `cli` and calls the bench here (`tests/spine/layers.rs` checks both).

pub mod catalog;
pub mod cognition;
pub mod console;
pub mod control;
pub mod embed;
pub mod jobs;
pub mod log;
pub mod memory;
pub mod newsroom;
pub mod routing;
pub mod stats;
pub mod tools;
pub mod workspace;

/// Why a bench stopped. Each cause is said as the `iron` command says it.
#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    #[error(transparent)]
    Control(#[from] crate::spine::control::ControlError),
    #[error(transparent)]
    Launch(#[from] crate::launch::LaunchError),
    #[error("{0}")]
    Catalog(#[from] crate::aem::CatalogErrors),
    #[error(transparent)]
    Open(#[from] crate::spine::durable::OpenError),
    #[error(transparent)]
    Log(#[from] log::LogBenchError),
    #[error(transparent)]
    ModelPull(#[from] crate::llm::local::PullError),
    #[error(transparent)]
    ModelLoad(#[from] crate::llm::local::LoadError),
    #[error("{0}")]
    Failed(String),
    #[error("{what}: {source}")]
    Io {
        what: String,
        #[source]
        source: std::io::Error,
    },
}

/// Any error as a bench's failure, said as it is.
fn failed(e: impl std::fmt::Display) -> BenchError {
    BenchError::Failed(e.to_string())
}
