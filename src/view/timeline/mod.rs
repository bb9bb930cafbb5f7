//! One task's history read back from the log: what the engine decided, what the expert was
//! given at wake, each model call, each tool call and gate decision, questions and answers,
//! corrections, deliveries, hunks and effects, how it ended, and the tasks it delegated, as a
//! tree. `iron task show` prints it and the console serves it; both read the same [`TaskLog`].
//!
//! An event belongs to the task its payload names (`task_id`, or `task` for tool events), else
//! to the task whose namespace it is written in (`tasks/<id>`). A part or a delegation names
//! its parent in its `routing_decided` (`parent_task_id`).

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;
use serde_json::Value;

mod steps;

use super::overview::fold_mem;
use crate::core::durable::{DurableError, EventLog};
use crate::core::envelope::Envelope;
use crate::core::event_kind::EventKind;
use crate::core::text::{one_line, utc};
use crate::protocol::payload::{ExpertFinished, ModelCall, RoutingDecided, Spend, TaskDelegated};
use steps::describe;

/// Longest excerpt of a text (an answer, an instruction) in a step's one line.
const EXCERPT: usize = 160;
/// Deepest delegation tree shown (a guard against a parent loop in a forged log).
const MAX_DEPTH: usize = 16;

/// Why no timeline could be made.
#[derive(Debug, thiserror::Error)]
pub enum TimelineError {
    /// The log could not be read.
    #[error("reading the log: {0}")]
    Read(#[from] DurableError),
    /// No task has this id or starts with it.
    #[error("no task {0:?} on the log (iron task list shows the tasks)")]
    NotFound(String),
    /// Several tasks start with this prefix.
    #[error("{prefix:?} names {} tasks ({}): give more of the id", .candidates.len(), .candidates.join(", "))]
    Ambiguous {
        /// What was given.
        prefix: String,
        /// Up to five of the tasks it matches.
        candidates: Vec<String>,
    },
}

/// One thing that happened in a task.
#[derive(Debug, Clone, Serialize)]
pub struct Step {
    /// When (ms since the epoch).
    pub ts: u64,
    /// Who wrote it (`engine`, the expert's `mesh/role`, a memory worker, an operator).
    pub actor: String,
    /// The event's kind.
    pub kind: String,
    /// What it was, in a word (`routed`, `model`, `tool`, `denied`, `delivered`, …).
    pub label: &'static str,
    /// What happened, in one line.
    pub summary: String,
    /// The event.
    pub event_id: String,
    /// The event that caused it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cause: Option<String>,
    /// The event's payload as recorded.
    pub payload: Value,
}

/// A task's history: its steps in log order, and the tasks it delegated, each with its own.
#[derive(Debug, Clone, Serialize)]
pub struct Timeline {
    /// The task.
    pub task_id: String,
    /// The expert it was routed to (`mesh/role`); empty when it never was.
    pub domain: String,
    /// What it was asked.
    pub instruction: String,
    /// The task it is a part or a delegation of.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parent: Option<String>,
    /// The durable job whose step it is, and the signal its answer went back on.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub job: Option<(String, String)>,
    /// The task this one is a fork of, and the model call it branched at.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub forked_from: Option<(String, u64)>,
    /// How it ended (`succeeded`, `aborted`, `rejected`, …), `running` while nothing says.
    pub status: String,
    /// Its first event (ms since the epoch).
    pub started_ms: u64,
    /// Its last event.
    pub last_ms: u64,
    /// Model calls, tokens and cost, as the expert last reported them.
    pub spend: Spend,
    /// What happened, in order.
    pub steps: Vec<Step>,
    /// The tasks it delegated (parts of a plan, an expert's delegations), oldest first.
    pub parts: Vec<Timeline>,
    /// The forks made of it (`iron task fork`), oldest first: the other branches.
    pub forks: Vec<Timeline>,
}

/// Which tasks hang under which: parts under their parent, forks under their origin.
struct Tree {
    parts: BTreeMap<String, Vec<String>>,
    forks: BTreeMap<String, Vec<String>>,
}

/// Every task's events, read once from the log.
#[derive(Debug, Default)]
pub struct TaskLog {
    events: BTreeMap<String, Vec<Envelope>>,
    parent: BTreeMap<String, String>,
    /// Forks and the task each was forked from.
    forked_from: BTreeMap<String, String>,
}

/// The task an event belongs to, if any.
fn task_of(e: &Envelope) -> Option<String> {
    match e.task_named() {
        Some(t) => Some(t.to_string()),
        None if e.namespace.first().map(String::as_str) == Some("tasks") => {
            e.namespace.get(1).cloned()
        }
        None => None,
    }
}

impl TaskLog {
    /// Reads `tenant`'s events from the log.
    pub async fn read<L: EventLog>(log: &L, tenant: &str) -> Result<Self, DurableError> {
        let mut tasks = Self::default();
        fold_mem(log, &format!("mem.{tenant}.>"), 1, |e, _| tasks.absorb(e)).await?;
        Ok(tasks)
    }

