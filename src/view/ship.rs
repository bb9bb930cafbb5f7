//! Log shipping: what a process prints goes to its terminal unchanged and, line by line, to
//! the log plane as batches on `iron.log.<node name tokens>` (stream `LOGS`, which keeps a
//! bounded history; never MEM). Shipping never blocks the process: lines wait in a bounded
//! queue, and when the plane is slow or down and the queue is full a line is dropped and
//! counted; the count goes out with the node's next batch once the plane answers again, so
//! what was shipped plus what was reported dropped is what was printed.

use std::collections::HashMap;
use std::io::{BufRead, Write};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tracing::warn;

use crate::core::config::Config;
use crate::core::durable::{AppendRequest, DurableError, EventLog};
use crate::core::envelope::now_ms;
use crate::spine::durable::AnyLog;

/// Lines waiting to be shipped, for all nodes of one process.
pub const QUEUE_LINES: usize = 10_000;
/// Most lines gathered at once.
const BATCH_LINES: usize = 500;
/// Most bytes of text in one batch (well under a message's limit on either backend).
const BATCH_BYTES: usize = 256 * 1024;
/// Longest a line waits for its batch to fill.
const BATCH_WAIT: Duration = Duration::from_millis(200);
/// Longest line shipped as one (a longer one is cut into pieces of this size).
const MAX_LINE: usize = 16 * 1024;

/// Which stream of the process a line came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Stream {
    /// Standard output.
    #[serde(rename = "out")]
    Stdout,
    /// Standard error.
    #[serde(rename = "err")]
    Stderr,
}

/// One line as shipped.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Line {
    /// Its stream.
    pub s: Stream,
    /// When it was read (Unix ms).
    pub t: u64,
    /// The text, without its newline.
    pub l: String,
}

/// One message on `iron.log.<node>`: lines of one node, and how many of its lines were
/// dropped (never shipped) since its previous batch.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Batch {
    /// The node's fully qualified name.
    pub node: String,
    /// The lines, in the order printed.
    pub lines: Vec<Line>,
    /// Lines dropped before these.
    #[serde(default)]
    pub dropped: u64,
}

/// The subject of `node`'s output: `/iron/jobs/gateway` is `iron.log.iron.jobs.gateway`.
/// Characters a subject token cannot hold become `_`.
pub fn subject_of(node: &str) -> String {
    let tokens: Vec<String> = node
        .split('/')
        .filter(|t| !t.is_empty())
        .map(|t| {
            t.chars()
                .map(|c| {
                    if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                        c
                    } else {
                        '_'
                    }
                })
                .collect()
        })
        .collect();
    if tokens.is_empty() {
        "iron.log._".into()
    } else {
        format!("iron.log.{}", tokens.join("."))
    }
}

struct Queued {
    node: Arc<str>,
    line: Line,
}

/// The shipping side of a process: [`Shipper::offer`] never waits.
#[derive(Clone)]
pub struct Shipper {
    tx: mpsc::Sender<Queued>,
    dropped: Arc<Mutex<HashMap<Arc<str>, u64>>>,
}

/// The task that ships; [`Shipping::finish`] waits for it to drain.
pub struct Shipping {
    task: JoinHandle<()>,
}

impl Shipper {
    /// Starts shipping to the log plane `config` names (opened, and reopened, by the task:
    /// a plane that is down at start is waited for while lines queue and drop).
    pub fn start(config: Config) -> (Shipper, Shipping) {
        Self::start_with(config, QUEUE_LINES)
    }

    /// [`Shipper::start`] with a queue of `capacity` lines.
    pub fn start_with(config: Config, capacity: usize) -> (Shipper, Shipping) {
        let (tx, rx) = mpsc::channel(capacity.max(1));
        let dropped = Arc::new(Mutex::new(HashMap::new()));
        let task = tokio::spawn(ship(config, rx, dropped.clone()));
        (Shipper { tx, dropped }, Shipping { task })
    }

