//! `iron bench log`: what the memory write and read paths cost against the raw tools they are
//! built on, in one run against the same server and stream configuration. Prints lines
//! `bench log.<name> <value> <unit>`. Not a test: figures vary with the machine.

use std::io::Write;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use async_nats::jetstream::message::PublishMessage;
use futures_util::FutureExt;
use futures_util::future::LocalBoxFuture;
use rusqlite::{Connection, params};
use serde_json::json;
use tokio_util::sync::CancellationToken;

use super::BenchError;
use super::stats::{BenchNats, Figures, scratch_dir};
use crate::core::durable::{DurableError, EventLog};
use crate::core::envelope::Envelope;
use crate::core::event_kind::EventKind;
use crate::memory::emit::{EmitError, Emitter};
use crate::memory::projector::{self, ProjectorDeps, ProjectorError};
use crate::memory::recall::{Recall, RecallError};
use crate::spine::durable::bootstrap::BootstrapError;
use crate::spine::durable::embedded::Stages;
use crate::spine::durable::{Embedded, EmbeddedOptions, JetStream, StreamSpec};

/// Stream the benchmark creates (and deletes) on the server: `MEM`'s configuration under its
/// own name and subjects, so no benchmark event lands in the real ledger.
pub const BENCH_STREAM: &str = "IRON_BENCH_MEM";
const BENCH_ROOT: &str = "ironbench";

/// Benchmark settings.
#[derive(Debug, Clone)]
pub struct BenchOptions {
    /// Events per measured series (at least 1).
    pub events: usize,
    /// Events in the burst the projector's lag is measured after.
    pub burst: usize,
    /// Approximate payload text size per event.
    pub payload_bytes: usize,
    /// Directory for the SQLite files (created; its files are replaced).
    pub scratch_dir: PathBuf,
}

