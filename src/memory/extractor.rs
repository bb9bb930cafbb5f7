//! The extractor (`/iron/memory/extractor`): derives candidate facts (`fact_learned`) from what
//! experts did, with the event they came from as `cause`. It only restates structured records,
//! never invents: a published bulletin's claims (each with its verification status and
//! sources) and a tool's structured (JSON object) result. Free text (an answer, a source's
//! item) gives no fact without a model, and the model-backed path is not built yet.
//!
//! Scope follows the declaration: facts from an expert's work go to the namespace of its
//! narrowest writable `episodic` mount (`own` → `facts/<mesh>/<role>`), where every expert
//! whose mounts reach that prefix recalls them. An expert that declares no writable episodic
//! memory gives no facts: no declaration, no memory.

use std::collections::BTreeMap;

use rusqlite::Transaction;
use serde_json::{Map, Value, json};

use super::worker::Deriver;
use crate::aem::{Access, Catalog, MemoryMount, Scope};
use crate::core::envelope::Envelope;
use crate::core::event_kind::EventKind;
use crate::core::ids::EventId;

/// The actor derived facts are written as.
pub const ACTOR: &str = "memory/extractor";
/// Longest statement kept (characters).
const STATEMENT_CHARS: usize = 600;
/// Largest structured value restated as a fact (bytes of JSON); larger results are left to
/// the document store.
const VALUE_BYTES: usize = 16 * 1024;

/// The extractor's rules, with each expert's fact namespace from the catalog.
#[derive(Debug, Clone, Default)]
pub struct Extractor {
    /// Expert id → the namespace its facts go to.
    namespaces: BTreeMap<String, String>,
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
        Self { namespaces }
    }

    /// Where facts from `expert`'s work go (`None`: it declares no writable episodic memory).
    pub fn namespace(&self, expert: &str) -> Option<&str> {
        self.namespaces.get(expert).map(String::as_str)
    }

    /// The facts `event` gives.
    pub fn extract(&self, event: &Envelope) -> Vec<Envelope> {
        let Some(namespace) = self.namespace(&event.actor) else {
            return Vec::new();
        };
        let facts = match event.kind {
            EventKind::ReplyDelivered => bulletin_claims(&event.payload),
            EventKind::ToolResult => tool_result(&event.payload).into_iter().collect(),
            _ => Vec::new(),
        };
        facts
            .into_iter()
            .map(|fact| {
                let id =
                    EventId::computed(&["fact_learned", event.event_id.as_str(), &fact.subject]);
                let mut payload = fact.payload;
                payload.insert("subject".into(), json!(fact.subject));
                payload.insert(
                    "statement".into(),
                    json!(
                        fact.statement
                            .chars()
                            .take(STATEMENT_CHARS)
                            .collect::<String>()
                    ),
                );
                payload.insert(
                    "source".into(),
                    json!({"kind": event.kind.as_str(), "event": event.event_id.as_str(),
                           "actor": event.actor, "ts": event.ts}),
                );
                payload.insert("method".into(), json!("structured"));
                Envelope::new(
                    event.tenant.clone(),
                    namespace.split('/'),
                    ACTOR,
                    EventKind::FactLearned,
                    Value::Object(payload),
                )
                .with_id(id)
                .with_cause(event.event_id.clone())
            })
            .collect()
    }
}

impl Deriver for Extractor {
    fn derive(
        &mut self,
        _tx: &Transaction<'_>,
        _seq: u64,
        event: &Envelope,
    ) -> rusqlite::Result<Vec<Envelope>> {
        Ok(self.extract(event))
    }
}

/// A fact before it has an envelope.
struct Fact {
    /// What it is about; a later fact about the same subject replaces it.
    subject: String,
    /// The fact as one sentence.
    statement: String,
    /// Structured detail.
    payload: Map<String, Value>,
}

/// A delivered bulletin (`reply_delivered` whose `data` has `claims`): one fact per claim, its
/// status and sources as published.
fn bulletin_claims(payload: &Value) -> Vec<Fact> {
    if payload.get("delivered").and_then(Value::as_bool) != Some(true) {
        return Vec::new();
    }
    let Some(data) = payload.get("data") else {
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
            let sources = c.get("sources").cloned().unwrap_or(json!([]));
            let outlets: Vec<&str> = sources
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|s| s.get("outlet").and_then(Value::as_str))
                .collect();
            let statement = match status {
                "confirmed" => format!("Confirmed by {}: {text}", outlets.join(", ")),
                "single_source" => format!("Single-source ({}): {text}", outlets.join(", ")),
                "contradicted" => format!("Contradicted ({}): {text}", outlets.join(", ")),
                other => format!("{other} ({}): {text}", outlets.join(", ")),
            };
            let mut detail = Map::new();
            detail.insert("claim".into(), json!(claim));
            detail.insert("status".into(), json!(status));
            detail.insert("sources".into(), sources);
            detail.insert("bulletin".into(), json!(bulletin));
            Some(Fact {
                subject: format!("claim/{claim}"),
                statement,
                payload: detail,
            })
        })
        .collect()
}

/// A tool's answer that is a JSON object (MCP `structuredContent`, or a text block that is
/// one), not an error: one fact, about that tool called with those arguments.
fn tool_result(payload: &Value) -> Option<Fact> {
    let outcome = payload.get("outcome")?;
    if outcome.get("status").and_then(Value::as_str) != Some("answered")
        || outcome.get("is_error").and_then(Value::as_bool) != Some(false)
    {
        return None;
    }
    let result = outcome.get("result")?;
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
    let tool = payload.get("tool").and_then(Value::as_str)?;
    let arguments = payload.get("arguments").cloned().unwrap_or(json!({}));
    // serde_json's maps are ordered, so equal arguments print equally.
    let call = format!("{tool} {arguments}");
    let mut detail = Map::new();
    detail.insert("tool".into(), json!(tool));
    detail.insert("arguments".into(), arguments);
    detail.insert("value".into(), value);
    Some(Fact {
        subject: format!("tool/{call}"),
        statement: format!("{call} returned {value_text}"),
        payload: detail,
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
        assert_eq!(f.payload["subject"], "claim/c-bridge");
        assert_eq!(
            f.payload["statement"],
            "Confirmed by Harbour Authority, Wire: The harbour bridge is closed."
        );
        assert_eq!(f.payload["bulletin"], "b-1");
        assert_eq!(facts[1].payload["status"], "single_source");
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
        let x = extractor(&[(
            "n/w",
            vec![mount(
                "episodic",
                Scope::Own,
                Access::ReadWrite,
                "facts/n/w",
            )],
        )]);
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
        assert_eq!(
            facts[0].payload["subject"],
            "tool/weather/get_forecast {\"city\":\"Oslo\"}"
        );
        assert_eq!(facts[0].payload["value"], json!({"temp_c": 4}));
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
}
