//! `iron bench …`: measurements printed as `bench <name> <value> <unit>`; never asserted.

use std::time::{Duration, Instant};

use std::sync::Arc;

use super::{
    CliError,
    bench_stats::{BenchNats, Figures, PrivateRouter, beside_iron, pct, scratch_dir, us},
};
use crate::{
    interfaces::{AolTask, AolTaskGoal},
    spine::control::{
        ROUTER_ENV,
        action::{ActionClient, GoalStatus},
        demo::echo_key,
        lifecycle::LifecycleClient,
    },
    tools::{
        MemoryEvents, RecordError, ToolEvent, ToolEvents, bench::EventSink, events::RecordFuture,
    },
};

/// `iron bench control`: an AolTask round trip for an empty goal (send_goal with get_result
/// pipelined, see `ActionClient::run`) against a raw Zenoh query round trip, both between
/// this process and one demo node process, interleaved so machine noise hits both alike.
pub(super) async fn control(iterations: usize, timeout: Duration) -> Result<(), CliError> {
    super::bench_stats::print_machine("control");
    let router = PrivateRouter::start().await?;
    let endpoint = router.endpoint.clone();
    let exe = beside_iron("demo_node")?;
    let mut demo = tokio::process::Command::new(&exe)
        .args([
            "--ros-args",
            "-r",
            "__node:=bench",
            "-r",
            "__ns:=/iron",
            "--log-level",
            "warn",
        ])
        .env(ROUTER_ENV, &endpoint)
        .kill_on_drop(true)
        .spawn()
        .map_err(|source| CliError::Io {
            what: format!("starting {}", exe.display()),
            source,
        })?;

    let (_control, node) = super::commands::connect(&endpoint, timeout).await?;
    let life = LifecycleClient::new(&node, "/iron/bench", timeout * 3)?;
    for step in ["configure", "activate"] {
        if !life.set(step).await? {
            return Err(CliError::Failed(format!("demo node refused {step}")));
        }
    }
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
/// direct call, on our MCP test server (beside `iron`) and its echo tool, with the events
/// kept in memory, on the embedded log and on JetStream (`nats`, or a local server).
pub(super) async fn tools(calls: usize, nats: Option<String>) -> Result<(), CliError> {
    super::bench_stats::print_machine("tools");
    // The test server is built only with the `test-support` feature.
    let server = beside_iron("mcp_test_server").map_err(|_| {
        CliError::Failed(
            "mcp_test_server is not beside iron; run `cargo build --release --bins --features test-support`"
                .into(),
        )
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
            args: Vec::new(),
            tool: "echo".into(),
            arguments: serde_json::json!({"text": "ping"}),
            calls,
            env: std::env::vars().collect(),
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

/// `iron bench routing`: the offline router on a labelled set.
pub(super) fn routing(set: &std::path::Path, aem: &std::path::Path) -> Result<(), CliError> {
    super::bench_stats::print_machine("routing");
    use crate::llm::router::{OfflineRouter, accuracy};
    let catalog = crate::aem::compile(aem)?;
    let mut router = OfflineRouter::new(&catalog);
    if catalog
        .expert("core/assistant")
        .is_some_and(|e| e.spawnable)
    {
        router = router
            .with_fallback("core/assistant")
            .map_err(|e| CliError::Failed(e.to_string()))?;
    }
    let text = std::fs::read_to_string(set).map_err(|source| CliError::Io {
        what: format!("reading {}", set.display()),
        source,
    })?;
    let report = accuracy(&router, &text)
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