    /// Adds one event.
    pub fn absorb(&mut self, e: &Envelope) {
        let Some(task) = task_of(e) else { return };
        if let Ok(routed) = e.payload::<RoutingDecided>() {
            let parent = routed.parent_task_id;
            if !parent.is_empty() && parent != task {
                self.parent.insert(task.clone(), parent);
            }
            if let Some(from) = routed.forked_from.filter(|f| !f.is_empty() && *f != task) {
                self.forked_from.insert(task.clone(), from);
            }
        }
        self.events.entry(task).or_default().push(e.clone());
    }

    /// The task `id`, or the one task whose id starts with it.
    pub fn resolve(&self, id: &str) -> Result<String, TimelineError> {
        if id.is_empty() {
            return Err(TimelineError::NotFound(String::new()));
        }
        if self.events.contains_key(id) {
            return Ok(id.to_string());
        }
        let matching: Vec<&String> = self
            .events
            .range(id.to_string()..)
            .map(|(k, _)| k)
            .take_while(|k| k.starts_with(id))
            .collect();
        match matching.as_slice() {
            [one] => Ok((*one).clone()),
            [] => Err(TimelineError::NotFound(id.to_string())),
            many => Err(TimelineError::Ambiguous {
                prefix: id.to_string(),
                candidates: many.iter().take(5).map(|k| k.to_string()).collect(),
            }),
        }
    }

    /// The timeline of `id` (or the task it is a unique prefix of), with its delegations.
    pub fn timeline(&self, id: &str) -> Result<Timeline, TimelineError> {
        let id = self.resolve(id)?;
        let invert = |of: &BTreeMap<String, String>| {
            let mut under: BTreeMap<String, Vec<String>> = BTreeMap::new();
            for (child, parent) in of {
                under.entry(parent.clone()).or_default().push(child.clone());
            }
            under
        };
        let tree = Tree {
            parts: invert(&self.parent),
            forks: invert(&self.forked_from),
        };
        let mut seen = BTreeSet::new();
        Ok(self.build(&id, &tree, &mut seen, 0))
    }

    fn build(&self, id: &str, tree: &Tree, seen: &mut BTreeSet<String>, depth: usize) -> Timeline {
        seen.insert(id.to_string());
        let mut timeline = self.head(id);
        let mut below = |of: &BTreeMap<String, Vec<String>>| {
            let mut found = Vec::new();
            for child in of.get(id).into_iter().flatten() {
                if depth < MAX_DEPTH && !seen.contains(child) {
                    found.push(self.build(child, tree, seen, depth + 1));
                }
            }
            found.sort_by_key(|p: &Timeline| p.started_ms);
            found
        };
        timeline.parts = below(&tree.parts);
        timeline.forks = below(&tree.forks);
        timeline
    }

