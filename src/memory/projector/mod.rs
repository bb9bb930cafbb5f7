//! The projector: the single writer of `projection.db`. It consumes the memory stream with a
//! durable consumer, writes each event once however often it is delivered (`event_id` is the
//! primary key), acknowledges only after the commit, skips and logs payloads that are not Iron
//! envelopes, and stops — after recording a `projector_gap` event — when the stream's
//! sequence jumps or goes backwards, rather than guessing.
//!
//! The consumer's filter must cover the whole stream (`mem.>` for `MEM`): sequences are then
//! contiguous and any jump is a real gap.

use crate::protocol::Payload;
use crate::protocol::payload::{ProjectorGap, SequenceProblem};
use std::path::{Path, PathBuf};
use std::time::Duration;

use rusqlite::{Connection, OptionalExtension, params};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

mod schema;

use schema::WordCounts;
pub(in crate::memory) use schema::open_wal;
pub(crate) use schema::{any_words, fts_row, scope_token};
pub use schema::{open_writer, projected_to};

use super::emit::Emitter;
use crate::core::durable::{
    ConsumerSpec, DurableError, EventLog, LogConsumer, StartAt, StoredMessage,
};
use crate::core::envelope::Envelope;
use crate::core::event_kind::EventKind;
use crate::core::ids::EventId;
use crate::protocol::payload::FactSuperseded;

/// What the projector needs. Build with [`ProjectorDeps::new`] and adjust fields.
#[derive(Debug, Clone)]
pub struct ProjectorDeps<L> {
    /// The log to consume.
    pub log: L,
    /// The projection database (created if missing).
    pub db_path: PathBuf,
    /// Stream consumed (`MEM`).
    pub stream: String,
    /// Subject filter; must cover the whole stream (`mem.>`).
    pub filter_subject: String,
    /// Durable consumer name.
    pub consumer: String,
    /// Redelivery delay of an unacknowledged event.
    pub ack_wait: Duration,
    /// Most events committed in one transaction.
    pub max_batch: usize,
    /// How long one wait for new events lasts before shutdown is checked again.
    pub idle_wait: Duration,
    /// Fault injection for tests: after committing the batch that holds this sequence, stop
    /// with [`ProjectorError::Halted`] without acknowledging it, as a crash between commit and
    /// ack would. Only with the `test-support` feature.
    #[cfg(feature = "test-support")]
    pub halt_after_commit: Option<u64>,
}

impl<L: EventLog> ProjectorDeps<L> {
    /// Projects `MEM` (`mem.>`) into `db_path` with the durable consumer `projector`.
    pub fn new(log: L, db_path: impl Into<PathBuf>) -> Self {
        Self {
            log,
            db_path: db_path.into(),
            stream: "MEM".into(),
            filter_subject: "mem.>".into(),
            consumer: "projector".into(),
            ack_wait: Duration::from_secs(30),
            max_batch: 256,
            idle_wait: Duration::from_millis(500),
            #[cfg(feature = "test-support")]
            halt_after_commit: None,
        }
    }
}

/// How the projector ended without error.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProjectorExit {
    /// Shutdown was requested; everything committed was acknowledged.
    Stopped {
        /// Last stream sequence projected.
        last_seq: u64,
    },
}

/// Why the projector stopped.
#[derive(Debug, thiserror::Error)]
pub enum ProjectorError {
    /// The projection database failed.
    #[error(
        "projection database {path}: {source}; check the path and that no other projector runs"
    )]
    Database {
        /// Path.
        path: String,
        /// Cause.
        #[source]
        source: rusqlite::Error,
    },
    /// The projection database could not be put in place.
    #[error("projection database {path}: {source}")]
    Create {
        /// Path.
        path: String,
        /// Cause.
        #[source]
        source: std::io::Error,
    },
    /// The log failed.
    #[error("projector: {0}")]
    Log(#[from] DurableError),
    /// A sequence was skipped: events are missing from what the projector received.
    #[error(
        "stream {stream}: expected sequence {expected}, got {found}; events are missing, projector stopped (a projector_gap event was written). Investigate the stream before restarting"
    )]
    Gap {
        /// Stream.
        stream: String,
        /// Next sequence expected.
        expected: u64,
        /// Sequence received.
        found: u64,
    },
    /// A sequence already projected came back as a different message: the stream was replaced.
    #[error(
        "stream {stream}: sequence {found} went backwards (projected up to {last}, and it is not a redelivery); the stream was replaced or reset, projector stopped. Rebuild the projection"
    )]
    Backwards {
        /// Stream.
        stream: String,
        /// Sequence received.
        found: u64,
        /// Last sequence projected.
        last: u64,
    },
    /// Fault injection (`ProjectorDeps::halt_after_commit`, `test-support` feature) stopped
    /// it after a commit.
    #[cfg(feature = "test-support")]
    #[error("projector halted by fault injection after committing sequence {seq}")]
    Halted {
        /// The sequence.
        seq: u64,
    },
}

