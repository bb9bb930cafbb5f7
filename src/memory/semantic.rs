//! The semantic index (`/iron/memory/semantic`): a vector per current fact, in the worker's
//! own database (`memory/semantic.db`), and hybrid recall — full-text and vector results fused
//! by reciprocal rank — over it and the projection.
//!
//! Vectors come from an [`Embedder`]. The one built in, [`HashingEmbedder`], needs no model and
//! no network: each lowercase word and each of its character trigrams is hashed (FNV-1a) to one
//! of 256 signed dimensions, and the vector is normalised. It finds facts that share words or
//! word stems with the query ("flooding" finds "floods", which full-text search, matching whole
//! words, does not); it knows nothing of meaning, so it does not find synonyms ("car" does not
//! find "vehicle"). The index records which embedder made it; a query is answered only with
//! vectors of the same embedder.

use std::path::Path;

use futures_util::future::BoxFuture;
use rusqlite::{Connection, OpenFlags, Transaction, params};
use serde_json::Value;

use super::recall::{Recall, RecallError, RecallFilter, Recalled};
use super::worker::{Derived, Deriver};
use crate::core::envelope::Envelope;
use crate::core::event_kind::EventKind;
use crate::protocol::payload::FactSuperseded;

/// Vectors are kept as one signed byte per dimension with a scale per vector (a quarter of
/// the bytes of `f32`s, and the ranking barely moves), clustered by embedder and namespace so
/// that a scope's vectors are read as one contiguous range. An index in the first layout
/// (`vectors`, `f32`s by event id) is dropped and its cursor reset: the worker rebuilds it
/// from the log.
pub(super) const SCHEMA: &str = "
DELETE FROM cursor WHERE EXISTS (SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'vectors');
DROP TABLE IF EXISTS vectors;
CREATE TABLE IF NOT EXISTS vectors8(
    embedder TEXT NOT NULL, namespace TEXT NOT NULL, event_id TEXT NOT NULL,
    tenant TEXT NOT NULL, seq INTEGER NOT NULL, scale REAL NOT NULL, vector BLOB NOT NULL,
    PRIMARY KEY(embedder, namespace, event_id)) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS vectors8_event ON vectors8(event_id);
";

/// Why text could not be embedded.
#[derive(Debug, thiserror::Error)]
#[error("embedding: {0}")]
pub struct EmbedError(pub String);

/// Turns text into vectors.
pub trait Embedder: Send + Sync {
    /// Its name and version, recorded with every vector (`hashing-256-v1`).
    fn name(&self) -> &str;

    /// One vector per text, each of unit length.
    fn embed<'a>(&'a self, texts: &'a [String])
    -> BoxFuture<'a, Result<Vec<Vec<f32>>, EmbedError>>;
}

/// The offline embedder: hashed word and character-trigram features (see the module docs).
#[derive(Debug, Clone, Copy, Default)]
pub struct HashingEmbedder;

/// Dimensions of [`HashingEmbedder`]'s vectors.
const DIMS: usize = 256;

fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

impl HashingEmbedder {
    /// The name recorded with its vectors.
    pub const NAME: &'static str = "hashing-256-v1";

    /// The vector of one text.
    pub fn vector(text: &str) -> Vec<f32> {
        let mut v = vec![0f32; DIMS];
        let mut add = |feature: &str, weight: f32| {
            let h = fnv1a(feature.as_bytes());
            let sign = if h >> 63 == 0 { 1.0 } else { -1.0 };
            v[(h % DIMS as u64) as usize] += sign * weight;
        };
        for word in text
            .split(|c: char| !c.is_alphanumeric())
            .filter(|w| w.chars().count() >= 2)
        {
            let word = word.to_lowercase();
            add(&format!("w:{word}"), 1.0);
            let padded: Vec<char> = format!("<{word}>").chars().collect();
            for gram in padded.windows(3) {
                add(&gram.iter().collect::<String>(), 0.5);
            }
        }
        normalise(&mut v);
        v
    }

