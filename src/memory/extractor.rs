//! The extractor (`/iron/memory/extractor`): derives candidate facts (`fact_learned`) from what
//! experts did, with the event they came from as `cause`. Without a model it only restates
//! structured records, never invents: a published bulletin's claims (each with its
//! verification status and sources) and a tool's structured (JSON object) result. With a
//! model configured it also asks the answering expert's own model which facts a finished
//! task's answer states (`task_judged`, answered), through the [`FactReader`] port the models
//! layer implements; a pipeline step (an `iron-task` block) is left to the structured path.
//!
//! Scope follows the declaration: facts from an expert's work go to the namespace of its
//! narrowest writable `episodic` mount (`own` → `facts/<mesh>/<role>`), where every expert
//! whose mounts reach that prefix recalls them. An expert that declares no writable episodic
//! memory gives no facts: no declaration, no memory.

use crate::protocol::Payload;
use crate::protocol::payload::{CitedSource, FactLearned, ReplyDelivered, TaskJudged};
use crate::protocol::tool::{ToolOutcome, ToolRecord};
use std::collections::BTreeMap;
use std::sync::Arc;

use futures_util::future::BoxFuture;
use rusqlite::Transaction;
use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::worker::{Derived, Deriver};
use crate::aem::{Access, Catalog, MemoryMount, Scope};
use crate::core::envelope::Envelope;
use crate::core::event_kind::EventKind;
use crate::core::ids::EventId;

/// The actor derived facts are written as.
pub const ACTOR: &str = "memory/extractor";
/// Longest statement kept (characters).
const STATEMENT_CHARS: usize = 600;
/// Longest subject kept (characters).
const SUBJECT_CHARS: usize = 200;
/// Most facts taken from one answer.
const FACTS_PER_ANSWER: usize = 20;
/// Largest structured value restated as a fact (bytes of JSON); larger results are left to
/// the document store.
const VALUE_BYTES: usize = 16 * 1024;
/// How a structured task for a pipeline step starts; its answer is data, not prose to learn.
const TASK_BLOCK: &str = "```iron-task";

/// A fact a model read in an answer.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Candidate {
    /// What it is about, as a short noun phrase ("harbour bridge").
    pub subject: String,
    /// The fact as one sentence.
    pub statement: String,
}

/// Why a model could not read an answer.
#[derive(Debug, thiserror::Error)]
#[error("reading facts with a model: {0}")]
pub struct ReadError(pub String);

/// Asks a model which facts an answer states. The models layer implements it (memory sits
/// below that layer and knows no model).
pub trait FactReader: Send + Sync {
    /// The facts `answer` — the expert `expert`'s answer to `question` — states.
    fn read<'a>(
        &'a self,
        expert: &'a str,
        question: &'a str,
        answer: &'a str,
    ) -> BoxFuture<'a, Result<Vec<Candidate>, ReadError>>;
}

/// The extractor's rules, with each expert's fact namespace from the catalog.
#[derive(Clone, Default)]
pub struct Extractor {
    /// Expert id → the namespace its facts go to.
    namespaces: BTreeMap<String, String>,
    /// The model path, when a model is configured.
    reader: Option<Arc<dyn FactReader>>,
}

impl std::fmt::Debug for Extractor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Extractor")
            .field("namespaces", &self.namespaces)
            .field("reader", &self.reader.is_some())
            .finish()
    }
}

impl Extractor {
    /// The rules for the experts of `catalog`.
    pub fn new(catalog: &Catalog) -> Self {
        Self::from_mounts(
            catalog
                .experts
                .values()
                .map(|e| (e.id.as_str(), e.memory.as_slice())),
        )
    }