fn db_err(path: &Path) -> impl Fn(rusqlite::Error) -> ProjectorError + '_ {
    move |source| ProjectorError::Database {
        path: path.display().to_string(),
        source,
    }
}

/// A new projection at `path` holding `events` as stream sequences 1, 2, … (for tests of
/// its readers).
#[cfg(test)]
pub(crate) fn project_for_test(path: &Path, events: &[&Envelope]) {
    let batch: Vec<StoredMessage> = events
        .iter()
        .zip(1..)
        .map(|(e, seq)| StoredMessage {
            seq,
            subject: "mem.t".into(),
            msg_id: Some(e.event_id.to_string()),
            payload: serde_json::to_vec(e).expect("an envelope serialises"),
            stored_ms: 0,
        })
        .collect();
    let mut conn = open_writer(path).expect("a new projection");
    apply_batch(&mut conn, "MEM", &batch).expect("the batch applies");
}

/// What applying one batch found.
enum Stop {
    Gap { expected: u64, found: u64 },
    Backwards { found: u64, last: u64 },
}

/// Applies deliveries in order in one transaction (statements prepared once per connection,
/// the full-text rows in the same transaction); returns how many were handled (and so may
/// be acknowledged) and why it stopped early, if it did.
fn apply(
    conn: &mut Connection,
    stream: &str,
    batch: &[StoredMessage],
) -> Result<(usize, Option<Stop>, u64), rusqlite::Error> {
    let tx = conn.transaction()?;
    let mut last: u64 = tx
        .query_row(
            "SELECT last_seq FROM cursor WHERE stream = ?1",
            [stream],
            |row| row.get::<_, i64>(0),
        )
        .optional()?
        .unwrap_or(0) as u64;
    let mut handled = 0;
    let mut stop = None;
    let mut words = WordCounts::default();
    for message in batch {
        if message.seq <= last {
            let seen: Option<Option<String>> = tx
                .prepare_cached("SELECT msg_id FROM applied WHERE seq = ?1")?
                .query_row([message.seq as i64], |row| row.get(0))
                .optional()?;
            if seen.is_some_and(|id| id == message.msg_id) {
                handled += 1; // a redelivery of something already committed
                continue;
            }
            stop = Some(Stop::Backwards {
                found: message.seq,
                last,
            });
            break;
        }
        if message.seq != last + 1 {
            stop = Some(Stop::Gap {
                expected: last + 1,
                found: message.seq,
            });
            break;
        }
        let parsed = serde_json::from_slice::<Envelope>(&message.payload).map_err(|e| {
            match serde_json::from_slice::<serde::de::IgnoredAny>(&message.payload) {
                Ok(_) => format!("payload is not an Iron envelope ({e})"),
                Err(e) => format!("payload is not JSON ({e})"),
            }
        });
        let mut event_id = None;
        match parsed {
            Ok(envelope) => {
                let inserted = tx.prepare_cached("INSERT OR IGNORE INTO events(event_id, seq, subject, ts, tenant, namespace,
                        actor, kind, payload, result, cause)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)")?.execute(params![
                        envelope.event_id.as_str(),
                        message.seq as i64,
                        message.subject,
                        envelope.ts as i64,
                        envelope.tenant,
                        envelope.namespace_path(),
                        envelope.actor,
                        envelope.kind.as_str(),
                        envelope.payload.to_string(),
                        envelope.result.as_ref().map(Value::to_string),
                        envelope.cause.as_ref().map(EventId::as_str),
                    ])?;
                // The first word on a fact stands: it is superseded once.
                if inserted == 1
                    && envelope.kind == EventKind::FactSuperseded
                    && let Ok(FactSuperseded {
                        fact, by, reason, ..
                    }) = envelope.payload::<FactSuperseded>()
                {
                    tx.prepare_cached(
                        "INSERT OR IGNORE INTO superseded(fact_id, by_id, reason, seq)
                         VALUES (?1, ?2, ?3, ?4)",
                    )?
                    .execute(params![fact, by, reason, message.seq as i64])?;
                }
                if inserted == 1 {
                    let (ns, body) = fts_row(&envelope);
                    tx.prepare_cached(
                        "INSERT INTO events_fts(event_id, ns, body) VALUES (?1, ?2, ?3)",
                    )?
                    .execute(params![
                        envelope.event_id.as_str(),
                        ns,
                        &body
                    ])?;
                    words.add(&body);
                }
                event_id = Some(envelope.event_id.to_string());
            }
            Err(reason) => {
                tracing::warn!(seq = message.seq, subject = %message.subject, %reason,
                    "projector: skipping a message that is not an Iron envelope");
                tx.prepare_cached(
                    "INSERT OR REPLACE INTO skipped(seq, subject, reason) VALUES (?1, ?2, ?3)",
                )?
                .execute(params![message.seq as i64, message.subject, reason])?;
            }
        }
        tx.prepare_cached(
            "INSERT OR REPLACE INTO applied(seq, msg_id, event_id) VALUES (?1, ?2, ?3)",
        )?
        .execute(params![message.seq as i64, message.msg_id, event_id])?;
        last = message.seq;
        handled += 1;
    }
    tx.prepare_cached(
        "INSERT INTO cursor(stream, last_seq) VALUES (?1, ?2)
         ON CONFLICT(stream) DO UPDATE SET last_seq = excluded.last_seq",
    )?
    .execute(params![stream, last as i64])?;
    words.write(&tx)?;
    tx.commit()?;
    Ok((handled, stop, last))
}

