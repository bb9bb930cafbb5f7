//! `iron task answer | interject | questions`: the operator's side of a running task, over the
//! topics in [`crate::cognition::expert::operator`] (the same a ROS 2 user reaches with
//! `ros2 topic pub /iron/answers iron/msg/Answer …`).

use std::time::Duration;

use hiroz::{Builder, msg::ZMessage};
use hiroz_msgs::builtin_interfaces::Time;

use super::{CliError, commands::connect};
use crate::{
    cognition::expert::operator::{ANSWERS, INTERJECTIONS, QUESTIONS, questions_qos},
    interfaces::{Answer, Interjection, Question},
    spine::control::{ControlError, action::now_stamp},
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

/// `iron task questions`: recent questions (transient local), then new ones with `follow`.
pub(super) async fn questions(
    router: &str,
    follow: bool,
    timeout: Duration,
) -> Result<(), CliError> {
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
    let quiet = tokio::time::sleep(timeout);
    tokio::pin!(quiet);
    let mut seen = 0usize;
    loop {
        tokio::select! {
            q = rx.recv() => {
                let Some(q) = q else { break };
                seen += 1;
                println!("{} task {} ({}): {}", q.question_id, q.task_id, q.expert, q.text);
            }
            _ = &mut quiet, if !follow => break,
            _ = tokio::signal::ctrl_c() => break,
        }
    }
    if seen == 0 && !follow {
        eprintln!("no questions from running experts");
    }
    Ok(())
}
