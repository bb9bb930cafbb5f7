//! The local sentence embedder: all-MiniLM-L6-v2 run in this process on the CPU with candle.
//!
//! A text is tokenized (WordPiece, lowercased, cut at [`MAX_TOKENS`]), run through the 6-layer
//! BERT, and its vector is the mean of the token outputs over the attention mask (padding does
//! not count), scaled to unit length, so cosine similarity is a dot product. Distinct texts
//! run [`BATCH`] at a time, shortest first, each batch padded to its longest text.
//!
//! Loading reads each file once, checks it against its pin and builds the model from those same
//! bytes; the weights are then copied into the model's own tensors (candle's CPU tensors own
//! their memory), and the file's bytes are freed. One [`LocalEmbedder`] is cheap to clone: the
//! clones share one copy of the weights.

use std::path::Path;
use std::sync::Arc;

use candle_core::{DType, Device, Tensor};
use candle_nn::VarBuilder;
use candle_transformers::models::bert::{BertModel, Config};
use futures_util::future::BoxFuture;
use tokenizers::{PaddingParams, PaddingStrategy, Tokenizer, TruncationParams};

use super::catalog::MINILM_L6_V2;
use super::error::{EmbeddingError, LoadError};
use super::store;
use crate::memory::semantic::{EmbedError, Embedder};

/// Longest input in tokens; the rest of a longer text is not read (the length the model was
/// trained with for sentence embeddings).
pub const MAX_TOKENS: usize = 256;
/// Texts run through the model at once (longer calls are split).
pub const BATCH: usize = 32;
/// Length of the vectors.
pub const DIMS: usize = MINILM_L6_V2.dims;

/// all-MiniLM-L6-v2, loaded: call [`LocalEmbedder::embed`] from synchronous code, or use it as
/// memory's [`Embedder`] (it runs on a blocking thread there).
#[derive(Clone)]
pub struct LocalEmbedder {
    inner: Arc<Loaded>,
}

struct Loaded {
    model: BertModel,
    tokenizer: Tokenizer,
    /// The name recorded with its vectors (its catalog entry's `embedder_name`).
    name: &'static str,
}

impl std::fmt::Debug for LocalEmbedder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LocalEmbedder")
            .field("name", &self.inner.name)
            .finish_non_exhaustive()
    }
}

impl LocalEmbedder {
    /// Loads all-MiniLM-L6-v2 from `models_dir` (its files in `<models_dir>/all-MiniLM-L6-v2/`),
    /// refusing any file that is missing or not the pinned one. Blocks while it reads and
    /// digests 87 MiB (a quarter of a second on a warm page cache); the process then holds
    /// its own copy of the weights (about 90 MiB of private memory), whichever way they were
    /// read: candle's CPU tensors own their bytes.
    pub fn load(models_dir: &Path) -> Result<Self, LoadError> {
        let spec = &MINILM_L6_V2;
        let dir = store::model_dir(models_dir, spec);
        let read = |name: &str| {
            let pinned = spec.file(name).expect("a file of the model's own list");
            let path = dir.join(name);
            store::read_verified(&path, pinned).map(|bytes| (path, bytes))
        };
        let (config_path, config) = read("config.json")?;
        let config: Config =
            serde_json::from_slice(&config).map_err(|source| LoadError::Config {
                path: config_path,
                source,
            })?;
        let (tokenizer_path, tokenizer) = read("tokenizer.json")?;
        let tokenizer = configure(Tokenizer::from_bytes(&tokenizer)).map_err(|source| {
            LoadError::Tokenizer {
                path: tokenizer_path,
                source,
            }
        })?;
        let (weights_path, weights) = read("model.safetensors")?;
        let model = VarBuilder::from_slice_safetensors(&weights, DType::F32, &Device::Cpu)
            .and_then(|vb| BertModel::load(vb, &config))
            .map_err(|source| LoadError::Model {
                path: weights_path,
                source,
            })?;
        Ok(Self {
            inner: Arc::new(Loaded {
                model,
                tokenizer,
                name: spec.embedder_name,
            }),
        })
    }

