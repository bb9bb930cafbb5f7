//! `iron bench …`: measurements printed as `bench <name> <value> <unit>`; never asserted.

use std::time::{Duration, Instant};

use std::sync::Arc;

use super::{
    BenchArgs, BenchCommand, CliError,
    bench_stats::{BenchEnv, BenchNats, Figures, PrivateRouter, beside_iron, pct, scratch_dir, us},
};
use crate::{
    interfaces::{AolTask, AolTaskGoal},
    spine::control::{
        action::{ActionClient, GoalStatus},
        demo::echo_key,
        lifecycle::LifecycleClient,
    },
    tools::{
        MemoryEvents, RecordError, ToolEvent, ToolEvents, bench::EventSink, events::RecordFuture,
    },
};

/// Runs `iron bench …`: each count as given, else the bench's own (small ones with
/// `--smoke`).
pub(super) async fn run(args: BenchArgs, timeout: Duration) -> Result<(), CliError> {
    let smoke = args.smoke;
    // A count: as given, else the smoke or the full default.
    let n = |given: Option<usize>, full: usize, small: usize| {
        given.unwrap_or(if smoke { small } else { full })
    };
    match args.bench {
        BenchCommand::Control { iterations } => control(n(iterations, 2000, 20), timeout).await,
        BenchCommand::Log {
            events,
            burst,
            nats,
        } => log(n(events, 5000, 50), n(burst, 10_000, 100), nats).await,
        BenchCommand::Tools { calls, nats } => tools(n(calls, 500, 5), nats).await,
        BenchCommand::Cognition {
            messages,
            rate,
            starts,
        } => {
            super::bench_cognition::cognition(
                n(messages, 5000, 50),
                rate,
                n(starts, 30, 1),
                timeout,
            )
            .await
        }
        BenchCommand::Workspace {
            files,
            scratches,
            runs,
        } => {
            super::bench_workspace::workspace(
                n(files, 10_000, 50),
                n(scratches, 10, 2),
                n(runs, 200, 10),
            )
            .await
        }
        BenchCommand::Memory {
            corpus,
            burst,
            queries,
            dir,
        } => {
            memory(
                n(corpus, 1_000_000, 1000),
                n(burst, 10_000, 100),
                n(queries, 500, 10),
                dir,
            )
            .await
        }
        BenchCommand::Routing { set, aem } => routing(&set, &aem),
        BenchCommand::Newsroom { feeds, items, new } => {
            // A smoke run's first bulletin comes in seconds; a stuck one fails in minutes, not ten.
            let first_within = Duration::from_secs(if smoke { 120 } else { 600 });
            super::bench_newsroom::newsroom(
                n(feeds, 20, 2),
                n(items, 1000, 10),
                n(new, 5, 1),
                first_within,
            )
            .await
        }
        BenchCommand::Jobs {
            steps,
            resume_steps,
            python,
            nats,
        } => {
            super::jobs::bench(
                n(steps, 2000, 20),
                n(resume_steps, 10_000, 20),
                python,
                nats,
            )
            .await
        }
        BenchCommand::Console {
            events,
            clients,
            tasks,
        } => {
            super::bench_console::console(
                n(events, 20_000, 200),
                n(clients, 20, 2),
                n(tasks, 40, 2),
                timeout,
            )
            .await
        }
        BenchCommand::Catalog { experts } => catalog(n(experts, 1000, 10)),
        BenchCommand::Embed { sentences, dir } => {
            super::bench_embed::embed(n(sentences, 1024, 64), dir).await
        }
        BenchCommand::EchoServer => {
            crate::tools::bench::serve_echo()
                .await
                .map_err(|source| CliError::Io {
                    what: "serving the echo tool".into(),
                    source,
                })
        }
    }
}

