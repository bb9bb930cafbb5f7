//! The frame every derived-memory worker runs in (extractor, consolidator, semantic index): it
//! follows the MEM stream from its own cursor, hands each envelope to the worker's [`Deriver`],
//! and writes the events that derives through `emit()`. It may run behind the log; it never
//! holds anything up.
//!
//! Crash safety comes from one SQLite database per worker (`memory/<worker>.db`): the cursor,
//! the worker's own tables and the events it derived (an outbox) change in one transaction,
//! and the outbox is emitted after the commit and emptied once the log has acknowledged. A
//! `kill -9` anywhere therefore loses nothing (an uncommitted batch is read again from the
//! log; a committed outbox is emitted at the next start) and duplicates nothing: derived events
//! have computed ids, so an outbox emitted twice is one event in the log (its duplicate
//! window) and in the projection (`event_id` is its key).

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use futures_util::future::BoxFuture;
use rusqlite::{Connection, OptionalExtension, Transaction, params};
use tokio_util::sync::CancellationToken;

use super::emit::{EmitError, Emitter};
use crate::core::durable::{ConsumerSpec, DurableError, EventLog, LogConsumer, StartAt};
use crate::core::envelope::Envelope;

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS cursor(
    stream TEXT PRIMARY KEY, last_seq INTEGER NOT NULL, derived INTEGER NOT NULL DEFAULT 0,
    errors INTEGER NOT NULL DEFAULT 0, last_error TEXT, updated_ms INTEGER NOT NULL DEFAULT 0);
CREATE TABLE IF NOT EXISTS outbox(id INTEGER PRIMARY KEY AUTOINCREMENT, envelope TEXT NOT NULL);
";

/// What a worker does with each event of the log.
pub trait Deriver: Send + Sync + 'static {
    /// What [`Deriver::prepare`] found (a model's reading); `()` for a worker with no slow step.
    type Prepared: Default + Send + 'static;

    /// The worker's own tables, created with its state database.
    fn schema(&self) -> &'static str {
        ""
    }

    /// The slow part, done before and outside the transaction (a model call). It is done
    /// again for an event whose batch did not commit. A worker with no slow step leaves it
    /// out: its `Prepared` is `()`.
    fn prepare<'a>(&'a self, _event: &'a Envelope) -> BoxFuture<'a, Self::Prepared> {
        Box::pin(std::future::ready(Self::Prepared::default()))
    }

    /// [`Deriver::prepare`] for each of a batch's events, in order: one result per event. A
    /// worker whose slow step is faster in batches (an embedding model reads many texts at
    /// once) does them together.
    fn prepare_all<'a>(&'a self, events: &'a [Envelope]) -> BoxFuture<'a, Vec<Self::Prepared>> {
        Box::pin(async move {
            let mut prepared = Vec::with_capacity(events.len());
            for event in events {
                prepared.push(self.prepare(event).await);
            }
            prepared
        })
    }

    /// What `event` (stream sequence `seq`) derives, each event with a computed id and
    /// `cause` set. It may read and write the worker's own tables through `tx`; what it
    /// returns is emitted once `tx` has committed.
    fn derive(
        &self,
        tx: &Transaction<'_>,
        seq: u64,
        event: &Envelope,
        prepared: Self::Prepared,
    ) -> rusqlite::Result<Derived>;
}

/// What one event gave.
#[derive(Debug, Default)]
pub struct Derived {
    /// Events to write.
    pub events: Vec<Envelope>,
    /// Why something could not be derived from it (counted as an error, and shown by
    /// `iron memory status`).
    pub problem: Option<String>,
}

impl From<Vec<Envelope>> for Derived {
    fn from(events: Vec<Envelope>) -> Self {
        Derived {
            events,
            problem: None,
        }
    }
}

/// Where a worker runs.
#[derive(Debug, Clone)]
pub struct WorkerDeps<L> {
    /// The log it follows and writes to.
    pub log: L,
    /// Its state database (created if missing).
    pub state: PathBuf,
    /// Its name (`extractor`), for logs.
    pub name: String,
    /// Stream followed (`MEM`).
    pub stream: String,
    /// Subject filter; must cover the whole stream (`mem.>`).
    pub filter_subject: String,
    /// Most events derived in one transaction.
    pub max_batch: usize,
    /// How long one wait for new events lasts before shutdown is checked again.
    pub idle_wait: Duration,
}

