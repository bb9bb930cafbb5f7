//! Model configuration: named backends, logical names (`fast`, `standard`, `strong`,
//! `scripted`) mapped to ordered backend lists, and the retry policy. It is the `models:`
//! block of `iron.yaml`; unknown keys are errors and keys are references only.
//!
//! ```yaml
//! backends:
//!   local:
//!     kind: openai                       # openai | anthropic | scripted
//!     base_url: http://127.0.0.1:11434/v1
//!     model: qwen3:4b
//!     timeout_secs: 120
//!     prices: {input_per_mtok: 0, output_per_mtok: 0}
//!   claude:
//!     kind: anthropic
//!     base_url: https://api.anthropic.com
//!     model: claude-sonnet-4-5
//!     api_key: ${ANTHROPIC_API_KEY}
//!     prices: {input_per_mtok: 3, output_per_mtok: 15}
//!   demo:
//!     kind: scripted
//!     script: config/scripts/demo.yaml   # relative to the configuration's directory
//! logical:
//!   fast: [local]
//!   strong: [claude, local]              # tried in this order
//!   scripted: [demo]
//! retry: {max_attempts: 3, initial_backoff_ms: 500, max_backoff_ms: 8000, jitter: true}
//! router: fast                           # logical model of the router; absent: offline router
//! embeddings: local_embed                # an openai backend whose model embeds (`/embeddings`)
//!                                        # absent: the offline hashing embedding
//! ```
//!
//! An expert's model comes from the catalog (`defaults.model` / `defaults.models` in
//! `AEM.md`) and is looked up in `logical`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use serde::Deserialize;

use super::anthropic::AnthropicBackend;
pub use super::error::ConfigError;
use super::failover::{Failover, RetryPolicy, Sleeper, TokioSleeper};
use super::http::HttpSettings;
use super::model::{ChatModel, Prices};
use super::openai::OpenAiBackend;
use super::openai_embeddings::OpenAiEmbedder;
use super::scripted::ScriptedBackend;
use super::secret::{KeyRef, ProcessEnv, SecretSource};
use crate::aem::Catalog;

/// Longest allowed request timeout, in seconds.
pub const MAX_TIMEOUT_SECS: u64 = 3_600;
/// Request timeout when a backend gives none, in seconds.
pub const DEFAULT_TIMEOUT_SECS: u64 = 120;
/// Anthropic's API host, the default `base_url` of an `anthropic` backend.
pub const ANTHROPIC_BASE_URL: &str = "https://api.anthropic.com";

/// The `models:` block.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelsConfig {
    /// Backends by name.
    pub backends: BTreeMap<String, BackendConfig>,
    /// Logical model names to backend names, in failover order.
    pub logical: BTreeMap<String, Vec<String>>,
    /// Retries per backend.
    #[serde(default)]
    pub retry: RetryPolicy,
    /// Logical model of the router; `None` routes offline.
    #[serde(default)]
    pub router: Option<String>,
    /// The `openai` backend whose `model` embeds memory (its `/embeddings` endpoint); `None`:
    /// the offline hashing embedding.
    #[serde(default)]
    pub embeddings: Option<String>,
}

/// Which protocol a backend speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum BackendKind {
    /// OpenAI-compatible chat completions.
    Openai,
    /// Anthropic Messages API.
    Anthropic,
    /// Replays a script file, offline.
    Scripted,
}

/// One backend.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BackendConfig {
    /// Protocol.
    pub kind: BackendKind,
    /// Base URL (openai: required, up to `/v1`; anthropic: defaults to the public API).
    #[serde(default)]
    pub base_url: Option<String>,
    /// Model name sent to the server (openai, anthropic).
    #[serde(default)]
    pub model: Option<String>,
    /// Key reference, `${VAR}`; never the key itself.
    #[serde(default)]
    pub api_key: Option<KeyRef>,
    /// Bound on each request, in seconds (1 to 3600).
    #[serde(default = "default_timeout")]
    pub timeout_secs: u64,
    /// Output-token cap for each call.
    #[serde(default)]
    pub max_tokens: Option<u32>,
    /// Prices for cost estimates; unpriced calls count as zero cost.
    #[serde(default)]
    pub prices: Option<Prices>,
    /// Script file (scripted).
    #[serde(default)]
    pub script: Option<PathBuf>,
}

