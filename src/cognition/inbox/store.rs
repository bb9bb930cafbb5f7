//! The inbox's durable state, in SQLite: the session table (`source:user_id` → session, and the
//! expert a session is stuck to) and the queue of messages not yet handed to the engine, in
//! arrival order. A message is written here before anything else happens to it, so a crash
//! or an engine that is down loses nothing.

use std::path::Path;

use rusqlite::{Connection, OptionalExtension, params};

/// A queued message.
#[derive(Debug, Clone, PartialEq)]
pub struct Queued {
    pub seq: i64,
    pub session_id: String,
    pub source: String,
    pub user_id: String,
    pub destination: String,
    pub text: String,
    pub attachments_json: String,
    pub received_ms: i64,
    /// The `chat_turn` event's id, fixed at arrival so a retried emit is deduplicated.
    pub event_id: String,
    /// Whether the turn is on the log yet.
    pub emitted: bool,
}

/// A task handed to the engine whose end the inbox has not seen.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InFlight {
    /// The task (computed from its first message).
    pub task_id: String,
    /// Its session.
    pub session_id: String,
    /// The goal it was sent as (hyphenated UUID; empty for rows from before goal ids were kept).
    pub goal_id: String,
}

/// A message as it arrives, before it has a session or a place in the queue.
#[derive(Debug, Clone, PartialEq)]
pub struct Arrival {
    pub source: String,
    pub user_id: String,
    pub destination: String,
    pub text: String,
    pub attachments_json: String,
    pub received_ms: i64,
    /// The id its `chat_turn` event will carry.
    pub event_id: String,
}

/// Errors of the store.
#[derive(Debug, thiserror::Error)]
#[error("inbox store: {0}")]
pub struct StoreError(#[from] rusqlite::Error);

/// The store's file in the state directory.
pub const STORE_FILE: &str = "inbox.db";

/// How many messages the store at `path` holds in each state (`pending`, `sent`, `done`,
/// …), read without writing; empty when there is no store yet. What a view reports as the
/// inbox's queue depth.
pub fn depth_at(path: &Path) -> Result<Vec<(String, u64)>, StoreError> {
    if !path.exists() {
        return Ok(Vec::new());
    }
    let conn = Connection::open_with_flags(path, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)?;
    conn.busy_timeout(std::time::Duration::from_secs(2))?;
    let mut stmt = conn.prepare("SELECT state, COUNT(*) FROM queue GROUP BY state")?;
    let rows = stmt.query_map([], |r| {
        Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)? as u64))
    })?;
    Ok(rows.collect::<Result<_, _>>()?)
}

/// The store; one writer (the inbox node).
pub struct Store {
    conn: Connection,
}

impl Store {
    /// Opens (creating) the database at `path`.
    pub fn open(path: &Path) -> Result<Self, StoreError> {
        let conn = Connection::open(path)?;
        conn.execute_batch(
            "PRAGMA journal_mode=WAL;
             PRAGMA synchronous=FULL;
             CREATE TABLE IF NOT EXISTS sessions(
                 key TEXT PRIMARY KEY,
                 session_id TEXT NOT NULL UNIQUE,
                 stuck_expert TEXT,
                 updated_ms INTEGER NOT NULL);
             CREATE TABLE IF NOT EXISTS queue(
                 seq INTEGER PRIMARY KEY AUTOINCREMENT,
                 session_id TEXT NOT NULL,
                 source TEXT NOT NULL,
                 user_id TEXT NOT NULL,
                 destination TEXT NOT NULL,
                 text TEXT NOT NULL,
                 attachments_json TEXT NOT NULL,
                 received_ms INTEGER NOT NULL,
                 event_id TEXT NOT NULL,
                 emitted INTEGER NOT NULL DEFAULT 0,
                 state TEXT NOT NULL DEFAULT 'pending',
                 task_id TEXT);",
        )?;
        // Added after the first release: why a message was set aside, and the goal a
        // message was handed over as (to follow it to its end after a restart).
        for column in ["reason", "goal_id"] {
            let present: bool = conn.query_row(
                "SELECT COUNT(*) FROM pragma_table_info('queue') WHERE name = ?1",
                [column],
                |r| r.get::<_, i64>(0).map(|n| n > 0),
            )?;
            if !present {
                conn.execute_batch(&format!("ALTER TABLE queue ADD COLUMN {column} TEXT;"))?;
            }
        }
        Ok(Self { conn })
    }

