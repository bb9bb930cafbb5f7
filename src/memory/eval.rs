//! Recall quality on a labelled set (`iron eval memory`), as distinct from its speed
//! (`iron bench memory`). The set's facts are projected and indexed the way the projector and the
//! semantic worker would, each query is answered by the hybrid recall a wake makes (under the
//! query's scope, five results), and what came back is scored against the facts the labels say
//! answer it: recall@5 (the share of those facts among the five) and the reciprocal rank of the
//! first one, overall and per kind of query. `eval/memory/README.md` describes the set.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::projector::{self, ProjectorError};
use super::recall::{Recall, RecallError, RecallFilter};
use super::semantic::{self, EmbedError, Embedder, QueryVector};
use super::worker::{self, WorkerError};
use crate::core::durable::StoredMessage;
use crate::core::envelope::Envelope;
use crate::core::event_kind::EventKind;

/// Results a query is scored on (what a wake reads at most of one recall is about this many).
pub const K: usize = 5;

/// One fact of the set.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LabelledFact {
    /// Its id in the set (`f001`).
    pub id: String,
    /// The namespace it is learned in (`facts/newsroom`).
    pub scope: String,
    /// What it is about.
    pub subject: String,
    /// What it says.
    pub statement: String,
}

/// One query of the set, with the facts that answer it.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LabelledQuery {
    /// Its id in the set (`q001`).
    pub id: String,
    /// The namespace prefix it searches under.
    pub scope: String,
    /// What it tests: `lexical`, `paraphrase`, `spelling`, `question`, `distractor`.
    pub kind: String,
    /// The text, as a task would say it.
    pub query: String,
    /// Ids of every fact that answers it.
    pub relevant: Vec<String>,
}