    /// Queues `text` as a line of `node` on `stream`, or counts it dropped when the queue is
    /// full. Never blocks.
    pub fn offer(&self, node: &Arc<str>, stream: Stream, text: &str) {
        let mut rest = text;
        loop {
            let cut = rest.floor_char_boundary(MAX_LINE.min(rest.len()));
            let (piece, tail) = rest.split_at(if cut == 0 { rest.len() } else { cut });
            let queued = Queued {
                node: node.clone(),
                line: Line {
                    s: stream,
                    t: now_ms(),
                    l: piece.to_string(),
                },
            };
            if self.tx.try_send(queued).is_err() {
                *self
                    .dropped
                    .lock()
                    .expect("dropped counter lock")
                    .entry(node.clone())
                    .or_default() += 1;
            }
            if tail.is_empty() {
                return;
            }
            rest = tail;
        }
    }
}

impl Shipping {
    /// Waits until every line offered before (by every [`Shipper`] clone, all dropped by now)
    /// is shipped or reported dropped, at most `grace`; returns whether it finished.
    pub async fn finish(self, grace: Duration) -> bool {
        let abort = self.task.abort_handle();
        match tokio::time::timeout(grace, self.task).await {
            Ok(_) => true,
            Err(_) => {
                abort.abort();
                false
            }
        }
    }
}

/// Copies `from` (a child's stdout or stderr) line by line to `to` unchanged and offers each
/// line to `shipper` as `node`'s, until `from` ends. Blocking: run it on a thread of its own.
pub fn tee(
    from: impl std::io::Read,
    mut to: impl Write,
    shipper: &Shipper,
    node: &Arc<str>,
    stream: Stream,
) {
    let mut reader = std::io::BufReader::new(from);
    let mut buf = Vec::new();
    loop {
        buf.clear();
        match reader.read_until(b'\n', &mut buf) {
            Ok(0) | Err(_) => return,
            Ok(_) => {
                // The terminal sees exactly what was printed; a terminal gone is no reason to
                // stop shipping.
                let _ = to.write_all(&buf).and_then(|_| to.flush());
                let text = String::from_utf8_lossy(&buf);
                shipper.offer(
                    node,
                    stream,
                    text.strip_suffix('\n')
                        .unwrap_or(&text)
                        .trim_end_matches('\r'),
                );
            }
        }
    }
}

/// The shipping task: batches per node, appends each batch until the plane takes it (the
/// queue fills meanwhile), and reports dropped counts; ends once every sender is gone and
/// the queue is empty.
async fn ship(
    config: Config,
    mut rx: mpsc::Receiver<Queued>,
    dropped: Arc<Mutex<HashMap<Arc<str>, u64>>>,
) {
    let mut log: Option<AnyLog> = None;
    let id = uuid::Uuid::new_v4().simple().to_string();
    let mut sent: u64 = 0;
    let mut open = true;
    while open {
        // Gather what is there (waiting at most BATCH_WAIT for the first line).
        let mut pending: Vec<Queued> = Vec::new();
        match tokio::time::timeout(BATCH_WAIT, rx.recv()).await {
            Ok(Some(q)) => pending.push(q),
            Ok(None) => open = false,
            Err(_) => {}
        }
        while pending.len() < BATCH_LINES {
            match rx.try_recv() {
                Ok(q) => pending.push(q),
                Err(mpsc::error::TryRecvError::Empty) => break,
                Err(mpsc::error::TryRecvError::Disconnected) => {
                    open = false;
                    break;
                }
            }
        }
        let mut batches: Vec<Batch> = Vec::new();
        for q in pending {
            let open = batches
                .iter_mut()
                .rev()
                .find(|b| *b.node == *q.node)
                .filter(|b| {
                    b.lines.iter().map(|l| l.l.len()).sum::<usize>() + q.line.l.len() <= BATCH_BYTES
                });
            match open {
                Some(b) => b.lines.push(q.line),
                None => batches.push(Batch {
                    node: q.node.to_string(),
                    lines: vec![q.line],
                    dropped: 0,
                }),
            }
        }
        // Counts of drops go with their node's batch (one of its own when it printed nothing
        // since); taken only once the plane can take them.
        if !dropped.lock().expect("dropped counter lock").is_empty() && log.is_some() {
            let counts: Vec<(Arc<str>, u64)> = dropped
                .lock()
                .expect("dropped counter lock")
                .drain()
                .collect();
            for (node, n) in counts {
                match batches.iter_mut().find(|b| *b.node == *node) {
                    Some(b) => b.dropped += n,
                    None => batches.push(Batch {
                        node: node.to_string(),
                        lines: Vec::new(),
                        dropped: n,
                    }),
                }
            }
        }
        for batch in batches {
            sent += 1;
            if !append_until_taken(&config, &mut log, &id, sent, &batch).await {
                let lost = batch.lines.len() as u64 + batch.dropped;
                *dropped
                    .lock()
                    .expect("dropped counter lock")
                    .entry(Arc::from(batch.node.as_str()))
                    .or_default() += lost;
            }
        }
    }
    // Drops counted after the last batch: reported if the plane is there.
    let counts: Vec<(Arc<str>, u64)> = dropped
        .lock()
        .expect("dropped counter lock")
        .drain()
        .collect();
    for (node, n) in counts {
        sent += 1;
        let batch = Batch {
            node: node.to_string(),
            lines: Vec::new(),
            dropped: n,
        };
        if !append_until_taken(&config, &mut log, &id, sent, &batch).await {
            warn!(node = %batch.node, "{n} dropped line(s) could not be reported");
        }
    }
}

