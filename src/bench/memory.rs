//! `iron bench memory`: what memory costs at scale. Recall over a generated projection of
//! many events and its semantic index (build times, sizes, p50/p99 of the CLI's every-word
//! query, of the any-word query under a scope prefix, and of the hybrid recall an expert's
//! wake runs); then, on a scratch
//! embedded log, each background worker's events/s against the projector's on the same
//! input, and how far each is behind after a burst and how long it takes to catch up.
//! Prints lines `bench memory.<name> <value> <unit>`. Not a test: figures vary with the machine.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::json;
use tokio_util::sync::CancellationToken;

use super::BenchError;
use super::log::{LogBenchError, remove_db, series};
use crate::aem::{Access, MemoryMount, Scope};
use crate::core::durable::{EventLog, StoredMessage};
use crate::core::envelope::Envelope;
use crate::core::event_kind::EventKind;
use crate::core::ids::EventId;
use crate::memory::consolidator::Consolidator;
use crate::memory::documents::DocumentIndex;
use crate::memory::emit::Emitter;
use crate::memory::extractor::Extractor;
use crate::memory::graph::KnowledgeGraph;
use crate::memory::projector::{self, ProjectorDeps};
use crate::memory::recall::{Recall, RecallFilter};
use crate::memory::reviewer::Reviewer;
use crate::memory::semantic::{self, HashingEmbedder, SemanticIndex};
use crate::memory::worker::Deriver;
use crate::memory::worker::{self, WorkerDeps};
use crate::protocol::payload::{FactLearned, Payload, ReplyDelivered};
use crate::spine::durable::{Embedded, EmbeddedOptions, StreamSpec};

/// Settings.
#[derive(Debug, Clone)]
pub struct MemoryBenchOptions {
    /// Events in the recall corpus.
    pub corpus: usize,
    /// Events in each burst on the log.
    pub burst: usize,
    /// Recall queries timed per kind.
    pub queries: usize,
    /// Directory for the scratch databases (its files are replaced).
    pub scratch_dir: PathBuf,
    /// Keep the corpus's projection and semantic index already in `scratch_dir` when they
    /// hold `corpus` events (to time recall again, or profile it, without rebuilding them).
    pub reuse: bool,
    /// Only recall at scale: not the workers on the log.
    pub recall_only: bool,
}

/// Words the corpus is written with: 36 common ones and a long tail of 5,000, so that queries
/// match anything from a handful to many thousands of events.
fn vocabulary() -> Vec<String> {
    const STEMS: &[&str] = &[
        "harbour",
        "bridge",
        "closed",
        "flood",
        "quay",
        "street",
        "ferry",
        "council",
        "water",
        "main",
        "burst",
        "inspection",
        "traffic",
        "crew",
        "engine",
        "fault",
        "storm",
        "warning",
        "school",
        "power",
        "outage",
        "road",
        "rail",
        "strike",
        "budget",
        "election",
        "fire",
        "rescue",
        "police",
        "hospital",
        "airport",
        "delay",
        "market",
        "price",
        "fuel",
        "port",
    ];
    debug_assert_eq!(STEMS.len(), COMMON);
    let mut words: Vec<String> = STEMS.iter().map(|s| s.to_string()).collect();
    for i in 0..5_000 {
        words.push(format!("{}{i}", STEMS[i % STEMS.len()]));
    }
    words
}

/// How many common words the vocabulary starts with.
const COMMON: usize = 36;

/// A small deterministic generator (xorshift), so runs are comparable.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// An index below `n`: half the time one of the first `common`, otherwise any.
    fn word(&mut self, n: usize, common: usize) -> usize {
        let pick = self.next();
        if pick.is_multiple_of(2) {
            (self.next() % common as u64) as usize
        } else {
            (self.next() % n as u64) as usize
        }
    }
}

/// Words of a sentence: half of them from the 36 common stems, half from the long tail.
fn sentence(rng: &mut Rng, words: &[String], len: usize) -> String {
    (0..len)
        .map(|_| words[rng.word(words.len(), COMMON)].as_str())
        .collect::<Vec<_>>()
        .join(" ")
}

