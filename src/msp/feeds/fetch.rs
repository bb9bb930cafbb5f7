//! Reading one feed: a file or a URL, within a time limit and up to a size limit, and every way
//! that can fail, each with a reason a person can act on.

use std::{path::Path, time::Duration};

use tokio::io::AsyncReadExt;

use super::{FeedAddress, FeedItem, parse};

/// Bytes read of one feed by default (`FEEDS_MAX_BYTES`): a busy outlet's feed is a few
/// hundred kilobytes; past this, the feed is read up to the limit and said to be cut.
pub const DEFAULT_MAX_BYTES: u64 = 2 * 1024 * 1024;
/// How long one feed may take to read by default (`FEEDS_TIMEOUT`).
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);

/// How much of a feed is read, and for how long.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Bytes read at most; the rest is left unread and the feed reported cut.
    pub max_bytes: u64,
    /// The whole read (connect, answer, body; or the file) must end within it.
    pub timeout: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_bytes: DEFAULT_MAX_BYTES,
            timeout: DEFAULT_TIMEOUT,
        }
    }
}

/// Why a feed could not be read.
#[derive(Debug, thiserror::Error)]
pub enum FeedError {
    /// No file at the path.
    #[error("not found: no file {0}")]
    NotFound(String),
    /// The file could not be read.
    #[error("cannot read the file: {0}")]
    Read(std::io::Error),
    /// The server could not be reached, or the exchange broke off.
    #[error("no answer: {0}")]
    Unreachable(String),
    /// Nothing came back in time.
    #[error("timed out after {0:?}")]
    Timeout(Duration),
    /// The URL answered with an error status.
    #[error("HTTP {0}")]
    Status(reqwest::StatusCode),
    /// Not XML.
    #[error("not XML: {why} at byte {at}")]
    NotXml {
        /// Where.
        at: u64,
        /// The parser's reason.
        why: String,
    },
    /// Well-formed as far as it goes, but it stops inside an element.
    #[error("not XML: the document ends inside <{0}> (cut short?)")]
    Unfinished(String),
    /// XML, but not RSS or Atom.
    #[error("not an RSS or Atom feed (root element <{0}>)")]
    NotAFeed(String),
    /// No element at all.
    #[error("not XML: empty document")]
    Empty,
    /// The reader stopped short (it panicked or was cancelled).
    #[error("the feed could not be read: {0}")]
    Reader(String),
    /// Larger than the limit, and not one whole item in the part read.
    #[error("too large: no whole item in its first {0} bytes (FEEDS_MAX_BYTES)")]
    TooLarge(u64),
}

/// What reading one feed gave.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Fetched {
    /// Its items, in its own order.
    pub items: Vec<FeedItem>,
    /// It was larger than the limit (this many bytes): only what came before it was read.
    pub cut_at: Option<u64>,
}

/// Reads one feed (a file, or a URL) within `limits`.
pub async fn fetch(
    address: &FeedAddress,
    http: &reqwest::Client,
    limits: Limits,
) -> Result<Fetched, FeedError> {
    let read = async {
        match address {
            FeedAddress::File(p) => read_file(p, limits.max_bytes).await,
            FeedAddress::Url(u) => read_url(u, http, limits.max_bytes).await,
        }
    };
    let (bytes, cut) = tokio::time::timeout(limits.timeout, read)
        .await
        .map_err(|_| FeedError::Timeout(limits.timeout))??;
    // Reading megabytes of XML takes a while: off the runtime's threads, so the feeds read
    // at the same time keep to their own time limits.
    tokio::task::spawn_blocking(move || read_items(&bytes, cut, limits.max_bytes))
        .await
        .map_err(|e| FeedError::Reader(e.to_string()))?
}

/// The items of a feed's bytes; `cut` when they stop at the limit of `max_bytes`.
fn read_items(bytes: &[u8], cut: bool, max_bytes: u64) -> Result<Fetched, FeedError> {
    let text = String::from_utf8_lossy(bytes);
    let text = text.strip_prefix('\u{feff}').unwrap_or(&text);
    if !cut {
        return parse::parse(text).map(|(_, items)| Fetched {
            items,
            cut_at: None,
        });
    }
    // Cut at the limit: the document ends in the middle, so the parser's complaint about its
    // end is expected; what it read whole before that is kept.
    let (_, items, end) = parse::parse_prefix(text);
    match end {
        Err(e @ (FeedError::NotAFeed(_) | FeedError::Empty)) => Err(e),
        _ if items.is_empty() => Err(FeedError::TooLarge(max_bytes)),
        _ => Ok(Fetched {
            items,
            cut_at: Some(max_bytes),
        }),
    }
}

