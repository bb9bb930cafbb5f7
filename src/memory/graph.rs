//! The knowledge graph (`/iron/memory/graph`): who and what the facts name, in the worker's own
//! database (`memory/graph.db`). For each fact learned it records the entities the fact names
//! literally — the outlets a bulletin claim cites (`source`: who said it), the subject a model
//! read (`subject`: what it is about), and the proper nouns of its sentence (`mentioned`: who,
//! what and where) — and which fact names each, so [`about`] can answer "what do we know about
//! the Port of Leith, and what else comes up with it". Nothing is invented: a name is only ever
//! a run of words present in the fact. A proper noun is a maximal run of capitalised words that
//! may hold `of`, `the`, `de` and `and` inside it ("Port of Leith"); a common word capitalised
//! only because it starts a sentence ("The", "Confirmed") is none, nor is a number. A claim's
//! statement is read after its "Confirmed by <outlets>: " prefix; a tool result (JSON) and the
//! `claim/…` and `tool/…` subjects name nothing.
//!
//! It writes no events. Like every worker it is rebuilt from the log: its tables are derived
//! state. It never forgets a fact; [`about`] reads the facts back through the projection, which
//! returns only the current ones in the caller's scope.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};

use crate::protocol::payload::FactLearned;
use rusqlite::{Connection, OpenFlags, Transaction, params};

use super::recall::{Recall, RecallError, RecallFilter, Recalled};
use super::worker::{Derived, Deriver};
use crate::core::envelope::Envelope;

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS entities(
    tenant TEXT NOT NULL, key TEXT NOT NULL, name TEXT NOT NULL, PRIMARY KEY(tenant, key));
CREATE TABLE IF NOT EXISTS mentions(
    tenant TEXT NOT NULL, key TEXT NOT NULL, fact_id TEXT NOT NULL, namespace TEXT NOT NULL,
    role TEXT NOT NULL, seq INTEGER NOT NULL, PRIMARY KEY(tenant, key, fact_id, role));
CREATE INDEX IF NOT EXISTS mentions_fact ON mentions(fact_id);
";

/// Lowercase words that may join the capitalised words of one name ("Port of Leith").
const CONNECTORS: [&str; 4] = ["of", "the", "de", "and"];
/// Common words that are capitalised only because they start a sentence (compared lowercase).
const SENTENCE_STARTERS: &str = "a according after all also an and at before but by confirmed contradicted for from he her his however i if in it its no not on our she single-source so some that the their there these they this those to today we when while with yesterday";
/// Most related names [`about`] returns, and most entities it tries for one name.
const RELATED: usize = 20;
/// Facts read from the projection at once while looking for current ones.
const CHUNK: usize = 64;

/// How a fact names an entity.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Role {
    /// What the fact is about (a model-read fact's subject).
    Subject,
    /// Who said it (an outlet a bulletin claim cites).
    Source,
    /// A proper noun of its sentence.
    Mentioned,
}

impl Role {
    /// Its stored name (`subject`, `source`, `mentioned`).
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Subject => "subject",
            Role::Source => "source",
            Role::Mentioned => "mentioned",
        }
    }

    fn parse(s: &str) -> Option<Self> {
        [Role::Subject, Role::Source, Role::Mentioned]
            .into_iter()
            .find(|r| r.as_str() == s)
    }
}

/// One entity a fact names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entity {
    /// As the fact spells it, whitespace collapsed.
    pub name: String,
    /// Its identity: the name lowercased (see [`key`]).
    pub key: String,
    /// How the fact names it.
    pub role: Role,
}

/// What the graph knows about one entity, within a scope.
#[derive(Debug, Clone, PartialEq)]
pub struct Node {
    /// Its name, as first seen.
    pub name: String,
    /// The current facts naming it, newest first, each with how it names it (the strongest
    /// role when it names it in several).
    pub facts: Vec<(Role, Recalled)>,
    /// The other entities those facts name, most shared facts first, then by name.
    pub related: Vec<Related>,
}

/// An entity named together with the one asked about.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Related {
    /// Its name, as first seen.
    pub name: String,
    /// How many of the node's facts name it.
    pub shared: usize,
    /// How those facts name it.
    pub roles: Vec<Role>,
}

