//! `iron hunks …`: review what experts changed in their scratches. Every command reads the
//! review from the log (`crate::workspace::review`), so a review can be taken up days later
//! from any terminal; decisions and applications are written back to it.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::time::Duration;

use clap::Subcommand;
use serde_json::{Value, json};

use super::CliError;
use crate::aem::WorkspaceEntry;
use crate::core::config::Config;
use crate::core::durable::EventLog;
use crate::core::envelope::Envelope;
use crate::core::event_kind::EventKind;
use crate::memory::emit;
use crate::spine::durable::AnyLog;
use crate::workspace::hunks;
use crate::workspace::review::{Decision, Proposed, REVIEW_KINDS, Review};
use crate::workspace::sandbox::{Confined, Sandbox};
use crate::workspace::scratch::{provider, remove_dir};

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
    /// Approve hunks; they are applied by `apply`.
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
    /// Apply a task's approved hunks to the real tree (all or none: a hunk that no longer
    /// applies is named and nothing is applied), then run the mesh's verify command confined
    /// on a copy of the result. Once every hunk of the task is decided, its scratch is removed.
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
    let config = Config::load()?;
    let log = AnyLog::open(&config).await?;
    let review = read_review(&log).await?;
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
            print!("{}", raw_patch(find(&review, &hunk)?));
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

/// The patch of one hunk (its file's header and its lines), governance or not, for reading.
fn raw_patch(p: &Proposed) -> String {
    let mut out = p.header.join("\n");
    out.push('\n');
    out.push_str(&p.hunk.range);
    out.push('\n');
    for l in &p.hunk.lines {
        out.push_str(l);
        out.push('\n');
    }
    out
}

fn find<'a>(review: &'a Review, id: &str) -> Result<&'a Proposed, CliError> {
    review.get(id).ok_or_else(|| {
        CliError::Failed(format!("no hunk {id} on the log (`iron hunks list --all`)"))
    })
}

/// Every review event of the log, in order.
async fn read_review(log: &AnyLog) -> Result<Review, CliError> {
    let failed = |e: &dyn std::fmt::Display| CliError::Failed(format!("reading the log: {e}"));
    let mut events: Vec<Envelope> = Vec::new();
    let mut from = 1;
    loop {
        let page = log
            .read("MEM", "mem.>", from, 10_000)
            .await
            .map_err(|e| failed(&e))?;
        let Some(last) = page.last() else { break };
        from = last.seq + 1;
        events.extend(
            page.iter()
                .filter_map(|m| serde_json::from_slice::<Envelope>(&m.payload).ok())
                .filter(|e| REVIEW_KINDS.contains(&e.kind)),
        );
    }
    Ok(Review::fold(&events))
}

async fn record(
    log: &AnyLog,
    config: &Config,
    task: &str,
    user: &str,
    kind: EventKind,
    payload: Value,
) -> Result<(), CliError> {
    let event = Envelope::new(
        config.tenant.clone(),
        ["tasks", task],
        format!("operator/{user}"),
        kind,
        payload,
    );
    emit(log, &event)
        .await
        .map(drop)
        .map_err(|e| CliError::Failed(format!("recording {}: {e}", event.kind)))
}

