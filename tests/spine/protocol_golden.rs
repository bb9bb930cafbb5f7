//! The typed protocol (`iron::protocol`) reads what the processes wrote before it existed
//! and writes it back byte-equal, so a process built before it, a ROS 2 peer or a log written
//! months ago sees no change.
//!
//! `tests/golden/protocol/events.jsonl` holds events as the processes wrote them to the log
//! before their kinds had payload types, one envelope per line. The first 15: a run of the
//! README's first command. The rest, one or more of each other kind: the same command with one
//! `iron ask`, and the workspace, operator, inbox and memory tests, captured at the log's
//! append (commit e2184d0).
//! `contexts.jsonl` holds a goal context of each sender, as each wrote it then: the inbox,
//! the engine (adding memory and its span), a delegating expert, the jobs gateway and
//! `iron task send --context`.

use iron::core::envelope::Envelope;
use iron::core::event_kind::EventKind;
use iron::protocol::TaskContext;
use iron::protocol::payload::{
    AnswerReceived, ChangeUnreviewable, ChatTurn, DeadLetter, DocumentSaved, EffectConfirmed,
    EffectIntent, ExpertFinished, ExpertWoke, FactLearned, FactSuperseded, HunkApplied,
    HunkDecided, HunkProposed, InterjectionRead, LessonLearned, MemoryInjected, ModelCall,
    OperatorRefused, Payload, PerceptionRead, ProjectorGap, QuestionAsked, ReplyDelivered,
    RoutingDecided, SourceChanged, SourceHealth, TaskDelegated, TaskJudged, TaskRejected,
    TriggerFired, VerifyFinished,
};

const GOLDEN: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/golden/protocol");

fn lines(file: &str) -> Vec<String> {
    let text = std::fs::read_to_string(format!("{GOLDEN}/{file}")).unwrap();
    text.lines().map(str::to_string).collect()
}

/// `event`'s payload read as `T` and written back.
fn round_trip<T: Payload>(event: &Envelope) -> String {
    let read: T = event
        .payload()
        .unwrap_or_else(|e| panic!("{e}: {}", event.payload));
    read.to_value().to_string()
}

