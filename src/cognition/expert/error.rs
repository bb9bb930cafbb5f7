//! Why an expert process cannot take up its work: its model, its scratch workspace, or the
//! fork a goal asked for.

use std::path::PathBuf;

use crate::llm::ConfigError;
use crate::workspace::scratch::ScratchError;

/// Why an expert cannot start (a process) or start a task (a fork).
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// The `models:` block does not read.
    #[error("models: {0}")]
    Models(#[source] serde_norway::Error),
    /// The model named is not one the configuration can make.
    #[error("model {name:?}: {source}")]
    Model {
        /// The logical name.
        name: String,
        /// Why.
        #[source]
        source: ConfigError,
    },
    /// A model was named, and no `models:` block is configured.
    #[error(
        "no models are configured (no `models:` block), so there is no model {0:?}: every task \
         runs on the offline backend"
    )]
    NoModels(String),
    /// A fork at call 0, or without the conversation before its call.
    #[error("a fork needs the conversation before a model call (at 1 or later)")]
    ForkTooEarly,
    /// A message of the fork's conversation is not a message.
    #[error("a message of the fork's conversation: {0}")]
    ForkMessage(#[source] serde_json::Error),
    /// The mesh's workspace target is not there.
    #[error("workspace target {}: {source}", .path.display())]
    Target {
        /// The target as the mesh names it, against the project.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The scratch could not be made.
    #[error("making the scratch of {expert}: {source}")]
    Scratch {
        /// The expert.
        expert: String,
        /// Why.
        #[source]
        source: ScratchError,
    },
    /// The scratch's owner could not be written beside it.
    #[error("recording the owner of the scratch: {0}")]
    Owner(#[source] std::io::Error),
}
