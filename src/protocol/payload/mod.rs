//! Event payloads as types: one per event kind, and [`Envelope::payload`], which reads an
//! event as its kind's type or says why it cannot. Writers build these types and readers read
//! them, so the compiler checks both ends of every event.
//!
//! Payloads go on the log as JSON objects with sorted keys, which is what
//! [`Payload::to_value`] makes of these types, so a payload read and written again is the
//! same bytes (`tests/spine/protocol_golden.rs` holds a recorded event of every kind to
//! that). The types of kinds whose writers add fields of their own (a delivery channel's, a
//! fact's origin) keep what they do not name in `rest`; the others name every field their
//! writer writes, and a field added later is optional, so older events still read.

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

mod plane;
mod run;
mod workspace;

pub use plane::{
    DeadLetter, FeedHealth, ProjectorGap, SequenceProblem, SourceHealth, Status, TriggerFired,
};
pub use run::{
    AnswerReceived, ExpertFinished, ExpertWoke, FinishReason, ForkedAt, InjectedItem,
    InterjectionRead, MemoryInjected, ModelCall, OperatorRefused, PerceptionRead, QuestionAsked,
    ReadOutcome, RecordedPrompt, RouteMethod, RoutingContext, RoutingDecided, Score, SourceRead,
    Spend, TaskInput, ToolCall, ToolSpec, Usage,
};
pub use workspace::{
    ChangeUnreviewable, EffectConfirmed, EffectIntent, HunkApplied, HunkDecided, HunkProposed,
    VerifyFinished,
};

use super::ProtocolError;
use super::report::{Allowed, Spent};
use crate::core::envelope::Envelope;
use crate::core::event_kind::EventKind;

/// The payload of events of one kind.
pub trait Payload: Serialize + DeserializeOwned {
    /// The kind whose payload this is.
    const KIND: EventKind;

    /// Whether events of `kind` carry this payload (only [`Payload::KIND`], unless several kinds
    /// share one shape).
    fn is_kind(kind: &EventKind) -> bool {
        *kind == Self::KIND
    }

    /// This payload as the JSON value an [`Envelope`] carries.
    fn to_value(&self) -> Value {
        serde_json::to_value(self).expect("a payload struct serialises to JSON")
    }
}

impl Envelope {
    /// The payload read as `T`: refused when the event is of another kind, or when its
    /// payload does not have `T`'s shape (a missing field, a field of the wrong type).
    pub fn payload<T: Payload>(&self) -> Result<T, ProtocolError> {
        if !T::is_kind(&self.kind) {
            return Err(ProtocolError::WrongKind {
                event: self.event_id.to_string(),
                expected: T::KIND,
                found: self.kind.clone(),
            });
        }
        T::deserialize(&self.payload).map_err(|source| ProtocolError::Payload {
            event: self.event_id.to_string(),
            kind: self.kind.clone(),
            source,
        })
    }

    /// The task an event's payload names: its `task_id`, or its `task` (what tool events
    /// call it), when not empty. Events of every kind that is about a task name it so.
    pub fn task_named(&self) -> Option<&str> {
        ["task_id", "task"]
            .iter()
            .filter_map(|k| self.payload.get(*k).and_then(Value::as_str))
            .find(|t| !t.is_empty())
    }
}

/// `chat_turn`: a person's message, as the inbox took it in.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChatTurn {
    /// What they said.
    pub text: String,
    /// Where a reply goes on their channel (a chat id; `ask:<id>` for `iron ask`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub destination: Option<String>,
    /// The channel it came in on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    /// Who said it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user_id: Option<String>,
    /// Whose turn it is (`user` for what a person said).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub role: Option<String>,
    /// The session the inbox put it in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    /// What came with it, as the channel gave it (JSON, or the text when it was not JSON).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attachments: Option<Value>,
    /// When the inbox received it, in milliseconds since the epoch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub received_ms: Option<i64>,
    /// Fields this version does not name.
    #[serde(flatten)]
    pub rest: Map<String, Value>,
}