    /// The task's own history, without its parts.
    fn head(&self, id: &str) -> Timeline {
        let events = self.events.get(id).map(Vec::as_slice).unwrap_or_default();
        let mut t = Timeline {
            task_id: id.to_string(),
            domain: String::new(),
            instruction: String::new(),
            parent: self.parent.get(id).cloned(),
            job: None,
            forked_from: None,
            status: "running".into(),
            started_ms: events.iter().map(|e| e.ts).min().unwrap_or(0),
            last_ms: events.iter().map(|e| e.ts).max().unwrap_or(0),
            spend: Spend::default(),
            steps: Vec::with_capacity(events.len()),
            parts: Vec::new(),
            forks: Vec::new(),
        };
        for e in events {
            match &e.kind {
                EventKind::RoutingDecided => {
                    if let Ok(r) = e.payload::<RoutingDecided>() {
                        t.domain = r.domain;
                        t.instruction = r.instruction;
                        if let Some(from) = r.forked_from.filter(|f| !f.is_empty()) {
                            t.forked_from = Some((from, r.fork_at.unwrap_or(0).into()));
                        }
                        if let Some(job) = r.job.filter(|j| !j.is_empty()) {
                            t.job = Some((job, r.signal.unwrap_or_default()));
                        }
                    }
                }
                EventKind::TaskDelegated => {
                    if let Ok(d) = e.payload::<TaskDelegated>() {
                        t.domain = d.domain;
                        t.status = d.status;
                    }
                }
                EventKind::TaskRejected => t.status = "rejected".into(),
                // The calls counted as they come; the expert's own total, once it reports
                // one, wins (it counts what a resumed run spent before).
                EventKind::ModelCalled => {
                    if let Ok(ModelCall::ModelCalled {
                        usage, cost_usd, ..
                    }) = e.payload::<ModelCall>()
                    {
                        t.spend.add_call(usage, cost_usd);
                    }
                }
                EventKind::ExpertFinished => {
                    if let Ok(f) = e.payload::<ExpertFinished>() {
                        t.spend = f.spend;
                    }
                }
                _ => {}
            }
            let (label, summary) = describe(e);
            t.steps.push(Step {
                ts: e.ts,
                actor: e.actor.clone(),
                kind: e.kind.as_str().to_string(),
                label,
                summary,
                event_id: e.event_id.to_string(),
                cause: e.cause.as_ref().map(ToString::to_string),
                payload: e.payload.clone(),
            });
        }
        t
    }

    /// The events of the task `id` (as [`TaskLog::resolve`] names it), in log order.
    pub fn events(&self, id: &str) -> &[Envelope] {
        self.events.get(id).map(Vec::as_slice).unwrap_or_default()
    }

    /// Every task that is not a part of another, newest first, without their steps.
    pub fn roots(&self) -> Vec<Timeline> {
        let mut roots: Vec<Timeline> = self
            .events
            .keys()
            .filter(|id| !self.parent.contains_key(*id))
            .map(|id| {
                let mut t = self.head(id);
                t.steps.clear();
                t
            })
            // Events that name a task no routing ever made (a stray fact) are not tasks.
            .filter(|t| !t.domain.is_empty() || t.status == "rejected")
            .collect();
        roots.sort_by_key(|t| std::cmp::Reverse(t.started_ms));
        roots
    }
}

impl Timeline {
    /// The timeline as a person reads it: a header, then one line per step (seconds since the
    /// task's first event, who, what), each part indented under its parent.
    pub fn to_text(&self) -> String {
        let mut out = String::new();
        self.write_text(&mut out, "");
        out
    }