/// `iron bench control`: an AolTask round trip for an empty goal (send_goal with get_result
/// pipelined, see `ActionClient::run`) against a raw Zenoh query round trip, both between
/// this process and one demo node process, interleaved so machine noise hits both alike.
pub(super) async fn control(iterations: usize, timeout: Duration) -> Result<(), CliError> {
    super::bench_stats::print_machine("control");
    let router = PrivateRouter::start().await?;
    let endpoint = router.endpoint.clone();
    let exe = beside_iron("demo_node")?;
    let mut demo = BenchEnv::new()
        .router(&endpoint)
        .command(&exe)
        .args([
            "--ros-args",
            "-r",
            "__node:=bench",
            "-r",
            "__ns:=/iron",
            "--log-level",
            "warn",
        ])
        .kill_on_drop(true)
        .spawn()
        .map_err(|source| CliError::Io {
            what: format!("starting {}", exe.display()),
            source,
        })?;

    let (_control, node) = super::connect::connect(&endpoint, timeout).await?;
    let life = LifecycleClient::watching(&node, "/iron/bench", timeout * 3)?;
    life.activate().await?;
    let actions = ActionClient::<AolTask>::new(&node, "/iron/bench/task")?;
    let session = node.session().clone();
    let key = echo_key("/iron/bench");

    let goal_round_trip = || async {
        let started = Instant::now();
        let outcome = actions.run(AolTaskGoal::default(), timeout).await?;
        if outcome.status != GoalStatus::Succeeded {
            return Err(CliError::Failed(format!("goal ended {:?}", outcome.status)));
        }
        Ok::<_, CliError>(started.elapsed())
    };
    let query_round_trip = || async {
        let started = Instant::now();
        let replies = session
            .get(&key)
            .payload(vec![0u8; 16])
            .timeout(timeout)
            .await
            .map_err(|source| crate::spine::control::ControlError::Call {
                what: format!("query {key}"),
                source,
            })?;
        match replies.recv_async().await {
            Ok(reply) if reply.result().is_ok() => Ok::<_, CliError>(started.elapsed()),
            _ => Err(CliError::Failed(format!("no echo from {key}"))),
        }
    };

    // Warm up both paths (routing tables, connections, allocations).
    for _ in 0..iterations.min(200) {
        goal_round_trip().await?;
        query_round_trip().await?;
    }
    let mut goals = Vec::with_capacity(iterations);
    let mut queries = Vec::with_capacity(iterations);
    for _ in 0..iterations {
        goals.push(goal_round_trip().await?);
        queries.push(query_round_trip().await?);
    }
    goals.sort();
    queries.sort();

    let (g50, g99, q50, q99) = (
        pct(&goals, 50.0),
        pct(&goals, 99.0),
        pct(&queries, 50.0),
        pct(&queries, 99.0),
    );
    let mut figs = Figures::default();
    figs.line(format!("bench control.iterations {iterations} count"));
    figs.line(format!(
        "bench control.aoltask_empty_goal_p50 {:.1} us",
        us(g50)
    ));
    figs.line(format!(
        "bench control.aoltask_empty_goal_p99 {:.1} us",
        us(g99)
    ));
    figs.line(format!("bench control.zenoh_query_p50 {:.1} us", us(q50)));
    figs.line(format!("bench control.zenoh_query_p99 {:.1} us", us(q99)));
    figs.line(format!(
        "bench control.ratio_p50 {:.2} x",
        us(g50) / us(q50)
    ));
    figs.line(format!(
        "bench control.ratio_p99 {:.2} x",
        us(g99) / us(q99)
    ));

    figs.print();
    let _ = life.set("deactivate").await;
    let _ = life.set("shutdown").await;
    let _ = tokio::time::timeout(timeout, demo.wait()).await;
    router.stop().await;
    Ok(())
}

