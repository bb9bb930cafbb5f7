//! Recall and replay: readers of `projection.db`. The database is opened read-only
//! (`SQLITE_OPEN_READ_ONLY` and `PRAGMA query_only`), so a reader can never write.

use std::path::{Path, PathBuf};

use rusqlite::{Connection, OpenFlags, OptionalExtension, params};

use super::projector::any_words;

/// Why a read failed.
#[derive(Debug, thiserror::Error)]
pub enum RecallError {
    /// The projection database cannot be opened or queried.
    #[error(
        "projection {path}: {source}; is the projector running and has it created the database?"
    )]
    Database {
        /// Path.
        path: PathBuf,
        /// Cause.
        #[source]
        source: rusqlite::Error,
    },
}

/// Which events recall searches.
#[derive(Debug, Clone, Default)]
pub struct RecallFilter {
    /// Namespace prefix as `facts/newsroom`; matches that namespace and everything below it.
    pub prefix: Option<String>,
    /// Only this kind (wire name, `fact_learned`).
    pub kind: Option<String>,
    /// Only this tenant.
    pub tenant: Option<String>,
    /// At most this many results (0 = 50).
    pub limit: usize,
    /// Also facts that are no longer believed (superseded by a newer or an earlier equal
    /// one) and the `fact_superseded` events that say so. Without it, recall returns the
    /// current beliefs only.
    pub history: bool,
}

/// One event read back from the projection.
#[derive(Debug, Clone, PartialEq)]
pub struct Recalled {
    /// Stream sequence it was projected from.
    pub seq: u64,
    /// Event id.
    pub event_id: String,
    /// Capture time (ms since the epoch).
    pub ts: u64,
    /// Tenant.
    pub tenant: String,
    /// Namespace joined with `/`.
    pub namespace: String,
    /// Writer.
    pub actor: String,
    /// Kind (wire name).
    pub kind: String,
    /// Payload as JSON text.
    pub payload: String,
}

/// Opens `path` read-only and makes the connection refuse writes (`query_only`).
pub fn open_read_only(path: &Path) -> Result<Connection, RecallError> {
    let err = |source| RecallError::Database {
        path: path.to_path_buf(),
        source,
    };
    let conn = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .map_err(err)?;
    conn.pragma_update(None, "query_only", true).map_err(err)?;
    conn.busy_timeout(std::time::Duration::from_secs(5))
        .map_err(err)?;
    Ok(conn)
}

/// A read-only view of the projection.
pub struct Recall {
    conn: Connection,
    path: PathBuf,
}

/// Turns free text into an FTS5 query that cannot be a syntax error: each word quoted, all
/// required.
fn fts_query(text: &str) -> String {
    text.split_whitespace()
        .map(|word| format!("\"{}\"", word.replace('"', "\"\"")))
        .collect::<Vec<_>>()
        .join(" ")
}

/// `words` as an FTS5 query that matches any of them (`None` when there is none).
fn fts_any(words: &[String]) -> Option<String> {
    let quoted: Vec<String> = words.iter().map(|w| format!("\"{w}\"")).collect();
    (!quoted.is_empty()).then(|| quoted.join(" OR "))
}

/// A word held by more events than this share of the projection (and than [`COMMON_FLOOR`])
/// tells an any-word search little and costs it most: it is left out.
const COMMON_SHARE: u64 = 20;
/// Below this many events no word is left out (a small memory ranks every word).
const COMMON_FLOOR: u64 = 1_000;
/// Words kept when every word is common: the rarest.
const RAREST_KEPT: usize = 2;

/// How often an expert's tasks were judged answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Score {
    /// `<mesh>/<role>`.
    pub domain: String,
    /// Tasks judged answered.
    pub answered: u64,
    /// Tasks judged.
    pub judged: u64,
}

/// SQL that holds when the namespace column `col` is the prefix bound to `param` or below it
/// (`facts/n` covers `facts/n` and `facts/n/a`, never `facts/nx`).
pub(crate) fn under(col: &str, param: &str) -> String {
    format!("({col} = {param} OR substr({col}, 1, length({param}) + 1) = {param} || '/')")
}

