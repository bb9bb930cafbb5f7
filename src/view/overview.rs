//! What the log says about the work: sessions and their turns, the task tree (task →
//! delegations → tool calls, with status, timing, tokens and cost), the questions experts
//! asked and which are still open, and the perception sources with what each last served and
//! how each of their inputs is doing.
//! A fold of the MEM stream kept in memory only: it is rebuilt from the log whenever its
//! holder starts, and each [`Overview::refresh`] reads what was appended since the last.

use std::collections::{BTreeMap, VecDeque};

use serde::Serialize;
use serde_json::Value;

use crate::core::durable::{DurableError, EventLog};
use crate::core::envelope::Envelope;
use crate::core::event_kind::EventKind;
use crate::core::ids::EventId;
use crate::protocol::payload::{
    AnswerReceived, ChatTurn, ExpertFinished, FeedHealth, ModelCall, QuestionAsked, ReplyDelivered,
    RoutingDecided, SourceChanged, SourceHealth, TaskDelegated, TaskRejected,
};
use crate::protocol::tool::{ToolOutcome, ToolRecord};
use crate::spine::durable::streams::MEM;

/// Tasks kept; the oldest go first past this (the log keeps them all).
const MAX_TASKS: usize = 2_000;
/// Turns kept per session.
const MAX_TURNS: usize = 200;
/// Longest text kept of a request, reply or question.
const CLIP: usize = 2_000;

/// One tool call of a task.
#[derive(Debug, Clone, Serialize)]
pub struct ToolUse {
    /// The tool's name.
    pub tool: String,
    /// Its declared effect (`read`, `write`, …).
    pub effect: String,
    /// Whether it succeeded; `None` while no result is on the log.
    pub ok: Option<bool>,
    /// When it was called (ms since the epoch).
    pub ts: u64,
}

/// One task: a goal the engine routed, or a part it delegated.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Task {
    /// Task id.
    pub id: String,
    /// The task it is a part of.
    pub parent: Option<String>,
    /// The session whose turn started it.
    pub session: Option<String>,
    /// What it was asked.
    pub request: String,
    /// `<mesh>/<role>` it was routed to.
    pub domain: String,
    /// The expert process that ran it.
    pub expert: String,
    /// `routed`, then the delegation's outcome (`succeeded`, `aborted`, …) or `rejected`.
    pub status: String,
    /// First event (ms since the epoch).
    pub started_ms: u64,
    /// Last event.
    pub last_ms: u64,
    /// Model tokens in.
    pub input_tokens: u64,
    /// Model tokens out.
    pub output_tokens: u64,
    /// What its model calls cost (US dollars).
    pub cost_usd: f64,
    /// Model calls made.
    pub model_calls: u64,
    /// Tool calls, in order.
    pub tools: Vec<ToolUse>,
    /// The reply delivered for it.
    pub reply: Option<String>,
    /// Why it failed or was refused.
    pub error: Option<String>,
}

/// One user turn of a session.
#[derive(Debug, Clone, Serialize)]
pub struct Turn {
    /// When (ms since the epoch).
    pub ts: u64,
    /// Who.
    pub user: String,
    /// What they said.
    pub text: String,
    /// The task the inbox made of it (the first turn of a batch names it).
    pub task: String,
}

/// A question an expert asked an operator.
#[derive(Debug, Clone, Serialize)]
pub struct Asked {
    /// Question id (what an answer names).
    pub question_id: String,
    /// The task that waits.
    pub task_id: String,
    /// The expert that asked.
    pub expert: String,
    /// The question.
    pub question: String,
    /// When.
    pub asked_ms: u64,
    /// The answer, once one was read.
    pub answer: Option<String>,
}

/// A perception source.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Source {
    /// Its name.
    pub name: String,
    /// Changes it reported.
    pub changes: u64,
    /// When it last reported one (ms since the epoch).
    pub last_ms: u64,
    /// What it last served (the change's payload, shortened).
    pub last: String,
    /// Every input fails: it has nothing to show.
    pub failing: bool,
    /// Each input's health as last reported (feed, at, status, reason, items, …).
    pub feeds: Vec<FeedHealth>,
    /// When the health was last reported (ms since the epoch; 0: never).
    pub health_ms: u64,
}

