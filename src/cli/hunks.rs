//! `iron hunks …`: review what experts changed in their scratches. Every command reads the
//! review from the log (`crate::workspace::review`), so a review can be taken up days later
//! from any terminal; decisions and applications are written back to it. Everything printed
//! of a change (paths, lines) goes through `crate::workspace::display::shown`: a control
//! character an expert wrote is seen, never acted on by the terminal.

use clap::Subcommand;

use super::{CliError, failed};
use crate::core::config::Config;
use crate::core::identity::{Authority, OperatorKey, action};
use crate::spine::durable::AnyLog;
use crate::workspace::display::shown;
use crate::workspace::land::{LandError, Reviewer, checked_target, read_review};
use crate::workspace::review::{Decision, Proposed, Review};
use crate::workspace::scratch::remove_dir;

/// Review of experts' changes, hunk by hunk.
#[derive(Debug, Subcommand)]
pub enum HunksCommand {
    /// List proposed hunks (pending and approved; `--all` adds rejected and applied), each with
    /// its file header's meaning (new file, mode, symlink, rename, …), and the changes that
    /// cannot be reviewed by hunk whose scratch is still kept (`--all`: all of them).
    List {
        /// Only this task's.
        #[arg(long)]
        task: Option<String>,
        /// Rejected and applied ones too.
        #[arg(long)]
        all: bool,
    },
    /// Print one hunk as a patch, after a `#` line saying what its file header means; control
    /// characters are shown escaped (`\r`, `\x1b`, `\u{202e}`).
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
        /// Who decides, signing with their key (default: IRON_OPERATOR, else the only key on
        /// this machine; see `iron operator add`).
        #[arg(long, alias = "user")]
        operator: Option<String>,
    },
    /// Reject hunks: they never reach the real tree.
    Reject {
        /// Hunk ids.
        #[arg(required = true)]
        hunks: Vec<String>,
        /// Who decides, signing with their key (default: IRON_OPERATOR, else the only key on
        /// this machine; see `iron operator add`).
        #[arg(long, alias = "user")]
        operator: Option<String>,
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
    let people = Authority::new(&config.state_dir, &config.operators);
    let review = read_review(&log, &people).await.map_err(failed)?;
    match command {
        HunksCommand::List { task, all } => {
            let mut listed = 0;
            for p in review.hunks() {
                if task.as_ref().is_some_and(|t| *t != p.task)
                    || (!all && matches!(p.decision, Decision::Rejected(_) | Decision::Applied))
                {
                    continue;
                }
                println!("{}", list_line(p));
                listed += 1;
            }
            for u in review.unreviewable() {
                if task.as_ref().is_some_and(|t| *t != u.task) || (!all && !u.scratch.exists()) {
                    continue;
                }
                println!(
                    "{:<16} {:<8} {}: {} task {} by {} (never applied; its scratch {} is kept)",
                    "-",
                    "unreviewable",
                    shown(u.path.as_deref().unwrap_or("(all of it)")),
                    shown(&u.why),
                    shown(&u.task),
                    shown(&u.expert),
                    shown(&u.scratch.display().to_string())
                );
                listed += 1;
            }
            if listed == 0 {
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
            print!("{}", show_text(p));
            Ok(())
        }
        HunksCommand::Approve { hunks, operator } => {
            decide(&log, &config, &review, &hunks, operator, true).await
        }
        HunksCommand::Reject { hunks, operator } => {
            decide(&log, &config, &review, &hunks, operator, false).await
        }
        HunksCommand::Apply { task, user } => apply(&log, &config, &review, &task, &user).await,
    }
}

/// One line of `iron hunks list` for `p`.
fn list_line(p: &Proposed) -> String {
    let (added, removed) = p.hunk.counts();
    let mut notes = Vec::new();
    let summary = p.hunk.meaning.summary();
    if !summary.is_empty() {
        notes.push(summary);
    }
    if p.hunk.governance {
        notes.push("governance: never applied".into());
    }
    let notes = if notes.is_empty() {
        String::new()
    } else {
        format!(" ({})", notes.join("; "))
    };
    format!(
        "{} {:<8} {} {} +{added} -{removed} task {} by {}{}",
        p.hunk.id,
        p.decision.word(),
        shown(&p.hunk.path),
        shown(&p.hunk.range),
        shown(&p.task),
        shown(&p.expert),
        shown(&notes)
    )
}

/// What `iron hunks show` prints of `p`: what its header means, then its patch, every line
/// shown escaped.
fn show_text(p: &Proposed) -> String {
    let summary = p.hunk.meaning.summary();
    let mut out = format!(
        "# {}: {}\n",
        shown(&p.hunk.path),
        shown(if summary.is_empty() {
            "changed in place"
        } else {
            &summary
        })
    );
    for line in p.patch().split_terminator('\n') {
        out.push_str(&shown(line));
        out.push('\n');
    }
    out
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
    operator: Option<String>,
    approve: bool,
) -> Result<(), CliError> {
    let decision = crate::core::identity::decision(approve);
    let key = OperatorKey::for_cli(operator.as_deref())?;
    let statement = key.sign(action::HUNKS, &ids.join(" "), decision);
    let people = Authority::new(&config.state_dir, &config.operators);
    let decided = reviewer(log, config, key.name())
        .decide(review, ids, &statement, &people)
        .await
        .map_err(failed)?;
    for p in decided {
        println!("{} {decision} ({})", p.hunk.id, shown(&p.hunk.path));
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
    let unreviewable = review.unreviewable_of(task).count();
    if landed.pending == 0 && unreviewable > 0 {
        println!(
            "{unreviewable} change(s) of task {task} cannot be reviewed by hunk (`iron hunks list \
             --task {task}`); its scratch {} is kept for you to take them by hand",
            shown(&first.scratch.display().to_string())
        );
    } else if landed.pending == 0 {
        match remove_dir(&target, &config.state_dir.join("scratch"), &first.scratch).await {
            Ok(()) => println!(
                "removed the scratch {}",
                shown(&first.scratch.display().to_string())
            ),
            Err(e) => eprintln!(
                "could not remove the scratch {}: {}",
                shown(&first.scratch.display().to_string()),
                shown(&e.to_string())
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workspace::hunks::parse;
    use crate::workspace::review::Decision;

    fn proposed(diff: &str) -> Proposed {
        let file = parse(diff).unwrap().remove(0);
        Proposed {
            hunk: file.hunks[0].clone(),
            header: file.header,
            task: "t1".into(),
            expert: "dev/engineer".into(),
            target: "/r".into(),
            scratch: "/s".into(),
            decision: Decision::Pending,
        }
    }

    #[test]
    fn a_carriage_return_in_a_hunk_is_shown_escaped() {
        let p = proposed(
            "diff --git a/w.rs b/w.rs\nindex 1..2 100644\n--- a/w.rs\n+++ b/w.rs\n@@ -1 +1 @@ fn \u{1b}[2Kx\n-a\n+evil();\r+ok();\n",
        );
        let text = show_text(&p);
        assert!(text.contains("+evil();\\r+ok();\n"), "{text}");
        assert!(text.contains("@@ -1 +1 @@ fn \\x1b[2Kx\n"), "{text}");
        assert!(!text.contains(['\r', '\u{1b}']), "{text:?}");
        assert!(text.starts_with("# w.rs: changed in place\n"), "{text}");
        assert!(!list_line(&p).contains('\u{1b}'));
    }

    #[test]
    fn an_ansi_escape_in_a_file_name_is_shown_escaped() {
        let p = proposed(
            "diff --git \"a/e\\033[8mvil\\342\\200\\256.rs\" \"b/e\\033[8mvil\\342\\200\\256.rs\"\nnew file mode 100755\nindex 0..2\n--- /dev/null\n+++ \"b/e\\033[8mvil\\342\\200\\256.rs\"\n@@ -0,0 +1 @@\n+x\n",
        );
        assert_eq!(p.hunk.path, "e\u{1b}[8mvil\u{202e}.rs");
        let line = list_line(&p);
        assert!(
            line.contains(" e\\x1b[8mvil\\u{202e}.rs @@ -0,0 +1 @@ +1 -0 task t1 by dev/engineer (new file, mode 100755)"),
            "{line}"
        );
        let text = show_text(&p);
        assert!(
            text.starts_with("# e\\x1b[8mvil\\u{202e}.rs: new file, mode 100755\n"),
            "{text}"
        );
        assert!(!text.contains(['\u{1b}', '\u{202e}']), "{text:?}");
    }
}
