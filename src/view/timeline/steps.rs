//! Each step of a timeline in one line, read from its event's payload: what a person needs to
//! follow the task without opening the payload (which `--json` keeps whole).

use super::EXCERPT;
use crate::core::envelope::Envelope;
use crate::core::event_kind::EventKind;
use crate::core::text::{clip, one_line};
use crate::protocol::Payload;
use crate::protocol::payload::{
    AnswerReceived, ChangeUnreviewable, EffectConfirmed, EffectIntent, ExpertFinished, ExpertWoke,
    FactLearned, HunkApplied, HunkDecided, HunkProposed, InterjectionRead, LessonLearned,
    MemoryInjected, ModelCall, OperatorRefused, PerceptionRead, QuestionAsked, ReadOutcome,
    ReplyDelivered, RoutingDecided, TaskDelegated, TaskJudged, TaskRejected, VerifyFinished,
};
use crate::protocol::tool::{ToolOutcome, ToolRecord};

/// A step's label and one line, read from its payload. A payload that does not have its
/// kind's shape is shown as such, never skipped.
///
/// Long because it is a table: one arm per event kind, each the line a person reads for it.
/// Kept whole so that a kind's line is found by its kind, in one place.
pub(super) fn describe(e: &Envelope) -> (&'static str, String) {
    let excerpt = |text: &str| one_line(text, EXCERPT);
    match &e.kind {
        EventKind::RoutingDecided => read(e, "routed", |r: RoutingDecided| {
            let by = match r.forked_from {
                Some(_) => "a fork",
                None => r.by.name(),
            };
            let part = match r.of {
                0 | 1 => String::new(),
                of => format!("; part {} of {of}", r.part),
            };
            format!(
                "to {} ({by}{part}); memory of the conversation: {} facts, {} turns",
                r.domain, r.context.facts, r.context.turns,
            )
        }),
        EventKind::TaskRejected => read(e, "rejected", |r: TaskRejected| {
            format!("{}: {}", r.code, r.reason)
        }),
        EventKind::PerceptionRead => read(e, "perceived", |p: PerceptionRead| {
            let sources: Vec<String> = p
                .sources
                .iter()
                .map(|s| match &s.outcome {
                    ReadOutcome::Read { items, .. } => format!("{} ({items} items)", s.source),
                    other => format!("{} ({})", s.source, other.status()),
                })
                .collect();
            sources.join(", ")
        }),
        EventKind::MemoryInjected => read(e, "memory", |m: MemoryInjected| {
            format!(
                "{} recalled events from {}",
                m.items.len(),
                m.prefixes.join(", ")
            )
        }),
        EventKind::ExpertWoke => read(e, "woke", |w: ExpertWoke| {
            let chars = |t: &Option<String>| t.as_deref().map_or(0, |t| t.chars().count());
            let tools: Vec<&str> = w.tools.iter().map(|t| t.name.as_str()).collect();
            format!(
                "on model {}; given {} chars of memory, {} of perception; offered {}",
                w.model,
                chars(&w.input.memory),
                chars(&w.input.perception),
                if tools.is_empty() {
                    "no tools".to_string()
                } else {
                    tools.join(", ")
                }
            )
        }),
        EventKind::ModelCalled => read(e, "model", |call: ModelCall| match call {
            ModelCall::ModelFailed {
                iteration,
                code,
                message,
                ..
            } => format!("call {iteration} failed ({code}): {}", excerpt(&message)),
            ModelCall::ModelCalled {
                iteration,
                backend,
                model,
                usage,
                cost_usd,
                text,
                tool_calls,
                latency_ms,
                prompt,
                ..
            } => {
                let cost = cost_usd.map(|c| format!(", ${c:.4}")).unwrap_or_default();
                let prompt = prompt
                    .map(|p| format!("; asked {} messages, {} chars", p.messages, p.chars))
                    .unwrap_or_default();
                let answer = if tool_calls.is_empty() {
                    format!("answered \"{}\"", excerpt(text.as_deref().unwrap_or("")))
                } else {
                    format!("asked for {}", tool_calls.join(", "))
                };
                format!(
                    "call {iteration} to {backend}/{model}{prompt}: {answer} ({latency_ms} ms, \
                     {}+{} tokens{cost})",
                    usage.input_tokens, usage.output_tokens,
                )
            }
        }),
        EventKind::ToolCall | EventKind::ToolResult | EventKind::GateDenied => {
            match e.payload::<ToolRecord>() {
                Ok(r) => tool_line(&r),
                Err(why) => ("tool", format!("(unreadable: {why})")),
            }
        }
        EventKind::QuestionAsked => read(e, "asked", |q: QuestionAsked| {
            format!("{}: \"{}\"", q.question_id, excerpt(&q.question))
        }),
        EventKind::AnswerReceived => read(e, "answered", |a: AnswerReceived| {
            format!(
                "{} by {}: \"{}\"",
                a.question_id,
                a.operator_id,
                excerpt(&a.answer)
            )
        }),
        EventKind::InterjectionRead => read(e, "corrected", |i: InterjectionRead| {
            format!("\"{}\"", excerpt(&i.text))
        }),
        EventKind::OperatorRefused => read(e, "refused", |r: OperatorRefused| {
            format!("{} by {}: {}", r.what, r.operator_id, excerpt(&r.reason))
        }),
        EventKind::ReplyDelivered => read(e, "delivered", |r: ReplyDelivered| {
            let to = r.channel.as_deref().unwrap_or("the asker");
            if r.delivered {
                format!("to {to}: \"{}\"", excerpt(&r.text))
            } else {
                format!(
                    "NOT delivered to {to}: {}",
                    r.reason.as_deref().unwrap_or("no reason given")
                )
            }
        }),
        EventKind::ExpertFinished => read(e, "finished", |f: ExpertFinished| {
            let s = f.spend;
            format!(
                "{}: {} model calls, {}+{} tokens, ${:.4}",
                f.status, s.model_calls, s.input_tokens, s.output_tokens, s.cost_usd
            )
        }),
        EventKind::TaskDelegated => read(e, "ran", |d: TaskDelegated| {
            let secs = d.spent.map_or(0.0, |s| s.secs);
            let error = if d.error.is_empty() {
                String::new()
            } else {
                format!(": {}", d.error)
            };
            format!("{} {} in {secs:.2} s{error}", d.expert, d.status)
        }),
        EventKind::TaskJudged => read(e, "judged", |j: TaskJudged| {
            if j.answered {
                format!(
                    "answered{}",
                    j.method.map(|m| format!(" ({m})")).unwrap_or_default()
                )
            } else {
                format!(
                    "not answered: {}",
                    j.reason.as_deref().unwrap_or("no reason given")
                )
            }
        }),
        EventKind::HunkProposed => read(e, "hunk", |h: HunkProposed| {
            format!("proposed {} in {}", h.hunk, h.path)
        }),
        EventKind::HunkDecided => read(e, "hunk", |h: HunkDecided| {
            format!("{} {} by {}", h.hunk, h.decision, h.operator)
        }),
        EventKind::HunkApplied => read(e, "hunk", |h: HunkApplied| format!("{} applied", h.hunk)),
        EventKind::ChangeUnreviewable => read(e, "hunk", |c: ChangeUnreviewable| {
            format!("unreviewable: {}", excerpt(&c.why))
        }),
        EventKind::EffectIntent => read(e, "effect", |i: EffectIntent| {
            format!("intends to {}", excerpt(&i.what))
        }),
        EventKind::EffectConfirmed => read(e, "effect", |c: EffectConfirmed| {
            format!("confirmed: {}", excerpt(&c.observed))
        }),
        EventKind::VerifyFinished => read(e, "verified", |v: VerifyFinished| {
            let outcome = match (&v.error, v.ok) {
                (Some(why), _) => format!("did not run: {}", excerpt(why)),
                (None, true) => "passed".to_string(),
                (None, false) => "failed".to_string(),
            };
            format!("{} {outcome}", v.command.join(" "))
        }),
        EventKind::FactLearned => read(e, "learned", |f: FactLearned| {
            excerpt(f.statement.as_deref().unwrap_or(""))
        }),
        EventKind::LessonLearned => read(e, "learned", |l: LessonLearned| excerpt(&l.statement)),
        other => ("event", other.as_str().to_string()),
    }
}

