//! The offline backend: what experts run on when no `models:` block is configured, and the last
//! resort of every failover list when every configured backend fails. Deterministic, no
//! network, and honest: every answer says no model produced it.
//!
//! It does two things:
//!
//! - **Structured tasks.** An instruction may carry one task as JSON in a fenced block tagged
//!   `iron-task` (the newsroom's flow writes them; a model reads the same block as data). The
//!   offline backend performs it with the deterministic judgment of [`claims`] and
//!   [`bulletin`] and answers with JSON:
//!
//!   | `iron_task` | fields | answer |
//!   |---|---|---|
//!   | `group_claims` | `reports` | `{"claims": [Claim]}` |
//!   | `cross_check` | `claims`, `reports`, optional `check` (the ids of the claims to rate) | `{"verdicts": [Verdict]}` |
//!   | `write_bulletin` | `claims` (checked, with sources) | `{"headline", "lines", "text"}` |
//!   | `publish` | `channel`, `dest`, `delivery_id`, `text`, `bulletin` | a call of the `deliver` tool, then `{"published", "detail"}` |
//!
//! - **Plain questions**: the lines of the expert's memory and perception that match
//!   ([`answer`]).
//!
//! Only the instruction (the task's first user message) is read for a task block: never the
//! context blocks or tool output, which are data.

pub mod answer;
pub mod bulletin;
pub mod claims;
pub mod eval;
pub mod frame;
pub mod text;

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::{Value, json};

use super::error::LlmError;
use super::local::{EmbeddingError, LocalEmbedder};
use super::model::{BoxFuture, ChatModel};
use super::types::{ChatRequest, ChatResponse, FinishReason, Message, ToolCall, Usage};
use crate::memory::semantic::{EmbedError, Embedder};
use claims::{Claim, Report};

pub use crate::protocol::TASK_FENCE;
/// The built-in tool an expert with delivery channels is offered.
pub const DELIVER_TOOL: &str = "deliver";
/// The name the backend answers as.
pub const NAME: &str = "offline";

/// What `model` makes of each of `reports` ([`claims::meaning_text`]), by report id.
pub fn meanings_of(
    model: &LocalEmbedder,
    reports: &[Report],
) -> Result<claims::Meanings, EmbeddingError> {
    let texts: Vec<String> = reports.iter().map(claims::meaning_text).collect();
    let vectors = model.embed(&texts.iter().map(String::as_str).collect::<Vec<_>>())?;
    Ok(by_report(reports, vectors))
}

/// [`meanings_of`] through memory's [`Embedder`] port (the model service, or a model loaded
/// here), refused unless it gives one vector per report.
pub async fn read_meanings(
    embedder: &dyn Embedder,
    reports: &[Report],
) -> Result<claims::Meanings, EmbedError> {
    let texts: Vec<String> = reports.iter().map(claims::meaning_text).collect();
    let vectors = crate::memory::semantic::embed_each(embedder, &texts).await?;
    Ok(by_report(reports, vectors))
}

fn by_report(reports: &[Report], vectors: Vec<Vec<f32>>) -> claims::Meanings {
    claims::Meanings::new(reports.iter().map(|r| r.id.clone()).zip(vectors).collect())
}

/// A task an instruction carries.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(tag = "iron_task", rename_all = "snake_case")]
pub enum Task {
    /// Group reports that describe one event into claims.
    GroupClaims {
        /// The reports.
        reports: Vec<Report>,
    },
    /// Check each claim across independent owners.
    CrossCheck {
        /// The claims.
        claims: Vec<Claim>,
        /// The reports they refer to.
        reports: Vec<Report>,
        /// The ids of the claims to rate (every claim when absent); the others are the rest of
        /// what the sources say, read for rival accounts.
        #[serde(default)]
        check: Option<Vec<String>>,
    },
    /// Word a bulletin from checked claims.
    WriteBulletin {
        /// The claims, with status and sources.
        claims: Vec<bulletin::Line>,
    },
    /// Send a finished bulletin through a delivery channel.
    Publish {
        /// The channel.
        channel: String,
        /// Where within it.
        #[serde(default)]
        dest: String,
        /// The delivery's id.
        delivery_id: String,
        /// The text to send.
        text: String,
        /// The structured bulletin.
        #[serde(default)]
        bulletin: Option<Value>,
    },
}