/// `iron bench catalog`: generates a mesh of `experts` experts in a temporary directory and
/// times one compile of it and the writing of its files (`catalog.json`, the tool manifest),
/// as `iron catalog build` does; prints the catalog's size.
pub(super) fn catalog(experts: usize) -> Result<(), CliError> {
    super::bench_stats::print_machine("catalog");
    let io = |what: &str| {
        let what = what.to_string();
        move |source| CliError::Io { what, source }
    };
    let dir = tempfile::tempdir().map_err(io("creating a temporary directory"))?;
    crate::aem::bench::generate_mesh(dir.path(), experts).map_err(io("generating the mesh"))?;
    let started = Instant::now();
    let catalog = crate::aem::compile(dir.path())?;
    let compiled = started.elapsed();
    let out = dir.path().join("out");
    let written = crate::aem::write_catalog(&catalog, &out).map_err(io("writing the catalog"))?;
    let took = started.elapsed();
    let size = std::fs::metadata(&written)
        .map_err(io("reading the catalog's size"))?
        .len();
    if catalog.experts.len() != experts {
        return Err(CliError::Failed(format!(
            "compiled {} experts, expected {experts}",
            catalog.experts.len()
        )));
    }
    println!(
        "bench catalog.build_and_write_{experts} {:.1} ms (compile {:.1} ms)",
        took.as_secs_f64() * 1000.0,
        compiled.as_secs_f64() * 1000.0
    );
    println!(
        "bench catalog.size_{experts} {:.1} KiB",
        size as f64 / 1024.0
    );
    Ok(())
}

/// `iron bench log`: against `nats` if given, else a local nats-server on free ports with its
/// store in a temporary directory.
pub(super) async fn log(events: usize, burst: usize, nats: Option<String>) -> Result<(), CliError> {
    super::bench_stats::print_machine("log");
    use crate::spine::durable::{JetStream, JetStreamOptions};
    let dir = scratch_dir()?;
    let nats = BenchNats::given_or_local(nats, dir.path()).await?;
    let result = async {
        let js = JetStream::connect(&nats.url, JetStreamOptions::default())
            .await
            .map_err(|e| CliError::Failed(format!("cannot reach NATS at {}: {e}", nats.url)))?;
        let options = crate::memory::bench::BenchOptions {
            events,
            burst,
            payload_bytes: 256,
            scratch_dir: dir.path().join("sqlite"),
        };
        // Written whole once measured, so the ratios can lead.
        let mut out = Vec::new();
        crate::memory::bench::log(&js, &options, &mut out).await?;
        Ok::<_, CliError>(out)
    }
    .await;
    nats.stop().await;
    let mut figs = Figures::default();
    figs.lines_of(&result?);
    figs.print();
    Ok(())
}

/// `iron bench memory`: in a temporary directory (or `dir`, kept, to inspect the databases).
pub(super) async fn memory(
    corpus: usize,
    burst: usize,
    queries: usize,
    dir: Option<std::path::PathBuf>,
) -> Result<(), CliError> {
    super::bench_stats::print_machine("memory");
    let temp = tempfile::tempdir().map_err(|source| CliError::Io {
        what: "creating a temporary directory".into(),
        source,
    })?;
    let options = crate::memory::bench_memory::MemoryBenchOptions {
        corpus,
        burst,
        queries,
        scratch_dir: dir.unwrap_or_else(|| temp.path().to_path_buf()),
    };
    eprintln!(
        "building a projection of {corpus} events in {} (this takes a while)",
        options.scratch_dir.display()
    );
    Ok(crate::memory::bench_memory::memory(&options, &mut std::io::stdout()).await?)
}

