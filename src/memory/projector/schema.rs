//! The projection database: its schema, how it is opened and made, and the full-text rows of
//! its events.

use std::path::Path;
use std::time::Duration;

use rusqlite::{Connection, OptionalExtension, params};
use serde_json::Value;
use sha2::{Digest, Sha256};

use super::{ProjectorError, db_err};
use crate::core::envelope::Envelope;

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS events(
    event_id TEXT PRIMARY KEY, seq INTEGER NOT NULL, subject TEXT NOT NULL, ts INTEGER NOT NULL,
    tenant TEXT NOT NULL, namespace TEXT NOT NULL, actor TEXT NOT NULL, kind TEXT NOT NULL,
    payload TEXT NOT NULL, result TEXT, cause TEXT);
CREATE INDEX IF NOT EXISTS events_seq ON events(seq);
CREATE INDEX IF NOT EXISTS events_namespace ON events(namespace, seq);
-- Lessons are few among many events; a role's are read at every wake.
CREATE INDEX IF NOT EXISTS events_lessons ON events(namespace, seq) WHERE kind = 'lesson_learned';
CREATE VIRTUAL TABLE IF NOT EXISTS events_fts USING fts5(event_id UNINDEXED, ns, body);
-- Each indexed word's count of events, read from the index itself (no storage of its own, but
-- counting one word reads its whole list of events); only to fill `word_docs` once.
CREATE VIRTUAL TABLE IF NOT EXISTS events_vocab USING fts5vocab(events_fts, 'row');
CREATE TABLE IF NOT EXISTS applied(seq INTEGER PRIMARY KEY, msg_id TEXT, event_id TEXT);
CREATE TABLE IF NOT EXISTS skipped(seq INTEGER PRIMARY KEY, subject TEXT NOT NULL, reason TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS cursor(stream TEXT PRIMARY KEY, last_seq INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS superseded(
    fact_id TEXT PRIMARY KEY, by_id TEXT NOT NULL, reason TEXT NOT NULL, seq INTEGER NOT NULL);
";

/// Opens (creating if needed) the projection database as its writer: WAL, full sync.
pub fn open_writer(path: &Path) -> Result<Connection, ProjectorError> {
    if !path.exists() {
        create_projection(path)?;
    }
    prepare(path)
}

/// How far the projection at `path` has read `stream` (its cursor), read without writing;
/// `None` when no projection is there yet. What a view reports as the projector's lag.
pub fn projected_to(path: &Path, stream: &str) -> Result<Option<u64>, ProjectorError> {
    if !path.exists() {
        return Ok(None);
    }
    let conn = Connection::open_with_flags(path, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
        .map_err(db_err(path))?;
    conn.busy_timeout(Duration::from_secs(2))
        .map_err(db_err(path))?;
    conn.query_row(
        "SELECT last_seq FROM cursor WHERE stream = ?1",
        [stream],
        |row| row.get::<_, i64>(0),
    )
    .optional()
    .map(|seq| Some(seq.unwrap_or(0) as u64))
    .map_err(db_err(path))
}

/// Opens the SQLite database at `path` as its one writer: WAL (readers never wait for it),
/// every commit synced, a 10 s wait on a lock. The projector's and the workers' databases.
pub(in crate::memory) fn open_wal(path: &Path) -> rusqlite::Result<Connection> {
    let conn = Connection::open(path)?;
    conn.busy_timeout(Duration::from_secs(10))?;
    conn.pragma_update(None, "journal_mode", "WAL")?;
    conn.pragma_update(None, "synchronous", "FULL")?;
    Ok(conn)
}

/// Opens `path` for writing, WAL and full sync, with the schema.
fn prepare(path: &Path) -> Result<Connection, ProjectorError> {
    let conn = open_wal(path).map_err(db_err(path))?;
    reindex_namespaces(&conn).map_err(db_err(path))?;
    conn.execute_batch(SCHEMA).map_err(db_err(path))?;
    count_words(&conn).map_err(db_err(path))?;
    Ok(conn)
}

/// The fewest letters of a word an any-word search looks for (shorter ones are mostly filler).
const MIN_WORD_CHARS: usize = 4;

/// The words of free text an any-word search looks for: those of [`MIN_WORD_CHARS`] letters or
/// more, lowercase and without diacritics (as the full-text tokenizer folds them: `café` is
/// the index's `cafe`), each once.
pub(crate) fn any_words(text: &str) -> Vec<String> {
    use unicode_normalization::{UnicodeNormalization, char::is_combining_mark};
    let mut words: Vec<String> = text
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| w.chars().count() >= MIN_WORD_CHARS)
        .map(|w| {
            w.nfd()
                .filter(|c| !is_combining_mark(*c))
                .collect::<String>()
                .to_lowercase()
        })
        .collect();
    words.sort();
    words.dedup();
    words
}

/// How many events hold each word an any-word recall may look for (see
/// [`any_words`]): one lookup per word, where counting it in the
/// full-text index reads the word's whole list of events (180,000 entries, several
/// milliseconds, for a common word at a million events). The projector adds each batch's
/// counts in the batch's transaction ([`WordCounts`]).
const WORD_DOCS: &str =
    "CREATE TABLE word_docs(term TEXT PRIMARY KEY, docs INTEGER NOT NULL) WITHOUT ROWID";

/// Makes `word_docs` when the projection has none (new, or made before it), filled from the
/// full-text index in the same transaction: a reader never sees it empty beside events.
fn count_words(conn: &Connection) -> rusqlite::Result<()> {
    let tx = conn.unchecked_transaction()?;
    let exists: bool = tx.query_row(
        "SELECT count(*) = 1 FROM sqlite_master WHERE name = 'word_docs'",
        [],
        |r| r.get(0),
    )?;
    if !exists {
        tx.execute_batch(WORD_DOCS)?;
        tx.execute(
            "INSERT INTO word_docs(term, docs)
             SELECT term, doc FROM events_vocab WHERE length(term) >= ?1",
            [MIN_WORD_CHARS as i64],
        )?;
    }
    tx.commit()
}

/// The words of one batch's new events, each counted once per event, added to `word_docs`
/// in the batch's transaction.
#[derive(Default)]
pub(super) struct WordCounts(std::collections::HashMap<String, i64>);

impl WordCounts {
    /// Counts the words of one event's indexed text.
    pub(super) fn add(&mut self, body: &str) {
        for word in any_words(body) {
            *self.0.entry(word).or_default() += 1;
        }
    }

    /// Adds the counts to `word_docs`.
    pub(super) fn write(self, tx: &rusqlite::Transaction<'_>) -> rusqlite::Result<()> {
        let mut add = tx.prepare_cached(
            "INSERT INTO word_docs(term, docs) VALUES (?1, ?2)
             ON CONFLICT(term) DO UPDATE SET docs = docs + excluded.docs",
        )?;
        for (word, docs) in self.0 {
            add.execute(params![word, docs])?;
        }
        Ok(())
    }
}

/// The layout of the full-text index (`PRAGMA user_version`): 2 since its `ns` column holds
/// one token per namespace prefix (see [`scope_tokens`]).
const FTS_LAYOUT: i64 = 2;

/// The token that stands for the namespace prefix `prefix` in the full-text index: a scoped
/// search asks the index for this one token instead of a phrase of the namespace's words, so
/// the index narrows to the scope before it reads any word's matches. Letters and digits only
/// (one token to the tokenizer).
pub(crate) fn scope_token(prefix: &str) -> String {
    let digest = Sha256::digest(prefix.trim_end_matches('/').as_bytes());
    format!("ns{}", hex::encode(&digest[..8]))
}

/// The `ns` column of an event in `namespace`: the token of every prefix of it
/// (`facts`, `facts/newsroom`, `facts/newsroom/editor`).
fn scope_tokens(namespace: &str) -> String {
    let parts: Vec<&str> = namespace.split('/').collect();
    (1..=parts.len())
        .map(|n| scope_token(&parts[..n].join("/")))
        .collect::<Vec<_>>()
        .join(" ")
}

/// A projection whose full-text index is of an earlier layout (no namespace column, or the
/// namespace as words): rebuilds that index from the events, once.
fn reindex_namespaces(conn: &Connection) -> rusqlite::Result<()> {
    let layout: i64 = conn.query_row("PRAGMA user_version", [], |r| r.get(0))?;
    if layout >= FTS_LAYOUT {
        return Ok(());
    }
    let old: bool = conn.query_row(
        "SELECT count(*) = 1 FROM sqlite_master WHERE name = 'events_fts'",
        [],
        |r| r.get(0),
    )?;
    if !old {
        return conn.pragma_update(None, "user_version", FTS_LAYOUT);
    }
    tracing::info!("projection: rebuilding the full-text index with scope tokens");
    let tx = conn.unchecked_transaction()?;
    tx.execute_batch(
        "DROP TABLE events_fts;
         CREATE VIRTUAL TABLE events_fts USING fts5(event_id UNINDEXED, ns, body);",
    )?;
    {
        let mut read = tx.prepare("SELECT event_id, namespace, payload, result FROM events")?;
        let mut write =
            tx.prepare("INSERT INTO events_fts(event_id, ns, body) VALUES (?1, ?2, ?3)")?;
        let mut rows = read.query([])?;
        while let Some(row) = rows.next()? {
            let mut body = String::new();
            for column in [2, 3] {
                if let Some(text) = row.get::<_, Option<String>>(column)?
                    && let Ok(value) = serde_json::from_str::<Value>(&text)
                {
                    index_text(&value, &mut body);
                }
            }
            write.execute(params![
                row.get::<_, String>(0)?,
                scope_tokens(&row.get::<_, String>(1)?),
                body
            ])?;
        }
    }
    tx.pragma_update(None, "user_version", FTS_LAYOUT)?;
    tx.commit()
}

/// Makes a new projection with its schema, whole, so that a reader (`iron recall`, the
/// engine) never finds the file without its tables.
fn create_projection(path: &Path) -> Result<(), ProjectorError> {
    let io = |source| ProjectorError::Create {
        path: path.display().to_string(),
        source,
    };
    crate::core::fs::create_whole(path, io, |tmp| prepare(tmp).map(drop))
}

/// Text indexed for full-text search: every string and number in payload and result, an
/// instruction's prose without its task block ([`crate::protocol::instruction_prose`]: the
/// block's data, a newsroom's whole window, is in memory as the sources' own events).
fn index_text(value: &Value, out: &mut String) {
    match value {
        Value::String(s) => {
            out.push_str(crate::protocol::instruction_prose(s));
            out.push(' ');
        }
        Value::Number(n) => {
            out.push_str(&n.to_string());
            out.push(' ');
        }
        Value::Array(items) => items.iter().for_each(|v| index_text(v, out)),
        Value::Object(map) => map.values().for_each(|v| index_text(v, out)),
        Value::Bool(_) | Value::Null => {}
    }
}

/// The full-text row of an event: the scope tokens of its namespace and its indexed text.
pub(crate) fn fts_row(envelope: &Envelope) -> (String, String) {
    let mut body = String::new();
    index_text(&envelope.payload, &mut body);
    if let Some(result) = &envelope.result {
        index_text(result, &mut body);
    }
    (scope_tokens(&envelope.namespace_path()), body)
}