#[test]
fn recorded_events_are_read_as_their_kinds_and_written_back_byte_equal() {
    let mut kinds = std::collections::BTreeSet::new();
    for line in lines("events.jsonl") {
        let event: Envelope = serde_json::from_str(&line).unwrap();
        let written = match &event.kind {
            EventKind::TaskRejected => round_trip::<TaskRejected>(&event),
            EventKind::TaskJudged => round_trip::<TaskJudged>(&event),
            EventKind::ReplyDelivered => round_trip::<ReplyDelivered>(&event),
            EventKind::TaskDelegated => round_trip::<TaskDelegated>(&event),
            EventKind::FactLearned => round_trip::<FactLearned>(&event),
            EventKind::ChatTurn => round_trip::<ChatTurn>(&event),
            EventKind::SourceChanged => round_trip::<SourceChanged>(&event),
            EventKind::FactSuperseded => round_trip::<FactSuperseded>(&event),
            EventKind::LessonLearned => round_trip::<LessonLearned>(&event),
            EventKind::DocumentSaved => round_trip::<DocumentSaved>(&event),
            EventKind::RoutingDecided => round_trip::<RoutingDecided>(&event),
            EventKind::ExpertWoke => round_trip::<ExpertWoke>(&event),
            EventKind::MemoryInjected => round_trip::<MemoryInjected>(&event),
            EventKind::PerceptionRead => round_trip::<PerceptionRead>(&event),
            EventKind::ModelCalled => round_trip::<ModelCall>(&event),
            EventKind::InterjectionRead => round_trip::<InterjectionRead>(&event),
            EventKind::ExpertFinished => round_trip::<ExpertFinished>(&event),
            EventKind::QuestionAsked => round_trip::<QuestionAsked>(&event),
            EventKind::AnswerReceived => round_trip::<AnswerReceived>(&event),
            EventKind::OperatorRefused => round_trip::<OperatorRefused>(&event),
            EventKind::SourceHealth => round_trip::<SourceHealth>(&event),
            EventKind::TriggerFired => round_trip::<TriggerFired>(&event),
            EventKind::DeadLetter => round_trip::<DeadLetter>(&event),
            EventKind::ProjectorGap => round_trip::<ProjectorGap>(&event),
            EventKind::HunkProposed => round_trip::<HunkProposed>(&event),
            EventKind::ChangeUnreviewable => round_trip::<ChangeUnreviewable>(&event),
            EventKind::HunkDecided => round_trip::<HunkDecided>(&event),
            EventKind::HunkApplied => round_trip::<HunkApplied>(&event),
            EventKind::EffectIntent => round_trip::<EffectIntent>(&event),
            EventKind::EffectConfirmed => round_trip::<EffectConfirmed>(&event),
            EventKind::VerifyFinished => round_trip::<VerifyFinished>(&event),
            other => panic!("no payload type for {other} in the golden file"),
        };
        assert_eq!(written, event.payload.to_string(), "{}", event.kind);
        assert_eq!(serde_json::to_string(&event).unwrap(), line);
        kinds.insert(event.kind.to_string());
    }
    assert_eq!(
        kinds.into_iter().collect::<Vec<_>>(),
        [
            "answer_received",
            "change_unreviewable",
            "chat_turn",
            "dead_letter",
            "document_saved",
            "effect_confirmed",
            "effect_intent",
            "expert_finished",
            "expert_woke",
            "fact_learned",
            "fact_superseded",
            "hunk_applied",
            "hunk_decided",
            "hunk_proposed",
            "interjection_read",
            "lesson_learned",
            "memory_injected",
            "model_called",
            "operator_refused",
            "perception_read",
            "projector_gap",
            "question_asked",
            "reply_delivered",
            "routing_decided",
            "source_changed",
            "source_health",
            "task_delegated",
            "task_judged",
            "task_rejected",
            "trigger_fired",
            "verify_finished"
        ]
    );
}

#[test]
fn recorded_goal_contexts_are_read_and_written_back_byte_equal() {
    let contexts = lines("contexts.jsonl");
    assert_eq!(contexts.len(), 5);
    for line in &contexts {
        let context = TaskContext::parse(line).unwrap_or_else(|e| panic!("{e}: {line}"));
        assert_eq!(context.to_json(), *line);
    }
    // What each reader takes from them.
    let inbox = TaskContext::parse(&contexts[0]).unwrap();
    assert_eq!(inbox.turns, vec![inbox.cause.clone().unwrap()]);
    assert_eq!(inbox.user_id.as_deref(), Some("ana"));
    let engine = TaskContext::parse(&contexts[1]).unwrap();
    assert!(engine.memory.is_some() && engine.traceparent.is_some());
    let delegated = TaskContext::parse(&contexts[2]).unwrap();
    assert_eq!(delegated.delegated_by.as_deref(), Some("newsroom/analyst"));
    let job = TaskContext::parse(&contexts[3]).unwrap();
    assert_eq!(job.job.as_deref(), Some("bulletin-2026-12-05"));
    let sent = TaskContext::parse(&contexts[4]).unwrap();
    assert_eq!(sent.extra["priority"], "high");
}

#[test]
fn an_event_of_another_shape_is_refused_naming_it_never_read_as_empty() {
    let line = &lines("events.jsonl")[0];
    let mut event: Envelope = serde_json::from_str(line).unwrap();
    event.payload["task_id"] = serde_json::json!(7);
    let e = event.payload::<TaskDelegated>().unwrap_err().to_string();
    assert!(
        e.contains(&event.event_id.to_string()) && e.contains("task_delegated"),
        "{e}"
    );
}
