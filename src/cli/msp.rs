//! `iron msp`: perception sources. `feeds` is a source program (what `msp.sources.*.command`
//! runs for the newsroom); `read` shows what an expert holding a source would see now.

use std::{io::Write, path::PathBuf, time::Duration};

use clap::Subcommand;

use super::CliError;
use crate::{
    msp::{
        feeds,
        reader::{self, Outcome},
        split_name,
    },
    spine::durable::AnyLog,
};

#[derive(Debug, Subcommand)]
pub enum MspCommand {
    /// A feeds source: reads RSS 2.0 / Atom feeds and prints their newest items as state lines.
    ///
    /// Prints one JSON object per refresh on stdout (`{"text", "items", "error", "records",
    /// "health", "failing"}`), the line protocol a source node reads from the command it runs.
    /// Feeds are listed one per line in the file named by --feeds (or $FEEDS): local paths
    /// (relative to the list) or http(s) URLs, optionally followed by `owner=<token>` (feeds
    /// with one owner count as one source when claims are cross-checked); `#` starts a comment.
    /// A line that is not a feed is an error naming the list's file and line. Every feed's
    /// health (read, truncated at --max-bytes, or failing with why; last success and failure)
    /// is in `health`; each feed not read whole is a line of `error`; `failing` is true when
    /// every feed fails. Each record is one item: id, title, summary, url, published (null:
    /// undated), outlet, owner, feed.
    Feeds {
        /// A label for this set of feeds (shown in the source's log).
        #[arg(long, default_value = "feeds")]
        set: String,
        /// The feed list.
        #[arg(long, env = "FEEDS")]
        feeds: PathBuf,
        /// Seconds between refreshes.
        #[arg(long, env = "FEEDS_INTERVAL", default_value_t = 60)]
        interval: u64,
        /// Items kept, newest first across all feeds.
        #[arg(long, env = "FEEDS_MAX_ITEMS", default_value_t = 20)]
        max_items: usize,
        /// Bytes read of one feed at most; a larger feed is read up to it and reported
        /// truncated.
        #[arg(long, env = "FEEDS_MAX_BYTES", default_value_t = feeds::DEFAULT_MAX_BYTES)]
        max_bytes: u64,
        /// Seconds one feed may take to read (file or URL, body included).
        #[arg(long, env = "FEEDS_TIMEOUT", default_value_t = feeds::DEFAULT_TIMEOUT.as_secs())]
        feed_timeout: u64,
        /// Refresh once and exit.
        #[arg(long)]
        once: bool,
    },
    /// Read a running source's state as an expert would at wake: `<mesh>/<source>`.
    ///
    /// Looks the source up in the phone book and asks it for its state, with how each of its
    /// inputs is doing; exits 1 when it is not running, does not answer within --timeout, or
    /// has nothing to show because every input fails.
    Read {
        /// `<mesh>/<source>`, e.g. newsroom/official_feeds.
        source: String,
    },
}

pub async fn run(command: MspCommand, router: &str, timeout: Duration) -> Result<(), CliError> {
    match command {
        MspCommand::Feeds {
            set,
            feeds,
            interval,
            max_items,
            max_bytes,
            feed_timeout,
            once,
        } => {
            let limits = feeds::Limits {
                max_bytes: max_bytes.max(1),
                timeout: Duration::from_secs(feed_timeout.max(1)),
            };
            feeds_loop(
                &set,
                &feeds,
                Duration::from_secs(interval.max(1)),
                max_items,
                limits,
                once,
            )
            .await
        }
        MspCommand::Read { source } => read(&source, router, timeout).await,
    }
}

async fn feeds_loop(
    set: &str,
    list: &std::path::Path,
    interval: Duration,
    max_items: usize,
    limits: feeds::Limits,
    once: bool,
) -> Result<(), CliError> {
    // Fail at once on a list that cannot be read: a source with no feeds shows nothing.
    let mut reader =
        feeds::Feeds::open(list, max_items, limits).map_err(|e| CliError::Failed(e.to_string()))?;
    loop {
        let snap = reader.refresh(now_ms).await;
        tracing::debug!(
            set,
            feeds = snap.health.len(),
            items = snap.items.len(),
            "refreshed"
        );
        let line = snap.state_line();
        let mut out = std::io::stdout().lock();
        writeln!(out, "{line}")
            .and_then(|_| out.flush())
            .map_err(|source| CliError::Io {
                what: "stdout".into(),
                source,
            })?;
        drop(out);
        if once {
            return Ok(());
        }
        tokio::time::sleep(interval).await;
    }
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

async fn read(source: &str, router: &str, timeout: Duration) -> Result<(), CliError> {
    let (mesh, name) = split_name(source).map_err(|e| CliError::Failed(e.to_string()))?;
    let config = super::load_config()?;
    let kv = AnyLog::open(&config).await?;
    let (_control, node) = super::connect::connect(router, timeout).await?;
    let readings = reader::read_all(
        &node,
        &kv,
        mesh,
        &[(name.to_string(), String::new())],
        "iron msp read",
        timeout,
    )
    .await;
    print!("{}", reader::compose(&readings));
    match &readings[0].outcome {
        Outcome::Read { .. } => Ok(()),
        Outcome::NotRunning => Err(CliError::Failed(format!(
            "{source} is not running (no listing in the phone book)"
        ))),
        Outcome::Failed { reason } => Err(CliError::Failed(format!("{source}: {reason}"))),
    }
}
