//! The expert as a managed node: what it opens when configured (its catalog entry, model,
//! tools, scratch, desk) and how it takes goals; each goal's work is in `task.rs`.

use crate::memory::semantic::Embedder;
use crate::spine::control::lifecycle::RunError;
use crate::tools::CallerKey;
use crate::tools::packages::PackageStore;
use std::{path::Path, sync::Arc, time::Duration};

use tokio::sync::Mutex;
use tokio_util::sync::CancellationToken;
use tracing::info;

use super::{
    StartError, adapters::Recorder, confined, operator::OperatorDesk, scratch::ExpertScratch,
    wake::Mounts,
};
use crate::{
    aem::{Catalog, ExpertEntry, roots::SCRATCH_VAR},
    cognition::agent::ExpertBrief,
    core::{config::Config, identity::Authority},
    interfaces::AolTask,
    llm::{ChatModel, ModelRegistry, ModelsConfig, OfflineBackend, offline::OrOffline},
    spine::{
        control::{
            action::{ActionOptions, ActionServer, GoalRequest},
            lifecycle::{CallbackError, ManagedNode, NodeContext},
        },
        durable::AnyLog,
    },
    tools::{ManagerSetup, RosTools, ToolManager, roots},
};

/// An expert process for `<mesh>/<role>`.
#[derive(Debug, Clone)]
pub struct ExpertNode {
    /// `<mesh>/<role>` in the catalog.
    pub expert: String,
}

/// What `configure` built from the catalog entry.
pub struct ExpertDeps {
    pub(super) config: Config,
    pub(super) log: AnyLog,
    pub(super) entry: ExpertEntry,
    pub(super) brief: ExpertBrief,
    pub(super) model: Arc<dyn ChatModel>,
    /// What the offline backend reads meanings with (for a fork's other model).
    pub(super) embedder: Arc<dyn Embedder>,
    pub(super) tools: Arc<ToolManager>,
    server: ActionServer<AolTask>,
    goals: Mutex<tokio::sync::mpsc::Receiver<GoalRequest<AolTask>>>,
    pub(super) desk: OperatorDesk,
    pub(super) mounts: Mounts,
    /// Peers it may delegate to, with what each does.
    pub(super) peers: Vec<(String, String)>,
    /// Its mesh, for the delivery channels it holds.
    pub(super) mesh: Arc<crate::aem::MeshEntry>,
    /// Delivery channels it is granted that the mesh declares.
    pub(super) channels: Vec<String>,
    /// Caller of delivery bridges.
    pub(super) bridges: Arc<RosTools>,
    /// On-demand sources this expert started (stopped at shutdown).
    started: Mutex<crate::msp::demand::Started>,
    /// Its scratch, when its mesh declares a workspace its servers work in.
    pub(super) scratch: Option<ExpertScratch>,
    pub(super) ctx: NodeContext,
}

/// The model `name` as the configuration resolves it. No `models:` block: the offline
/// backend, whatever the name. With one, the offline backend still answers when every
/// configured backend fails.
pub(super) fn model_named(
    config: &Config,
    embedder: &Arc<dyn Embedder>,
    base: &Path,
    name: &str,
) -> Result<Arc<dyn ChatModel>, StartError> {
    Ok(match config.models.clone() {
        // Its claim judgment reads meanings with the local model when one was pulled.
        None if embedder.name() == crate::llm::local::MINILM_L6_V2.embedder_name => {
            Arc::new(OfflineBackend::with_meanings(embedder.clone()))
        }
        None => Arc::new(OfflineBackend::lexical()),
        Some(models) => {
            let models: ModelsConfig =
                serde_norway::from_value(models).map_err(StartError::Models)?;
            let model = ModelRegistry::new(models, base)
                .model(name)
                .map_err(|source| StartError::Model {
                    name: name.into(),
                    source,
                })?;
            Arc::new(OrOffline::new(model))
        }
    })
}

/// How long an on-demand source may take to start and show its first state.
const SOURCE_START: Duration = Duration::from_secs(5);

impl ManagedNode for ExpertNode {
    type Deps = ExpertDeps;

