//! Group commit for the embedded log: appends go to the handle's writer thread, which writes
//! every append waiting at that moment in one transaction and one fsync, then answers each
//! caller only once its own event is durable.
//!
//! The writer keeps each stream's tail in memory (its last sequence and the message ids inside
//! its duplicate window), so an append costs one row: no index of message ids, no query for
//! the next sequence. The file may have other writers (each process of `iron up` has its own
//! connection); `PRAGMA data_version` tells the writer when one of them committed, and it then
//! reads the rows they added, by primary key, before it writes.

use std::collections::{HashMap, VecDeque};
use std::sync::mpsc::{Receiver, TryRecvError};
use std::sync::{Mutex, PoisonError, Weak};
use std::time::{Duration, Instant};

use rusqlite::{Connection, TransactionBehavior, params};
use tokio::sync::oneshot;

use super::{Inner, fence_index, is_busy};
use crate::core::durable::{AppendAck, AppendRequest, DurableError};
use crate::core::envelope::now_ms;
use crate::spine::durable::streams::StreamSpec;

/// An append waiting for its batch.
pub(super) struct Pending {
    /// The stream's index among the handle's declared streams.
    pub stream: usize,
    pub request: AppendRequest,
    pub answer: oneshot::Sender<Result<AppendAck, DurableError>>,
    /// When the caller handed it over.
    pub queued_at: Instant,
}

/// Where appends spent their time, stage by stage (the instrument of `iron bench log`; see
/// [`super::EmbeddedOptions::time_stages`]). Per append: `wake` (first of its batch only: from
/// the hand-over to the writer thread holding it), `queued` (from the hand-over to its batch
/// closing: the wake and the gathering), `in_log` (from the hand-over to its answer being
/// sent). Per batch: `begin` (the transaction begun and other writers' rows read), `rows` (the
/// appends' statements), `commit` (the commit and its fsync), and its size. What a caller
/// measures beyond `in_log` is the way back: the answer waking its task.
#[derive(Debug, Clone, Default)]
pub struct Stages {
    /// Per batch's first append: hand-over to the writer holding it.
    pub wake: Vec<Duration>,
    /// Per append: hand-over to its batch closing.
    pub queued: Vec<Duration>,
    /// Per batch: `BEGIN IMMEDIATE` and catching up with other writers.
    pub begin: Vec<Duration>,
    /// Per batch: the appends' statements.
    pub rows: Vec<Duration>,
    /// Per batch: `COMMIT` with its fsync.
    pub commit: Vec<Duration>,
    /// Per append: hand-over to its answer sent.
    pub in_log: Vec<Duration>,
    /// Appends per batch.
    pub batch_sizes: Vec<usize>,
}