impl Payload for ChatTurn {
    const KIND: EventKind = EventKind::ChatTurn;
}

/// `task_rejected`: the engine refused a goal before any expert ran.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskRejected {
    /// The refused task.
    pub task_id: String,
    /// The expert it named, when it named one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub domain: Option<String>,
    /// Why, as a code (`unknown_domain`, `no_route`, …).
    pub code: String,
    /// Why, for a person.
    pub reason: String,
    /// Fields this version does not name.
    #[serde(flatten)]
    pub rest: Map<String, Value>,
}

impl Payload for TaskRejected {
    const KIND: EventKind = EventKind::TaskRejected;
}

/// `task_judged`: the engine's verdict on one step of a task, with what was asked and
/// answered (memory learns from it).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskJudged {
    /// The step's task (`<task>-<n>` for a step of a routed plan).
    pub task_id: String,
    /// The expert that ran it.
    pub domain: String,
    /// Whether it answered.
    pub answered: bool,
    /// How the verdict was reached. This and the fields below are absent from judgements
    /// recorded before they existed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub method: Option<String>,
    /// The instruction, clipped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instruction: Option<String>,
    /// The answer, clipped; empty when it did not answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answer: Option<String>,
    /// Why it did not answer; empty when it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Fields this version does not name.
    #[serde(flatten)]
    pub rest: Map<String, Value>,
}

impl Payload for TaskJudged {
    const KIND: EventKind = EventKind::TaskJudged;
}

/// `reply_delivered`: a reply sent (or not) through a delivery channel.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReplyDelivered {
    /// The task whose reply it is.
    pub task_id: String,
    /// Whether the channel took it.
    pub delivered: bool,
    /// The channel.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub channel: Option<String>,
    /// The text sent (or that was to be sent).
    pub text: String,
    /// Why it was not delivered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The structured payload that went with it (a bulletin's claims).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
    /// The channel's own fields (destination, delivery id, the sink's answer).
    #[serde(flatten)]
    pub rest: Map<String, Value>,
}

impl Payload for ReplyDelivered {
    const KIND: EventKind = EventKind::ReplyDelivered;
}

/// `task_delegated`: the engine handed a step to an expert process, and how that ended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskDelegated {
    /// The step's task.
    pub task_id: String,
    /// The expert.
    pub domain: String,
    /// The expert process's node.
    pub expert: String,
    /// How the goal ended, as the action reported it (`succeeded`, `aborted`, …).
    pub status: String,
    /// Why it could not run, when it could not.
    pub error: String,
    /// What it spent, as it reported it (none when it reported nothing).
    pub spent: Option<Spent>,
    /// Its budget, as it reported it.
    pub budget: Option<Allowed>,
    /// Fields this version does not name.
    #[serde(flatten)]
    pub rest: Map<String, Value>,
}

impl Payload for TaskDelegated {
    const KIND: EventKind = EventKind::TaskDelegated;
}

/// `fact_learned`: something memory now believes, in the namespace it was learned for.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct FactLearned {
    /// What it is about; a later fact about the same subject in the same namespace replaces
    /// it. A fact with none is about nothing in particular and is never replaced.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subject: Option<String>,
    /// What it says, for a reader.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub statement: Option<String>,
    /// Its status where it has one (a claim's `confirmed`, `single_source`, …).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
    /// A structured value (a tool's answer).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<Value>,
    /// How it was learned: `structured` (restated from a record) or `model` (read by one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub method: Option<String>,
    /// The reports a claim rests on (a bulletin's claim).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sources: Option<Vec<CitedSource>>,
    /// Where else it came from (`source`, `claim`, `bulletin`, …).
    #[serde(flatten)]
    pub rest: Map<String, Value>,
}

/// One report a claim cites.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CitedSource {
    /// The outlet that published it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outlet: Option<String>,
    /// The rest as the bulletin gave it (`owner`, `url`, …).
    #[serde(flatten)]
    pub rest: Map<String, Value>,
}