/// `iron bench tools`: a managed call (the manager, both gates, its two events) against a
/// direct call, on an MCP server's echo tool (`iron bench echo-server`, this same program, so
/// the bench needs nothing the release build does not make), with the events kept in memory,
/// on the embedded log and on JetStream (`nats`, or a local server).
pub(super) async fn tools(calls: usize, nats: Option<String>) -> Result<(), CliError> {
    super::bench_stats::print_machine("tools");
    let server = std::env::current_exe().map_err(|source| CliError::Io {
        what: "finding the iron executable".into(),
        source,
    })?;
    let dir = scratch_dir()?;
    let nats = BenchNats::given_or_local(nats, dir.path()).await?;
    let result = async {
        let open = |backend, nats_url: &str| {
            let mut config = crate::core::config::Config {
                state_dir: dir.path().join("state"),
                ..Default::default()
            };
            config.durable.backend = backend;
            config.durable.nats_url = nats_url.to_string();
            config.durable.checked = true;
            async move { crate::spine::durable::AnyLog::open(&config).await }
        };
        use crate::core::config::Backend;
        let sink = |name: &str, events: Arc<dyn ToolEvents>| EventSink {
            name: name.into(),
            events,
        };
        let bench = crate::tools::bench::ToolsBench {
            command: server.display().to_string(),
            args: vec!["bench".into(), "echo-server".into()],
            tool: "echo".into(),
            arguments: serde_json::json!({"text": "ping"}),
            calls,
            env: BenchEnv::new().vars(),
            sinks: vec![
                sink("memory", Arc::new(MemoryEvents::default())),
                sink(
                    "embedded",
                    Arc::new(LogEvents(open(Backend::Embedded, "").await?)),
                ),
                sink(
                    "jetstream",
                    Arc::new(LogEvents(open(Backend::Jetstream, &nats.url).await?)),
                ),
            ],
        };
        crate::tools::bench::tools(&bench, &mut std::io::stdout())
            .await
            .map_err(|source| CliError::Io {
                what: "bench tools".into(),
                source,
            })
    }
    .await;
    nats.stop().await;
    result.map(|_| ())
}

/// Tool events written to a durable log through `emit()`, under `tasks/<task>`, as an
/// expert's are.
struct LogEvents(crate::spine::durable::AnyLog);

impl ToolEvents for LogEvents {
    fn record(&self, event: ToolEvent) -> RecordFuture<'_> {
        use crate::core::{envelope::Envelope, ids::EventId};
        Box::pin(async move {
            let mut envelope = Envelope::new(
                "default",
                ["tasks", event.task.as_str()],
                event.actor.clone(),
                event.kind.into(),
                event.payload(),
            );
            if let Some(cause) = event.cause.as_deref().and_then(|c| EventId::parse(c).ok()) {
                envelope = envelope.with_cause(cause);
            }
            crate::memory::emit(&self.0, &envelope)
                .await
                .map(|e| e.event_id.to_string())
                .map_err(|e| RecordError(e.to_string()))
        })
    }
}

/// The offline router the engine makes of `catalog` with no model: unmatched work goes to
/// `core/assistant` when it is spawnable.
pub(super) fn offline_router(
    catalog: &crate::aem::Catalog,
) -> Result<crate::llm::router::OfflineRouter, CliError> {
    let router = crate::llm::router::OfflineRouter::new(catalog);
    match catalog
        .expert("core/assistant")
        .is_some_and(|e| e.spawnable)
    {
        true => router
            .with_fallback("core/assistant")
            .map_err(|e| CliError::Failed(e.to_string())),
        false => Ok(router),
    }
}

/// `iron bench routing`: the offline router on a labelled set.
pub(super) fn routing(set: &std::path::Path, aem: &std::path::Path) -> Result<(), CliError> {
    super::bench_stats::print_machine("routing");
    let catalog = crate::aem::compile(aem)?;
    let router = offline_router(&catalog)?;
    let text = std::fs::read_to_string(set).map_err(|source| CliError::Io {
        what: format!("reading {}", set.display()),
        source,
    })?;
    let report = crate::llm::router::accuracy(&router, &text)
        .map_err(|e| CliError::Failed(format!("{}: {e}", set.display())))?;
    for miss in &report.misses {
        println!("miss {miss}");
    }
    println!(
        "bench routing.accuracy {:.1} % ({} of {} cases, {})",
        report.accuracy() * 100.0,
        report.cases - report.misses.len(),
        report.cases,
        set.display()
    );
    Ok(())
}
