//! `iron desk`: the newsroom's bulletins, their claims and evidence, read from the log (what
//! the console's Desk shows), and the editor's decision on a bulletin held for one.

use clap::Subcommand;

use super::CliError;
use super::operators::signed;
use crate::core::identity::{Authority, action, decision};
use crate::jobs::{journal, ops};
use crate::spine::durable::AnyLog;
use crate::view::desk::{self, Desk, Held, RELEASE};

/// `iron desk …`.
#[derive(Debug, Subcommand)]
pub enum DeskCommand {
    /// The bulletins held for an editor, then every bulletin published, newest first: each
    /// claim with its status, why it has it (its independent owners, who disputes it) and
    /// what it corrects.
    List {
        /// Only claims of this status (confirmed, single_source, contradicted).
        #[arg(long)]
        status: Option<String>,
        /// The held and the published bulletins, their claims and every report behind them,
        /// as JSON (`{"held": […], "published": […]}`).
        #[arg(long)]
        json: bool,
    },
    /// Release a held bulletin: the newsroom publishes it, as worded or with your wording.
    Release {
        /// The bulletin's id (any unique prefix), as `iron desk list` shows it.
        id: String,
        /// The text to publish instead of the newsroom's (the bulletin's claims, statuses and
        /// evidence stay as they are).
        #[arg(long)]
        wording: Option<String>,
        /// Who decides, signing with their key (default: IRON_OPERATOR, else the only key
        /// on this machine; see `iron operator add`).
        #[arg(long)]
        operator: Option<String>,
    },
    /// Drop a held bulletin: it is not published. Its claims come back when a new report
    /// about them arrives.
    Drop {
        /// The bulletin's id (any unique prefix).
        id: String,
        /// Why, for the job's diary and the flow's output.
        #[arg(long)]
        note: Option<String>,
        /// Who decides, signing with their key (default: IRON_OPERATOR, else the only key
        /// on this machine; see `iron operator add`).
        #[arg(long)]
        operator: Option<String>,
    },
}

/// Runs one `iron desk` command.
pub(super) async fn run(command: DeskCommand) -> Result<(), CliError> {
    let config = super::load_config()?;
    let log = AnyLog::open(&config).await?;
    let people = Authority::new(&config.state_dir, &config.operators);
    let held = desk::held(&journal::read_all_diaries(&log, "*").await?, &people);
    let (id, release, note, operator) = match command {
        DeskCommand::List { status, json } => {
            let mut desk = Desk::of_tenant(&config.tenant);
            desk.refresh(&log)
                .await
                .map_err(|e| CliError::Failed(format!("reading the log: {e}")))?;
            return list(&held, &desk, status.as_deref(), json);
        }
        DeskCommand::Release {
            id,
            wording,
            operator,
        } => (id, true, wording, operator),
        DeskCommand::Drop { id, note, operator } => (id, false, note, operator),
    };
    let holders = desk::holding(&held, &id)?;
    let answer = decision(release);
    for h in &holders {
        let statement = signed(
            operator.clone(),
            action::JOB_APPROVE,
            &format!("{}/{RELEASE}", h.job),
            answer,
        )?;
        ops::approve(
            &log,
            &h.job,
            RELEASE,
            release,
            note.clone(),
            statement,
            &people,
        )
        .await?;
    }
    let jobs: Vec<&str> = holders.iter().map(|h| h.job.as_str()).collect();
    let done = if release { "released" } else { "dropped" };
    println!("{}: {done} (job {})", holders[0].id, jobs.join(", "));
    Ok(())
}

/// `iron desk list`.
fn list(held: &[Held], desk: &Desk, status: Option<&str>, json: bool) -> Result<(), CliError> {
    let published = desk.bulletins();
    if json {
        let both = serde_json::json!({"held": held, "published": published});
        let text = serde_json::to_string_pretty(&both)
            .map_err(|e| CliError::Failed(format!("writing the bulletins: {e}")))?;
        println!("{text}");
        return Ok(());
    }
    if held.is_empty() && published.is_empty() {
        eprintln!("no bulletin on the log yet");
    }
    let claims = |claims: &[desk::Claim]| {
        for c in claims {
            if status.is_some_and(|s| s != c.status) {
                continue;
            }
            println!("  {:<13} {}", c.status, c.text);
            println!("                {}", c.why);
        }
    };
    let corrects = |ids: &[String]| match ids {
        [] => String::new(),
        ids => format!(", corrects {}", ids.join(", ")),
    };
    for h in held {
        let since = crate::core::text::utc(h.held_ms);
        let corrects = corrects(&h.corrects);
        println!(
            "{}  HELD since {since} for {}, job {}{corrects}",
            h.id, h.channel, h.job
        );
        for why in &h.why {
            println!("  held: {why}");
        }
        claims(&h.claims);
    }
    for b in published {
        let when = crate::core::text::utc(b.published_ms);
        let edited = if b.edited {
            ", worded by an editor"
        } else {
            ""
        };
        println!(
            "{}  {when}  on {}{}{edited}",
            b.id,
            b.channel,
            corrects(&b.corrects)
        );
        claims(&b.claims);
    }
    Ok(())
}