    /// The rules for experts given as (id, memory mounts).
    pub fn from_mounts<'a>(
        experts: impl IntoIterator<Item = (&'a str, &'a [MemoryMount])>,
    ) -> Self {
        let namespaces = experts
            .into_iter()
            .filter_map(|(id, memory)| {
                memory
                    .iter()
                    .filter(|m| m.kind == "episodic")
                    .filter(|m| matches!(m.access, Access::Write | Access::ReadWrite))
                    .min_by_key(|m| match m.scope {
                        Scope::Own => 0,
                        Scope::Mesh => 1,
                        Scope::System => 2,
                    })
                    .and_then(|m| m.namespaces.first())
                    .map(|ns| (id.to_string(), ns.clone()))
            })
            .collect();
        Self {
            namespaces,
            reader: None,
        }
    }

    /// Also reads finished tasks' answers with `reader`.
    pub fn with_reader(mut self, reader: Arc<dyn FactReader>) -> Self {
        self.reader = Some(reader);
        self
    }

    /// Where facts from `expert`'s work go (`None`: it declares no writable episodic memory).
    pub fn namespace(&self, expert: &str) -> Option<&str> {
        self.namespaces.get(expert).map(String::as_str)
    }

    /// The facts `event` gives by structure alone (no model).
    pub fn extract(&self, event: &Envelope) -> Vec<Envelope> {
        let Some(namespace) = self.namespace(&event.actor) else {
            return Vec::new();
        };
        // A record of the wrong shape teaches nothing, and says so.
        let unreadable = |why: crate::protocol::ProtocolError| {
            tracing::warn!("no facts from it: {why}");
            Vec::new()
        };
        let facts = match event.kind {
            EventKind::ReplyDelivered => match event.payload::<ReplyDelivered>() {
                Ok(reply) => bulletin_claims(&reply),
                Err(why) => unreadable(why),
            },
            EventKind::ToolResult => match event.payload::<ToolRecord>() {
                Ok(record) => tool_result(record).into_iter().collect(),
                Err(why) => unreadable(why),
            },
            _ => Vec::new(),
        };
        facts
            .into_iter()
            .map(|fact| envelope(event, namespace, fact, "structured"))
            .collect()
    }

    /// A finished task the model path reads: who answered (`domain`), what was asked
    /// (`instruction`) and the answer.
    fn answered(&self, event: &Envelope) -> Option<Answered> {
        let judged: TaskJudged = event.payload().ok()?;
        let (Some(instruction), Some(answer)) = (judged.instruction, judged.answer) else {
            return None; // judged before the question and answer were recorded
        };
        (judged.answered
            && self.namespace(&judged.domain).is_some()
            && !instruction.contains(TASK_BLOCK)
            && !answer.trim().is_empty())
        .then_some(Answered {
            task_id: judged.task_id,
            expert: judged.domain,
            instruction,
            answer,
        })
    }

    /// The facts a model read in a finished task's answer, in the answering expert's scope.
    fn read_facts(&self, event: &Envelope, candidates: Vec<Candidate>) -> Vec<Envelope> {
        let Some(judged) = self.answered(event) else {
            return Vec::new();
        };
        let expert = judged.expert.as_str();
        let Some(namespace) = self.namespace(expert) else {
            return Vec::new();
        };
        candidates
            .into_iter()
            .filter(|c| !c.subject.trim().is_empty() && !c.statement.trim().is_empty())
            .take(FACTS_PER_ANSWER)
            .map(|c| {
                let mut rest = Map::new();
                rest.insert("expert".into(), expert.into());
                rest.insert("task_id".into(), judged.task_id.clone().into());
                let fact = Fact {
                    subject: c
                        .subject
                        .trim()
                        .to_lowercase()
                        .chars()
                        .take(SUBJECT_CHARS)
                        .collect(),
                    statement: c.statement.trim().to_string(),
                    detail: FactLearned {
                        rest,
                        ..FactLearned::default()
                    },
                };
                envelope(event, namespace, fact, "model")
            })
            .collect()
    }
}

/// A task a model path reads facts from: its expert answered it.
struct Answered {
    task_id: String,
    expert: String,
    instruction: String,
    answer: String,
}

/// `fact` learned from `event`, written to `namespace`, with a computed id.
fn envelope(event: &Envelope, namespace: &str, fact: Fact, method: &str) -> Envelope {
    let id = EventId::computed(&["fact_learned", event.event_id.as_str(), &fact.subject]);
    let mut learned = fact.detail;
    learned.subject = Some(fact.subject);
    learned.statement = Some(fact.statement.chars().take(STATEMENT_CHARS).collect());
    learned.method = Some(method.to_string());
    learned.rest.insert(
        "source".into(),
        json!({"kind": event.kind.as_str(), "event": event.event_id.as_str(),
               "actor": event.actor, "ts": event.ts}),
    );
    Envelope::new(
        event.tenant.clone(),
        namespace.split('/'),
        ACTOR,
        FactLearned::KIND,
        learned.to_value(),
    )
    .with_id(id)
    .with_cause(event.event_id.clone())
}

impl Deriver for Extractor {
    /// The model's reading of a finished task, when there is one to read.
    type Prepared = Option<Result<Vec<Candidate>, ReadError>>;