/// Projects `batch` (contiguous from the projection's cursor) in one transaction, as the
/// running projector does; for benchmarks that build a projection without a log.
pub fn apply_batch(
    conn: &mut Connection,
    stream: &str,
    batch: &[StoredMessage],
) -> Result<u64, rusqlite::Error> {
    apply(conn, stream, batch).map(|(_, _, last)| last)
}

/// Runs the projector until `shutdown` is cancelled or it must stop. Lifecycle nodes and tests
/// drive this same function.
pub async fn run<L: EventLog>(
    deps: ProjectorDeps<L>,
    shutdown: CancellationToken,
) -> Result<ProjectorExit, ProjectorError> {
    let path = deps.db_path.clone();
    let conn = {
        let path = path.clone();
        tokio::task::spawn_blocking(move || open_writer(&path))
            .await
            .map_err(|e| DurableError::Backend {
                op: "open projection",
                source: Box::new(e),
            })??
    };
    let mut consumer = deps
        .log
        .consumer(ConsumerSpec {
            stream: deps.stream.clone(),
            durable: Some(deps.consumer.clone()),
            filter_subject: deps.filter_subject.clone(),
            start: StartAt::First,
            ack_wait: deps.ack_wait,
        })
        .await?;
    let conn = std::sync::Arc::new(std::sync::Mutex::new(conn));
    let mut last_seq = 0;
    // Deliveries fetched while the previous batch was being written, and those committed
    // but not yet acknowledged (acknowledged while the next batch is written).
    let mut fetched: Vec<(StoredMessage, <L::Consumer as LogConsumer>::Ack)> = Vec::new();
    let mut committed = Vec::new();
    loop {
        if shutdown.is_cancelled() {
            // What was fetched and not written is delivered again to the next projector.
            acknowledge(&mut consumer, &mut committed).await?;
            return Ok(ProjectorExit::Stopped { last_seq });
        }
        if fetched.is_empty() {
            acknowledge(&mut consumer, &mut committed).await?;
            let first = tokio::select! {
                _ = shutdown.cancelled() => return Ok(ProjectorExit::Stopped { last_seq }),
                next = consumer.next(deps.idle_wait) => next?,
            };
            let Some((delivery, ack)) = first else {
                continue;
            };
            fetched.push((delivery.message, ack));
        }
        while fetched.len() < deps.max_batch {
            match consumer.next(Duration::ZERO).await? {
                Some((delivery, ack)) => fetched.push((delivery.message, ack)),
                None => break,
            }
        }
        let (mut messages, mut acks): (Vec<_>, Vec<_>) =
            std::mem::take(&mut fetched).into_iter().unzip();
        while !messages.is_empty() {
            // While this batch is written the one before it is acknowledged and the next one
            // fetched; each is acknowledged only after its own commit.
            let (handled, stop, last) = {
                let writing = apply_blocking(&conn, &path, &deps.stream, &messages);
                tokio::pin!(writing);
                acknowledge(&mut consumer, &mut committed).await?;
                loop {
                    if fetched.len() >= deps.max_batch {
                        break writing.await?;
                    }
                    tokio::select! {
                        biased;
                        written = &mut writing => break written?,
                        next = consumer.next(deps.idle_wait) => {
                            if let Some((delivery, ack)) = next? {
                                fetched.push((delivery.message, ack));
                            }
                        }
                    }
                }
            };
            last_seq = last;
            #[cfg(feature = "test-support")]
            if let Some(halt) = deps.halt_after_commit
                && messages[..handled].iter().any(|m| m.seq == halt)
            {
                return Err(ProjectorError::Halted { seq: halt });
            }
            messages.drain(..handled);
            committed.extend(acks.drain(..handled));
            if stop.is_some() {
                acknowledge(&mut consumer, &mut committed).await?;
            }
            match stop {
                None => {}
                Some(Stop::Gap { expected, found }) => {
                    last_seq = fill_gap(&deps, &conn, &path, expected, found).await?;
                }
                Some(stop) => return Err(record_stop(&deps, stop).await),
            }
        }
    }
}