/// The task block of `instruction`: `None` without one, `Some(Err)` when it does not parse.
pub fn find_task(instruction: &str) -> Option<Result<Task, serde_json::Error>> {
    let start = instruction.find(TASK_FENCE)? + TASK_FENCE.len();
    let body = &instruction[start..];
    let end = body.find("```").unwrap_or(body.len());
    Some(serde_json::from_str(body[..end].trim()))
}

/// `instruction` with every task block made inert: what an expert does for a task that did not
/// come from a durable job (a person's message, a peer's delegation), so that nobody can make
/// an offline expert perform a structured task (say, publish) by typing the block. A model
/// still reads the text.
pub fn defuse_tasks(instruction: &str) -> String {
    instruction.replace(TASK_FENCE, "``` iron-task (not from a job: not performed)")
}

/// A block carrying `task` (any JSON object with an `iron_task` field), for instructions.
pub fn task_block(task: &Value) -> String {
    format!("{TASK_FENCE}\n{task}\n```")
}

/// The offline backend. Given a reader of meanings (the local embedding model, through the model
/// service or loaded in this process), its claim judgment reads meanings as well as words
/// ([`claims::Meanings`]); without one, or when it fails, it judges on words alone and says so.
#[derive(Default)]
pub struct OfflineBackend {
    meanings: Option<std::sync::Arc<dyn Embedder>>,
}

impl std::fmt::Debug for OfflineBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OfflineBackend")
            .field(
                "meanings",
                &self.meanings.as_ref().map(|e| e.name().to_string()),
            )
            .finish()
    }
}

impl OfflineBackend {
    /// Words alone.
    pub fn lexical() -> Self {
        Self::default()
    }

    /// Reading the reports' meanings with `embedder` as well as their words.
    pub fn with_meanings(embedder: std::sync::Arc<dyn Embedder>) -> Self {
        Self {
            meanings: Some(embedder),
        }
    }
}

impl ChatModel for OfflineBackend {
    fn name(&self) -> &str {
        NAME
    }

    fn chat<'a>(
        &'a self,
        request: &'a ChatRequest,
    ) -> BoxFuture<'a, Result<ChatResponse, LlmError>> {
        Box::pin(async move {
            let reports = match first_instruction(request).and_then(find_task) {
                Some(Ok(Task::GroupClaims { reports } | Task::CrossCheck { reports, .. })) => {
                    reports
                }
                _ => return Ok(respond(request, None)),
            };
            let meanings = match &self.meanings {
                Some(embedder) => read_meanings(&**embedder, &reports)
                    .await
                    .inspect_err(|e| tracing::warn!("the claim judge reads words alone: {e}"))
                    .ok(),
                None => None,
            };
            // Judging many reports takes a while: off the runtime.
            let (owned, n, started) = (request.clone(), reports.len(), std::time::Instant::now());
            let judged =
                tokio::task::spawn_blocking(move || respond(&owned, meanings.as_ref())).await;
            tracing::debug!(
                reports = n,
                ms = started.elapsed().as_millis() as u64,
                "the claim judge answered"
            );
            Ok(judged.unwrap_or_else(|e| {
                tracing::warn!("the claim judge stopped ({e}); judging on words alone");
                respond(request, None)
            }))
        })
    }
}

/// The first user message of `request`: the instruction a task block may be in.
fn first_instruction(request: &ChatRequest) -> Option<&str> {
    request.messages.iter().find_map(|m| match m {
        Message::User { content } => Some(content.as_str()),
        _ => None,
    })
}

/// A configured model with the offline backend behind it: when the model fails (after its own
/// retries and failover), the call is answered offline instead, and the failure is logged.
pub struct OrOffline {
    model: std::sync::Arc<dyn ChatModel>,
}

impl OrOffline {
    /// `model`, falling back to the offline backend.
    pub fn new(model: std::sync::Arc<dyn ChatModel>) -> Self {
        Self { model }
    }
}

impl ChatModel for OrOffline {
    fn name(&self) -> &str {
        self.model.name()
    }