/// Why a set could not be evaluated.
#[derive(Debug, thiserror::Error)]
pub enum EvalError {
    #[error("line {line}: {source}")]
    Parse {
        line: usize,
        #[source]
        source: serde_json::Error,
    },
    #[error("query {query} names {fact}, which is not a fact of the set under {scope}")]
    UnknownFact {
        query: String,
        fact: String,
        scope: String,
    },
    #[error("query {query} names no fact that answers it")]
    NoRelevant { query: String },
    #[error("projecting the facts: {0}")]
    Projection(#[from] ProjectorError),
    #[error("indexing the facts: {0}")]
    Index(#[from] WorkerError),
    #[error("writing the set: {0}")]
    Sqlite(#[from] rusqlite::Error),
    #[error(transparent)]
    Recall(#[from] RecallError),
    #[error(transparent)]
    Embed(#[from] EmbedError),
}

/// The records of a JSON Lines text (blank lines skipped).
pub fn parse<T: for<'de> Deserialize<'de>>(text: &str) -> Result<Vec<T>, EvalError> {
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| {
            serde_json::from_str(l).map_err(|source| EvalError::Parse {
                line: i + 1,
                source,
            })
        })
        .collect()
}

/// The facts projected and, with an embedder, indexed, in a directory of their own.
pub struct Indexed {
    projection: Recall,
    semantic: std::path::PathBuf,
    /// The set's fact id of each event id.
    facts: HashMap<String, String>,
    /// Every fact's scope, by set id.
    scopes: HashMap<String, String>,
    embedder: Option<String>,
}

/// Projects `facts` into `dir` (empty) as the projector would and, with `embedder`, stores their
/// vectors as the semantic worker would.
pub async fn index(
    facts: &[LabelledFact],
    embedder: Option<&dyn Embedder>,
    dir: &Path,
) -> Result<Indexed, EvalError> {
    let events: Vec<Envelope> = facts
        .iter()
        .map(|f| {
            Envelope::new(
                "default",
                f.scope.split('/'),
                "eval/memory",
                EventKind::FactLearned,
                serde_json::json!({"subject": f.subject, "statement": f.statement}),
            )
        })
        .collect();
    let path = dir.join("projection.db");
    let batch: Vec<StoredMessage> = events
        .iter()
        .enumerate()
        .map(|(i, e)| StoredMessage {
            seq: i as u64 + 1,
            subject: "mem.eval".into(),
            msg_id: Some(e.event_id.to_string()),
            payload: serde_json::to_vec(e).expect("an envelope serialises"),
            stored_ms: 0,
        })
        .collect();
    projector::apply_batch(&mut projector::open_writer(&path)?, "MEM", &batch)?;
    let semantic = dir.join("semantic.db");
    if let Some(embedder) = embedder {
        let statements: Vec<String> = facts.iter().map(|f| f.statement.clone()).collect();
        let vectors = embedder.embed(&statements).await?;
        let mut conn = worker::open_state(&semantic, semantic::SCHEMA)?;
        let tx = conn.transaction()?;
        for (seq, (event, vector)) in events.iter().zip(&vectors).enumerate() {
            semantic::store(&tx, event, seq as u64 + 1, embedder.name(), vector)?;
        }
        tx.commit()?;
    }
    Ok(Indexed {
        projection: Recall::open(&path)?,
        semantic,
        facts: events
            .iter()
            .zip(facts)
            .map(|(e, f)| (e.event_id.to_string(), f.id.clone()))
            .collect(),
        scopes: facts
            .iter()
            .map(|f| (f.id.clone(), f.scope.clone()))
            .collect(),
        embedder: embedder.map(|e| e.name().to_string()),
    })
}

/// Scores of one retriever on one set of queries.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Scores {
    /// Queries scored.
    pub queries: usize,
    /// Mean share of a query's relevant facts among its first [`K`] results.
    pub recall_at_5: f64,
    /// Mean reciprocal rank of the first relevant fact (0 when none is in the first [`K`]).
    pub mrr: f64,
}

impl Scores {
    fn add(&mut self, recall: f64, reciprocal_rank: f64) {
        let n = self.queries as f64;
        self.recall_at_5 = (self.recall_at_5 * n + recall) / (n + 1.0);
        self.mrr = (self.mrr * n + reciprocal_rank) / (n + 1.0);
        self.queries += 1;
    }
}

/// The scores of one retriever: overall and per kind of query.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Evaluation {
    /// `words` (full-text alone), or the embedder whose vectors took part.
    pub retriever: String,
    pub overall: Scores,
    pub by_kind: BTreeMap<String, Scores>,
}

impl Evaluation {
    /// The evaluation as aligned text lines, under `title`.
    pub fn table(&self, title: &str) -> String {
        let mut out = format!(
            "{title}\n  {:<12} {:>7} {:>10} {:>6}\n",
            "queries", "n", "recall@5", "MRR"
        );
        let mut row = |name: &str, s: &Scores| {
            out.push_str(&format!(
                "  {name:<12} {:>7} {:>10.3} {:>6.3}\n",
                s.queries, s.recall_at_5, s.mrr
            ));
        };
        row("all", &self.overall);
        for (kind, s) in &self.by_kind {
            row(kind, s);
        }
        out
    }
}

/// Answers every query of `queries` from `indexed` (with vectors when it has an embedder, the
/// queries embedded by `embedder`, the one that indexed) and scores the answers.
pub async fn evaluate(
    indexed: &Indexed,
    queries: &[LabelledQuery],
    embedder: Option<&dyn Embedder>,
) -> Result<Evaluation, EvalError> {
    for q in queries {
        if q.relevant.is_empty() {
            return Err(EvalError::NoRelevant {
                query: q.id.clone(),
            });
        }
        for fact in &q.relevant {
            let under = indexed
                .scopes
                .get(fact)
                .is_some_and(|scope| in_scope(scope, &q.scope));
            if !under {
                return Err(EvalError::UnknownFact {
                    query: q.id.clone(),
                    fact: fact.clone(),
                    scope: q.scope.clone(),
                });
            }
        }
    }
    let vectors: Vec<Option<QueryVector>> = match (embedder, &indexed.embedder) {
        (Some(embedder), Some(name)) if embedder.name() == name => {
            let texts: Vec<String> = queries.iter().map(|q| q.query.clone()).collect();
            embedder
                .embed(&texts)
                .await?
                .into_iter()
                .map(|vector| {
                    Some(QueryVector {
                        embedder: name.clone(),
                        vector,
                    })
                })
                .collect()
        }
        _ => vec![None; queries.len()],
    };
    let mut evaluation = Evaluation {
        retriever: indexed.embedder.clone().unwrap_or_else(|| "words".into()),
        ..Evaluation::default()
    };
    for (q, vector) in queries.iter().zip(&vectors) {
        let filter = RecallFilter {
            prefix: Some(q.scope.clone()),
            limit: K,
            ..RecallFilter::default()
        };
        let found = semantic::hybrid(
            &indexed.projection,
            &indexed.semantic,
            &q.query,
            vector.as_ref(),
            &filter,
        )?;
        let ranked: Vec<&str> = found
            .iter()
            .take(K)
            .filter_map(|r| indexed.facts.get(&r.event_id).map(String::as_str))
            .collect();
        let (recall, rank) = score(&ranked, &q.relevant);
        evaluation.overall.add(recall, rank);
        evaluation
            .by_kind
            .entry(q.kind.clone())
            .or_default()
            .add(recall, rank);
    }
    Ok(evaluation)
}

/// Whether namespace `scope` lies under the prefix `under` (itself or below it).
fn in_scope(scope: &str, under: &str) -> bool {
    scope == under
        || scope
            .strip_prefix(under)
            .is_some_and(|rest| rest.starts_with('/'))
}

/// Recall of `relevant` among `ranked`, and the reciprocal rank of the first relevant one.
fn score(ranked: &[&str], relevant: &[String]) -> (f64, f64) {
    let hits = relevant
        .iter()
        .filter(|r| ranked.contains(&r.as_str()))
        .count();
    let first = ranked
        .iter()
        .position(|id| relevant.iter().any(|r| r == id))
        .map_or(0.0, |i| 1.0 / (i as f64 + 1.0));
    (hits as f64 / relevant.len() as f64, first)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::semantic::HashingEmbedder;

    fn fact(id: &str, scope: &str, statement: &str) -> LabelledFact {
        LabelledFact {
            id: id.into(),
            scope: scope.into(),
            subject: id.into(),
            statement: statement.into(),
        }
    }

    fn query(id: &str, scope: &str, text: &str, relevant: &[&str]) -> LabelledQuery {
        LabelledQuery {
            id: id.into(),
            scope: scope.into(),
            kind: "lexical".into(),
            query: text.into(),
            relevant: relevant.iter().map(|r| r.to_string()).collect(),
        }
    }

    #[test]
    fn recall_and_rank_count_the_relevant_facts_among_the_first_five() {
        let relevant = vec!["a".to_string(), "b".to_string()];
        assert_eq!(score(&["x", "a", "y"], &relevant), (0.5, 0.5));
        assert_eq!(score(&["b", "a"], &relevant), (1.0, 1.0));
        assert_eq!(score(&["x"], &relevant), (0.0, 0.0));
        assert!(in_scope("facts/newsroom", "facts"));
        assert!(!in_scope("facts/newsroomx", "facts/newsroom"));
    }

    #[tokio::test]
    async fn a_set_is_answered_under_each_querys_scope() {
        let facts = [
            fact(
                "f1",
                "facts/newsroom",
                "The harbour bridge is closed for repairs.",
            ),
            fact(
                "f2",
                "facts/ops",
                "The backup of the billing database runs at 02:30.",
            ),
            fact("f3", "facts/ops", "The harbour webcam is offline."),
        ];
        let dir = tempfile::tempdir().unwrap();
        let embedder = HashingEmbedder;
        let indexed = index(&facts, Some(&embedder), dir.path()).await.unwrap();
        let queries = [
            query("q1", "facts/newsroom", "harbour bridge", &["f1"]),
            query("q2", "facts/ops", "billing backup time", &["f2"]),
            query("q3", "facts/ops", "harbour camera", &["f3"]),
        ];
        let e = evaluate(&indexed, &queries, Some(&embedder)).await.unwrap();
        assert_eq!(e.retriever, HashingEmbedder::NAME);
        assert_eq!(e.overall.queries, 3);
        assert_eq!(e.overall.recall_at_5, 1.0, "{e:?}");

        // A label naming a fact outside the query's scope is refused, not scored.
        let wrong = [query("q4", "facts/ops", "bridge", &["f1"])];
        let err = evaluate(&indexed, &wrong, None).await.unwrap_err();
        assert!(matches!(err, EvalError::UnknownFact { .. }), "{err}");
        let none = [query("q5", "facts/ops", "bridge", &[])];
        let err = evaluate(&indexed, &none, None).await.unwrap_err();
        assert!(matches!(err, EvalError::NoRelevant { .. }), "{err}");
        assert!(parse::<LabelledFact>("{\"id\": 1}").is_err());
    }
}
