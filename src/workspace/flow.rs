//! The durable shape of a review. An expert that proposed hunks starts the job
//! `review-<task>` (flow [`REVIEW_FLOW`], built into every runner); the job waits on a
//! person's approval of each hunk (a `Waiting`: only rows, for days, across restarts), and
//! once every hunk is decided it lands the approved ones behind the effect gate, runs the
//! verify command and removes the scratch (unless it holds a change that cannot be reviewed by
//! hunk: that stays for a person). Decisions come from `iron hunks approve|reject`,
//! the ROS service or `iron jobs approve review-<task> hunk-<id>`; the log's review stays the
//! record of them (a decision taken on the job alone is written there when the job lands).

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde_json::{Value, json};

use super::display::shown;
use super::land::{Reviewer, approval_of, checked_target, read_review};
use super::review::{Decision, Proposed};
use super::scratch::remove_dir;
use crate::core::config::Config;
use crate::core::identity::{Authority, Statement};
use crate::jobs::people::checked;
use crate::jobs::{Ctx, Exit, Flow, FlowFuture, JobEvent, StepError};
use crate::spine::durable::AnyLog;

pub use super::land::REVIEW_FLOW;
pub use super::review::review_job;

/// The review flow (`*/*/workspace_review`). Input: `{"task": "<task id>"}`.
pub struct ReviewFlow;

impl Flow for ReviewFlow {
    fn run<'a>(&'a self, ctx: &'a mut Ctx, input: Value) -> FlowFuture<'a> {
        Box::pin(review(ctx, input))
    }
}

fn failed(e: impl std::fmt::Display) -> StepError {
    StepError::new(e)
}

async fn review(ctx: &mut Ctx, input: Value) -> Result<Value, Exit> {
    let Some(task) = input
        .get("task")
        .and_then(Value::as_str)
        .map(str::to_string)
    else {
        return Err(Exit::Parked {
            reason: "the review's input names no task ({\"task\": \"<id>\"}); cancel it".into(),
        });
    };
    let log = ctx.log().clone();
    let actor = format!("job/{}", ctx.job());
    // The hunks this review waits for: those this task proposed first (a resident expert
    // proposes its whole scratch again after each task; a hunk stays with its first task).
    // Governance hunks are never applied, so nobody is asked about them.
    let hunks = ctx
        .step(
            "hunks",
            |args| {
                let log = log.clone();
                async move {
                    let task = args["task"].as_str().unwrap_or_default();
                    let review = read_review(&log, &people()?).await.map_err(failed)?;
                    let asked: Vec<Value> = review
                        .of_task(task)
                        .filter(|p| !p.hunk.governance)
                        .map(|p| {
                            json!({"hunk": p.hunk.id, "path": p.hunk.path,
                                   "file": p.hunk.meaning.summary()})
                        })
                        .collect();
                    Ok(Value::from(asked))
                }
            },
            json!({"task": task}),
        )
        .await?;
    let mut answers = serde_json::Map::new();
    for h in hunks.as_array().into_iter().flatten() {
        let id = h["hunk"].as_str().unwrap_or_default();
        let path = shown(h["path"].as_str().unwrap_or_default());
        let file = match h["file"].as_str().unwrap_or_default() {
            "" => String::new(),
            summary => format!(", {}", shown(summary)),
        };
        let prompt = format!("apply hunk {id} ({path}{file}) of task {task} to the real tree?");
        let answer = ctx.wait_approval(&approval_of(id), &prompt).await?;
        answers.insert(id.to_string(), Value::Bool(answer.approved));
    }
    let args = json!({"task": task, "answers": answers});
    let landed = ctx
        .effect(
            "land",
            args,
            |args| land(log.clone(), actor.clone(), args),
            |args| landed(log.clone(), args),
        )
        .await?;
    let verified = ctx
        .step(
            "verify",
            |args| verify(log.clone(), actor.clone(), args),
            json!({"task": task}),
        )
        .await?;
    // A scratch that also holds changes no hunk could carry is kept for a person to take.
    ctx.step(
        "remove_scratch",
        |args| {
            let log = log.clone();
            async move {
                let (target, scratch) = (path_of(&args, "target"), path_of(&args, "scratch"));
                let task = args["task"].as_str().unwrap_or_default();
                let review = read_review(&log, &people()?).await.map_err(failed)?;
                if review.unreviewable_of(task).next().is_some() {
                    return Ok(json!(
                        "kept: it holds changes that cannot be reviewed by hunk"
                    ));
                }
                let (config, _, _) = setting()?;
                let root = config.state_dir.join("scratch");
                remove_dir(&target, &root, &scratch).await.map_err(failed)?;
                Ok(Value::Null)
            }
        },
        json!({"task": task, "target": landed["target"], "scratch": landed["scratch"]}),
    )
    .await?;
    Ok(json!({"task": task, "applied": landed["applied"], "verify": verified}))
}