impl BackendConfig {
    /// What a networked backend of this configuration, named `name`, is built from.
    fn http_settings(&self, name: &str) -> HttpSettings {
        HttpSettings {
            name: name.to_string(),
            base_url: self
                .base_url
                .clone()
                .unwrap_or_else(|| ANTHROPIC_BASE_URL.to_string()),
            model: self.model.clone().unwrap_or_default(),
            api_key: self.api_key.clone(),
            timeout: Duration::from_secs(self.timeout_secs),
            max_tokens: self.max_tokens,
            prices: self.prices,
        }
    }
}

fn default_timeout() -> u64 {
    DEFAULT_TIMEOUT_SECS
}

impl ModelsConfig {
    /// Parses and validates the `models:` block from YAML.
    pub fn from_yaml(text: &str) -> Result<Self, ConfigError> {
        let config: Self =
            serde_norway::from_str(text).map_err(|e| ConfigError::Yaml(e.to_string()))?;
        config.validate()?;
        Ok(config)
    }

    /// Checks every backend against its kind and every logical name's backends.
    pub fn validate(&self) -> Result<(), ConfigError> {
        for (name, b) in &self.backends {
            b.validate(name)?;
        }
        let known = || self.backends.keys().cloned().collect::<Vec<_>>().join(", ");
        for (logical, list) in &self.logical {
            if list.is_empty() {
                return Err(ConfigError::UnknownBackend {
                    logical: logical.clone(),
                    backend: String::new(),
                    known: known(),
                });
            }
            for backend in list {
                if !self.backends.contains_key(backend) {
                    return Err(ConfigError::UnknownBackend {
                        logical: logical.clone(),
                        backend: backend.clone(),
                        known: known(),
                    });
                }
            }
        }
        if let Some(router) = &self.router {
            self.require_logical(router)?;
        }
        if let Some(name) = &self.embeddings {
            let message = match self.backends.get(name) {
                None => Some(format!(
                    "embeddings names no configured backend; configured: {}",
                    known()
                )),
                Some(b) if b.kind != BackendKind::Openai => Some(
                    "embeddings needs an `openai` backend (an OpenAI-compatible /embeddings)"
                        .to_string(),
                ),
                Some(_) => None,
            };
            if let Some(message) = message {
                return Err(ConfigError::Backend {
                    backend: name.clone(),
                    message,
                });
            }
        }
        if self.retry.max_attempts == 0 {
            return Err(ConfigError::Yaml(
                "retry.max_attempts must be at least 1 (the first call counts)".into(),
            ));
        }
        Ok(())
    }

    /// Fails unless every spawnable expert's model is a defined logical name.
    pub fn check_catalog(&self, catalog: &Catalog) -> Result<(), ConfigError> {
        let missing: Vec<String> = catalog
            .spawnable()
            .filter(|e| !self.logical.contains_key(&e.model))
            .map(|e| format!("{} uses {:?}", e.id, e.model))
            .collect();
        if missing.is_empty() {
            Ok(())
        } else {
            Err(ConfigError::CatalogModels { missing })
        }
    }

    fn require_logical(&self, name: &str) -> Result<&[String], ConfigError> {
        self.logical
            .get(name)
            .map(Vec::as_slice)
            .ok_or_else(|| ConfigError::UnknownModel {
                name: name.to_string(),
                known: self.logical.keys().cloned().collect::<Vec<_>>().join(", "),
            })
    }
}