/// Why a graph query failed.
#[derive(Debug, thiserror::Error)]
pub enum GraphError {
    /// The graph database cannot be opened or queried.
    #[error("knowledge graph {path}: {source}; has the graph worker run and created it?")]
    Graph {
        /// Path.
        path: PathBuf,
        /// Cause.
        #[source]
        source: rusqlite::Error,
    },
    /// The projection could not be read.
    #[error(transparent)]
    Recall(#[from] RecallError),
}

/// An entity's identity: its name lowercased, whitespace collapsed.
pub fn key(name: &str) -> String {
    name.split_whitespace()
        .map(str::to_lowercase)
        .collect::<Vec<_>>()
        .join(" ")
}

/// The entities `fact` names (see the module docs), each name once per role.
pub fn entities(fact: &FactLearned) -> Vec<Entity> {
    let subject = fact.subject.as_deref().unwrap_or("");
    let mut found: Vec<Entity> = Vec::new();
    let mut add = |name: &str, role: Role| {
        let name = name.split_whitespace().collect::<Vec<_>>().join(" ");
        let key = key(&name);
        if !key.is_empty() && !found.iter().any(|e| e.key == key && e.role == role) {
            found.push(Entity { name, key, role });
        }
    };
    for cited in fact.sources.iter().flatten() {
        add(cited.outlet.as_deref().unwrap_or(""), Role::Source);
    }
    let claim = subject.starts_with("claim/");
    if fact.method.as_deref() == Some("model") && !claim && !subject.starts_with("tool/") {
        add(subject, Role::Subject);
    }
    // A tool's statement restates JSON, whose capitals are keys and values, not names.
    if !subject.starts_with("tool/") {
        let statement = fact.statement.as_deref().unwrap_or("");
        // A claim's statement is "Confirmed by <outlets>: <text>"; the outlets are sources.
        let sentence = match statement.split_once(": ") {
            Some((_, rest)) if claim => rest,
            _ => statement,
        };
        proper_nouns(sentence)
            .iter()
            .for_each(|n| add(n, Role::Mentioned));
    }
    found
}

/// The maximal runs of capitalised words in `text` (see the module docs).
fn proper_nouns(text: &str) -> Vec<String> {
    let mut found = Vec::new();
    let mut run: Vec<&str> = Vec::new();
    let (mut run_starts_sentence, mut sentence_start) = (false, true);
    for raw in text.split_whitespace() {
        let word = raw.trim_matches(|c: char| !c.is_alphanumeric());
        let owner = word.strip_suffix("'s").or_else(|| word.strip_suffix("’s"));
        let word = owner.unwrap_or(word);
        if raw.starts_with(|c: char| !c.is_alphanumeric()) {
            flush(&mut run, run_starts_sentence, &mut found);
        }
        if word.starts_with(char::is_uppercase) {
            if run.is_empty() {
                run_starts_sentence = sentence_start;
            }
            run.push(word);
        } else if CONNECTORS.contains(&word) && !run.is_empty() {
            run.push(word);
        } else {
            flush(&mut run, run_starts_sentence, &mut found);
        }
        if owner.is_some() || raw.ends_with(|c: char| !c.is_alphanumeric()) {
            flush(&mut run, run_starts_sentence, &mut found);
        }
        let tail = raw.trim_end_matches(['"', '\'', ')', ']', '’', '”']);
        let ends_sentence = tail.ends_with(['.', '!', '?', ':']);
        if !word.is_empty() || ends_sentence {
            sentence_start = ends_sentence;
        }
    }
    flush(&mut run, run_starts_sentence, &mut found);
    found
}

/// Ends the run `run`: what is left of it without connectors at its ends, without a common
/// word that only starts a sentence, is a name unless it is a lone "I" or has no letter.
fn flush(run: &mut Vec<&str>, starts_sentence: bool, found: &mut Vec<String>) {
    let mut words = std::mem::take(run);
    if starts_sentence
        && let Some(first) = words.first()
        && SENTENCE_STARTERS
            .split_whitespace()
            .any(|w| w == first.to_lowercase())
    {
        words.remove(0);
    }
    while words.first().is_some_and(|w| CONNECTORS.contains(w)) {
        words.remove(0);
    }
    while words.last().is_some_and(|w| CONNECTORS.contains(w)) {
        words.pop();
    }
    let name = words.join(" ");
    if name != "I" && name.chars().any(char::is_alphabetic) {
        found.push(name);
    }
}

/// The knowledge-graph worker: records the entities each fact learned names.
#[derive(Debug, Clone, Copy, Default)]
pub struct KnowledgeGraph;

impl Deriver for KnowledgeGraph {
    type Prepared = ();