    fn write_text(&self, out: &mut String, indent: &str) {
        use std::fmt::Write;
        let domain = if self.domain.is_empty() {
            "(not routed)"
        } else {
            &self.domain
        };
        let _ = writeln!(
            out,
            "{indent}task {}  {domain}  {}",
            self.task_id, self.status
        );
        let s = &self.spend;
        let _ = writeln!(
            out,
            "{indent}  started {}, {:.2} s to its last event; {} model calls, {}+{} tokens, ${:.4}",
            utc(self.started_ms),
            self.last_ms.saturating_sub(self.started_ms) as f64 / 1000.0,
            s.model_calls,
            s.input_tokens,
            s.output_tokens,
            s.cost_usd,
        );
        if let Some(parent) = &self.parent {
            let _ = writeln!(out, "{indent}  part of {parent}");
        }
        if let Some((from, at)) = &self.forked_from {
            let _ = writeln!(
                out,
                "{indent}  forked from {from} at model call {at} (the conversation before it given)"
            );
        }
        if let Some((job, signal)) = &self.job {
            let _ = writeln!(
                out,
                "{indent}  step {signal} of job {job} (iron jobs show {job})"
            );
        }
        if !self.instruction.is_empty() {
            let _ = writeln!(
                out,
                "{indent}  asked: \"{}\"",
                one_line(&self.instruction, EXCERPT * 2)
            );
        }
        let actor_width = self.steps.iter().map(|s| s.actor.len()).max().unwrap_or(0);
        for step in &self.steps {
            let _ = writeln!(
                out,
                "{indent}  {:>+9.3} s  {:actor_width$}  {:9}  {}",
                step.ts.saturating_sub(self.started_ms) as f64 / 1000.0,
                step.actor,
                step.label,
                step.summary,
            );
        }
        for part in &self.parts {
            let _ = writeln!(out);
            part.write_text(out, &format!("{indent}    "));
        }
        for fork in &self.forks {
            let at = fork.forked_from.as_ref().map_or(0, |(_, at)| *at);
            let _ = writeln!(
                out,
                "\n{indent}  another branch, forked at model call {at}:"
            );
            fork.write_text(out, &format!("{indent}    "));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::Payload;
    use crate::protocol::payload::{
        FinishReason, RecordedPrompt, RouteMethod, RoutingContext, Usage,
    };
    use serde_json::json;

    fn event(task: &str, actor: &str, kind: EventKind, payload: Value) -> Envelope {
        Envelope::new("t", ["tasks", task], actor, kind, payload)
    }

    fn routed(task: &str, domain: &str, parent: &str) -> Envelope {
        let routed = RoutingDecided {
            task_id: task.into(),
            domain: domain.into(),
            instruction: "check\nthe bridge".into(),
            by: RouteMethod::Given,
            part: 1,
            of: 1,
            context: RoutingContext {
                facts: 2,
                turns: 1,
                ..RoutingContext::default()
            },
            depth: 0,
            parent_task_id: parent.into(),
            forked_from: None,
            fork_at: None,
            job: None,
            signal: None,
        };
        event(task, "engine", RoutingDecided::KIND, routed.to_value())
    }

    fn model_called(task: &str) -> Envelope {
        let called = ModelCall::ModelCalled {
            task_id: task.into(),
            iteration: 1,
            backend: "b".into(),
            model: "m".into(),
            usage: Usage {
                input_tokens: 10,
                output_tokens: 4,
            },
            cost_usd: Some(0.01),
            text: None,
            tool_calls: vec!["delegate".into()],
            latency_ms: 20,
            prompt: Some(RecordedPrompt {
                messages: 2,
                chars: 900,
                new: Vec::new(),
            }),
            calls: Vec::new(),
            finish: FinishReason::ToolCalls,
        };
        event(task, "news/desk", ModelCall::KIND, called.to_value())
    }

    /// A task that delegated one part, the part denied a tool, and a stray fact.
    fn log() -> TaskLog {
        let mut tasks = TaskLog::default();
        for e in [
            routed("abc1", "news/desk", ""),
            model_called("abc1"),
            routed("abc1-x", "news/checker", "abc1"),
            Envelope::new(
                "t",
                ["tools", "news"],
                "news/checker",
                EventKind::GateDenied,
                json!({"task": "abc1-x", "tool": "files/write", "arguments": {"path": "/etc"},
                       "outcome": {"status": "denied", "gate": "clearance", "gate_number": 1,
                                   "message": "outside the roots",
                                   "denial": {"gate": "clearance", "tool": "files/write",
                                              "reason": "not_granted"}}}),
            ),
            event(
                "abc1-x",
                "engine",
                EventKind::TaskJudged,
                json!({"task_id": "abc1-x", "domain": "news/checker", "answered": false,
                       "reason": "no answer"}),
            ),
            event(
                "abc1",
                "engine",
                EventKind::TaskDelegated,
                json!({"task_id": "abc1", "domain": "news/desk", "expert": "/iron/x",
                       "status": "succeeded", "error": "",
                       "spent": {"model_calls": 1, "input_tokens": 10, "output_tokens": 4,
                                 "cost_usd": 0.01, "secs": 1.5},
                       "budget": null}),
            ),
            event(
                "abc1",
                "engine",
                EventKind::TaskJudged,
                json!({"task_id": "abc1"}),
            ),
            routed("abd2", "news/desk", ""),
            Envelope::new(
                "t",
                ["facts", "news"],
                "memory/extractor",
                EventKind::FactLearned,
                json!({"task_id": "zzz", "statement": "stray"}),
            ),
        ] {
            tasks.absorb(&e);
        }
        tasks
    }

    #[test]
    fn a_task_and_what_it_delegated_form_one_tree_in_log_order() {
        let t = log().timeline("abc1").unwrap();
        assert_eq!(
            (t.domain.as_str(), t.status.as_str()),
            ("news/desk", "succeeded")
        );
        let labels: Vec<&str> = t.steps.iter().map(|s| s.label).collect();
        assert_eq!(labels, ["routed", "model", "ran", "judged"]);
        assert_eq!(
            t.steps[1].summary,
            "call 1 to b/m; asked 2 messages, 900 chars: asked for delegate (20 ms, 10+4 tokens, $0.0100)"
        );
        // A payload without its kind's shape is shown as such, not dropped.
        assert!(
            t.steps[3].summary.starts_with("(unreadable: "),
            "{:?}",
            t.steps[3]
        );
        // The part, found by its parent, with the refusal written in another namespace.
        assert_eq!(t.parts.len(), 1);
        let part = &t.parts[0];
        assert_eq!(part.parent.as_deref(), Some("abc1"));
        assert_eq!(part.steps[1].label, "denied");
        assert_eq!(part.steps[1].summary, "files/write: outside the roots");
        assert_eq!(part.steps[2].summary, "not answered: no answer");
        let text = t.to_text();
        assert!(text.contains("asked: \"check the bridge\""), "{text}");
        assert!(
            text.contains("\n\n    task abc1-x  news/checker  running"),
            "{text}"
        );
        assert!(
            text.contains("1 model calls, 10+4 tokens, $0.0100"),
            "{text}"
        );
    }

    #[test]
    fn a_prefix_names_one_task_or_says_which_it_could_be() {
        let tasks = log();
        assert_eq!(tasks.resolve("abc1-").unwrap(), "abc1-x");
        assert_eq!(tasks.resolve("abc1").unwrap(), "abc1", "an exact id wins");
        match tasks.resolve("ab") {
            Err(TimelineError::Ambiguous { candidates, .. }) => {
                assert_eq!(candidates, ["abc1", "abc1-x", "abd2"])
            }
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            tasks.resolve("q"),
            Err(TimelineError::NotFound(_))
        ));
        assert!(matches!(tasks.resolve(""), Err(TimelineError::NotFound(_))));
    }

    #[test]
    fn the_list_holds_tasks_not_parts_nor_strays_newest_first() {
        let roots: Vec<String> = log().roots().into_iter().map(|t| t.task_id).collect();
        assert_eq!(roots.len(), 2);
        assert!(roots.contains(&"abc1".to_string()) && roots.contains(&"abd2".to_string()));
    }
}
