//! `/api/events`: the event log, live, as Server-Sent Events. Each MEM event that passes the
//! filters is one SSE event (`id` = its stream sequence, `event` = its kind, `data` = the
//! envelope as JSON). Query: `kind=a,b`, `ns=<namespace prefix>` (`facts/newsroom`),
//! `actor=<exact>`, `text=<words in the payload, any case>`, `from=<seq>` (default: only
//! what is appended from now; `from=1`: the whole history first). A client that reconnects
//! with `Last-Event-ID` goes on after it.

use std::collections::{BTreeSet, VecDeque};
use std::convert::Infallible;
use std::time::Duration;

use axum::extract::{Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::sse::{Event, KeepAlive, Sse};
use futures_util::Stream;
use serde::Deserialize;

use crate::core::durable::EventLog;
use crate::core::envelope::Envelope;
use crate::spine::durable::AnyLog;
use crate::spine::durable::streams::MEM;

/// How often the log is asked for what is new while nothing is.
const POLL: Duration = Duration::from_millis(100);
/// Most messages read at once.
const PAGE: usize = 1_000;

/// The query of `/api/events`.
#[derive(Debug, Default, Deserialize)]
pub struct EventQuery {
    kind: Option<String>,
    ns: Option<String>,
    actor: Option<String>,
    text: Option<String>,
    from: Option<u64>,
}

/// Which events a client asked for.
#[derive(Debug, Default, Clone)]
pub struct Filter {
    kinds: BTreeSet<String>,
    namespace: Vec<String>,
    actor: Option<String>,
    text: Option<String>,
}

impl Filter {
    /// The filter `q` describes.
    pub fn of(q: &EventQuery) -> Filter {
        fn some(v: &Option<String>) -> Option<&str> {
            v.as_deref().map(str::trim).filter(|v| !v.is_empty())
        }
        Filter {
            kinds: some(&q.kind)
                .map(|k| k.split(',').map(|k| k.trim().to_string()).collect())
                .unwrap_or_default(),
            namespace: some(&q.ns)
                .map(|n| {
                    n.split('/')
                        .filter(|t| !t.is_empty())
                        .map(str::to_string)
                        .collect()
                })
                .unwrap_or_default(),
            actor: some(&q.actor).map(str::to_string),
            text: some(&q.text).map(str::to_lowercase),
        }
    }

    /// Whether `e` passes.
    pub fn matches(&self, e: &Envelope) -> bool {
        (self.kinds.is_empty() || self.kinds.contains(e.kind.as_str()))
            && e.namespace.starts_with(&self.namespace)
            && self.actor.as_ref().is_none_or(|a| *a == e.actor)
            && self
                .text
                .as_ref()
                .is_none_or(|t| e.payload.to_string().to_lowercase().contains(t))
    }
}

/// `GET /api/events`: needs only the log (the console's state gives it; so does the
/// benchmark's bare router).
pub async fn events(
    State(log): State<AnyLog>,
    Query(q): Query<EventQuery>,
    headers: HeaderMap,
) -> Result<Sse<impl Stream<Item = Result<Event, Infallible>>>, (StatusCode, String)> {
    let resumed = headers
        .get("last-event-id")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok())
        .map(|seq| seq + 1);
    let from = match resumed.or(q.from) {
        Some(seq) => seq.max(1),
        None => {
            log.last_sequence(MEM)
                .await
                .map_err(|e| (StatusCode::SERVICE_UNAVAILABLE, e.to_string()))?
                + 1
        }
    };
    let filter = Filter::of(&q);
    let state = (log, from, filter, VecDeque::<Event>::new());
    let stream =
        futures_util::stream::unfold(state, |(log, mut next, filter, mut ready)| async move {
            loop {
                if let Some(event) = ready.pop_front() {
                    return Some((Ok(event), (log, next, filter, ready)));
                }
                match log.read(MEM, "mem.>", next, PAGE).await {
                    Ok(page) if !page.is_empty() => {
                        for m in page {
                            next = m.seq + 1;
                            let Ok(e) = serde_json::from_slice::<Envelope>(&m.payload) else {
                                continue;
                            };
                            if filter.matches(&e) {
                                let data = serde_json::to_string(&e).unwrap_or_default();
                                ready.push_back(
                                    Event::default()
                                        .id(m.seq.to_string())
                                        .event(e.kind.as_str())
                                        .data(data),
                                );
                            }
                        }
                    }
                    // Nothing new, or the log is away for a moment: ask again shortly.
                    _ => tokio::time::sleep(POLL).await,
                }
            }
        });
    Ok(Sse::new(stream).keep_alive(KeepAlive::new().interval(Duration::from_secs(15))))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::event_kind::EventKind;
    use serde_json::json;

    #[test]
    fn filters_by_kind_namespace_actor_and_text() {
        let e = Envelope::new(
            "t",
            ["facts", "newsroom", "analyst"],
            "newsroom/analyst",
            EventKind::FactLearned,
            json!({"claim": "The Harbour bridge is CLOSED"}),
        );
        let f = |q: EventQuery| Filter::of(&q).matches(&e);
        assert!(f(EventQuery::default()));
        assert!(f(EventQuery {
            kind: Some("chat_turn, fact_learned".into()),
            ns: Some("facts/newsroom".into()),
            actor: Some("newsroom/analyst".into()),
            text: Some("bridge is closed".into()),
            from: None,
        }));
        assert!(!f(EventQuery {
            kind: Some("chat_turn".into()),
            ..EventQuery::default()
        }));
        assert!(!f(EventQuery {
            ns: Some("facts/news".into()),
            ..EventQuery::default()
        }));
        assert!(!f(EventQuery {
            actor: Some("newsroom".into()),
            ..EventQuery::default()
        }));
        assert!(!f(EventQuery {
            text: Some("ferry".into()),
            ..EventQuery::default()
        }));
    }
}