impl<L: EventLog> WorkerDeps<L> {
    /// The worker `name` following `MEM` with its state in `state`.
    pub fn new(log: L, name: impl Into<String>, state: impl Into<PathBuf>) -> Self {
        Self {
            log,
            state: state.into(),
            name: name.into(),
            stream: "MEM".into(),
            filter_subject: "mem.>".into(),
            max_batch: 256,
            idle_wait: Duration::from_millis(500),
        }
    }
}

/// Why a worker stopped.
#[derive(Debug, thiserror::Error)]
pub enum WorkerError {
    /// Its state database failed.
    #[error("memory worker state {path}: {source}")]
    State {
        /// Path.
        path: String,
        /// Cause.
        #[source]
        source: rusqlite::Error,
    },
    /// Its state database could not be put in place.
    #[error("memory worker state {path}: {source}")]
    Create {
        /// Path.
        path: String,
        /// Cause.
        #[source]
        source: std::io::Error,
    },
    /// The log failed.
    #[error("memory worker: {0}")]
    Log(#[from] DurableError),
    /// A derived event could not be written this time (the log refused or was unreachable);
    /// it stays in the outbox and is written at the next start.
    #[error("memory worker: a derived event was not written: {0}")]
    Emit(#[from] EmitError),
}

/// A worker's progress, as its state database holds it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Progress {
    /// Last stream sequence handled.
    pub last_seq: u64,
    /// Events derived so far.
    pub derived: u64,
    /// Events it could not derive from or write (skipped, with the last reason).
    pub errors: u64,
    /// The last such reason.
    pub last_error: Option<String>,
    /// Derived events committed but not yet written to the log.
    pub pending: u64,
    /// When it last handled an event (ms since the epoch; 0 never).
    pub updated_ms: u64,
}

fn state_err(path: &Path) -> impl Fn(rusqlite::Error) -> WorkerError + '_ {
    move |source| WorkerError::State {
        path: path.display().to_string(),
        source,
    }
}

/// Opens (creating, whole) a worker's state database with the frame's tables and `extra`.
pub fn open_state(path: &Path, extra: &str) -> Result<Connection, WorkerError> {
    let prepare = |p: &Path| -> Result<Connection, WorkerError> {
        let conn = super::projector::open_wal(p).map_err(state_err(p))?;
        conn.execute_batch(SCHEMA).map_err(state_err(p))?;
        conn.execute_batch(extra).map_err(state_err(p))?;
        Ok(conn)
    };
    if !path.exists() {
        let io = |source| WorkerError::Create {
            path: path.display().to_string(),
            source,
        };
        crate::core::fs::create_whole(path, io, |tmp| prepare(tmp).map(drop))?;
    }
    prepare(path)
}

/// Reads a worker's progress from its state database, read-only (`None`: it has not run).
pub fn progress(path: &Path, stream: &str) -> Result<Option<Progress>, rusqlite::Error> {
    if !path.is_file() {
        return Ok(None);
    }
    let conn = Connection::open_with_flags(path, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)?;
    conn.busy_timeout(Duration::from_secs(5))?;
    let pending: i64 = conn.query_row("SELECT count(*) FROM outbox", [], |r| r.get(0))?;
    let found = conn
        .query_row(
            "SELECT last_seq, derived, errors, last_error, updated_ms FROM cursor WHERE stream = ?1",
            [stream],
            |r| {
                Ok(Progress {
                    last_seq: r.get::<_, i64>(0)? as u64,
                    derived: r.get::<_, i64>(1)? as u64,
                    errors: r.get::<_, i64>(2)? as u64,
                    last_error: r.get(3)?,
                    pending: 0,
                    updated_ms: r.get::<_, i64>(4)? as u64,
                })
            },
        )
        .optional()?;
    Ok(Some(Progress {
        pending: pending as u64,
        ..found.unwrap_or_default()
    }))
}

/// One event of a batch, parsed and prepared.
struct Item<P> {
    seq: u64,
    /// `None` for a message that is not an envelope (the projector records those).
    event: Option<(Envelope, P)>,
}

