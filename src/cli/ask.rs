//! `iron ask`: a question through the inbox as the terminal user, and the reply of that turn.
//!
//! The message goes on `/iron/raw_inbox` like any channel's, with a reply address of its own
//! (`ask:<id>`). The command then follows the memory log: the inbox's `chat_turn` for that
//! address gives the turn's id, from which the task id is computed the way the inbox computes
//! it; the task's `reply_delivered` is the answer. A refusal, an unanswered task or a failed
//! delivery ends the command with the reason, and so does `--wait` running out.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use super::CliError;
use super::connect::connect;
use super::inbox::publish_inbox;
use crate::core::{durable::EventLog, envelope::Envelope, event_kind::EventKind, ids::EventId};
use crate::protocol::payload::{ChatTurn, ReplyDelivered, TaskDelegated, TaskJudged, TaskRejected};
use crate::spine::durable::{AnyLog, streams::MEM};

/// What the person asked and where it goes.
#[derive(Debug, Clone)]
pub struct Ask {
    /// The question.
    pub text: String,
    /// Who asks (the channel's user id).
    pub user: String,
    /// The conversation to continue, if any; a new one otherwise.
    pub session: Option<String>,
    /// How long to wait for the reply.
    pub wait: Duration,
}

/// How the turn ended.
#[derive(Debug, PartialEq)]
enum Outcome {
    Answered(String),
    Failed(String),
}

/// Sends the question and prints the reply; the conversation's name goes to stderr so that a
/// person can continue it with `--session`.
pub async fn run(ask: Ask, router: &str, timeout: Duration) -> Result<(), CliError> {
    if ask.text.trim().is_empty() {
        return Err(CliError::Failed("the question is empty".into()));
    }
    if ask.user.trim().is_empty() || ask.user.contains('/') {
        return Err(CliError::Failed(
            "--user must be a non-empty name without '/'".into(),
        ));
    }
    let config = super::load_config()?;
    let log = AnyLog::open(&config).await?;
    let from = log.last_sequence(MEM).await.map_err(failed)? + 1;
    let id = uuid::Uuid::now_v7().simple().to_string();
    let session = ask
        .session
        .clone()
        .unwrap_or_else(|| format!("ask-{}", &id[id.len() - 8..]));
    let destination = format!("ask:{id}");
    let (_control, node) = connect(router, timeout).await?;
    publish_inbox(
        &node,
        "terminal",
        &format!("{}/{session}", ask.user),
        &destination,
        &ask.text,
        timeout,
    )
    .await?;
    eprintln!("session {session} (continue it with --session {session})");
    let filter = format!("mem.{}.sessions.>", config.tenant);
    match follow(&log, &filter, from, &destination, ask.wait).await? {
        Outcome::Answered(text) => {
            println!("{text}");
            Ok(())
        }
        Outcome::Failed(why) => Err(CliError::Failed(why)),
    }
}

fn failed(e: impl std::fmt::Display) -> CliError {
    CliError::Failed(format!("reading the log: {e}"))
}

