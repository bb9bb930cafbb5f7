//! `iron task send|answer|interject|questions`: goals to the engine, and the operator's part in
//! running tasks; `iron task list|show`: what tasks did, read back from the log.

use std::time::Duration;

use tokio_util::sync::CancellationToken;

use clap::Subcommand;

use super::{CliError, connect::connect, stop_on_signals};
use crate::cognition::agent::{ExpertBrief, MARKER_SHOWN, system_message};
use crate::cognition::expert::delegate::ENGINE_ACTION;
use crate::cognition::replay::{self, Record};
use crate::llm::Message;
use crate::protocol::{Fork, TaskContext};
use crate::{
    interfaces::{AolTask, AolTaskGoal},
    spine::{
        control::action::{ActionClient, GoalStatus},
        durable::AnyLog,
    },
    view::timeline::{TaskLog, Timeline},
};

/// `iron task …`.
#[derive(Debug, Subcommand)]
pub enum TaskCommand {
    /// Send an AolTask goal, print feedback as it comes and then the result. Ctrl-C cancels.
    /// A rejected goal fails with the reason the server published on `<action>/rejections`;
    /// a server that goes away while the goal runs fails the wait within seconds.
    Send {
        /// "<mesh>/<role>" to skip routing; empty lets the engine route.
        #[arg(long, default_value = "")]
        domain: String,
        /// The action to send to.
        #[arg(long, default_value = "/iron/engine/task")]
        action: String,
        /// Session the task belongs to.
        #[arg(long, default_value = "")]
        session: String,
        /// Extra context, as a JSON object.
        #[arg(long, default_value = "{}")]
        context: String,
        /// Who sends it (the context's `user_id`, unless it has one): the task's owner, who
        /// may answer its questions and correct it besides the configured `operators`.
        #[arg(long, env = "USER", default_value = "operator")]
        user: String,
        /// How long to wait for the result, in seconds.
        #[arg(long, default_value_t = 600.0)]
        wait: f64,
        /// What to do.
        instruction: String,
    },
    /// Answer the question a running task asked (shown by `task send` as a `[question]`
    /// feedback line, and by `task questions`). Publishes iron/msg/Answer on /iron/answers.
    Answer {
        /// The task that asked.
        #[arg(long)]
        task: String,
        /// The question's id; empty answers whatever the task asks.
        #[arg(long, default_value = "")]
        question: String,
        /// Who answers, signing with their key (`iron operator add`): the task's owner or one
        /// of the configured `operators`, else the expert refuses the answer (and records the
        /// refusal). Default: IRON_OPERATOR, else the only key on this machine.
        #[arg(long)]
        operator: Option<String>,
        /// The answer.
        text: String,
    },
    /// Send a correction into a running task; the expert reads it before its next model call.
    /// Publishes iron/msg/Interjection on /iron/interjections.
    Interject {
        /// The running task.
        #[arg(long)]
        task: String,
        /// Who interjects, signing with their key (`iron operator add`): the task's owner or
        /// one of the configured `operators`, else the expert refuses the correction (and
        /// records the refusal). Default: IRON_OPERATOR, else the only key on this machine.
        #[arg(long)]
        operator: Option<String>,
        /// The correction.
        text: String,
    },
    /// The tasks on the log, newest first: id, expert, how each ended, when, and what it was
    /// asked. Parts and delegations are shown under their task by `iron task show`.
    List {
        /// Show at most this many.
        #[arg(long, default_value_t = 20)]
        last: usize,
        /// Only the tasks of this expert (`mesh/role`) or mesh (`mesh`).
        #[arg(long)]
        domain: Option<String>,
    },
    /// A task's history from the log: the routing decision, what the expert was given at
    /// wake (perception, memory), each model call (prompt size, answer, tokens, cost), each
    /// tool call and gate decision, questions and answers, deliveries, hunks and effects, how
    /// it ended, and the tasks it delegated, as a tree. Any unique prefix of the id will do.
    Show {
        /// The task (`iron task list` shows them).
        task: String,
        /// The timeline as JSON (every event's payload included), for tools.
        #[arg(long)]
        json: bool,
    },
    /// Re-run a task's expert against its record: the recorded model answers and tool results
    /// stand in for the model and the tools (nothing is sent, run or written), with the skill,
    /// catalog and code as they are now. Prints the first step where the run now differs from
    /// the record (a changed skill, tool grant or code) and exits 1, or says it matches.
    Replay {
        /// The task (any unique prefix of its id).
        task: String,
        /// The agent folders as they are now.
        #[arg(long, default_value = "aem")]
        aem: std::path::PathBuf,
        /// The report as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Branch a recorded task: a new task whose conversation is the record's as it stood
    /// before model call --at, run live from there by the same expert with the change asked
    /// for. Its effects go through the usual gates and approvals (a fork is no durable job's:
    /// it performs no structured task); its events name the task it was forked from, and
    /// `iron task show` shows both branches. Prints feedback and the result like `task send`.
    Fork {
        /// The task (any unique prefix of its id).
        task: String,
        /// The model call the fork makes first (1: the whole task again).
        #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
        at: u32,
        /// At --at 1, the task's instruction instead of the recorded one; later, a turn of
        /// the person's added to the conversation before the fork's first model call.
        #[arg(long)]
        instruction: Option<String>,
        /// Another model (a name of the configuration's `models:`) for the live part.
        #[arg(long)]
        model: Option<String>,
        /// Another SKILL.md for the expert (its identity and instructions), checked as the
        /// catalog checks any; the folders are not changed.
        #[arg(long, value_name = "PATH")]
        skill: Option<std::path::PathBuf>,
        /// The agent folders (read with --skill).
        #[arg(long, default_value = "aem")]
        aem: std::path::PathBuf,
        /// Who forks it: the fork's owner.
        #[arg(long, env = "USER", default_value = "operator")]
        user: String,
        /// How long to wait for the result, in seconds.
        #[arg(long, default_value_t = 600.0)]
        wait: f64,
    },
    /// Print the open questions: asked by an expert (on the log), not answered, and whose
    /// task has not ended, whatever processes restarted since; with --follow, new ones as
    /// experts ask them.
    Questions {
        /// Keep listening until Ctrl-C.
        #[arg(long)]
        follow: bool,
    },
}

/// Runs one `iron task` command against the router at `router`.
pub(super) async fn run(
    command: TaskCommand,
    router: &str,
    timeout: Duration,
) -> Result<(), CliError> {
    match command {
        TaskCommand::Send {
            domain,
            action,
            session,
            context,
            user,
            wait,
            instruction,
        } => {
            let mut context = TaskContext::parse(&context)
                .map_err(|e| CliError::Failed(format!("--context {context:?}: {e}")))?;
            // The sender owns the task: they may answer its questions and correct it.
            context.user_id.get_or_insert(user);
            let context = context.to_json();
            let goal = AolTaskGoal {
                task_id: uuid::Uuid::now_v7().to_string(),
                session_id: session,
                domain,
                instruction,
                depth: 0,
                parent_task_id: String::new(),
                context_json: context,
            };
            task_send(
                router,
                &action,
                goal,
                timeout,
                Duration::from_secs_f64(wait),
            )
            .await
        }
        TaskCommand::Answer {
            task,
            question,
            operator,
            text,
        } => super::operator::answer(router, task, question, operator, text, timeout).await,
        TaskCommand::Interject {
            task,
            operator,
            text,
        } => super::operator::interject(router, task, operator, text, timeout).await,
        TaskCommand::Questions { follow } => {
            super::operator::questions(router, follow, timeout).await
        }
        TaskCommand::List { last, domain } => list(last, domain.as_deref()).await,
        TaskCommand::Show { task, json } => show(&task, json).await,
        TaskCommand::Replay { task, aem, json } => replay(&task, &aem, json).await,
        TaskCommand::Fork {
            task,
            at,
            instruction,
            model,
            skill,
            aem,
            user,
            wait,
        } => {
            let change = Change {
                instruction,
                model,
                skill,
            };
            let goal = fork(&task, at, change, &aem, user).await?;
            let wait = Duration::from_secs_f64(wait);
            task_send(router, ENGINE_ACTION, goal, timeout, wait).await
        }
    }
}

/// Every task's events, from the log the configuration names.
async fn task_log() -> Result<TaskLog, CliError> {
    let config = super::load_config()?;
    let log = AnyLog::open(&config).await?;
    TaskLog::read(&log, &config.tenant)
        .await
        .map_err(|e| CliError::Failed(format!("reading the log: {e}")))
}

/// `iron task list`: one line per task, newest first.
async fn list(last: usize, domain: Option<&str>) -> Result<(), CliError> {
    let tasks = task_log().await?;
    let of_domain = |t: &Timeline| match domain {
        None => true,
        Some(d) if d.contains('/') => t.domain == d,
        Some(mesh) => t.domain.split('/').next() == Some(mesh),
    };
    let roots: Vec<Timeline> = tasks.roots().into_iter().filter(of_domain).collect();
    if roots.is_empty() {
        eprintln!("no tasks on the log");
    }
    for t in roots.iter().take(last) {
        println!(
            "{}  {:<22} {:<10} {}  {}",
            t.task_id,
            t.domain,
            t.status,
            crate::core::text::utc(t.started_ms),
            crate::core::text::one_line(&t.instruction, 60),
        );
    }
    if roots.len() > last {
        eprintln!("({} more; --last N shows more)", roots.len() - last);
    }
    Ok(())
}

/// `iron task replay`: the task's expert run again against its record; exit 1 on a
/// divergence.
async fn replay(task: &str, aem: &std::path::Path, json: bool) -> Result<(), CliError> {
    let tasks = task_log().await?;
    let id = tasks.resolve(task)?;
    let record = Record::read(&id, tasks.events(&id))?;
    let catalog = crate::aem::compile(aem)?;
    let replayed = replay::replay(&record, &catalog).await;
    if json {
        let text = serde_json::to_string_pretty(&replayed)
            .map_err(|e| CliError::Failed(format!("writing the report: {e}")))?;
        println!("{text}");
    } else {
        println!("replay of task {} ({})", replayed.task_id, replayed.expert);
        match &replayed.divergence {
            None => println!(
                "  matches the record: {} model call(s) and {} tool call(s) as recorded, ended `{}`",
                replayed.replayed_calls, replayed.tool_calls, replayed.status
            ),
            Some(d) => {
                println!("  DIVERGES at {}: {}", d.step, d.what);
                println!("    recorded: {}", d.recorded);
                println!("    now:      {}", d.now);
            }
        }
    }
    if replayed.divergence.is_some() {
        return Err(CliError::Exit(1));
    }
    Ok(())
}

/// What a fork changes.
struct Change {
    instruction: Option<String>,
    model: Option<String>,
    skill: Option<std::path::PathBuf>,
}

/// The goal of `iron task fork`: the recorded conversation before model call `at`, changed.
async fn fork(
    task: &str,
    at: u32,
    change: Change,
    aem: &std::path::Path,
    user: String,
) -> Result<AolTaskGoal, CliError> {
    let tasks = task_log().await?;
    let id = tasks.resolve(task)?;
    let record = Record::read(&id, tasks.events(&id))?;
    let calls = record.model_calls();
    let mut prefix = record
        .conversation_before(at)
        .ok_or_else(|| {
            CliError::Failed(format!(
                "task {id} made {calls} model call(s): --at takes 1 to {calls}"
            ))
        })?
        .to_vec();
    if let Some(skill) = &change.skill {
        let input = record.input().ok_or_else(|| {
            CliError::Failed(format!(
                "task {id} is itself a fork: --skill needs the task it was forked from"
            ))
        })?;
        let catalog = crate::aem::transfer::compile_with_skill(aem, &record.expert, skill)?;
        let brief = ExpertBrief::from_catalog(&catalog, &record.expert)
            .ok_or_else(|| CliError::Failed(format!("no expert {}", record.expert)))?;
        prefix[0] = system_message(&brief, input, MARKER_SHOWN);
    }
    if let Some(text) = &change.instruction {
        match at {
            1 => prefix[1] = Message::user(text.trim()),
            _ => prefix.push(Message::user(text.trim())),
        }
    }
    let instruction = match &change.instruction {
        Some(text) => text.clone(),
        None => tasks.timeline(&id)?.instruction,
    };
    let context = TaskContext {
        user_id: Some(user),
        fork: Some(Fork {
            from: id,
            at,
            prefix: prefix
                .iter()
                .map(|m| serde_json::to_value(m).expect("a message serialises"))
                .collect(),
            model: change.model,
        }),
        ..TaskContext::default()
    };
    Ok(AolTaskGoal {
        task_id: uuid::Uuid::now_v7().to_string(),
        session_id: String::new(),
        domain: record.expert,
        instruction,
        depth: 0,
        parent_task_id: String::new(),
        context_json: context.to_json(),
    })
}

/// `iron task show`: the timeline, as text or JSON.
async fn show(task: &str, json: bool) -> Result<(), CliError> {
    let timeline = task_log().await?.timeline(task)?;
    if json {
        let text = serde_json::to_string_pretty(&timeline)
            .map_err(|e| CliError::Failed(format!("writing the timeline: {e}")))?;
        println!("{text}");
    } else {
        print!("{}", timeline.to_text());
    }
    Ok(())
}

async fn task_send(
    router: &str,
    action: &str,
    goal: AolTaskGoal,
    timeout: Duration,
    wait: Duration,
) -> Result<(), CliError> {
    let (_control, node) = connect(router, timeout).await?;
    // Subscribed before the goal goes out, so a refusal's published reason is caught.
    let client = ActionClient::<AolTask>::new(&node, action)?.with_rejections(&node)?;
    let task_id = goal.task_id.clone();
    let mut sent = client.send(goal, timeout).await?;
    eprintln!("task {task_id} accepted as goal {}", sent.id);
    let interrupted = CancellationToken::new();
    stop_on_signals(interrupted.clone());
    let result = client.result(sent.id, wait);
    tokio::pin!(result);
    let outcome = loop {
        tokio::select! {
            Some(fb) = sent.feedback.recv() => {
                let progress = if fb.progress >= 0.0 { format!(" {:.0}%", fb.progress * 100.0) } else { String::new() };
                println!("[{}{}] {}", fb.stage, progress, fb.message);
            }
            outcome = &mut result => break outcome?,
            _ = interrupted.cancelled() => {
                eprintln!("canceling…");
                client.cancel(Some(sent.id), timeout).await?;
                break client.result(sent.id, timeout * 2).await?;
            }
        }
    };
    while let Ok(fb) = sent.feedback.try_recv() {
        println!("[{}] {}", fb.stage, fb.message);
    }
    let r = outcome.result;
    println!(
        "{}",
        serde_json::json!({
            "goal_status": format!("{:?}", outcome.status).to_lowercase(),
            "status": r.status,
            "text": r.text,
            "result": serde_json::from_str::<serde_json::Value>(&r.result_json).unwrap_or(serde_json::Value::String(r.result_json.clone())),
        })
    );
    match outcome.status {
        GoalStatus::Succeeded => Ok(()),
        other => Err(CliError::Failed(format!("the task ended {other:?}"))),
    }
}