    fn chat<'a>(
        &'a self,
        request: &'a ChatRequest,
    ) -> BoxFuture<'a, Result<ChatResponse, LlmError>> {
        Box::pin(async move {
            match self.model.chat(request).await {
                Ok(r) => Ok(guard_cross_check(request, r)),
                Err(e) => {
                    tracing::warn!(
                        model = self.model.name(),
                        "every backend failed ({e}); answering with the offline backend"
                    );
                    // Said in the answer, so an outage is never mistaken for "no model".
                    let mut why: String = e.to_string().chars().take(200).collect();
                    why = format!(
                        "The configured model {} did not answer ({why})",
                        self.model.name()
                    );
                    Ok(respond_because(request, &why, None))
                }
            }
        })
    }
}

/// After a model's cross-check, the judge's veto: a claim the model calls confirmed whose
/// supporting reports' frames conflict ([`claims::frame_conflicts`]: another actor, figure,
/// winner or role) is single-source, with the judge's reason. Only ever downgrades; the flow's
/// own guard then applies the owners and denials rule to whatever comes back.
fn guard_cross_check(request: &ChatRequest, mut response: ChatResponse) -> ChatResponse {
    let Some(Ok(Task::CrossCheck {
        claims, reports, ..
    })) = first_instruction(request).and_then(find_task)
    else {
        return response;
    };
    let Some(text) = response.text.as_deref() else {
        return response;
    };
    let Some(mut answer) = text
        .find('{')
        .and_then(|start| {
            serde_json::Deserializer::from_str(&text[start..])
                .into_iter::<Value>()
                .next()
        })
        .and_then(Result::ok)
    else {
        return response;
    };
    let Some(verdicts) = answer.get_mut("verdicts").and_then(Value::as_array_mut) else {
        return response;
    };
    let by_id: BTreeMap<&str, &Claim> = claims.iter().map(|c| (c.id.as_str(), c)).collect();
    let confirmed: Vec<(&mut Value, &Claim)> = verdicts
        .iter_mut()
        .filter(|v| v["status"] == "confirmed")
        .filter_map(|v| {
            let claim = by_id.get(v["claim"].as_str()?).copied()?;
            Some((v, claim))
        })
        .collect();
    let checked: Vec<&Claim> = confirmed.iter().map(|(_, c)| *c).collect();
    let conflicts = claims::frame_conflicts(&checked, &reports);
    let mut vetoed = 0;
    for ((verdict, _), why) in confirmed.into_iter().zip(conflicts) {
        if let Some(why) = why {
            verdict["status"] = json!("single_source");
            verdict["reason"] = json!(format!("not confirmed by the judge's frame check: {why}"));
            vetoed += 1;
        }
    }
    if vetoed > 0 {
        tracing::warn!("the judge vetoed {vetoed} confirmation(s) of the model");
        response.text = Some(answer.to_string());
    }
    response
}

fn respond(request: &ChatRequest, meanings: Option<&claims::Meanings>) -> ChatResponse {
    respond_because(request, answer::NO_MODEL, meanings)
}

/// [`respond`], a plain answer opening with `why` no model wrote it.
fn respond_because(
    request: &ChatRequest,
    why: &str,
    meanings: Option<&claims::Meanings>,
) -> ChatResponse {
    let first_user = first_instruction(request);
    let system = request
        .messages
        .iter()
        .find_map(|m| match m {
            Message::System { content } => Some(content.as_str()),
            _ => None,
        })
        .unwrap_or("");
    let instruction = first_user.unwrap_or("");
    let text = match find_task(instruction) {
        None => answer::answer(instruction, system, why),
        Some(Err(e)) => json!({
            "error": format!("the iron-task block could not be read: {e}"),
            "produced_by": NAME,
        })
        .to_string(),
        Some(Ok(task)) => match perform(task, request, meanings) {
            Performed::Text(t) => t,
            Performed::Call(call) => return reply(None, vec![call]),
        },
    };
    reply(Some(text), Vec::new())
}

enum Performed {
    Text(String),
    Call(ToolCall),
}

