//! The models layer: chat models behind one trait ([`ChatModel`]), with backends for
//! OpenAI-compatible servers, the Anthropic Messages API, offline scripts (tests) and the
//! offline backend (no model configured, or every backend failed), failover across an ordered
//! list of backends, the configuration that names them, the routers that pick experts for an
//! instruction, and the local sentence-embedding model run in this process ([`local`]).
//!
//! Keys are held by reference (`${VAR}`), looked up at call time through a [`SecretSource`],
//! and never appear in `Debug` output, errors or logs. This layer uses `crate::core`,
//! `crate::aem`, and `crate::memory` for the ports its fact reader ([`facts`]) and embedder
//! ([`embeddings`]) implement.

mod anthropic;
mod config;
pub mod embeddings;
mod error;
pub mod facts;
mod failover;
mod http;
pub mod local;
mod model;
pub mod offline;
mod openai;
mod openai_embeddings;
pub mod router;
mod scripted;
mod secret;
mod types;

pub use anthropic::{ANTHROPIC_VERSION, AnthropicBackend, DEFAULT_MAX_TOKENS};
pub use config::{
    ANTHROPIC_BASE_URL, BackendConfig, BackendKind, ConfigError, DEFAULT_TIMEOUT_SECS,
    MAX_TIMEOUT_SECS, ModelRegistry, ModelsConfig,
};
pub use error::{LlmError, MAX_SERVER_MESSAGE};
pub use failover::{Failover, RetryPolicy, Sleeper, TokioSleeper};
pub use http::HttpSettings;
pub use model::{BoxFuture, ChatModel, Prices};
pub use offline::OfflineBackend;
pub use openai::OpenAiBackend;
pub use scripted::{Script, ScriptCall, ScriptTurn, ScriptedBackend};
pub use secret::{InvalidKeyRef, KeyRef, MapEnv, ProcessEnv, Secret, SecretSource};
pub use types::{ChatRequest, ChatResponse, FinishReason, Message, ToolCall, ToolSpec, Usage};
