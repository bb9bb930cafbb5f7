//! A task replayed: its expert's loop run again, now, with today's skill, catalog and code,
//! against what the log recorded of it: the task as the expert was given it (`expert_woke`),
//! each model answer and each tool result (`model_called`, whose `prompt.new` holds the
//! conversation call by call), the operator's answers and corrections. Nothing is sent to a
//! model, no tool runs and nothing is written: the recorded answers stand in for all of them.
//!
//! The replay reports the first step where the loop now does something else than the record:
//! a model request that differs (the skill's instructions, the mesh's prose, the tools offered,
//! the code that writes the prompt), a tool called differently, more or fewer model calls, or
//! another ending.

mod stand_ins;

use std::collections::{BTreeSet, VecDeque};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use stand_ins::{ReplayInterjections, ReplayModel, ReplayTools};

use serde::Serialize;

use super::agent::{
    ASK_OPERATOR, AgentLoop, ExpertBrief, Limits, MARKER_SHOWN, TaskInput, TaskStatus,
};
use super::expert::delegate::DELEGATE;
use crate::aem::Catalog;
use crate::core::envelope::Envelope;
use crate::core::event_kind::EventKind;
use crate::llm::offline::DELIVER_TOOL;
use crate::llm::{ChatResponse, Message, ToolCall, ToolSpec};
use crate::protocol::ProtocolError;
use crate::protocol::payload::{
    AnswerReceived, ExpertFinished, ExpertWoke, ForkedAt, InterjectionRead, ModelCall,
};
use crate::tools::names::{ToolNames, ToolRef};

/// Why a task cannot be replayed at all.
#[derive(Debug, thiserror::Error)]
pub enum ReplayError {
    /// No expert ran it (it was refused, or never routed).
    #[error("task {0} never reached an expert (nothing to replay)")]
    NoExpert(String),
    /// The record predates what a replay needs.
    #[error("task {task} cannot be replayed: {why}")]
    NotRecorded {
        /// The task.
        task: String,
        /// What is missing.
        why: String,
    },
}

/// What the log holds of one expert's run of a task.
#[derive(Debug, Clone)]
pub struct Record {
    /// The task.
    pub task_id: String,
    /// The expert (`mesh/role`).
    pub expert: String,
    /// The model it used.
    pub model: String,
    input: TaskInput,
    tools: Vec<ToolSpec>,
    fork: Option<ForkedAt>,
    calls: Vec<Call>,
    /// Corrections read before each model call (index: the call, 0-based).
    interjections: Vec<Vec<String>>,
    answers: Vec<String>,
    /// The loop's last ending (`done`, `needs_answer`, …).
    pub status: Option<String>,
}

/// One recorded model call: the request as sent, and the answer.
#[derive(Debug, Clone)]
struct Call {
    request: Vec<Message>,
    answer: Answer,
}

/// What a recorded model call came to.
#[derive(Debug, Clone)]
enum Answer {
    /// The model answered.
    Gave(ChatResponse),
    /// The call failed, with the recorded message.
    Failed(String),
}

