//! Which embedder memory uses: the OpenAI-compatible backend that `models.embeddings` names
//! ([`OpenAiEmbedder`]); without that key, the local model when it was pulled (loaded in the
//! process, or asked of the model service); else the offline [`HashingEmbedder`]. See
//! [`from_config`] and [`from_config_or_service`].

use std::sync::Arc;
use std::time::Duration;

use super::config::{ModelRegistry, ModelsConfig};
use super::local::{self, LocalEmbedder, ServiceEmbedder};
pub use super::openai_embeddings::OpenAiEmbedder;
use crate::core::config::Config;
use crate::memory::semantic::{EmbedError, Embedder, HashingEmbedder};

/// Memory's embedder for `config` in a process that reads meanings itself (the semantic memory
/// worker, the CLI): the backend `models.embeddings` names; else the local model when it was
/// pulled, loaded here (blocking while it reads and checks its 87 MiB); else the offline hashing
/// embedding.
pub fn from_config(config: &Config) -> Result<Arc<dyn Embedder>, EmbedError> {
    if let Some(configured) = configured(config)? {
        return Ok(configured);
    }
    let Some(dir) = pulled_model_dir() else {
        return Ok(Arc::new(HashingEmbedder));
    };
    match LocalEmbedder::load(&dir) {
        Ok(model) => Ok(Arc::new(model)),
        Err(e) => {
            tracing::warn!("embedding offline without meanings: {e}");
            Ok(Arc::new(HashingEmbedder))
        }
    }
}

/// [`from_config`] for a process that asks the model service rather than load the model (an
/// expert, the engine): the configured backend; else, when the local model was pulled, the
/// service on `node` (its vectors are the local model's, so they match the memory worker's);
/// else the hashing embedding.
pub fn from_config_or_service(
    config: &Config,
    node: &hiroz::node::ZNode,
) -> Result<Arc<dyn Embedder>, EmbedError> {
    if let Some(configured) = configured(config)? {
        return Ok(configured);
    }
    match pulled_model_dir() {
        Some(_) => Ok(Arc::new(ServiceEmbedder::new(node, SERVICE_WAIT)?)),
        None => Ok(Arc::new(HashingEmbedder)),
    }
}

/// The longest one request to the model service may take (a judge's batch of reports included).
const SERVICE_WAIT: Duration = Duration::from_secs(30);

/// The models directory when the local model looks pulled into it.
fn pulled_model_dir() -> Option<std::path::PathBuf> {
    local::models_dir_from_env(None)
        .ok()
        .filter(|dir| local::looks_pulled(dir, &local::MINILM_L6_V2))
}

/// The embedder `models.embeddings` names, if it names one.
fn configured(config: &Config) -> Result<Option<Arc<dyn Embedder>>, EmbedError> {
    let Some(raw) = &config.models else {
        return Ok(None);
    };
    let models: ModelsConfig =
        serde_norway::from_value(raw.clone()).map_err(|e| EmbedError(format!("models: {e}")))?;
    models
        .validate()
        .map_err(|e| EmbedError(format!("models: {e}")))?;
    let base = std::env::current_dir().map_err(|e| EmbedError(e.to_string()))?;
    match ModelRegistry::new(models, &base).embedder() {
        Ok(found) => Ok(found.map(|e| e as Arc<dyn Embedder>)),
        Err(e) => Err(EmbedError(format!("models: {e}"))),
    }
}
