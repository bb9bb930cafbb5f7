//! `iron task answer | interject | questions`: the operator's side of a running task, over the
//! topics in [`crate::cognition::expert::operator`] (the same a ROS 2 user reaches with
//! `ros2 topic pub /iron/answers iron/msg/Answer …`).

use std::time::Duration;

use hiroz::{Builder, msg::ZMessage};
use hiroz_msgs::builtin_interfaces::Time;

use super::{CliError, commands::connect};
use crate::{
    cognition::expert::operator::{ANSWERS, INTERJECTIONS, QUESTIONS, questions_qos},
    core::{config::Config, durable::EventLog, envelope::Envelope, event_kind::EventKind},
    interfaces::{Answer, Interjection, Question},
    spine::{
        control::{ControlError, action::now_stamp},
        durable::{AnyLog, streams::MEM},
    },
};

fn now() -> Time {
    let stamp = now_stamp();
    Time {
        sec: stamp.sec,
        nanosec: stamp.nanosec,
    }
}

/// Publishes `msg` on `topic` once somebody (an expert) listens; refuses to drop it silently.
async fn publish<M>(router: &str, topic: &str, msg: M, timeout: Duration) -> Result<(), CliError>
where
    M: ZMessage + hiroz::WithTypeInfo + Send + Sync + 'static,
    for<'a> M::Serdes: hiroz::msg::ZSerializer<Input<'a> = &'a M>,
{
    let (_control, node) = connect(router, timeout).await?;
    let publisher =
        node.create_pub::<M>(topic)
            .build()
            .map_err(|source| ControlError::Declare {
                what: format!("publisher on {topic}"),
                source,
            })?;
    if !publisher.wait_for_subscription(1, timeout).await {
        return Err(CliError::Failed(format!(
            "no expert listens on {topic} after {timeout:?}; is the task still running?"
        )));
    }
    publisher
        .async_publish(&msg)
        .await
        .map_err(|source| ControlError::Call {
            what: format!("publish on {topic}"),
            source,
        })?;
    Ok(())
}

fn required(what: &str, value: &str) -> Result<(), CliError> {
    if value.trim().is_empty() {
        return Err(CliError::Failed(format!("{what} must not be empty")));
    }
    Ok(())
}

/// `iron task answer`.
pub(super) async fn answer(
    router: &str,
    task: String,
    question: String,
    operator: String,
    text: String,
    timeout: Duration,
) -> Result<(), CliError> {
    required("--task", &task)?;
    required("the answer", &text)?;
    let msg = Answer {
        question_id: question,
        task_id: task.clone(),
        operator_id: operator,
        text,
        answered: now(),
    };
    publish(router, ANSWERS, msg, timeout).await?;
    println!("answer sent to task {task}");
    Ok(())
}

/// `iron task interject`.
pub(super) async fn interject(
    router: &str,
    task: String,
    operator: String,
    text: String,
    timeout: Duration,
) -> Result<(), CliError> {
    required("--task", &task)?;
    required("the correction", &text)?;
    let msg = Interjection {
        task_id: task.clone(),
        operator_id: operator,
        text,
        sent: now(),
    };
    publish(router, INTERJECTIONS, msg, timeout).await?;
    println!("correction sent to task {task}");
    Ok(())
}

/// A question on the log.
#[derive(Debug, Clone, PartialEq)]
struct Asked {
    question_id: String,
    task_id: String,
    expert: String,
    question: String,
}

