//! Each step of a timeline in one line, read from its event's payload: what a person needs to
//! follow the task without opening the payload (which `--json` keeps whole).

use serde_json::Value;

use super::{EXCERPT, Spend, items, str_of};
use crate::core::envelope::Envelope;
use crate::core::event_kind::EventKind;
use crate::core::text::{clip, one_line};
use crate::protocol::payload::{ReplyDelivered, TaskDelegated, TaskJudged, TaskRejected};
use crate::protocol::tool::{ToolOutcome, ToolRecord};

/// A step's label and one line, read from its payload. A payload that does not have its
/// kind's shape is shown as such, never skipped.
pub(super) fn describe(e: &Envelope) -> (&'static str, String) {
    let p = &e.payload;
    let excerpt = |key: &str| one_line(str_of(p, key), EXCERPT);
    match &e.kind {
        EventKind::RoutingDecided => {
            let by = match str_of(p, "forked_from") {
                "" => p.get("by").map(|b| str_of(b, "method")).unwrap_or(""),
                _ => "a fork",
            };
            let of = p.get("of").and_then(Value::as_u64).unwrap_or(1);
            let part = match of {
                0 | 1 => String::new(),
                _ => format!(
                    "; part {} of {of}",
                    p.get("part").and_then(Value::as_u64).unwrap_or(1)
                ),
            };
            let ctx = p.get("context").unwrap_or(&Value::Null);
            let count = |k: &str| ctx.get(k).and_then(Value::as_u64).unwrap_or(0);
            (
                "routed",
                format!(
                    "to {} ({by}{part}); memory of the conversation: {} facts, {} turns",
                    str_of(p, "domain"),
                    count("facts"),
                    count("turns"),
                ),
            )
        }
        EventKind::TaskRejected => match e.payload::<TaskRejected>() {
            Ok(r) => ("rejected", format!("{}: {}", r.code, r.reason)),
            Err(why) => ("rejected", format!("(unreadable: {why})")),
        },
        EventKind::PerceptionRead => {
            let sources = items(p, "sources", |s| {
                let n = s.get("items").and_then(Value::as_u64).unwrap_or(0);
                Some(match str_of(s, "status") {
                    "read" => format!("{} ({n} items)", str_of(s, "source")),
                    other => format!("{} ({other})", str_of(s, "source")),
                })
            });
            ("perceived", sources.join(", "))
        }
        EventKind::MemoryInjected => {
            let recalled = p.get("items").and_then(Value::as_array).map_or(0, Vec::len);
            let prefixes = items(p, "prefixes", Value::as_str);
            (
                "memory",
                format!("{recalled} recalled events from {}", prefixes.join(", ")),
            )
        }
        EventKind::ExpertWoke => {
            let input = p.get("input").unwrap_or(&Value::Null);
            let chars = |k: &str| {
                input
                    .get(k)
                    .and_then(Value::as_str)
                    .map_or(0, |t| t.chars().count())
            };
            let tools = items(p, "tools", |t| t.get("name").and_then(Value::as_str));
            (
                "woke",
                format!(
                    "on model {}; given {} chars of memory, {} of perception; offered {}",
                    str_of(p, "model"),
                    chars("memory"),
                    chars("perception"),
                    if tools.is_empty() {
                        "no tools".to_string()
                    } else {
                        tools.join(", ")
                    }
                ),
            )
        }
        EventKind::ModelCalled if str_of(p, "event") == "model_failed" => (
            "model",
            format!(
                "call {} failed ({}): {}",
                p.get("iteration").and_then(Value::as_u64).unwrap_or(0),
                str_of(p, "code"),
                excerpt("message")
            ),
        ),
        EventKind::ModelCalled => {
            let usage = p.get("usage").unwrap_or(&Value::Null);
            let tokens = |k: &str| usage.get(k).and_then(Value::as_u64).unwrap_or(0);
            let cost = p
                .get("cost_usd")
                .and_then(Value::as_f64)
                .map(|c| format!(", ${c:.4}"))
                .unwrap_or_default();
            let prompt = match p.get("prompt") {
                Some(prompt) => format!(
                    "; asked {} messages, {} chars",
                    prompt.get("messages").and_then(Value::as_u64).unwrap_or(0),
                    prompt.get("chars").and_then(Value::as_u64).unwrap_or(0)
                ),
                None => String::new(),
            };
            let calls = items(p, "tool_calls", Value::as_str);
            let answer = if calls.is_empty() {
                format!("answered \"{}\"", excerpt("text"))
            } else {
                format!("asked for {}", calls.join(", "))
            };
            (
                "model",
                format!(
                    "call {} to {}/{}{prompt}: {answer} ({} ms, {}+{} tokens{cost})",
                    p.get("iteration").and_then(Value::as_u64).unwrap_or(0),
                    str_of(p, "backend"),
                    str_of(p, "model"),
                    p.get("latency_ms").and_then(Value::as_u64).unwrap_or(0),
                    tokens("input_tokens"),
                    tokens("output_tokens"),
                ),
            )
        }
        EventKind::ToolCall | EventKind::ToolResult | EventKind::GateDenied => {
            match e.payload::<ToolRecord>() {
                Ok(r) => tool_line(&r),
                Err(why) => ("tool", format!("(unreadable: {why})")),
            }
        }
        EventKind::QuestionAsked => (
            "asked",
            format!("{}: \"{}\"", str_of(p, "question_id"), excerpt("question")),
        ),
        EventKind::AnswerReceived => (
            "answered",
            format!(
                "{} by {}: \"{}\"",
                str_of(p, "question_id"),
                str_of(p, "operator_id"),
                excerpt("answer")
            ),
        ),
        EventKind::InterjectionRead => ("corrected", format!("\"{}\"", excerpt("text"))),
        EventKind::OperatorRefused => ("refused", excerpt("reason")),
        EventKind::ReplyDelivered => match e.payload::<ReplyDelivered>() {
            Ok(r) if r.delivered => (
                "delivered",
                format!(
                    "to {}: \"{}\"",
                    r.channel.as_deref().unwrap_or("the asker"),
                    one_line(&r.text, EXCERPT)
                ),
            ),
            Ok(r) => (
                "delivered",
                format!(
                    "NOT delivered to {}: {}",
                    r.channel.as_deref().unwrap_or("the asker"),
                    r.reason.as_deref().unwrap_or("no reason given")
                ),
            ),
            Err(why) => ("delivered", format!("(unreadable: {why})")),
        },
        EventKind::ExpertFinished => {
            let s = Spend::of(p.get("spend"));
            (
                "finished",
                format!(
                    "{}: {} model calls, {}+{} tokens, ${:.4}",
                    str_of(p, "status"),
                    s.model_calls,
                    s.input_tokens,
                    s.output_tokens,
                    s.cost_usd
                ),
            )
        }
        EventKind::TaskDelegated => match e.payload::<TaskDelegated>() {
            Ok(d) => {
                let secs = d.spent.get("secs").and_then(Value::as_f64).unwrap_or(0.0);
                let error = if d.error.is_empty() {
                    String::new()
                } else {
                    format!(": {}", d.error)
                };
                (
                    "ran",
                    format!("{} {} in {secs:.2} s{error}", d.expert, d.status),
                )
            }
            Err(why) => ("ran", format!("(unreadable: {why})")),
        },
        EventKind::TaskJudged => match e.payload::<TaskJudged>() {
            Ok(j) if j.answered => (
                "judged",
                format!(
                    "answered{}",
                    j.method.map(|m| format!(" ({m})")).unwrap_or_default()
                ),
            ),
            Ok(j) => (
                "judged",
                format!(
                    "not answered: {}",
                    j.reason.as_deref().unwrap_or("no reason given")
                ),
            ),
            Err(why) => ("judged", format!("(unreadable: {why})")),
        },
        EventKind::HunkProposed => ("hunk", format!("proposed {}", excerpt("hunk"))),
        EventKind::HunkDecided => (
            "hunk",
            format!(
                "{} {} by {}",
                str_of(p, "hunk"),
                str_of(p, "decision"),
                str_of(p, "operator_id")
            ),
        ),
        EventKind::HunkApplied => ("hunk", format!("{} applied", str_of(p, "hunk"))),
        EventKind::ChangeUnreviewable => ("hunk", format!("unreviewable: {}", excerpt("reason"))),
        EventKind::EffectIntent => ("effect", format!("intends to {}", excerpt("what"))),
        EventKind::EffectConfirmed => ("effect", format!("confirmed {}", excerpt("what"))),
        EventKind::VerifyFinished => (
            "verified",
            format!(
                "{} {}",
                str_of(p, "command"),
                if p.get("ok").and_then(Value::as_bool) == Some(true) {
                    "passed"
                } else {
                    "failed"
                }
            ),
        ),
        EventKind::FactLearned | EventKind::LessonLearned => ("learned", excerpt("statement")),
        other => ("event", other.as_str().to_string()),
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