    /// Records arriving messages, in order: finds or creates each one's session and queues
    /// it, all in one transaction (one sync to disk for the whole batch). Either every message
    /// of the batch is queued or none is. Returns the queued rows, in the order given.
    pub fn accept(&mut self, batch: Vec<Arrival>, now_ms: i64) -> Result<Vec<Queued>, StoreError> {
        let tx = self.conn.transaction()?;
        let mut queued = Vec::with_capacity(batch.len());
        {
            let mut find = tx.prepare_cached("SELECT session_id FROM sessions WHERE key = ?1")?;
            let mut create = tx.prepare_cached(
                "INSERT INTO sessions(key, session_id, updated_ms) VALUES (?1, ?2, ?3)",
            )?;
            let mut enqueue = tx.prepare_cached(
                "INSERT INTO queue(session_id, source, user_id, destination, text, attachments_json, received_ms, event_id)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
            )?;
            for a in batch {
                let key = format!("{}:{}", a.source, a.user_id);
                let session_id: String = match find.query_row([&key], |r| r.get(0)).optional()? {
                    Some(s) => s,
                    None => {
                        let s = uuid::Uuid::now_v7().to_string();
                        create.execute(params![key, s, now_ms])?;
                        s
                    }
                };
                enqueue.execute(params![
                    session_id,
                    a.source,
                    a.user_id,
                    a.destination,
                    a.text,
                    a.attachments_json,
                    a.received_ms,
                    a.event_id
                ])?;
                queued.push(Queued {
                    seq: tx.last_insert_rowid(),
                    session_id,
                    source: a.source,
                    user_id: a.user_id,
                    destination: a.destination,
                    text: a.text,
                    attachments_json: a.attachments_json,
                    received_ms: a.received_ms,
                    event_id: a.event_id,
                    emitted: false,
                });
            }
        }
        tx.commit()?;
        Ok(queued)
    }

    /// The oldest message not yet handed over, and any later ones of the same session that
    /// arrived within `merge_ms` of it (to be merged into one turn).
    pub fn next_batch(&self, merge_ms: i64) -> Result<Vec<Queued>, StoreError> {
        let rows = self.select("state = 'pending'", 64)?;
        let Some(first) = rows.first().cloned() else {
            return Ok(Vec::new());
        };
        let mut batch = vec![first.clone()];
        if merge_ms > 0 {
            batch.extend(rows.into_iter().skip(1).filter(|q| {
                q.session_id == first.session_id && q.received_ms - first.received_ms <= merge_ms
            }));
        }
        Ok(batch)
    }

    /// Up to `limit` accepted messages whose turn is not on the log yet, oldest first.
    pub fn unemitted(&self, limit: i64) -> Result<Vec<Queued>, StoreError> {
        self.select("emitted = 0", limit)
    }

    fn select(&self, filter: &str, limit: i64) -> Result<Vec<Queued>, StoreError> {
        let mut stmt = self.conn.prepare_cached(&format!(
            "SELECT seq, session_id, source, user_id, destination, text, attachments_json, received_ms, event_id, emitted
             FROM queue WHERE {filter} ORDER BY seq LIMIT ?1"
        ))?;
        let rows = stmt
            .query_map([limit], |r| {
                Ok(Queued {
                    seq: r.get(0)?,
                    session_id: r.get(1)?,
                    source: r.get(2)?,
                    user_id: r.get(3)?,
                    destination: r.get(4)?,
                    text: r.get(5)?,
                    attachments_json: r.get(6)?,
                    received_ms: r.get(7)?,
                    event_id: r.get(8)?,
                    emitted: r.get::<_, i64>(9)? != 0,
                })
            })?
            .collect::<Result<_, _>>()?;
        Ok(rows)
    }

    /// Marks the turn as written to the log.
    pub fn mark_emitted(&self, seq: i64) -> Result<(), StoreError> {
        self.conn
            .execute("UPDATE queue SET emitted = 1 WHERE seq = ?1", [seq])?;
        Ok(())
    }

    /// Marks messages as handed to the engine under `task_id`, as the goal `goal_id`.
    pub fn mark_sent(
        &mut self,
        seqs: &[i64],
        task_id: &str,
        goal_id: &str,
    ) -> Result<(), StoreError> {
        let tx = self.conn.transaction()?;
        for seq in seqs {
            tx.execute(
                "UPDATE queue SET state = 'sent', task_id = ?2, goal_id = ?3 WHERE seq = ?1",
                params![seq, task_id, goal_id],
            )?;
        }
        tx.commit()?;
        Ok(())
    }