impl Record {
    /// Reads the record of task `task_id` from its events, in log order.
    pub fn read(task_id: &str, events: &[Envelope]) -> Result<Self, ReplayError> {
        let not_recorded = |why: String| ReplayError::NotRecorded {
            task: task_id.to_string(),
            why,
        };
        let woke_at = events
            .iter()
            .position(|e| e.kind == EventKind::ExpertWoke)
            .ok_or_else(|| {
                if events.iter().any(|e| e.kind == EventKind::ModelCalled) {
                    not_recorded("it ran before tasks recorded their start (expert_woke)".into())
                } else {
                    ReplayError::NoExpert(task_id.to_string())
                }
            })?;
        let woke_event = &events[woke_at];
        let woke: ExpertWoke = woke_event
            .payload()
            .map_err(|e| not_recorded(format!("its expert_woke is unreadable: {e}")))?;
        let mut record = Record {
            task_id: task_id.to_string(),
            expert: woke_event.actor.clone(),
            model: woke.model,
            input: woke.input,
            tools: woke.tools,
            fork: woke.fork,
            calls: Vec::new(),
            interjections: vec![Vec::new()],
            answers: Vec::new(),
            status: None,
        };
        let mut conversation: Vec<Message> = Vec::new();
        for e in &events[woke_at + 1..] {
            // Only the expert's own records: a delegated part's are under its own task.
            if e.actor != record.expert {
                continue;
            }
            let unreadable = |e: ProtocolError| not_recorded(e.to_string());
            match &e.kind {
                EventKind::ModelCalled => {
                    let (prompt, answer) = match e.payload::<ModelCall>().map_err(unreadable)? {
                        ModelCall::ModelCalled {
                            prompt,
                            text,
                            calls,
                            usage,
                            finish,
                            backend,
                            model,
                            cost_usd,
                            ..
                        } => (
                            prompt,
                            Answer::Gave(ChatResponse {
                                text,
                                tool_calls: calls,
                                usage,
                                finish,
                                backend,
                                model,
                                cost_usd,
                            }),
                        ),
                        ModelCall::ModelFailed { message, .. } => (None, Answer::Failed(message)),
                    };
                    let Some(prompt) = prompt else {
                        return Err(not_recorded(
                            "a model call was recorded without its prompt".into(),
                        ));
                    };
                    for m in prompt.new {
                        let m = serde_json::from_value::<Message>(m).map_err(|err| {
                            not_recorded(format!("a model_called's prompt is unreadable: {err}"))
                        })?;
                        conversation.push(m);
                    }
                    record.calls.push(Call {
                        request: conversation.clone(),
                        answer,
                    });
                    record.interjections.push(Vec::new());
                }
                EventKind::InterjectionRead => {
                    let read = e.payload::<InterjectionRead>().map_err(unreadable)?;
                    if let Some(before) = record.interjections.last_mut() {
                        before.push(read.text);
                    }
                }
                EventKind::ExpertFinished => {
                    let finished = e.payload::<ExpertFinished>().map_err(unreadable)?;
                    record.status = Some(finished.status);
                }
                EventKind::AnswerReceived => {
                    let answered = e.payload::<AnswerReceived>().map_err(unreadable)?;
                    record.answers.push(answered.answer);
                }
                _ => {}
            }
        }
        Ok(record)
    }

    /// The recorded tool results, in call order: each call the model asked for, with the
    /// result the loop gave the model (found in a later request), if the record has one.
    fn tool_results(&self) -> VecDeque<(ToolCall, Option<Message>)> {
        let answered = |id: &str| {
            self.calls
                .iter()
                .flat_map(|c| &c.request)
                .find(|m| matches!(m, Message::Tool { call_id, .. } if call_id == id))
                .cloned()
        };
        self.calls
            .iter()
            .filter_map(|c| match &c.answer {
                Answer::Gave(response) => Some(response),
                Answer::Failed(_) => None,
            })
            .flat_map(|r| &r.tool_calls)
            .map(|call| (call.clone(), answered(&call.id)))
            .collect()
    }

    /// Model calls recorded.
    pub fn model_calls(&self) -> usize {
        self.calls.len()
    }

    /// The conversation as it was sent to model call `at` (1-based), the correction marker
    /// written as the record writes it.
    pub fn conversation_before(&self, at: u32) -> Option<&[Message]> {
        let i = usize::try_from(at).ok()?.checked_sub(1)?;
        self.calls.get(i).map(|c| c.request.as_slice())
    }

    /// The task as the expert was given it at wake; `None` for a fork, which was given a
    /// conversation instead.
    pub fn input(&self) -> Option<&TaskInput> {
        self.fork.is_none().then_some(&self.input)
    }
}

/// Where the replay first did something else than the record.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Divergence {
    /// The step (`model call 2`, `tool call 1 (files/read)`, `the ending`).
    pub step: String,
    /// What differs, in words.
    pub what: String,
    /// The recorded side, around the first difference.
    pub recorded: String,
    /// The replayed side, around the first difference.
    pub now: String,
}

/// What a replay found.
#[derive(Debug, Clone, Serialize)]
pub struct Replayed {
    /// The task.
    pub task_id: String,
    /// Its expert.
    pub expert: String,
    /// Model calls in the record.
    pub recorded_calls: usize,
    /// Model calls the replay made before it ended or diverged.
    pub replayed_calls: usize,
    /// Tool calls the replay made (none ran: the recorded results stood in).
    pub tool_calls: usize,
    /// The recorded ending.
    pub recorded_status: Option<String>,
    /// The replay's ending.
    pub status: String,
    /// The first difference, if any.
    pub divergence: Option<Divergence>,
}