    async fn configure(&self, ctx: &NodeContext) -> Result<ExpertDeps, CallbackError> {
        let config = Config::load().map_err(CallbackError::refused_by)?;
        let log = AnyLog::open(&config)
            .await
            .map_err(CallbackError::refused_by)?;
        let catalog: Catalog =
            crate::aem::read_state_catalog(&config).map_err(CallbackError::refused_by)?;
        let entry = catalog.expert(&self.expert).cloned().ok_or_else(|| {
            CallbackError::refused(format!("no expert {} in the catalog", self.expert))
        })?;
        if !entry.spawnable {
            return Err(CallbackError::refused(format!(
                "{} belongs to a parked mesh",
                self.expert
            )));
        }
        let brief = ExpertBrief::from_catalog(&catalog, &self.expert).expect("the entry exists");
        // Meanings come from the model service (one copy of the weights for every expert).
        let embedder = crate::llm::embeddings::from_config_or_service(&config, &ctx.node)
            .map_err(CallbackError::refused_by)?;
        let mounts = Mounts::new(&entry, &catalog, &config).with_embedder(embedder.clone());
        let base = std::env::current_dir().map_err(CallbackError::refused_by)?;
        let model = model_named(&config, &embedder, &base, &entry.model).map_err(|e| {
            CallbackError::refused_while(format!("the model of {}", self.expert), e)
        })?;

        let (tools, scratch, key) =
            expert_tools(ctx, &config, &catalog, &entry, &log, &base).await?;

        // On-demand sources it holds and nobody serves yet are started now, and stop with it.
        let granted: Vec<(String, crate::aem::SourceEntry)> = catalog
            .mesh(&entry.mesh)
            .map(|m| {
                entry
                    .sources
                    .iter()
                    .filter_map(|s| m.sources.get(s).map(|e| (s.clone(), e.clone())))
                    .collect()
            })
            .unwrap_or_default();
        let started = crate::msp::demand::Started::start_missing(
            &ctx.node,
            &log,
            &crate::core::exe::beside_current("source_node"),
            &entry.mesh,
            &granted,
            SOURCE_START,
        )
        .await;

        let peers = catalog
            .peers(&entry.id)
            .iter()
            .map(|p| {
                let what = catalog
                    .expert(p)
                    .map(|e| e.description.clone())
                    .unwrap_or_default();
                (p.clone(), what)
            })
            .collect();
        let mesh = Arc::new(catalog.mesh(&entry.mesh).cloned().ok_or_else(|| {
            CallbackError::refused(format!("no mesh {} in the catalog", entry.mesh))
        })?);
        let channels: Vec<String> = entry
            .delivery
            .iter()
            .filter(|c| mesh.delivery.contains_key(*c))
            .cloned()
            .collect();
        let action = format!("{}/task", ctx.fqn());
        let (server, goals) =
            ActionServer::<AolTask>::new(&ctx.node, &action, ActionOptions::default())
                .map_err(CallbackError::broken_by)?;
        info!(
            "expert {} ready: model {}, {} tool(s), memory {:?}, lessons {:?}, sources {:?}",
            self.expert,
            model.name(),
            tools.model_tools().len(),
            mounts.prefixes,
            mounts.lessons,
            entry.sources,
        );
        let authority = Authority::new(&config.state_dir, &config.operators);
        let desk = OperatorDesk::new(&ctx.node, authority).map_err(CallbackError::broken_by)?;
        Ok(ExpertDeps {
            config,
            log,
            entry,
            brief,
            model,
            embedder,
            tools: Arc::new(tools),
            server,
            goals: Mutex::new(goals),
            desk,
            mounts,
            peers,
            mesh,
            channels,
            bridges: Arc::new(RosTools::new(
                ctx.node.clone(),
                Duration::from_secs(60),
                key,
            )),
            started: Mutex::new(started),
            scratch,
            ctx: ctx.clone(),
        })
    }

    async fn run(
        self: Arc<Self>,
        deps: Arc<ExpertDeps>,
        shutdown: CancellationToken,
    ) -> Result<(), RunError> {
        deps.server.set_accepting(true);
        let mut goals = deps.goals.lock().await;
        let idle = Duration::from_secs(deps.entry.idle_secs.max(1));
        loop {
            tokio::select! {
                goal = goals.recv() => {
                    let Some(goal) = goal else { break };
                    // One task at a time: an expert process is a lease on one role for one task.
                    deps.clone().work(goal).await;
                }
                _ = shutdown.cancelled() => break,
                _ = tokio::time::sleep(idle) => {
                    info!("idle for {idle:?}; shutting down");
                    let ctx = deps.ctx.clone();
                    tokio::spawn(async move { ctx.request_transition("shutdown").await });
                    break;
                }
            }
        }
        deps.server.set_accepting(false);
        Ok(())
    }