    /// `text` as a query for [`hybrid`] (no waiting: this embedder is local).
    pub fn query(text: &str) -> QueryVector {
        QueryVector {
            embedder: Self::NAME.to_string(),
            vector: Self::vector(text),
        }
    }
}

impl Embedder for HashingEmbedder {
    fn name(&self) -> &str {
        Self::NAME
    }

    fn embed<'a>(
        &'a self,
        texts: &'a [String],
    ) -> BoxFuture<'a, Result<Vec<Vec<f32>>, EmbedError>> {
        Box::pin(std::future::ready(Ok(texts
            .iter()
            .map(|t| Self::vector(t))
            .collect())))
    }
}

fn normalise(v: &mut [f32]) {
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    if norm > 0.0 {
        v.iter_mut().for_each(|x| *x /= norm);
    }
}

/// `v` as one signed byte per dimension and the scale that turns them back (`x ≈ scale × b`).
fn quantise(v: &[f32]) -> (f32, Vec<u8>) {
    let max = v.iter().fold(0f32, |m, x| m.max(x.abs()));
    if max == 0.0 || !max.is_finite() {
        return (0.0, vec![0; v.len()]);
    }
    let scale = max / 127.0;
    let bytes = v
        .iter()
        .map(|x| (x / scale).round().clamp(-127.0, 127.0) as i8 as u8)
        .collect();
    (scale, bytes)
}

#[cfg(test)]
fn dot(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

/// The dot product of `a` and a quantised vector's bytes (times its scale, it is the dot
/// product with the vector).
///
/// Summed in [`LANES`] running sums, not one: a single sum is a chain of dependent additions
/// as long as the vector, which the compiler may not reorder (floating-point addition is not
/// associative), and it was most of the time of scanning a scope's vectors; independent sums
/// it keeps in vector registers.
fn dot_q8(a: &[f32], bytes: &[u8]) -> f32 {
    let n = a.len().min(bytes.len());
    let (a, bytes) = (&a[..n], &bytes[..n]);
    let mut sums = [0f32; LANES];
    let (xs, bs) = (a.chunks_exact(LANES), bytes.chunks_exact(LANES));
    let tail: f32 = xs
        .remainder()
        .iter()
        .zip(bs.remainder())
        .map(|(x, b)| x * f32::from(*b as i8))
        .sum();
    for (x, b) in xs.zip(bs) {
        for ((sum, x), b) in sums.iter_mut().zip(x).zip(b) {
            *sum += x * f32::from(*b as i8);
        }
    }
    sums.iter().sum::<f32>() + tail
}

/// Running sums of [`dot_q8`].
const LANES: usize = 16;

/// The semantic index worker: a vector for each fact learned, removed when it is superseded.
#[derive(Clone)]
pub struct SemanticIndex {
    embedder: std::sync::Arc<dyn Embedder>,
}

impl SemanticIndex {
    /// An index made with `embedder`.
    pub fn new(embedder: std::sync::Arc<dyn Embedder>) -> Self {
        Self { embedder }
    }
}

/// The text a fact is indexed by: its statement (or, for a fact without one, its payload).
fn fact_text(event: &Envelope) -> String {
    event
        .payload
        .get("statement")
        .and_then(Value::as_str)
        .map_or_else(|| event.payload.to_string(), str::to_string)
}

impl Deriver for SemanticIndex {
    type Prepared = Option<Result<Vec<f32>, EmbedError>>;

    fn schema(&self) -> &'static str {
        SCHEMA
    }

    fn prepare<'a>(&'a self, event: &'a Envelope) -> BoxFuture<'a, Self::Prepared> {
        Box::pin(async move {
            if event.kind != EventKind::FactLearned {
                return None;
            }
            Some(embed_one(&*self.embedder, fact_text(event)).await)
        })
    }

    /// The batch's facts embedded in one call (a model reads them many at a time).
    fn prepare_all<'a>(&'a self, events: &'a [Envelope]) -> BoxFuture<'a, Vec<Self::Prepared>> {
        Box::pin(async move {
            let facts: Vec<String> = events
                .iter()
                .filter(|e| e.kind == EventKind::FactLearned)
                .map(fact_text)
                .collect();
            let mut vectors = match facts.is_empty() {
                true => Ok(Vec::new()),
                false => embed_each(&*self.embedder, &facts).await,
            }
            .map(Vec::into_iter);
            events
                .iter()
                .map(|e| {
                    (e.kind == EventKind::FactLearned).then(|| match &mut vectors {
                        Ok(v) => Ok(v.next().expect("one vector per fact")),
                        Err(e) => Err(EmbedError(e.0.clone())),
                    })
                })
                .collect()
        })
    }

    fn derive(
        &self,
        tx: &Transaction<'_>,
        seq: u64,
        event: &Envelope,
        prepared: Self::Prepared,
    ) -> rusqlite::Result<Derived> {
        match (&event.kind, prepared) {
            (EventKind::FactLearned, Some(Ok(vector))) => {
                store(tx, event, seq, self.embedder.name(), &vector)?;
                Ok(Derived::default())
            }
            (EventKind::FactLearned, Some(Err(e))) => Ok(Derived {
                events: Vec::new(),
                problem: Some(e.to_string()),
            }),
            (EventKind::FactSuperseded, _) => {
                if let Ok(gone) = event.payload::<FactSuperseded>() {
                    tx.execute("DELETE FROM vectors8 WHERE event_id = ?1", [gone.fact])?;
                }
                Ok(Derived::default())
            }
            _ => Ok(Derived::default()),
        }
    }
}