const MESHES: usize = 10;
const ROLES: usize = 5;

/// The `i`th corpus event: a fact in one of 50 role scopes.
fn corpus_event(i: usize, rng: &mut Rng, words: &[String]) -> Envelope {
    let (mesh, role) = (i % MESHES, (i / MESHES) % ROLES);
    Envelope::new(
        "bench",
        ["facts".to_string(), format!("m{mesh}"), format!("r{role}")],
        "memory/extractor",
        EventKind::FactLearned,
        json!({"subject": format!("s{}", i % 10_000), "statement": sentence(rng, words, 14)}),
    )
    // The projection and the semantic index are built apart: the same id in both.
    .with_id(EventId::computed(&["bench corpus", &i.to_string()]))
}

/// Runs everything and prints its lines to `out`.
pub async fn memory(
    options: &MemoryBenchOptions,
    out: &mut impl Write,
) -> Result<(), LogBenchError> {
    std::fs::create_dir_all(&options.scratch_dir)?;
    recall_at_scale(options, out).await?;
    if options.recall_only {
        return Ok(());
    }
    workers(options, out).await
}

/// Whether the projection at `db` holds the `n` events of the corpus (`--reuse` keeps it).
fn projected(db: &Path, n: usize) -> bool {
    db.is_file() && Recall::open(db).and_then(|r| r.count()).ok() == Some(n as u64)
}

/// Whether the semantic index at `index` holds the corpus's `n` vectors (`--reuse` keeps it).
fn indexed(index: &Path, n: usize) -> bool {
    index.is_file()
        && semantic::indexed(index).is_some_and(|by| {
            by.iter()
                .any(|(name, count)| name == HashingEmbedder::NAME && *count == n as u64)
        })
}

/// Recall at scale: the corpus's projection and semantic index (built, or kept with
/// `--reuse`), then each kind of recall timed on them.
async fn recall_at_scale(
    options: &MemoryBenchOptions,
    out: &mut impl Write,
) -> Result<(), LogBenchError> {
    let db = options.scratch_dir.join("bench-recall.db");
    let index = options.scratch_dir.join("bench-semantic.db");
    let (n, queries) = (options.corpus, options.queries);
    if options.reuse && projected(&db, n) {
        // Brought to this build's layout, as the projector does when it opens a projection.
        drop(projector::open_writer(&db)?);
        writeln!(out, "bench memory.corpus_events {n} events (reused)")?;
    } else {
        project_corpus(&db, n, out).await?;
    }
    if options.reuse && indexed(&index, n) {
        writeln!(out, "bench memory.semantic_index {n} vectors (reused)")?;
    } else {
        index_corpus(&index, n, out).await?;
    }
    time_recall(&db, &index, queries, out).await
}

/// Builds the corpus's projection (`n` events) at `db` and prints its build time and size.
async fn project_corpus(db: &Path, n: usize, out: &mut impl Write) -> Result<(), LogBenchError> {
    remove_db(db);
    let path = db.to_path_buf();
    let built = tokio::task::spawn_blocking(move || -> Result<Duration, LogBenchError> {
        let words = vocabulary();
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        let mut conn = projector::open_writer(&path)?;
        let start = Instant::now();
        for from in (0..n).step_by(10_000) {
            let batch: Vec<StoredMessage> = (from..n.min(from + 10_000))
                .map(|i| {
                    let e = corpus_event(i, &mut rng, &words);
                    StoredMessage {
                        seq: i as u64 + 1,
                        subject: "mem.bench".into(),
                        msg_id: Some(e.event_id.to_string()),
                        payload: serde_json::to_vec(&e).unwrap_or_default(),
                        stored_ms: 0,
                    }
                })
                .collect();
            projector::apply_batch(&mut conn, "MEM", &batch)?;
        }
        Ok(start.elapsed())
    })
    .await
    .map_err(|e| LogBenchError::Stalled(e.to_string()))??;
    let size = std::fs::metadata(db)?.len() + wal_size(db);
    writeln!(out, "bench memory.corpus_events {n} events")?;
    writeln!(
        out,
        "bench memory.corpus_build {:.1} s",
        built.as_secs_f64()
    )?;
    writeln!(
        out,
        "bench memory.corpus_build_throughput {:.0} events/s",
        n as f64 / built.as_secs_f64().max(1e-9)
    )?;
    writeln!(
        out,
        "bench memory.corpus_db_size {:.1} MB",
        size as f64 / 1e6
    )?;
    Ok(())
}

