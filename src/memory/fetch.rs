//! Where a document to save comes from: a file or an `http(s)` URL, never more than
//! [`MAX_BYTES`], and which kind of document the bytes are (the kind a person or model names,
//! else the one the server names, else the bytes and the name say).

use std::path::Path;
use std::time::Duration;

use super::documents::MAX_BYTES;
use super::text::MediaType;

/// Why a document could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    /// The file could not be read.
    #[error("reading {name}: {source}")]
    Io {
        /// The path.
        name: String,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// Larger than [`MAX_BYTES`].
    #[error("{name}: {size} bytes is more than the {MAX_BYTES} a saved document may hold")]
    TooLarge {
        /// The path or URL.
        name: String,
        /// Its size (so far, for a download cut short).
        size: u64,
    },
    /// The URL could not be fetched, or did not answer 2xx.
    #[error("{name}: {detail}")]
    Http {
        /// The URL.
        name: String,
        /// What went wrong.
        detail: String,
    },
    /// Not a kind of document that can be saved.
    #[error(
        "{0}: cannot tell what kind of document it is (not UTF-8 text, HTML or PDF); name its kind (text, html or pdf) if it is one"
    )]
    UnknownKind(String),
}

/// Whether `source` names a URL rather than a file.
pub fn is_url(source: &str) -> bool {
    source.starts_with("http://") || source.starts_with("https://")
}

/// The bytes of the file at `path`.
pub fn read_file(path: &Path) -> Result<Vec<u8>, ReadError> {
    let name = path.display().to_string();
    let io = |source| ReadError::Io {
        name: name.clone(),
        source,
    };
    let size = std::fs::metadata(path).map_err(io)?.len();
    if size > MAX_BYTES as u64 {
        return Err(ReadError::TooLarge { name, size });
    }
    std::fs::read(path).map_err(io)
}

/// A client for [`fetch`]: answers within `timeout`; redirects are followed only when
/// `follow_redirects` (a caller that checks URLs against an allow-list must not follow them:
/// the next hop would not be checked).
pub fn client(timeout: Duration, follow_redirects: bool) -> reqwest::Result<reqwest::Client> {
    let policy = if follow_redirects {
        reqwest::redirect::Policy::limited(10)
    } else {
        reqwest::redirect::Policy::none()
    };
    reqwest::Client::builder()
        .timeout(timeout)
        .redirect(policy)
        .build()
}

/// The body of `url` and the kind its `Content-Type` names; anything but a 2xx answer is an
/// error, and a body past [`MAX_BYTES`] is cut off and refused.
pub async fn fetch(
    client: &reqwest::Client,
    url: &str,
) -> Result<(Vec<u8>, Option<MediaType>), ReadError> {
    let failed = |detail: String| ReadError::Http {
        name: url.to_string(),
        detail,
    };
    let mut response = client
        .get(url)
        .send()
        .await
        .map_err(|e| failed(e.to_string()))?;
    if !response.status().is_success() {
        return Err(failed(format!("HTTP {}", response.status())));
    }
    let too_large = |size| ReadError::TooLarge {
        name: url.to_string(),
        size,
    };
    if let Some(size) = response.content_length().filter(|n| *n > MAX_BYTES as u64) {
        return Err(too_large(size));
    }
    let served = response
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(MediaType::from_mime);
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await.map_err(|e| failed(e.to_string()))? {
        body.extend_from_slice(&chunk);
        if body.len() > MAX_BYTES {
            return Err(too_large(body.len() as u64));
        }
    }
    Ok((body, served))
}

/// The kind of the document `name` holding `bytes`: `named` (what the saver said), else
/// `served` (what the web server said), else what the bytes and the name say.
pub fn kind_of(
    name: &str,
    bytes: &[u8],
    named: Option<MediaType>,
    served: Option<MediaType>,
) -> Result<MediaType, ReadError> {
    named
        .or(served)
        .or_else(|| MediaType::sniff(name, bytes))
        .ok_or_else(|| ReadError::UnknownKind(name.to_string()))
}