/// Stores the vector of the fact `event` (stream sequence `seq`) made by `embedder`. Public
/// for `iron bench memory` (`crate::bench::memory`), which builds an index of a generated
/// corpus row by row, as the semantic worker writes it.
pub fn store(
    conn: &Connection,
    event: &Envelope,
    seq: u64,
    embedder: &str,
    vector: &[f32],
) -> rusqlite::Result<()> {
    let (scale, bytes) = quantise(vector);
    conn.prepare_cached(
        "INSERT OR REPLACE INTO vectors8(embedder, namespace, event_id, tenant, seq, scale, vector)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
    )?
    .execute(params![
        embedder,
        event.namespace_path(),
        event.event_id.as_str(),
        event.tenant,
        seq as i64,
        f64::from(scale),
        bytes
    ])
    .map(drop)
}

/// The facts nearest to `query` in the index at `path` (read-only), best first, with their
/// cosine similarity: only vectors made by `embedder`, under `filter`'s prefix and tenant.
pub fn nearest(
    path: &Path,
    embedder: &str,
    query: &[f32],
    filter: &RecallFilter,
    k: usize,
) -> Result<Vec<(String, f32)>, rusqlite::Error> {
    let conn = Connection::open_with_flags(path, OpenFlags::SQLITE_OPEN_READ_ONLY)?;
    conn.busy_timeout(std::time::Duration::from_secs(5))?;
    // The scope as a range of the (embedder, namespace) index — from `prefix` up to
    // `prefix0` ('0' follows '/') — then exactly: the prefix itself or below it.
    let prefix = filter
        .prefix
        .as_deref()
        .map(|p| p.trim_end_matches('/'))
        .unwrap_or("");
    let scope = if prefix.is_empty() {
        "?2 = ''".to_string()
    } else {
        format!(
            "namespace >= ?2 AND namespace < ?2 || '0' AND {}",
            super::recall::under("namespace", "?2")
        )
    };
    let mut stmt = conn.prepare(&format!(
        "SELECT scale, vector, event_id FROM vectors8
         WHERE embedder = ?1 AND {scope} AND (?3 IS NULL OR tenant = ?3)"
    ))?;
    // Scored in place, from the row's own bytes; only a vector that enters the best `k` has
    // its id copied.
    let mut best: Vec<(f32, String)> = Vec::with_capacity(k + 1);
    let mut worst = f32::NEG_INFINITY;
    let mut rows = stmt.query(params![embedder, prefix, filter.tenant])?;
    while let Some(r) = rows.next()? {
        let score = r.get::<_, f64>(0)? as f32 * dot_q8(query, r.get_ref(1)?.as_blob()?);
        if best.len() == k && score <= worst {
            continue;
        }
        best.push((score, r.get_ref(2)?.as_str()?.to_string()));
        if best.len() > k {
            let (at, _) = best
                .iter()
                .enumerate()
                .min_by(|a, b| a.1.0.total_cmp(&b.1.0))
                .expect("not empty");
            best.swap_remove(at);
        }
        if best.len() == k {
            worst = best.iter().map(|b| b.0).fold(f32::INFINITY, f32::min);
        }
    }
    best.sort_by(|a, b| b.0.total_cmp(&a.0));
    Ok(best.into_iter().map(|(score, id)| (id, score)).collect())
}

