//! The kinds of event on the durable log: one typed enum, serialized as snake_case strings.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

macro_rules! event_kinds {
    ($( $(#[$doc:meta])* $variant:ident => $name:literal, )*) => {
        /// What an event records. Serialized as its snake_case name (`"chat_turn"`).
        ///
        /// Iron writes only the named kinds; [`EventKind::Unknown`] exists so that a reader can
        /// represent an event written by a newer or foreign publisher. `emit()` refuses to write
        /// it (fail closed: add the kind here instead).
        #[non_exhaustive]
        #[derive(Debug, Clone, PartialEq, Eq, Hash)]
        pub enum EventKind {
            $( $(#[$doc])* $variant, )*
            /// A kind this build does not know, as read from the log.
            Unknown(String),
        }

        impl EventKind {
            /// Every kind this build can write, in declaration order.
            pub const KNOWN: &'static [EventKind] = &[$(EventKind::$variant,)*];

            /// The wire name.
            pub fn as_str(&self) -> &str {
                match self {
                    $( EventKind::$variant => $name, )*
                    EventKind::Unknown(name) => name,
                }
            }

            /// Reads a wire name; an unrecognised name becomes [`EventKind::Unknown`].
            pub fn from_name(name: &str) -> Self {
                match name {
                    $( $name => EventKind::$variant, )*
                    other => EventKind::Unknown(other.to_owned()),
                }
            }
        }
    };
}

event_kinds! {
    /// A conversational turn (user or agent).
    ChatTurn => "chat_turn",
    /// A tool was called.
    ToolCall => "tool_call",
    /// A tool returned.
    ToolResult => "tool_result",
    /// Gate 1 or gate 2 refused a tool call.
    GateDenied => "gate_denied",
    /// A gate allowed a tool call.
    GateAllowed => "gate_allowed",
    /// A fact was learned or stated.
    FactLearned => "fact_learned",
    /// A fact is no longer the current belief: a newer one replaced it, or it repeated one
    /// already held (`fact`, `by`, `reason`: `replaced` | `duplicate`).
    FactSuperseded => "fact_superseded",
    /// The procedural reviewer wrote a lesson for a role from its repeated failures
    /// (`statement`, `role`, `reason`, `failures`, `tasks`).
    LessonLearned => "lesson_learned",
    /// A document was saved to memory: its bytes are in the object store (`bucket`, named by
    /// `digest`), with `name`, `title`, `media_type`, `size` and `pages`.
    DocumentSaved => "document_saved",
    /// A decision was taken.
    Decision => "decision",
    /// The engine routed an instruction to an expert.
    RoutingDecided => "routing_decided",
    /// The engine judged whether a result answered the task.
    TaskJudged => "task_judged",
    /// The engine refused a task (unknown domain, empty instruction, parked mesh, too deep).
    TaskRejected => "task_rejected",
    /// An expert process was spawned for a task, and how it ended.
    TaskDelegated => "task_delegated",
    /// A reply went out through a declared delivery channel.
    ReplyDelivered => "reply_delivered",
    /// An expert's model answered one turn of its loop.
    ModelCalled => "model_called",
    /// An operator's correction was read into a running task.
    InterjectionRead => "interjection_read",
    /// An expert was given memory at wake: the prefixes searched and the events in its block.
    MemoryInjected => "memory_injected",
    /// An expert read its perception sources at wake (what each gave, or why not).
    PerceptionRead => "perception_read",
    /// An expert began a task: its model, the task as its loop was given it (instruction,
    /// memory and perception text) and the tools it offered, so the task can be replayed.
    ExpertWoke => "expert_woke",
    /// A perception source's items changed: the new records and the ids it shows now.
    SourceChanged => "source_changed",
    /// A perception source's inputs changed health: one started failing, was cut at a size
    /// limit or recovered (`mesh`, `source`, `failing`: every input fails, `feeds`: each
    /// input's health).
    SourceHealth => "source_health",
    /// A trigger started a flow (what triggered it and the job it started).
    TriggerFired => "trigger_fired",
    /// An accepted message could not be written to the log (too large, invalid) and was set
    /// aside instead of blocking the ones behind it.
    DeadLetter => "dead_letter",
    /// An expert stopped to ask the operator a question.
    QuestionAsked => "question_asked",
    /// The operator's answer reached the expert.
    AnswerReceived => "answer_received",
    /// An answer or correction from someone who is neither the task's owner nor a configured
    /// operator was refused.
    OperatorRefused => "operator_refused",
    /// An expert's loop ended (with its status and what it spent).
    ExpertFinished => "expert_finished",
    /// An irreversible action is about to fire (written before it).
    EffectIntent => "effect_intent",
    /// An independent observation confirmed an irreversible action.
    EffectConfirmed => "effect_confirmed",
    /// A durable job started.
    JobStarted => "job_started",
    /// A step of a durable job finished and its result is journaled.
    StepDone => "step_done",
    /// A durable job is waiting (timer, approval, signal).
    JobWaiting => "job_waiting",
    /// A durable job is parked until a person resumes or cancels it.
    JobParked => "job_parked",
    /// A durable job returned.
    JobDone => "job_done",
    /// A timer fired (id computed from timer and tick).
    TimerDue => "timer_due",
    /// The projector found a gap or a backwards step in the log and stopped.
    ProjectorGap => "projector_gap",
    /// A hunk of what an expert changed in its scratch, waiting for a person's decision.
    HunkProposed => "hunk_proposed",
    /// A changed file that cannot be reviewed by hunk (binary, mode only): never applied.
    ChangeUnreviewable => "change_unreviewable",
    /// A person approved or rejected a proposed hunk.
    HunkDecided => "hunk_decided",
    /// An approved hunk was applied to the real tree.
    HunkApplied => "hunk_applied",
    /// The mesh's verify command ran on the tree after hunks were applied.
    VerifyFinished => "verify_finished",
}

impl EventKind {
    /// True for the kinds this build declares (not [`EventKind::Unknown`]).
    pub fn is_known(&self) -> bool {
        !matches!(self, EventKind::Unknown(_))
    }
}

impl fmt::Display for EventKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for EventKind {
    type Err = std::convert::Infallible;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Ok(Self::from_name(s))
    }
}

impl Serialize for EventKind {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for EventKind {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let name = String::deserialize(deserializer)?;
        Ok(Self::from_name(&name))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_round_trip_as_snake_case_strings() {
        for kind in EventKind::KNOWN {
            let json = serde_json::to_string(kind).unwrap();
            assert_eq!(json, format!("\"{}\"", kind.as_str()));
            let back: EventKind = serde_json::from_str(&json).unwrap();
            assert_eq!(&back, kind);
            assert!(
                kind.as_str()
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b == b'_')
            );
        }
        assert_eq!(
            serde_json::to_string(&EventKind::RoutingDecided).unwrap(),
            "\"routing_decided\""
        );
    }

    #[test]
    fn a_foreign_kind_is_read_but_marked_unknown() {
        let kind: EventKind = serde_json::from_str("\"weather_report\"").unwrap();
        assert_eq!(kind, EventKind::Unknown("weather_report".into()));
        assert!(!kind.is_known());
    }
}