/// Why the benchmark failed.
#[derive(Debug, thiserror::Error)]
pub enum LogBenchError {
    /// The log failed.
    #[error("bench: {0}")]
    Durable(#[from] DurableError),
    /// `emit()` failed.
    #[error("bench: {0}")]
    Emit(#[from] EmitError),
    /// The embedded log could not be opened.
    #[error("bench: {0}")]
    Bootstrap(#[from] BootstrapError),
    /// The projector failed.
    #[error("bench: {0}")]
    Projector(#[from] ProjectorError),
    /// Reading the projection failed.
    #[error("bench: {0}")]
    Recall(#[from] RecallError),
    /// Raw SQLite failed.
    #[error("bench: raw sqlite: {0}")]
    Sqlite(#[from] rusqlite::Error),
    /// Writing output or scratch files failed.
    #[error("bench: {0}")]
    Io(#[from] std::io::Error),
    /// Something waited too long.
    #[error("bench: {0}")]
    Stalled(String),
}

/// Throughput and latency of one series.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Series {
    /// Operations per second.
    pub per_second: f64,
    /// Median latency in microseconds.
    pub p50_us: f64,
    /// 99th percentile latency in microseconds.
    pub p99_us: f64,
}

pub(super) fn series(mut latencies: Vec<Duration>, total: Duration) -> Series {
    latencies.sort();
    let pick = |p: f64| crate::core::stats::percentile(&latencies, p).as_secs_f64() * 1e6;
    Series {
        per_second: latencies.len() as f64 / total.as_secs_f64().max(1e-9),
        p50_us: pick(50.0),
        p99_us: pick(99.0),
    }
}

fn print_series(out: &mut impl Write, name: &str, s: &Series) -> std::io::Result<()> {
    writeln!(out, "bench log.{name}_throughput {:.1} msg/s", s.per_second)?;
    writeln!(out, "bench log.{name}_p50 {:.1} us", s.p50_us)?;
    writeln!(out, "bench log.{name}_p99 {:.1} us", s.p99_us)
}

fn print_ratios(
    out: &mut impl Write,
    name: &str,
    ours: &Series,
    raw: &Series,
) -> std::io::Result<()> {
    writeln!(
        out,
        "bench log.{name}_throughput_ratio {:.3} x",
        ours.per_second / raw.per_second
    )?;
    writeln!(
        out,
        "bench log.{name}_p50_ratio {:.3} x",
        ours.p50_us / raw.p50_us.max(1e-9)
    )
}

/// The p50 of `d` in microseconds.
fn p50_us(d: &[Duration]) -> f64 {
    let mut d = d.to_vec();
    d.sort();
    crate::core::stats::percentile(&d, 50.0).as_secs_f64() * 1e6
}

/// Where a single writer's append spends its time, stage by stage (medians of the same run as
/// `series`): the hand-over to the writer thread, the transaction's begin, its statements, its
/// commit with the fsync, and what the caller spends beyond the answer being sent (encoding the
/// envelope, and the answer waking its task).
fn print_stages(out: &mut impl Write, s: &Stages, series: &Series) -> std::io::Result<()> {
    let in_log = p50_us(&s.in_log);
    for (name, value) in [
        ("hand_over", p50_us(&s.wake)),
        ("begin", p50_us(&s.begin)),
        ("rows", p50_us(&s.rows)),
        ("commit_fsync", p50_us(&s.commit)),
        ("in_log", in_log),
        ("caller_rest", series.p50_us - in_log),
    ] {
        writeln!(out, "bench log.append_stage_{name}_p50 {value:.1} us")?;
    }
    Ok(())
}

/// How `writers` concurrent writers' appends were batched: batches, their mean and largest
/// size, how long an append waited for its batch to close, and the commit's median.
fn print_batches(out: &mut impl Write, writers: usize, s: &Stages) -> std::io::Result<()> {
    let batches = s.batch_sizes.len();
    let appends: usize = s.batch_sizes.iter().sum();
    let largest = s.batch_sizes.iter().max().copied().unwrap_or(0);
    let name = format!("bench log.embedded_{writers}_writers");
    writeln!(out, "{name}_batches {batches}")?;
    writeln!(
        out,
        "{name}_batch_mean {:.2} appends",
        appends as f64 / batches.max(1) as f64
    )?;
    writeln!(out, "{name}_batch_max {largest} appends")?;
    writeln!(out, "{name}_queued_p50 {:.1} us", p50_us(&s.queued))?;
    writeln!(out, "{name}_commit_fsync_p50 {:.1} us", p50_us(&s.commit))
}

fn envelopes(n: usize, payload_bytes: usize) -> Vec<Envelope> {
    let text = "lorem ipsum dolor sit amet ".repeat(payload_bytes / 27 + 1);
    (0..n)
        .map(|i| {
            Envelope::new(
                "bench",
                ["facts", "bench"],
                "bench",
                EventKind::FactLearned,
                json!({"i": i, "text": &text[..payload_bytes]}),
            )
        })
        .collect()
}

/// One `emit()`, as the series time it.
async fn emit_one<L: EventLog>(
    emitter: &Emitter<L>,
    event: &Envelope,
) -> Result<(), LogBenchError> {
    emitter
        .emit(event)
        .await
        .map(drop)
        .map_err(LogBenchError::from)
}

/// One operation of a series: its `i`-th call.
type Op<'a, E> = Box<dyn FnMut(usize) -> LocalBoxFuture<'a, Result<(), E>> + 'a>;

/// Series interleaved (a, b, c, a, b, c, …), so machine noise hits them alike; each one's
/// throughput is its operations over the time spent in them.
async fn measure_interleaved<const K: usize, E>(
    n: usize,
    mut ops: [Op<'_, E>; K],
) -> Result<[Series; K], E> {
    let mut latencies: [Vec<Duration>; K] = std::array::from_fn(|_| Vec::with_capacity(n));
    for i in 0..n {
        for (op, spent) in ops.iter_mut().zip(&mut latencies) {
            let t = Instant::now();
            op(i).await?;
            spent.push(t.elapsed());
        }
    }
    Ok(latencies.map(|spent| {
        let total = spent.iter().sum();
        series(spent, total)
    }))
}

/// Removes the SQLite database at `path` with its WAL and shared-memory files.
pub(super) fn remove_db(path: &std::path::Path) {
    for suffix in ["", "-wal", "-shm"] {
        let mut p = path.as_os_str().to_owned();
        p.push(suffix);
        let _ = std::fs::remove_file(PathBuf::from(p));
    }
}

fn raw_sqlite(path: &std::path::Path) -> Result<Connection, rusqlite::Error> {
    let conn = Connection::open(path)?;
    conn.pragma_update(None, "journal_mode", "WAL")?;
    conn.pragma_update(None, "synchronous", "FULL")?;
    conn.execute_batch(
        "CREATE TABLE IF NOT EXISTS raw(seq INTEGER PRIMARY KEY, subject TEXT, msg_id TEXT, payload BLOB)",
    )?;
    Ok(conn)
}

/// One autocommitted (so fsync'd) insert into [`raw_sqlite`]'s table: the baseline an append
/// is judged against.
fn raw_insert(conn: &Connection, i: usize, payload: &[u8]) -> rusqlite::Result<()> {
    conn.prepare_cached("INSERT INTO raw(subject, msg_id, payload) VALUES (?1, ?2, ?3)")?
        .execute(params!["ironbench.raw", i.to_string(), payload])
        .map(drop)
}

/// Runs every series and prints its lines to `out`. Needs a running JetStream server; the
/// embedded and raw SQLite series use files in `scratch_dir`.
///
/// Long because it is the bench's script: its series run in order in one run, and the lines it
/// prints follow that order; split, the order would be spread over functions.
pub async fn log(
    js: &JetStream,
    options: &BenchOptions,
    out: &mut impl Write,
) -> Result<(), LogBenchError> {
    let n = options.events;
    std::fs::create_dir_all(&options.scratch_dir)?;
    let spec = StreamSpec::mem().renamed(BENCH_STREAM, vec![format!("{BENCH_ROOT}.>")]);
    let _ = js.context().delete_stream(BENCH_STREAM).await;
    js.create_stream_raw(BENCH_STREAM, &spec.server_config())
        .await?;

    // JetStream: raw publish-with-ack against emit(), same envelope sizes.
    tracing::info!("bench log: {n} JetStream publishes against as many emit() calls");
    let raw_events = envelopes(n, options.payload_bytes);
    let raw_payloads: Vec<Vec<u8>> = raw_events
        .iter()
        .map(|e| serde_json::to_vec(e).unwrap_or_default())
        .collect();
    let context = js.context().clone();
    let emitter_js = Emitter::new(js.clone()).with_root(BENCH_ROOT);
    let events = envelopes(n, options.payload_bytes);
    let [raw, emitted] = measure_interleaved::<2, LogBenchError>(
        n,
        [
            Box::new(|i| {
                let context = context.clone();
                let (payload, id) = (raw_payloads[i].clone(), raw_events[i].event_id.to_string());
                async move {
                    let publish = PublishMessage::build()
                        .payload(payload.into())
                        .message_id(id);
                    let ack = context
                        .send_publish(format!("{BENCH_ROOT}.bench.raw"), publish)
                        .await
                        .map_err(|e| DurableError::Backend {
                            op: "raw publish",
                            source: Box::new(e),
                        })?;
                    ack.await.map_err(|e| DurableError::Backend {
                        op: "raw ack",
                        source: Box::new(e),
                    })?;
                    Ok(())
                }
                .boxed_local()
            }),
            Box::new(|i| emit_one(&emitter_js, &events[i]).boxed_local()),
        ],
    )
    .await?;
    print_series(out, "raw_publish", &raw)?;
    print_series(out, "emit", &emitted)?;
    print_ratios(out, "emit_vs_raw", &emitted, &raw)?;

    // Embedded: emit() on the embedded log against raw single-row SQLite inserts.
    tracing::info!("bench log: {n} embedded appends against raw inserts, on and off the runtime");
    let dir = &options.scratch_dir;
    for file in [
        "bench-embedded.db",
        "bench-raw.db",
        "bench-raw-off.db",
        "bench-batched.db",
        "bench-projection.db",
    ] {
        remove_db(&dir.join(file));
    }
    let embedded = Embedded::open(
        dir.join("bench-embedded.db"),
        std::slice::from_ref(&spec),
        EmbeddedOptions {
            time_stages: true,
            ..EmbeddedOptions::default()
        },
    )
    .await?;
    let emitter = Emitter::new(embedded.clone()).with_root(BENCH_ROOT);
    let events = envelopes(n, options.payload_bytes);
    let raw_conn = raw_sqlite(&dir.join("bench-raw.db"))?;
    let off_runtime_conn = Arc::new(Mutex::new(raw_sqlite(&dir.join("bench-raw-off.db"))?));
    let [embedded_series, raw_sqlite_series, off_runtime_series] = measure_interleaved::<
        3,
        LogBenchError,
    >(
        n,
        [
            Box::new(|i| emit_one(&emitter, &events[i]).boxed_local()),
            // On the caller's thread, as the goal is set: no hand-off, the runtime blocked.
            Box::new(|i| {
                let inserted = raw_insert(&raw_conn, i, &raw_payloads[i]);
                std::future::ready(inserted.map_err(LogBenchError::from)).boxed_local()
            }),
            // As async code would call it without blocking its runtime: on a blocking
            // thread, and back.
            Box::new(|i| {
                let conn = off_runtime_conn.clone();
                let payload = raw_payloads[i].clone();
                async move {
                    tokio::task::spawn_blocking(move || {
                        let conn = conn.lock().unwrap_or_else(PoisonError::into_inner);
                        raw_insert(&conn, i, &payload)
                    })
                    .await
                    .map_err(|e| LogBenchError::Stalled(format!("a blocking insert failed: {e}")))?
                    .map_err(LogBenchError::from)
                }
                .boxed_local()
            }),
        ],
    )
    .await?;
    print_series(out, "embedded_emit", &embedded_series)?;
    print_series(out, "sqlite_insert", &raw_sqlite_series)?;
    print_series(out, "sqlite_insert_off_runtime", &off_runtime_series)?;
    print_ratios(
        out,
        "embedded_vs_sqlite",
        &embedded_series,
        &raw_sqlite_series,
    )?;
    print_ratios(
        out,
        "embedded_vs_sqlite_off_runtime",
        &embedded_series,
        &off_runtime_series,
    )?;
    if let Some(stages) = embedded.take_stages() {
        print_stages(out, &stages, &embedded_series)?;
    }
    writers(
        &emitter,
        &embedded,
        embedded_series.per_second,
        options,
        out,
    )
    .await?;
    let written = Written {
        events: raw_events,
        payloads: raw_payloads,
    };
    projector_series(js, options, &emitter_js, written, out).await?;
    let _ = js.context().delete_stream(BENCH_STREAM).await;
    Ok(())
}

/// Eight writers at once on one embedded log's handle, each its own task as concurrent callers
/// in a process are: appends waiting together share a commit. Prints the throughput, its
/// ratio to one writer's (`one_per_second`) and the batch sizes.
async fn writers(
    emitter: &Emitter<Embedded>,
    embedded: &Embedded,
    one_per_second: f64,
    options: &BenchOptions,
    out: &mut impl Write,
) -> Result<(), LogBenchError> {
    let n = options.events;
    tracing::info!("bench log: {n} appends from eight writers");
    const WRITERS: usize = 8;
    let events = envelopes(n, options.payload_bytes);
    let start = Instant::now();
    let writers: Vec<_> = events
        .chunks(n.div_ceil(WRITERS))
        .map(|chunk| {
            let (emitter, chunk) = (emitter.clone(), chunk.to_vec());
            tokio::spawn(async move {
                for event in &chunk {
                    emitter.emit(event).await?;
                }
                Ok::<_, EmitError>(())
            })
        })
        .collect();
    for writer in writers {
        writer
            .await
            .map_err(|e| LogBenchError::Stalled(format!("a writer task failed: {e}")))??;
    }
    let concurrent = n as f64 / start.elapsed().as_secs_f64();
    writeln!(
        out,
        "bench log.embedded_emit_{WRITERS}_writers_throughput {concurrent:.1} msg/s"
    )?;
    writeln!(
        out,
        "bench log.embedded_{WRITERS}_writers_vs_one_ratio {:.3} x",
        concurrent / one_per_second
    )?;
    if let Some(stages) = embedded.take_stages() {
        print_batches(out, WRITERS, &stages)?;
    }
    Ok(())
}

/// What the JetStream series wrote, which the projector series reads back.
struct Written {
    /// The envelopes published raw.
    events: Vec<Envelope>,
    /// Their bytes.
    payloads: Vec<Vec<u8>>,
}

/// The projector over the JetStream stream written before, against raw batched inserts of the
/// same rows; then its lag behind a burst of `options.burst` events while it runs.
async fn projector_series(
    js: &JetStream,
    options: &BenchOptions,
    emitter_js: &Emitter<JetStream>,
    written: Written,
    out: &mut impl Write,
) -> Result<(), LogBenchError> {
    let (n, dir) = (options.events, &options.scratch_dir);
    tracing::info!(
        "bench log: the projector over those events, then its lag behind {} more",
        options.burst
    );
    let last = js.last_sequence(BENCH_STREAM).await?;
    let db = dir.join("bench-projection.db");
    let mut deps = ProjectorDeps::new(js.clone(), &db);
    deps.stream = BENCH_STREAM.into();
    deps.filter_subject = format!("{BENCH_ROOT}.>");
    deps.consumer = "bench_projector".into();
    let shutdown = CancellationToken::new();
    let start = Instant::now();
    let mut task = tokio::spawn(projector::run(deps, shutdown.clone()));
    wait_projected(&db, last, &mut task, &shutdown).await?;
    let projector_rate = last as f64 / start.elapsed().as_secs_f64();
    let mut all: Vec<Envelope> = written.events;
    all.extend(envelopes(n, options.payload_bytes));
    let same_rows_rate = raw_projection_rows(&dir.join("bench-same-rows.db"), &all)?;
    let plain_rate = raw_plain_rows(&dir.join("bench-batched.db"), &written.payloads)?;
    // The burst: `options.burst` events published at once (acks awaited together), then the
    // time until the running projector has them all.
    let burst = envelopes(options.burst, options.payload_bytes);
    let burst_start = Instant::now();
    let acks = burst.iter().map(|event| emit_one(emitter_js, event));
    futures_util::future::try_join_all(acks).await?;
    let burst_written = burst_start.elapsed();
    let burst_end = Instant::now();
    wait_projected(&db, last + options.burst as u64, &mut task, &shutdown).await?;
    let lag = burst_end.elapsed();
    shutdown.cancel();
    let _ = task.await;
    writeln!(
        out,
        "bench log.projector_vs_same_rows_ratio {:.3} x",
        projector_rate / same_rows_rate
    )?;
    writeln!(
        out,
        "bench log.projector_vs_plain_batched_ratio {:.3} x",
        projector_rate / plain_rate
    )?;
    writeln!(
        out,
        "bench log.projector_throughput {projector_rate:.1} events/s"
    )?;
    writeln!(
        out,
        "bench log.sqlite_same_rows_batched_throughput {same_rows_rate:.1} events/s"
    )?;
    writeln!(
        out,
        "bench log.sqlite_plain_batched_insert_throughput {plain_rate:.1} rows/s"
    )?;
    writeln!(out, "bench log.projector_burst {} events", options.burst)?;
    writeln!(
        out,
        "bench log.projector_burst_written_in {:.1} ms",
        burst_written.as_secs_f64() * 1e3
    )?;
    writeln!(
        out,
        "bench log.projector_lag_after_burst {:.1} ms",
        lag.as_secs_f64() * 1e3
    )?;
    Ok(())
}

/// Waits until the projection at `db` has reached `seq`, or fails when the projector ended or
/// five minutes passed (then stopping it, and saying how it ended).
async fn wait_projected(
    db: &std::path::Path,
    seq: u64,
    task: &mut tokio::task::JoinHandle<Result<projector::ProjectorExit, ProjectorError>>,
    shutdown: &CancellationToken,
) -> Result<(), LogBenchError> {
    let deadline = Instant::now() + Duration::from_secs(300);
    loop {
        if let Ok(recall) = Recall::open(db)
            && recall.projected_seq(BENCH_STREAM).unwrap_or(0) >= seq
        {
            return Ok(());
        }
        if task.is_finished() || Instant::now() > deadline {
            shutdown.cancel();
            let outcome = (&mut *task).await;
            return Err(LogBenchError::Stalled(format!(
                "the projector did not reach sequence {seq}: {outcome:?}"
            )));
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
}

/// Rows per transaction of the raw baselines, as the projector's default batch.
const RAW_BATCH: usize = 256;

/// The rows the projector writes for `events` (event, full-text entry, applied sequence, the
/// cursor once per batch) in a projection of its own schema, with raw prepared inserts of
/// values computed beforehand: what the projector's SQL costs without the log, the parsing
/// and the acknowledgements. Events per second.
fn raw_projection_rows(path: &std::path::Path, events: &[Envelope]) -> Result<f64, LogBenchError> {
    remove_db(path);
    let mut conn = projector::open_writer(path)?;
    let rows: Vec<_> = events
        .iter()
        .map(|e| {
            let (ns, body) = projector::fts_row(e);
            (e, e.namespace_path(), e.payload.to_string(), ns, body)
        })
        .collect();
    let start = Instant::now();
    for (chunk, first) in rows.chunks(RAW_BATCH).zip((1..).step_by(RAW_BATCH)) {
        let tx = conn.transaction()?;
        for ((e, namespace, payload, ns, body), seq) in chunk.iter().zip(first..) {
            tx.prepare_cached(
                "INSERT INTO events(event_id, seq, subject, ts, tenant, namespace, actor, kind,
                    payload, result, cause) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, NULL, NULL)",
            )?
            .execute(params![
                e.event_id.as_str(),
                seq as i64,
                "ironbench.raw",
                e.ts as i64,
                e.tenant,
                namespace,
                e.actor,
                e.kind.as_str(),
                payload
            ])?;
            tx.prepare_cached("INSERT INTO events_fts(event_id, ns, body) VALUES (?1, ?2, ?3)")?
                .execute(params![e.event_id.as_str(), ns, body])?;
            tx.prepare_cached("INSERT INTO applied(seq, msg_id, event_id) VALUES (?1, ?2, ?2)")?
                .execute(params![seq as i64, e.event_id.as_str()])?;
        }
        tx.prepare_cached(
            "INSERT INTO cursor(stream, last_seq) VALUES ('bench', ?1)
             ON CONFLICT(stream) DO UPDATE SET last_seq = excluded.last_seq",
        )?
        .execute([(first + chunk.len() - 1) as i64])?;
        tx.commit()?;
    }
    Ok(events.len() as f64 / start.elapsed().as_secs_f64())
}

/// The same number of rows (each event's JSON twice, as the stream holds two series) into a
/// plain table of one B-tree: the floor of what SQLite can do. Rows per second.
fn raw_plain_rows(path: &std::path::Path, payloads: &[Vec<u8>]) -> Result<f64, LogBenchError> {
    remove_db(path);
    let batched = raw_sqlite(path)?;
    let all: Vec<&Vec<u8>> = payloads.iter().chain(payloads).collect();
    let start = Instant::now();
    for chunk in all.chunks(RAW_BATCH) {
        let tx = batched.unchecked_transaction()?;
        for (i, payload) in chunk.iter().enumerate() {
            tx.execute(
                "INSERT INTO raw(subject, msg_id, payload) VALUES (?1, ?2, ?3)",
                params!["ironbench.raw", i.to_string(), payload],
            )?;
        }
        tx.commit()?;
    }
    Ok(all.len() as f64 / start.elapsed().as_secs_f64())
}

/// `iron bench log`: against `nats` if given, else a local nats-server on free ports with its
/// store in a temporary directory.
pub async fn run(events: usize, burst: usize, nats: Option<String>) -> Result<(), BenchError> {
    super::stats::print_machine("log");
    use crate::spine::durable::{JetStream, JetStreamOptions};
    let dir = scratch_dir()?;
    let nats = BenchNats::given_or_local(nats, dir.path()).await?;
    let result = async {
        let js = JetStream::connect(&nats.url, JetStreamOptions::default())
            .await
            .map_err(|e| BenchError::Failed(format!("cannot reach NATS at {}: {e}", nats.url)))?;
        let options = BenchOptions {
            events,
            burst,
            payload_bytes: 256,
            scratch_dir: dir.path().join("sqlite"),
        };
        // Written whole once measured, so the ratios can lead.
        let mut out = Vec::new();
        log(&js, &options, &mut out).await?;
        Ok::<_, BenchError>(out)
    }
    .await;
    nats.stop().await;
    let mut figs = Figures::default();
    figs.lines_of(&result?);
    figs.print();
    Ok(())
}