/// How many vectors the index at `path` holds, by embedder (`None`: it is not a semantic
/// index).
pub fn indexed(path: &Path) -> Option<Vec<(String, u64)>> {
    let conn = Connection::open_with_flags(path, OpenFlags::SQLITE_OPEN_READ_ONLY).ok()?;
    let mut stmt = conn
        .prepare("SELECT embedder, count(*) FROM vectors8 GROUP BY embedder ORDER BY embedder")
        .ok()?;
    let rows = stmt
        .query_map([], |r| Ok((r.get(0)?, r.get::<_, i64>(1)? as u64)))
        .ok()?;
    rows.collect::<Result<_, _>>().ok()
}

/// A query embedded, with the name of the embedder that made it: only vectors of that
/// embedder are compared with it.
#[derive(Debug, Clone)]
pub struct QueryVector {
    /// The embedder's name (`hashing-256-v1`, `openai/<model>`).
    pub embedder: String,
    /// The query's vector.
    pub vector: Vec<f32>,
}

/// The vector of one text.
/// `texts` embedded by `embedder`, refused unless it gave exactly one vector per text (the
/// port's promise, checked once here for every caller that pairs vectors with their texts).
pub async fn embed_each(
    embedder: &dyn Embedder,
    texts: &[String],
) -> Result<Vec<Vec<f32>>, EmbedError> {
    let vectors = embedder.embed(texts).await?;
    match vectors.len() {
        n if n == texts.len() => Ok(vectors),
        n => Err(EmbedError(format!(
            "{} answered {n} vectors for {} texts",
            embedder.name(),
            texts.len()
        ))),
    }
}

async fn embed_one(embedder: &dyn Embedder, text: String) -> Result<Vec<f32>, EmbedError> {
    embedder
        .embed(&[text])
        .await?
        .pop()
        .ok_or_else(|| EmbedError("no vector".into()))
}

/// Embeds `query` with `embedder` for [`hybrid`], waiting at most `limit` (an embedding server
/// that hangs must not hold up a wake for its whole retry schedule).
pub async fn embed_query(
    embedder: &dyn Embedder,
    query: &str,
    limit: std::time::Duration,
) -> Result<QueryVector, EmbedError> {
    let vector = tokio::time::timeout(limit, embed_one(embedder, query.to_string()))
        .await
        .map_err(|_| {
            EmbedError(format!(
                "{} gave no vector within {limit:?}",
                embedder.name()
            ))
        })??;
    Ok(QueryVector {
        embedder: embedder.name().to_string(),
        vector,
    })
}

/// Reciprocal-rank fusion constant: how much a lower rank still counts.
const RRF_K: f32 = 60.0;

/// Hybrid recall: full-text (any word) and vector results under `filter`, fused by
/// reciprocal rank; the best `filter.limit` (0: 50) current events, read from the projection.
/// Only vectors of the embedder that made `vector` take part; without them (no index at
/// `semantic`, one made by another embedder, or no query vector) it is full-text recall.
pub fn hybrid(
    projection: &Recall,
    semantic: &Path,
    query: &str,
    vector: Option<&QueryVector>,
    filter: &RecallFilter,
) -> Result<Vec<Recalled>, RecallError> {
    hybrid_timed(
        projection,
        semantic,
        query,
        vector,
        filter,
        &mut HybridPhases::default(),
    )
}