/// Replays `record` with the expert as `catalog` declares it now.
pub async fn replay(record: &Record, catalog: &Catalog) -> Replayed {
    let mut replayed = Replayed {
        task_id: record.task_id.clone(),
        expert: record.expert.clone(),
        recorded_calls: record.calls.len(),
        replayed_calls: 0,
        tool_calls: 0,
        recorded_status: record.status.clone(),
        status: String::new(),
        divergence: None,
    };
    let (Some(brief), Some(entry)) = (
        ExpertBrief::from_catalog(catalog, &record.expert),
        catalog.expert(&record.expert),
    ) else {
        replayed.divergence = Some(Divergence {
            step: "the start".into(),
            what: format!("the expert {} is no longer in the catalog", record.expert),
            recorded: record.expert.clone(),
            now: String::new(),
        });
        return replayed;
    };
    // The tools offered: the catalog's grants now against the record (the built-in ones
    // follow from the peers and channels, which the prompt shows).
    let granted: BTreeSet<String> = ToolNames::build(
        entry
            .tools
            .values()
            .map(|g| ToolRef::new(g.server.clone(), g.tool.clone())),
    )
    .iter()
    .map(|(name, _)| name.to_string())
    .collect();
    let offered: BTreeSet<String> = record
        .tools
        .iter()
        .map(|t| t.name.clone())
        .filter(|n| ![ASK_OPERATOR, DELEGATE, DELIVER_TOOL].contains(&n.as_str()))
        .collect();
    if granted != offered {
        let list = |s: Vec<&String>| s.iter().map(|n| n.as_str()).collect::<Vec<_>>().join(", ");
        replayed.divergence = Some(Divergence {
            step: "model call 1".into(),
            what: "the tools offered are not those recorded (the expert's grants or its \
                   mesh's tool servers changed)"
                .into(),
            recorded: format!(
                "only then: {}",
                list(offered.difference(&granted).collect())
            ),
            now: format!("only now: {}", list(granted.difference(&offered).collect())),
        });
        return replayed;
    }
    let divergence = Mutex::new(None);
    let model = ReplayModel {
        record,
        next: AtomicUsize::new(0),
        divergence: &divergence,
    };
    let tools = ReplayTools {
        offered: record
            .tools
            .iter()
            .filter(|t| t.name != ASK_OPERATOR)
            .cloned()
            .collect(),
        results: Mutex::new(record.tool_results()),
        made: AtomicUsize::new(0),
        divergence: &divergence,
    };
    let interjections = ReplayInterjections {
        record,
        model: &model,
        given: AtomicUsize::new(0),
    };
    let agent = AgentLoop::new(&model, &tools, Limits::from(&entry.budget))
        .with_interjections(&interjections);
    // A fork was given its start (the conversation of the task it branched from): its
    // replay is given the same, and checks what the fork did from there.
    let mut state = match (&record.fork, record.calls.first()) {
        (Some(fork), Some(first)) => AgentLoop::resume_from(
            first.request.clone(),
            fork.at.saturating_sub(1),
            MARKER_SHOWN.into(),
        ),
        _ => AgentLoop::start_with_marker(&brief, &record.input, MARKER_SHOWN.into()),
    };
    let mut outcome = agent.run(&mut state).await;
    let mut answers = record.answers.iter();
    while matches!(outcome.status, TaskStatus::NeedsAnswer { .. }) {
        let Some(answer) = answers.next() else { break };
        outcome = agent.resume(&mut state, answer).await;
    }
    replayed.replayed_calls = model.next.load(Ordering::SeqCst).min(record.calls.len());
    replayed.tool_calls = tools.made.load(Ordering::SeqCst);
    replayed.status = outcome.status.code().to_string();
    replayed.divergence = divergence.into_inner().unwrap_or_else(|e| e.into_inner());
    if replayed.divergence.is_none() {
        replayed.divergence = if replayed.replayed_calls < record.calls.len() {
            Some(Divergence {
                step: format!("model call {}", replayed.replayed_calls + 1),
                what: format!(
                    "the loop ends after {} model calls; the record has {}",
                    replayed.replayed_calls,
                    record.calls.len()
                ),
                recorded: String::new(),
                now: replayed.status.clone(),
            })
        } else if record
            .status
            .as_deref()
            .is_some_and(|s| s != replayed.status)
        {
            Some(Divergence {
                step: "the ending".into(),
                what: "the loop ends otherwise than recorded".into(),
                recorded: record.status.clone().unwrap_or_default(),
                now: replayed.status.clone(),
            })
        } else {
            None
        };
    }
    replayed
}

