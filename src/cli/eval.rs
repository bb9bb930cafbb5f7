//! `iron eval`: accuracy of judgment on labelled sets, as distinct from `iron bench`, which
//! measures speed.

use std::path::{Path, PathBuf};

use clap::Subcommand;

use super::CliError;
use crate::llm::offline::eval::{self, Evaluation};

/// The sets `iron eval newsroom` reads by default: the tuning half, then the held-out half.
const NEWSROOM_SETS: &[&str] = &["eval/newsroom/tune.jsonl", "eval/newsroom/heldout.jsonl"];

#[derive(Debug, Subcommand)]
pub enum EvalCommand {
    /// The newsroom's claim judgment on labelled reports (JSON Lines; eval/newsroom/README.md
    /// says what the labels mean): pairwise grouping precision and recall, stance, denials
    /// counted against what they deny, false and missed confirmations, per trap and kind.
    /// Each corpus is judged as one batch, offline. Every false confirmation is listed.
    Newsroom {
        /// Labelled corpora; the shipped tuning and held-out halves by default.
        corpus: Vec<PathBuf>,
        /// One JSON object per corpus instead of the table.
        #[arg(long)]
        json: bool,
    },
}

fn read(path: &Path) -> Result<Vec<eval::Labelled>, CliError> {
    let text = std::fs::read_to_string(path).map_err(|source| {
        // The shipped sets are named from the repository root.
        let hint = match NEWSROOM_SETS.iter().any(|s| Path::new(s) == path) {
            true => " (run it from the repository root, or name a corpus)",
            false => "",
        };
        CliError::Io {
            what: format!("reading {}{hint}", path.display()),
            source,
        }
    })?;
    eval::parse(&text).map_err(|e| CliError::Failed(format!("{}: {e}", path.display())))
}

pub(super) fn run(command: EvalCommand) -> Result<(), CliError> {
    let EvalCommand::Newsroom { corpus, json } = command;
    let paths = match corpus.is_empty() {
        true => NEWSROOM_SETS.iter().map(PathBuf::from).collect(),
        false => corpus,
    };
    for path in &paths {
        let evaluation: Evaluation = eval::evaluate(&read(path)?);
        if json {
            let mut value =
                serde_json::to_value(&evaluation).map_err(|e| CliError::Failed(e.to_string()))?;
            value["corpus"] = path.display().to_string().into();
            println!("{value}");
        } else {
            println!("{}", evaluation.table(&path.display().to_string()));
        }
    }
    Ok(())
}