    /// The name recorded with its vectors: `local/all-MiniLM-L6-v2`.
    pub fn name(&self) -> &'static str {
        self.inner.name
    }

    /// One vector per text, in order: each [`DIMS`] long and of unit length (an empty text has
    /// a vector too: the model's reading of no words). Blocks while the model runs (tens of
    /// milliseconds per batch); from async code use the [`Embedder`] implementation.
    ///
    /// Each distinct text runs once (feeds repeat headlines), in order of length, so that a
    /// batch pads its texts little: a vector does not depend on its batch.
    pub fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbeddingError> {
        fn key<'t>(t: &&'t str) -> (usize, &'t str) {
            (t.len(), t)
        }
        let mut distinct = texts.to_vec();
        distinct.sort_unstable_by_key(key);
        distinct.dedup();
        let mut vectors = Vec::with_capacity(distinct.len());
        for batch in distinct.chunks(BATCH) {
            vectors.extend(self.embed_batch(batch)?);
        }
        let vector = |t: &&str| {
            let i = distinct.binary_search_by_key(&key(t), key);
            vectors[i.expect("each text is one of the distinct ones")].clone()
        };
        Ok(texts.iter().map(vector).collect())
    }

    fn embed_batch(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbeddingError> {
        let Loaded {
            model, tokenizer, ..
        } = &*self.inner;
        let encodings = tokenizer
            .encode_batch(texts.to_vec(), true)
            .map_err(|source| EmbeddingError::Tokenize { source })?;
        let inference = |source| EmbeddingError::Inference { source };
        let rows = encodings.len();
        let width = encodings.first().map_or(0, |e| e.get_ids().len());
        let column = |get: fn(&tokenizers::Encoding) -> &[u32]| -> Vec<u32> {
            encodings
                .iter()
                .flat_map(|e| get(e).iter().copied())
                .collect()
        };
        let tensor = |values: Vec<u32>| {
            Tensor::from_vec(values, (rows, width), &Device::Cpu).map_err(inference)
        };
        let ids = tensor(column(tokenizers::Encoding::get_ids))?;
        let types = tensor(column(tokenizers::Encoding::get_type_ids))?;
        let mask = tensor(column(tokenizers::Encoding::get_attention_mask))?;
        let hidden = model
            .forward(&ids, &types, Some(&mask))
            .map_err(inference)?;
        mean_pool_normalised(&hidden, &mask)
            .and_then(|t| t.to_vec2::<f32>())
            .map_err(inference)
    }
}

/// The tokenizer as sentence embedding uses it: cut at [`MAX_TOKENS`], padded to the longest
/// text of its batch (the shipped file pads everything to 128, which wastes the model's time on
/// short texts and would cut long ones early).
fn configure(tokenizer: tokenizers::Result<Tokenizer>) -> tokenizers::Result<Tokenizer> {
    let mut tokenizer = tokenizer?;
    let pad = tokenizer.get_padding().cloned().unwrap_or_default();
    tokenizer.with_padding(Some(PaddingParams {
        strategy: PaddingStrategy::BatchLongest,
        ..pad
    }));
    tokenizer.with_truncation(Some(TruncationParams {
        max_length: MAX_TOKENS,
        ..TruncationParams::default()
    }))?;
    Ok(tokenizer)
}

/// The mean of `hidden` (`[batch, tokens, dims]`) over the tokens `mask` (`[batch, tokens]`,
/// 1 for a token, 0 for padding) keeps, each row then scaled to unit length.
fn mean_pool_normalised(hidden: &Tensor, mask: &Tensor) -> candle_core::Result<Tensor> {
    let mask = mask.to_dtype(hidden.dtype())?.unsqueeze(2)?;
    let summed = hidden.broadcast_mul(&mask)?.sum(1)?;
    // A row of only padding cannot come from the tokenizer (every text has its [CLS] and
    // [SEP]); the floor keeps the division defined anyway.
    let counts = mask.sum(1)?.clamp(1e-9f32, f32::MAX)?;
    let mean = summed.broadcast_div(&counts)?;
    let norms = mean
        .sqr()?
        .sum_keepdim(1)?
        .sqrt()?
        .clamp(1e-12f32, f32::MAX)?;
    mean.broadcast_div(&norms)
}

impl Embedder for LocalEmbedder {
    fn name(&self) -> &str {
        self.inner.name
    }

    fn embed<'a>(
        &'a self,
        texts: &'a [String],
    ) -> BoxFuture<'a, Result<Vec<Vec<f32>>, EmbedError>> {
        let this = self.clone();
        let texts = texts.to_vec();
        Box::pin(async move {
            tokio::task::spawn_blocking(move || {
                let texts: Vec<&str> = texts.iter().map(String::as_str).collect();
                LocalEmbedder::embed(&this, &texts)
            })
            .await
            .map_err(|source| EmbeddingError::Thread { source })
            .and_then(|r| r)
            .map_err(|e| EmbedError(e.to_string()))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pooling_averages_only_unmasked_tokens_and_gives_unit_vectors() {
        // Two texts of two dims: the first has tokens [3,4] and [3,4] and one padding token
        // of huge values; the second one token [0,2].
        let hidden = Tensor::new(
            &[
                [[3f32, 4.], [3., 4.], [1000., -1000.]],
                [[0., 2.], [9., 9.], [9., 9.]],
            ],
            &Device::Cpu,
        )
        .unwrap();
        let mask = Tensor::new(&[[1u32, 1, 0], [1, 0, 0]], &Device::Cpu).unwrap();
        let pooled = mean_pool_normalised(&hidden, &mask)
            .unwrap()
            .to_vec2::<f32>()
            .unwrap();
        let close = |a: &[f32], b: &[f32]| a.iter().zip(b).all(|(x, y)| (x - y).abs() < 1e-6);
        assert!(close(&pooled[0], &[0.6, 0.8]), "{pooled:?}");
        assert!(close(&pooled[1], &[0.0, 1.0]), "{pooled:?}");
    }

    #[test]
    fn a_zero_mean_stays_finite() {
        let hidden = Tensor::zeros((1, 2, 3), DType::F32, &Device::Cpu).unwrap();
        let mask = Tensor::new(&[[1u32, 1]], &Device::Cpu).unwrap();
        let pooled = mean_pool_normalised(&hidden, &mask)
            .unwrap()
            .to_vec2::<f32>()
            .unwrap();
        assert!(pooled[0].iter().all(|x| x.is_finite()));
    }
}