    fn prepare<'a>(&'a self, event: &'a Envelope) -> BoxFuture<'a, Self::Prepared> {
        Box::pin(async move {
            let reader = self.reader.as_ref()?;
            let judged = self.answered(event)?;
            Some(
                reader
                    .read(&judged.expert, &judged.instruction, &judged.answer)
                    .await,
            )
        })
    }

    fn derive(
        &self,
        _tx: &Transaction<'_>,
        _seq: u64,
        event: &Envelope,
        prepared: Self::Prepared,
    ) -> rusqlite::Result<Derived> {
        let mut derived = Derived::from(self.extract(event));
        match prepared {
            Some(Ok(candidates)) => derived.events.extend(self.read_facts(event, candidates)),
            Some(Err(e)) => derived.problem = Some(e.to_string()),
            None => {}
        }
        Ok(derived)
    }
}

/// A fact before it has an envelope.
struct Fact {
    /// What it is about; a later fact about the same subject replaces it.
    subject: String,
    /// The fact as one sentence.
    statement: String,
    /// Its detail (status, value, sources, where it came from); the subject, statement and
    /// method are set when it is written.
    detail: FactLearned,
}

/// A delivered bulletin (`reply_delivered` whose `data` has `claims`): one fact per claim, its
/// status and sources as published.
fn bulletin_claims(reply: &ReplyDelivered) -> Vec<Fact> {
    let (true, Some(data)) = (reply.delivered, &reply.data) else {
        return Vec::new();
    };
    let bulletin = data.get("id").and_then(Value::as_str).unwrap_or("");
    let claims = data.get("claims").and_then(Value::as_array);
    claims
        .into_iter()
        .flatten()
        .filter_map(|c| {
            let claim = c.get("claim").and_then(Value::as_str)?;
            let text = c.get("text").and_then(Value::as_str)?;
            let status = c.get("status").and_then(Value::as_str)?;
            let sources: Vec<CitedSource> = match c.get("sources") {
                None => Vec::new(),
                Some(s) => serde_json::from_value(s.clone()).ok()?,
            };
            let outlets: Vec<&str> = sources.iter().filter_map(|s| s.outlet.as_deref()).collect();
            let statement = match status {
                "confirmed" => format!("Confirmed by {}: {text}", outlets.join(", ")),
                "single_source" => format!("Single-source ({}): {text}", outlets.join(", ")),
                "contradicted" => format!("Contradicted ({}): {text}", outlets.join(", ")),
                other => format!("{other} ({}): {text}", outlets.join(", ")),
            };
            let mut rest = Map::new();
            rest.insert("claim".into(), claim.into());
            rest.insert("bulletin".into(), bulletin.into());
            Some(Fact {
                subject: format!("claim/{claim}"),
                statement,
                detail: FactLearned {
                    status: Some(status.to_string()),
                    sources: Some(sources),
                    rest,
                    ..FactLearned::default()
                },
            })
        })
        .collect()
}