    fn schema(&self) -> &'static str {
        SCHEMA
    }

    fn derive(
        &self,
        tx: &Transaction<'_>,
        seq: u64,
        event: &Envelope,
        _: (),
    ) -> rusqlite::Result<Derived> {
        let Ok(fact) = event.payload::<FactLearned>() else {
            return Ok(Derived::default());
        };
        let namespace = event.namespace_path();
        let mut entity = tx.prepare_cached(
            "INSERT OR IGNORE INTO entities(tenant, key, name) VALUES (?1, ?2, ?3)",
        )?;
        let mut mention = tx.prepare_cached(
            "INSERT OR IGNORE INTO mentions(tenant, key, fact_id, namespace, role, seq)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
        )?;
        for e in entities(&fact) {
            entity.execute(params![event.tenant, e.key, e.name])?;
            mention.execute(params![
                event.tenant,
                e.key,
                event.event_id.as_str(),
                namespace,
                e.role.as_str(),
                seq as i64
            ])?;
        }
        Ok(Derived::default())
    }
}

/// `filter`'s prefix as SQL over the column `col`, bound to `?2` ('' for everywhere).
fn scope(col: &str) -> String {
    format!("(?2 = '' OR {})", super::recall::under(col, "?2"))
}

fn prefix(filter: &RecallFilter) -> &str {
    filter
        .prefix
        .as_deref()
        .map_or("", |p| p.trim_end_matches('/'))
}

/// What the graph at `graph` (read-only) knows about `name` under `filter`: the entity whose
/// key is the name's, else the one whose key holds it as whole words with the most mentions
/// in scope; its current facts from `projection` (at most `filter.limit`, 0: 50) and the
/// names those facts share. `None`: the name is unknown, or no current fact in scope names it.
pub fn about(
    graph: &Path,
    projection: &Recall,
    name: &str,
    filter: &RecallFilter,
) -> Result<Option<Node>, GraphError> {
    let wanted = key(name);
    if wanted.is_empty() {
        return Ok(None);
    }
    let err = |source| GraphError::Graph {
        path: graph.to_path_buf(),
        source,
    };
    let conn = Connection::open_with_flags(graph, OpenFlags::SQLITE_OPEN_READ_ONLY).map_err(err)?;
    conn.busy_timeout(std::time::Duration::from_secs(5))
        .map_err(err)?;
    let limit = if filter.limit == 0 { 50 } else { filter.limit };
    for (key, name) in candidates(&conn, &wanted, filter).map_err(err)? {
        let mut facts = Vec::new();
        for chunk in mentioning(&conn, &key, filter).map_err(err)?.chunks(CHUNK) {
            let role: HashMap<&str, Role> = chunk.iter().map(|(id, r)| (id.as_str(), *r)).collect();
            let mut found = projection.by_ids(chunk.iter().map(|(id, _)| id.as_str()), filter)?;
            found.sort_by_key(|r| std::cmp::Reverse(r.seq));
            facts.extend(
                found
                    .into_iter()
                    .filter_map(|r| Some((*role.get(r.event_id.as_str())?, r))),
            );
            if facts.len() >= limit {
                break;
            }
        }
        facts.truncate(limit);
        if !facts.is_empty() {
            let related = related(&conn, &key, &facts).map_err(err)?;
            return Ok(Some(Node {
                name,
                facts,
                related,
            }));
        }
    }
    Ok(None)
}