    /// Marks the messages handed over as `task_id` as done: the task ended.
    pub fn mark_done(&self, task_id: &str) -> Result<(), StoreError> {
        self.conn.execute(
            "UPDATE queue SET state = 'done' WHERE state = 'sent' AND task_id = ?1",
            [task_id],
        )?;
        Ok(())
    }

    /// Puts the messages handed over as `task_id` back in the queue, in their old places: the
    /// engine that took them went away before the task ended.
    pub fn reoffer(&self, task_id: &str) -> Result<usize, StoreError> {
        Ok(self.conn.execute(
            "UPDATE queue SET state = 'pending' WHERE state = 'sent' AND task_id = ?1",
            [task_id],
        )?)
    }

    /// Tasks handed to the engine whose end was not seen yet.
    pub fn in_flight(&self) -> Result<Vec<InFlight>, StoreError> {
        let mut stmt = self.conn.prepare_cached(
            "SELECT DISTINCT task_id, session_id, COALESCE(goal_id, '') FROM queue
             WHERE state = 'sent' ORDER BY task_id",
        )?;
        let rows = stmt
            .query_map([], |r| {
                Ok(InFlight {
                    task_id: r.get(0)?,
                    session_id: r.get(1)?,
                    goal_id: r.get(2)?,
                })
            })?
            .collect::<Result<_, _>>()?;
        Ok(rows)
    }

    /// Marks messages the engine refused for good (they stay in the table, out of the queue).
    pub fn mark_rejected(&mut self, seqs: &[i64], task_id: &str) -> Result<(), StoreError> {
        let tx = self.conn.transaction()?;
        for seq in seqs {
            tx.execute(
                "UPDATE queue SET state = 'rejected', task_id = ?2 WHERE seq = ?1",
                params![seq, task_id],
            )?;
        }
        tx.commit()?;
        Ok(())
    }

    /// Sets a message aside for good: it can never be written to the log (too large, invalid),
    /// so it leaves the queue with `reason` instead of blocking the messages behind it.
    pub fn mark_dead(&self, seq: i64, reason: &str) -> Result<(), StoreError> {
        self.conn.execute(
            "UPDATE queue SET state = 'dead', emitted = 1, reason = ?2 WHERE seq = ?1",
            params![seq, reason],
        )?;
        Ok(())
    }

    /// Messages waiting for the engine.
    pub fn pending(&self) -> Result<i64, StoreError> {
        Ok(self.conn.query_row(
            "SELECT COUNT(*) FROM queue WHERE state = 'pending'",
            [],
            |r| r.get(0),
        )?)
    }

    /// Sticks a session to an expert (`<mesh>/<role>`), or unsticks it with `None`.
    pub fn stick(
        &self,
        session_id: &str,
        expert: Option<&str>,
        now_ms: i64,
    ) -> Result<bool, StoreError> {
        let n = self.conn.execute(
            "UPDATE sessions SET stuck_expert = ?2, updated_ms = ?3 WHERE session_id = ?1",
            params![session_id, expert, now_ms],
        )?;
        Ok(n > 0)
    }

    /// The expert a session is stuck to, if any.
    pub fn stuck_expert(&self, session_id: &str) -> Result<Option<String>, StoreError> {
        Ok(self
            .conn
            .query_row(
                "SELECT stuck_expert FROM sessions WHERE session_id = ?1",
                [session_id],
                |r| r.get::<_, Option<String>>(0),
            )
            .optional()?
            .flatten())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn arrival(user: &str, text: &str, received_ms: i64, event_id: &str) -> Arrival {
        Arrival {
            source: "tg".into(),
            user_id: user.into(),
            destination: String::new(),
            text: text.into(),
            attachments_json: "[]".into(),
            received_ms,
            event_id: event_id.into(),
        }
    }

    #[test]
    fn a_task_stays_in_flight_until_it_ends_or_is_offered_again() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = Store::open(&dir.path().join("inbox.db")).unwrap();
        let q = s
            .accept(
                vec![
                    arrival("ana", "one", 1, "e1"),
                    arrival("bob", "two", 2, "e2"),
                ],
                2,
            )
            .unwrap();
        s.mark_sent(&[q[0].seq], "t1", "g1").unwrap();
        s.mark_sent(&[q[1].seq], "t2", "g2").unwrap();
        assert_eq!(s.in_flight().unwrap().len(), 2);
        assert_eq!(s.in_flight().unwrap()[1].goal_id, "g2");
        assert_eq!(s.pending().unwrap(), 0);
        s.mark_done("t1").unwrap();
        assert_eq!(s.reoffer("t2").unwrap(), 1);
        assert_eq!(s.in_flight().unwrap(), vec![]);
        assert_eq!(
            s.next_batch(0).unwrap()[0].seq,
            q[1].seq,
            "back in its place"
        );
        assert_eq!(
            s.reoffer("t1").unwrap(),
            0,
            "a finished task is never offered again"
        );
    }