impl BackendConfig {
    fn validate(&self, name: &str) -> Result<(), ConfigError> {
        let fail = |message: String| {
            Err(ConfigError::Backend {
                backend: name.to_string(),
                message,
            })
        };
        if self.timeout_secs == 0 || self.timeout_secs > MAX_TIMEOUT_SECS {
            return fail(format!(
                "timeout_secs is {}; give 1 to {MAX_TIMEOUT_SECS}",
                self.timeout_secs
            ));
        }
        match self.kind {
            BackendKind::Openai | BackendKind::Anthropic => {
                if self.kind == BackendKind::Openai && self.base_url.is_none() {
                    return fail(
                        "kind openai needs base_url, e.g. http://127.0.0.1:11434/v1".into(),
                    );
                }
                if let Some(url) = &self.base_url
                    && !(url.starts_with("http://") || url.starts_with("https://"))
                {
                    return fail(format!(
                        "base_url {url:?} must start with http:// or https://"
                    ));
                }
                if self.model.as_deref().is_none_or(|m| m.trim().is_empty()) {
                    return fail("needs model, the name the server knows the model by".into());
                }
                if self.script.is_some() {
                    return fail("script is only for kind scripted".into());
                }
            }
            BackendKind::Scripted => {
                if self.script.is_none() {
                    return fail("kind scripted needs script, the path of a script file".into());
                }
                if self.base_url.is_some() || self.api_key.is_some() {
                    return fail("kind scripted takes no base_url or api_key".into());
                }
            }
        }
        Ok(())
    }
}

/// Builds models from a [`ModelsConfig`] with the secrets, sleeper and base directory it
/// needs (passed in, so tests need no process-wide state).
pub struct ModelRegistry {
    config: ModelsConfig,
    secrets: Arc<dyn SecretSource>,
    sleeper: Arc<dyn Sleeper>,
    base_dir: PathBuf,
}

impl std::fmt::Debug for ModelRegistry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ModelRegistry")
            .field("config", &self.config)
            .field("base_dir", &self.base_dir)
            .finish_non_exhaustive()
    }
}

impl ModelRegistry {
    /// Keys from the process environment, real sleeps, script paths relative to `base_dir`.
    pub fn new(config: ModelsConfig, base_dir: &Path) -> Self {
        Self::with(
            config,
            base_dir,
            Arc::new(ProcessEnv),
            Arc::new(TokioSleeper),
        )
    }

    /// With explicit secrets and sleeper.
    pub fn with(
        config: ModelsConfig,
        base_dir: &Path,
        secrets: Arc<dyn SecretSource>,
        sleeper: Arc<dyn Sleeper>,
    ) -> Self {
        Self {
            config,
            secrets,
            sleeper,
            base_dir: base_dir.to_path_buf(),
        }
    }

    /// The configuration.
    pub fn config(&self) -> &ModelsConfig {
        &self.config
    }