/// Where one [`hybrid`] recall's time went, phase by phase (`iron bench memory` prints them).
#[derive(Debug, Clone, Copy, Default)]
pub struct HybridPhases {
    /// Choosing the query's informative words (their counts in the projection's `word_docs`).
    pub words: std::time::Duration,
    /// The full-text search under the scope.
    pub fulltext: std::time::Duration,
    /// The nearest vectors under the scope.
    pub vectors: std::time::Duration,
    /// Fusing the two rankings and reading the events back.
    pub fuse: std::time::Duration,
}

/// [`hybrid`], adding each phase's time to `phases`.
pub fn hybrid_timed(
    projection: &Recall,
    semantic: &Path,
    query: &str,
    vector: Option<&QueryVector>,
    filter: &RecallFilter,
    phases: &mut HybridPhases,
) -> Result<Vec<Recalled>, RecallError> {
    let limit = if filter.limit == 0 { 50 } else { filter.limit };
    let wide = RecallFilter {
        limit: limit * 4,
        ..filter.clone()
    };
    let t = std::time::Instant::now();
    let words = projection.informative_words(query)?;
    phases.words += t.elapsed();
    let t = std::time::Instant::now();
    let text = projection.search_any(&words, &wide)?;
    phases.fulltext += t.elapsed();
    let t = std::time::Instant::now();
    let vectors = if let Some(q) = vector.filter(|_| semantic.is_file()) {
        nearest(semantic, &q.embedder, &q.vector, &wide, limit * 4).unwrap_or_else(|e| {
            tracing::debug!("no vector recall from {}: {e}", semantic.display());
            Vec::new()
        })
    } else {
        Vec::new()
    };
    phases.vectors += t.elapsed();
    let t = std::time::Instant::now();
    let mut score: std::collections::HashMap<String, f32> = std::collections::HashMap::new();
    for (rank, r) in text.iter().enumerate() {
        *score.entry(r.event_id.clone()).or_default() += 1.0 / (RRF_K + rank as f32 + 1.0);
    }
    for (rank, (id, _)) in vectors.iter().enumerate() {
        *score.entry(id.clone()).or_default() += 1.0 / (RRF_K + rank as f32 + 1.0);
    }
    let mut ids: Vec<(String, f32)> = score.into_iter().collect();
    ids.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    // Best first, read until `limit` are allowed (an id may name a superseded fact, or one of
    // another kind or tenant).
    let found = projection.first_by_ids(ids.iter().map(|(id, _)| id.as_str()), filter, limit)?;
    phases.fuse += t.elapsed();
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cos(a: &str, b: &str) -> f32 {
        dot(&HashingEmbedder::vector(a), &HashingEmbedder::vector(b))
    }

    #[test]
    fn the_offline_embedding_is_near_for_shared_stems_and_far_otherwise() {
        let v = HashingEmbedder::vector("Basements flooded on Quay Street");
        assert!((dot(&v, &v) - 1.0).abs() < 1e-5, "unit length");
        assert_eq!(
            v,
            HashingEmbedder::vector("Basements flooded on Quay Street")
        );
        let near = cos(
            "flooding on quay street",
            "Basements flooded on Quay Street",
        );
        let far = cos("ferry engine fault", "Basements flooded on Quay Street");
        assert!(near > 0.4 && far < 0.2, "near {near}, far {far}");
        assert!(HashingEmbedder::vector("").iter().all(|x| *x == 0.0));
        let (scale, bytes) = quantise(&v);
        assert!(
            (scale * dot_q8(&v, &bytes) - dot(&v, &v)).abs() < 0.01,
            "close to 1"
        );
    }

    #[test]
    fn hybrid_recall_finds_near_words_within_the_scope_and_only_current_facts() {
        use crate::memory::projector;
        let dir = tempfile::tempdir().unwrap();
        let (db, index) = (dir.path().join("p.db"), dir.path().join("s.db"));
        let fact = |ns: &[&str], text: &str| {
            Envelope::new(
                "t",
                ns.iter().copied(),
                "x",
                EventKind::FactLearned,
                serde_json::json!({"statement": text}),
            )
        };
        let bridge = fact(&["facts", "n", "a"], "Harbour bridge closed to traffic");
        let nested = fact(&["facts", "n", "a", "sub"], "Harbour bridge reopens");
        let sibling = fact(&["facts", "n", "ab"], "Harbour bridge closed to traffic");
        let old = fact(&["facts", "n", "a"], "Harbour bridge open");
        let gone = Envelope::new(
            "t",
            ["facts", "n", "a"],
            "memory/consolidator",
            EventKind::FactSuperseded,
            serde_json::json!({"fact": old.event_id.as_str(), "by": bridge.event_id.as_str(),
                               "reason": "replaced"}),
        );
        let events = [&bridge, &nested, &sibling, &old, &gone];
        projector::project_for_test(&db, &events);
        let state = crate::memory::worker::open_state(&index, SCHEMA).unwrap();
        for (e, seq) in events[..4].iter().zip(1..) {
            let fact: crate::protocol::payload::FactLearned = e.payload().unwrap();
            let v = HashingEmbedder::vector(&fact.statement.unwrap());
            store(&state, e, seq, HashingEmbedder::NAME, &v).unwrap();
        }
        let recall = Recall::open(&db).unwrap();
        let filter = RecallFilter {
            prefix: Some("facts/n/a".into()),
            ..RecallFilter::default()
        };
        assert!(
            recall
                .recall_any("harbor bridges", &filter)
                .unwrap()
                .is_empty()
        );
        let q = HashingEmbedder::query("harbor bridges");
        let found: Vec<String> = hybrid(&recall, &index, "harbor bridges", Some(&q), &filter)
            .unwrap()
            .into_iter()
            .map(|r| r.namespace)
            .collect();
        assert_eq!(found.len(), 2, "{found:?}");
        assert!(
            found
                .iter()
                .all(|ns| ns == "facts/n/a" || ns == "facts/n/a/sub")
        );
        // Without an index, or with vectors of another embedder, it is full-text recall.
        let q = HashingEmbedder::query("harbour");
        let none = hybrid(
            &recall,
            &dir.path().join("missing.db"),
            "harbour",
            Some(&q),
            &filter,
        );
        assert_eq!(
            none.unwrap().len(),
            2,
            "the current fact and the nested one"
        );
        let other = QueryVector {
            embedder: "openai/other".into(),
            ..HashingEmbedder::query("harbor bridges")
        };
        let text_only = hybrid(&recall, &index, "harbor bridges", Some(&other), &filter);
        assert!(text_only.unwrap().is_empty());
    }

    #[test]
    fn an_index_of_the_first_layout_is_dropped_and_rebuilt_from_the_log() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("semantic.db");
        {
            let conn = crate::memory::worker::open_state(&path, "").unwrap();
            conn.execute_batch(
                "CREATE TABLE vectors(event_id TEXT PRIMARY KEY, tenant TEXT NOT NULL,
                   namespace TEXT NOT NULL, seq INTEGER NOT NULL, embedder TEXT NOT NULL,
                   vector BLOB NOT NULL);
                 INSERT INTO cursor(stream, last_seq) VALUES ('MEM', 42);",
            )
            .unwrap();
        }
        let conn = crate::memory::worker::open_state(&path, SCHEMA).unwrap();
        let tables: Vec<String> = conn
            .prepare("SELECT name FROM sqlite_master WHERE name LIKE 'vectors%' AND type = 'table'")
            .unwrap()
            .query_map([], |r| r.get(0))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(tables, ["vectors8"]);
        let cursor: i64 = conn
            .query_row("SELECT count(*) FROM cursor", [], |r| r.get(0))
            .unwrap();
        assert_eq!(cursor, 0, "read again from the start of the log");
        // Opened again, the new index is kept.
        drop(conn);
        let conn = crate::memory::worker::open_state(&path, SCHEMA).unwrap();
        conn.execute("INSERT INTO cursor(stream, last_seq) VALUES ('MEM', 7)", [])
            .unwrap();
        drop(conn);
        let conn = crate::memory::worker::open_state(&path, SCHEMA).unwrap();
        let kept: i64 = conn
            .query_row("SELECT last_seq FROM cursor", [], |r| r.get(0))
            .unwrap();
        assert_eq!(kept, 7);
    }
}