    #[test]
    fn sessions_queue_merge_and_stick() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = Store::open(&dir.path().join("inbox.db")).unwrap();
        let one = |s: &mut Store, user: &str, text: &str, at: i64, id: &str| {
            s.accept(vec![arrival(user, text, at, id)], at)
                .unwrap()
                .remove(0)
        };
        let a1 = one(&mut s, "ana", "hello", 1_000, "e1");
        let b1 = one(&mut s, "bob", "hi", 1_100, "e2");
        let a2 = one(&mut s, "ana", "are you there", 1_500, "e3");
        assert_eq!(a1.session_id, a2.session_id);
        assert_ne!(a1.session_id, b1.session_id);
        // Without merging, one at a time in arrival order.
        assert_eq!(
            s.next_batch(0)
                .unwrap()
                .iter()
                .map(|q| q.seq)
                .collect::<Vec<_>>(),
            vec![a1.seq]
        );
        // With a window, ana's second message joins her first; bob's stays separate.
        let batch = s.next_batch(1_000).unwrap();
        assert_eq!(
            batch.iter().map(|q| q.seq).collect::<Vec<_>>(),
            vec![a1.seq, a2.seq]
        );
        s.mark_sent(&[a1.seq, a2.seq], "t1", "g1").unwrap();
        assert_eq!(s.next_batch(1_000).unwrap()[0].seq, b1.seq);
        assert_eq!(s.pending().unwrap(), 1);
        assert!(
            s.stick(&a1.session_id, Some("newsroom/analyst"), 2_000)
                .unwrap()
        );
        assert_eq!(
            s.stuck_expert(&a1.session_id).unwrap().as_deref(),
            Some("newsroom/analyst")
        );
        s.stick(&a1.session_id, None, 3_000).unwrap();
        assert_eq!(s.stuck_expert(&a1.session_id).unwrap(), None);
        // Reopening keeps everything.
        drop(s);
        let s = Store::open(&dir.path().join("inbox.db")).unwrap();
        assert_eq!(s.pending().unwrap(), 1);
    }

    #[test]
    fn a_batch_is_queued_in_order_with_one_session_per_sender() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("inbox.db");
        let mut s = Store::open(&path).unwrap();
        let queued = s
            .accept(
                vec![
                    arrival("cy", "one", 1_000, "e1"),
                    arrival("dee", "two", 1_001, "e2"),
                    arrival("cy", "three", 1_002, "e3"),
                ],
                1_000,
            )
            .unwrap();
        let texts: Vec<&str> = queued.iter().map(|q| q.text.as_str()).collect();
        assert_eq!(texts, ["one", "two", "three"]);
        assert!(queued.windows(2).all(|w| w[0].seq < w[1].seq));
        // A sender new to the table gets one session, even twice in one batch.
        assert_eq!(queued[0].session_id, queued[2].session_id);
        assert_ne!(queued[0].session_id, queued[1].session_id);
        // A later batch finds the session the earlier one created.
        let later = s
            .accept(vec![arrival("cy", "four", 2_000, "e4")], 2_000)
            .unwrap();
        assert_eq!(later[0].session_id, queued[0].session_id);
        assert!(s.accept(Vec::new(), 2_000).unwrap().is_empty());
        // Committed: a reopened store hands them over oldest first.
        drop(s);
        let mut s = Store::open(&path).unwrap();
        let mut order = Vec::new();
        while let Some(q) = s.next_batch(0).unwrap().first().cloned() {
            s.mark_sent(&[q.seq], "t", "g").unwrap();
            order.push(q.text);
        }
        assert_eq!(order, ["one", "two", "three", "four"]);
    }
}
