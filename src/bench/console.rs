//! `iron bench console`: what the view layer costs.
//!
//! * **Event streaming.** `events` envelopes are written to a scratch embedded log, then the
//!   console's own SSE handler (`/api/events?from=1`, served by axum on loopback) streams them
//!   to one client, then to `clients` clients at once; a client is done when it has read every
//!   event. Reported: events/s per client and in all (the history replay a page does when it
//!   opens, which bounds what a live page can follow).
//! * **Tracing.** `tasks` tasks through a real engine and a new expert process each (scripted
//!   model), with the OTLP exporter off and on (to a receiver in this process), in
//!   alternating rounds so machine noise hits both alike: the p50 of each and their ratio,
//!   and how many spans the receiver got (proof that tracing was on).

use crate::protocol::TaskOutcome;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use serde_json::json;

use super::{
    BenchError,
    cognition::{Stage, activate, node_command, stop},
    stats::{Figures, beside_iron, ms, pct, print_machine},
};
use crate::{
    core::{envelope::Envelope, event_kind::EventKind},
    interfaces::{AolTask, AolTaskGoal},
    memory::emit,
    spine::{
        control::action::ActionClient,
        durable::{AnyLog, Embedded, EmbeddedOptions, StreamSpec},
    },
    view::console::events::events as sse,
};

fn io(what: &str) -> impl FnOnce(std::io::Error) -> BenchError {
    let what = what.to_string();
    move |source| BenchError::Io { what, source }
}

fn failed(what: &str) -> impl FnOnce(String) -> BenchError {
    let what = what.to_string();
    move |e| BenchError::Failed(format!("{what}: {e}"))
}

/// `iron bench console`.
pub async fn run(
    events: usize,
    clients: usize,
    tasks: usize,
    timeout: Duration,
) -> Result<(), BenchError> {
    print_machine("console");
    let mut figs = Figures::default();
    streaming(events, clients, &mut figs).await?;
    tracing_cost(tasks, timeout, &mut figs).await?;
    figs.print();
    Ok(())
}

async fn streaming(events: usize, clients: usize, figs: &mut Figures) -> Result<(), BenchError> {
    let dir = tempfile::tempdir().map_err(io("creating a temporary directory"))?;
    let log = Embedded::open(
        dir.path().join("log.db"),
        &[StreamSpec::mem()],
        EmbeddedOptions::default(),
    )
    .await
    .map_err(|e| BenchError::Failed(e.to_string()))?;
    let log = AnyLog::Embedded(log);
    let filled = Instant::now();
    for i in 0..events {
        let e = Envelope::new(
            "bench",
            ["sessions", "s"],
            "bench",
            EventKind::ChatTurn,
            json!({"text": format!("event {i}: the harbour bridge is closed"), "user_id": "bench"}),
        );
        emit(&log, &e)
            .await
            .map_err(|e| BenchError::Failed(e.to_string()))?;
    }
    eprintln!(
        "wrote {events} events in {:.1} s",
        filled.elapsed().as_secs_f64()
    );
    let app = axum::Router::new()
        .route("/api/events", axum::routing::get(sse))
        .with_state(log);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .map_err(io("listening on loopback"))?;
    let url = format!(
        "http://{}/api/events?from=1",
        listener.local_addr().map_err(io("reading the address"))?
    );
    let server = tokio::spawn(async move { axum::serve(listener, app).await });
    let client = reqwest::Client::new();
    for n in [1, clients] {
        let started = Instant::now();
        let each =
            futures_util::future::try_join_all((0..n).map(|_| read_all(&client, &url, events)))
                .await?;
        let all = started.elapsed();
        let slowest = each.iter().max().copied().unwrap_or(all);
        let per_client = events as f64 / slowest.as_secs_f64();
        // Per client: the slowest of the `n`.
        figs.line(format!(
            "bench console.stream_{n}_clients_per_client {per_client:.0} events/s"
        ));
        figs.line(format!(
            "bench console.stream_{n}_clients_total {:.0} events/s",
            (events * n) as f64 / all.as_secs_f64()
        ));
    }
    server.abort();
    Ok(())
}

/// Reads the stream at `url` until `events` events came; how long that took.
async fn read_all(
    client: &reqwest::Client,
    url: &str,
    events: usize,
) -> Result<Duration, BenchError> {
    let started = Instant::now();
    let mut response = client
        .get(url)
        .send()
        .await
        .map_err(|e| failed("opening the stream")(e.to_string()))?;
    let mut seen = 0;
    let mut tail = Vec::new();
    while seen < events {
        let chunk = tokio::time::timeout(Duration::from_secs(30), response.chunk())
            .await
            .map_err(|_| BenchError::Failed(format!("the stream stalled after {seen} events")))?
            .map_err(|e| failed("reading the stream")(e.to_string()))?
            .ok_or_else(|| BenchError::Failed(format!("the stream ended after {seen} events")))?;
        tail.extend_from_slice(&chunk);
        // Whole lines only: an `id:` line split across chunks is counted once it is whole.
        if let Some(end) = tail.iter().rposition(|b| *b == b'\n') {
            seen += tail[..=end]
                .split(|b| *b == b'\n')
                .filter(|l| l.starts_with(b"id:"))
                .count();
            tail.drain(..=end);
        }
    }
    Ok(started.elapsed())
}