/// Follows the log from `from` until the turn addressed to `destination` ends.
async fn follow(
    log: &AnyLog,
    filter: &str,
    mut from: u64,
    destination: &str,
    wait: Duration,
) -> Result<Outcome, CliError> {
    let deadline = Instant::now() + wait;
    let mut turn = Turn::new(destination);
    loop {
        // A read that times out or finds the log unreachable (a cluster electing a leader)
        // is tried again while the wait lasts; anything else ends the ask.
        let page = match log.read(MEM, filter, from, 500).await {
            Ok(page) => page,
            Err(e) if e.is_retryable() && Instant::now() < deadline => {
                tracing::warn!("reading the log: {e}; trying again");
                tokio::time::sleep(Duration::from_millis(200)).await;
                continue;
            }
            Err(e) => return Err(failed(e)),
        };
        for message in &page {
            from = message.seq + 1;
            if let Ok(event) = serde_json::from_slice::<Envelope>(&message.payload)
                && let Some(outcome) = turn.see(&event)
            {
                return Ok(outcome);
            }
        }
        if page.len() == 500 {
            continue;
        }
        if Instant::now() >= deadline {
            return Ok(Outcome::Failed(match &turn.task {
                None => format!(
                    "the inbox did not take the question within {}s; is `iron up` running?",
                    wait.as_secs()
                ),
                Some(task) => format!(
                    "no reply within {}s (task {task}); `iron log tail` shows what it is doing",
                    wait.as_secs()
                ),
            }));
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// What is known of the turn so far.
struct Turn<'a> {
    destination: &'a str,
    /// The task id, once the inbox's turn is seen.
    task: Option<String>,
    /// Why each part of the task was not answered, by its task id.
    errors: HashMap<String, String>,
}

impl<'a> Turn<'a> {
    fn new(destination: &'a str) -> Self {
        Self {
            destination,
            task: None,
            errors: HashMap::new(),
        }
    }

    /// Takes one event in; the outcome once the turn has ended. An event of a kind it reads
    /// whose payload has another shape is not the turn's.
    fn see(&mut self, event: &Envelope) -> Option<Outcome> {
        let Some(task) = self.task.clone() else {
            if let Ok(turn) = event.payload::<ChatTurn>()
                && turn.destination.as_deref() == Some(self.destination)
            {
                self.task =
                    Some(EventId::computed(&["inbox", event.event_id.as_str()]).to_string());
            }
            return None;
        };
        let ours = |id: &str| id == task || id.starts_with(&format!("{task}-"));
        match event.kind {
            EventKind::ReplyDelivered => {
                let reply = event.payload::<ReplyDelivered>().ok()?;
                (reply.task_id == task).then(|| {
                    if reply.delivered {
                        Outcome::Answered(reply.text)
                    } else {
                        Outcome::Failed(format!(
                            "the answer was not delivered: {}",
                            reply.reason.as_deref().unwrap_or("no reason given")
                        ))
                    }
                })
            }
            EventKind::TaskRejected => {
                let rejected = event.payload::<TaskRejected>().ok()?;
                ours(&rejected.task_id)
                    .then(|| Outcome::Failed(format!("refused: {}", rejected.reason)))
            }
            EventKind::TaskDelegated => {
                let step = event.payload::<TaskDelegated>().ok()?;
                if !ours(&step.task_id) {
                    return None;
                }
                if !step.error.is_empty() {
                    self.errors.insert(step.task_id, step.error);
                } else if step.status != "succeeded" {
                    let why = format!("{} ended {}", step.domain, step.status);
                    self.errors.insert(step.task_id, why);
                }
                None
            }
            EventKind::TaskJudged => {
                let judged = event.payload::<TaskJudged>().ok()?;
                if judged.answered || !ours(&judged.task_id) {
                    return None;
                }
                let why = self
                    .errors
                    .get(&judged.task_id)
                    .cloned()
                    .unwrap_or_else(|| format!("{} gave no answer", judged.domain));
                Some(Outcome::Failed(format!("not answered: {why}")))
            }
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    fn event(kind: EventKind, payload: Value) -> Envelope {
        Envelope::new("t", ["sessions", "s"], "test", kind, payload)
    }

    #[test]
    fn a_turn_ends_with_its_own_reply_or_its_own_failure() {
        let mut turn = Turn::new("ask:1");
        let other = event(
            EventKind::ChatTurn,
            json!({"destination": "ask:2", "text": "is the bridge open?"}),
        );
        assert_eq!(turn.see(&other), None);
        let mine = event(
            EventKind::ChatTurn,
            json!({"destination": "ask:1", "text": "is the ferry running?"}),
        );
        assert_eq!(turn.see(&mine), None);
        let task = EventId::computed(&["inbox", mine.event_id.as_str()]).to_string();
        let not_ours = event(
            EventKind::ReplyDelivered,
            json!({"task_id": "x", "delivered": true, "text": "no"}),
        );
        assert_eq!(turn.see(&not_ours), None);
        let reply = event(
            EventKind::ReplyDelivered,
            json!({"task_id": task, "delivered": true, "text": "closed"}),
        );
        assert_eq!(turn.see(&reply), Some(Outcome::Answered("closed".into())));

        let mut failing = Turn::new("ask:1");
        failing.see(&mine);
        let part = format!("{task}-1");
        failing.see(&event(
            EventKind::TaskDelegated,
            json!({"task_id": part, "domain": "news/analyst", "expert": "", "status": "aborted",
                   "error": "expert news/analyst did not become active: configure failed: no key",
                   "spent": null, "budget": null}),
        ));
        let judged = event(
            EventKind::TaskJudged,
            json!({"task_id": part, "domain": "news/analyst", "answered": false}),
        );
        match failing.see(&judged) {
            Some(Outcome::Failed(why)) => {
                assert!(why.contains("configure failed: no key"), "{why}")
            }
            other => panic!("{other:?}"),
        }
    }
}
