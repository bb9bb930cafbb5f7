//! `iron desk`: the newsroom's bulletins, their claims and evidence, read from the log (what
//! the console's Desk shows).

use clap::Subcommand;

use super::CliError;
use crate::spine::durable::AnyLog;
use crate::view::desk::Desk;

/// `iron desk …`.
#[derive(Debug, Subcommand)]
pub enum DeskCommand {
    /// Every bulletin published, newest first: each claim with its status, why it has it (its
    /// independent owners, who disputes it) and what it corrects.
    List {
        /// Only claims of this status (confirmed, single_source, contradicted).
        #[arg(long)]
        status: Option<String>,
        /// Bulletins, claims and every report behind them as JSON.
        #[arg(long)]
        json: bool,
    },
}

/// Runs one `iron desk` command.
pub(super) async fn run(command: DeskCommand) -> Result<(), CliError> {
    let DeskCommand::List { status, json } = command;
    let config = super::load_config()?;
    let log = AnyLog::open(&config).await?;
    let mut desk = Desk::of_tenant(&config.tenant);
    desk.refresh(&log)
        .await
        .map_err(|e| CliError::Failed(format!("reading the log: {e}")))?;
    let bulletins = desk.bulletins();
    if json {
        let text = serde_json::to_string_pretty(&bulletins)
            .map_err(|e| CliError::Failed(format!("writing the bulletins: {e}")))?;
        println!("{text}");
        return Ok(());
    }
    if bulletins.is_empty() {
        eprintln!("no bulletin on the log yet");
    }
    for b in bulletins {
        let when = crate::core::text::utc(b.published_ms);
        let corrects = match b.corrects.as_slice() {
            [] => String::new(),
            ids => format!(", corrects {}", ids.join(", ")),
        };
        println!("{}  {when}  on {}{corrects}", b.id, b.channel);
        for c in &b.claims {
            if status.as_deref().is_some_and(|s| s != c.status) {
                continue;
            }
            println!("  {:<13} {}", c.status, c.text);
            println!("                {}", c.why);
        }
    }
    Ok(())
}
