//! `iron hunks …`: review what experts changed in their scratches. Every command reads the
//! review from the log (`crate::workspace::review`), so a review can be taken up days later
//! from any terminal; decisions and applications are written back to it.

use clap::Subcommand;

use super::CliError;
use crate::core::config::Config;
use crate::spine::durable::AnyLog;
use crate::workspace::land::{LandError, Reviewer, checked_target, read_review};
use crate::workspace::review::{Decision, Review};
use crate::workspace::scratch::remove_dir;

/// Review of experts' changes, hunk by hunk.
#[derive(Debug, Subcommand)]
pub enum HunksCommand {
    /// List proposed hunks (pending and approved; `--all` adds rejected and applied).
    List {
        /// Only this task's.
        #[arg(long)]
        task: Option<String>,
        /// Rejected and applied ones too.
        #[arg(long)]
        all: bool,
    },
    /// Print one hunk as a patch.
    Show {
        /// The hunk id (from `list`).
        hunk: String,
    },
    /// Approve hunks. The task's review job applies them once every hunk is decided (when the
    /// mesh's jobs runner runs); `apply` applies the approved ones now.
    Approve {
        /// Hunk ids.
        #[arg(required = true)]
        hunks: Vec<String>,
        /// Who decides.
        #[arg(long, env = "USER", default_value = "operator")]
        user: String,
    },
    /// Reject hunks: they never reach the real tree.
    Reject {
        /// Hunk ids.
        #[arg(required = true)]
        hunks: Vec<String>,
        /// Who decides.
        #[arg(long, env = "USER", default_value = "operator")]
        user: String,
    },
    /// Apply a task's approved hunks to the real tree now, without waiting for its review job
    /// (all or none: a hunk that no longer applies is named and nothing is applied), then run
    /// the mesh's verify command confined on a copy of the result. Once every hunk of the task
    /// is decided, its scratch is removed.
    Apply {
        /// The task.
        #[arg(long)]
        task: String,
        /// Who applies.
        #[arg(long, env = "USER", default_value = "operator")]
        user: String,
    },
}

/// Runs `command`.
pub async fn run(command: HunksCommand) -> Result<(), CliError> {
    let config = super::load_config()?;
    let log = AnyLog::open(&config).await?;
    let review = read_review(&log).await.map_err(failed)?;
    match command {
        HunksCommand::List { task, all } => {
            let mut shown = 0;
            for p in review.hunks() {
                if task.as_ref().is_some_and(|t| *t != p.task)
                    || (!all && matches!(p.decision, Decision::Rejected(_) | Decision::Applied))
                {
                    continue;
                }
                let (added, removed) = p.hunk.counts();
                let note = if p.hunk.governance {
                    " (governance: never applied)"
                } else {
                    ""
                };
                println!(
                    "{} {:<8} {} {} +{added} -{removed} task {} by {}{note}",
                    p.hunk.id,
                    p.decision.word(),
                    p.hunk.path,
                    p.hunk.range,
                    p.task,
                    p.expert
                );
                shown += 1;
            }
            if shown == 0 {
                eprintln!(
                    "no hunks{}",
                    if all {
                        ""
                    } else {
                        " waiting (--all for decided ones)"
                    }
                );
            }
            Ok(())
        }
        HunksCommand::Show { hunk } => {
            let p = review
                .get(&hunk)
                .ok_or(LandError::NoHunk(hunk))
                .map_err(failed)?;
            print!("{}", p.patch());
            Ok(())
        }
        HunksCommand::Approve { hunks, user } => {
            decide(&log, &config, &review, &hunks, &user, true).await
        }
        HunksCommand::Reject { hunks, user } => {
            decide(&log, &config, &review, &hunks, &user, false).await
        }
        HunksCommand::Apply { task, user } => apply(&log, &config, &review, &task, &user).await,
    }
}

fn failed(e: impl std::fmt::Display) -> CliError {
    CliError::Failed(e.to_string())
}

fn reviewer<'a>(log: &'a AnyLog, config: &'a Config, user: &str) -> Reviewer<'a> {
    Reviewer {
        log,
        tenant: &config.tenant,
        actor: format!("operator/{user}"),
    }
}

async fn decide(
    log: &AnyLog,
    config: &Config,
    review: &Review,
    ids: &[String],
    user: &str,
    approve: bool,
) -> Result<(), CliError> {
    let decided = reviewer(log, config, user)
        .decide(review, ids, approve)
        .await
        .map_err(failed)?;
    let decision = if approve { "approved" } else { "rejected" };
    for p in decided {
        println!("{} {decision} ({})", p.hunk.id, p.hunk.path);
    }
    Ok(())
}

async fn apply(
    log: &AnyLog,
    config: &Config,
    review: &Review,
    task: &str,
    user: &str,
) -> Result<(), CliError> {
    let first = review
        .of_task(task)
        .next()
        .ok_or_else(|| failed(LandError::NoTask(task.to_string())))?;
    let catalog = crate::aem::read_state_catalog(config).map_err(failed)?;
    let project = std::env::current_dir().map_err(|source| CliError::Io {
        what: "reading the current directory".into(),
        source,
    })?;
    let (target, ws) = checked_target(&catalog, &project, first).map_err(failed)?;
    let reviewer = reviewer(log, config, user);
    let landed = reviewer
        .apply(review, task, &target)
        .await
        .map_err(failed)?;
    if landed.applied.is_empty() {
        println!("no approved hunk of task {task} to apply");
    } else {
        println!(
            "applied {} hunk(s) to {}",
            landed.applied.len(),
            target.display()
        );
        if let Some(verified) = reviewer
            .verify(task, &ws, &target, &config.state_dir)
            .await
            .map_err(failed)?
        {
            println!("{}", verified.line(&ws.verify));
        }
    }
    if landed.pending == 0 {
        match remove_dir(&target, &first.scratch).await {
            Ok(()) => println!("removed the scratch {}", first.scratch.display()),
            Err(e) => eprintln!(
                "could not remove the scratch {}: {e}",
                first.scratch.display()
            ),
        }
    } else {
        println!(
            "{} hunk(s) of task {task} still pending; its scratch is kept",
            landed.pending
        );
    }
    Ok(())
}
