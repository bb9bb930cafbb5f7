//! What stands in for the model, the tools and the operator during a replay: each gives back
//! what the record holds, and only for the request, call or moment the record shows; the first
//! that is asked for something else notes the divergence and stops the run.

use std::collections::VecDeque;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::Value;

use super::{Answer, Divergence, Record};
use crate::cognition::agent::{
    ASK_OPERATOR, Interjections, ToolExecutor, ToolFailure, unwrap_tool_output,
};
use crate::core::text::{clip, one_line};
use crate::llm::{
    BoxFuture, ChatModel, ChatRequest, ChatResponse, LlmError, Message, ToolCall, ToolSpec,
};

/// How much of a differing text is shown on each side of the first difference.
const AROUND: usize = 60;

/// The first difference between `recorded` and `now`, shown around where they part.
pub(super) fn around(recorded: &str, now: &str) -> (String, String) {
    let at = recorded
        .char_indices()
        .zip(now.chars())
        .find(|((_, a), b)| a != b)
        .map(|((i, _), _)| i)
        .unwrap_or_else(|| recorded.len().min(now.len()));
    let show = |s: &str| {
        let start = s[..at.min(s.len())]
            .char_indices()
            .rev()
            .nth(AROUND / 2)
            .map_or(0, |(i, _)| i);
        let lead = if start > 0 { "…" } else { "" };
        format!("{lead}{}", one_line(&s[start..], AROUND * 2))
    };
    (show(recorded), show(now))
}

fn role(m: &Message) -> &'static str {
    match m {
        Message::System { .. } => "system",
        Message::User { .. } => "user",
        Message::Assistant { .. } => "assistant",
        Message::Tool { .. } => "tool",
    }
}

fn as_text(m: &Message) -> String {
    serde_json::to_string(m).unwrap_or_default()
}

/// Why the system message may differ, for a person.
pub(super) const SYSTEM_CHANGED: &str = "the system prompt is not what was sent (the skill's identity or \
instructions, the mesh's prose, or the code that writes the prompt changed)";

/// The model: the recorded answers, each given only for the request that was recorded.
pub(super) struct ReplayModel<'a> {
    pub(super) record: &'a Record,
    pub(super) next: AtomicUsize,
    pub(super) divergence: &'a Mutex<Option<Divergence>>,
}

impl ReplayModel<'_> {
    fn diverge(&self, d: Divergence) -> LlmError {
        let message = format!("{}: {}", d.step, d.what);
        let mut slot = self.divergence.lock().unwrap_or_else(|e| e.into_inner());
        slot.get_or_insert(d);
        LlmError::Rejected {
            backend: "replay".into(),
            status: 409,
            message,
        }
    }

    fn compare(&self, n: usize, recorded: &[Message], now: &[Message]) -> Option<Divergence> {
        let step = format!("model call {n}");
        let first = recorded
            .iter()
            .zip(now)
            .position(|(a, b)| as_text(a) != as_text(b));
        if let Some(i) = first {
            let (a, b) = (&recorded[i], &now[i]);
            let what = if i == 0 && role(a) == "system" {
                SYSTEM_CHANGED.to_string()
            } else {
                format!("message {} ({}) is not what was sent", i + 1, role(a))
            };
            let (recorded, now) = around(
                a.text().map_or_else(|| as_text(a), str::to_string).as_str(),
                b.text().map_or_else(|| as_text(b), str::to_string).as_str(),
            );
            return Some(Divergence {
                step,
                what,
                recorded,
                now,
            });
        }
        (recorded.len() != now.len()).then(|| Divergence {
            step,
            what: format!(
                "the request has {} messages; the recorded one had {}",
                now.len(),
                recorded.len()
            ),
            recorded: recorded
                .last()
                .map(as_text)
                .map(|t| clip(&t, AROUND * 2))
                .unwrap_or_default(),
            now: now
                .last()
                .map(as_text)
                .map(|t| clip(&t, AROUND * 2))
                .unwrap_or_default(),
        })
    }
}

