//! `iron task answer | interject | questions`: the operator's side of a running task, over the
//! topics in [`crate::cognition::expert::operator`] (the same a ROS 2 user reaches with
//! `ros2 topic pub /iron/answers iron/msg/Answer …`).

use std::time::Duration;

use super::{CliError, connect::connect};
use crate::{
    cognition::expert::operator::{OperatorVoice, QUESTIONS, questions_qos},
    core::identity::OperatorKey,
    interfaces::Question,
    spine::{control::ControlError, durable::AnyLog},
    view::overview::Overview,
};

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
    operator: Option<String>,
    text: String,
    timeout: Duration,
) -> Result<(), CliError> {
    required("--task", &task)?;
    required("the answer", &text)?;
    let operator = OperatorKey::for_cli(operator.as_deref())?;
    let (_control, node) = connect(router, timeout).await?;
    OperatorVoice::new(&node)?
        .answer(&task, &question, &operator, &text, timeout)
        .await?;
    println!("answer sent to task {task}");
    Ok(())
}

/// `iron task interject`.
pub(super) async fn interject(
    router: &str,
    task: String,
    operator: Option<String>,
    text: String,
    timeout: Duration,
) -> Result<(), CliError> {
    required("--task", &task)?;
    required("the correction", &text)?;
    let operator = OperatorKey::for_cli(operator.as_deref())?;
    let (_control, node) = connect(router, timeout).await?;
    OperatorVoice::new(&node)?
        .interject(&task, &operator, &text, timeout)
        .await?;
    println!("correction sent to task {task}");
    Ok(())
}

/// `iron task questions`: the open questions on the log, then (with `follow`) new ones as
/// experts ask them.
pub(super) async fn questions(
    router: &str,
    follow: bool,
    timeout: Duration,
) -> Result<(), CliError> {
    let config = super::load_config()?;
    let log = AnyLog::open(&config).await?;
    let mut overview = Overview::of_tenant(&config.tenant);
    overview
        .refresh(&log)
        .await
        .map_err(|e| CliError::Failed(format!("reading the log: {e}")))?;
    let open = overview.open_questions();
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