/// Builds the semantic index of the corpus (`n` events) at `index`, as the semantic worker
/// writes it, and prints its build time and size.
async fn index_corpus(index: &Path, n: usize, out: &mut impl Write) -> Result<(), LogBenchError> {
    remove_db(index);
    let path = index.to_path_buf();
    let indexed = tokio::task::spawn_blocking(move || -> Result<Duration, LogBenchError> {
        let words = vocabulary();
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        let schema = SemanticIndex::new(Arc::new(HashingEmbedder)).schema();
        let mut conn =
            worker::open_state(&path, schema).map_err(|e| LogBenchError::Stalled(e.to_string()))?;
        let start = Instant::now();
        for from in (0..n).step_by(10_000) {
            let tx = conn.transaction()?;
            for i in from..n.min(from + 10_000) {
                let e = corpus_event(i, &mut rng, &words);
                let fact = e.payload::<FactLearned>().ok().and_then(|f| f.statement);
                let vector = HashingEmbedder::vector(fact.as_deref().unwrap_or(""));
                semantic::store(&tx, &e, i as u64 + 1, HashingEmbedder::NAME, &vector)?;
            }
            tx.commit()?;
        }
        Ok(start.elapsed())
    })
    .await
    .map_err(|e| LogBenchError::Stalled(e.to_string()))??;
    writeln!(
        out,
        "bench memory.semantic_index_build {:.1} s",
        indexed.as_secs_f64()
    )?;
    writeln!(
        out,
        "bench memory.semantic_index_size {:.1} MB",
        (std::fs::metadata(index)?.len() + wal_size(index)) as f64 / 1e6
    )?;
    Ok(())
}

/// Times `queries` recalls of each kind on the corpus at `db` and `index` and prints their
/// p50 and p99, and where hybrid recall's time went, phase by phase.
async fn time_recall(
    db: &Path,
    index: &Path,
    queries: usize,
    out: &mut impl Write,
) -> Result<(), LogBenchError> {
    let (path, index) = (db.to_path_buf(), index.to_path_buf());
    let lines = tokio::task::spawn_blocking(move || -> Result<Vec<String>, LogBenchError> {
        let words = vocabulary();
        let mut rng = Rng(42);
        let recall = Recall::open(&path)?;
        let mut every = Vec::with_capacity(queries);
        let mut any = Vec::with_capacity(queries);
        let mut hybrid = Vec::with_capacity(queries);
        let mut phases: Vec<semantic::HybridPhases> = Vec::with_capacity(queries);
        let mut hits = 0usize;
        for _ in 0..queries {
            let query = sentence(&mut rng, &words, 2);
            let t = Instant::now();
            hits += recall.recall(&query, &RecallFilter::default())?.len();
            every.push(t.elapsed());
            // As a wake does: any word of the instruction, under one role's scope.
            let prefix = format!(
                "facts/m{}/r{}",
                rng.next() % MESHES as u64,
                rng.next() % ROLES as u64
            );
            let instruction = sentence(&mut rng, &words, 8);
            let filter = RecallFilter {
                prefix: Some(prefix),
                limit: 8,
                ..RecallFilter::default()
            };
            let t = Instant::now();
            recall.recall_any(&instruction, &filter)?;
            any.push(t.elapsed());
            let t = Instant::now();
            let q = HashingEmbedder::query(&instruction);
            let mut phase = semantic::HybridPhases::default();
            semantic::hybrid_timed(&recall, &index, &instruction, Some(&q), &filter, &mut phase)?;
            hybrid.push(t.elapsed());
            phases.push(phase);
        }
        let phase = |of: fn(&semantic::HybridPhases) -> Duration| -> Vec<Duration> {
            phases.iter().map(of).collect()
        };
        Ok(vec![
            percentiles("fulltext_every_word", every),
            percentiles("fulltext_any_word_scoped", any),
            percentiles("hybrid_scoped", hybrid),
            percentiles("hybrid_scoped_words", phase(|p| p.words)),
            percentiles("hybrid_scoped_fulltext", phase(|p| p.fulltext)),
            percentiles("hybrid_scoped_vectors", phase(|p| p.vectors)),
            percentiles("hybrid_scoped_fuse", phase(|p| p.fuse)),
            format!(
                "bench memory.fulltext_mean_hits {:.1} events",
                hits as f64 / queries.max(1) as f64
            ),
        ])
    })
    .await
    .map_err(|e| LogBenchError::Stalled(e.to_string()))??;
    for line in lines {
        writeln!(out, "{line}")?;
    }
    Ok(())
}

