//! Documents (`/iron/memory/documents`): files and web pages saved to memory. Saving puts the
//! bytes in the durable plane's object store (bucket [`BUCKET`], named by their SHA-256, so a
//! document saved twice is stored once) and writes `document_saved` to the log, in the
//! namespace of the scope it was saved to. The worker reads each saved document back from the
//! object store, extracts its text (plain, HTML, PDF: see [`super::text`]), cuts it into
//! passages and indexes them in its own database (`memory/documents.db`, full-text); recall
//! ([`search`]) returns passages with their document and position, within a scope.
//!
//! It writes no events; like every worker it rebuilds from the log.

use std::path::Path;

use futures_util::future::BoxFuture;
use rusqlite::{Connection, OpenFlags, OptionalExtension, Transaction, params};
use sha2::{Digest, Sha256};

use super::text::{self, MediaType, Passage};
use super::worker::{Derived, Deriver};
use crate::core::durable::{DurableError, EventLog, ObjectStore};
use crate::core::envelope::Envelope;
use crate::core::event_kind::EventKind;
use crate::memory::emit::{EmitError, emit};
use crate::protocol::{Payload, ProtocolError, payload::DocumentSaved};

/// The object-store bucket documents are kept in.
pub const BUCKET: &str = "documents";
/// Largest document saved (bytes).
pub const MAX_BYTES: usize = 32 * 1024 * 1024;

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS passages(
    id INTEGER PRIMARY KEY, document TEXT NOT NULL, tenant TEXT NOT NULL,
    namespace TEXT NOT NULL, name TEXT NOT NULL, title TEXT NOT NULL, ordinal INTEGER NOT NULL,
    page INTEGER NOT NULL, offset INTEGER NOT NULL, text TEXT NOT NULL,
    UNIQUE(document, ordinal));
CREATE VIRTUAL TABLE IF NOT EXISTS passages_fts USING fts5(body);
";

/// A document to save.
#[derive(Debug, Clone)]
pub struct Saving {
    /// Where it came from: a path or a URL.
    pub name: String,
    /// A title for it (the name when empty).
    pub title: String,
    /// Its kind.
    pub kind: MediaType,
    /// Its bytes.
    pub bytes: Vec<u8>,
}