#[cfg(test)]
mod tests {
    use super::stand_ins::SYSTEM_CHANGED;
    use super::*;
    use crate::cognition::agent::{
        EventRecorder, LoopEvent, ToolExecutor, ToolFailure, interjection_channel,
        unwrap_tool_output, wrap_tool_output,
    };
    use crate::llm::BoxFuture;
    use crate::llm::{Script, ScriptedBackend};
    use crate::protocol::Payload;
    use serde_json::Value;
    use serde_json::json;

    const MESH: &str = "---
name: desk
status: active
defaults:
  model: standard
servers:
  files:
    transport: local
    command: npx
    args: [\"-y\", \"files-server@1.0.0\"]
    tools: [read_text_file]
tools: [files/read_text_file]
---

The desk.
";

    /// The agent folders: a mesh whose one expert holds a read tool.
    fn aem(instructions: &str, granted: bool) -> (tempfile::TempDir, Catalog) {
        let dir = tempfile::tempdir().unwrap();
        crate::aem::scaffold::new_mesh(dir.path(), "desk").unwrap();
        let mesh = if granted {
            MESH.to_string()
        } else {
            MESH.replace("tools: [files/read_text_file]\n", "")
        };
        std::fs::write(dir.path().join("desk/AEM.md"), mesh).unwrap();
        let skill = dir.path().join("desk/skills/assistant/SKILL.md");
        let text = std::fs::read_to_string(&skill).unwrap();
        let body = text.rsplit_once("---\n").unwrap().0;
        std::fs::write(&skill, format!("{body}---\n\n{instructions}\n")).unwrap();
        let catalog = crate::aem::compile(dir.path()).unwrap();
        (dir, catalog)
    }

    /// The read tool: answers with the file's name.
    struct Files;

    impl ToolExecutor for Files {
        fn tools(&self) -> Vec<ToolSpec> {
            vec![ToolSpec {
                name: "files__read_text_file".into(),
                description: "Reads a file.".into(),
                parameters: json!({"type": "object"}),
            }]
        }

        fn call<'a>(
            &'a self,
            _: &'a str,
            arguments: &'a Value,
        ) -> BoxFuture<'a, Result<Value, ToolFailure>> {
            Box::pin(async move { Ok(json!({"read": arguments["path"]})) })
        }
    }

    /// A task run by the real loop on a scripted model, recorded as the expert records it.
    async fn recorded(catalog: &Catalog) -> Vec<Envelope> {
        recorded_with(catalog, None).await
    }

    /// [`recorded`], with an operator's correction waiting before the first model call.
    async fn recorded_with(catalog: &Catalog, correction: Option<&str>) -> Vec<Envelope> {
        let model = ScriptedBackend::new(
            "demo",
            "inline",
            Script::parse(
                "turns:\n  - tool_calls: [{id: c1, name: files__read_text_file, arguments: {path: notes.txt}}]\n  - text: the notes say hello\n",
                "inline",
            )
            .unwrap(),
        );
        let events = EventRecorder::default();
        let (sender, inbox) = interjection_channel();
        if let Some(text) = correction {
            sender.send(text);
        }
        let agent = AgentLoop::new(&model, &Files, Limits::default())
            .with_events(&events)
            .with_interjections(&inbox);
        let brief = ExpertBrief::from_catalog(catalog, "desk/assistant").unwrap();
        let input = TaskInput {
            instruction: "What do the notes say?".into(),
            memory: Some("a remembered fact".into()),
            perception: None,
        };
        let mut state = AgentLoop::start(&brief, &input);
        let outcome = agent.run(&mut state).await;
        assert_eq!(outcome.status.code(), "done");
        // As the expert's recorder writes them: each names its task.
        let write = |kind, mut payload: Value| {
            payload["task_id"] = "t1".into();
            Envelope::new("t", ["tasks", "t1"], "desk/assistant", kind, payload)
        };
        let woke = ExpertWoke {
            task_id: "t1".into(),
            model: "demo".into(),
            input,
            tools: agent.offered(),
            fork: None,
        };
        let mut log = vec![write(ExpertWoke::KIND, woke.to_value())];
        for e in events.events() {
            let kind = match &e {
                LoopEvent::ModelCalled { .. } | LoopEvent::ModelFailed { .. } => {
                    EventKind::ModelCalled
                }
                LoopEvent::Finished { .. } => EventKind::ExpertFinished,
                LoopEvent::InterjectionRead { .. } => EventKind::InterjectionRead,
                _ => continue,
            };
            log.push(write(kind, serde_json::to_value(&e).unwrap()));
        }
        log
    }

    #[tokio::test]
    async fn a_task_replayed_with_nothing_changed_matches_its_record() {
        let (_dir, catalog) = aem("Answer from the notes.", true);
        let record = Record::read("t1", &recorded(&catalog).await).unwrap();
        assert_eq!(record.model_calls(), 2);
        let r = replay(&record, &catalog).await;
        assert_eq!(r.divergence, None);
        assert_eq!((r.replayed_calls, r.tool_calls), (2, 1));
        assert_eq!(r.status, "done");
    }

    #[tokio::test]
    async fn a_correction_is_read_again_before_the_call_it_preceded() {
        let (_dir, catalog) = aem("Answer from the notes.", true);
        let log = recorded_with(&catalog, Some("only the first page")).await;
        let record = Record::read("t1", &log).unwrap();
        assert_eq!(replay(&record, &catalog).await.divergence, None);
        // Without the correction on the record, the replayed request lacks it.
        let without: Vec<Envelope> = log
            .into_iter()
            .filter(|e| e.kind != EventKind::InterjectionRead)
            .collect();
        let record = Record::read("t1", &without).unwrap();
        let d = replay(&record, &catalog).await.divergence.unwrap();
        assert_eq!(d.step, "model call 1");
        assert!(d.recorded.contains("only the first page"), "{d:?}");
    }

    #[tokio::test]
    async fn a_changed_skill_is_named_at_the_first_model_call() {
        let (_dir, before) = aem("Answer from the notes.", true);
        let record = Record::read("t1", &recorded(&before).await).unwrap();
        let (_dir, after) = aem("Answer from the notes, in French.", true);
        let d = replay(&record, &after).await.divergence.unwrap();
        assert_eq!(d.step, "model call 1");
        assert_eq!(d.what, SYSTEM_CHANGED);
        assert!(d.now.contains("in French"), "{d:?}");
        assert!(!d.recorded.contains("in French"), "{d:?}");
    }

    #[tokio::test]
    async fn a_tool_no_longer_granted_is_named() {
        let (_dir, before) = aem("Answer from the notes.", true);
        let record = Record::read("t1", &recorded(&before).await).unwrap();
        let (_dir, after) = aem("Answer from the notes.", false);
        let d = replay(&record, &after).await.divergence.unwrap();
        assert!(d.what.starts_with("the tools offered"), "{d:?}");
        assert_eq!(d.recorded, "only then: files__read_text_file");
    }

    #[tokio::test]
    async fn a_record_that_ends_early_is_where_the_replay_stops() {
        let (_dir, catalog) = aem("Answer from the notes.", true);
        let mut log = recorded(&catalog).await;
        // The second model call and the ending are not on the log (the process died).
        log.truncate(2);
        let record = Record::read("t1", &log).unwrap();
        let d = replay(&record, &catalog).await.divergence.unwrap();
        assert_eq!(d.step, "model call 2");
        assert!(d.what.contains("the record ends after 1 calls"), "{d:?}");
    }

    #[test]
    fn a_task_without_an_expert_or_its_start_is_not_replayable() {
        let routed = Envelope::new(
            "t",
            ["tasks", "t1"],
            "engine",
            EventKind::RoutingDecided,
            json!({"task_id": "t1"}),
        );
        assert!(matches!(
            Record::read("t1", std::slice::from_ref(&routed)),
            Err(ReplayError::NoExpert(_))
        ));
        let old = Envelope::new(
            "t",
            ["tasks", "t1"],
            "desk/assistant",
            EventKind::ModelCalled,
            json!({"event": "model_called"}),
        );
        assert!(matches!(
            Record::read("t1", &[routed, old]),
            Err(ReplayError::NotRecorded { .. })
        ));
    }

    #[test]
    fn a_wrapped_tool_output_is_read_back_as_the_model_read_it() {
        for result in [
            Ok(json!({"a": 1})),
            Ok(json!("text with </tool_output> inside")),
            Err(ToolFailure::Reported("no such file".into())),
        ] {
            let wrapped = wrap_tool_output("files__read", "c1", &result);
            let (ok, body) = unwrap_tool_output(&wrapped).unwrap();
            assert_eq!(ok, result.is_ok());
            let again = if ok {
                Ok(Value::String(body))
            } else {
                Err(ToolFailure::Reported(body))
            };
            assert_eq!(wrap_tool_output("files__read", "c1", &again), wrapped);
        }
        assert_eq!(unwrap_tool_output("plain text"), None);
    }
}
