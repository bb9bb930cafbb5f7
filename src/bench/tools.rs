//! `iron bench tools`: what a managed call costs — the manager, both gates and the two
//! durable events it writes — against a direct `rmcp` call to the same server. Prints
//! `bench tools.<name> <value> <unit>` lines, the ratios first.
//!
//! The same server program is started once as a bare `rmcp` client over the child's pipes,
//! and once behind a [`ToolManager`] per event sink (an expert of clearance `full` granted
//! the one tool, both gates and the event port in the path). Every side is warmed up with one
//! call, then all are called `calls` times in turn, so machine noise hits them alike; the
//! figures are medians (p50) of wall time per call.

use super::BenchError;
use super::stats::{BenchEnv, BenchNats, scratch_dir};
use crate::tools::env::EnvMap;
use crate::tools::events::{RecordFuture, ToolEvents};
use crate::tools::paths::PathPolicy;
use crate::tools::{CallContext, ManagerSetup, MemoryEvents, RecordError, ToolEvent, ToolManager};
use rmcp::ServiceExt;
use rmcp::model::{CallToolRequestParams, ClientCapabilities, ClientConfig, Implementation};
use serde_json::Value;
use std::fmt::Write as _;
use std::io::{self, Write};
use std::process::Stdio;
use std::sync::Arc;
use std::time::Instant;

/// What to measure.
#[derive(Debug, Clone)]
pub struct ToolsBench {
    /// Server program (e.g. the path of `mcp_test_server`).
    pub command: String,
    /// Its arguments.
    pub args: Vec<String>,
    /// Tool to call.
    pub tool: String,
    /// Arguments of each call.
    pub arguments: Value,
    /// Calls per side.
    pub calls: usize,
    /// Environment references expand from (PATH is passed through).
    pub env: EnvMap,
    /// Where the managed calls' events go, one managed series each (at least one).
    pub sinks: Vec<EventSink>,
}

/// A named event port for one managed series (`memory`, `embedded`, `jetstream`, …).
#[derive(Clone)]
pub struct EventSink {
    /// A word for the figures' names (`tools.managed_<name>_p50`).
    pub name: String,
    /// The port.
    pub events: Arc<dyn ToolEvents>,
}

impl std::fmt::Debug for EventSink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EventSink")
            .field("name", &self.name)
            .finish()
    }
}

/// One printed figure.
#[derive(Debug, Clone, PartialEq)]
pub struct BenchLine {
    /// `tools.<name>`.
    pub name: String,
    /// Value.
    pub value: f64,
    /// Unit.
    pub unit: &'static str,
}

fn invalid(e: impl std::fmt::Display) -> io::Error {
    io::Error::other(e.to_string())
}

