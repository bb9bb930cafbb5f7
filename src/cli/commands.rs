//! What each `iron` command does.

use std::{collections::BTreeSet, time::Duration};

use tokio_util::sync::CancellationToken;

use super::{
    CatalogCommand, Cli, CliError, Command, LogCommand, MemoryCommand, NodeCommand, TaskCommand,
    ToolsCommand, bench, stop_on_signals,
};
use crate::{
    core::{config::Config, durable::StartAt},
    interfaces::{AolTask, AolTaskGoal},
    spine::control::{
        ControlConfig, ControlPlane,
        action::{ActionClient, GoalStatus},
        router::{Router, RouterConfig},
    },
    spine::durable::AnyLog,
};

/// `iron up`: optionally a NATS server first, then the launch list.
async fn up(
    launch: &std::path::Path,
    aem: &std::path::Path,
    router: &str,
    start_router: bool,
    nats: Option<String>,
    timeout: Duration,
) -> Result<(), CliError> {
    let plan = crate::launch::Plan::load(launch)?;
    let config = Config::load()?;
    // A second `iron up` on the same state directory and router would rewrite the catalog
    // and `up.json` under the first and start its nodes again beside them.
    if let Some(other) = crate::launch::Running::find(&config.state_dir, router) {
        return Err(CliError::Failed(format!(
            "another `iron up` (pid {}) is running on {} with router {router}; stop it first \
             (Ctrl-C there, or `kill {}`)",
            other.pid,
            config.state_dir.display(),
            other.pid
        )));
    }
    // The runtime reads only the compiled catalog: compile the agent folders first, refusing
    // to start on any error in them.
    if aem.is_dir() {
        let catalog = crate::aem::compile(aem)?;
        crate::aem::write_catalog(&catalog, &config.state_dir).map_err(|source| CliError::Io {
            what: format!("writing the catalog into {}", config.state_dir.display()),
            source,
        })?;
        tracing::info!(
            "catalog: {} expert(s) -> {}",
            catalog.experts.len(),
            config.state_dir.display()
        );
        if let Some(note) = super::tools::missing_note(&catalog) {
            println!("{note}");
        }
    }
    super::models::ensure_local_model().await;
    let mut env = Vec::new();
    let mut local = None;
    if let Some(nats) = nats {
        let (url, monitor) = if nats == "auto" {
            let store = config.state_path(std::path::Path::new("nats"));
            let server = crate::launch::nats::LocalNats::start(
                std::path::Path::new("config/nats-server.conf"),
                &store,
                4222,
                8222,
            )
            .await?;
            tracing::info!(
                "nats-server up at {} (store {})",
                server.url,
                store.display()
            );
            let urls = (server.url.clone(), server.monitor.clone());
            local = Some(server);
            urls
        } else {
            (
                nats,
                config.durable.nats_monitor.clone().unwrap_or_default(),
            )
        };
        env.push(("IRON_DURABLE".to_string(), "jetstream".to_string()));
        env.push(("IRON_NATS_URL".to_string(), url));
        if !monitor.is_empty() {
            env.push(("IRON_NATS_MONITOR".to_string(), monitor));
        }
    }
    // Open the durable plane once before any node: a plane that refuses to start (a drifted
    // stream, an old server) stops `iron up` with why, instead of leaving every node
    // unconfigured; its warnings are said here once, not again by every node.
    let mut plane = config.clone();
    plane.apply_env(|k| env.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone()))?;
    let plane_env = env.clone();
    if let Err(e) = AnyLog::open(&plane).await {
        if let Some(server) = local {
            server.stop().await;
        }
        return Err(CliError::Failed(format!(
            "the durable plane refused to start: {e}"
        )));
    }
    env.push((
        crate::core::config::PLANE_CHECKED_ENV.to_string(),
        "1".to_string(),
    ));
    // What `iron lifecycle list` checks a listing against; gone when `up` ends.
    let running = crate::launch::Running::of(&plan, router, &plane_env)
        .write(&config.state_dir)
        .map_err(|source| CliError::Io {
            what: format!(
                "writing {} into {}",
                crate::launch::RUNNING_FILE,
                config.state_dir.display()
            ),
            source,
        })?;
    if plan.nodes.iter().any(|n| n.executable == "console_node") {
        let token = crate::view::console::console_token(&config.state_dir).map_err(|source| {
            CliError::Io {
                what: "making the console token".into(),
                source,
            }
        })?;
        println!(
            "console: http://{}/?token={token}",
            crate::view::console::listen_address(None)
        );
    }
    if crate::core::identity::Registry::load(&config.state_dir)
        .names()
        .next()
        .is_none()
    {
        println!(
            "operators: none registered; approving hunks and jobs and answering tasks need one \
             (`iron operator add NAME`)"
        );
    }
    let shutdown = CancellationToken::new();
    stop_on_signals(shutdown.clone());
    // Every node's output is shipped to the plane just checked (`iron logs <node>`).
    plane.apply_env(|k| (k == crate::core::config::PLANE_CHECKED_ENV).then(|| "1".into()))?;
    let (shipper, shipping) = crate::view::ship::Shipper::start(plane);
    let launch = crate::launch::Launch {
        router,
        env: &env,
        shipper: &shipper,
    };
    let result = crate::launch::up(plan, launch, start_router, timeout, shutdown).await;
    drop(shipper);
    if !shipping.finish(Duration::from_secs(3)).await {
        eprintln!("some output of the nodes was not shipped before `up` ended");
    }
    drop(running);
    if let Some(server) = local {
        server.stop().await;
    }
    Ok(result?)
}

