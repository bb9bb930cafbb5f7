//! The memory nodes. The projector (`/iron/memory/projector`): `configure` opens the configured
//! log and creates `projection.db`, `run` projects the log into it until deactivated; it is the
//! only writer of that database. The background workers (`/iron/memory/<worker>`): `configure`
//! opens the log and creates the worker's state database, `run` derives from the log.

use crate::spine::control::lifecycle::RunError;
use std::{
    path::{Path, PathBuf},
    sync::Arc,
};

use tokio_util::sync::CancellationToken;
use tracing::info;

use super::consolidator::Consolidator;
use super::documents::DocumentIndex;
use super::extractor::{Extractor, FactReader, ReadError};
use super::graph::KnowledgeGraph;
use super::projector::{self, ProjectorDeps, ProjectorExit};
use super::reviewer::Reviewer;
use super::semantic::{EmbedError, Embedder, HashingEmbedder, SemanticIndex};
use super::worker::{self, Deriver, WorkerDeps};
use crate::{
    aem::Catalog,
    core::config::Config,
    spine::{
        control::lifecycle::{CallbackError, ManagedNode, NodeContext},
        durable::AnyLog,
    },
};

/// The projector node.
#[derive(Debug, Default)]
pub struct ProjectorNode;

/// What `configure` opened.
pub struct ProjectorRuntime {
    log: AnyLog,
    db: PathBuf,
}

impl ManagedNode for ProjectorNode {
    type Deps = ProjectorRuntime;

    async fn configure(&self, _ctx: &NodeContext) -> Result<ProjectorRuntime, CallbackError> {
        let config = Config::load().map_err(CallbackError::refused_by)?;
        let log = AnyLog::open(&config)
            .await
            .map_err(CallbackError::refused_by)?;
        let db = config.state_path(&config.memory.projection);
        // Created here, not in `run`, so that a reader started once the node is active
        // (`iron recall` right after `iron up` says so) finds the database and its tables.
        let path = db.clone();
        tokio::task::spawn_blocking(move || projector::open_writer(&path).map(drop))
            .await
            .map_err(CallbackError::refused_by)?
            .map_err(CallbackError::refused_by)?;
        info!("projecting the MEM stream into {}", db.display());
        Ok(ProjectorRuntime { log, db })
    }

    async fn run(
        self: Arc<Self>,
        deps: Arc<ProjectorRuntime>,
        shutdown: CancellationToken,
    ) -> Result<(), RunError> {
        let run = projector::run(
            ProjectorDeps::new(deps.log.clone(), deps.db.clone()),
            shutdown,
        );
        match run.await {
            Ok(ProjectorExit::Stopped { last_seq }) => {
                info!("projector stopped at sequence {last_seq}");
                Ok(())
            }
            Err(e) => Err(RunError::new("projecting", e)),
        }
    }
}

/// A background memory worker: which one a [`WorkerNode`] runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Worker {
    /// Facts from published bulletins and structured tool results.
    Extractor,
    /// One current belief per subject.
    Consolidator,
    /// A vector per current fact, for hybrid recall.
    Semantic,
    /// Who and what the facts name.
    Graph,
    /// The passages of saved documents.
    Documents,
    /// Lessons from a role's repeated failures.
    Reviewer,
}

impl Worker {
    /// Every worker, in launch order.
    pub const ALL: [Worker; 6] = [
        Worker::Extractor,
        Worker::Consolidator,
        Worker::Semantic,
        Worker::Graph,
        Worker::Documents,
        Worker::Reviewer,
    ];

    /// Its name: node name and state file stem.
    pub fn name(self) -> &'static str {
        match self {
            Worker::Extractor => "extractor",
            Worker::Consolidator => "consolidator",
            Worker::Semantic => "semantic",
            Worker::Graph => "graph",
            Worker::Documents => "documents",
            Worker::Reviewer => "reviewer",
        }
    }

    /// Its state database: `<state_dir>/memory/<name>.db`.
    pub fn state(self, config: &Config) -> PathBuf {
        config.state_path(Path::new(&format!("memory/{}.db", self.name())))
    }
}

impl std::str::FromStr for Worker {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        Worker::ALL
            .into_iter()
            .find(|w| w.name() == s)
            .ok_or_else(|| {
                let names: Vec<&str> = Worker::ALL.iter().map(|w| w.name()).collect();
                format!("no memory worker `{s}`; one of: {}", names.join(", "))
            })
    }
}

/// Builds the extractor's model path from the configuration and catalog (`None`: no model is
/// configured). The models layer provides it (`llm::facts::from_config`); memory sits below.
pub type ReaderFactory = fn(&Config, &Catalog) -> Result<Option<Arc<dyn FactReader>>, ReadError>;

/// Builds the semantic index's embedder from the configuration (the configured `/embeddings`
/// backend, the local model, or the offline one; called on a blocking thread). The models layer provides it (`llm::embeddings::from_config`).
pub type EmbedderFactory = fn(&Config) -> Result<Arc<dyn Embedder>, EmbedError>;

/// The node of one background worker (`/iron/memory/<worker>`).
#[derive(Debug)]
pub struct WorkerNode {
    worker: Worker,
    reader: Option<ReaderFactory>,
    embedder: Option<EmbedderFactory>,
}

