//! The consolidator (`/iron/memory/consolidator`): keeps one current belief per subject.
//! It follows the facts (`fact_learned`) in log order and keeps, per tenant, namespace and
//! subject, the fact now believed. A fact that says the same as the current one is a duplicate
//! (`fact_superseded` of the new fact, `reason: duplicate`, `by` the one kept); a fact that
//! says something else replaces it (`fact_superseded` of the old one, `reason: replaced`).
//! The projector records both, so recall returns the current belief and, asked for history,
//! what it replaced.

use crate::protocol::Payload;
use crate::protocol::payload::{FactLearned, FactSuperseded};
use rusqlite::{OptionalExtension, Transaction, params};
use serde_json::json;
use sha2::{Digest, Sha256};

use super::worker::{Derived, Deriver};
use crate::core::envelope::Envelope;
use crate::core::event_kind::EventKind;
use crate::core::ids::EventId;

/// The actor its events are written as.
pub const ACTOR: &str = "memory/consolidator";

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS beliefs(
    tenant TEXT NOT NULL, namespace TEXT NOT NULL, subject TEXT NOT NULL,
    fact_id TEXT NOT NULL, digest TEXT NOT NULL, seq INTEGER NOT NULL,
    PRIMARY KEY(tenant, namespace, subject));
";

/// The consolidator's rule.
#[derive(Debug, Clone, Copy, Default)]
pub struct Consolidator;

/// What a fact says, without where and when it was learned: two facts with the same digest
/// are one belief.
fn digest(fact: &FactLearned) -> String {
    let says = json!({
        "statement": fact.statement,
        "status": fact.status,
        "value": fact.value,
    });
    let hash = Sha256::digest(says.to_string().as_bytes());
    hash.iter().take(16).map(|b| format!("{b:02x}")).collect()
}

impl Deriver for Consolidator {
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
        // Not a fact, or one of a shape no writer makes: nothing to consolidate.
        let Ok(fact) = event.payload::<FactLearned>() else {
            return Ok(Derived::default());
        };
        let Some(subject) = fact.subject.as_deref() else {
            return Ok(Derived::default()); // a fact about nothing in particular is never replaced
        };
        let namespace = event.namespace_path();
        let new = event.event_id.as_str();
        let says = digest(&fact);
        let current: Option<(String, String)> = tx
            .query_row(
                "SELECT fact_id, digest FROM beliefs
                 WHERE tenant = ?1 AND namespace = ?2 AND subject = ?3",
                params![event.tenant, namespace, subject],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .optional()?;
        let superseded = match current {
            Some((old, _)) if old == new => return Ok(Derived::default()),
            Some((old, digest)) if digest == says => Some((new.to_string(), old, "duplicate")),
            other => {
                tx.execute(
                    "INSERT INTO beliefs(tenant, namespace, subject, fact_id, digest, seq)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6)
                     ON CONFLICT(tenant, namespace, subject) DO UPDATE SET
                       fact_id = excluded.fact_id, digest = excluded.digest, seq = excluded.seq",
                    params![event.tenant, namespace, subject, new, says, seq as i64],
                )?;
                other.map(|(old, _)| (old, new.to_string(), "replaced"))
            }
        };
        Ok(Derived::from(
            superseded
                .map(|(fact, by, reason)| {
                    let id = EventId::computed(&["fact_superseded", &fact, &by]);
                    Envelope::new(
                        event.tenant.clone(),
                        event.namespace.clone(),
                        ACTOR,
                        EventKind::FactSuperseded,
                        FactSuperseded {
                            fact,
                            by,
                            reason: reason.to_string(),
                            subject: Some(subject.to_string()),
                        }
                        .to_value(),
                    )
                    .with_id(id)
                    .with_cause(event.event_id.clone())
                })
                .into_iter()
                .collect::<Vec<_>>(),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rusqlite::Connection;

    fn fact(subject: &str, status: &str, ns: &[&str]) -> Envelope {
        Envelope::new(
            "t",
            ns.iter().copied(),
            "memory/extractor",
            EventKind::FactLearned,
            json!({"subject": subject, "statement": format!("{subject} is {status}"),
                   "status": status}),
        )
    }

    fn run(conn: &mut Connection, events: &[Envelope]) -> Vec<Envelope> {
        let tx = conn.transaction().unwrap();
        let out = events
            .iter()
            .enumerate()
            .flat_map(|(i, e)| {
                Consolidator
                    .derive(&tx, i as u64 + 1, e, ())
                    .unwrap()
                    .events
            })
            .collect();
        tx.commit().unwrap();
        out
    }

    #[test]
    fn a_changed_fact_replaces_the_belief_and_a_repeat_is_a_duplicate() {
        let mut conn = Connection::open_in_memory().unwrap();
        conn.execute_batch(SCHEMA).unwrap();
        let ns = ["facts", "n", "a"];
        let first = fact("claim/quay", "single_source", &ns);
        let again = fact("claim/quay", "single_source", &ns);
        let changed = fact("claim/quay", "confirmed", &ns);
        let elsewhere = fact("claim/quay", "confirmed", &["facts", "m", "a"]);
        let out = run(
            &mut conn,
            &[first.clone(), again.clone(), changed.clone(), elsewhere],
        );
        assert_eq!(out.len(), 2, "{out:#?}");
        assert_eq!(out[0].kind, EventKind::FactSuperseded);
        let superseded = |e: &Envelope| {
            let s: FactSuperseded = e.payload().unwrap();
            (s.fact, s.by, s.reason)
        };
        let id = |e: &Envelope| e.event_id.to_string();
        assert_eq!(
            superseded(&out[0]),
            (id(&again), id(&first), "duplicate".into())
        );
        assert_eq!(
            superseded(&out[1]),
            (id(&first), id(&changed), "replaced".into())
        );
        assert_eq!(out[1].namespace_path(), "facts/n/a");
        assert_eq!(out[1].cause.as_ref(), Some(&changed.event_id));
        // The same fact delivered again changes nothing; the same input gives the same ids.
        assert!(run(&mut conn, std::slice::from_ref(&changed)).is_empty());
        let mut fresh = Connection::open_in_memory().unwrap();
        fresh.execute_batch(SCHEMA).unwrap();
        let replay = run(&mut fresh, &[first, again, changed]);
        assert_eq!(
            replay.iter().map(|e| &e.event_id).collect::<Vec<_>>(),
            out.iter().map(|e| &e.event_id).collect::<Vec<_>>()
        );
    }
}
