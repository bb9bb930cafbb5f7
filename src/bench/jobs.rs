//! `iron bench jobs`: what journaling costs. A no-op step journaled through the runner's
//! fenced writer (p50/p99) against one raw JetStream publish-ack of the same size (p50/p99
//! and the ratio, first), the two alternating in one run; the extra cost of a step in a
//! Python flow; and the time to resume a job whose journal holds 10,000 steps. Prints
//! `bench jobs.<name> <value> <unit>`; never asserted.

use std::io::Write;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use async_nats::jetstream::message::PublishMessage;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::BenchError;
use crate::core::identity::Authority;
use crate::jobs::ctx::{Ctx, Exit, StepError};
use crate::jobs::flow::{Flow, FlowFuture, Registry};
use crate::jobs::journal::Fence;
use crate::jobs::python::PythonFlows;
use crate::jobs::run::{Flows, run_job};
use crate::jobs::{JobError, JobState, ops};
use crate::spine::durable::lease::Lease;
use crate::spine::durable::{AnyLog, JetStream};

/// Why the benchmark stopped.
#[derive(Debug, thiserror::Error)]
pub enum JobsBenchError {
    /// A job operation failed.
    #[error("bench jobs: {0}")]
    Job(#[from] JobError),
    /// The Python helper could not be set up.
    #[error("bench jobs: {0}")]
    Python(#[from] crate::jobs::python::PythonSetupError),
    /// A job did not end as the benchmark expects.
    #[error("bench jobs: {0}")]
    Unexpected(String),
    /// Writing the output failed.
    #[error("bench jobs: {0}")]
    Io(#[from] std::io::Error),
}

/// Settings.
#[derive(Debug, Clone)]
pub struct JobsBenchOptions {
    /// Steps per latency series.
    pub steps: usize,
    /// Steps in the journal of the job that is resumed.
    pub resume_steps: usize,
    /// Python interpreter for the Python-flow series (`None` skips it, saying so).
    pub python: Option<std::path::PathBuf>,
}

async fn nothing(_: Value) -> Result<Value, StepError> {
    Ok(Value::Null)
}

/// `n` no-op steps, each timed from the flow's side, each after one raw JetStream
/// publish-ack of a payload the size of a step entry (timed too): the two series interleave,
/// so machine noise hits both alike.
struct Timed {
    context: async_nats::jetstream::Context,
    steps: Arc<Mutex<Vec<Duration>>>,
    raw: Arc<Mutex<Vec<Duration>>>,
}

impl Timed {
    async fn raw_publish_ack(&self) -> Result<(), StepError> {
        let publish = PublishMessage::build()
            .payload(vec![b'x'; 260].into())
            .message_id(format!("bench-raw-{}", uuid::Uuid::now_v7().simple()));
        let ack = self
            .context
            .send_publish("jobs.bench.raw.x", publish)
            .await
            .map_err(|e| StepError::new(format!("publish: {e}")))?;
        ack.await.map_err(|e| StepError::new(format!("ack: {e}")))?;
        Ok(())
    }
}

impl Flow for Timed {
    fn run<'a>(&'a self, ctx: &'a mut Ctx, input: Value) -> FlowFuture<'a> {
        Box::pin(async move {
            let n = input["n"].as_u64().unwrap_or(1);
            for _ in 0..n {
                let t = Instant::now();
                self.raw_publish_ack().await.map_err(|e| Exit::Parked {
                    reason: format!("raw publish-ack: {e}"),
                })?;
                self.raw.lock().expect("samples").push(t.elapsed());
                let t = Instant::now();
                ctx.step("noop", nothing, Value::Null).await?;
                self.steps.lock().expect("samples").push(t.elapsed());
            }
            Ok(json!(n))
        })
    }
}

fn long<'a>(ctx: &'a mut Ctx, input: Value) -> FlowFuture<'a> {
    Box::pin(async move {
        let n = input["n"].as_u64().unwrap_or(1);
        for _ in 0..n {
            ctx.step("noop", nothing, Value::Null).await?;
        }
        ctx.wait_signal("go").await?;
        Ok(json!(n))
    })
}

const PY_NOOP: &str = "def nothing():\n    return None\n\ndef run(ctx, input):\n    for _ in range(input['n']):\n        ctx.step('noop', nothing)\n    return input['n']\n";

/// The `p`-th percentile of sorted samples, in microseconds.
fn pct_us(sorted: &[Duration], p: f64) -> f64 {
    crate::core::stats::percentile(sorted, p).as_secs_f64() * 1e6
}

/// Runs the benchmark against `js` (a server the caller owns: it writes jobs of mesh `bench`).
///
/// Long because it is the bench's script: its series run in order in one run, and the lines it
/// prints follow that order; split, the order would be spread over functions.
pub async fn jobs(
    js: &JetStream,
    options: &JobsBenchOptions,
    scratch: &Path,
    out: &mut impl Write,
) -> Result<(), JobsBenchError> {
    let log = AnyLog::JetStream(Box::new(js.clone()));
    let lease = Lease::acquire(&log, "jobs-runner.bench", "bench")
        .await
        .map_err(|e| JobsBenchError::Unexpected(e.to_string()))?;
    let fence = Fence {
        key: "jobs-runner.bench".into(),
        holder: lease.holder().into(),
        epoch: lease.epoch(),
        lost: CancellationToken::new(),
    };
    let (samples, raw) = (
        Arc::new(Mutex::new(Vec::new())),
        Arc::new(Mutex::new(Vec::new())),
    );
    let mut registry = Registry::new();
    registry
        .register(
            "bench/ops/timed",
            Timed {
                context: js.context().clone(),
                steps: samples.clone(),
                raw: raw.clone(),
            },
        )
        .register("bench/ops/long", long);
    let python = match &options.python {
        Some(exe) => {
            let dir = scratch.join("aem/bench/skills/ops/flows");
            std::fs::create_dir_all(&dir)?;
            std::fs::write(dir.join("noop.py"), PY_NOOP)?;
            Some(PythonFlows::new(&scratch.join("aem"), exe)?)
        }
        None => None,
    };
    let flows = Flows { registry, python };
    // No person acts in the bench: nobody is registered.
    let people = Authority::new(scratch, &[]);
    let n = options.steps.max(1);

    let (_, job) = ops::start(&log, "bench/ops/timed", json!({"n": n}), None).await?;
    let report = run_job(&log, &flows, &people, &fence, "bench", &job).await?;
    if !matches!(report.state, JobState::Done { .. }) {
        return Err(JobsBenchError::Unexpected(format!(
            "the timed flow ended {:?}",
            report.state
        )));
    }
    let mut steps = std::mem::take(&mut *samples.lock().expect("samples"));
    steps.sort();
    let mut raw = std::mem::take(&mut *raw.lock().expect("samples"));
    raw.sort();
    let (raw50, step50, step99) = (
        pct_us(&raw, 50.0),
        pct_us(&steps, 50.0),
        pct_us(&steps, 99.0),
    );
    writeln!(
        out,
        "bench jobs.step_p50_ratio {:.3} x",
        step50 / raw50.max(1e-9)
    )?;
    writeln!(out, "bench jobs.raw_publish_ack_p50 {raw50:.1} us")?;
    writeln!(
        out,
        "bench jobs.raw_publish_ack_p99 {:.1} us",
        pct_us(&raw, 99.0)
    )?;
    writeln!(out, "bench jobs.step_p50 {step50:.1} us")?;
    writeln!(out, "bench jobs.step_p99 {step99:.1} us")?;
    let rust_mean = steps.iter().sum::<Duration>().as_secs_f64() * 1e6 / steps.len() as f64;

    if flows.python.is_some() {
        let (_, job) = ops::start(&log, "bench/ops/noop", json!({"n": n}), None).await?;
        let t = Instant::now();
        let report = run_job(&log, &flows, &people, &fence, "bench", &job).await?;
        let total = t.elapsed().as_secs_f64() * 1e6;
        if !matches!(report.state, JobState::Done { .. }) {
            return Err(JobsBenchError::Unexpected(format!(
                "the Python flow ended {:?}",
                report.state
            )));
        }
        let per_step = total / n as f64;
        writeln!(out, "bench jobs.python_step_mean {per_step:.1} us")?;
        writeln!(
            out,
            "bench jobs.python_step_overhead {:.1} us",
            per_step - rust_mean
        )?;
    } else {
        writeln!(out, "# jobs.python_* skipped: no Python interpreter given")?;
    }

    let m = options.resume_steps;
    let (_, job) = ops::start(&log, "bench/ops/long", json!({"n": m}), None).await?;
    let first = run_job(&log, &flows, &people, &fence, "bench", &job).await?;
    if !matches!(first.state, JobState::Waiting { .. }) {
        return Err(JobsBenchError::Unexpected(format!(
            "the long job ended {:?}",
            first.state
        )));
    }
    ops::signal(&log, &job, "go", Value::Null).await?;
    let t = Instant::now();
    let resumed = run_job(&log, &flows, &people, &fence, "bench", &job).await?;
    let took = t.elapsed();
    if !matches!(resumed.state, JobState::Done { .. }) || resumed.steps_run != 0 {
        return Err(JobsBenchError::Unexpected(format!(
            "the resumed job ended {:?} after running {} steps",
            resumed.state, resumed.steps_run
        )));
    }
    writeln!(
        out,
        "bench jobs.resume_{m}_steps {:.1} ms",
        took.as_secs_f64() * 1e3
    )?;
    Ok(())
}

/// `iron bench jobs`: on a local nats-server started on free ports (or `nats`).
pub async fn run(
    steps: usize,
    resume_steps: usize,
    python: std::path::PathBuf,
    nats: Option<String>,
) -> Result<(), BenchError> {
    super::stats::print_machine("jobs");
    use crate::spine::durable::{JetStream, JetStreamOptions, StreamSpec, bootstrap};
    let dir = super::stats::scratch_dir()?;
    let nats = super::stats::BenchNats::given_or_local(nats, dir.path()).await?;
    let (url, monitor) = (nats.url.clone(), nats.monitor.clone());
    let result = async {
        let js = JetStream::connect(&url, JetStreamOptions::default())
            .await
            .map_err(|e| BenchError::Failed(format!("cannot reach NATS at {url}: {e}")))?;
        let check = bootstrap::BootstrapOptions {
            monitor,
            quiet: false,
        };
        bootstrap::bootstrap(&js, &StreamSpec::all(), &check)
            .await
            .map_err(|e| BenchError::Failed(e.to_string()))?;
        let options = JobsBenchOptions {
            steps,
            resume_steps,
            python: Some(python),
        };
        jobs(&js, &options, dir.path(), &mut std::io::stdout())
            .await
            .map_err(|e| BenchError::Failed(e.to_string()))
    }
    .await;
    nats.stop().await;
    result
}