/// `task` done, with what a model made of its reports when there is that.
fn perform(task: Task, request: &ChatRequest, meanings: Option<&claims::Meanings>) -> Performed {
    let out = match task {
        Task::GroupClaims { reports } => {
            json!({"claims": claims::group_with(&reports, meanings)})
        }
        Task::CrossCheck {
            claims,
            reports,
            check,
        } => {
            let verdicts = match &check {
                Some(ids) => {
                    let rate = ids.iter().map(String::as_str).collect();
                    claims::cross_check_some_with(&claims, &rate, &reports, meanings)
                }
                None => claims::cross_check_all_with(&claims, &reports, meanings),
            };
            json!({"verdicts": claims::enforce_all(verdicts, &reports)})
        }
        Task::WriteBulletin { claims } => json!(bulletin::write(&claims)),
        Task::Publish {
            channel,
            dest,
            delivery_id,
            text,
            bulletin,
        } => {
            // After the send, report how it went; before, send (once).
            if let Some((content, is_error)) = request.messages.iter().rev().find_map(|m| match m {
                Message::Tool {
                    name,
                    content,
                    is_error,
                    ..
                } if name == DELIVER_TOOL => Some((content.clone(), *is_error)),
                _ => None,
            }) {
                json!({"published": !is_error, "delivery_id": delivery_id, "detail": content})
            } else if request.tools.iter().any(|t| t.name == DELIVER_TOOL) {
                let mut arguments = json!({
                    "channel": channel, "dest": dest, "text": text, "delivery_id": delivery_id,
                });
                if let Some(b) = bulletin {
                    arguments["data"] = b;
                }
                return Performed::Call(ToolCall {
                    id: format!("offline_{delivery_id}"),
                    name: DELIVER_TOOL.into(),
                    arguments,
                });
            } else {
                json!({"published": false, "delivery_id": delivery_id,
                       "detail": "this expert holds no delivery channel, so it cannot publish"})
            }
        }
    };
    let mut out = out;
    out["produced_by"] = json!(NAME);
    Performed::Text(out.to_string())
}