fn path_of(args: &Value, key: &str) -> PathBuf {
    PathBuf::from(args[key].as_str().unwrap_or_default())
}

/// What the deployment's configuration and catalog say, read where the runner runs.
fn setting() -> Result<(Config, crate::aem::Catalog, PathBuf), StepError> {
    let config = Config::load().map_err(failed)?;
    let catalog = crate::aem::read_state_catalog(&config).map_err(failed)?;
    let project = std::env::current_dir().map_err(failed)?;
    Ok((config, catalog, project))
}

/// Whose decisions count, in the configuration's deployment.
fn people() -> Result<Authority, StepError> {
    let config = Config::load().map_err(failed)?;
    Ok(Authority::new(&config.state_dir, &config.operators))
}

/// The statement of the last answer the runner takes to each approval of `task`'s review
/// job, by approval name.
async fn approval_statements(
    log: &AnyLog,
    task: &str,
    people: &Authority,
) -> Result<BTreeMap<String, Statement>, StepError> {
    let job = review_job(task);
    let (_, diary) = crate::jobs::ops::find(log, &job).await.map_err(failed)?;
    Ok(checked(&job, diary, people)
        .into_iter()
        .filter_map(|s| match s.entry.event {
            JobEvent::ApprovalGiven {
                name,
                statement: Some(statement),
                ..
            } => Some((name, statement)),
            _ => None,
        })
        .collect())
}

/// The first hunk of the task (naming its target and scratch).
fn first_of<'r>(
    review: &'r super::review::Review,
    task: &'r str,
) -> Result<&'r Proposed, StepError> {
    review
        .of_task(task)
        .next()
        .ok_or_else(|| failed(format!("no hunks of task {task} on the log")))
}

/// Writes to the log's review the decisions taken on the job alone (each with the operator's
/// statement its approval carried), rejects the governance hunks nobody was asked about, and
/// applies the approved hunks.
async fn land(log: AnyLog, actor: String, args: Value) -> Result<Value, StepError> {
    let (config, catalog, project) = setting()?;
    let people = people()?;
    let task = args["task"].as_str().unwrap_or_default();
    let reviewer = Reviewer {
        log: &log,
        tenant: &config.tenant,
        actor,
    };
    let review = read_review(&log, &people).await.map_err(failed)?;
    let statements = approval_statements(&log, task, &people).await?;
    for p in review.of_task(task) {
        if p.decision != Decision::Pending {
            continue;
        }
        if p.hunk.governance {
            reviewer.reject_governance(p).await.map_err(failed)?;
        } else if let Some(statement) = statements.get(&approval_of(&p.hunk.id)) {
            reviewer
                .record_decision(p, statement)
                .await
                .map_err(failed)?;
        }
    }
    let review = read_review(&log, &people).await.map_err(failed)?;
    let first = first_of(&review, task)?;
    let (target, _) = checked_target(&catalog, &project, first).map_err(failed)?;
    let landed = reviewer
        .apply(&review, task, &target)
        .await
        .map_err(failed)?;
    Ok(
        json!({"applied": landed.applied, "confirmed": landed.confirmed,
              "target": target, "scratch": first.scratch}),
    )
}

/// The observation of a landing: every approved hunk of the task is applied and nothing of
/// it waits for a person.
async fn landed(log: AnyLog, args: Value) -> Result<Option<Value>, StepError> {
    let task = args["task"].as_str().unwrap_or_default();
    let review = read_review(&log, &people()?).await.map_err(failed)?;
    let mut applied = Vec::new();
    for p in review.of_task(task) {
        match p.decision {
            Decision::Pending | Decision::Approved(_) => return Ok(None),
            Decision::Applied => applied.push(p.hunk.id.clone()),
            Decision::Rejected(_) => {}
        }
    }
    let first = first_of(&review, task)?;
    Ok(Some(json!({"applied": applied, "target": first.target,
                   "scratch": first.scratch})))
}

/// Runs the mesh's verify command on the landed tree.
async fn verify(log: AnyLog, actor: String, args: Value) -> Result<Value, StepError> {
    let (config, catalog, project) = setting()?;
    let task = args["task"].as_str().unwrap_or_default();
    let review = read_review(&log, &people()?).await.map_err(failed)?;
    let first = first_of(&review, task)?;
    if !review
        .of_task(task)
        .any(|p| p.decision == Decision::Applied)
    {
        return Ok(json!("nothing applied"));
    }
    let (target, ws) = checked_target(&catalog, &project, first).map_err(failed)?;
    let reviewer = Reviewer {
        log: &log,
        tenant: &config.tenant,
        actor,
    };
    let verified = reviewer
        .verify(task, &ws, &target, &config.state_dir)
        .await
        .map_err(failed)?;
    Ok(match verified {
        None => json!("no verify command"),
        Some(v) => json!(v.line(&ws.verify)),
    })
}