/// The questions the log holds that no answer closed and whose task has not ended, oldest
/// first: what an operator still has to answer, whatever processes came and went since.
fn open_questions(events: &[Envelope]) -> Vec<Asked> {
    let text = |e: &Envelope, k: &str| e.payload[k].as_str().unwrap_or("").to_string();
    let closed: std::collections::BTreeSet<String> = events
        .iter()
        .filter(|e| e.kind == EventKind::AnswerReceived)
        .map(|e| text(e, "question_id"))
        .collect();
    let ended: std::collections::BTreeSet<String> = events
        .iter()
        .filter(|e| e.kind == EventKind::TaskDelegated)
        .map(|e| text(e, "task_id"))
        .collect();
    events
        .iter()
        .filter(|e| e.kind == EventKind::QuestionAsked)
        .map(|e| Asked {
            question_id: text(e, "question_id"),
            task_id: text(e, "task_id"),
            expert: text(e, "expert"),
            question: text(e, "question"),
        })
        .filter(|q| {
            !q.question_id.is_empty()
                && !closed.contains(&q.question_id)
                && !ended.contains(&q.task_id)
        })
        .collect()
}

/// `iron task questions`: the open questions on the log, then (with `follow`) new ones as
/// experts ask them.
pub(super) async fn questions(
    router: &str,
    follow: bool,
    timeout: Duration,
) -> Result<(), CliError> {
    let config = Config::load()?;
    let log = AnyLog::open(&config).await?;
    let filter = format!("mem.{}.>", config.tenant);
    let mut events: Vec<Envelope> = Vec::new();
    let mut from = 1;
    loop {
        let page = log
            .read(MEM, &filter, from, 1000)
            .await
            .map_err(|e| CliError::Failed(format!("reading the log: {e}")))?;
        for m in &page {
            from = m.seq + 1;
            if let Ok(e) = serde_json::from_slice::<Envelope>(&m.payload)
                && matches!(
                    e.kind,
                    EventKind::QuestionAsked | EventKind::AnswerReceived | EventKind::TaskDelegated
                )
            {
                events.push(e);
            }
        }
        if page.len() < 1000 {
            break;
        }
    }
    let open = open_questions(&events);
    let mut shown: std::collections::BTreeSet<String> = std::collections::BTreeSet::new();
    for q in &open {
        println!(
            "{} task {} ({}): {}",
            q.question_id, q.task_id, q.expert, q.question
        );
        shown.insert(q.question_id.clone());
    }
    if !follow {
        if open.is_empty() {
            eprintln!("no open questions");
        }
        return Ok(());
    }
    let (_control, node) = connect(router, timeout).await?;
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<Question>();
    let _sub = node
        .create_sub::<Question>(QUESTIONS)
        .with_qos(questions_qos())
        .build_with_callback(move |q: Question| {
            let _ = tx.send(q);
        })
        .map_err(|source| ControlError::Declare {
            what: format!("subscription to {QUESTIONS}"),
            source,
        })?;
    loop {
        tokio::select! {
            q = rx.recv() => {
                let Some(q) = q else { break };
                if shown.insert(q.question_id.clone()) {
                    println!("{} task {} ({}): {}", q.question_id, q.task_id, q.expert, q.text);
                }
            }
            _ = tokio::signal::ctrl_c() => break,
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn event(kind: EventKind, payload: serde_json::Value) -> Envelope {
        Envelope::new("t", ["sessions", "s"], "test", kind, payload)
    }

    #[test]
    fn a_question_is_open_until_answered_or_its_task_ends() {
        let asked = |q: &str, t: &str| {
            event(
                EventKind::QuestionAsked,
                json!({"question_id": q, "task_id": t, "expert": "n/a", "question": "which?"}),
            )
        };
        let events = vec![
            asked("q1", "t1"),
            asked("q2", "t2"),
            asked("q3", "t3"),
            event(EventKind::AnswerReceived, json!({"question_id": "q1"})),
            event(
                EventKind::TaskDelegated,
                json!({"task_id": "t2", "status": "aborted"}),
            ),
            // The loop's own record of older versions has no question id: not listed.
            event(
                EventKind::QuestionAsked,
                json!({"call_id": "c", "question": "old"}),
            ),
        ];
        let open = open_questions(&events);
        assert_eq!(open.len(), 1);
        assert_eq!(
            (open[0].question_id.as_str(), open[0].task_id.as_str()),
            ("q3", "t3")
        );
    }
}