/// Appends `batch` (message id `<id>-<n>`, so a retry is stored once), opening the log when
/// needed and retrying with a growing pause until the plane takes it; `false` when no retry
/// can make it take the batch (it is too large, or cannot be encoded).
async fn append_until_taken(
    config: &Config,
    log: &mut Option<AnyLog>,
    id: &str,
    n: u64,
    batch: &Batch,
) -> bool {
    let Ok(payload) = serde_json::to_vec(batch) else {
        return false;
    };
    let mut pause = Duration::from_millis(100);
    let mut said = false;
    loop {
        if log.is_none() {
            match AnyLog::open(config).await {
                Ok(l) => *log = Some(l),
                Err(e) => {
                    if !said {
                        // Said to the terminal only: this line is not shipped.
                        eprintln!(
                            "log shipping: the log plane is not available ({e}); lines queue, then drop and are counted"
                        );
                        said = true;
                    }
                }
            }
        }
        if let Some(l) = log.as_ref() {
            let request = AppendRequest {
                subject: subject_of(&batch.node),
                msg_id: format!("{id}-{n}"),
                payload: payload.clone(),
                expected_last_subject_seq: None,
            };
            match l.append(request).await {
                Ok(_) => return true,
                Err(DurableError::TooLarge { .. }) => return false,
                Err(e) => {
                    if !said {
                        eprintln!("log shipping: a batch was not taken ({e}); retrying");
                        said = true;
                    }
                }
            }
        }
        tokio::time::sleep(pause).await;
        pause = (pause * 2).min(Duration::from_secs(2));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_node_name_is_a_subject() {
        assert_eq!(subject_of("/iron/engine"), "iron.log.iron.engine");
        assert_eq!(
            subject_of("/iron/jobs/dev/runner"),
            "iron.log.iron.jobs.dev.runner"
        );
        assert_eq!(subject_of("/a b/c.d*"), "iron.log.a_b.c_d_");
        assert_eq!(subject_of("/"), "iron.log._");
    }

    #[tokio::test]
    async fn a_full_queue_drops_and_counts_without_waiting() {
        let (tx, _rx) = mpsc::channel(2);
        let shipper = Shipper {
            tx,
            dropped: Arc::new(Mutex::new(HashMap::new())),
        };
        let node: Arc<str> = Arc::from("/t/n");
        for i in 0..5 {
            shipper.offer(&node, Stream::Stdout, &format!("line {i}"));
        }
        let long = "x".repeat(MAX_LINE * 2 + 1);
        shipper.offer(&node, Stream::Stderr, &long);
        assert_eq!(shipper.dropped.lock().unwrap()[&node], 3 + 3);
    }
}
