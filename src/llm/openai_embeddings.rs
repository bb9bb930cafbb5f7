//! Embeddings from an OpenAI-compatible server (`POST {base_url}/embeddings`), the backend
//! that `models.embeddings` names; it implements memory's [`Embedder`] port.
//!
//! The vectors are normalised here, so cosine similarity is a dot product whatever the server
//! returns. A retryable failure (rate limit, server error, timeout, connection) is retried a few
//! times with a growing pause; what still fails is reported to the caller (the semantic index
//! counts it against the fact; a wake falls back to full-text recall).

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};

use super::error::{ConfigError, LlmError};
use super::http::{self, HttpSettings};
use super::openai::bearer;
use super::secret::SecretSource;
use crate::memory::semantic::{EmbedError, Embedder};

/// Calls made for one batch, the first included.
const ATTEMPTS: u32 = 3;
/// Pause after the first failure; doubled after each further one.
const FIRST_PAUSE: Duration = Duration::from_millis(500);

/// Embeddings from an OpenAI-compatible `/embeddings` endpoint.
pub struct OpenAiEmbedder {
    settings: HttpSettings,
    url: String,
    /// `openai/<model>`: recorded with every vector it makes.
    name: String,
    client: reqwest::Client,
    secrets: Arc<dyn SecretSource>,
}

impl std::fmt::Debug for OpenAiEmbedder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpenAiEmbedder")
            .field("name", &self.name)
            .field("url", &self.url)
            .finish_non_exhaustive()
    }
}

impl OpenAiEmbedder {
    /// An embedder with `settings.model`; the key reference is resolved at each call.
    pub fn new(
        settings: HttpSettings,
        secrets: Arc<dyn SecretSource>,
    ) -> Result<Self, ConfigError> {
        if settings.model.trim().is_empty() {
            return Err(ConfigError::Backend {
                backend: settings.name.clone(),
                message: "an embeddings backend needs `model` (the embedding model)".into(),
            });
        }
        let client = http::client(&settings)?;
        Ok(Self {
            url: http::join_url(&settings.base_url, "embeddings"),
            name: format!("openai/{}", settings.model),
            settings,
            client,
            secrets,
        })
    }

    async fn call(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, LlmError> {
        let (headers, secret) = bearer(&self.settings, &*self.secrets)?;
        let body = json!({"model": self.settings.model, "input": texts});
        let answer = http::post_json(
            &self.client,
            &self.settings.name,
            &self.url,
            headers,
            &body,
            self.settings.timeout,
            secret.as_ref(),
        )
        .await?;
        parse(&self.settings.name, &answer, texts.len())
    }
}

/// The vectors of an `/embeddings` answer, in input order (by each item's `index`), normalised.
fn parse(backend: &str, answer: &Value, expected: usize) -> Result<Vec<Vec<f32>>, LlmError> {
    let bad = |what: &str| LlmError::Malformed {
        backend: backend.to_string(),
        message: format!("embeddings: {what}"),
    };
    let data = answer
        .get("data")
        .and_then(Value::as_array)
        .ok_or_else(|| bad("no `data` array"))?;
    let mut vectors: Vec<Option<Vec<f32>>> = vec![None; expected];
    for (position, item) in data.iter().enumerate() {
        let index = item
            .get("index")
            .and_then(Value::as_u64)
            .map_or(position, |i| i as usize);
        let slot = vectors
            .get_mut(index)
            .ok_or_else(|| bad(&format!("index {index} of {expected} inputs")))?;
        let mut v: Vec<f32> = item
            .get("embedding")
            .and_then(Value::as_array)
            .ok_or_else(|| bad("an item without `embedding`"))?
            .iter()
            .map(|x| x.as_f64().map(|x| x as f32))
            .collect::<Option<_>>()
            .ok_or_else(|| bad("an embedding that is not all numbers"))?;
        let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        if v.is_empty() || norm == 0.0 || !norm.is_finite() {
            return Err(bad("an empty or zero vector"));
        }
        v.iter_mut().for_each(|x| *x /= norm);
        *slot = Some(v);
    }
    vectors
        .into_iter()
        .collect::<Option<Vec<_>>>()
        .ok_or_else(|| bad(&format!("{} vectors for {expected} inputs", data.len())))
}

impl Embedder for OpenAiEmbedder {
    fn name(&self) -> &str {
        &self.name
    }

    fn embed<'a>(
        &'a self,
        texts: &'a [String],
    ) -> futures_util::future::BoxFuture<'a, Result<Vec<Vec<f32>>, EmbedError>> {
        Box::pin(async move {
            let mut pause = FIRST_PAUSE;
            let mut attempt = 1;
            loop {
                match self.call(texts).await {
                    Ok(v) => return Ok(v),
                    Err(e) if e.is_retryable() && attempt < ATTEMPTS => {
                        tracing::debug!("embedding attempt {attempt} failed ({e}); retrying");
                        tokio::time::sleep(e.retry_after().unwrap_or(pause).min(pause * 4)).await;
                        pause *= 2;
                        attempt += 1;
                    }
                    Err(e) => return Err(EmbedError(e.to_string())),
                }
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vectors_come_back_in_input_order_and_normalised() {
        let answer = json!({"data": [
            {"index": 1, "embedding": [0.0, 2.0]},
            {"index": 0, "embedding": [3.0, 4.0]},
        ]});
        let v = parse("b", &answer, 2).unwrap();
        assert_eq!(v, vec![vec![0.6, 0.8], vec![0.0, 1.0]]);
    }

    #[test]
    fn short_malformed_or_zero_answers_are_errors() {
        for answer in [
            json!({}),
            json!({"data": [{"index": 0, "embedding": [1.0]}]}),
            json!({"data": [{"index": 0, "embedding": [0.0, 0.0]}, {"index": 1, "embedding": [1.0]}]}),
            json!({"data": [{"index": 0, "embedding": ["x"]}, {"index": 1, "embedding": [1.0]}]}),
            json!({"data": [{"index": 5, "embedding": [1.0]}, {"index": 1, "embedding": [1.0]}]}),
        ] {
            assert!(parse("b", &answer, 2).is_err(), "{answer}");
        }
    }
}