/// `iron recall --as <mesh>/<role>`: the memory block that expert would be given at wake for
/// `instruction`, from its declared mounts in the built catalog.
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

/// Runs one parsed command line.
pub async fn run(cli: Cli) -> Result<(), CliError> {
    let timeout = cli.timeout();
    match cli.command {
        Command::Router { listen, connect } => router(listen, connect).await,
        Command::WaitRouter => {
            connect(&cli.router, timeout).await?;
            println!("router at {} accepts sessions", cli.router);
            Ok(())
        }
        Command::Up {
            launch,
            aem,
            no_router,
            nats,
        } => up(&launch, &aem, &cli.router, !no_router, nats, timeout).await,
        Command::Log(LogCommand::Tail { from_start, limit }) => {
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
        Command::Log(LogCommand::Replay { prefix }) => {
            let config = super::load_config()?;
            let db = config.state_path(&config.memory.projection);
            let n = crate::memory::cli::log_replay(&db, &prefix, &mut std::io::stdout())?;
            eprintln!("{n} event(s)");
            Ok(())
        }
        Command::Recall {
            query,
            scope,
            history,
            semantic,
            graph: false,
            documents: false,
            as_expert: None,
        } => {
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
        Command::Recall {
            query,
            scope,
            documents: true,
            ..
        } => {
            let config = super::load_config()?;
            let index = crate::memory::node::Worker::Documents.state(&config);
            let out = &mut std::io::stdout();
            let n = crate::memory::cli::documents(&index, &query, scope.as_deref(), out)?;
            eprintln!("{n} passage(s)");
            Ok(())
        }
        Command::Recall {
            query,
            scope,
            graph: true,
            ..
        } => {
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
            Ok(())
        }
        Command::Recall {
            query,
            as_expert: Some(expert),
            ..
        } => recall_as(&expert, &query).await,
        Command::Memory(MemoryCommand::Save {
            source,
            scope,
            title,
            kind,
            user,
        }) => super::memory::save(&source, &scope, &title, kind.as_deref(), &user, timeout).await,
        Command::Memory(MemoryCommand::Status) => {
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
        Command::Catalog(CatalogCommand::Build { aem, out, probe }) => {
            let catalog = crate::aem::compile(&aem)?;
            let path =
                crate::aem::write_catalog(&catalog, &out).map_err(|source| CliError::Io {
                    what: format!("writing the catalog into {}", out.display()),
                    source,
                })?;
            tools_manifest(&catalog, &out, probe, timeout).await?;
            println!(
                "{} mesh(es), {} expert(s) -> {}",
                catalog.meshes.len(),
                catalog.experts.len(),
                path.display()
            );
            Ok(())
        }
        Command::Catalog(CatalogCommand::Check { aem }) => {
            let catalog = crate::aem::compile(&aem)?;
            println!(
                "ok: {} mesh(es), {} expert(s)",
                catalog.meshes.len(),
                catalog.experts.len()
            );
            Ok(())
        }
        Command::Catalog(CatalogCommand::Export { expert, out, aem }) => {
            let done = crate::aem::transfer::export_skill(&aem, &expert, &out)?;
            println!(
                "exported {expert} -> {} ({}); its capabilities.md and memory stay here",
                done.dir.display(),
                done.files.join(", ")
            );
            Ok(())
        }
        Command::Catalog(CatalogCommand::Import { folder, mesh, aem }) => {
            let done = crate::aem::transfer::import_skill(&aem, &mesh, &folder)?;
            println!(
                "imported {} -> {} ({}); it has the mesh defaults until you write its capabilities.md",
                folder.display(),
                done.dir.display(),
                done.files.join(", ")
            );
            Ok(())
        }
        Command::Tools(ToolsCommand::Import { file, discover }) => {
            tools_import(&file, discover, timeout).await
        }
        Command::Tools(ToolsCommand::Install { aem, dir }) => {
            super::tools::install(&aem, dir.as_deref()).await
        }
        Command::Node(NodeCommand::List) => {
            let (control, node) = connect(&cli.router, timeout).await?;
            for (name, ns) in discover_nodes(&control, &node, timeout).await {
                println!("{}", fqn(&ns, &name));
            }
            Ok(())
        }
        Command::Lifecycle(cmd) => super::lifecycle::run(cmd, &cli.router, timeout).await,
        Command::Task(TaskCommand::Send {
            domain,
            action,
            session,
            context,
            user,
            wait,
            instruction,
        }) => {
            let mut context = crate::protocol::TaskContext::parse(&context)
                .map_err(|e| CliError::Failed(format!("--context {context:?}: {e}")))?;
            // The sender owns the task: they may answer its questions and correct it.
            context.user_id.get_or_insert(user);
            let context = context.to_json();
            let goal = AolTaskGoal {
                task_id: uuid::Uuid::now_v7().to_string(),
                session_id: session,
                domain,
                instruction,
                depth: 0,
                parent_task_id: String::new(),
                context_json: context,
            };
            task_send(
                &cli.router,
                &action,
                goal,
                timeout,
                Duration::from_secs_f64(wait),
            )
            .await
        }
        Command::Task(TaskCommand::Answer {
            task,
            question,
            operator,
            text,
        }) => super::operator::answer(&cli.router, task, question, operator, text, timeout).await,
        Command::Task(TaskCommand::Interject {
            task,
            operator,
            text,
        }) => super::operator::interject(&cli.router, task, operator, text, timeout).await,
        Command::Task(TaskCommand::Questions { follow }) => {
            super::operator::questions(&cli.router, follow, timeout).await
        }
        Command::Inbox(command) => super::inbox::run(&cli.router, command, timeout).await,
        Command::Ask {
            question,
            user,
            session,
            wait,
        } => {
            let ask = super::ask::Ask {
                text: question.join(" "),
                user,
                session,
                wait: Duration::from_secs_f64(wait.max(1.0)),
            };
            super::ask::run(ask, &cli.router, timeout).await
        }
        Command::Jobs(command) => super::jobs::run(command).await,
        Command::Hunks(command) => super::hunks::run(command).await,
        Command::Logs { node, last, follow } => super::logs::logs(node, last, follow).await,
        Command::Ship {
            node,
            flush_secs,
            command,
        } => super::logs::ship(node, flush_secs, command).await,
        Command::Msp(command) => super::msp::run(command, &cli.router, timeout).await,
        Command::Bench(args) => bench::run(args, timeout).await,
        Command::Eval(command) => super::eval::run(command).await,
        Command::Models(command) => super::models::run(command).await,
        Command::Sandbox(command) => super::sandbox::run(command).await,
        Command::Operator(command) => super::operators::run(command),
    }
}

async fn router(listen: Vec<String>, connect: Vec<String>) -> Result<(), CliError> {
    let router = Router::start(RouterConfig { listen, connect }).await?;
    tracing::info!(
        "router {} listening on {}",
        router.zid(),
        router.listen().join(", ")
    );
    let shutdown = CancellationToken::new();
    stop_on_signals(shutdown.clone());
    router.run(shutdown).await?;
    Ok(())
}

/// Opens a session and a client node, and waits for the router.
pub(super) async fn connect(
    router: &str,
    timeout: Duration,
) -> Result<(ControlPlane, hiroz::node::ZNode), CliError> {
    let config = ControlConfig {
        router: router.to_string(),
        ..ControlConfig::from_env()?
    };
    let control = ControlPlane::connect(config).await?;
    let node = control.node(&format!("iron_cli_{}", std::process::id()), "/")?;
    control.wait_for_router(&node, timeout).await?;
    Ok((control, node))
}

fn fqn(ns: &str, name: &str) -> String {
    if ns.is_empty() || ns == "/" {
        format!("/{name}")
    } else {
        format!("{}/{name}", ns.trim_end_matches('/'))
    }
}

/// Nodes seen on the graph, once discovery has settled (or `timeout` passed).
async fn discover_nodes(
    control: &ControlPlane,
    me: &hiroz::node::ZNode,
    timeout: Duration,
) -> BTreeSet<(String, String)> {
    let graph = control.context().graph();
    let mut seen = BTreeSet::new();
    let mut stable = 0;
    let until = tokio::time::Instant::now() + timeout.min(Duration::from_secs(2));
    while tokio::time::Instant::now() < until && stable < 5 {
        tokio::time::sleep(Duration::from_millis(100)).await;
        let now: BTreeSet<_> = graph
            .get_node_names()
            .into_iter()
            .filter(|(name, _)| name != me.name())
            .collect();
        stable = if now == seen { stable + 1 } else { 0 };
        seen = now;
    }
    seen
}

async fn task_send(
    router: &str,
    action: &str,
    goal: AolTaskGoal,
    timeout: Duration,
    wait: Duration,
) -> Result<(), CliError> {
    let (_control, node) = connect(router, timeout).await?;
    // Subscribed before the goal goes out, so a refusal's published reason is caught.
    let client = ActionClient::<AolTask>::new(&node, action)?.with_rejections(&node)?;
    let task_id = goal.task_id.clone();
    let mut sent = client.send(goal, timeout).await?;
    eprintln!("task {task_id} accepted as goal {}", sent.id);
    let interrupted = CancellationToken::new();
    stop_on_signals(interrupted.clone());
    let result = client.result(sent.id, wait);
    tokio::pin!(result);
    let outcome = loop {
        tokio::select! {
            Some(fb) = sent.feedback.recv() => {
                let progress = if fb.progress >= 0.0 { format!(" {:.0}%", fb.progress * 100.0) } else { String::new() };
                println!("[{}{}] {}", fb.stage, progress, fb.message);
            }
            outcome = &mut result => break outcome?,
            _ = interrupted.cancelled() => {
                eprintln!("canceling…");
                client.cancel(Some(sent.id), timeout).await?;
                break client.result(sent.id, timeout * 2).await?;
            }
        }
    };
    while let Ok(fb) = sent.feedback.try_recv() {
        println!("[{}] {}", fb.stage, fb.message);
    }
    let r = outcome.result;
    println!(
        "{}",
        serde_json::json!({
            "goal_status": format!("{:?}", outcome.status).to_lowercase(),
            "status": r.status,
            "text": r.text,
            "result": serde_json::from_str::<serde_json::Value>(&r.result_json).unwrap_or(serde_json::Value::String(r.result_json.clone())),
        })
    );
    match outcome.status {
        GoalStatus::Succeeded => Ok(()),
        other => Err(CliError::Failed(format!("the task ended {other:?}"))),
    }
}

/// After a catalog build: probe the local servers, or report which recorded probes are stale.
async fn tools_manifest(
    catalog: &crate::aem::Catalog,
    out: &std::path::Path,
    probe: bool,
    timeout: Duration,
) -> Result<(), CliError> {
    let io = |source| CliError::Io {
        what: format!("the tool manifest in {}", out.display()),
        source,
    };
    if !probe {
        let status = crate::tools::probe::manifest_status(out).map_err(io)?;
        if !status.stale.is_empty() {
            eprintln!(
                "stale probes (descriptor changed; run with --probe): {}",
                status.stale.join(", ")
            );
        }
        if !status.unprobed.is_empty() {
            eprintln!("never probed: {}", status.unprobed.join(", "));
        }
        return Ok(());
    }
    let options = crate::tools::probe::ProbeOptions {
        env: std::env::vars().collect(),
        workdir: std::env::current_dir().map_err(io)?,
        start_timeout: timeout.max(Duration::from_secs(30)),
    };
    let report = crate::tools::probe::probe(catalog, out, &options)
        .await
        .map_err(io)?;
    println!("probed: {}", report.probed.join(", "));
    for (server, why) in &report.failed {
        eprintln!("could not probe {server}: {why}");
    }
    for (server, tool) in &report.missing {
        eprintln!("{server} does not offer the declared tool {tool}");
    }
    for c in &report.conflicts {
        eprintln!(
            "{}: {} cannot be held at clearance {:?}: {}",
            c.expert, c.tool, c.clearance, c.detail
        );
    }
    if !report.conflicts.is_empty() {
        return Err(CliError::Failed(format!(
            "{} grant(s) conflict with the servers' live annotations",
            report.conflicts.len()
        )));
    }
    Ok(())
}

/// `iron tools import`.
async fn tools_import(
    file: &std::path::Path,
    discover: bool,
    timeout: Duration,
) -> Result<(), CliError> {
    let text = std::fs::read_to_string(file).map_err(|source| CliError::Io {
        what: format!("reading {}", file.display()),
        source,
    })?;
    let mut imported =
        crate::tools::import::import(&text).map_err(|e| CliError::Failed(e.to_string()))?;
    for (name, why) in &imported.skipped {
        eprintln!("skipped {name}: {why}");
    }
    if discover {
        let env: crate::tools::env::EnvMap = std::env::vars().collect();
        let workdir = std::env::current_dir().map_err(|source| CliError::Io {
            what: "the working directory".into(),
            source,
        })?;
        for server in &mut imported.servers {
            match crate::tools::import::discover_tools(
                server,
                &env,
                &workdir,
                timeout.max(Duration::from_secs(30)),
            )
            .await
            {
                Ok(tools) => server.tools = tools,
                Err(e) => eprintln!("could not list the tools of {}: {e}", server.name),
            }
        }
    }
    print!("{}", crate::tools::import::render_yaml(&imported.servers));
    Ok(())
}