/// The entities `wanted` may mean, best first: its own key, then at most [`RELATED`] keys
/// holding it as whole words, most mentions in scope first.
fn candidates(
    conn: &Connection,
    wanted: &str,
    filter: &RecallFilter,
) -> rusqlite::Result<Vec<(String, String)>> {
    let mut stmt = conn.prepare(&format!(
        "SELECT e.key, min(e.name) FROM entities e
         JOIN mentions m ON m.tenant = e.tenant AND m.key = e.key
         WHERE instr(e.key, ?1) > 0 AND (?3 IS NULL OR e.tenant = ?3) AND {}
         GROUP BY e.key ORDER BY e.key = ?1 DESC, count(*) DESC, e.key",
        scope("m.namespace")
    ))?;
    let rows = stmt.query_map(params![wanted, prefix(filter), filter.tenant], |r| {
        Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?))
    })?;
    let padded = format!(" {wanted} ");
    let mut found = Vec::new();
    for row in rows {
        let (key, name) = row?;
        if format!(" {key} ").contains(&padded) && found.len() < RELATED {
            found.push((key, name));
        }
    }
    Ok(found)
}

/// The facts in scope naming `key`, newest first, each with the strongest role it names it in
/// (`max(role)`: the stored names sort `mentioned` < `source` < `subject`).
fn mentioning(
    conn: &Connection,
    key: &str,
    filter: &RecallFilter,
) -> rusqlite::Result<Vec<(String, Role)>> {
    let mut stmt = conn.prepare(&format!(
        "SELECT fact_id, max(role) FROM mentions
         WHERE key = ?1 AND (?3 IS NULL OR tenant = ?3) AND {}
         GROUP BY fact_id ORDER BY max(seq) DESC, fact_id",
        scope("namespace")
    ))?;
    let rows = stmt.query_map(params![key, prefix(filter), filter.tenant], |r| {
        Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?))
    })?;
    let mut found = Vec::new();
    for row in rows {
        let (fact, role) = row?;
        found.extend(Role::parse(&role).map(|r| (fact, r)));
    }
    Ok(found)
}

/// The entities other than `key` that `facts` name, most shared first, then by name.
fn related(
    conn: &Connection,
    key: &str,
    facts: &[(Role, Recalled)],
) -> rusqlite::Result<Vec<Related>> {
    let mut stmt = conn.prepare_cached(
        "SELECT m.key, e.name, m.role FROM mentions m
         JOIN entities e ON e.tenant = m.tenant AND e.key = m.key
         WHERE m.fact_id = ?1 AND m.tenant = ?2 AND m.key <> ?3",
    )?;
    let mut by_key: BTreeMap<String, Related> = BTreeMap::new();
    for (_, fact) in facts {
        let rows = stmt.query_map(params![fact.event_id, fact.tenant, key], |r| {
            Ok((
                r.get::<_, String>(0)?,
                r.get::<_, String>(1)?,
                r.get::<_, String>(2)?,
            ))
        })?;
        let mut seen = HashSet::new();
        for row in rows {
            let (other, name, role) = row?;
            let entry = by_key.entry(other.clone()).or_insert(Related {
                name,
                shared: 0,
                roles: Vec::new(),
            });
            entry.shared += usize::from(seen.insert(other));
            entry
                .roles
                .extend(Role::parse(&role).filter(|r| !entry.roles.contains(r)));
        }
    }
    let mut related: Vec<Related> = by_key.into_values().collect();
    related.iter_mut().for_each(|r| r.roles.sort());
    related.sort_by(|a, b| b.shared.cmp(&a.shared).then_with(|| a.name.cmp(&b.name)));
    related.truncate(RELATED);
    Ok(related)
}