/// The step of `e` read as its kind's payload `T` and written as `line` makes it, or marked
/// unreadable.
fn read<T: Payload>(
    e: &Envelope,
    label: &'static str,
    line: impl FnOnce(T) -> String,
) -> (&'static str, String) {
    match e.payload::<T>() {
        Ok(p) => (label, line(p)),
        Err(why) => (label, format!("(unreadable: {why})")),
    }
}

/// A tool event's line: the call with its arguments, the result, or the refusal.
fn tool_line(r: &ToolRecord) -> (&'static str, String) {
    let arguments = clip(&r.arguments.to_string(), EXCERPT);
    match &r.outcome {
        ToolOutcome::Admitted { effect } => (
            "tool",
            format!("{} {arguments} (effect {})", r.tool, effect.as_str()),
        ),
        ToolOutcome::Answered { is_error, result } => (
            "result",
            format!(
                "{} {}: {}",
                r.tool,
                if *is_error {
                    "reported an error"
                } else {
                    "answered"
                },
                one_line(&result.to_string(), EXCERPT)
            ),
        ),
        ToolOutcome::Failed {
            error_kind,
            message,
        } => (
            "result",
            format!(
                "{} failed ({error_kind}): {}",
                r.tool,
                one_line(message, EXCERPT)
            ),
        ),
        ToolOutcome::Denied { message, .. } => ("denied", format!("{}: {message}", r.tool)),
    }
}