/// The fold. See the module documentation.
#[derive(Debug, Default)]
pub struct Overview {
    /// The MEM subjects read (one tenant's, or all).
    filter: String,
    next: u64,
    tasks: BTreeMap<String, Task>,
    /// Task ids, oldest first (to drop the oldest past [`MAX_TASKS`]).
    order: VecDeque<String>,
    sessions: BTreeMap<String, VecDeque<Turn>>,
    questions: BTreeMap<String, Asked>,
    /// Tasks whose delegation ended: their open questions are moot.
    ended: std::collections::BTreeSet<String>,
    sources: BTreeMap<String, Source>,
}

fn clip(s: &str) -> String {
    crate::core::text::clip(s, CLIP)
}

/// Hands every envelope on MEM matching `filter` from sequence `from` on to `absorb` (with
/// when the log stored it, ms since the epoch), in order; returns the next sequence to read.
/// What every fold of the log in a view does.
pub async fn fold_mem<L: EventLog>(
    log: &L,
    filter: &str,
    from: u64,
    mut absorb: impl FnMut(&Envelope, u64),
) -> Result<u64, DurableError> {
    let mut next = from.max(1);
    loop {
        let page = log.read(MEM, filter, next, 2_000).await?;
        let Some(last) = page.last().map(|m| m.seq) else {
            return Ok(next);
        };
        next = last + 1;
        for m in page {
            if let Ok(e) = serde_json::from_slice::<Envelope>(&m.payload) {
                absorb(&e, m.stored_ms);
            }
        }
    }
}

impl Overview {
    /// The overview of `tenant`'s events.
    pub fn of_tenant(tenant: &str) -> Self {
        Self {
            filter: format!("mem.{tenant}.>"),
            ..Self::default()
        }
    }

    /// Reads what MEM gained since the last call.
    pub async fn refresh<L: EventLog>(&mut self, log: &L) -> Result<(), DurableError> {
        let filter = if self.filter.is_empty() {
            "mem.>".to_string()
        } else {
            self.filter.clone()
        };
        self.next = fold_mem(log, &filter, self.next, |e, _| self.absorb(e)).await?;
        Ok(())
    }

    /// The task `id`, made on first mention.
    fn task(&mut self, id: &str, ts: u64) -> &mut Task {
        if !self.tasks.contains_key(id) {
            self.order.push_back(id.to_string());
            while self.order.len() > MAX_TASKS {
                if let Some(old) = self.order.pop_front() {
                    self.tasks.remove(&old);
                }
            }
        }
        let task = self.tasks.entry(id.to_string()).or_insert_with(|| Task {
            id: id.to_string(),
            status: "routed".into(),
            started_ms: ts,
            ..Task::default()
        });
        task.last_ms = task.last_ms.max(ts);
        task
    }

    /// The source `named` (else the event's actor), made on first mention.
    fn source(&mut self, named: &str, e: &Envelope) -> &mut Source {
        let name = if named.is_empty() {
            e.actor.clone()
        } else {
            named.to_string()
        };
        let source = self.sources.entry(name.clone()).or_default();
        source.name = name;
        source
    }