impl WorkerNode {
    /// The node of `worker`.
    pub fn new(worker: Worker) -> Self {
        Self {
            worker,
            reader: None,
            embedder: None,
        }
    }

    /// The semantic index embeds with what `factory` builds (without it, offline).
    pub fn with_embedder(mut self, factory: EmbedderFactory) -> Self {
        self.embedder = Some(factory);
        self
    }

    /// The extractor also reads finished tasks' answers with the model `factory` builds.
    pub fn with_reader(mut self, factory: ReaderFactory) -> Self {
        self.reader = Some(factory);
        self
    }
}

/// The deriver a worker node runs.
#[derive(Clone)]
enum Job {
    Extractor(Extractor),
    Consolidator,
    Semantic(SemanticIndex),
    Graph,
    Documents(DocumentIndex<AnyLog>),
    Reviewer(Reviewer),
}

impl Job {
    fn schema(&self) -> &'static str {
        match self {
            Job::Extractor(x) => x.schema(),
            Job::Consolidator => Consolidator.schema(),
            Job::Semantic(s) => s.schema(),
            Job::Graph => KnowledgeGraph.schema(),
            Job::Documents(d) => d.schema(),
            Job::Reviewer(r) => r.schema(),
        }
    }
}

/// What a worker's `configure` opened.
pub struct WorkerRuntime {
    log: AnyLog,
    state: PathBuf,
    job: Job,
}

impl ManagedNode for WorkerNode {
    type Deps = WorkerRuntime;

    async fn configure(&self, _ctx: &NodeContext) -> Result<WorkerRuntime, CallbackError> {
        let config = Config::load().map_err(CallbackError::refused_by)?;
        let log = AnyLog::open(&config)
            .await
            .map_err(CallbackError::refused_by)?;
        let job = match self.worker {
            // The extractor scopes facts by the experts' declarations: no catalog, no start.
            Worker::Extractor => {
                let catalog =
                    crate::aem::read_state_catalog(&config).map_err(CallbackError::refused_by)?;
                let mut extractor = Extractor::new(&catalog);
                match self
                    .reader
                    .map(|build| build(&config, &catalog))
                    .transpose()
                {
                    Ok(Some(Some(reader))) => {
                        info!("reading finished tasks' answers with the experts' models");
                        extractor = extractor.with_reader(reader);
                    }
                    Ok(_) => info!("no model configured: facts from structured records only"),
                    Err(e) => return Err(CallbackError::refused_by(e)),
                }
                Job::Extractor(extractor)
            }
            Worker::Consolidator => Job::Consolidator,
            Worker::Semantic => {
                // Building it may load a local model (a quarter of a second): off the runtime.
                let embedder: Arc<dyn Embedder> = match self.embedder {
                    Some(build) => {
                        let config = config.clone();
                        tokio::task::spawn_blocking(move || build(&config))
                            .await
                            .map_err(CallbackError::refused_by)?
                            .map_err(CallbackError::refused_by)?
                    }
                    None => Arc::new(HashingEmbedder),
                };
                info!("embedding facts with {}", embedder.name());
                Job::Semantic(SemanticIndex::new(embedder))
            }
            Worker::Graph => Job::Graph,
            Worker::Documents => Job::Documents(DocumentIndex::new(log.clone())),
            // Only roles that declare procedural memory are reviewed.
            Worker::Reviewer => {
                let catalog =
                    crate::aem::read_state_catalog(&config).map_err(CallbackError::refused_by)?;
                Job::Reviewer(Reviewer::new(&catalog))
            }
        };
        let state = self.worker.state(&config);
        // Created here so that `iron memory status` finds it as soon as the node is active.
        let (path, schema) = (state.clone(), job.schema());
        tokio::task::spawn_blocking(move || worker::open_state(&path, schema).map(drop))
            .await
            .map_err(CallbackError::refused_by)?
            .map_err(CallbackError::refused_by)?;
        info!(
            "deriving memory from the MEM stream (state in {})",
            state.display()
        );
        Ok(WorkerRuntime { log, state, job })
    }

    async fn run(
        self: Arc<Self>,
        deps: Arc<WorkerRuntime>,
        shutdown: CancellationToken,
    ) -> Result<(), RunError> {
        let name = self.worker.name();
        let frame = WorkerDeps::new(deps.log.clone(), name, deps.state.clone());
        let run = match deps.job.clone() {
            Job::Extractor(x) => worker::run(frame, x, shutdown).await,
            Job::Consolidator => worker::run(frame, Consolidator, shutdown).await,
            Job::Semantic(s) => worker::run(frame, s, shutdown).await,
            Job::Graph => worker::run(frame, KnowledgeGraph, shutdown).await,
            Job::Documents(d) => worker::run(frame, d, shutdown).await,
            Job::Reviewer(r) => worker::run(frame, r, shutdown).await,
        };
        match run {
            Ok(last_seq) => {
                info!("{name} stopped at sequence {last_seq}");
                Ok(())
            }
            Err(e) => Err(RunError::new("deriving memory", e)),
        }
    }
}
