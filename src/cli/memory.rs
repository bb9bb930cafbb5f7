//! `iron memory save`: a file or a web page saved to memory as a document.

use std::time::Duration;

use super::CliError;
use crate::{
    core::config::Config,
    memory::{
        documents::{self, MAX_BYTES, Saving},
        text::MediaType,
    },
    spine::durable::AnyLog,
};

/// Reads `source` (a path, or an http(s) URL fetched within `timeout`), tells its kind and
/// saves it to `scope` as `user`; prints the `document_saved` event's id and what was saved.
pub async fn save(
    source: &str,
    scope: &str,
    title: &str,
    kind: Option<&str>,
    user: &str,
    timeout: Duration,
) -> Result<(), CliError> {
    let forced = kind.map(parse_kind).transpose()?;
    let (bytes, served) = if source.starts_with("http://") || source.starts_with("https://") {
        fetch(source, timeout).await?
    } else {
        let size = std::fs::metadata(source)
            .map_err(|e| read_error(source, e))?
            .len();
        if size > MAX_BYTES as u64 {
            return Err(too_large(source, size));
        }
        (
            std::fs::read(source).map_err(|e| read_error(source, e))?,
            None,
        )
    };
    let kind = forced
        .or(served)
        .or_else(|| MediaType::sniff(source, &bytes))
        .ok_or_else(|| {
            CliError::Failed(format!(
                "{source}: cannot tell what kind of document it is (not UTF-8 text, HTML or \
                 PDF); give --type text|html|pdf if it is one"
            ))
        })?;
    let config = Config::load()?;
    let log = AnyLog::open(&config).await?;
    let saving = Saving {
        name: source.to_string(),
        title: title.to_string(),
        kind,
        bytes,
    };
    let actor = format!("operator/{user}");
    let event = documents::save(&log, &config.tenant, scope, &actor, saving)
        .await
        .map_err(|e| CliError::Failed(e.to_string()))?;
    println!(
        "{} {} {} bytes, {} page(s) -> {}",
        event.event_id,
        kind.mime(),
        event.payload["size"],
        event.payload["pages"],
        event.namespace_path()
    );
    Ok(())
}

fn parse_kind(word: &str) -> Result<MediaType, CliError> {
    match word {
        "text" => Ok(MediaType::Text),
        "html" => Ok(MediaType::Html),
        "pdf" => Ok(MediaType::Pdf),
        other => Err(CliError::Failed(format!(
            "--type {other:?}: one of text, html, pdf"
        ))),
    }
}

fn read_error(source: &str, e: std::io::Error) -> CliError {
    CliError::Io {
        what: format!("reading {source}"),
        source: e,
    }
}

fn too_large(source: &str, size: u64) -> CliError {
    CliError::Failed(format!(
        "{source}: {size} bytes is more than the {MAX_BYTES} a saved document may hold"
    ))
}

/// The body of `url` and the kind its `Content-Type` names, within `timeout` and
/// [`MAX_BYTES`].
async fn fetch(url: &str, timeout: Duration) -> Result<(Vec<u8>, Option<MediaType>), CliError> {
    let failed = |e: &dyn std::fmt::Display| CliError::Failed(format!("{url}: {e}"));
    let client = reqwest::Client::builder()
        .timeout(timeout)
        .build()
        .map_err(|e| failed(&e))?;
    let mut response = client.get(url).send().await.map_err(|e| failed(&e))?;
    if !response.status().is_success() {
        return Err(failed(&format!("HTTP {}", response.status())));
    }
    if let Some(size) = response.content_length().filter(|n| *n > MAX_BYTES as u64) {
        return Err(too_large(url, size));
    }
    let served = response
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(MediaType::from_mime);
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await.map_err(|e| failed(&e))? {
        body.extend_from_slice(&chunk);
        if body.len() > MAX_BYTES {
            return Err(too_large(url, body.len() as u64));
        }
    }
    Ok((body, served))
}