/// One batch's commit: derives from `items` (those past the cursor, in order) and puts what
/// they derive in the outbox, all in one transaction.
fn derive_batch<D: Deriver>(
    conn: &mut Connection,
    deriver: &D,
    stream: &str,
    items: Vec<Item<D::Prepared>>,
) -> rusqlite::Result<()> {
    let tx = conn.transaction()?;
    let mut last = cursor(&tx, stream)?;
    let (mut derived, mut errors, mut last_error) = (0i64, 0i64, None::<String>);
    for item in items {
        if item.seq <= last {
            continue; // derived already (a redelivery)
        }
        last = item.seq;
        let Some((event, prepared)) = item.event else {
            continue;
        };
        let out = deriver.derive(&tx, item.seq, &event, prepared)?;
        if let Some(problem) = out.problem {
            errors += 1;
            last_error = Some(format!("seq {}: {problem}", item.seq));
        }
        for e in out.events {
            match serde_json::to_string(&e) {
                Ok(text) => {
                    tx.execute("INSERT INTO outbox(envelope) VALUES (?1)", [text])?;
                    derived += 1;
                }
                Err(e) => {
                    errors += 1;
                    last_error = Some(format!("seq {}: {e}", item.seq));
                }
            }
        }
    }
    tx.execute(
        "INSERT INTO cursor(stream, last_seq, derived, errors, last_error, updated_ms)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6)
         ON CONFLICT(stream) DO UPDATE SET last_seq = excluded.last_seq,
           derived = derived + excluded.derived, errors = errors + excluded.errors,
           last_error = coalesce(excluded.last_error, last_error),
           updated_ms = excluded.updated_ms",
        params![
            stream,
            last as i64,
            derived,
            errors,
            last_error,
            crate::core::envelope::now_ms() as i64
        ],
    )?;
    tx.commit()
}

fn cursor(conn: &Connection, stream: &str) -> rusqlite::Result<u64> {
    conn.query_row(
        "SELECT last_seq FROM cursor WHERE stream = ?1",
        [stream],
        |r| r.get::<_, i64>(0),
    )
    .optional()
    .map(|s| s.unwrap_or(0) as u64)
}

/// The worker's database, shared with the blocking pool.
type Shared = Arc<Mutex<Connection>>;

/// Runs `deriver` as the worker `deps.name` until `shutdown`. Lifecycle nodes and tests drive
/// this same function.
pub async fn run<L: EventLog, D: Deriver>(
    deps: WorkerDeps<L>,
    deriver: D,
    shutdown: CancellationToken,
) -> Result<u64, WorkerError> {
    let path = deps.state.clone();
    let schema = deriver.schema();
    let conn = blocking(&path, move |p| open_state(&p, schema)).await?;
    let shared: Shared = Arc::new(Mutex::new(conn));
    let deriver = Arc::new(deriver);
    let emitter = Emitter::new(deps.log.clone());
    flush(&shared, &path, &emitter, &deps.name).await?;

    let start = {
        let stream = deps.stream.clone();
        with(&shared, &path, move |conn| cursor(conn, &stream)).await?
    };
    // The cursor is the worker's own: an ephemeral consumer from just after it, and nothing
    // the server must remember for us.
    let mut consumer = deps
        .log
        .consumer(ConsumerSpec {
            stream: deps.stream.clone(),
            durable: None,
            filter_subject: deps.filter_subject.clone(),
            start: StartAt::Sequence(start + 1),
            ack_wait: Duration::from_secs(60),
        })
        .await?;
    let mut last = start;
    loop {
        let first = tokio::select! {
            _ = shutdown.cancelled() => return Ok(last),
            next = consumer.next(deps.idle_wait) => next?,
        };
        let Some((first, ack)) = first else { continue };
        let mut messages = vec![first.message];
        let mut acks = vec![ack];
        while messages.len() < deps.max_batch {
            match consumer.next(Duration::ZERO).await? {
                Some((d, ack)) => {
                    messages.push(d.message);
                    acks.push(ack);
                }
                None => break,
            }
        }
        messages.sort_by_key(|m| m.seq);
        messages.dedup_by_key(|m| m.seq);
        // A redelivery can come after newer messages; whatever lies between the cursor and
        // this batch is read from the log, so nothing is passed over.
        if let Some(lowest) = messages.iter().map(|m| m.seq).find(|s| *s > last)
            && lowest > last + 1
        {
            let mut fill = deps
                .log
                .read(
                    &deps.stream,
                    &deps.filter_subject,
                    last + 1,
                    (lowest - last - 1) as usize,
                )
                .await?;
            fill.append(&mut messages);
            messages = fill;
        }
        // Parsed in order; the envelopes are prepared together, then paired back.
        let (mut seqs, mut events) = (Vec::new(), Vec::new());
        for m in messages.into_iter().filter(|m| m.seq > last) {
            let event = serde_json::from_slice::<Envelope>(&m.payload).ok();
            seqs.push((m.seq, event.is_some()));
            events.extend(event);
        }
        let mut prepared = deriver.prepare_all(&events).await;
        if prepared.len() != events.len() {
            tracing::warn!(
                "{}: {} prepared for {} events; the rest derive unprepared",
                deps.name,
                prepared.len(),
                events.len()
            );
            prepared.resize_with(events.len(), Default::default);
        }
        let mut pairs = events.into_iter().zip(prepared);
        let items: Vec<_> = seqs
            .into_iter()
            .map(|(seq, parsed)| Item {
                seq,
                event: parsed.then(|| pairs.next()).flatten(),
            })
            .collect();
        let (stream, d) = (deps.stream.clone(), deriver.clone());
        last = with(&shared, &path, move |conn| {
            derive_batch(conn, d.as_ref(), &stream, items)?;
            cursor(conn, &stream)
        })
        .await?;
        flush(&shared, &path, &emitter, &deps.name).await?;
        consumer.ack(acks).await?;
    }
}

