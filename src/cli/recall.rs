//! `iron log`, `iron recall` and `iron memory status`: reading the event log and what the
//! memory workers derived from it.

use tokio_util::sync::CancellationToken;

use super::{CliError, LogCommand, RecallArgs, stop_on_signals};
use crate::{
    core::{config::Config, durable::StartAt},
    spine::durable::AnyLog,
};

/// `iron log tail|replay`.
pub(super) async fn log(command: LogCommand) -> Result<(), CliError> {
    match command {
        LogCommand::Tail { from_start, limit } => {
            let config = super::load_config()?;
            let log = AnyLog::open(&config).await?;
            let start = if from_start {
                StartAt::First
            } else {
                StartAt::New
            };
            let shutdown = CancellationToken::new();
            stop_on_signals(shutdown.clone());
            let mut out = std::io::stdout();
            crate::memory::cli::log_tail(&log, "MEM", "mem.>", start, limit, &mut out, shutdown)
                .await?;
            Ok(())
        }
        LogCommand::Replay { prefix } => {
            let config = super::load_config()?;
            let db = config.state_path(&config.memory.projection);
            let n = crate::memory::cli::log_replay(&db, &prefix, &mut std::io::stdout())?;
            eprintln!("{n} event(s)");
            Ok(())
        }
    }
}

/// `iron recall`: full text, hybrid, by name, in documents, or as an expert's wake.
pub(super) async fn recall(args: RecallArgs) -> Result<(), CliError> {
    let RecallArgs {
        query,
        scope,
        history,
        semantic,
        graph,
        documents,
        as_expert,
    } = args;
    if let Some(expert) = as_expert {
        return recall_as(&expert, &query).await;
    }
    if documents {
        let config = super::load_config()?;
        let index = crate::memory::node::Worker::Documents.state(&config);
        let out = &mut std::io::stdout();
        let n = crate::memory::cli::documents(&index, &query, scope.as_deref(), out)?;
        eprintln!("{n} passage(s)");
        return Ok(());
    }
    if graph {
        let config = super::load_config()?;
        let db = config.state_path(&config.memory.projection);
        let graph = crate::memory::node::Worker::Graph.state(&config);
        let out = &mut std::io::stdout();
        let n = crate::memory::cli::graph(&graph, &db, &query, scope.as_deref(), out)?;
        if n == 0 {
            eprintln!("nothing in scope names {query:?}");
        } else {
            eprintln!("{n} fact(s)");
        }
        return Ok(());
    }
    let config = super::load_config()?;
    let db = config.state_path(&config.memory.projection);
    let index = crate::memory::node::Worker::Semantic.state(&config);
    let vector = if semantic {
        query_vector(&config, &query).await?
    } else {
        None
    };
    let n = crate::memory::cli::recall(
        &db,
        &query,
        scope.as_deref(),
        history,
        semantic.then_some((index.as_path(), vector.as_ref())),
        &mut std::io::stdout(),
    )?;
    eprintln!("{n} event(s)");
    Ok(())
}

/// `iron memory status`: where each worker is.
pub(super) async fn status() -> Result<(), CliError> {
    let config = super::load_config()?;
    let log = AnyLog::open(&config).await?;
    let workers: Vec<_> = crate::memory::node::Worker::ALL
        .iter()
        .map(|w| (w.name(), w.state(&config)))
        .collect();
    crate::memory::cli::status(
        &log,
        &config.state_path(&config.memory.projection),
        &workers,
        &mut std::io::stdout(),
    )
    .await?;
    Ok(())
}

/// `query` embedded by the configured embedder (a bad configuration is an error; an embedder
/// that does not answer leaves recall to full text, and says so).
async fn query_vector(
    config: &Config,
    query: &str,
) -> Result<Option<crate::memory::semantic::QueryVector>, CliError> {
    let embedder =
        crate::llm::embeddings::from_config(config).map_err(|e| CliError::Failed(e.to_string()))?;
    let limit = std::time::Duration::from_secs(30);
    match crate::memory::semantic::embed_query(&*embedder, query, limit).await {
        Ok(q) => Ok(Some(q)),
        Err(e) => {
            eprintln!("{e}: recalling by words only");
            Ok(None)
        }
    }
}

/// `iron recall --as <mesh>/<role>`: the memory block that expert would be given at wake for
/// `instruction`, from its declared mounts in the built catalog.
async fn recall_as(expert: &str, instruction: &str) -> Result<(), CliError> {
    let config = super::load_config()?;
    let catalog =
        crate::aem::read_state_catalog(&config).map_err(|e| CliError::Failed(e.to_string()))?;
    let entry = catalog.expert(expert).ok_or_else(|| {
        CliError::Failed(format!(
            "no expert `{expert}` in the catalog; known: {}",
            catalog
                .experts
                .keys()
                .cloned()
                .collect::<Vec<_>>()
                .join(", ")
        ))
    })?;
    let projection = config.state_path(&config.memory.projection);
    let embedder = crate::llm::embeddings::from_config(&config)
        .map_err(|e| CliError::Failed(e.to_string()))?;
    let mounts = crate::cognition::expert::wake::Mounts::new(entry, &catalog, &config)
        .with_embedder(embedder);
    if mounts.prefixes.is_empty() && mounts.lessons.is_empty() {
        eprintln!(
            "{expert} declares no readable recalled memory (episodic, semantic, procedural): it is given none"
        );
        return Ok(());
    }
    match mounts.recall(instruction).await {
        Some(injected) => {
            print!("{}", injected.text);
            eprintln!("{} item(s)", injected.items.len());
        }
        None if !projection.is_file() => eprintln!(
            "nothing: no projection at {} yet (is the projector running?)",
            projection.display()
        ),
        None => eprintln!(
            "nothing: {expert}'s mounts reach {} and hold nothing about this",
            [mounts.prefixes, mounts.lessons].concat().join(", ")
        ),
    }
    Ok(())
}