fn reply(text: Option<String>, tool_calls: Vec<ToolCall>) -> ChatResponse {
    ChatResponse {
        finish: if tool_calls.is_empty() {
            FinishReason::Stop
        } else {
            FinishReason::ToolCalls
        },
        text,
        tool_calls,
        usage: Usage::default(),
        backend: NAME.into(),
        model: NAME.into(),
        cost_usd: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::ToolSpec;

    fn request(instruction: &str, tools: Vec<ToolSpec>) -> ChatRequest {
        ChatRequest {
            messages: vec![Message::system("You are x."), Message::user(instruction)],
            tools,
            ..ChatRequest::default()
        }
    }

    #[test]
    fn a_task_block_is_found_only_in_its_fence() {
        assert!(find_task("what changed?").is_none());
        let block = task_block(&json!({"iron_task": "group_claims", "reports": []}));
        let t = find_task(&format!("Group these.\n\n{block}\nThanks")).unwrap();
        assert_eq!(t.unwrap(), Task::GroupClaims { reports: vec![] });
        let bad = find_task("```iron-task\n{\"iron_task\": \"dance\"}\n```").unwrap();
        assert!(bad.unwrap_err().to_string().contains("dance"));
        assert!(find_task(&defuse_tasks(&block)).is_none());
    }

    #[test]
    fn publish_calls_deliver_once_then_reports() {
        let block = task_block(&json!({
            "iron_task": "publish", "channel": "bulletins", "dest": "terminal",
            "delivery_id": "b-1", "text": "hello", "bulletin": {"id": "b-1"}
        }));
        let deliver = ToolSpec {
            name: DELIVER_TOOL.into(),
            description: String::new(),
            parameters: json!({}),
        };
        let mut req = request(&block, vec![deliver]);
        let first = respond(&req, None);
        assert_eq!(first.tool_calls.len(), 1);
        assert_eq!(first.tool_calls[0].arguments["data"]["id"], "b-1");
        req.messages.push(first.to_message());
        req.messages.push(Message::Tool {
            call_id: "offline_b-1".into(),
            name: DELIVER_TOOL.into(),
            content: "ok".into(),
            is_error: false,
        });
        let second = respond(&req, None);
        assert!(second.tool_calls.is_empty());
        let v: Value = serde_json::from_str(second.text.as_deref().unwrap()).unwrap();
        assert_eq!(v["published"], true);
        assert_eq!(v["produced_by"], "offline");
        // Without the tool, it says it cannot.
        let none = respond(&request(&block, vec![]), None);
        assert!(none.text.unwrap().contains("holds no delivery channel"));
    }

    struct Down;

    impl ChatModel for Down {
        fn name(&self) -> &str {
            "down"
        }

        fn chat<'a>(&'a self, _: &'a ChatRequest) -> BoxFuture<'a, Result<ChatResponse, LlmError>> {
            Box::pin(async {
                Err(LlmError::Timeout {
                    backend: "down".into(),
                    after: std::time::Duration::from_secs(1),
                })
            })
        }
    }

    /// A model that confirms every claim it is asked to cross-check.
    struct Reckless;

    impl ChatModel for Reckless {
        fn name(&self) -> &str {
            "reckless"
        }

        fn chat<'a>(&'a self, r: &'a ChatRequest) -> BoxFuture<'a, Result<ChatResponse, LlmError>> {
            let Some(Ok(Task::CrossCheck { claims, .. })) =
                first_instruction(r).and_then(find_task)
            else {
                panic!("asked for a cross-check");
            };
            let verdicts: Vec<Value> = claims
                .iter()
                .map(|c| {
                    let ids: Vec<&str> = c.reports.iter().map(|r| r.id.as_str()).collect();
                    json!({"claim": c.id, "text": c.text, "status": "confirmed",
                           "supporting": ids, "denying": [], "reason": "looks fine"})
                })
                .collect();
            let text = format!("Here you are:\n{}", json!({ "verdicts": verdicts }));
            Box::pin(async move { Ok(reply(Some(text), Vec::new())) })
        }
    }

    #[tokio::test]
    async fn the_judge_vetoes_a_models_confirmation_whose_frames_conflict() {
        let report = |id: &str, owner: &str, title: &str| {
            json!({"id": id, "title": title, "outlet": owner, "owner": owner,
                   "published": "2026-11-30T06:00:00Z"})
        };
        let reports = json!([
            report("a", "north", "Rovers beat United 2-1 at Elm Park"),
            report("b", "south", "United beat Rovers 2-1 at Elm Park"),
            report("c", "north", "Ferry services suspended at Kell harbour"),
            report("d", "south", "Kell harbour ferry services suspended"),
        ]);
        let claim = |id: &str, members: [&str; 2]| json!({"id": id, "text": id, "reports": members.map(|m| json!({"id": m, "stance": "supports"}))});
        let block = task_block(&json!({"iron_task": "cross_check", "reports": reports,
            "claims": [claim("swapped", ["a", "b"]), claim("ferry", ["c", "d"])]}));
        let model = OrOffline::new(std::sync::Arc::new(Reckless));
        let r = model.chat(&request(&block, vec![])).await.unwrap();
        let answer: Value = serde_json::from_str(r.text.as_deref().unwrap()).unwrap();
        let status = |id: &str| {
            let v = answer["verdicts"]
                .as_array()
                .unwrap()
                .iter()
                .find(|v| v["claim"] == id);
            (v.unwrap()["status"].clone(), v.unwrap()["reason"].clone())
        };
        let (swapped, why) = status("swapped");
        assert_eq!(swapped, "single_source", "{answer}");
        assert!(why.as_str().unwrap().contains("frame check"), "{why}");
        assert_eq!(status("ferry").0, "confirmed", "{answer}");
    }

    #[tokio::test]
    async fn when_every_backend_fails_the_offline_backend_answers() {
        let model = OrOffline::new(std::sync::Arc::new(Down));
        assert_eq!(model.name(), "down");
        let r = model
            .chat(&request("is the bridge closed?", vec![]))
            .await
            .unwrap();
        assert_eq!(r.backend, NAME);
        let text = r.text.unwrap();
        assert!(
            text.starts_with("The configured model down did not answer (backend down:"),
            "an outage is not \"no model\": {text}"
        );
        assert!(!text.contains("No language model is configured"), "{text}");
    }

    #[test]
    fn plain_questions_get_an_extracted_answer() {
        let r = respond(&request("is the bridge closed?", vec![]), None);
        assert!(r.text.unwrap().contains("No language model is configured"));
        assert_eq!(r.usage, Usage::default());
    }
}