fn wal_size(db: &Path) -> u64 {
    let mut wal = db.as_os_str().to_owned();
    wal.push("-wal");
    std::fs::metadata(PathBuf::from(wal)).map_or(0, |m| m.len())
}

fn percentiles(name: &str, latencies: Vec<Duration>) -> String {
    let s = series(latencies, Duration::ZERO);
    format!(
        "bench memory.{name}_p50 {:.2} ms\nbench memory.{name}_p99 {:.2} ms",
        s.p50_us / 1e3,
        s.p99_us / 1e3
    )
}

/// The burst's events: deliveries of two-claim bulletins by an expert with writable episodic
/// memory (each gives two facts, and every delivery after the first replaces the two beliefs
/// of the one before), between chat turns that give nothing and, one in five of those, a task
/// of that expert judged unanswered for one of three reasons (the reviewer's input).
fn burst(n: usize, round: usize) -> Vec<Envelope> {
    const REASONS: [&str; 3] = ["timed out", "the archive tool was refused", "rate limited"];
    (0..n)
        .map(|i| {
            if i % 2 == 0 {
                let status = if (i / 2) % 2 == 0 { "confirmed" } else { "contradicted" };
                let claims: Vec<_> = (0..2)
                    .map(|c| json!({"claim": format!("c{c}"), "text": format!("claim {c} of {i}"),
                                    "status": status, "sources": [{"outlet": "Wire", "owner": "w"}]}))
                    .collect();
                let delivered = ReplyDelivered {
                    task_id: format!("t-{round}-{i}"),
                    delivered: true,
                    channel: None,
                    text: format!("bulletin {round}.{i}"),
                    reason: None,
                    data: Some(json!({"id": format!("b-{round}-{i}"), "claims": claims})),
                    rest: Default::default(),
                };
                Envelope::new(
                    "bench",
                    ["sessions", "bench"],
                    "bench/publisher",
                    EventKind::ReplyDelivered,
                    delivered.to_value(),
                )
            } else if i % 10 == 1 {
                Envelope::new(
                    "bench",
                    ["tasks", "bench"],
                    "engine",
                    EventKind::TaskJudged,
                    json!({"task_id": format!("t-{round}-{i}"), "domain": "bench/publisher",
                           "answered": false, "instruction": format!("task {round}.{i}"),
                           "reason": REASONS[(i / 10) % REASONS.len()]}),
                )
            } else {
                Envelope::new(
                    "bench",
                    ["sessions", "bench"],
                    "bench/user",
                    EventKind::ChatTurn,
                    json!({"role": "user", "text": format!("turn {round}.{i}")}),
                )
            }
        })
        .collect()
}