    /// Folds one MEM event. An event whose payload does not have its kind's shape is left out.
    ///
    /// Long because it is a table: one arm per event kind, each what the overview takes from
    /// it. Kept whole so that a kind's part is found by its kind, in one place.
    pub fn absorb(&mut self, e: &Envelope) {
        let task_id = e.task_named().unwrap_or_default().to_string();
        let about_task = !task_id.is_empty();
        match &e.kind {
            EventKind::ChatTurn => {
                let Ok(turn) = e.payload::<ChatTurn>() else {
                    return;
                };
                let session = e.namespace.get(1).cloned().unwrap_or_default();
                let task = EventId::computed(&["inbox", e.event_id.as_str()]).to_string();
                let turns = self.sessions.entry(session).or_default();
                turns.push_back(Turn {
                    ts: e.ts,
                    user: turn.user_id.unwrap_or_default(),
                    text: clip(&turn.text),
                    task,
                });
                if turns.len() > MAX_TURNS {
                    turns.pop_front();
                }
            }
            EventKind::RoutingDecided if about_task => {
                let Ok(routed) = e.payload::<RoutingDecided>() else {
                    return;
                };
                let session = self.session_of(&task_id);
                let parent = routed.parent_task_id;
                let task = self.task(&task_id, e.ts);
                task.domain = routed.domain;
                task.request = clip(&routed.instruction);
                task.parent = (!parent.is_empty()).then_some(parent);
                task.session = task.session.take().or(session);
            }
            EventKind::TaskDelegated if about_task => {
                let Ok(d) = e.payload::<TaskDelegated>() else {
                    return;
                };
                self.ended.insert(task_id.clone());
                let task = self.task(&task_id, e.ts);
                task.domain = d.domain;
                task.expert = d.expert;
                task.status = d.status;
                task.error = (!d.error.is_empty()).then_some(d.error);
            }
            EventKind::TaskRejected if about_task => {
                let Ok(r) = e.payload::<TaskRejected>() else {
                    return;
                };
                self.ended.insert(task_id.clone());
                let task = self.task(&task_id, e.ts);
                task.status = "rejected".into();
                task.error = Some(r.reason);
            }
            EventKind::ExpertFinished if about_task => {
                let Ok(f) = e.payload::<ExpertFinished>() else {
                    return;
                };
                // `spend` is the task's total so far: it wins over the calls counted live.
                let spend = f.spend;
                let task = self.task(&task_id, e.ts);
                task.input_tokens = task.input_tokens.max(spend.input_tokens);
                task.output_tokens = task.output_tokens.max(spend.output_tokens);
                task.cost_usd = task.cost_usd.max(spend.cost_usd);
                task.model_calls = task.model_calls.max(spend.model_calls.into());
                if task.expert.is_empty() {
                    task.expert = e.actor.clone();
                }
            }
            EventKind::ModelCalled if about_task => {
                let Ok(ModelCall::ModelCalled {
                    usage, cost_usd, ..
                }) = e.payload::<ModelCall>()
                else {
                    return;
                };
                let task = self.task(&task_id, e.ts);
                task.model_calls += 1;
                task.input_tokens += usage.input_tokens;
                task.output_tokens += usage.output_tokens;
                task.cost_usd += cost_usd.unwrap_or(0.0);
            }
            EventKind::ToolCall | EventKind::ToolResult | EventKind::GateDenied if about_task => {
                let Ok(r) = e.payload::<ToolRecord>() else {
                    return;
                };
                self.tool(&task_id, e.ts, r);
            }
            EventKind::ReplyDelivered if about_task => {
                let Ok(r) = e.payload::<ReplyDelivered>() else {
                    return;
                };
                self.task(&task_id, e.ts).reply = Some(clip(&r.text));
            }
            EventKind::QuestionAsked => {
                let Ok(q) = e.payload::<QuestionAsked>() else {
                    return;
                };
                if q.question_id.is_empty() {
                    return;
                }
                self.questions.insert(
                    q.question_id.clone(),
                    Asked {
                        question_id: q.question_id,
                        task_id: q.task_id,
                        expert: q.expert,
                        question: clip(&q.question),
                        asked_ms: e.ts,
                        answer: None,
                    },
                );
            }
            EventKind::AnswerReceived => {
                let Ok(a) = e.payload::<AnswerReceived>() else {
                    return;
                };
                if let Some(q) = self.questions.get_mut(&a.question_id) {
                    q.answer = Some(clip(&a.answer));
                }
            }
            EventKind::SourceChanged => {
                let Ok(changed) = e.payload::<SourceChanged>() else {
                    return;
                };
                let source = self.source(&changed.source, e);
                source.changes += 1;
                source.last_ms = e.ts;
                source.last = clip(&e.payload.to_string());
            }
            EventKind::SourceHealth => {
                let Ok(health) = e.payload::<SourceHealth>() else {
                    return;
                };
                let source = self.source(&health.source, e);
                source.failing = health.failing;
                source.feeds = health.feeds;
                source.health_ms = e.ts;
            }
            _ => {}
        }
    }

    /// A tool event of `task`: a call (admitted, or refused by a gate) is listed; a result
    /// marks the last call of its tool still waiting for one, or is listed when none waits.
    fn tool(&mut self, task: &str, ts: u64, r: ToolRecord) {
        let (effect, ok) = match &r.outcome {
            ToolOutcome::Admitted { effect } => (effect.as_str().to_string(), None),
            ToolOutcome::Denied { gate_number, .. } => {
                (format!("denied by gate {gate_number}"), Some(false))
            }
            outcome @ (ToolOutcome::Answered { .. } | ToolOutcome::Failed { .. }) => {
                let ok = outcome.succeeded();
                let task = self.task(task, ts);
                let waiting = task
                    .tools
                    .iter_mut()
                    .rev()
                    .find(|t| t.tool == r.tool && t.ok.is_none());
                match waiting {
                    Some(call) => call.ok = Some(ok),
                    None => task.tools.push(ToolUse {
                        tool: r.tool,
                        effect: String::new(),
                        ok: Some(ok),
                        ts,
                    }),
                }
                return;
            }
        };
        self.task(task, ts).tools.push(ToolUse {
            tool: r.tool,
            effect,
            ok,
            ts,
        });
    }

