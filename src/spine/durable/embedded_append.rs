//! Group commit for the embedded log: appends go to the handle's writer thread, which writes
//! every append waiting at that moment in one transaction and one fsync, then answers each
//! caller only once its own event is durable.

use rusqlite::{Connection, OptionalExtension, TransactionBehavior, params};
use tokio::sync::oneshot;

use super::{Inner, LAST_WITH_MSG_ID, is_busy};
use crate::core::durable::{AppendAck, AppendRequest, DurableError};
use crate::core::envelope::now_ms;
use crate::spine::durable::streams::StreamSpec;
use std::sync::mpsc::Receiver;
use std::sync::{Mutex, PoisonError, Weak};

/// An append waiting for its batch.
pub(super) struct Pending {
    pub spec: StreamSpec,
    pub request: AppendRequest,
    pub answer: oneshot::Sender<Result<AppendAck, DurableError>>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Most appends in one transaction.
const MAX_BATCH: usize = 1024;

/// The writer thread: waits for an append, takes every other one waiting with it, writes
/// them together; ends when every handle (and so every sender) is gone.
pub(super) fn writer(inner: Weak<Inner>, queued: Receiver<Pending>) {
    while let Ok(first) = queued.recv() {
        let mut batch = vec![first];
        while batch.len() < MAX_BATCH {
            match queued.try_recv() {
                Ok(p) => batch.push(p),
                Err(_) => break,
            }
        }
        let Some(inner) = inner.upgrade() else {
            return;
        };
        let mut conn = lock(&inner.conn);
        write_batch(&mut conn, &inner, batch);
    }
}

/// Writes `batch` in one transaction and one fsync, then answers each append: its own
/// acknowledgement once the commit is durable, or why it was refused. When the transaction
/// fails nothing of the batch was written, and every append in it gets the error.
fn write_batch(conn: &mut Connection, inner: &Inner, batch: Vec<Pending>) {
    let written = (|| {
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let now = now_ms();
        let results = batch
            .iter()
            .map(|p| append_one(&tx, &p.spec, &p.request, now))
            .collect::<rusqlite::Result<Vec<_>>>()?;
        tx.commit()?;
        Ok::<_, rusqlite::Error>(results)
    })();
    match written {
        Ok(results) => {
            inner
                .commits
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            inner.appended.notify_waiters();
            for (p, result) in batch.into_iter().zip(results) {
                let _ = p.answer.send(result);
            }
        }
        Err(e) => {
            for p in batch {
                // Each caller gets its own error value, of the same kind.
                let source: Box<dyn std::error::Error + Send + Sync> = e.to_string().into();
                let error = if is_busy(&e) {
                    DurableError::Unavailable {
                        op: "append",
                        source,
                    }
                } else {
                    DurableError::Backend {
                        op: "append",
                        source,
                    }
                };
                let _ = p.answer.send(Err(error));
            }
        }
    }
}

/// One append inside the batch's transaction: the duplicate window (which sees the batch's
/// own earlier rows), the fencing check, the next sequence, the row and the stream's limits.
/// A refusal is the append's own answer (`Ok(Err(..))`); a database failure fails the batch.
fn append_one(
    tx: &rusqlite::Transaction<'_>,
    spec: &StreamSpec,
    request: &AppendRequest,
    now: u64,
) -> rusqlite::Result<Result<AppendAck, DurableError>> {
    let window = spec.duplicate_window.as_millis() as u64;
    let previous: Option<(i64, i64)> = tx
        .prepare_cached(LAST_WITH_MSG_ID)?
        .query_row(params![spec.name, request.msg_id], |row| {
            Ok((row.get(0)?, row.get(1)?))
        })
        .optional()?;
    if let Some((seq, ts)) = previous
        && now.saturating_sub(ts as u64) < window
    {
        return Ok(Ok(AppendAck {
            stream: spec.name.clone(),
            seq: seq as u64,
            duplicate: true,
        }));
    }
    if let Some(expected) = request.expected_last_subject_seq {
        let last: i64 = tx
            .prepare_cached(
                "SELECT coalesce(max(seq), 0) FROM messages WHERE stream = ?1 AND subject = ?2",
            )?
            .query_row(params![spec.name, request.subject], |row| row.get(0))?;
        if last as u64 != expected {
            return Ok(Err(DurableError::WrongLastSequence {
                subject: request.subject.clone(),
                expected,
            }));
        }
    }
    let seq: i64 = tx
        .prepare_cached("SELECT coalesce(max(seq), 0) + 1 FROM messages WHERE stream = ?1")?
        .query_row([&spec.name], |row| row.get(0))?;
    tx.prepare_cached(
        "INSERT INTO messages(stream, seq, subject, msg_id, payload, ts_ms)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
    )?
    .execute(params![
        spec.name,
        seq,
        request.subject,
        request.msg_id,
        request.payload,
        now as i64
    ])?;
    apply_limits(tx, spec, seq, now)?;
    Ok(Ok(AppendAck {
        stream: spec.name.clone(),
        seq: seq as u64,
        duplicate: false,
    }))
}

/// The stream's limits after the append of `seq`: past `max_msgs` the oldest messages go at
/// once; past `max_age` every 1,000th append (the age sweep reads the whole stream).
fn apply_limits(
    tx: &rusqlite::Transaction<'_>,
    spec: &StreamSpec,
    seq: i64,
    now: u64,
) -> rusqlite::Result<()> {
    if spec.max_msgs > 0 && seq > spec.max_msgs {
        tx.execute(
            "DELETE FROM messages WHERE stream = ?1 AND seq <= ?2",
            params![spec.name, seq - spec.max_msgs],
        )?;
    }
    if !spec.max_age.is_zero() && seq % 1000 == 0 {
        let oldest = now.saturating_sub(spec.max_age.as_millis() as u64);
        tx.execute(
            "DELETE FROM messages WHERE stream = ?1 AND ts_ms < ?2",
            params![spec.name, oldest as i64],
        )?;
    }
    Ok(())
}
