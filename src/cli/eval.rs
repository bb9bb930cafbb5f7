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
/// The facts `iron eval memory` recalls from, and its query sets (tuning, then held-out).
const MEMORY_FACTS: &str = "eval/memory/facts.jsonl";
const MEMORY_SETS: &[&str] = &["eval/memory/tune.jsonl", "eval/memory/heldout.jsonl"];
/// The sets `iron eval routing` reads by default (tuning, then held-out).
const ROUTING_SETS: &[&str] = &["eval/routing/tune.jsonl", "eval/routing/heldout.jsonl"];

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
        /// Also list every pair of reports grouped as one claim that state different claims,
        /// every pair of one claim left apart, and every verdict contradicted only by reports
        /// of other events (for tuning: read them on a tuning set, never
        /// on the set you report).
        #[arg(long)]
        wrong_pairs: bool,
        #[command(flatten)]
        dir: super::models::DirArg,
    },
    /// Routing on labelled instructions (eval/routing/README.md): the share the offline router
    /// (with the local model's reading of the experts when it is present, as the engine routes)
    /// sends to the labelled expert in one assignment, per kind and per expert; every miss is
    /// listed. The catalog is compiled from --aem.
    Routing {
        /// Labelled sets; the shipped tuning and held-out halves by default.
        sets: Vec<PathBuf>,
        /// The agent folders.
        #[arg(long, default_value = "aem")]
        aem: PathBuf,
        /// Route by the rules alone, as when no local model is present.
        #[arg(long)]
        lexical: bool,
        /// One JSON object per set instead of the table.
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        dir: super::models::DirArg,
    },
    /// Memory recall on labelled queries (eval/memory/README.md): the facts projected and
    /// indexed as the memory workers would, each query answered by a wake's hybrid recall under
    /// its scope, scored by recall@5 and MRR per kind of query. Three retrievers side by side:
    /// words alone, the offline hashing embedding, and the local model when it is present.
    Memory {
        /// Labelled query sets; the shipped tuning and held-out halves by default.
        queries: Vec<PathBuf>,
        /// The facts the queries are answered from.
        #[arg(long, default_value = MEMORY_FACTS)]
        facts: PathBuf,
        /// One JSON object per set and retriever instead of the tables.
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        dir: super::models::DirArg,
    },
}

/// The text of `path`; a shipped set that is not there is named with where to run from.
fn read_text(path: &Path) -> Result<String, CliError> {
    std::fs::read_to_string(path).map_err(|source| {
        // The shipped sets are named from the repository root.
        let shipped = NEWSROOM_SETS
            .iter()
            .chain(MEMORY_SETS)
            .chain(ROUTING_SETS)
            .chain([&MEMORY_FACTS])
            .any(|s| Path::new(s) == path);
        let hint = match shipped {
            true => " (run it from the repository root, or name a set)",
            false => "",
        };
        CliError::Io {
            what: format!("reading {}{hint}", path.display()),
            source,
        }
    })
}

fn read(path: &Path) -> Result<Vec<eval::Labelled>, CliError> {
    eval::parse(&read_text(path)?).map_err(|e| CliError::Failed(format!("{}: {e}", path.display())))
}

/// The local model in the models directory `dir` names; `None`, said once, when it cannot load.
fn local_model(
    dir: &super::models::DirArg,
    without: &str,
) -> Result<Option<LocalEmbedder>, CliError> {
    let dir = super::models::models_dir(dir)?;
    Ok(LocalEmbedder::load(&dir)
        .inspect_err(|e| eprintln!("{without}: {e}"))
        .ok())
}

pub(super) async fn run(command: EvalCommand) -> Result<(), CliError> {
    match command {
        EvalCommand::Newsroom {
            corpus,
            json,
            lexical,
            wrong_pairs,
            dir,
        } => newsroom(corpus, json, lexical, wrong_pairs, &dir),
        EvalCommand::Memory {
            queries,
            facts,
            json,
            dir,
        } => memory(queries, &facts, json, &dir).await,
        EvalCommand::Routing {
            sets,
            aem,
            lexical,
            json,
            dir,
        } => routing(sets, &aem, lexical, json, &dir).await,
    }
}

fn newsroom(
    corpus: Vec<PathBuf>,
    json: bool,
    lexical: bool,
    wrong_pairs: bool,
    dir: &super::models::DirArg,
) -> Result<(), CliError> {
    let paths = match corpus.is_empty() {
        true => NEWSROOM_SETS.iter().map(PathBuf::from).collect(),
        false => corpus,
    };
    let model = match lexical {
        true => None,
        false => local_model(dir, "judging on words alone")?,
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
            if wrong_pairs {
                for pair in &evaluation.wrong_pairs {
                    println!("wrong pair: {pair}");
                }
                for pair in &evaluation.missed_pairs {
                    println!("missed pair: {pair}");
                }
                for line in &evaluation.false_contradictions {
                    println!("false contradiction: {line}");
                }
            }
        }
    }
    Ok(())
}