/// Writes the outbox to the log, oldest first, removing each event once the log has it. An
/// event that can never be written (too large, invalid) is removed and counted as an error.
async fn flush<L: EventLog>(
    shared: &Shared,
    path: &Path,
    emitter: &Emitter<L>,
    worker: &str,
) -> Result<(), WorkerError> {
    let pending = with(shared, path, |conn| {
        let mut stmt = conn.prepare("SELECT id, envelope FROM outbox ORDER BY id")?;
        let rows = stmt.query_map([], |r| Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?)))?;
        rows.collect::<rusqlite::Result<Vec<_>>>()
    })
    .await?;
    for (id, text) in pending {
        let problem = match serde_json::from_str::<Envelope>(&text) {
            Ok(event) => match emitter.emit(&event).await {
                Ok(_) => None,
                Err(e) if e.is_permanent() => Some(e.to_string()),
                Err(e) => return Err(e.into()),
            },
            Err(e) => Some(format!("outbox row {id} is not an envelope: {e}")),
        };
        if let Some(reason) = &problem {
            tracing::warn!(%reason, "{worker}: a derived event was dropped");
        }
        with(shared, path, move |conn| {
            let tx = conn.transaction()?;
            tx.execute("DELETE FROM outbox WHERE id = ?1", [id])?;
            if let Some(reason) = problem {
                tx.execute(
                    "UPDATE cursor SET errors = errors + 1, last_error = ?1",
                    [reason],
                )?;
            }
            tx.commit()
        })
        .await?;
    }
    Ok(())
}

/// Runs `f` on the worker's state in the blocking pool.
async fn with<T: Send + 'static>(
    shared: &Shared,
    path: &Path,
    f: impl FnOnce(&mut Connection) -> rusqlite::Result<T> + Send + 'static,
) -> Result<T, WorkerError> {
    let shared = shared.clone();
    blocking(path, move |p| {
        let mut guard = shared.lock().unwrap_or_else(PoisonError::into_inner);
        f(&mut guard).map_err(state_err(&p))
    })
    .await
}

async fn blocking<T: Send + 'static>(
    path: &Path,
    f: impl FnOnce(PathBuf) -> Result<T, WorkerError> + Send + 'static,
) -> Result<T, WorkerError> {
    let p = path.to_path_buf();
    tokio::task::spawn_blocking(move || f(p))
        .await
        .map_err(|e| {
            WorkerError::Log(DurableError::Backend {
                op: "memory worker",
                source: Box::new(e),
            })
        })?
}