/// Sequences `expected..found` were not delivered before `found`. Redeliveries can arrive after
/// newer messages, so the log is asked whether they exist: if they do, they are projected
/// from it (the last sequence written is returned); if not, the projector stops, recorded.
async fn fill_gap<L: EventLog>(
    deps: &ProjectorDeps<L>,
    conn: &std::sync::Arc<std::sync::Mutex<Connection>>,
    path: &Path,
    expected: u64,
    found: u64,
) -> Result<u64, ProjectorError> {
    let fill = deps
        .log
        .read(
            &deps.stream,
            &deps.filter_subject,
            expected,
            (found - expected) as usize,
        )
        .await?;
    let contiguous = fill.len() as u64 == found - expected
        && fill.iter().zip(expected..).all(|(m, seq)| m.seq == seq);
    if !contiguous {
        return Err(record_stop(deps, Stop::Gap { expected, found }).await);
    }
    tracing::info!(
        expected,
        found,
        "projector: delivery out of order, filled from the log"
    );
    let (filled, stop, last) = apply_blocking(conn, path, &deps.stream, &fill).await?;
    if let Some(stop) = stop {
        return Err(record_stop(deps, stop).await);
    }
    debug_assert_eq!(filled, fill.len());
    Ok(last)
}

/// Starts writing `messages` on a blocking thread at once; the returned future is its outcome.
fn apply_blocking(
    conn: &std::sync::Arc<std::sync::Mutex<Connection>>,
    path: &Path,
    stream: &str,
    messages: &[StoredMessage],
) -> impl std::future::Future<Output = Result<(usize, Option<Stop>, u64), ProjectorError>> + use<> {
    let (conn, stream, messages) = (conn.clone(), stream.to_owned(), messages.to_vec());
    let writing = tokio::task::spawn_blocking(move || {
        let mut conn = conn
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        apply(&mut conn, &stream, &messages)
    });
    let path = path.to_owned();
    async move {
        writing
            .await
            .map_err(|e| DurableError::Backend {
                op: "project",
                source: Box::new(e),
            })?
            .map_err(db_err(&path))
    }
}

/// Acknowledges the deliveries committed and not yet acknowledged.
async fn acknowledge<C: LogConsumer>(
    consumer: &mut C,
    committed: &mut Vec<C::Ack>,
) -> Result<(), DurableError> {
    if committed.is_empty() {
        return Ok(());
    }
    consumer.ack(std::mem::take(committed)).await
}

/// Writes a `projector_gap` event (id computed, so a restarted projector does not repeat it)
/// and returns the error to stop with.
async fn record_stop<L: EventLog>(deps: &ProjectorDeps<L>, stop: Stop) -> ProjectorError {
    let (error, problem) = match stop {
        Stop::Gap { expected, found } => (
            ProjectorError::Gap {
                stream: deps.stream.clone(),
                expected,
                found,
            },
            SequenceProblem::Gap { expected, found },
        ),
        Stop::Backwards { found, last } => (
            ProjectorError::Backwards {
                stream: deps.stream.clone(),
                found,
                last,
            },
            SequenceProblem::Backwards { found, last },
        ),
    };
    tracing::error!(%error, "projector stopped");
    let payload = ProjectorGap {
        stream: deps.stream.clone(),
        consumer: deps.consumer.clone(),
        problem,
    }
    .to_value();
    let id = EventId::computed(&[
        "projector_gap",
        &deps.stream,
        &deps.consumer,
        &payload.to_string(),
    ]);
    let event = Envelope::new(
        "system",
        ["system", "projector"],
        deps.consumer.as_str(),
        ProjectorGap::KIND,
        payload,
    )
    .with_id(id);
    if let Err(e) = Emitter::new(deps.log.clone()).emit(&event).await {
        tracing::error!(error = %e, "projector: could not record the projector_gap event");
    }
    error
}

#[cfg(test)]
mod tests;