    async fn shutdown(&self, deps: Option<Arc<ExpertDeps>>) -> Result<(), CallbackError> {
        if let Some(d) = deps {
            d.tools.shutdown().await;
            if let Some(s) = &d.scratch {
                s.close().await;
            }
            d.started
                .lock()
                .await
                .stop(&d.ctx.node, Duration::from_secs(2))
                .await;
        }
        Ok(())
    }
}

/// The `workspace:` of `entry`'s mesh, if it declares one.
fn mesh_workspace<'a>(
    catalog: &'a Catalog,
    entry: &ExpertEntry,
) -> Option<&'a crate::aem::WorkspaceEntry> {
    catalog.mesh(&entry.mesh).and_then(|m| m.workspace.as_ref())
}

/// The expert's tools behind both gates: its scratch (when its mesh declares a workspace its
/// servers work in), gate 2's roots (its write-capable servers' workspace roots and the
/// scratch), the confinement of its local servers and `run_confined`, and the bridge to
/// `native`/`remote` servers; with the caller key that bridge signs with.
async fn expert_tools(
    ctx: &NodeContext,
    config: &Config,
    catalog: &Catalog,
    entry: &ExpertEntry,
    log: &AnyLog,
    base: &Path,
) -> Result<(ToolManager, Option<ExpertScratch>, CallerKey), CallbackError> {
    let recorder = Recorder {
        log: log.clone(),
        tenant: config.tenant.clone(),
        namespace: vec!["experts".into(), entry.mesh.clone(), entry.role.clone()],
        actor: entry.id.clone(),
        cause: None,
        task_id: None,
        trace: None,
    };
    let manifest_path = config.state_path(Path::new(crate::aem::TOOL_MANIFEST_FILE));
    let manifest =
        crate::aem::read_tool_manifest(&manifest_path).unwrap_or_else(|_| catalog.tool_manifest());
    let mut env = roots::scrub_env(std::env::vars().collect());
    // A scratch, when its mesh declares a workspace its servers work in: named to them by
    // IRON_SCRATCH (which no inherited environment may set) and granted by gate 2.
    let scratch = ExpertScratch::open(entry, catalog, &config.state_dir, base, ctx.node.name())
        .await
        .map_err(CallbackError::refused_by)?;
    if let Some(s) = &scratch {
        env.insert(SCRATCH_VAR.to_string(), s.dir().display().to_string());
    }
    // Gate 2 lets the expert write only in the workspace roots of its write-capable servers,
    // and in its scratch, which is also the root of the confined commands it runs.
    let (mut policy, mut granted) =
        roots::expert_policy(entry, catalog, base, &config.state_dir, &env)
            .map_err(CallbackError::refused_by)?;
    if let Some(s) = &scratch {
        policy = policy
            .grant_root(s.dir())
            .map_err(CallbackError::refused_by)?;
        granted.push(roots::GrantedRoot {
            server: confined::SERVER.to_string(),
            dir: s.dir().to_path_buf(),
        });
    }
    // `native`/`remote` servers are reached over ROS; the manager bounds each call with the
    // expert's own tool timeout, so the bridge's is only a backstop.
    let key = CallerKey::open(&config.state_dir).map_err(CallbackError::refused_by)?;
    let bridge = RosTools::new(ctx.node.clone(), Duration::from_secs(600), key.clone());
    let run_policy = mesh_workspace(catalog, entry)
        .map(|w| crate::workspace::sandbox::RunPolicy::of(w, &config.state_dir))
        .unwrap_or_default();
    // With a scratch, `run_confined` and the local servers run confined in it.
    let confinement = match &scratch {
        Some(s) => Some(confined::Confinement::locate(s.dir().to_path_buf(), run_policy).await),
        None => None,
    };
    let servers = confinement.clone().map(|confinement| {
        Arc::new(confined::ConfinedServers {
            confinement,
            store: PackageStore::from_env(|k| env.get(k).cloned()),
            cpu: Duration::from_secs(entry.timeouts.task_secs.max(1)),
        })
    });
    let remote = confined::ConfinedTools::new(Arc::new(bridge), confinement);
    let mut setup = granted.into_iter().fold(
        ManagerSetup::new(Arc::new(recorder), policy, base, env).with_remote(Arc::new(remote)),
        |setup, root| setup.with_server_root(&root.server, root.dir),
    );
    if let Some(servers) = servers {
        setup = setup.with_confinement(servers);
    }
    let tools = ToolManager::new(catalog, &manifest, &entry.id, setup)
        .map_err(CallbackError::refused_by)?;
    Ok((tools, scratch, key))
}