async fn tracing_cost(
    tasks: usize,
    timeout: Duration,
    figs: &mut Figures,
) -> Result<(), BenchError> {
    let Stage {
        dir: _dir,
        control: _control,
        config,
        router,
        endpoint,
        node,
    } = Stage::start(timeout).await?;
    let (otlp, spans) = receiver().await?;
    let result = async {
        let (mut off, mut on): (Vec<Duration>, Vec<Duration>) = (Vec::new(), Vec::new());
        let rounds = 4.min(tasks / 2).max(1);
        for round in 0..rounds {
            let per = tasks / (2 * rounds);
            // Alternate which mode goes first, so neither always follows the other.
            for traced in [round % 2 == 0, round % 2 == 1] {
                let took = run_engine(
                    &node,
                    &endpoint,
                    &config,
                    traced.then_some(&otlp),
                    per,
                    timeout,
                )
                .await?;
                if traced { &mut on } else { &mut off }.extend(took);
            }
        }
        off.sort();
        on.sort();
        let (p_off, p_on) = (pct(&off, 50.0), pct(&on, 50.0));
        figs.line(format!(
            "bench console.task_p50_ratio_traced_vs_not {:.3} x",
            ms(p_on) / ms(p_off)
        ));
        figs.line(format!(
            "bench console.task_p50_tracing_off {:.1} ms",
            ms(p_off)
        ));
        figs.line(format!(
            "bench console.task_p50_tracing_on {:.1} ms",
            ms(p_on)
        ));
        figs.line(format!(
            "bench console.tasks_each {} count",
            off.len().min(on.len())
        ));
        figs.line(format!(
            "bench console.spans_received_tracing_on {} count",
            spans.load(Ordering::Relaxed)
        ));
        Ok(())
    }
    .await;
    router.stop().await;
    result
}

/// One engine process (traced to `otlp` or not) and `tasks` tasks through it one at a time,
/// each with an expert process of its own: how long each took, goal sent to result.
async fn run_engine(
    node: &hiroz::node::ZNode,
    endpoint: &str,
    config: &Path,
    otlp: Option<&String>,
    tasks: usize,
    timeout: Duration,
) -> Result<Vec<Duration>, BenchError> {
    let exe = beside_iron("engine_node")?;
    let mut cmd = node_command(&exe, &[], "/iron", "engine", endpoint, config, false);
    if let Some(url) = otlp {
        cmd.env("OTEL_EXPORTER_OTLP_ENDPOINT", url);
    }
    let child = cmd.spawn().map_err(io("starting engine_node"))?;
    activate(node, "/iron/engine", timeout * 3).await?;
    let actions = ActionClient::<AolTask>::new(node, "/iron/engine/task")?;
    let mut took = Vec::with_capacity(tasks);
    for _ in 0..tasks {
        let goal = AolTaskGoal {
            task_id: uuid::Uuid::now_v7().to_string(),
            domain: "bench/idle".into(),
            instruction: "say done".into(),
            context_json: "{}".into(),
            ..Default::default()
        };
        let started = Instant::now();
        let outcome = actions.run(goal, timeout * 3).await?;
        if outcome.result.status != TaskOutcome::Succeeded.as_str() {
            return Err(BenchError::Failed(format!(
                "a task did not succeed: {} {}",
                outcome.result.status, outcome.result.text
            )));
        }
        took.push(started.elapsed());
    }
    stop(node, "/iron/engine", child, timeout).await;
    Ok(took)
}

/// A minimal OTLP/HTTP receiver on loopback: its base URL and the spans it has counted.
async fn receiver() -> Result<(String, Arc<AtomicUsize>), BenchError> {
    let count = Arc::new(AtomicUsize::new(0));
    let seen = count.clone();
    let app = axum::Router::new().route(
        "/v1/traces",
        axum::routing::post(move |body: axum::Json<serde_json::Value>| {
            let seen = seen.clone();
            async move {
                let n = body["resourceSpans"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .flat_map(|r| r["scopeSpans"].as_array().into_iter().flatten())
                    .map(|s| s["spans"].as_array().map_or(0, Vec::len))
                    .sum::<usize>();
                seen.fetch_add(n, Ordering::Relaxed);
                axum::Json(json!({}))
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .map_err(io("listening on loopback"))?;
    let url = format!(
        "http://{}",
        listener.local_addr().map_err(io("reading the address"))?
    );
    tokio::spawn(async move { axum::serve(listener, app).await });
    Ok((url, count))
}
