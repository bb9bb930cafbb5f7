//! What each `iron` command does.

use std::{collections::BTreeSet, time::Duration};

use tokio_util::sync::CancellationToken;

use super::{
    Cli, CliError, Command, MemoryCommand, NodeCommand, bench, connect::connect, stop_on_signals,
};
use crate::{
    core::config::Config,
    spine::control::{
        ControlPlane,
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
        compile_into_state(aem, &config)?;
    }
    super::models::ensure_local_model().await;
    let (mut env, local) = match nats {
        Some(nats) => nats_plane(nats, &config).await?,
        None => (Vec::new(), None),
    };
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
    announce(&plan, &config)?;
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

/// Compiles the agent folders `aem` into the state directory's catalog, and says which tool
/// servers are missing.
fn compile_into_state(aem: &std::path::Path, config: &Config) -> Result<(), CliError> {
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
    Ok(())
}

/// The environment that puts every node on the NATS server `nats` (`auto`: one started here,
/// storing under the state directory, returned so that it stops with `up`).
async fn nats_plane(
    nats: String,
    config: &Config,
) -> Result<
    (
        Vec<(String, String)>,
        Option<crate::launch::nats::LocalNats>,
    ),
    CliError,
> {
    let mut local = None;
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
    let mut env = vec![
        ("IRON_DURABLE".to_string(), "jetstream".to_string()),
        ("IRON_NATS_URL".to_string(), url),
    ];
    if !monitor.is_empty() {
        env.push(("IRON_NATS_MONITOR".to_string(), monitor));
    }
    Ok((env, local))
}

/// Tells the person starting `up` where the console is (with its token) and that no operator
/// is registered, when none is.
fn announce(plan: &crate::launch::Plan, config: &Config) -> Result<(), CliError> {
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
        Command::Log(command) => super::recall::log(command).await,
        Command::Recall(args) => super::recall::recall(args).await,
        Command::Memory(MemoryCommand::Save {
            source,
            scope,
            title,
            kind,
            user,
        }) => super::memory::save(&source, &scope, &title, kind.as_deref(), &user, timeout).await,
        Command::Memory(MemoryCommand::Status) => super::recall::status().await,
        Command::Catalog(command) => super::catalog::run(command, timeout).await,
        Command::New(command) => super::new::run(command),
        Command::Desk(command) => super::desk::run(command).await,
        Command::Tools(command) => super::tools::run(command, timeout).await,
        Command::Node(NodeCommand::List) => {
            let (control, node) = connect(&cli.router, timeout).await?;
            for (name, ns) in discover_nodes(&control, &node, timeout).await {
                println!("{}", fqn(&ns, &name));
            }
            Ok(())
        }
        Command::Lifecycle(cmd) => super::lifecycle::run(cmd, &cli.router, timeout).await,
        Command::Task(command) => super::task::run(command, &cli.router, timeout).await,
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
