//! Triggers: what starts a flow without a person (`triggers:` in AEM.md, compiled into the
//! catalog). Three kinds:
//!
//! - **sources** ([`sources`]): new items on perception sources. Sources write
//!   `source_changed` events to the log; the trigger node folds them and, once the watched
//!   sources have been quiet for the trigger's settle time, starts one job for everything new.
//! - **schedule** ([`schedule`]): each tick of a cron expression, started by the clock.
//! - **webhook** ([`webhook`]): an authenticated `POST /hooks/<mesh>/<trigger>`.
//!
//! A trigger's job id is computed from what fired it (the new item ids, the tick, the request's
//! idempotency key or body), and a job is started only when no job with that id exists, so a
//! re-read feed, a restart or a second trigger process never starts the same work twice.

pub mod node;
pub mod schedule;
pub mod sources;
pub mod webhook;

use crate::protocol::Payload;
use crate::protocol::payload::TriggerFired;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use tracing::info;

use crate::aem::TriggerEntry;
use crate::core::durable::EventLog;
use crate::core::envelope::Envelope;
use crate::core::ids::EventId;
use crate::memory::emit;

use super::JobError;
use super::ops::Start;

/// One trigger of the catalog, with its mesh and name.
#[derive(Debug, Clone, PartialEq)]
pub struct Trigger {
    /// The mesh.
    pub mesh: String,
    /// Its name under `triggers:`.
    pub name: String,
    /// The compiled declaration.
    pub entry: TriggerEntry,
}

impl Trigger {
    /// Every trigger of every active mesh of `catalog`.
    pub fn all(catalog: &crate::aem::Catalog) -> Vec<Trigger> {
        catalog
            .meshes
            .values()
            .filter(|m| m.status == crate::aem::MeshStatus::Active)
            .flat_map(|m| {
                m.triggers.iter().map(|(name, entry)| Trigger {
                    mesh: m.name.clone(),
                    name: name.clone(),
                    entry: entry.clone(),
                })
            })
            .collect()
    }

    /// `<mesh>/<trigger>`, for logs.
    pub fn label(&self) -> String {
        format!("{}/{}", self.mesh, self.name)
    }

    /// The job id for what fired the trigger: `t-` and 24 hex digits of a hash of the mesh,
    /// the trigger and `what`.
    pub fn job_id(&self, what: &str) -> String {
        let mut h = Sha256::new();
        for part in [self.mesh.as_str(), self.name.as_str(), what] {
            h.update((part.len() as u64).to_be_bytes());
            h.update(part.as_bytes());
        }
        format!("t-{}", &hex::encode(h.finalize())[..24])
    }

    /// The flow's input: the declared `input`, then what fired the trigger (`fired`'s keys
    /// win), and the trigger's name under `trigger`.
    pub fn input(&self, fired: Value) -> Value {
        let mut input = match &self.entry.input {
            Value::Object(m) => m.clone(),
            _ => serde_json::Map::new(),
        };
        if let Value::Object(f) = fired {
            input.extend(f);
        }
        input.insert("trigger".into(), json!(self.name));
        Value::Object(input)
    }

    /// Starts the trigger's flow as job [`Trigger::job_id`]`(what)` unless it exists, and
    /// records `trigger_fired` on the memory log. `Ok(None)` when the job already existed.
    pub async fn fire<L: EventLog>(
        &self,
        log: &L,
        tenant: &str,
        what: &str,
        fired: Value,
        summary: &str,
    ) -> Result<Option<String>, JobError> {
        let job = self.job_id(what);
        let by = format!("trigger/{}/{}", self.mesh, self.name);
        let start = Start {
            mesh: &self.mesh,
            role: &self.entry.role,
            flow: &self.entry.flow,
            job: &job,
            by: &by,
        };
        let started = start
            .once(log, self.input(fired), Some(self.entry.flow_sha256.clone()))
            .await?;
        if !started {
            return Ok(None);
        }
        info!(trigger = %self.label(), job, "{summary}");
        let envelope = Envelope::new(
            tenant.to_string(),
            ["triggers", self.mesh.as_str(), self.name.as_str()],
            by,
            TriggerFired::KIND,
            TriggerFired {
                mesh: self.mesh.clone(),
                trigger: self.name.clone(),
                job: job.clone(),
                flow: format!("{}/{}/{}", self.mesh, self.entry.role, self.entry.flow),
                what: summary.to_string(),
            }
            .to_value(),
        )
        .with_id(EventId::computed(&["trigger_fired", &job]));
        if let Err(e) = emit(log, &envelope).await {
            tracing::warn!(trigger = %self.label(), job, "started, but trigger_fired was not written: {e}");
        }
        Ok(Some(job))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::aem::TriggerOn;

    fn trigger() -> Trigger {
        Trigger {
            mesh: "newsroom".into(),
            name: "new_items".into(),
            entry: TriggerEntry {
                role: "monitor".into(),
                flow: "monitor".into(),
                flow_sha256: "00".into(),
                on: TriggerOn::Schedule {
                    cron: "* * * * *".into(),
                },
                input: json!({"channel": "bulletins", "trigger": "spoofed"}),
            },
        }
    }

    #[test]
    fn job_ids_are_computed_from_what_fired() {
        let t = trigger();
        assert_eq!(t.job_id("tick:60"), t.job_id("tick:60"));
        assert_ne!(t.job_id("tick:60"), t.job_id("tick:120"));
        let mut other = trigger();
        other.name = "other".into();
        assert_ne!(t.job_id("tick:60"), other.job_id("tick:60"));
        let id = t.job_id("x");
        assert!(id.starts_with("t-") && id.len() == 26, "{id}");
    }

    #[test]
    fn input_is_the_declaration_then_what_fired() {
        let input = trigger().input(json!({"tick": 5, "channel": "override"}));
        assert_eq!(
            input,
            json!({"channel": "override", "tick": 5, "trigger": "new_items"})
        );
    }
}