/// A tool's answer that is a JSON object (MCP `structuredContent`, or a text block that is
/// one), not an error: one fact, about that tool called with those arguments.
fn tool_result(record: ToolRecord) -> Option<Fact> {
    let ToolOutcome::Answered {
        is_error: false,
        result,
    } = record.outcome
    else {
        return None;
    };
    let value = result
        .get("structuredContent")
        .filter(|v| v.is_object())
        .cloned()
        .or_else(|| {
            let blocks = result.get("content")?.as_array()?;
            let [block] = blocks.as_slice() else {
                return None;
            };
            let text = block.get("text")?.as_str()?;
            serde_json::from_str::<Value>(text)
                .ok()
                .filter(Value::is_object)
        })?;
    let value_text = value.to_string();
    if value_text.len() > VALUE_BYTES {
        return None;
    }
    let (tool, arguments) = (record.tool, record.arguments);
    // serde_json's maps are ordered, so equal arguments print equally.
    let call = format!("{tool} {arguments}");
    let mut rest = Map::new();
    rest.insert("tool".into(), tool.into());
    rest.insert("arguments".into(), arguments);
    Some(Fact {
        subject: format!("tool/{call}"),
        statement: format!("{call} returned {value_text}"),
        detail: FactLearned {
            value: Some(value),
            rest,
            ..FactLearned::default()
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn extractor(experts: &[(&str, Vec<MemoryMount>)]) -> Extractor {
        Extractor::from_mounts(experts.iter().map(|(id, m)| (*id, m.as_slice())))
    }

    fn mount(kind: &str, scope: Scope, access: Access, ns: &str) -> MemoryMount {
        MemoryMount {
            kind: kind.into(),
            scope,
            access,
            namespaces: vec![ns.into(), "facts/system".into()],
        }
    }

    /// The expert `n/w`, whose own episodic memory is writable.
    fn writer() -> [(&'static str, Vec<MemoryMount>); 1] {
        [(
            "n/w",
            vec![mount(
                "episodic",
                Scope::Own,
                Access::ReadWrite,
                "facts/n/w",
            )],
        )]
    }

    fn bulletin() -> Value {
        json!({"delivered": true, "task_id": "t1", "channel": "bulletins", "text": "[b-1] ...",
               "data": {"id": "b-1", "claims": [
                   {"claim": "c-bridge", "text": "The harbour bridge is closed.", "status": "confirmed",
                    "sources": [{"outlet": "Harbour Authority", "owner": "city"},
                                {"outlet": "Wire", "owner": "wire"}]},
                   {"claim": "c-quay", "text": "Quay Street flooded.", "status": "single_source",
                    "sources": [{"outlet": "Portside", "owner": "portside"}]}]}})
    }

    #[test]
    fn a_delivered_bulletin_gives_one_fact_per_claim_in_the_declared_scope() {
        let x = extractor(&[(
            "newsroom/publisher",
            vec![
                mount(
                    "working",
                    Scope::Own,
                    Access::ReadWrite,
                    "facts/newsroom/publisher",
                ),
                mount("episodic", Scope::Mesh, Access::ReadWrite, "facts/newsroom"),
                mount(
                    "episodic",
                    Scope::Own,
                    Access::ReadWrite,
                    "facts/newsroom/publisher",
                ),
            ],
        )]);
        let e = Envelope::new(
            "t",
            ["sessions", "s1"],
            "newsroom/publisher",
            EventKind::ReplyDelivered,
            bulletin(),
        );
        let facts = x.extract(&e);
        assert_eq!(facts.len(), 2);
        let f = &facts[0];
        assert_eq!(f.kind, EventKind::FactLearned);
        assert_eq!(f.namespace_path(), "facts/newsroom/publisher");
        assert_eq!(f.tenant, "t");
        assert_eq!(f.cause.as_ref(), Some(&e.event_id));
        let learned = |e: &Envelope| e.payload::<FactLearned>().unwrap();
        let fact = learned(f);
        assert_eq!(fact.subject.as_deref(), Some("claim/c-bridge"));
        assert_eq!(
            fact.statement.as_deref(),
            Some("Confirmed by Harbour Authority, Wire: The harbour bridge is closed.")
        );
        assert_eq!(fact.rest["bulletin"], "b-1");
        assert_eq!(learned(&facts[1]).status.as_deref(), Some("single_source"));
        // Derived again (a redelivery), the same ids: the log and the projection keep one.
        assert_eq!(
            x.extract(&e)
                .iter()
                .map(|f| &f.event_id)
                .collect::<Vec<_>>(),
            facts.iter().map(|f| &f.event_id).collect::<Vec<_>>()
        );
    }

    #[test]
    fn no_writable_episodic_memory_no_facts_and_nothing_invented() {
        let x = extractor(&[
            (
                "n/reader",
                vec![mount(
                    "episodic",
                    Scope::Own,
                    Access::Read,
                    "facts/n/reader",
                )],
            ),
            (
                "n/writer",
                vec![mount(
                    "episodic",
                    Scope::Own,
                    Access::Write,
                    "facts/n/writer",
                )],
            ),
        ]);
        let delivered = |actor: &str, payload: Value| {
            Envelope::new("t", ["x"], actor, EventKind::ReplyDelivered, payload)
        };
        assert!(x.extract(&delivered("n/reader", bulletin())).is_empty());
        assert!(x.extract(&delivered("n/nobody", bulletin())).is_empty());
        assert_eq!(x.extract(&delivered("n/writer", bulletin())).len(), 2);
        // Not delivered, or plain text: nothing.
        let mut failed = bulletin();
        failed["delivered"] = json!(false);
        assert!(x.extract(&delivered("n/writer", failed)).is_empty());
        assert!(
            x.extract(&delivered(
                "n/writer",
                json!({"delivered": true, "text": "hello"})
            ))
            .is_empty()
        );
        let answer = Envelope::new(
            "t",
            ["x"],
            "n/writer",
            EventKind::ExpertFinished,
            json!({"text": "The bridge is closed."}),
        );
        assert!(x.extract(&answer).is_empty());
    }

    #[test]
    fn a_structured_tool_result_is_a_fact_about_that_call() {
        let x = extractor(&writer());
        let result = |outcome: Value| {
            Envelope::new(
                "t",
                ["tasks", "1"],
                "n/w",
                EventKind::ToolResult,
                json!({"task": "1", "tool": "weather/get_forecast", "arguments": {"city": "Oslo"},
                       "outcome": outcome}),
            )
        };
        let structured = json!({"status": "answered", "is_error": false,
            "result": {"content": [{"type": "text", "text": "{\"temp_c\": 4}"}]}});
        let facts = x.extract(&result(structured));
        assert_eq!(facts.len(), 1);
        let fact: FactLearned = facts[0].payload().unwrap();
        assert_eq!(
            fact.subject.as_deref(),
            Some("tool/weather/get_forecast {\"city\":\"Oslo\"}")
        );
        assert_eq!(fact.value, Some(json!({"temp_c": 4})));
        for outcome in [
            json!({"status": "answered", "is_error": true,
                   "result": {"content": [{"type": "text", "text": "{\"a\": 1}"}]}}),
            json!({"status": "answered", "is_error": false,
                   "result": {"content": [{"type": "text", "text": "sunny"}]}}),
            json!({"status": "failed", "error_kind": "timeout", "message": "x"}),
        ] {
            assert!(x.extract(&result(outcome)).is_empty());
        }
    }

    /// Answers every reading with `facts`, or fails when `None`.
    struct Reads(Option<Vec<Candidate>>);

    impl FactReader for Reads {
        fn read<'a>(
            &'a self,
            _: &'a str,
            _: &'a str,
            _: &'a str,
        ) -> BoxFuture<'a, Result<Vec<Candidate>, ReadError>> {
            let out = self.0.clone().ok_or_else(|| ReadError("down".into()));
            Box::pin(std::future::ready(out))
        }
    }

    fn judged(instruction: &str, answered: bool) -> Envelope {
        Envelope::new(
            "t",
            ["sessions", "s"],
            "engine",
            EventKind::TaskJudged,
            json!({"task_id": "t1", "domain": "n/w", "answered": answered,
                   "instruction": instruction, "answer": "The bridge is closed."}),
        )
    }

    async fn derive(x: &Extractor, e: &Envelope) -> Derived {
        let conn = rusqlite::Connection::open_in_memory().unwrap();
        let mut conn = conn;
        let tx = conn.transaction().unwrap();
        let prepared = x.prepare(e).await;
        x.derive(&tx, 1, e, prepared).unwrap()
    }

    #[tokio::test]
    async fn with_a_reader_an_answered_task_gives_the_facts_its_answer_states() {
        let writer = writer();
        let bridge = Candidate {
            subject: " Harbour Bridge ".into(),
            statement: "The bridge is closed.".into(),
        };
        let blank = Candidate {
            subject: "x".into(),
            statement: " ".into(),
        };
        let x = extractor(&writer).with_reader(Arc::new(Reads(Some(vec![bridge, blank]))));
        let e = judged("is the bridge closed?", true);
        let out = derive(&x, &e).await;
        assert_eq!(out.events.len(), 1, "{out:?}");
        let f = &out.events[0];
        let fact: FactLearned = f.payload().unwrap();
        assert_eq!(fact.subject.as_deref(), Some("harbour bridge"));
        assert_eq!(fact.method.as_deref(), Some("model"));
        assert_eq!(fact.rest["expert"], "n/w");
        assert_eq!(f.namespace_path(), "facts/n/w");
        assert_eq!(f.cause.as_ref(), Some(&e.event_id));
        // Unanswered, a pipeline step, or no reader: nothing is read.
        assert!(derive(&x, &judged("is it?", false)).await.events.is_empty());
        let step = judged("Group these.\n\n```iron-task\n{}\n```", true);
        assert!(derive(&x, &step).await.events.is_empty());
        assert!(derive(&extractor(&writer), &e).await.events.is_empty());
        // A reader that fails is a problem the worker counts, not a fact.
        let down = extractor(&writer).with_reader(Arc::new(Reads(None)));
        let out = derive(&down, &e).await;
        assert!(out.events.is_empty());
        assert!(out.problem.unwrap().contains("down"));
    }
}