/// Runs the benchmark, writes its lines to `out`, and returns them.
///
/// Long because it is the bench's script: its series run in order in one run, and the lines it
/// prints follow that order; split, the order would be spread over functions.
pub async fn tools(bench: &ToolsBench, out: &mut dyn Write) -> io::Result<Vec<BenchLine>> {
    if bench.sinks.is_empty() {
        return Err(io::Error::other(
            "bench tools needs at least one event sink",
        ));
    }
    let calls = bench.calls.max(1);
    let dir = tempfile_dir()?;
    let project = dir.join("project");
    let mesh = project.join("aem/bench");
    std::fs::create_dir_all(mesh.join("skills/caller"))?;
    std::fs::create_dir_all(project.join("work"))?;
    let q = |s: &str| Value::String(s.to_string()).to_string();
    let args: Vec<String> = bench.args.iter().map(|a| q(a)).collect();
    let mut aem_md = String::new();
    let _ = write!(
        aem_md,
        "---\nname: bench\nstatus: active\ndefaults:\n  model: scripted\n  clearance: full\nservers:\n  target:\n    transport: local\n    command: {}\n    args: [{}]\n    tools: [{}]\n---\n\nBenchmark mesh.\n",
        q(&bench.command),
        args.join(", "),
        q(&bench.tool)
    );
    std::fs::write(mesh.join("AEM.md"), aem_md)?;
    std::fs::write(
        mesh.join("skills/caller/SKILL.md"),
        "---\nname: caller\nidentity: The benchmark caller.\ndescription: Calls one tool many times.\n---\n\nCall the tool.\n",
    )?;
    std::fs::write(
        mesh.join("skills/caller/capabilities.md"),
        format!(
            "---\nclearance: full\ntools:\n  add: [{}]\n---\n\nBenchmark.\n",
            q(&format!("target/{}", bench.tool))
        ),
    )?;
    let catalog = crate::aem::compile(&project.join("aem")).map_err(invalid)?;
    let manifest = catalog.tool_manifest();
    let mut managers = Vec::with_capacity(bench.sinks.len());
    for sink in &bench.sinks {
        let paths =
            PathPolicy::new(&project, &project.join("build"))?.grant_root(&project.join("work"))?;
        let setup = ManagerSetup::new(
            sink.events.clone(),
            paths,
            project.join("work"),
            bench.env.clone(),
        );
        managers
            .push(ToolManager::new(&catalog, &manifest, "bench/caller", setup).map_err(invalid)?);
    }
    let ctx = CallContext::task("bench");

    // Direct: rmcp over the child's pipes, nothing else.
    let mut child = tokio::process::Command::new(&bench.command)
        .args(&bench.args)
        .env_clear()
        .envs(bench.env.get("PATH").map(|p| ("PATH", p.clone())))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()?;
    let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
        return Err(io::Error::other("no pipes"));
    };
    let direct = ClientConfig::new(
        ClientCapabilities::default(),
        Implementation::new("iron-bench", env!("CARGO_PKG_VERSION")),
    )
    .serve((stdout, stdin))
    .await
    .map_err(invalid)?;
    let params = || {
        let p = CallToolRequestParams::new(bench.tool.clone());
        match &bench.arguments {
            Value::Object(m) => p.with_arguments(m.clone()),
            _ => p,
        }
    };

    let mut direct_t = Vec::with_capacity(calls);
    let mut managed_t = vec![Vec::with_capacity(calls); managers.len()];
    direct.peer().call_tool(params()).await.map_err(invalid)?;
    for manager in &managers {
        manager
            .call_tool("target", &bench.tool, bench.arguments.clone(), &ctx)
            .await
            .map_err(invalid)?;
    }
    for _ in 0..calls {
        let t = Instant::now();
        direct.peer().call_tool(params()).await.map_err(invalid)?;
        direct_t.push(t.elapsed());
        for (manager, times) in managers.iter().zip(&mut managed_t) {
            let t = Instant::now();
            manager
                .call_tool("target", &bench.tool, bench.arguments.clone(), &ctx)
                .await
                .map_err(invalid)?;
            times.push(t.elapsed());
        }
    }
    let _ = direct.cancel().await;
    let _ = child.kill().await;
    for manager in &managers {
        manager.shutdown().await;
    }
    let _ = std::fs::remove_dir_all(&dir);

    let p50 = |samples| crate::core::stats::percentile_of(samples, 50.0).as_secs_f64() * 1e6;
    let d = p50(direct_t);
    let line = |name: String, value: f64, unit: &'static str| BenchLine { name, value, unit };
    let managed: Vec<(&str, f64)> = bench
        .sinks
        .iter()
        .zip(managed_t)
        .map(|(sink, times)| (sink.name.as_str(), p50(times)))
        .collect();
    let mut lines: Vec<BenchLine> = managed
        .iter()
        .map(|(name, m)| {
            let ratio = if d > 0.0 { m / d } else { 0.0 };
            line(format!("tools.ratio_{name}_p50"), ratio, "x")
        })
        .collect();
    lines.push(line("tools.calls".into(), calls as f64, "calls"));
    lines.push(line("tools.direct_p50".into(), d, "us"));
    for (name, m) in &managed {
        lines.push(line(format!("tools.managed_{name}_p50"), *m, "us"));
        lines.push(line(format!("tools.overhead_{name}_p50"), m - d, "us"));
    }
    for l in &lines {
        writeln!(out, "bench {} {:.2} {}", l.name, l.value, l.unit)?;
    }
    Ok(lines)
}

fn tempfile_dir() -> io::Result<std::path::PathBuf> {
    let base = std::env::temp_dir().join(format!(
        "iron-bench-tools-{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or_default()
    ));
    std::fs::create_dir_all(&base)?;
    Ok(base)
}

/// The server `iron bench tools` measures against: one tool, `echo`, that returns its
/// `text`, served over stdin and stdout until the client leaves.
pub async fn serve_echo() -> io::Result<()> {
    let service = echo::EchoServer
        .serve(rmcp::transport::stdio())
        .await
        .map_err(invalid)?;
    service.waiting().await.map_err(invalid)?;
    Ok(())
}

mod echo {
    use rmcp::handler::server::wrapper::Parameters;
    use rmcp::model::{ServerCapabilities, ServerConfig};
    use rmcp::{ServerHandler, schemars, tool, tool_handler, tool_router};

    #[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
    pub(super) struct EchoArgs {
        /// Text to send back.
        text: String,
    }

    #[derive(Debug, Clone, Default)]
    pub(super) struct EchoServer;

    #[tool_router]
    impl EchoServer {
        #[tool(description = "Returns its text unchanged.")]
        fn echo(&self, Parameters(EchoArgs { text }): Parameters<EchoArgs>) -> String {
            text
        }
    }

    #[tool_handler]
    impl ServerHandler for EchoServer {
        fn get_info(&self) -> ServerConfig {
            ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
                .with_instructions("iron bench tools: one tool, echo.")
        }
    }
}

/// `iron bench tools`: a managed call (the manager, both gates, its two events) against a
/// direct call, on an MCP server's echo tool (`iron bench echo-server`, this same program, so
/// the bench needs nothing the release build does not make), with the events kept in memory,
/// on the embedded log and on JetStream (`nats`, or a local server).
pub async fn run(calls: usize, nats: Option<String>) -> Result<(), BenchError> {
    super::stats::print_machine("tools");
    let server = std::env::current_exe().map_err(|source| BenchError::Io {
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
        let bench = ToolsBench {
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
        tools(&bench, &mut std::io::stdout())
            .await
            .map_err(|source| BenchError::Io {
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
