//! The embedded backend: the durable plane in one SQLite file (WAL, `synchronous=FULL`, so an
//! acknowledged append survives a crash), with JetStream's semantics: per-stream sequences,
//! deduplication of message ids inside each stream's window, append-only streams (enforced by
//! triggers as well as by the API), durable consumers with explicit acks, compare-and-set KV
//! with per-bucket TTL, and documents.
//!
//! Differences from JetStream, by design: an unacknowledged delivery is delivered again when the
//! consumer is reopened (not after `ack_wait` while it stays open); waiting consumers are woken
//! by appends made through the same handle and otherwise poll every 250 ms; an append may expect
//! its subject's last sequence only on a stream that declares fencing (`StreamSpec::fenced`).

use std::collections::{BTreeSet, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use rusqlite::{Connection, params};
use tokio::sync::{Notify, oneshot};

use super::bootstrap::{BootstrapError, diff_config};
use super::streams::StreamSpec;
use super::subject;
use crate::core::durable::{
    AppendAck, AppendRequest, ConsumerSpec, Delivery, DurableError, EventLog, LogConsumer, StartAt,
    StoredMessage,
};

mod append;
mod kv;
pub use append::Stages;
use append::{Pending, writer};

/// Settings of the embedded log.
#[derive(Debug, Clone)]
pub struct EmbeddedOptions {
    /// Largest message accepted (the NATS default, 1 MiB, so both backends refuse alike).
    pub max_message_size: usize,
    /// Upper bound of every database operation (lock waits included).
    pub timeout: Duration,
    /// Time where each append's time goes ([`Stages`], read with [`Embedded::take_stages`]):
    /// the instrument of `iron bench log`, off by default.
    pub time_stages: bool,
}

impl Default for EmbeddedOptions {
    fn default() -> Self {
        Self {
            max_message_size: 1024 * 1024,
            timeout: Duration::from_secs(10),
            time_stages: false,
        }
    }
}

struct Inner {
    conn: Mutex<Connection>,
    /// Appends for the handle's writer thread, which writes all that wait in one transaction
    /// (group commit).
    writes: std::sync::mpsc::Sender<Pending>,
    /// Transactions that wrote appends (fewer than the appends when writers overlap).
    commits: std::sync::atomic::AtomicU64,
    /// Where the appends' time went, when the options ask for it.
    stages: Option<Mutex<Stages>>,
    appended: Notify,
    streams: Vec<StreamSpec>,
    options: EmbeddedOptions,
    path: PathBuf,
}

/// A handle on the embedded durable plane. Cheap to clone; one SQLite connection behind it.
#[derive(Clone)]
pub struct Embedded {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Embedded {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Embedded")
            .field("path", &self.inner.path)
            .finish_non_exhaustive()
    }
}

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS streams(name TEXT PRIMARY KEY, config TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS messages(
    stream TEXT NOT NULL, seq INTEGER NOT NULL, subject TEXT NOT NULL, msg_id TEXT,
    payload BLOB NOT NULL, ts_ms INTEGER NOT NULL, PRIMARY KEY(stream, seq)) WITHOUT ROWID;
-- Duplicates are found in the writer's memory (append.rs); the index that served
-- them once cost every append a write at a random place.
DROP INDEX IF EXISTS messages_msg_id;
-- Subjects are indexed only for the streams that declare fencing (see `fence_index`); an
-- index of every stream's subjects cost every append a second page.
DROP INDEX IF EXISTS messages_subject;
CREATE TRIGGER IF NOT EXISTS messages_no_delete BEFORE DELETE ON messages
    BEGIN SELECT RAISE(ABORT, 'the log is append-only'); END;
CREATE TRIGGER IF NOT EXISTS messages_no_update BEFORE UPDATE ON messages
    BEGIN SELECT RAISE(ABORT, 'the log is append-only'); END;
CREATE TABLE IF NOT EXISTS consumers(
    stream TEXT NOT NULL, name TEXT NOT NULL, filter TEXT NOT NULL, ack_floor INTEGER NOT NULL,
    PRIMARY KEY(stream, name));
CREATE TABLE IF NOT EXISTS kv_buckets(bucket TEXT PRIMARY KEY, ttl_ms INTEGER, last_rev INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS kv(
    bucket TEXT NOT NULL, key TEXT NOT NULL, value BLOB NOT NULL, revision INTEGER NOT NULL,
    written_ms INTEGER NOT NULL, deleted INTEGER NOT NULL, PRIMARY KEY(bucket, key));
CREATE TABLE IF NOT EXISTS object_buckets(bucket TEXT PRIMARY KEY);
CREATE TABLE IF NOT EXISTS objects(
    bucket TEXT NOT NULL, name TEXT NOT NULL, data BLOB NOT NULL, PRIMARY KEY(bucket, name));
";

/// The index of a fenced stream's subjects (created by [`Embedded::open`]) and the query of a
/// subject's last sequence that uses it. The stream's name is written into both: a partial
/// index serves only a query whose condition names its stream as a literal.
pub(crate) fn fence_index(stream: &str) -> (String, String) {
    let index = format!("messages_fence_{stream}");
    (
        format!(
            "CREATE INDEX IF NOT EXISTS {index} ON messages(subject, seq) WHERE stream = '{stream}'"
        ),
        format!(
            "SELECT coalesce(max(seq), 0) FROM messages INDEXED BY {index}
             WHERE stream = '{stream}' AND subject = ?1"
        ),
    )
}

/// Whether `e` says another connection holds the lock (worth waiting for).
fn is_busy(e: &rusqlite::Error) -> bool {
    matches!(
        e.sqlite_error_code(),
        Some(rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked)
    )
}

fn sql(op: &'static str) -> impl Fn(rusqlite::Error) -> DurableError {
    move |e| {
        if is_busy(&e) {
            DurableError::Unavailable {
                op,
                source: Box::new(e),
            }
        } else {
            DurableError::Backend {
                op,
                source: Box::new(e),
            }
        }
    }
}

/// The rules of JetStream KV keys and bucket names, so both backends accept the same names.
fn check_name(what: &'static str, name: &str, allow_dot: bool) -> Result<(), DurableError> {
    let ok_char = |c: char| {
        c.is_ascii_alphanumeric()
            || matches!(c, '-' | '_')
            || (allow_dot && matches!(c, '.' | '/' | '='))
    };
    let reason = if name.is_empty() {
        Some("it is empty")
    } else if !name.chars().all(ok_char) {
        Some("it may only contain letters, digits, '-', '_' (keys also '.', '/', '=')")
    } else if name.starts_with('.') || name.ends_with('.') {
        Some("it starts or ends with '.'")
    } else {
        None
    };
    match reason {
        Some(reason) => Err(DurableError::InvalidName {
            what,
            name: name.to_owned(),
            reason,
        }),
        None => Ok(()),
    }
}

impl Embedded {
    /// Where the appends' time went since the last call, when the log was opened with
    /// [`EmbeddedOptions::time_stages`] (otherwise `None`).
    pub fn take_stages(&self) -> Option<Stages> {
        let stages = self.inner.stages.as_ref()?;
        Some(std::mem::take(
            &mut *stages.lock().unwrap_or_else(PoisonError::into_inner),
        ))
    }

    /// Opens (or creates) the log at `path`, creating each declared stream that is missing and
    /// verifying each existing one field by field, like the JetStream bootstrap.
    pub async fn open(
        path: impl AsRef<Path>,
        streams: &[StreamSpec],
        options: EmbeddedOptions,
    ) -> Result<Self, BootstrapError> {
        let path = path.as_ref().to_path_buf();
        let streams = streams.to_vec();
        let opened =
            tokio::task::spawn_blocking(move || Self::open_blocking(path, streams, options));
        opened.await.map_err(|e| {
            BootstrapError::Durable(DurableError::Backend {
                op: "open embedded log",
                source: Box::new(e),
            })
        })?
    }

    fn open_blocking(
        path: PathBuf,
        streams: Vec<StreamSpec>,
        options: EmbeddedOptions,
    ) -> Result<Self, BootstrapError> {
        let conn = Connection::open(&path).map_err(|source| BootstrapError::Database {
            path: path.display().to_string(),
            source,
        })?;
        // Switching a fresh file to WAL and creating its tables can report "busy" without
        // waiting on the busy handler while another process does the same; such a start is
        // tried again within the configured timeout.
        let deadline = std::time::Instant::now() + options.timeout;
        loop {
            match Self::prepare(&conn, &path, &streams, &options) {
                Err(BootstrapError::Database { source, .. })
                    if is_busy(&source) && std::time::Instant::now() < deadline =>
                {
                    std::thread::sleep(Duration::from_millis(10));
                }
                Err(e) => return Err(e),
                Ok(()) => break,
            }
        }
        let (writes, queued) = std::sync::mpsc::channel();
        let inner = Arc::new(Inner {
            conn: Mutex::new(conn),
            writes,
            commits: Default::default(),
            stages: options.time_stages.then(Default::default),
            appended: Notify::new(),
            streams,
            options,
            path,
        });
        // The writer holds the handle only while it writes: it ends when the last clone of the
        // handle is dropped (its sender with it).
        let weak = Arc::downgrade(&inner);
        std::thread::Builder::new()
            .name("iron-log-writer".into())
            .spawn(move || writer(weak, queued))
            .map_err(|e| {
                BootstrapError::Durable(DurableError::Backend {
                    op: "start the log's writer",
                    source: Box::new(e),
                })
            })?;
        Ok(Self { inner })
    }

    /// Sets the connection up (WAL, full sync, schema) and creates each declared stream that
    /// is missing or verifies the stored one.
    fn prepare(
        conn: &Connection,
        path: &Path,
        streams: &[StreamSpec],
        options: &EmbeddedOptions,
    ) -> Result<(), BootstrapError> {
        let db_err = |source| BootstrapError::Database {
            path: path.display().to_string(),
            source,
        };
        conn.busy_timeout(options.timeout).map_err(db_err)?;
        conn.pragma_update(None, "journal_mode", "WAL")
            .map_err(db_err)?;
        conn.pragma_update(None, "synchronous", "FULL")
            .map_err(db_err)?;
        conn.execute_batch(SCHEMA).map_err(db_err)?;
        for spec in streams.iter().filter(|s| s.fenced) {
            // Written into SQL: only a name of letters, digits, '-' and '_'.
            check_name("stream", &spec.name, false).map_err(BootstrapError::Durable)?;
            conn.execute(&fence_index(&spec.name).0, [])
                .map_err(db_err)?;
        }
        for spec in streams {
            let declared = spec.server_config();
            // Insert-if-absent then read back, so processes opening a fresh log at the
            // same moment agree on one stored configuration instead of racing.
            conn.execute(
                "INSERT INTO streams(name, config) VALUES (?1, ?2) ON CONFLICT(name) DO NOTHING",
                params![spec.name, declared.to_string()],
            )
            .map_err(db_err)?;
            let text: String = conn
                .query_row(
                    "SELECT config FROM streams WHERE name = ?1",
                    [&spec.name],
                    |row| row.get(0),
                )
                .map_err(db_err)?;
            let found: serde_json::Value =
                serde_json::from_str(&text).map_err(|e| BootstrapError::Protocol {
                    stream: spec.name.clone(),
                    detail: format!("stored configuration is not JSON: {e}"),
                })?;
            let diffs = diff_config(&declared, &found);
            if !diffs.is_empty() {
                return Err(BootstrapError::StreamMismatch {
                    stream: spec.name.clone(),
                    diffs,
                });
            }
        }
        Ok(())
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.inner.path
    }

    /// Runs `f` on the connection in a blocking task, within the configured timeout.
    async fn call<T: Send + 'static>(
        &self,
        op: &'static str,
        f: impl FnOnce(&mut Connection, &Inner) -> Result<T, DurableError> + Send + 'static,
    ) -> Result<T, DurableError> {
        let inner = self.inner.clone();
        let task = tokio::task::spawn_blocking(move || {
            let mut conn = inner.conn.lock().unwrap_or_else(PoisonError::into_inner);
            f(&mut conn, &inner)
        });
        match tokio::time::timeout(self.inner.options.timeout, task).await {
            Err(_) => Err(DurableError::Timeout {
                op,
                after: self.inner.options.timeout,
            }),
            Ok(Err(join)) => Err(DurableError::Backend {
                op,
                source: Box::new(join),
            }),
            Ok(Ok(result)) => result,
        }
    }

    fn spec(&self, stream: &str) -> Result<&StreamSpec, DurableError> {
        self.inner
            .streams
            .iter()
            .find(|s| s.name == stream)
            .ok_or_else(|| DurableError::NotFound {
                what: format!("stream {stream}"),
            })
    }

    /// Reads matching messages from `from` on; returns them and the next sequence to scan.
    async fn read_page(
        &self,
        stream: &str,
        filter: &str,
        from: u64,
        max: usize,
    ) -> Result<(Vec<StoredMessage>, u64), DurableError> {
        let stream = stream.to_owned();
        let filter = filter.to_owned();
        self.call("read", move |conn, _| {
            let mut stmt = conn
                .prepare_cached(
                    "SELECT seq, subject, msg_id, payload, ts_ms FROM messages
                     WHERE stream = ?1 AND seq >= ?2 ORDER BY seq LIMIT 512",
                )
                .map_err(sql("read"))?;
            let mut out = Vec::new();
            let mut next = from;
            loop {
                let rows = stmt
                    .query_map(params![stream, next as i64], |row| {
                        Ok(StoredMessage {
                            seq: row.get::<_, i64>(0)? as u64,
                            subject: row.get(1)?,
                            msg_id: row.get(2)?,
                            payload: row.get(3)?,
                            stored_ms: row.get::<_, i64>(4)?.max(0) as u64,
                        })
                    })
                    .map_err(sql("read"))?
                    .collect::<Result<Vec<_>, _>>()
                    .map_err(sql("read"))?;
                if rows.is_empty() {
                    return Ok((out, next));
                }
                for message in rows {
                    next = message.seq + 1;
                    if subject::matches(&filter, &message.subject) {
                        out.push(message);
                        if out.len() >= max {
                            return Ok((out, next));
                        }
                    }
                }
            }
        })
        .await
    }
}

impl EventLog for Embedded {
    type Consumer = EmbeddedConsumer;

    async fn append(&self, request: AppendRequest) -> Result<AppendAck, DurableError> {
        let stream = self
            .inner
            .streams
            .iter()
            .position(|s| s.takes(&request.subject))
            .ok_or_else(|| DurableError::NoStream {
                subject: request.subject.clone(),
            })?;
        let size = request.payload.len() + request.msg_id.len();
        let max = self.inner.options.max_message_size;
        if size > max {
            return Err(DurableError::TooLarge { size, max });
        }
        let (answer, answered) = oneshot::channel();
        let queued = self.inner.writes.send(Pending {
            stream,
            request,
            answer,
            queued_at: std::time::Instant::now(),
        });
        if queued.is_err() {
            return Err(DurableError::Backend {
                op: "append",
                source: "the log's writer thread has stopped".into(),
            });
        }
        match tokio::time::timeout(self.inner.options.timeout, answered).await {
            Ok(Ok(result)) => result,
            Ok(Err(_)) => Err(DurableError::Backend {
                op: "append",
                source: "the batch writing this append went away".into(),
            }),
            Err(_) => Err(DurableError::Timeout {
                op: "append",
                after: self.inner.options.timeout,
            }),
        }
    }

    async fn read(
        &self,
        stream: &str,
        filter_subject: &str,
        from_seq: u64,
        max: usize,
    ) -> Result<Vec<StoredMessage>, DurableError> {
        self.spec(stream)?;
        Ok(self
            .read_page(stream, filter_subject, from_seq.max(1), max)
            .await?
            .0)
    }

    async fn last_sequence(&self, stream: &str) -> Result<u64, DurableError> {
        self.spec(stream)?;
        let stream = stream.to_owned();
        self.call("last sequence", move |conn, _| {
            conn.query_row(
                "SELECT coalesce(max(seq), 0) FROM messages WHERE stream = ?1",
                [&stream],
                |row| row.get::<_, i64>(0),
            )
            .map(|s| s as u64)
            .map_err(sql("last sequence"))
        })
        .await
    }

    async fn consumer(&self, spec: ConsumerSpec) -> Result<EmbeddedConsumer, DurableError> {
        self.spec(&spec.stream)?;
        let last = self.last_sequence(&spec.stream).await?;
        let initial_floor = match spec.start {
            StartAt::First => 0,
            StartAt::Sequence(seq) => seq.saturating_sub(1),
            StartAt::New => last,
        };
        let floor = match &spec.durable {
            None => initial_floor,
            Some(name) => {
                let (stream, name, filter) = (
                    spec.stream.clone(),
                    name.clone(),
                    spec.filter_subject.clone(),
                );
                self.call("consumer", move |conn, _| {
                    conn.execute(
                        "INSERT OR IGNORE INTO consumers(stream, name, filter, ack_floor)
                         VALUES (?1, ?2, ?3, ?4)",
                        params![stream, name, filter, initial_floor as i64],
                    )
                    .map_err(sql("consumer"))?;
                    conn.query_row(
                        "SELECT ack_floor FROM consumers WHERE stream = ?1 AND name = ?2",
                        params![stream, name],
                        |row| row.get::<_, i64>(0),
                    )
                    .map(|f| f as u64)
                    .map_err(sql("consumer"))
                })
                .await?
            }
        };
        Ok(EmbeddedConsumer {
            log: self.clone(),
            spec,
            next_seq: floor + 1,
            floor,
            high: floor,
            pending: BTreeSet::new(),
            buffer: VecDeque::new(),
        })
    }

    async fn delete_message(&self, stream: &str, _seq: u64) -> Result<(), DurableError> {
        let spec = self.spec(stream)?;
        Err(DurableError::Denied {
            op: "delete",
            stream: spec.name.clone(),
            source: (!spec.deny_delete)
                .then(|| "the embedded log never deletes single messages".into()),
        })
    }

    async fn purge_stream(&self, stream: &str) -> Result<(), DurableError> {
        let spec = self.spec(stream)?;
        Err(DurableError::Denied {
            op: "purge",
            stream: spec.name.clone(),
            source: (!spec.deny_purge).then(|| "the embedded log never purges".into()),
        })
    }

    fn max_message_size(&self) -> usize {
        self.inner.options.max_message_size
    }
}

/// A consumer of the embedded log.
pub struct EmbeddedConsumer {
    log: Embedded,
    spec: ConsumerSpec,
    next_seq: u64,
    floor: u64,
    high: u64,
    pending: BTreeSet<u64>,
    buffer: VecDeque<StoredMessage>,
}

impl LogConsumer for EmbeddedConsumer {
    type Ack = u64;

    async fn next(&mut self, wait: Duration) -> Result<Option<(Delivery, u64)>, DurableError> {
        let deadline = tokio::time::Instant::now() + wait;
        loop {
            if let Some(message) = self.buffer.pop_front() {
                let seq = message.seq;
                self.pending.insert(seq);
                self.high = self.high.max(seq);
                return Ok(Some((
                    Delivery {
                        message,
                        delivered: 1,
                    },
                    seq,
                )));
            }
            let appended = self.log.inner.appended.notified();
            tokio::pin!(appended);
            appended.as_mut().enable();
            let (page, next) = self
                .log
                .read_page(
                    &self.spec.stream,
                    &self.spec.filter_subject,
                    self.next_seq,
                    256,
                )
                .await?;
            self.next_seq = next;
            if !page.is_empty() {
                self.buffer.extend(page);
                continue;
            }
            let now = tokio::time::Instant::now();
            if now >= deadline {
                return Ok(None);
            }
            let nap = (deadline - now).min(Duration::from_millis(250));
            let _ = tokio::time::timeout(nap, appended).await;
        }
    }

    async fn ack(&mut self, acks: Vec<u64>) -> Result<(), DurableError> {
        for seq in acks {
            self.pending.remove(&seq);
        }
        let floor = match self.pending.first() {
            Some(first) => first - 1,
            None => self.high,
        };
        if floor <= self.floor {
            return Ok(());
        }
        self.floor = floor;
        if let Some(name) = self.spec.durable.clone() {
            let stream = self.spec.stream.clone();
            self.log
                .call("ack", move |conn, _| {
                    conn.execute(
                        "UPDATE consumers SET ack_floor = ?3 WHERE stream = ?1 AND name = ?2",
                        params![stream, name, floor as i64],
                    )
                    .map_err(sql("ack"))?;
                    Ok(())
                })
                .await?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;