/// How many entities the graph at `path` holds (`None`: it is not a knowledge graph).
pub fn entities_count(path: &Path) -> Option<u64> {
    let conn = Connection::open_with_flags(path, OpenFlags::SQLITE_OPEN_READ_ONLY).ok()?;
    conn.query_row("SELECT count(*) FROM entities", [], |r| r.get::<_, i64>(0))
        .ok()
        .map(|n| n as u64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::event_kind::EventKind;
    use crate::memory::{projector, worker};
    use serde_json::{Value, json};

    fn names(found: &[Entity], role: Role) -> Vec<&str> {
        found
            .iter()
            .filter(|e| e.role == role)
            .map(|e| e.key.as_str())
            .collect()
    }

    fn claim(text: &str, outlets: &[&str]) -> Value {
        let sources: Vec<Value> = outlets
            .iter()
            .map(|o| json!({"outlet": o, "owner": o.to_lowercase()}))
            .collect();
        json!({"subject": "claim/c-1", "claim": "c-1", "status": "confirmed",
               "statement": format!("Confirmed by {}: {text}", outlets.join(", ")),
               "sources": sources, "bulletin": "b-1", "method": "structured"})
    }

    /// The entities of the fact payload `v`.
    fn of(v: Value) -> Vec<Entity> {
        entities(&serde_json::from_value(v).expect("a fact_learned payload"))
    }

    fn read(subject: &str, statement: &str) -> Value {
        json!({"subject": subject, "statement": statement, "method": "model"})
    }

    #[test]
    fn a_bulletin_claim_names_its_outlets_as_sources_and_its_proper_nouns() {
        let found = of(claim(
            "The harbour bridge at Port of Leith is closed; Quay Street flooded, the Wire said.",
            &["Harbour Authority", "Wire"],
        ));
        assert_eq!(names(&found, Role::Source), ["harbour authority", "wire"]);
        assert_eq!(
            names(&found, Role::Mentioned),
            ["port of leith", "quay street", "wire"]
        );
        assert!(
            names(&found, Role::Subject).is_empty(),
            "claim/… is no name"
        );
        assert_eq!(found[0].name, "Harbour Authority");
    }

    #[test]
    fn a_model_fact_names_its_subject_but_claim_and_tool_subjects_name_nothing() {
        let found = of(read(
            "harbour bridge",
            "The Harbour Bridge reopened in 2024 after repairs by Leith's engineers. I agree.",
        ));
        assert_eq!(names(&found, Role::Subject), ["harbour bridge"]);
        assert_eq!(names(&found, Role::Mentioned), ["harbour bridge", "leith"]);
        // Sentence-start words and connectors at a run's ends are not names.
        let found = of(read(
            "x",
            "Single-source: Bank of the North of Scotland and.",
        ));
        assert_eq!(
            names(&found, Role::Mentioned),
            ["bank of the north of scotland"]
        );
        let tool = json!({"subject": "tool/weather/get_forecast {\"city\":\"Oslo\"}",
                          "statement": "weather/get_forecast {\"city\":\"Oslo\"} returned {}",
                          "method": "structured"});
        assert!(of(tool).is_empty());
        let unread =
            json!({"subject": "claim/x", "statement": "the bridge is open", "method": "model"});
        assert!(of(unread).is_empty());
    }

    fn fact(ns: &[&str], payload: Value) -> Envelope {
        Envelope::new(
            "t",
            ns.iter().copied(),
            "x",
            EventKind::FactLearned,
            payload,
        )
    }

    fn derive_all(conn: &mut Connection, events: &[&Envelope]) {
        let tx = conn.transaction().unwrap();
        for (e, seq) in events.iter().zip(1..) {
            let out = KnowledgeGraph.derive(&tx, seq, e, ()).unwrap();
            assert!(out.events.is_empty() && out.problem.is_none());
        }
        tx.commit().unwrap();
    }

    fn count(conn: &Connection, table: &str) -> i64 {
        conn.query_row(&format!("SELECT count(*) FROM {table}"), [], |r| r.get(0))
            .unwrap()
    }

    #[test]
    fn deriving_a_fact_again_records_nothing_new() {
        let mut conn = Connection::open_in_memory().unwrap();
        conn.execute_batch(SCHEMA).unwrap();
        let f = fact(
            &["facts", "n"],
            claim("Quay Street flooded.", &["Portside"]),
        );
        let other = Envelope::new("t", ["x"], "a", EventKind::ReplyDelivered, json!({}));
        derive_all(&mut conn, &[&f, &other]);
        let once = (count(&conn, "entities"), count(&conn, "mentions"));
        assert_eq!(once, (2, 2));
        derive_all(&mut conn, &[&f]);
        assert_eq!((count(&conn, "entities"), count(&conn, "mentions")), once);
    }

    #[test]
    fn about_answers_within_the_scope_with_current_facts_and_the_names_they_share() {
        let dir = tempfile::tempdir().unwrap();
        let (db, graph) = (dir.path().join("p.db"), dir.path().join("g.db"));
        let editor = ["facts", "newsroom", "editor"];
        let outlets = ["Harbour Authority", "Wire"];
        let bridge = fact(
            &editor,
            claim("The bridge at Port of Leith is closed.", &outlets),
        );
        let inspection = "Harbour Authority inspects the Port of Leith quay.";
        let inspection = fact(
            &["facts", "newsroom"],
            read("harbour authority", inspection),
        );
        let core = fact(
            &["facts", "core"],
            read("port", "Port of Leith shut to Wire crews."),
        );
        let old = fact(&editor, claim("Port of Leith is open.", &outlets[..1]));
        let gone = json!({"fact": old.event_id.as_str(), "by": bridge.event_id.as_str(),
                          "reason": "replaced"});
        let gone = Envelope::new("t", editor, "c", EventKind::FactSuperseded, gone);
        let events = [&old, &bridge, &inspection, &core, &gone];
        projector::project_for_test(&db, &events);
        derive_all(&mut worker::open_state(&graph, SCHEMA).unwrap(), &events);
        let recall = Recall::open(&db).unwrap();
        let ask = |name: &str, prefix: &str, limit: usize| {
            let prefix = Some(prefix.to_string()).filter(|p| !p.is_empty());
            let filter = RecallFilter {
                prefix,
                limit,
                ..RecallFilter::default()
            };
            about(&graph, &recall, name, &filter).unwrap()
        };
        let ids = |node: &Node| -> Vec<String> {
            node.facts.iter().map(|(_, r)| r.event_id.clone()).collect()
        };

        // In the newsroom: its two current facts, newest first; not core's, not the old one.
        let node = ask(" port OF  leith", "facts/newsroom", 0).unwrap();
        assert_eq!(node.name, "Port of Leith");
        assert_eq!(
            ids(&node),
            [inspection.event_id.as_str(), bridge.event_id.as_str()]
        );
        assert!(node.facts.iter().all(|(role, _)| *role == Role::Mentioned));
        let related: Vec<_> = (node.related.iter())
            .map(|r| (r.name.as_str(), r.shared, r.roles.as_slice()))
            .collect();
        let authority = [Role::Subject, Role::Source, Role::Mentioned];
        assert_eq!(
            related,
            [
                ("Harbour Authority", 2, &authority[..]),
                ("Wire", 1, &[Role::Source])
            ]
        );
        // In core, core's fact; everywhere, all three current ones; the limit caps them.
        assert_eq!(
            ids(&ask("Port of Leith", "facts/core", 0).unwrap()),
            [core.event_id.as_str()]
        );
        assert_eq!(ask("port of leith", "", 0).unwrap().facts.len(), 3);
        assert_eq!(
            ids(&ask("port of leith", "", 1).unwrap()),
            [core.event_id.as_str()]
        );
        // A whole word of a name finds it; part of a word or an unknown name does not.
        assert_eq!(
            ask("Leith", "facts/newsroom", 0).unwrap().name,
            "Port of Leith"
        );
        assert!(ask("Lei", "facts", 0).is_none() && ask("Oslo", "", 0).is_none());
        // A source, in its own scope.
        let node = ask("wire", "facts/newsroom/editor", 0).unwrap();
        assert_eq!(
            (node.facts[0].0, ids(&node)),
            (Role::Source, vec![bridge.event_id.to_string()])
        );
        let other = RecallFilter {
            tenant: Some("u".into()),
            ..RecallFilter::default()
        };
        assert!(about(&graph, &recall, "Wire", &other).unwrap().is_none());
        assert!(matches!(
            about(&dir.path().join("none.db"), &recall, "wire", &other),
            Err(GraphError::Graph { .. })
        ));
        // port of leith, harbour authority, wire, port
        assert_eq!(
            (entities_count(&graph), entities_count(&db)),
            (Some(4), None)
        );
    }
}
