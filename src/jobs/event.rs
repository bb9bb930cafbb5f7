//! What a job's diary holds: one typed enum of job events, the entry they travel in, their
//! computed ids, the subjects of the diary and the wake queue, and step fingerprints.
//!
//! Every id is computed from the event's logical identity (job, step key, kind, occurrence),
//! so recording the same thing twice stores it once.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::core::envelope::validate_token;
use crate::core::identity::Statement;
use crate::core::ids::EventId;

use super::JobError;

/// First token of every jobs subject.
pub const ROOT: &str = "jobs";

/// The diary of one job: `jobs.<mesh>.evt.<job>` (read, never consumed).
pub fn diary_subject(mesh: &str, job: &str) -> String {
    format!("{ROOT}.{mesh}.evt.{job}")
}

/// Every diary of a mesh (`*` for every mesh).
pub fn diaries_filter(mesh: &str) -> String {
    format!("{ROOT}.{mesh}.evt.>")
}

/// The wake queue entry of one job: `jobs.<mesh>.wake.<job>` (consumed and acknowledged).
pub fn wake_subject(mesh: &str, job: &str) -> String {
    format!("{ROOT}.{mesh}.wake.{job}")
}

/// The wake queue of a mesh.
pub fn wakes_filter(mesh: &str) -> String {
    format!("{ROOT}.{mesh}.wake.>")
}

/// The job id in a diary or wake subject.
pub fn job_of_subject(subject: &str) -> Option<(&str, &str)> {
    let mut it = subject.split('.');
    let (root, mesh, _kind, job) = (it.next()?, it.next()?, it.next()?, it.next()?);
    (root == ROOT && it.next().is_none()).then_some((mesh, job))
}

/// Checks a mesh, role, flow or job name: it becomes a subject token.
pub fn check_token(field: &str, token: &str) -> Result<(), JobError> {
    validate_token(field, token).map_err(|e| JobError::Invalid(e.to_string()))
}

/// One thing that happened to a job. Serialized with `kind` as the tag.
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum JobEvent {
    /// `iron jobs start`: which flow, with what input.
    JobStarted {
        mesh: String,
        role: String,
        flow: String,
        input: Value,
        /// SHA-256 of the flow's source when it is a file (Python flows).
        #[serde(default)]
        flow_hash: Option<String>,
    },
    /// A step finished; its result is what replay returns.
    StepDone {
        step: String,
        /// `None` in older journals: trusted as is.
        #[serde(default)]
        fingerprint: Option<String>,
        result: Value,
    },
    /// An irreversible action is about to be taken.
    EffectIntent {
        step: String,
        #[serde(default)]
        fingerprint: Option<String>,
    },
    /// A fresh observation showed the action took effect.
    EffectConfirmed { step: String, observation: Value },
    /// A durable timer, due at `due_ms` (milliseconds since the Unix epoch).
    TimerSet { timer: String, due_ms: u64 },
    /// The clock saw the timer due.
    TimerDue { timer: String, tick: u64 },
    /// The flow asks a person.
    ApprovalRequested { name: String, prompt: String },
    /// A person answered, proving it with `statement` (see [`super::people`]).
    ApprovalGiven {
        name: String,
        approved: bool,
        #[serde(default)]
        note: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        statement: Option<Statement>,
    },
    /// A named signal with a payload.
    Signal { name: String, payload: Value },
    /// The flow needs an expert's judgment: the gateway sends `instruction` to `domain` as an
    /// AolTask and answers with the signal `signal`.
    ExpertRequested {
        request: String,
        domain: String,
        instruction: String,
        signal: String,
    },
    /// The flow stopped until `on` happens; the job is only rows now.
    Waiting { on: String },
    /// The job stopped and needs a person.
    Parked { reason: String },
    /// A person resumed a parked job.
    Resumed {
        #[serde(default)]
        note: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        statement: Option<Statement>,
    },
    /// A person cancelled the job; it never runs again.
    Cancelled {
        #[serde(default)]
        reason: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        statement: Option<Statement>,
    },
    /// The flow returned.
    Done { output: Value },
    /// A runner holding the lease at `epoch` took the job: from here on only a runner of that
    /// epoch or a later one may write to the diary.
    Claimed { epoch: u64 },
}

impl JobEvent {
    /// The snake_case kind.
    pub fn kind(&self) -> &'static str {
        match self {
            JobEvent::JobStarted { .. } => "job_started",
            JobEvent::StepDone { .. } => "step_done",
            JobEvent::EffectIntent { .. } => "effect_intent",
            JobEvent::EffectConfirmed { .. } => "effect_confirmed",
            JobEvent::TimerSet { .. } => "timer_set",
            JobEvent::TimerDue { .. } => "timer_due",
            JobEvent::ApprovalRequested { .. } => "approval_requested",
            JobEvent::ApprovalGiven { .. } => "approval_given",
            JobEvent::Signal { .. } => "signal",
            JobEvent::ExpertRequested { .. } => "expert_requested",
            JobEvent::Waiting { .. } => "waiting",
            JobEvent::Parked { .. } => "parked",
            JobEvent::Resumed { .. } => "resumed",
            JobEvent::Cancelled { .. } => "cancelled",
            JobEvent::Done { .. } => "done",
            JobEvent::Claimed { .. } => "claimed",
        }
    }
}