/// The consumers measured, in the order the throughput runs take them (the extractor before
/// the workers that follow facts, so that their input holds the extractor's facts).
const CONSUMERS: [&str; 7] = [
    "projector",
    "extractor",
    "consolidator",
    "semantic",
    "graph",
    "documents",
    "reviewer",
];

/// The background consumers under measurement, each with its own database in one directory.
struct Consumers {
    dir: PathBuf,
}

impl Consumers {
    fn in_dir(dir: &Path) -> Self {
        let c = Consumers {
            dir: dir.to_path_buf(),
        };
        for name in CONSUMERS {
            remove_db(&c.path(name));
        }
        c
    }

    /// The database of the consumer `name`.
    fn path(&self, name: &str) -> PathBuf {
        match name {
            "projector" => self.dir.join("bench-workers-projection.db"),
            // Not `bench-semantic.db`: that is the corpus's index, which `--reuse` keeps.
            worker => self.dir.join(format!("bench-workers-{worker}.db")),
        }
    }

    /// Each one's cursor: (name, sequence handled).
    fn cursors(&self) -> Vec<(&'static str, u64)> {
        CONSUMERS
            .iter()
            .map(|&name| {
                let at = if name == "projector" {
                    Recall::open(self.path(name))
                        .and_then(|r| r.projected_seq("MEM"))
                        .unwrap_or(0)
                } else {
                    worker::progress(&self.path(name), "MEM")
                        .ok()
                        .flatten()
                        .map_or(0, |p| p.last_seq)
                };
                (name, at)
            })
            .collect()
    }

    /// Starts the named consumers on `log`; each task ends once `shutdown` is cancelled and
    /// what it derived is written.
    fn start(
        &self,
        log: &Embedded,
        which: &[&str],
        shutdown: &CancellationToken,
    ) -> Vec<tokio::task::JoinHandle<()>> {
        let mounts = vec![MemoryMount {
            kind: "episodic".into(),
            scope: Scope::Own,
            access: Access::ReadWrite,
            namespaces: vec!["facts/bench/publisher".into(), "facts/system".into()],
        }];
        which
            .iter()
            .map(|&name| {
                let (log, stop) = (log.clone(), shutdown.clone());
                let deps = WorkerDeps::new(log.clone(), name, self.path(name));
                match name {
                    "projector" => {
                        let deps = ProjectorDeps::new(log, self.path(name));
                        tokio::spawn(async move { drop(projector::run(deps, stop).await) })
                    }
                    "extractor" => {
                        let x = Extractor::from_mounts([("bench/publisher", mounts.as_slice())]);
                        tokio::spawn(async move { drop(worker::run(deps, x, stop).await) })
                    }
                    "consolidator" => {
                        tokio::spawn(
                            async move { drop(worker::run(deps, Consolidator, stop).await) },
                        )
                    }
                    "semantic" => {
                        let s = SemanticIndex::new(Arc::new(HashingEmbedder));
                        tokio::spawn(async move { drop(worker::run(deps, s, stop).await) })
                    }
                    "graph" => {
                        tokio::spawn(
                            async move { drop(worker::run(deps, KnowledgeGraph, stop).await) },
                        )
                    }
                    "documents" => {
                        let d = DocumentIndex::new(log);
                        tokio::spawn(async move { drop(worker::run(deps, d, stop).await) })
                    }
                    _ => {
                        let r = Reviewer::for_roles(["bench/publisher"]);
                        tokio::spawn(async move { drop(worker::run(deps, r, stop).await) })
                    }
                }
            })
            .collect()
    }