    /// The model for a logical name: its backends behind a [`Failover`].
    pub fn model(&self, logical: &str) -> Result<Arc<dyn ChatModel>, ConfigError> {
        let names = self.config.require_logical(logical)?;
        let backends = names
            .iter()
            .map(|n| self.backend(n))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Arc::new(Failover::new(
            logical,
            backends,
            self.config.retry,
            self.sleeper.clone(),
        )))
    }

    /// The embedder of memory, if `embeddings` names one (validated: an `openai` backend).
    pub fn embedder(&self) -> Result<Option<Arc<OpenAiEmbedder>>, ConfigError> {
        let Some(name) = &self.config.embeddings else {
            return Ok(None);
        };
        let b = self
            .config
            .backends
            .get(name)
            .ok_or_else(|| ConfigError::Backend {
                backend: name.clone(),
                message: "not configured".into(),
            })?;
        OpenAiEmbedder::new(b.http_settings(name), self.secrets.clone()).map(|e| Some(Arc::new(e)))
    }

    /// The router's model, if one is configured.
    pub fn router_model(&self) -> Result<Option<Arc<dyn ChatModel>>, ConfigError> {
        self.config
            .router
            .as_deref()
            .map(|r| self.model(r))
            .transpose()
    }

    /// One backend by name.
    pub fn backend(&self, name: &str) -> Result<Arc<dyn ChatModel>, ConfigError> {
        let b = self
            .config
            .backends
            .get(name)
            .ok_or_else(|| ConfigError::Backend {
                backend: name.to_string(),
                message: "not configured".into(),
            })?;
        let http = || b.http_settings(name);
        Ok(match b.kind {
            BackendKind::Openai => Arc::new(OpenAiBackend::new(http(), self.secrets.clone())?),
            BackendKind::Anthropic => {
                Arc::new(AnthropicBackend::new(http(), self.secrets.clone())?)
            }
            BackendKind::Scripted => {
                let path = self
                    .base_dir
                    .join(b.script.as_deref().unwrap_or(Path::new("")));
                Arc::new(ScriptedBackend::from_file(name, &path)?.with_prices(b.prices))
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = r#"
backends:
  local: {kind: openai, base_url: "http://127.0.0.1:11434/v1", model: m}
  claude: {kind: anthropic, model: c, api_key: "${ANTHROPIC_API_KEY}", prices: {input_per_mtok: 3, output_per_mtok: 15}}
  demo: {kind: scripted, script: demo.yaml}
logical:
  fast: [local]
  strong: [claude, local]
  scripted: [demo]
router: fast
"#;

    #[test]
    fn a_full_configuration_reads() {
        let c = ModelsConfig::from_yaml(GOOD).unwrap();
        assert_eq!(c.logical["strong"], ["claude", "local"]);
        assert_eq!(c.backends["local"].timeout_secs, DEFAULT_TIMEOUT_SECS);
        assert_eq!(c.retry, RetryPolicy::default());
    }

    #[test]
    fn unknown_keys_and_inline_keys_are_refused() {
        let typo = GOOD.replace("model: m}", "modle: m}");
        assert!(
            ModelsConfig::from_yaml(&typo)
                .unwrap_err()
                .to_string()
                .contains("modle")
        );
        let inline = GOOD.replace("${ANTHROPIC_API_KEY}", "sk-ant-abcdef0123456789");
        let err = ModelsConfig::from_yaml(&inline).unwrap_err().to_string();
        assert!(err.contains("${VAR}"), "{err}");
        assert!(!err.contains("abcdef0123456789"), "{err}");
    }

    #[test]
    fn fields_must_fit_the_kind_and_names_must_resolve() {
        let no_url = GOOD.replace("base_url: \"http://127.0.0.1:11434/v1\", ", "");
        assert!(
            ModelsConfig::from_yaml(&no_url)
                .unwrap_err()
                .to_string()
                .contains("base_url")
        );
        let bad_list = GOOD.replace("[claude, local]", "[claude, nope]");
        let err = ModelsConfig::from_yaml(&bad_list).unwrap_err().to_string();
        assert!(
            err.contains("nope") && err.contains("claude, demo, local"),
            "{err}"
        );
        let bad_router = GOOD.replace("router: fast", "router: tiny");
        assert!(
            ModelsConfig::from_yaml(&bad_router)
                .unwrap_err()
                .to_string()
                .contains("tiny")
        );
        let zero = GOOD.replace("model: m}", "model: m, timeout_secs: 0}");
        assert!(
            ModelsConfig::from_yaml(&zero)
                .unwrap_err()
                .to_string()
                .contains("timeout_secs")
        );
    }

    #[test]
    fn unknown_logical_names_list_the_known_ones() {
        let c = ModelsConfig::from_yaml(GOOD).unwrap();
        let reg = ModelRegistry::new(c, Path::new("."));
        let err = reg.model("huge").err().unwrap().to_string();
        assert!(err.contains("fast, scripted, strong"), "{err}");
        assert!(reg.model("strong").is_ok());
    }
}
