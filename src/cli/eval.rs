//! `iron eval`: accuracy of judgment on labelled sets, as distinct from `iron bench`, which
//! measures speed.

use std::path::{Path, PathBuf};

use clap::Subcommand;

use super::CliError;
use crate::llm::local::LocalEmbedder;
use crate::llm::offline::eval::{self, Evaluation};
use crate::llm::offline::meanings_of;

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
        /// Judge on words alone, as when no local model is present (by default the local
        /// embedding model is used when it is: `iron models pull`).
        #[arg(long)]
        lexical: bool,
        #[command(flatten)]
        dir: super::models::DirArg,
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
    let EvalCommand::Newsroom {
        corpus,
        json,
        lexical,
        dir,
    } = command;
    let paths = match corpus.is_empty() {
        true => NEWSROOM_SETS.iter().map(PathBuf::from).collect(),
        false => corpus,
    };
    let model = match lexical {
        true => None,
        false => {
            let dir = super::models::models_dir(&dir)?;
            match LocalEmbedder::load(&dir) {
                Ok(model) => Some(model),
                Err(e) => {
                    eprintln!("judging on words alone: {e}");
                    None
                }
            }
        }
    };
    let judge = model.as_ref().map_or("words", |m| m.name());
    for path in &paths {
        let corpus = read(path)?;
        let meanings = match &model {
            None => None,
            Some(model) => {
                let reports: Vec<_> = corpus.iter().map(|l| l.report.clone()).collect();
                Some(meanings_of(model, &reports).map_err(|e| CliError::Failed(e.to_string()))?)
            }
        };
        let evaluation: Evaluation = eval::evaluate_with(&corpus, meanings.as_ref());
        if json {
            let mut value =
                serde_json::to_value(&evaluation).map_err(|e| CliError::Failed(e.to_string()))?;
            value["corpus"] = path.display().to_string().into();
            value["judge"] = judge.into();
            println!("{value}");
        } else {
            println!(
                "{}",
                evaluation.table(&format!("{} (judge: {judge})", path.display()))
            );
        }
    }
    Ok(())
}
