//! `iron memory save`: a file or a web page saved to memory as a document.

use std::time::Duration;

use super::CliError;
use crate::{
    memory::{
        documents::{self, Saving},
        fetch,
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
    let named = kind
        .map(|word| {
            MediaType::from_word(word)
                .ok_or_else(|| CliError::Failed(format!("--type {word:?}: one of text, html, pdf")))
        })
        .transpose()?;
    let failed = |e: fetch::ReadError| CliError::Failed(e.to_string());
    let (bytes, served) = if fetch::is_url(source) {
        let client = fetch::client(timeout, true).map_err(|e| CliError::Failed(e.to_string()))?;
        fetch::fetch(&client, source).await.map_err(failed)?
    } else {
        (fetch::read_file(source.as_ref()).map_err(failed)?, None)
    };
    let kind = fetch::kind_of(source, &bytes, named, served)
        .map_err(|e| CliError::Failed(format!("{e} with --type")))?;
    let config = super::load_config()?;
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
    let saved = event
        .payload::<crate::protocol::payload::DocumentSaved>()
        .map_err(|e| CliError::Failed(e.to_string()))?;
    println!(
        "{} {} {} bytes, {} page(s) -> {}",
        event.event_id,
        kind.mime(),
        saved.size,
        saved.pages,
        event.namespace_path()
    );
    Ok(())
}