    /// The session whose turn made `task` (or its root task).
    fn session_of(&self, task: &str) -> Option<String> {
        let root = task.split('-').next().unwrap_or(task);
        self.sessions
            .iter()
            .find(|(_, turns)| turns.iter().any(|t| t.task == root))
            .map(|(s, _)| s.clone())
    }

    /// The questions no answer closed and whose task has not ended, oldest first.
    pub fn open_questions(&self) -> Vec<&Asked> {
        let mut open: Vec<&Asked> = self
            .questions
            .values()
            .filter(|q| q.answer.is_none() && !self.ended.contains(&q.task_id))
            .collect();
        open.sort_by_key(|q| q.asked_ms);
        open
    }

    /// Everything, as the console serves it: tasks newest first, each with its parts under
    /// it.
    pub fn to_json(&self) -> Value {
        let mut children: BTreeMap<&str, Vec<&Task>> = BTreeMap::new();
        let mut roots = Vec::new();
        for t in self.tasks.values() {
            match t.parent.as_deref().filter(|p| self.tasks.contains_key(*p)) {
                Some(parent) => children.entry(parent).or_default().push(t),
                None => roots.push(t),
            }
        }
        fn tree(t: &Task, children: &BTreeMap<&str, Vec<&Task>>) -> Value {
            let mut v = serde_json::to_value(t).unwrap_or_default();
            let mut parts: Vec<&&Task> = children
                .get(t.id.as_str())
                .map(|c| c.iter().collect())
                .unwrap_or_default();
            parts.sort_by_key(|p| p.started_ms);
            v["parts"] = parts.into_iter().map(|p| tree(p, children)).collect();
            v
        }
        roots.sort_by_key(|t| std::cmp::Reverse(t.started_ms));
        let sessions: Vec<Value> = self
            .sessions
            .iter()
            .map(|(id, turns)| serde_json::json!({"id": id, "turns": turns}))
            .collect();
        let mut questions: Vec<&Asked> = self.questions.values().collect();
        questions.sort_by_key(|q| std::cmp::Reverse(q.asked_ms));
        let open: Vec<&str> = self
            .open_questions()
            .iter()
            .map(|q| q.question_id.as_str())
            .collect();
        serde_json::json!({
            "tasks": roots.iter().map(|t| tree(t, &children)).collect::<Vec<_>>(),
            "sessions": sessions,
            "questions": questions.iter().map(|q| {
                let mut v = serde_json::to_value(q).unwrap_or_default();
                v["open"] = open.contains(&q.question_id.as_str()).into();
                v
            }).collect::<Vec<_>>(),
            "sources": self.sources.values().collect::<Vec<_>>(),
            "read_to": self.next.saturating_sub(1),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn event(kind: EventKind, payload: Value) -> Envelope {
        Envelope::new("t", ["sessions", "s"], "test", kind, payload)
    }

    fn routed(task: &str, instruction: &str, parent: &str) -> Envelope {
        event(
            EventKind::RoutingDecided,
            json!({"task_id": task, "domain": "newsroom/analyst", "instruction": instruction,
                   "by": {"method": "given"}, "part": 1, "of": 1, "depth": 0,
                   "parent_task_id": parent,
                   "context": {"facts": 0, "turns": 0, "scorecard": [], "perceived": []}}),
        )
    }

    fn delegated(task: &str, expert: &str, status: &str) -> Envelope {
        event(
            EventKind::TaskDelegated,
            json!({"task_id": task, "domain": "newsroom/analyst", "expert": expert,
                   "status": status, "error": "", "spent": null, "budget": null}),
        )
    }

    #[test]
    fn a_question_is_open_until_answered_or_its_task_ends() {
        let asked = |q: &str, t: &str| {
            event(
                EventKind::QuestionAsked,
                json!({"question_id": q, "task_id": t, "expert": "n/a", "question": "which?"}),
            )
        };
        let mut o = Overview::default();
        for e in [
            asked("q1", "t1"),
            asked("q2", "t2"),
            asked("q3", "t3"),
            event(
                EventKind::AnswerReceived,
                json!({"question_id": "q1", "task_id": "t1", "operator_id": "desk",
                       "answer": "the first"}),
            ),
            delegated("t2", "", "aborted"),
            // The loop's own record of older versions has no question id: not listed.
            event(
                EventKind::QuestionAsked,
                json!({"call_id": "c", "question": "old"}),
            ),
        ] {
            o.absorb(&e);
        }
        let open = o.open_questions();
        assert_eq!(open.len(), 1);
        assert_eq!(
            (open[0].question_id.as_str(), open[0].task_id.as_str()),
            ("q3", "t3")
        );
    }

    #[test]
    fn a_turn_its_task_and_the_parts_form_one_tree() {
        let mut o = Overview::default();
        let turn = Envelope::new(
            "t",
            ["sessions", "desk"],
            "inbox",
            EventKind::ChatTurn,
            json!({"user_id": "reporter", "text": "is the bridge closed?"}),
        );
        let task = EventId::computed(&["inbox", turn.event_id.as_str()]).to_string();
        let part = format!("{task}-1");
        o.absorb(&turn);
        for e in [
            routed(&part, "check", &task),
            routed(&task, "is the bridge closed?", ""),
            event(
                EventKind::ToolCall,
                json!({"task": part, "tool": "web/fetch", "arguments": {},
                       "outcome": {"status": "admitted", "effect": "read"}}),
            ),
            event(
                EventKind::ModelCalled,
                json!({"event": "model_called", "task_id": part, "iteration": 1, "backend": "b",
                       "model": "m", "usage": {"input_tokens": 100, "output_tokens": 20},
                       "cost_usd": null, "text": "", "tool_calls": [], "latency_ms": 5,
                       "calls": [], "finish": "stop"}),
            ),
            event(
                EventKind::ToolResult,
                json!({"task": part, "tool": "web/fetch", "arguments": {},
                       "outcome": {"status": "answered", "is_error": false, "result": {}}}),
            ),
            event(
                EventKind::GateDenied,
                json!({"task": part, "tool": "fs/write", "arguments": {"path": "/etc"},
                       "outcome": {"status": "denied", "gate": "path", "gate_number": 2,
                                   "message": "outside the roots",
                                   "denial": {"gate": "path", "tool": "fs/write",
                                              "reason": "not_granted"}}}),
            ),
            event(
                EventKind::ExpertFinished,
                json!({"event": "finished", "task_id": part, "status": "done",
                       "spend": {"model_calls": 1, "input_tokens": 120, "output_tokens": 30,
                                 "cost_usd": 0.002}}),
            ),
            delegated(&part, "/iron/experts/x", "succeeded"),
            event(
                EventKind::ReplyDelivered,
                json!({"task_id": task, "delivered": true, "text": "Closed."}),
            ),
        ] {
            o.absorb(&e);
        }
        let v = o.to_json();
        let tasks = v["tasks"].as_array().unwrap();
        assert_eq!(tasks.len(), 1, "{v:#}");
        let root = &tasks[0];
        assert_eq!(root["id"], task.as_str());
        assert_eq!(root["session"], "desk");
        assert_eq!(root["reply"], "Closed.");
        let part = &root["parts"][0];
        assert_eq!(part["status"], "succeeded");
        assert_eq!(part["expert"], "/iron/experts/x");
        assert_eq!(part["input_tokens"], 120);
        assert_eq!(part["model_calls"], 1);
        assert_eq!(part["tools"][0]["effect"], "read");
        assert_eq!(part["tools"][0]["ok"], true);
        assert_eq!(part["tools"][1]["effect"], "denied by gate 2");
        assert_eq!(part["tools"][1]["ok"], false);
        assert_eq!(v["sessions"][0]["turns"][0]["task"], task.as_str());
    }

    #[test]
    fn a_source_shows_its_inputs_health_even_when_it_never_served_an_item() {
        let mut o = Overview::default();
        let health = |failing: bool, status: &str| {
            Envelope::new(
                "t",
                ["perception", "newsroom", "news_wires"],
                "msp/newsroom/news_wires",
                EventKind::SourceHealth,
                json!({"mesh": "newsroom", "source": "news_wires", "failing": failing,
                       "feeds": [{"feed": "typo.xml", "at": "wires.txt:3", "status": status,
                                  "reason": "not found: no file typo.xml"}]}),
            )
        };
        o.absorb(&health(true, "failing"));
        let v = o.to_json();
        let source = &v["sources"][0];
        assert_eq!(source["name"], "news_wires");
        assert_eq!(source["failing"], true);
        assert_eq!(source["changes"], 0);
        assert_eq!(source["feeds"][0]["at"], "wires.txt:3");
        o.absorb(&health(false, "ok"));
        assert_eq!(o.to_json()["sources"][0]["failing"], false);
    }
}
