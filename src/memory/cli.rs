//! The library side of `iron log tail`, `iron log replay <prefix>`, `iron recall "<query>"` and
//! `iron memory status`. The first three write one line per event to `out`: `<seq> <kind> <tenant>:<namespace> <actor>
//! <event_id> <payload>`.

use std::io::Write;
use std::path::Path;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use super::recall::{Recall, RecallError, RecallFilter, Recalled};
use super::semantic::QueryVector;
use crate::core::durable::{ConsumerSpec, DurableError, EventLog, LogConsumer, StartAt};
use crate::core::envelope::Envelope;

/// Why a CLI command failed.
#[derive(Debug, thiserror::Error)]
pub enum CliError {
    /// The log failed.
    #[error(transparent)]
    Durable(#[from] DurableError),
    /// The projection failed.
    #[error(transparent)]
    Recall(#[from] RecallError),
    /// The knowledge graph failed.
    #[error(transparent)]
    Graph(#[from] super::graph::GraphError),
    /// Writing the output failed.
    #[error("cannot write output: {0}")]
    Io(#[from] std::io::Error),
}

fn line(out: &mut impl Write, r: &Recalled) -> std::io::Result<()> {
    writeln!(
        out,
        "{} {} {}:{} {} {} {}",
        r.seq, r.kind, r.tenant, r.namespace, r.actor, r.event_id, r.payload
    )
}

/// Follows a stream, printing each event, until `shutdown` or until `limit` lines. `iron log
/// tail` passes `StartAt::New` (only events written from now on) and no limit. Returns how
/// many lines it printed. Messages that are not envelopes print as `<seq> ? <subject> <n>
/// bytes`.
pub async fn log_tail<L: EventLog>(
    log: &L,
    stream: &str,
    filter_subject: &str,
    start: StartAt,
    limit: Option<u64>,
    out: &mut (impl Write + Send),
    shutdown: CancellationToken,
) -> Result<u64, CliError> {
    let mut consumer = log
        .consumer(ConsumerSpec {
            stream: stream.to_owned(),
            durable: None,
            filter_subject: filter_subject.to_owned(),
            start,
            ack_wait: Duration::from_secs(30),
        })
        .await?;
    let mut printed = 0;
    loop {
        if limit.is_some_and(|limit| printed >= limit) {
            return Ok(printed);
        }
        let next = tokio::select! {
            _ = shutdown.cancelled() => return Ok(printed),
            next = consumer.next(Duration::from_millis(500)) => next?,
        };
        let Some((delivery, ack)) = next else {
            continue;
        };
        let m = &delivery.message;
        match serde_json::from_slice::<Envelope>(&m.payload) {
            Ok(e) => line(
                out,
                &Recalled {
                    seq: m.seq,
                    event_id: e.event_id.to_string(),
                    ts: e.ts,
                    tenant: e.tenant.clone(),
                    namespace: e.namespace_path(),
                    actor: e.actor.clone(),
                    kind: e.kind.to_string(),
                    payload: e.payload.to_string(),
                },
            )?,
            Err(_) => writeln!(out, "{} ? {} {} bytes", m.seq, m.subject, m.payload.len())?,
        }
        out.flush()?;
        printed += 1;
        consumer.ack(vec![ack]).await?;
    }
}

/// Prints the ordered history of one namespace prefix (`facts/newsroom`) from the projection.
pub fn log_replay(db: &Path, prefix: &str, out: &mut impl Write) -> Result<usize, CliError> {
    let events = Recall::open(db)?.replay(prefix)?;
    for event in &events {
        line(out, event)?;
    }
    Ok(events.len())
}

/// Prints the events matching `query`, optionally limited to a namespace prefix (`scope`);
/// with `history`, also facts no longer believed and what superseded them. With `semantic`
/// (the semantic index and the query's vector, if it could be made), hybrid recall: any of the
/// words, or near them, best first.
pub fn recall(
    db: &Path,
    query: &str,
    scope: Option<&str>,
    history: bool,
    semantic: Option<(&Path, Option<&QueryVector>)>,
    out: &mut impl Write,
) -> Result<usize, CliError> {
    let filter = RecallFilter {
        prefix: scope.map(str::to_owned),
        history,
        ..Default::default()
    };
    let recall = Recall::open(db)?;
    let events = match semantic {
        Some((index, vector)) => super::semantic::hybrid(&recall, index, query, vector, &filter)?,
        None => recall.recall(query, &filter)?,
    };
    for event in &events {
        line(out, event)?;
    }
    Ok(events.len())
}

/// Prints the passages of saved documents in the index at `index` that hold every word of
/// `query`, under the namespace prefix `scope`, best first: where each is (document, page,
/// passage, offset) and its text. Returns how many it printed.
pub fn documents(
    index: &Path,
    query: &str,
    scope: Option<&str>,
    out: &mut impl Write,
) -> Result<usize, CliError> {
    let every = super::documents::Matching::Every;
    let found = super::documents::search(index, query, every, scope.unwrap_or(""), None, 20)
        .map_err(|source| {
            CliError::Recall(RecallError::Database {
                path: index.to_path_buf(),
                source,
            })
        })?;
    for f in &found {
        writeln!(
            out,
            "{} p.{} #{} @{} [{}] {}: {}",
            f.name, f.page, f.ordinal, f.offset, f.namespace, f.title, f.text
        )?;
    }
    Ok(found.len())
}

/// Prints what the knowledge graph at `graph` knows about `name` under the namespace prefix
/// `scope`: the current facts naming it (how each names it, then the fact as `recall` prints
/// it) and the names that come up with it. Returns how many facts it printed.
pub fn graph(
    graph: &Path,
    db: &Path,
    name: &str,
    scope: Option<&str>,
    out: &mut impl Write,
) -> Result<usize, CliError> {
    let filter = RecallFilter {
        prefix: scope.map(str::to_owned),
        ..Default::default()
    };
    let recall = Recall::open(db)?;
    let Some(node) = super::graph::about(graph, &recall, name, &filter)? else {
        return Ok(0);
    };
    writeln!(out, "{}", node.name)?;
    for (role, fact) in &node.facts {
        write!(out, "{:<9} ", role.as_str())?;
        line(out, fact)?;
    }
    for r in &node.related {
        let roles: Vec<&str> = r.roles.iter().map(|r| r.as_str()).collect();
        writeln!(
            out,
            "related {} ({} fact(s), as {})",
            r.name,
            r.shared,
            roles.join(", ")
        )?;
    }
    Ok(node.facts.len())
}

/// Prints where the projector and each background worker are in the MEM stream: the sequence
/// each has handled, how far behind the log it is, what it has written and its errors.
pub async fn status<L: EventLog>(
    log: &L,
    projection: &Path,
    workers: &[(&str, std::path::PathBuf)],
    out: &mut impl Write,
) -> Result<(), CliError> {
    let head = log.last_sequence("MEM").await?;
    writeln!(out, "MEM stream: {head} event(s)")?;
    if projection.is_file() {
        let recall = Recall::open(projection)?;
        let at = recall.projected_seq("MEM")?;
        let skipped = recall.skipped()?.len();
        writeln!(
            out,
            "{:<13} at {at:<8} lag {:<8} projected {} skipped {skipped}",
            "projector",
            head.saturating_sub(at),
            recall.count()?,
        )?;
    } else {
        writeln!(
            out,
            "{:<13} not started ({} does not exist)",
            "projector",
            projection.display()
        )?;
    }
    for (name, state) in workers {
        let progress =
            super::worker::progress(state, "MEM").map_err(|source| RecallError::Database {
                path: state.clone(),
                source,
            })?;
        match progress {
            None => writeln!(
                out,
                "{name:<13} not started ({} does not exist)",
                state.display()
            )?,
            Some(p) => {
                write!(
                    out,
                    "{name:<13} at {:<8} lag {:<8} derived {} errors {}",
                    p.last_seq,
                    head.saturating_sub(p.last_seq),
                    p.derived,
                    p.errors
                )?;
                if p.pending > 0 {
                    write!(out, " unwritten {}", p.pending)?;
                }
                // The semantic index and the graph write their own tables, not events.
                for (embedder, n) in super::semantic::indexed(state).unwrap_or_default() {
                    write!(out, " vectors {n} ({embedder})")?;
                }
                if let Some(n) = super::graph::entities_count(state) {
                    write!(out, " entities {n}")?;
                }
                if let Some((documents, passages)) = super::documents::indexed(state) {
                    write!(out, " documents {documents} passages {passages}")?;
                }
                if let Some(e) = &p.last_error {
                    write!(out, " (last error: {e})")?;
                }
                writeln!(out)?;
            }
        }
    }
    Ok(())
}