const COLUMNS: &str = "e.seq, e.event_id, e.ts, e.tenant, e.namespace, e.actor, e.kind, e.payload";

fn row(row: &rusqlite::Row<'_>) -> rusqlite::Result<Recalled> {
    Ok(Recalled {
        seq: row.get::<_, i64>(0)? as u64,
        event_id: row.get(1)?,
        ts: row.get::<_, i64>(2)? as u64,
        tenant: row.get(3)?,
        namespace: row.get(4)?,
        actor: row.get(5)?,
        kind: row.get(6)?,
        payload: row.get(7)?,
    })
}

impl Recall {
    /// Opens the projection at `path` read-only.
    pub fn open(path: impl AsRef<Path>) -> Result<Self, RecallError> {
        let path = path.as_ref().to_path_buf();
        Ok(Self {
            conn: open_read_only(&path)?,
            path,
        })
    }

    fn err(&self) -> impl Fn(rusqlite::Error) -> RecallError + '_ {
        |source| RecallError::Database {
            path: self.path.clone(),
            source,
        }
    }

    /// Full-text search over payloads and results (every word must appear), best match first.
    pub fn recall(&self, query: &str, filter: &RecallFilter) -> Result<Vec<Recalled>, RecallError> {
        self.search(&fts_query(query), filter)
    }

    /// Like [`Recall::recall`], but an event matches when it holds any of the query's words
    /// (of four letters or more, which leaves out most filler words), best match first.
    pub fn recall_any(
        &self,
        query: &str,
        filter: &RecallFilter,
    ) -> Result<Vec<Recalled>, RecallError> {
        self.search_any(&self.informative_words(query)?, filter)
    }

    /// The words of `query` an any-word search looks for: [`any_words`] without those most
    /// events hold (see [`Recall::recall_any`]).
    pub(crate) fn informative_words(&self, query: &str) -> Result<Vec<String>, RecallError> {
        self.informative(any_words(query))
    }

    /// Events that hold any of `words` (from [`Recall::informative_words`]) under `filter`,
    /// best match first.
    pub(crate) fn search_any(
        &self,
        words: &[String],
        filter: &RecallFilter,
    ) -> Result<Vec<Recalled>, RecallError> {
        match fts_any(words) {
            Some(any) => self.search(&any, filter),
            None => Ok(Vec::new()),
        }
    }

    /// `words` without those most events hold (see [`COMMON_SHARE`]), and without those no
    /// event holds; the rarest [`RAREST_KEPT`] when every word is common. Each word's count is
    /// one lookup in the projector's `word_docs`. Unchanged when the projection has no word
    /// counts (one made before them, until the projector opens it).
    fn informative(&self, words: Vec<String>) -> Result<Vec<String>, RecallError> {
        let Ok(mut count) = self
            .conn
            .prepare_cached("SELECT docs FROM word_docs WHERE term = ?1")
        else {
            return Ok(words);
        };
        let total: u64 = self
            .conn
            .query_row("SELECT coalesce(max(rowid), 0) FROM events_fts", [], |r| {
                r.get::<_, i64>(0)
            })
            .map_err(self.err())? as u64;
        let common = (total / COMMON_SHARE).max(COMMON_FLOOR);
        let mut held: Vec<(u64, String)> = Vec::with_capacity(words.len());
        for word in words {
            let docs: Option<i64> = count
                .query_row([&word], |r| r.get(0))
                .optional()
                .map_err(self.err())?;
            if let Some(docs) = docs.filter(|d| *d > 0) {
                held.push((docs as u64, word));
            }
        }
        held.sort();
        let rare = held.iter().take_while(|(docs, _)| *docs <= common).count();
        held.truncate(if rare == 0 { RAREST_KEPT } else { rare });
        Ok(held.into_iter().map(|(_, w)| w).collect())
    }

    /// Runs the FTS5 expression `matching` (over payloads and results) under `filter`, best
    /// match first. A prefix narrows the search inside the index (its scope token, which every
    /// event at or below it holds) before anything is ranked; the exact prefix test follows in
    /// SQL.
    fn search(&self, matching: &str, filter: &RecallFilter) -> Result<Vec<Recalled>, RecallError> {
        if matching.trim().is_empty() {
            return Ok(Vec::new()); // no word to look for
        }
        let limit = if filter.limit == 0 { 50 } else { filter.limit };
        let prefix = filter
            .prefix
            .as_deref()
            .map(|p| p.trim_end_matches('/'))
            .filter(|p| !p.is_empty());
        let matching = match prefix {
            Some(p) => format!(
                "ns : {} AND body : ({matching})",
                super::projector::scope_token(p)
            ),
            None => format!("body : ({matching})"),
        };
        let scope = under("e.namespace", "?2");
        let sql = format!(
            "SELECT {COLUMNS} FROM events_fts f JOIN events e ON e.event_id = f.event_id
             WHERE events_fts MATCH ?1
               AND (?2 IS NULL OR {scope})
               AND (?3 IS NULL OR e.kind = ?3)
               AND (?4 IS NULL OR e.tenant = ?4)
               AND (?6 OR (e.kind <> 'fact_superseded'
                    AND NOT EXISTS (SELECT 1 FROM superseded s WHERE s.fact_id = e.event_id)))
             ORDER BY f.rank LIMIT ?5"
        );
        let mut stmt = self.conn.prepare(&sql).map_err(self.err())?;
        let rows = stmt
            .query_map(
                params![
                    matching,
                    prefix,
                    filter.kind,
                    filter.tenant,
                    limit as i64,
                    filter.history
                ],
                row,
            )
            .map_err(self.err())?;
        rows.collect::<Result<_, _>>().map_err(self.err())
    }

    /// The events with these ids that `filter`'s prefix, kind, tenant and history allow, in
    /// no particular order.
    pub fn by_ids<'a>(
        &self,
        ids: impl IntoIterator<Item = &'a str>,
        filter: &RecallFilter,
    ) -> Result<Vec<Recalled>, RecallError> {
        self.first_by_ids(ids, filter, usize::MAX)
    }

    /// Like [`Recall::by_ids`], in the order of `ids`, stopping at the first `n` allowed (the
    /// ids after them are not read).
    pub fn first_by_ids<'a>(
        &self,
        ids: impl IntoIterator<Item = &'a str>,
        filter: &RecallFilter,
        n: usize,
    ) -> Result<Vec<Recalled>, RecallError> {
        let scope = under("e.namespace", "?2");
        let sql = format!(
            "SELECT {COLUMNS} FROM events e
             WHERE e.event_id = ?1
               AND (?2 IS NULL OR {scope})
               AND (?3 IS NULL OR e.kind = ?3)
               AND (?4 IS NULL OR e.tenant = ?4)
               AND (?5 OR (e.kind <> 'fact_superseded'
                    AND NOT EXISTS (SELECT 1 FROM superseded s WHERE s.fact_id = e.event_id)))"
        );
        let mut stmt = self.conn.prepare_cached(&sql).map_err(self.err())?;
        let prefix = filter.prefix.as_deref().map(|p| p.trim_end_matches('/'));
        let mut found = Vec::new();
        for id in ids {
            if found.len() >= n {
                break;
            }
            let mut rows = stmt
                .query_map(
                    params![id, prefix, filter.kind, filter.tenant, filter.history],
                    row,
                )
                .map_err(self.err())?;
            if let Some(r) = rows.next() {
                found.push(r.map_err(self.err())?);
            }
        }
        Ok(found)
    }

    /// The newest `limit` events of `kind` in exactly `namespace`, oldest first.
    pub fn latest(
        &self,
        namespace: &str,
        kind: &str,
        limit: usize,
    ) -> Result<Vec<Recalled>, RecallError> {
        let sql = format!(
            "SELECT * FROM (SELECT {COLUMNS} FROM events e
             WHERE e.namespace = ?1 AND e.kind = ?2 ORDER BY e.seq DESC LIMIT ?3)
             ORDER BY seq"
        );
        let mut stmt = self.conn.prepare(&sql).map_err(self.err())?;
        let rows = stmt
            .query_map(params![namespace, kind, limit as i64], row)
            .map_err(self.err())?;
        rows.collect::<Result<_, _>>().map_err(self.err())
    }

    /// Each expert's record from `task_judged` events: how many of its tasks were judged
    /// answered, of how many judged; best record first.
    pub fn scorecard(&self, tenant: &str) -> Result<Vec<Score>, RecallError> {
        let mut stmt = self
            .conn
            .prepare(
                "SELECT json_extract(payload, '$.domain') AS domain,
                        sum(coalesce(json_extract(payload, '$.answered'), 0)), count(*)
                 FROM events WHERE kind = 'task_judged' AND tenant = ?1 AND domain IS NOT NULL
                 GROUP BY domain ORDER BY 2 DESC, 3 DESC, domain",
            )
            .map_err(self.err())?;
        let rows = stmt
            .query_map([tenant], |r| {
                Ok(Score {
                    domain: r.get(0)?,
                    answered: r.get::<_, i64>(1)? as u64,
                    judged: r.get::<_, i64>(2)? as u64,
                })
            })
            .map_err(self.err())?;
        rows.collect::<Result<_, _>>().map_err(self.err())
    }

    /// The newest `limit` lessons (`lesson_learned`) of `tenant` in namespace `prefix` or below
    /// it, newest first.
    pub fn lessons(
        &self,
        prefix: &str,
        tenant: &str,
        limit: usize,
    ) -> Result<Vec<Recalled>, RecallError> {
        let prefix = prefix.trim_end_matches('/');
        let scope = under("e.namespace", "?1");
        let sql = format!(
            "SELECT {COLUMNS} FROM events e
             WHERE e.kind = 'lesson_learned' AND e.tenant = ?2
               AND {scope}
             ORDER BY e.seq DESC LIMIT ?3"
        );
        let mut stmt = self.conn.prepare(&sql).map_err(self.err())?;
        let rows = stmt
            .query_map(params![prefix, tenant, limit as i64], row)
            .map_err(self.err())?;
        rows.collect::<Result<_, _>>().map_err(self.err())
    }

    /// Every event whose namespace is `prefix` or below it (empty prefix: all), in log order.
    pub fn replay(&self, prefix: &str) -> Result<Vec<Recalled>, RecallError> {
        let prefix = prefix.trim_end_matches('/');
        let scope = under("e.namespace", "?1");
        let sql = format!(
            "SELECT {COLUMNS} FROM events e
             WHERE ?1 = '' OR {scope}
             ORDER BY e.seq"
        );
        let mut stmt = self.conn.prepare(&sql).map_err(self.err())?;
        let rows = stmt.query_map([prefix], row).map_err(self.err())?;
        rows.collect::<Result<_, _>>().map_err(self.err())
    }

    /// The last stream sequence projected (0 before the first).
    pub fn projected_seq(&self, stream: &str) -> Result<u64, RecallError> {
        self.conn
            .query_row(
                "SELECT last_seq FROM cursor WHERE stream = ?1",
                [stream],
                |r| r.get::<_, i64>(0),
            )
            .optional()
            .map(|s| s.unwrap_or(0) as u64)
            .map_err(self.err())
    }

    /// Number of events in the projection.
    pub fn count(&self) -> Result<u64, RecallError> {
        self.conn
            .query_row("SELECT count(*) FROM events", [], |r| r.get::<_, i64>(0))
            .map(|n| n as u64)
            .map_err(self.err())
    }

    /// Messages the projector skipped: `(seq, subject, reason)`.
    pub fn skipped(&self) -> Result<Vec<(u64, String, String)>, RecallError> {
        let mut stmt = self
            .conn
            .prepare("SELECT seq, subject, reason FROM skipped ORDER BY seq")
            .map_err(self.err())?;
        let rows = stmt
            .query_map([], |r| {
                Ok((r.get::<_, i64>(0)? as u64, r.get(1)?, r.get(2)?))
            })
            .map_err(self.err())?;
        rows.collect::<Result<_, _>>().map_err(self.err())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::envelope::Envelope;
    use crate::core::event_kind::EventKind;
    use crate::memory::projector;

    #[test]
    fn relevance_queries_match_any_real_word() {
        let words = any_words("Is the bridge closed? The BRIDGE is.");
        assert_eq!(words, ["bridge", "closed"]);
        assert_eq!(fts_any(&words).as_deref(), Some("\"bridge\" OR \"closed\""));
        assert_eq!(fts_any(&any_words("a b ?")), None);
    }

    #[test]
    fn any_word_recall_leaves_out_words_most_events_hold() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("projection.db");
        // 1,200 events: every one says "harbour", every third "closed", one "drawbridge"; all
        // but the first 50 "street", all but the first 100 "river".
        let events: Vec<Envelope> = (0..1_200u64)
            .map(|i| {
                let mut text = match i {
                    7 => "harbour drawbridge".to_string(),
                    _ if i % 3 == 0 => format!("harbour closed {i}"),
                    _ => format!("harbour open {i}"),
                };
                if i >= 50 {
                    text.push_str(" street");
                }
                if i >= 100 {
                    text.push_str(" river");
                }
                fact(&text)
            })
            .collect();
        projector::project_for_test(&db, &events.iter().collect::<Vec<_>>());
        let recall = Recall::open(&db).unwrap();
        let words = |q: &str| recall.informative(any_words(q)).unwrap();
        // "harbour" (all 1,200) is past both the share and the floor; "closed" (400) is not
        // past the floor; "drawbridge" is rare; "nowhere" is in no event.
        assert_eq!(
            words("harbour drawbridge closed nowhere"),
            ["drawbridge", "closed"]
        );
        assert_eq!(words("harbour"), ["harbour"], "the rarest kept");
        assert_eq!(words("harbour drawbridge"), ["drawbridge"]);
        // All three common: the two held by the fewest events, by their full counts.
        assert_eq!(words("harbour street river"), ["river", "street"]);
        let found = recall
            .recall_any("harbour drawbridge", &RecallFilter::default())
            .unwrap();
        assert_eq!(found.len(), 1, "{found:?}");
        drop(recall);

        // A projection made before the counts: every word is kept until the projector opens
        // it, which counts them from the full-text index.
        Connection::open(&db)
            .unwrap()
            .execute_batch("DROP TABLE word_docs")
            .unwrap();
        let before = Recall::open(&db).unwrap();
        assert_eq!(
            before.informative(any_words("harbour drawbridge")).unwrap(),
            ["drawbridge", "harbour"]
        );
        drop(projector::open_writer(&db).unwrap());
        let after = Recall::open(&db).unwrap();
        assert_eq!(
            after
                .informative(any_words("harbour drawbridge closed nowhere"))
                .unwrap(),
            ["drawbridge", "closed"]
        );
        assert_eq!(
            after
                .informative(any_words("harbour street river"))
                .unwrap(),
            ["river", "street"]
        );
    }

    /// A fact stating `text` in `facts/n`.
    fn fact(text: &str) -> Envelope {
        Envelope::new(
            "t",
            ["facts", "n"],
            "a",
            EventKind::FactLearned,
            serde_json::json!({ "statement": text }),
        )
    }

    #[test]
    fn words_with_diacritics_are_counted_as_the_index_folds_them() {
        assert_eq!(
            any_words("Café Zürich, Ñandú no"),
            ["cafe", "nandu", "zurich"]
        );
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("projection.db");
        let (accented, plain) = (fact("Zürich café reopens"), fact("Zurich cafe closes"));
        projector::project_for_test(&db, &[&accented, &plain]);
        let recall = Recall::open(&db).unwrap();
        assert_eq!(
            recall.informative(any_words("café reopens")).unwrap(),
            ["reopens", "cafe"],
            "both events hold the folded word"
        );
        let found = recall
            .recall_any("Zürich", &RecallFilter::default())
            .unwrap();
        assert_eq!(found.len(), 2, "{found:?}");
    }

    #[test]
    fn free_text_becomes_a_safe_fts_query() {
        assert_eq!(fts_query("flood warning"), "\"flood\" \"warning\"");
        assert_eq!(fts_query("say \"hi\""), "\"say\" \"\"\"hi\"\"\"");
    }
}