async fn memory(
    queries: Vec<PathBuf>,
    facts: &Path,
    json: bool,
    dir: &super::models::DirArg,
) -> Result<(), CliError> {
    use crate::memory::eval as memory_eval;
    use crate::memory::semantic::{Embedder, HashingEmbedder};
    let failed = |what: &Path, e: memory_eval::EvalError| {
        CliError::Failed(format!("{}: {e}", what.display()))
    };
    let paths = match queries.is_empty() {
        true => MEMORY_SETS.iter().map(PathBuf::from).collect(),
        false => queries,
    };
    let facts_read: Vec<memory_eval::LabelledFact> =
        memory_eval::parse(&read_text(facts)?).map_err(|e| failed(facts, e))?;
    let sets = paths
        .iter()
        .map(|p| {
            let text = read_text(p)?;
            memory_eval::parse::<memory_eval::LabelledQuery>(&text)
                .map(|set| (p, set))
                .map_err(|e| failed(p, e))
        })
        .collect::<Result<Vec<_>, _>>()?;
    let local = local_model(dir, "no local model, so no row for it")?;
    let mut retrievers: Vec<Option<&dyn Embedder>> = vec![None, Some(&HashingEmbedder)];
    if let Some(model) = &local {
        retrievers.push(Some(model));
    }
    for embedder in retrievers {
        let scratch = tempfile::tempdir().map_err(|source| CliError::Io {
            what: "making a scratch directory".into(),
            source,
        })?;
        let indexed = memory_eval::index(&facts_read, embedder, scratch.path())
            .await
            .map_err(|e| failed(facts, e))?;
        for (path, set) in &sets {
            let evaluation = memory_eval::evaluate(&indexed, set, embedder)
                .await
                .map_err(|e| failed(path, e))?;
            if json {
                let mut value = serde_json::to_value(&evaluation)
                    .map_err(|e| CliError::Failed(e.to_string()))?;
                value["queries"] = path.display().to_string().into();
                println!("{value}");
            } else {
                let title = format!("{} (recall: {})", path.display(), evaluation.retriever);
                println!("{}", evaluation.table(&title));
            }
        }
    }
    Ok(())
}

async fn routing(
    sets: Vec<PathBuf>,
    aem: &Path,
    lexical: bool,
    json: bool,
    dir: &super::models::DirArg,
) -> Result<(), CliError> {
    use crate::llm::router::{RoutingCase, evaluate};
    let paths = match sets.is_empty() {
        true => ROUTING_SETS.iter().map(PathBuf::from).collect(),
        false => sets,
    };
    let catalog = crate::aem::compile(aem)?;
    let mut router = crate::bench::routing::offline_router(&catalog)?;
    let model = match lexical {
        true => None,
        false => local_model(dir, "routing by the rules alone")?,
    };
    let reader = model.as_ref().map_or("rules", |m| m.name());
    if let Some(model) = model.clone() {
        router = router
            .with_meanings(&catalog, std::sync::Arc::new(model))
            .await
            .map_err(|e| CliError::Failed(e.to_string()))?;
    }
    for path in &paths {
        let cases: Vec<RoutingCase> = crate::memory::eval::parse(&read_text(path)?)
            .map_err(|e| CliError::Failed(format!("{}: {e}", path.display())))?;
        let evaluation = evaluate(&router, &cases).await;
        if json {
            let mut value =
                serde_json::to_value(&evaluation).map_err(|e| CliError::Failed(e.to_string()))?;
            value["set"] = path.display().to_string().into();
            value["router"] = reader.into();
            println!("{value}");
            continue;
        }
        println!("{} (router: {reader})", path.display());
        let row = |name: &str, t: &crate::llm::router::Tally| {
            println!(
                "  {name:<20} {:>4} of {:>4}  {:>5.1} %",
                t.right,
                t.cases,
                100.0 * t.accuracy()
            )
        };
        row("all", &evaluation.overall);
        for (kind, t) in &evaluation.by_kind {
            row(kind, t);
        }
        for (expert, t) in &evaluation.by_expert {
            row(expert, t);
        }
        for miss in &evaluation.misses {
            println!("  miss {miss}");
        }
        println!();
    }
    Ok(())
}