    /// Waits until each of `names` has handled `seq`; when each got there.
    async fn reach(
        &self,
        names: &[&'static str],
        seq: u64,
    ) -> Result<Vec<(&'static str, Duration)>, LogBenchError> {
        let start = Instant::now();
        let mut reached: Vec<(&'static str, Duration)> = Vec::new();
        loop {
            for (name, at) in self.cursors() {
                if names.contains(&name) && at >= seq && !reached.iter().any(|(n, _)| *n == name) {
                    reached.push((name, start.elapsed()));
                }
            }
            if reached.len() == names.len() {
                return Ok(reached);
            }
            if start.elapsed() > Duration::from_secs(600) {
                return Err(LogBenchError::Stalled(format!(
                    "not every one of {names:?} reached {seq}: {:?}",
                    self.cursors()
                )));
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }
}

async fn emit_all(log: &Embedded, events: &[Envelope]) -> Result<Duration, LogBenchError> {
    let emitter = Emitter::new(log.clone());
    let start = Instant::now();
    for e in events {
        emitter.emit(e).await?;
    }
    Ok(start.elapsed())
}

async fn workers(options: &MemoryBenchOptions, out: &mut impl Write) -> Result<(), LogBenchError> {
    let dir = &options.scratch_dir;
    let log_path = dir.join("bench-workers-log.db");
    remove_db(&log_path);
    let log = Embedded::open(&log_path, &[StreamSpec::mem()], EmbeddedOptions::default()).await?;
    let consumers = Consumers::in_dir(dir);
    let n = options.burst;

    // Throughput: one backlog, each consumer alone from the start of the stream. The
    // extractor goes before the workers that follow facts, so their input holds its facts.
    emit_all(&log, &burst(n, 0)).await?;
    for name in CONSUMERS {
        let head = log.last_sequence("MEM").await?;
        let shutdown = CancellationToken::new();
        let tasks = consumers.start(&log, &[name], &shutdown);
        let took = consumers.reach(&[name], head).await;
        shutdown.cancel();
        for t in tasks {
            let _ = t.await;
        }
        writeln!(
            out,
            "bench memory.{name}_throughput {:.0} events/s ({head} events)",
            head as f64 / took?[0].1.as_secs_f64().max(1e-9)
        )?;
    }

    // Lag: all of them running while a second burst is written as fast as emit() goes; how
    // far behind each is when the burst ends, and how long until it has handled the burst.
    let shutdown = CancellationToken::new();
    let tasks = consumers.start(&log, &CONSUMERS, &shutdown);
    let took = emit_all(&log, &burst(n, 1)).await?;
    let head = log.last_sequence("MEM").await?;
    let behind = consumers.cursors();
    writeln!(
        out,
        "bench memory.burst {n} events in {:.1} s ({:.0} events/s through emit())",
        took.as_secs_f64(),
        n as f64 / took.as_secs_f64().max(1e-9)
    )?;
    let reached = consumers.reach(&CONSUMERS, head).await;
    shutdown.cancel();
    for t in tasks {
        let _ = t.await;
    }
    for (name, when) in reached? {
        let at = behind
            .iter()
            .find(|(n, _)| *n == name)
            .map_or(0, |(_, s)| *s);
        writeln!(
            out,
            "bench memory.{name}_lag_after_burst {} events, caught up {:.2} s after the burst",
            head.saturating_sub(at),
            when.as_secs_f64()
        )?;
    }
    Ok(())
}

/// `iron bench memory`: in a temporary directory (or `dir`, kept, to inspect the databases;
/// with `reuse`, a corpus already built there is kept). With `recall_only`, not the workers.
pub async fn run(
    corpus: usize,
    burst: usize,
    queries: usize,
    dir: Option<std::path::PathBuf>,
    reuse: bool,
    recall_only: bool,
) -> Result<(), BenchError> {
    super::stats::print_machine("memory");
    let temp = tempfile::tempdir().map_err(|source| BenchError::Io {
        what: "creating a temporary directory".into(),
        source,
    })?;
    let options = MemoryBenchOptions {
        corpus,
        burst,
        queries,
        scratch_dir: dir.unwrap_or_else(|| temp.path().to_path_buf()),
        reuse,
        recall_only,
    };
    eprintln!(
        "building a projection of {corpus} events in {} (this takes a while)",
        options.scratch_dir.display()
    );
    Ok(memory(&options, &mut std::io::stdout()).await?)
}