/// At most `max` bytes of the file, and whether there was more.
async fn read_file(path: &Path, max: u64) -> Result<(Vec<u8>, bool), FeedError> {
    let file = tokio::fs::File::open(path)
        .await
        .map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => FeedError::NotFound(path.display().to_string()),
            _ => FeedError::Read(e),
        })?;
    let mut bytes = Vec::new();
    file.take(max + 1)
        .read_to_end(&mut bytes)
        .await
        .map_err(FeedError::Read)?;
    Ok(keep(bytes, max))
}

/// At most `max` bytes of the answer's body, and whether there was more.
async fn read_url(
    url: &str,
    http: &reqwest::Client,
    max: u64,
) -> Result<(Vec<u8>, bool), FeedError> {
    let mut response = http.get(url).send().await.map_err(unreachable)?;
    if !response.status().is_success() {
        return Err(FeedError::Status(response.status()));
    }
    let mut bytes = Vec::new();
    while let Some(chunk) = response.chunk().await.map_err(unreachable)? {
        let room = (max + 1).saturating_sub(bytes.len() as u64) as usize;
        bytes.extend_from_slice(&chunk[..chunk.len().min(room)]);
        if bytes.len() as u64 > max {
            break;
        }
    }
    Ok(keep(bytes, max))
}

fn keep(mut bytes: Vec<u8>, max: u64) -> (Vec<u8>, bool) {
    let cut = bytes.len() as u64 > max;
    bytes.truncate(max as usize);
    (bytes, cut)
}

/// A transport failure, with the innermost reasons (reqwest's own message names only the URL).
fn unreachable(e: reqwest::Error) -> FeedError {
    let mut why = e.to_string();
    let mut source = std::error::Error::source(&e);
    while let Some(s) = source {
        let said = s.to_string();
        if !why.contains(&said) {
            why.push_str(": ");
            why.push_str(&said);
        }
        source = s.source();
    }
    FeedError::Unreachable(why)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn items_xml(n: usize) -> String {
        let mut xml = String::from("<rss><channel><title>Big</title>");
        for i in 0..n {
            xml.push_str(&format!(
                "<item><title>Item {i}</title><link>https://big.example/{i}</link></item>"
            ));
        }
        xml.push_str("</channel></rss>");
        xml
    }

    #[tokio::test]
    async fn a_file_is_read_up_to_the_limit_and_said_to_be_cut() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("big.xml");
        std::fs::write(&path, items_xml(100)).unwrap();
        let http = reqwest::Client::new();
        let at = FeedAddress::File(path);
        let whole = fetch(&at, &http, Limits::default()).await.unwrap();
        assert_eq!((whole.items.len(), whole.cut_at), (100, None));
        let limits = Limits {
            max_bytes: 2_000,
            ..Limits::default()
        };
        let part = fetch(&at, &http, limits).await.unwrap();
        assert_eq!(part.cut_at, Some(2_000));
        assert!((20..30).contains(&part.items.len()), "{}", part.items.len());
        assert_eq!(part.items[0].title, "Item 0");
        let tiny = Limits {
            max_bytes: 40,
            ..Limits::default()
        };
        assert!(matches!(
            fetch(&at, &http, tiny).await,
            Err(FeedError::TooLarge(40))
        ));
    }

    #[tokio::test]
    async fn a_missing_or_cut_short_file_fails_with_why() {
        let dir = tempfile::tempdir().unwrap();
        let http = reqwest::Client::new();
        let missing = dir.path().join("typo.xml");
        let e = fetch(
            &FeedAddress::File(missing.clone()),
            &http,
            Limits::default(),
        )
        .await
        .unwrap_err();
        assert_eq!(
            e.to_string(),
            format!("not found: no file {}", missing.display())
        );
        let short = dir.path().join("short.xml");
        let xml = items_xml(3);
        std::fs::write(&short, &xml[..xml.len() - 40]).unwrap();
        let e = fetch(&FeedAddress::File(short), &http, Limits::default())
            .await
            .unwrap_err();
        assert!(matches!(e, FeedError::Unfinished(_)), "{e}");
    }
}