/// One batch's stages, as [`write_batch`] times them.
#[derive(Default)]
struct BatchTimes {
    begin: Duration,
    rows: Duration,
    commit: Duration,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Most appends in one transaction.
const MAX_BATCH: usize = 1024;

/// Longest the writer holds a batch open for writers expected back (see [`gather`]).
const GATHER_WAIT_MAX: Duration = Duration::from_millis(1);

/// The writer thread: waits for an append, gathers the others that come with it, writes them
/// together; ends when every handle (and so every sender) is gone.
pub(super) fn writer(inner: Weak<Inner>, queued: Receiver<Pending>) {
    let mut tails = Tails::default();
    let (mut last_batch, mut last_write) = (1, Duration::ZERO);
    while let Ok(first) = queued.recv() {
        let woke = first.queued_at.elapsed();
        let batch = gather(first, &queued, last_batch, last_write.min(GATHER_WAIT_MAX));
        last_batch = batch.len();
        let Some(inner) = inner.upgrade() else {
            return;
        };
        // Only a timed log pays for the timing: when each append was handed over, and how long
        // it had waited when its batch closed.
        let timing = inner.stages.as_ref().map(|stages| {
            let handed: Vec<Instant> = batch.iter().map(|p| p.queued_at).collect();
            let queued: Vec<Duration> = handed.iter().map(|t| t.elapsed()).collect();
            (stages, handed, queued)
        });
        let timed = |times: &BatchTimes| {
            let Some((stages, queued_at, queued_for)) = timing else {
                return;
            };
            let mut s = lock(stages);
            s.wake.push(woke);
            s.queued.extend(queued_for);
            s.in_log.extend(queued_at.iter().map(|t| t.elapsed()));
            s.begin.push(times.begin);
            s.rows.push(times.rows);
            s.commit.push(times.commit);
            s.batch_sizes.push(queued_at.len());
        };
        let mut conn = lock(&inner.conn);
        let started = Instant::now();
        write_batch(&mut conn, &inner, &mut tails, batch, timed);
        last_write = started.elapsed();
    }
}

/// The batch that starts with `first`: every append already waiting, and, when the previous
/// batch was larger (writers that were answered together and are coming back one by one),
/// those that arrive within `wait` until it is as large again. Without that wait concurrent
/// writers split into a batch of the first to return and one of all the others, taking
/// turns, and share half as many commits. The wait is at most what the last write took: a
/// writer left out would have waited that long for its own commit anyway. It polls, giving
/// the CPU away between looks, rather than sleeping on the queue: asleep, the writer thread
/// was woken once for each writer coming back, and those wake-ups cost as much as the rest of
/// the cycle (eight writers: 4.1–5.4× one writer with them, see BENCHMARKS.md).
fn gather(
    first: Pending,
    queued: &Receiver<Pending>,
    expected: usize,
    wait: Duration,
) -> Vec<Pending> {
    let mut batch = vec![first];
    let deadline = Instant::now() + wait;
    while batch.len() < MAX_BATCH {
        match queued.try_recv() {
            Ok(p) => {
                batch.push(p);
                continue;
            }
            Err(TryRecvError::Disconnected) => break,
            Err(TryRecvError::Empty) if batch.len() >= expected => break,
            Err(TryRecvError::Empty) => {}
        }
        if Instant::now() >= deadline {
            break;
        }
        std::thread::yield_now();
    }
    batch
}

/// Writes `batch` in one transaction and one fsync, then answers each append: its own
/// acknowledgement once the commit is durable, or why it was refused. When the transaction
/// fails nothing of the batch was written, every append in it gets the error, and the tails
/// (which took the batch's rows in) are read from the database again.
fn write_batch(
    conn: &mut Connection,
    inner: &Inner,
    tails: &mut Tails,
    batch: Vec<Pending>,
    timed: impl FnOnce(&BatchTimes),
) {
    let mut times = BatchTimes::default();
    let written = (|| {
        let t = Instant::now();
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        tails.catch_up(&tx)?;
        times.begin = t.elapsed();
        let t = Instant::now();
        let now = now_ms();
        let results = batch
            .iter()
            .map(|p| append_one(&tx, tails, &inner.streams[p.stream], &p.request, now))
            .collect::<rusqlite::Result<Vec<_>>>()?;
        times.rows = t.elapsed();
        let t = Instant::now();
        tx.commit()?;
        times.commit = t.elapsed();
        Ok::<_, rusqlite::Error>(results)
    })();
    // Before anyone is answered, so a caller that reads the stages finds its own.
    timed(&times);
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
            *tails = Tails::default();
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

/// One append inside the batch's transaction: the duplicate window (which holds the batch's
/// own earlier rows), the fencing check, the row and the stream's limits. A refusal is the
/// append's own answer (`Ok(Err(..))`); a database failure fails the batch.
fn append_one(
    tx: &rusqlite::Transaction<'_>,
    tails: &mut Tails,
    spec: &StreamSpec,
    request: &AppendRequest,
    now: u64,
) -> rusqlite::Result<Result<AppendAck, DurableError>> {
    let tail = tails.of(tx, spec, now)?;
    if let Some(seq) = tail.duplicate_of(&request.msg_id, now) {
        return Ok(Ok(AppendAck {
            stream: spec.name.clone(),
            seq,
            duplicate: true,
        }));
    }
    if let Some(expected) = request.expected_last_subject_seq {
        if !spec.fenced {
            return Ok(Err(DurableError::NotFenced {
                stream: spec.name.clone(),
                subject: request.subject.clone(),
            }));
        }
        let last: i64 = tx
            .prepare_cached(&fence_index(&spec.name).1)?
            .query_row([&request.subject], |row| row.get(0))?;
        if last as u64 != expected {
            return Ok(Err(DurableError::WrongLastSequence {
                subject: request.subject.clone(),
                expected,
            }));
        }
    }
    let seq = tail.last_seq + 1;
    tx.prepare_cached(
        "INSERT INTO messages(stream, seq, subject, msg_id, payload, ts_ms)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
    )?
    .execute(params![
        spec.name,
        seq as i64,
        request.subject,
        request.msg_id,
        request.payload,
        now as i64
    ])?;
    tail.record(seq, &request.msg_id, now);
    apply_limits(tx, spec, seq as i64, now)?;
    Ok(Ok(AppendAck {
        stream: spec.name.clone(),
        seq,
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

/// What the writer knows of the streams' tails, valid while no other connection has written
/// the file since it was last brought up to date.
#[derive(Default)]
pub(super) struct Tails {
    /// `PRAGMA data_version` at that moment: another connection's commit changes it, this
    /// connection's own commits do not.
    version: Option<i64>,
    streams: HashMap<String, Tail>,
}

/// One stream's last sequence and the message ids appended inside its duplicate window.
struct Tail {
    last_seq: u64,
    window_ms: u64,
    /// Message id → (sequence, time appended) of its newest append in the window.
    ids: HashMap<String, (u64, u64)>,
    /// The same appends, oldest first, to let them go as the window moves on.
    order: VecDeque<(u64, u64, String)>,
}

impl Tails {
    /// Within the batch's transaction (no other writer can commit until it ends): when another
    /// connection has committed since the last look, takes in each known stream's rows past
    /// its last sequence.
    fn catch_up(&mut self, tx: &rusqlite::Transaction<'_>) -> rusqlite::Result<()> {
        let version: i64 = tx
            .prepare_cached("PRAGMA data_version")?
            .query_row([], |row| row.get(0))?;
        if self.version == Some(version) {
            return Ok(());
        }
        for (name, tail) in &mut self.streams {
            let mut newer = tx.prepare_cached(
                "SELECT seq, msg_id, ts_ms FROM messages WHERE stream = ?1 AND seq > ?2
                 ORDER BY seq",
            )?;
            let mut rows = newer.query(params![name, tail.last_seq as i64])?;
            while let Some(row) = rows.next()? {
                let (seq, id, ts) = row_tail(row)?;
                tail.record(seq, &id.unwrap_or_default(), ts);
            }
        }
        self.version = Some(version);
        Ok(())
    }

    /// The tail of `spec`'s stream, read from the database the first time: its last sequence
    /// and, walking back from it, every message id younger than the window.
    fn of(
        &mut self,
        tx: &rusqlite::Transaction<'_>,
        spec: &StreamSpec,
        now: u64,
    ) -> rusqlite::Result<&mut Tail> {
        if !self.streams.contains_key(&spec.name) {
            let window_ms = spec.duplicate_window.as_millis() as u64;
            let mut tail = Tail {
                last_seq: 0,
                window_ms,
                ids: HashMap::new(),
                order: VecDeque::new(),
            };
            let mut newest_first = tx.prepare_cached(
                "SELECT seq, msg_id, ts_ms FROM messages WHERE stream = ?1 ORDER BY seq DESC",
            )?;
            let mut rows = newest_first.query([&spec.name])?;
            let mut recent = Vec::new();
            while let Some(row) = rows.next()? {
                let (seq, id, ts) = row_tail(row)?;
                tail.last_seq = tail.last_seq.max(seq);
                if now.saturating_sub(ts) >= window_ms {
                    break;
                }
                recent.push((seq, id, ts));
            }
            for (seq, id, ts) in recent.into_iter().rev() {
                tail.remember(seq, &id.unwrap_or_default(), ts);
            }
            self.streams.insert(spec.name.clone(), tail);
        }
        Ok(self
            .streams
            .get_mut(&spec.name)
            .expect("the tail was just inserted"))
    }
}

fn row_tail(row: &rusqlite::Row<'_>) -> rusqlite::Result<(u64, Option<String>, u64)> {
    Ok((
        row.get::<_, i64>(0)? as u64,
        row.get(1)?,
        row.get::<_, i64>(2)?.max(0) as u64,
    ))
}

impl Tail {
    /// The sequence `msg_id` was appended at, if that was inside the window.
    fn duplicate_of(&mut self, msg_id: &str, now: u64) -> Option<u64> {
        self.forget_before(now.saturating_sub(self.window_ms));
        self.ids
            .get(msg_id)
            .filter(|(_, ts)| now.saturating_sub(*ts) < self.window_ms)
            .map(|(seq, _)| *seq)
    }

    /// An append at `seq`: the new last sequence, and its id in the window.
    fn record(&mut self, seq: u64, msg_id: &str, ts: u64) {
        self.last_seq = self.last_seq.max(seq);
        self.remember(seq, msg_id, ts);
    }

    fn remember(&mut self, seq: u64, msg_id: &str, ts: u64) {
        self.ids.insert(msg_id.to_owned(), (seq, ts));
        self.order.push_back((ts, seq, msg_id.to_owned()));
    }

    /// Lets go of the ids appended before `oldest` (ms).
    fn forget_before(&mut self, oldest: u64) {
        while let Some((ts, seq, _)) = self.order.front()
            && *ts < oldest
        {
            let seq = *seq;
            let (_, _, id) = self.order.pop_front().expect("the front was just read");
            if self.ids.get(&id).is_some_and(|(s, _)| *s == seq) {
                self.ids.remove(&id);
            }
        }
    }
}