/// Why a document could not be saved.
#[derive(Debug, thiserror::Error)]
pub enum SaveError {
    /// Larger than [`MAX_BYTES`].
    #[error("{name}: {size} bytes is more than the {MAX_BYTES} a saved document may hold")]
    TooLarge {
        /// Name.
        name: String,
        /// Size.
        size: usize,
    },
    /// The scope is not a namespace of memory.
    #[error("scope {0:?} is not under facts/ (facts/<mesh>, facts/<mesh>/<role>, facts/system)")]
    Scope(String),
    /// The text could not be read (saved nothing).
    #[error("{name}: {source}")]
    Text {
        /// Name.
        name: String,
        /// Cause.
        #[source]
        source: text::TextError,
    },
    /// The object store failed.
    #[error("object store: {0}")]
    Store(#[from] DurableError),
    /// The log refused the event.
    #[error(transparent)]
    Emit(#[from] EmitError),
}

/// Saves `doc` to `scope` (a namespace under `facts/`) for `tenant`, as `actor`: the bytes to
/// the object store, then `document_saved` to the log. Its text is read first, so a document
/// with none that can be read is refused rather than saved unsearchable. Returns the event.
pub async fn save<L: EventLog + ObjectStore>(
    log: &L,
    tenant: &str,
    scope: &str,
    actor: &str,
    doc: Saving,
) -> Result<Envelope, SaveError> {
    let scope = scope.trim_matches('/');
    if scope != "facts" && !scope.starts_with("facts/") || scope.split('/').any(str::is_empty) {
        return Err(SaveError::Scope(scope.to_string()));
    }
    if doc.bytes.len() > MAX_BYTES {
        return Err(SaveError::TooLarge {
            name: doc.name,
            size: doc.bytes.len(),
        });
    }
    let pages = text::pages(doc.kind, &doc.bytes).map_err(|source| SaveError::Text {
        name: doc.name.clone(),
        source,
    })?;
    let digest = hex::encode(Sha256::digest(&doc.bytes));
    log.object_open(BUCKET).await?;
    let size = doc.bytes.len();
    log.object_put(BUCKET, &digest, doc.bytes).await?;
    let title = if doc.title.trim().is_empty() {
        doc.name.clone()
    } else {
        doc.title.trim().to_string()
    };
    let event = Envelope::new(
        tenant,
        scope.split('/'),
        actor,
        EventKind::DocumentSaved,
        DocumentSaved {
            name: doc.name,
            title,
            media_type: doc.kind.mime().to_string(),
            size: size as u64,
            digest,
            bucket: BUCKET.to_string(),
            pages: pages.len() as u64,
        }
        .to_value(),
    );
    emit(log, &event).await?;
    Ok(event)
}

/// The documents worker: indexes the passages of every saved document.
#[derive(Clone)]
pub struct DocumentIndex<S> {
    store: S,
}

impl<S: ObjectStore> DocumentIndex<S> {
    /// An index reading documents from `store`.
    pub fn new(store: S) -> Self {
        Self { store }
    }

    /// The document `event` saved, and its passages.
    async fn read(&self, event: &Envelope) -> Result<(DocumentSaved, Vec<Passage>), ReadError> {
        let saved = event.payload::<DocumentSaved>()?;
        let kind = MediaType::from_mime(&saved.media_type)
            .ok_or_else(|| ReadError::MediaType(saved.media_type.clone()))?;
        self.store.object_open(&saved.bucket).await?;
        let bytes = self
            .store
            .object_get(&saved.bucket, &saved.digest)
            .await?
            .ok_or_else(|| ReadError::Missing(saved.digest.clone()))?;
        let pages = text::pages(kind, &bytes)?;
        Ok((saved, text::passages(&pages)))
    }
}

/// Why a saved document's passages could not be read (counted against its event).
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    #[error(transparent)]
    Payload(#[from] ProtocolError),
    #[error("unknown media type {0:?}")]
    MediaType(String),
    #[error("object store: {0}")]
    Store(#[from] DurableError),
    #[error("{0} is not in the object store")]
    Missing(String),
    #[error(transparent)]
    Text(#[from] text::TextError),
}

impl<S: ObjectStore> Deriver for DocumentIndex<S> {
    type Prepared = Option<Result<(DocumentSaved, Vec<Passage>), ReadError>>;

    fn schema(&self) -> &'static str {
        SCHEMA
    }

    fn prepare<'a>(&'a self, event: &'a Envelope) -> BoxFuture<'a, Self::Prepared> {
        Box::pin(async move {
            (event.kind == EventKind::DocumentSaved).then_some(())?;
            Some(self.read(event).await)
        })
    }

    fn derive(
        &self,
        tx: &Transaction<'_>,
        _seq: u64,
        event: &Envelope,
        prepared: Self::Prepared,
    ) -> rusqlite::Result<Derived> {
        let (saved, passages) = match prepared {
            None => return Ok(Derived::default()),
            Some(Err(problem)) => {
                return Ok(Derived {
                    events: Vec::new(),
                    problem: Some(problem.to_string()),
                });
            }
            Some(Ok(read)) => read,
        };
        let mut insert = tx.prepare_cached(
            "INSERT OR IGNORE INTO passages
             (document, tenant, namespace, name, title, ordinal, page, offset, text)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
        )?;
        let mut index =
            tx.prepare_cached("INSERT INTO passages_fts(rowid, body) VALUES (?1, ?2)")?;
        for p in passages {
            let added = insert.execute(params![
                event.event_id.as_str(),
                event.tenant,
                event.namespace_path(),
                saved.name,
                saved.title,
                p.ordinal as i64,
                p.page as i64,
                p.offset as i64,
                p.text
            ])?;
            if added == 1 {
                index.execute(params![tx.last_insert_rowid(), p.text])?;
            }
        }
        Ok(Derived::default())
    }
}

/// One passage recall found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
    /// The `document_saved` event.
    pub document: String,
    /// Where the document came from (path or URL).
    pub name: String,
    /// Its title.
    pub title: String,
    /// Its namespace.
    pub namespace: String,
    /// Its place among the document's passages (from 0), its page (from 1) and where it starts
    /// on that page (characters).
    pub ordinal: u64,
    /// Page.
    pub page: u64,
    /// Offset.
    pub offset: u64,
    /// The passage.
    pub text: String,
}

/// Which passages a search matches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Matching {
    /// Those holding every word of the query (`iron recall --documents`).
    Every,
    /// Those holding any of its words of four letters or more (a wake).
    Any,
}

/// The passages in the index at `path` (read-only) that match `query`, best first: under the
/// namespace `prefix` (empty: all), of `tenant` (`None`: any), at most `limit`. Empty when
/// there is no index yet.
pub fn search(
    path: &Path,
    query: &str,
    matching: Matching,
    prefix: &str,
    tenant: Option<&str>,
    limit: usize,
) -> Result<Vec<Found>, rusqlite::Error> {
    if !path.is_file() {
        return Ok(Vec::new());
    }
    let words: Vec<String> = match matching {
        Matching::Every => query.split_whitespace().map(str::to_string).collect(),
        Matching::Any => super::projector::any_words(query),
    };
    let words: Vec<String> = words
        .iter()
        .map(|w| format!("\"{}\"", w.replace('"', "\"\"")))
        .collect();
    if words.is_empty() {
        return Ok(Vec::new());
    }
    let joined = words.join(match matching {
        Matching::Every => " ",
        Matching::Any => " OR ",
    });
    let conn = Connection::open_with_flags(path, OpenFlags::SQLITE_OPEN_READ_ONLY)?;
    conn.busy_timeout(std::time::Duration::from_secs(5))?;
    let prefix = prefix.trim_end_matches('/');
    let scope = super::recall::under("p.namespace", "?2");
    let mut stmt = conn.prepare(&format!(
        "SELECT p.document, p.name, p.title, p.namespace, p.ordinal, p.page, p.offset, p.text
         FROM passages_fts f JOIN passages p ON p.id = f.rowid
         WHERE passages_fts MATCH ?1
           AND (?2 = '' OR {scope})
           AND (?3 IS NULL OR p.tenant = ?3)
         ORDER BY f.rank LIMIT ?4"
    ))?;
    let rows = stmt.query_map(params![joined, prefix, tenant, limit as i64], |r| {
        Ok(Found {
            document: r.get(0)?,
            name: r.get(1)?,
            title: r.get(2)?,
            namespace: r.get(3)?,
            ordinal: r.get::<_, i64>(4)? as u64,
            page: r.get::<_, i64>(5)? as u64,
            offset: r.get::<_, i64>(6)? as u64,
            text: r.get(7)?,
        })
    })?;
    rows.collect()
}

/// How many documents and passages the index at `path` holds (`None`: it is no document
/// index).
pub fn indexed(path: &Path) -> Option<(u64, u64)> {
    let conn = Connection::open_with_flags(path, OpenFlags::SQLITE_OPEN_READ_ONLY).ok()?;
    conn.query_row(
        "SELECT count(DISTINCT document), count(*) FROM passages",
        [],
        |r| Ok((r.get::<_, i64>(0)? as u64, r.get::<_, i64>(1)? as u64)),
    )
    .optional()
    .ok()
    .flatten()
}