/// One diary message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Entry {
    /// Computed id (also the log's message id).
    pub id: EventId,
    /// Milliseconds since the Unix epoch, when written.
    pub ts: u64,
    /// The job.
    pub job: String,
    /// Who wrote it: `runner/<mesh>/<holder>@<epoch>`, `clock`, `cli`.
    pub by: String,
    /// What happened.
    #[serde(flatten)]
    pub event: JobEvent,
}

/// An entry as read back, with its stream sequence.
#[derive(Debug, Clone, PartialEq)]
pub struct Stored {
    /// Stream sequence.
    pub seq: u64,
    /// The entry.
    pub entry: Entry,
}

/// The id of an event whose identity is `(job, parts…)`.
pub fn event_id(job: &str, parts: &[&str]) -> EventId {
    let mut all = vec!["job", job];
    all.extend_from_slice(parts);
    EventId::computed(&all)
}

/// The id of a timer's due event: computed from `(timer, tick)`.
pub fn timer_due_id(job: &str, timer: &str, tick: u64) -> EventId {
    event_id(job, &["timer_due", timer, &tick.to_string()])
}

/// The key of the `occurrence`-th use of `name` in one run of a flow (`fetch#0`).
pub fn step_key(name: &str, occurrence: u32) -> String {
    format!("{name}#{occurrence}")
}

/// JSON with object keys sorted at every level, no whitespace: equal values print alike.
pub fn canonical_json(value: &Value) -> String {
    fn write(value: &Value, out: &mut String) {
        match value {
            Value::Object(map) => {
                let mut keys: Vec<&String> = map.keys().collect();
                keys.sort();
                out.push('{');
                for (i, k) in keys.into_iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    out.push_str(&Value::String(k.clone()).to_string());
                    out.push(':');
                    write(&map[k], out);
                }
                out.push('}');
            }
            Value::Array(items) => {
                out.push('[');
                for (i, v) in items.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    write(v, out);
                }
                out.push(']');
            }
            other => out.push_str(&other.to_string()),
        }
    }
    let mut out = String::new();
    write(value, &mut out);
    out
}

/// The fingerprint of a call: step name, function identity and canonical arguments.
pub fn fingerprint(name: &str, function: &str, args: &Value) -> String {
    let mut hasher = Sha256::new();
    for part in [name, function, &canonical_json(args)] {
        hasher.update((part.len() as u64).to_be_bytes());
        hasher.update(part.as_bytes());
    }
    hex::encode(&hasher.finalize()[..16])
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn fingerprints_ignore_key_order_but_not_values_or_function() {
        let a = fingerprint("fetch", "f", &json!({"a": 1, "b": [1, {"y": 2, "x": 1}]}));
        let b = fingerprint("fetch", "f", &json!({"b": [1, {"x": 1, "y": 2}], "a": 1}));
        assert_eq!(a, b);
        assert_ne!(
            a,
            fingerprint("fetch", "g", &json!({"a": 1, "b": [1, {"x": 1, "y": 2}]}))
        );
        assert_ne!(
            a,
            fingerprint("fetch", "f", &json!({"a": 2, "b": [1, {"x": 1, "y": 2}]}))
        );
    }

    #[test]
    fn entries_round_trip_with_kind_inline() {
        let entry = Entry {
            id: event_id("j1", &["s#0", "step_done"]),
            ts: 1,
            job: "j1".into(),
            by: "cli".into(),
            event: JobEvent::StepDone {
                step: "s#0".into(),
                fingerprint: None,
                result: json!(3),
            },
        };
        let text = serde_json::to_string(&entry).unwrap();
        assert!(text.contains("\"kind\":\"step_done\""), "{text}");
        assert_eq!(serde_json::from_str::<Entry>(&text).unwrap(), entry);
        // An older entry without a fingerprint still reads.
        let old =
            r#"{"id":"x","ts":1,"job":"j","by":"r","kind":"step_done","step":"s#0","result":1}"#;
        assert!(matches!(
            serde_json::from_str::<Entry>(old).unwrap().event,
            JobEvent::StepDone {
                fingerprint: None,
                ..
            }
        ));
    }

    #[test]
    fn subjects_parse_back() {
        assert_eq!(
            job_of_subject(&diary_subject("newsroom", "j-1")),
            Some(("newsroom", "j-1"))
        );
        assert_eq!(job_of_subject("jobs.a.evt"), None);
    }
}
