//! Perception (MSP): what an expert can *see*, streamed into its prompt when it wakes.
//!
//! MCP tools are called out to when the model decides to; an MSP source's current state simply
//! arrives in the prompt. A source is registered under `msp.sources` in a mesh's `AEM.md`
//! (granted to nobody), and an expert opts in by name in its `capabilities.md`.
//!
//! - [`source`]: the source node `/iron/msp/<mesh>/<source>`. It runs the declared command,
//!   keeps the newest state the command printed, serves it as `<node>/state`
//!   (`iron/srv/SourceState`) and lists itself in the KV phone book under `<mesh>.<source>`.
//! - [`reader`]: what an expert does at wake: look each granted source up in the phone book and
//!   read its state (read-only, a bounded wait, no connection held), then compose the
//!   perception block; a source that is not running is said to be so, never guessed.
//! - [`changes`]: what a source writes to the log when its items change (`source_changed`),
//!   which triggers start flows from.
//! - [`feeds`]: the feeds program behind `iron msp feeds` (RSS 2.0 / Atom).
//! - [`health`]: how each input of a source is doing, and what changed since the last report.
//!
//! A source command speaks a one-line protocol: each line it prints on stdout is a JSON object
//! `{"text": "…", "items": N, "error": "…", "records": [{"id": "…", …}], "health": […],
//! "failing": false}` (all but `text` optional) that replaces the source's state; anything
//! else on stdout is logged and ignored. `error` is what a person should know about the last
//! refresh (one line per input that failed); `health` is every input's
//! [`health::FeedHealth`], from which the source node warns once per change, names its inputs'
//! health on the log (`source_health`) and, when `failing` (every input fails), answers readers
//! that it has nothing to show and says so on `/rosout`.

pub mod changes;
pub mod date;
pub mod demand;
pub mod feeds;
pub mod health;
pub mod reader;
pub mod source;

use crate::{core::durable::DurableError, spine::control::ControlError, tools::env::EnvError};

/// The phone-book name of source `name` of `mesh`.
pub fn phone_book_key(mesh: &str, name: &str) -> String {
    format!("{mesh}.{name}")
}

/// Why a perception source could not be run or read.
#[derive(Debug, thiserror::Error)]
pub enum MspError {
    /// `<mesh>/<source>` was not given in that shape.
    #[error("`{0}` is not a source name; expected <mesh>/<source>, e.g. newsroom/official_feeds")]
    BadName(String),
    /// The catalog has no such mesh or source.
    #[error(
        "no source `{name}` in mesh `{mesh}` (register it under `msp.sources` in aem/{mesh}/AEM.md and rebuild the catalog){known}"
    )]
    UnknownSource {
        /// Mesh.
        mesh: String,
        /// Source.
        name: String,
        /// "; known: a, b" or empty.
        known: String,
    },
    /// A declared environment reference cannot be expanded.
    #[error("source {source_name}: env {var}: {error}")]
    Env {
        /// `<mesh>/<source>`.
        source_name: String,
        /// The variable as declared.
        var: String,
        /// Why.
        error: EnvError,
    },
    /// The catalog could not be read.
    #[error("{0}")]
    Catalog(String),
    /// A feed list has a line that is not a feed.
    #[error("{path}:{line}: {why}")]
    FeedList {
        /// The list.
        path: String,
        /// 1-based line.
        line: usize,
        /// What is wrong and what would be right.
        why: String,
    },
    /// A feed list names no feed.
    #[error(
        "{path}: lists no feed; write one RSS or Atom feed per line (a path or an http(s) URL)"
    )]
    EmptyFeedList {
        /// The list.
        path: String,
    },
    /// An `iron msp feeds` command was given no list.
    #[error("no feed list: set FEEDS (in the source's env) or pass --feeds")]
    NoFeedList,
    /// A file could not be read.
    #[error("{what}: {source}")]
    Io {
        /// What was being read.
        what: String,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The control plane refused.
    #[error(transparent)]
    Control(#[from] ControlError),
    /// The phone book could not be reached.
    #[error("phone book: {0}")]
    Durable(#[from] DurableError),
}

/// Splits `<mesh>/<source>`.
pub fn split_name(name: &str) -> Result<(&str, &str), MspError> {
    match name.split_once('/') {
        Some((m, s)) if !m.is_empty() && !s.is_empty() && !s.contains('/') => Ok((m, s)),
        _ => Err(MspError::BadName(name.to_string())),
    }
}