async fn decide(
    log: &AnyLog,
    config: &Config,
    review: &Review,
    ids: &[String],
    user: &str,
    approve: bool,
) -> Result<(), CliError> {
    // Every id is checked before anything is written.
    let mut chosen = Vec::new();
    for id in ids {
        let p = find(review, id)?;
        if p.decision == Decision::Applied {
            return Err(CliError::Failed(format!("hunk {id} is applied already")));
        }
        if approve && p.hunk.governance {
            return Err(CliError::Failed(format!(
                "hunk {id} changes {}, which is governance; it can only be rejected",
                p.hunk.path
            )));
        }
        chosen.push(p);
    }
    let decision = if approve { "approved" } else { "rejected" };
    for p in chosen {
        let payload = json!({"hunk": p.hunk.id, "task_id": p.task, "decision": decision,
                             "operator": user, "path": p.hunk.path});
        record(log, config, &p.task, user, EventKind::HunkDecided, payload).await?;
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
    let of_task: Vec<&Proposed> = review.of_task(task).collect();
    let Some(first) = of_task.first() else {
        return Err(CliError::Failed(format!(
            "no hunks of task {task} on the log"
        )));
    };
    let approved: BTreeSet<String> = of_task
        .iter()
        .filter(|p| matches!(p.decision, Decision::Approved(_)))
        .map(|p| p.hunk.id.clone())
        .collect();
    let pending = of_task
        .iter()
        .filter(|p| p.decision == Decision::Pending)
        .count();
    let (target, ws) = checked_target(config, first)?;
    if !approved.is_empty() {
        let ids: Vec<&String> = approved.iter().collect();
        record(
            log,
            config,
            task,
            user,
            EventKind::EffectIntent,
            json!({"task_id": task, "what": "apply approved hunks", "hunks": ids, "target": target}),
        )
        .await?;
        let files = review.files_of(task);
        hunks::apply(&target, &files, &approved)
            .await
            .map_err(|e| CliError::Failed(e.to_string()))?;
        for id in &approved {
            record(
                log,
                config,
                task,
                user,
                EventKind::HunkApplied,
                json!({"hunk": id, "task_id": task, "target": target}),
            )
            .await?;
        }
        // Observed, not assumed: the applied patch now reverses cleanly on the tree.
        if hunks::are_applied(&target, &files, &approved).await {
            record(
                log,
                config,
                task,
                user,
                EventKind::EffectConfirmed,
                json!({"task_id": task, "hunks": ids, "target": target,
                       "observed": "every applied hunk reverses cleanly on the tree"}),
            )
            .await?;
        }
        println!("applied {} hunk(s) to {}", approved.len(), target.display());
        verify(log, config, task, user, &ws, &target).await?;
    } else {
        println!("no approved hunk of task {task} to apply");
    }
    if pending == 0 {
        remove_scratch(&target, &first.scratch).await;
    } else {
        println!("{pending} hunk(s) of task {task} still pending; its scratch is kept");
    }
    Ok(())
}

/// The tree `p` is applied to, and the workspace declaration of its mesh: the tree its
/// proposal names, which must be the workspace target its mesh declares, taken against this
/// directory (run `iron hunks` where `iron up` runs). A proposal naming any other tree is
/// refused, whoever wrote it.
fn checked_target(config: &Config, p: &Proposed) -> Result<(PathBuf, WorkspaceEntry), CliError> {
    let catalog =
        crate::aem::read_state_catalog(config).map_err(|e| CliError::Failed(e.to_string()))?;
    let mesh = p.expert.split('/').next().unwrap_or_default();
    let ws = catalog
        .mesh(mesh)
        .and_then(|m| m.workspace.clone())
        .ok_or_else(|| CliError::Failed(format!("mesh {mesh} declares no workspace")))?;
    let declared = std::env::current_dir()
        .map(|d| d.join(&ws.target))
        .and_then(|t| t.canonicalize())
        .map_err(|source| CliError::Io {
            what: format!(
                "resolving the workspace target `{}` of {mesh} (run `iron hunks` from the project directory)",
                ws.target
            ),
            source,
        })?;
    if p.target != declared {
        return Err(CliError::Failed(format!(
            "the review of task {} names the tree {}, but the workspace of {mesh} is {}; run \
             `iron hunks` from the project directory",
            p.task,
            p.target.display(),
            declared.display()
        )));
    }
    Ok((declared, ws))
}

/// Runs the mesh's verify command confined on a copy of `target` and records the outcome.
async fn verify(
    log: &AnyLog,
    config: &Config,
    task: &str,
    user: &str,
    ws: &WorkspaceEntry,
    target: &Path,
) -> Result<(), CliError> {
    if ws.verify.is_empty() {
        return Ok(());
    }
    let outcome = async {
        let sandbox = Sandbox::locate().await.map_err(|e| e.to_string())?;
        let copies = provider(
            crate::aem::WorkspaceProvider::Copy,
            target,
            &config.state_dir.join("scratch"),
        );
        let id = format!(
            "verify-{}",
            &uuid::Uuid::new_v4().simple().to_string()[..12]
        );
        let copy = copies.create(&id).await.map_err(|e| e.to_string())?;
        let args: Vec<&str> = ws.verify[1..].iter().map(String::as_str).collect();
        let mut run = Confined::new(&ws.verify[0], &args, &copy.dir);
        run.timeout = Duration::from_secs(ws.verify_secs);
        run.network = ws.network;
        run.mask = vec![config.state_dir.clone()];
        let out = sandbox.run(&run).await.map_err(|e| e.to_string());
        let _ = copies.remove(&copy).await;
        out
    }
    .await;
    let tail = |b: &[u8]| {
        let text = String::from_utf8_lossy(b);
        let start = text.len().saturating_sub(4000);
        text[text.floor_char_boundary(start)..].to_string()
    };
    let (ok, payload) = match &outcome {
        Ok(out) => (
            out.success(),
            json!({"task_id": task, "command": ws.verify, "ok": out.success(),
                   "ended": format!("{:?}", out.ended), "secs": out.elapsed.as_secs_f64(),
                   "stdout_tail": tail(&out.stdout), "stderr_tail": tail(&out.stderr)}),
        ),
        Err(why) => (
            false,
            json!({"task_id": task, "command": ws.verify, "ok": false, "error": why}),
        ),
    };
    record(log, config, task, user, EventKind::VerifyFinished, payload).await?;
    match outcome {
        Ok(_) if ok => println!("verify `{}` passed", ws.verify.join(" ")),
        Ok(out) => println!(
            "verify `{}` FAILED ({:?}):\n{}",
            ws.verify.join(" "),
            out.ended,
            tail(&out.stderr)
        ),
        Err(why) => println!("verify `{}` did not run: {why}", ws.verify.join(" ")),
    }
    Ok(())
}

/// Removes a scratch whose review is over (a linked worktree through its repository).
async fn remove_scratch(target: &Path, dir: &Path) {
    match remove_dir(target, dir).await {
        Ok(()) => println!("removed the scratch {}", dir.display()),
        Err(e) => eprintln!("could not remove the scratch {}: {e}", dir.display()),
    }
}
