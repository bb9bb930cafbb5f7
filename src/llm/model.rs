//! The one trait every chat backend implements, and the prices used to estimate cost.

use std::future::Future;
use std::pin::Pin;

use serde::{Deserialize, Serialize};

use super::error::LlmError;
use super::types::{ChatRequest, ChatResponse, Usage};

/// A boxed, sendable future: what the object-safe traits of this layer return.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// A chat model with tool calling. Implementations: [`super::OpenAiBackend`],
/// [`super::AnthropicBackend`], [`super::ScriptedBackend`], and [`super::Failover`] over any
/// of them.
pub trait ChatModel: Send + Sync {
    /// The configured name (a backend name, or a logical name for a failover list).
    fn name(&self) -> &str;

    /// Sends one request and returns the model's answer.
    fn chat<'a>(
        &'a self,
        request: &'a ChatRequest,
    ) -> BoxFuture<'a, Result<ChatResponse, LlmError>>;
}

/// Prices of one backend's model, in US dollars per million tokens.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Prices {
    /// Per million input (prompt) tokens.
    pub input_per_mtok: f64,
    /// Per million output (completion) tokens.
    pub output_per_mtok: f64,
}

impl Prices {
    /// Estimated cost of `usage`, in US dollars.
    pub fn cost(&self, usage: &Usage) -> f64 {
        (usage.input_tokens as f64 * self.input_per_mtok
            + usage.output_tokens as f64 * self.output_per_mtok)
            / 1_000_000.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cost_is_per_million_tokens() {
        let p = Prices {
            input_per_mtok: 2.0,
            output_per_mtok: 10.0,
        };
        let u = Usage {
            input_tokens: 500_000,
            output_tokens: 100_000,
        };
        assert!((p.cost(&u) - 2.0).abs() < 1e-9);
    }
}