impl ChatModel for ReplayModel<'_> {
    fn name(&self) -> &str {
        &self.record.model
    }

    fn chat<'a>(
        &'a self,
        request: &'a ChatRequest,
    ) -> BoxFuture<'a, Result<ChatResponse, LlmError>> {
        Box::pin(async move {
            let i = self.next.fetch_add(1, Ordering::SeqCst);
            let Some(call) = self.record.calls.get(i) else {
                return Err(self.diverge(Divergence {
                    step: format!("model call {}", i + 1),
                    what: format!(
                        "the loop asks the model again; the record ends after {} calls",
                        self.record.calls.len()
                    ),
                    recorded: String::new(),
                    now: request
                        .messages
                        .last()
                        .map(as_text)
                        .map(|t| clip(&t, AROUND * 2))
                        .unwrap_or_default(),
                }));
            };
            // The marker of this replay is the one the record shows in its place.
            if let Some(d) = self.compare(i + 1, &call.request, &request.messages) {
                return Err(self.diverge(d));
            }
            match &call.answer {
                Answer::Gave(response) => Ok(response.clone()),
                Answer::Failed(message) => Err(LlmError::Rejected {
                    backend: "replay".into(),
                    status: 502,
                    message: format!("(as recorded) {message}"),
                }),
            }
        })
    }
}

/// The tools: the recorded results, each given only to the call that was recorded.
pub(super) struct ReplayTools<'a> {
    pub(super) offered: Vec<ToolSpec>,
    pub(super) results: Mutex<VecDeque<(ToolCall, Option<Message>)>>,
    pub(super) made: AtomicUsize,
    pub(super) divergence: &'a Mutex<Option<Divergence>>,
}

impl ToolExecutor for ReplayTools<'_> {
    fn tools(&self) -> Vec<ToolSpec> {
        self.offered.clone()
    }

    fn call<'a>(
        &'a self,
        name: &'a str,
        arguments: &'a Value,
    ) -> BoxFuture<'a, Result<Value, ToolFailure>> {
        Box::pin(async move {
            let n = self.made.fetch_add(1, Ordering::SeqCst) + 1;
            let mut results = self.results.lock().unwrap_or_else(|e| e.into_inner());
            // Calls the loop answers itself (a question, a name or arguments it refuses) never
            // reach the tools: they are skipped here as they were then.
            while results.front().is_some_and(|(c, _)| {
                c.name == ASK_OPERATOR
                    || !c.arguments.is_object()
                    || !self.offered.iter().any(|t| t.name == c.name)
            }) {
                results.pop_front();
            }
            let recorded = results.pop_front();
            let stop = |d: Divergence| {
                let mut slot = self.divergence.lock().unwrap_or_else(|e| e.into_inner());
                slot.get_or_insert(d);
                Err(ToolFailure::NotRun("the replay stopped here".into()))
            };
            let now = format!("{name} {arguments}");
            match recorded {
                Some((call, result)) if call.name == name && &call.arguments == arguments => {
                    match result.as_ref().and_then(|m| unwrap_tool_output(m.text()?)) {
                        Some((true, body)) => Ok(Value::String(body)),
                        Some((false, body)) => Err(ToolFailure::Reported(body)),
                        None => Err(ToolFailure::NotRun(
                            "(the record holds no result for this call)".into(),
                        )),
                    }
                }
                Some((call, _)) => {
                    let (recorded, now) =
                        around(&format!("{} {}", call.name, call.arguments), &now);
                    stop(Divergence {
                        step: format!("tool call {n}"),
                        what: "the loop calls a tool differently than recorded".into(),
                        recorded,
                        now,
                    })
                }
                None => stop(Divergence {
                    step: format!("tool call {n}"),
                    what: "the loop calls a tool the record does not have".into(),
                    recorded: String::new(),
                    now: clip(&now, AROUND * 2),
                }),
            }
        })
    }
}

/// The corrections, each read before the model call it was read before then.
pub(super) struct ReplayInterjections<'a> {
    pub(super) record: &'a Record,
    pub(super) model: &'a ReplayModel<'a>,
    pub(super) given: AtomicUsize,
}

impl Interjections for ReplayInterjections<'_> {
    fn take(&self) -> Vec<String> {
        let next = self.model.next.load(Ordering::SeqCst);
        let from = self.given.swap(next + 1, Ordering::SeqCst);
        (from..=next)
            .filter_map(|i| self.record.interjections.get(i))
            .flatten()
            .cloned()
            .collect()
    }
}