impl Payload for FactLearned {
    const KIND: EventKind = EventKind::FactLearned;
}

/// `lesson_learned`: what the procedural reviewer drew from repeated failures of a role.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LessonLearned {
    /// The lesson, for the role's next tasks.
    pub statement: String,
    /// The role it is for (`<mesh>/<role>`).
    pub role: String,
    /// The reason its tasks failed, clipped.
    pub reason: String,
    /// How many of its tasks failed for it.
    pub failures: u64,
    /// What it is about (`lesson/<digest of role and reason>`): a later lesson on the same
    /// subject replaces it.
    pub subject: String,
    /// The tasks that failed, latest first.
    pub tasks: Vec<String>,
}

impl Payload for LessonLearned {
    const KIND: EventKind = EventKind::LessonLearned;
}

/// `source_changed`: a perception source saw new items (one part of a change that is split
/// to fit the log).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SourceChanged {
    /// The mesh the source belongs to.
    pub mesh: String,
    /// The source.
    pub source: String,
    /// The ids of every item the source now shows.
    pub current: Vec<String>,
    /// The new items, each as the source read it.
    pub new: Vec<Value>,
    /// Which part of the change this is, and of how many (`part`, `parts`).
    #[serde(flatten)]
    pub rest: Map<String, Value>,
}

impl Payload for SourceChanged {
    const KIND: EventKind = EventKind::SourceChanged;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(kind: EventKind, payload: Value) -> Envelope {
        Envelope::new("default", ["tasks", "t"], "engine", kind, payload)
    }

    #[test]
    fn a_payload_is_read_as_its_kind_and_written_back_unchanged() {
        let payload = serde_json::json!({"task_id": "t", "domain": "a/b", "code": "unknown_domain",
            "reason": "no such expert", "later_field": [1, 2]});
        let e = event(EventKind::TaskRejected, payload.clone());
        let read: TaskRejected = e.payload().unwrap();
        assert_eq!(read.code, "unknown_domain");
        assert_eq!(read.to_value().to_string(), payload.to_string());
    }

    #[test]
    fn a_payload_of_another_kind_or_shape_is_refused_naming_the_event() {
        let e = event(EventKind::TaskJudged, serde_json::json!({"task_id": "t"}));
        let wrong = e.payload::<TaskRejected>().unwrap_err().to_string();
        assert!(
            wrong.contains("is `task_judged`, not `task_rejected`"),
            "{wrong}"
        );
        let malformed = e.payload::<TaskJudged>().unwrap_err().to_string();
        assert!(
            malformed.contains(&e.event_id.to_string()) && malformed.contains("missing field"),
            "{malformed}"
        );
    }
}

/// `fact_superseded`: a fact memory no longer believes, and the one that took its place.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FactSuperseded {
    /// The event id of the fact no longer believed.
    pub fact: String,
    /// The event id of the fact that replaced it (or repeated it, for a duplicate).
    pub by: String,
    /// `replaced` or `duplicate`.
    pub reason: String,
    /// What both are about.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subject: Option<String>,
}

impl Payload for FactSuperseded {
    const KIND: EventKind = EventKind::FactSuperseded;
}

/// `document_saved`: a document put in the object store for memory, its text read by the
/// documents worker.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DocumentSaved {
    /// Its file name or URL.
    pub name: String,
    /// Its title (the name when it gave none).
    pub title: String,
    /// Its media type (`text/plain`, `text/html`, `application/pdf`).
    pub media_type: String,
    /// Its size in bytes.
    pub size: u64,
    /// The SHA-256 of its bytes: its key in the object store.
    pub digest: String,
    /// The object store bucket it is in.
    pub bucket: String,
    /// Pages of text it holds.
    pub pages: u64,
}

impl Payload for DocumentSaved {
    const KIND: EventKind = EventKind::DocumentSaved;
}
